"""Sparse matrix-vector products of CSR matrices (int32 indices), ``y = alpha op(A) x + beta y``.

Family ``sparse_spmv``, variants:

- ``vector``: a group of ``width`` lanes (2..32, a power of two) per row strides the row and
  reduces by butterfly shuffles; for rows of similar, short-to-medium length;
- ``merge``: merge-path load balancing (Merrill and Garland): thread t consumes ``items``
  consecutive steps of the merge of the row ends with the non-zeros, found by a binary search
  on its diagonal (between the rows where its CTA's span starts and ends, searched first by two
  threads), so every thread does the same work whatever the row lengths; rows finished inside a
  thread are written directly, the partial sum of the row it ends in is carried out;
- ``fixup``: adds the carried partial sums (``red.add``) after ``merge``;
- ``transpose``: ``A^T x`` (``conj``: ``A^H x``) without forming the transpose: a warp per row of
  A scatters ``alpha a_ij x_i`` into ``y[j]`` with ``red.add`` after ``scale`` applied beta;
- ``scale``: ``dst[i] = alpha * src[i]`` (``src`` unread when ``read_src`` is 0: a zero fill).

``beta == 0`` never reads y (NaN in y does not leak).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from .numeric import DTYPES, Num

VARIANTS = ("vector", "merge", "fixup", "transpose", "scale")
WIDTHS = (2, 4, 8, 16, 32)
THREADS = 256


@dataclass(frozen=True)
class SpmvSpec(KernelSpec):
    family: ClassVar[str] = "sparse_spmv"
    dtype: str = "float32"
    variant: str = "vector"
    width: int = 32
    conj: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES or self.variant not in VARIANTS or self.width not in WIDTHS:
            raise ValueError(f"SpmvSpec: dtype={self.dtype!r} variant={self.variant!r} width={self.width}")


def _axpby(nm: Num, alpha, acc, beta, y, row, read_y):
    """alpha*acc (+ beta*y[row] when read_y != 0) stored to y[row]."""
    kb = nm.kb
    r = nm.mul(alpha, acc)
    out = nm.mov(r)
    with kb.if_(kb.setp("ne", read_y, 0)):
        nm.assign(out, nm.fma(beta, nm.load(y, row), r))
    nm.store(y, row, out)


def generate_spmv(spec: SpmvSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(THREADS)
    nm = Num(kb, spec.dtype)
    {"vector": _vector, "merge": _merge, "fixup": _fixup, "transpose": _transpose,
     "scale": _scale}[spec.variant](kb, nm, spec)
    return kb.ptx()


def _vector(kb: KernelBuilder, nm: Num, spec: SpmvSpec) -> None:
    """Params (indptr, indices, data, x, y, nrows, alpha, beta, read_y)."""
    indptr, indices, data, x, y = (kb.param_ptr(k) for k in ("indptr", "indices", "data", "x", "y"))
    nrows = kb.param("nrows", "u32")
    alpha, beta = nm.param("alpha"), nm.param("beta")
    read_y = kb.param("read_y", "u32")
    W = spec.width
    tid = kb.tid()
    row = kb.mad(kb.ctaid(), THREADS // W, kb.shr(tid, W.bit_length() - 1))
    lane = kb.and_(tid, W - 1)
    valid = kb.setp("lt", row, nrows)
    lo, hi = kb.mov(0, "s32"), kb.mov(0, "s32")
    with kb.if_(valid):
        kb.assign(lo, kb.ld("global", "s32", kb.addr(indptr, row, 4)))
        kb.assign(hi, kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4))
    acc = nm.zero()
    with kb.loop(kb.add(lo, kb.bitcast(lane, "s32")), hi, W) as j:
        col = kb.ld("global", "s32", kb.addr(indices, j, 4), nc=True)
        nm.assign(acc, nm.fma(nm.load(data, j, nc=True), nm.load(x, col, nc=True), acc))
    step = W // 2
    while step:
        nm.assign(acc, nm.add(acc, nm.shfl_bfly(acc, step)))
        step //= 2
    with kb.if_(kb.and_(valid, kb.setp("eq", lane, 0))):
        _axpby(nm, alpha, acc, beta, y, row, read_y)


def _merge(kb: KernelBuilder, nm: Num, spec: SpmvSpec) -> None:
    """Params (indptr, indices, data, x, y, nrows, nnz, alpha, beta, read_y, items, threads,
    carry_row, carry_val)."""
    indptr, indices, data, x, y = (kb.param_ptr(k) for k in ("indptr", "indices", "data", "x", "y"))
    nrows, nnz = kb.param("nrows", "s32"), kb.param("nnz", "s32")
    alpha, beta = nm.param("alpha"), nm.param("beta")
    read_y = kb.param("read_y", "u32")
    items, threads = kb.param("items", "s32"), kb.param("threads", "u32")
    carry_row, carry_val = kb.param_ptr("carry_row"), kb.param_ptr("carry_val")
    tid = kb.tid()
    t = kb.mad(kb.ctaid(), THREADS, tid)
    total = kb.add(nrows, nnz)
    # the rows of this CTA's span of the merge path first (two searches, by threads 0 and 32):
    # every thread then searches only between them, 11 steps over a few L1-hot lines of indptr
    # instead of log2(rows) steps from the whole array
    span = kb.mul(kb.bitcast(kb.ctaid(), "s32"), items)
    span = kb.mul(span, THREADS)
    bounds = kb.shared("bounds", "s32", 2)
    for k, who in enumerate((0, 32)):
        with kb.if_(kb.setp("eq", tid, who)):
            dk = kb.min(kb.add(span, kb.mul(items, THREADS)) if k else span, total)
            r = _merge_search(kb, indptr, dk, kb.max(kb.sub(dk, nnz), 0), kb.min(dk, nrows), f"cta_search{k}")
            kb.st("shared", kb.shared_addr(bounds, 4 * k), r)
    kb.bar_sync(0)
    r0 = kb.ld("shared", "s32", kb.shared_addr(bounds))
    r1 = kb.ld("shared", "s32", kb.shared_addr(bounds, 4))
    kb.ret(kb.setp("ge", t, threads))
    d = kb.min(kb.mul(kb.bitcast(t, "s32"), items), total)
    dend = kb.min(kb.add(d, items), total)
    lo = _merge_search(kb, indptr, d, kb.max(kb.max(kb.sub(d, nnz), 0), r0), kb.min(kb.min(d, nrows), r1), "search")
    row = kb.mov(lo)
    j = kb.sub(d, lo)
    acc = nm.zero()
    # the current row's end stays in a register, reloaded only when the row changes (a load
    # per merge step fewer); the thread's first row is < nrows unless its range is empty
    rowend = kb.mov(nnz)
    with kb.if_(kb.setp("lt", row, nrows)):
        kb.assign(rowend, kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4, nc=True))
    with kb.loop(d, dend, 1, type_="s32"):
        with kb.if_(kb.setp("lt", j, rowend)):
            col = kb.ld("global", "s32", kb.addr(indices, j, 4), nc=True)
            nm.assign(acc, nm.fma(nm.load(data, j, nc=True), nm.load(x, col, nc=True), acc))
            kb.add(j, 1, out=j)
        with kb.else_():
            _axpby(nm, alpha, acc, beta, y, row, read_y)
            nm.assign(acc, nm.zero())
            kb.add(row, 1, out=row)
            with kb.if_(kb.setp("lt", row, nrows)):
                kb.assign(rowend, kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4, nc=True))
    kb.st("global", kb.addr(carry_row, t, 4), row)
    nm.store(carry_val, t, acc)


def _merge_search(kb: KernelBuilder, indptr, d, lo, hi, name: str):
    """The row coordinate of merge-path diagonal ``d``: the first row r in [lo, hi] whose end
    indptr[r + 1] > d - 1 - r (rows before it end on or before the diagonal)."""
    lo, hi = kb.mov(lo), kb.mov(hi)
    top = kb.label(name)
    with kb.if_(kb.setp("lt", lo, hi)):
        mid = kb.shr(kb.add(lo, hi), 1)
        end = kb.ld("global", "s32", kb.addr(indptr, mid, 4), offset=4)
        go_right = kb.setp("le", end, kb.sub(kb.sub(d, 1), mid))
        kb.selp(kb.add(mid, 1), lo, go_right, out=lo)
        kb.selp(hi, mid, go_right, out=hi)
        kb.bra(top)
    return lo


def _fixup(kb: KernelBuilder, nm: Num, spec: SpmvSpec) -> None:
    """Params (carry_row, carry_val, y, count, nrows, alpha)."""
    carry_row, carry_val, y = kb.param_ptr("carry_row"), kb.param_ptr("carry_val"), kb.param_ptr("y")
    count, nrows = kb.param("count", "u32"), kb.param("nrows", "s32")
    alpha = nm.param("alpha")
    t = kb.mad(kb.ctaid(), THREADS, kb.tid())
    kb.ret(kb.setp("ge", t, count))
    row = kb.ld("global", "s32", kb.addr(carry_row, t, 4))
    with kb.if_(kb.setp("lt", row, nrows)):
        nm.red_add(y, row, nm.mul(alpha, nm.load(carry_val, t)))


def _transpose(kb: KernelBuilder, nm: Num, spec: SpmvSpec) -> None:
    """Params (indptr, indices, data, x, y, nrows, alpha): y (already beta-scaled) += alpha op(A)^T x."""
    indptr, indices, data, x, y = (kb.param_ptr(k) for k in ("indptr", "indices", "data", "x", "y"))
    nrows = kb.param("nrows", "u32")
    alpha = nm.param("alpha")
    tid = kb.tid()
    row = kb.mad(kb.ctaid(), THREADS // 32, kb.shr(tid, 5))
    kb.ret(kb.setp("ge", row, nrows))
    lane = kb.bitcast(kb.and_(tid, 31), "s32")
    lo = kb.ld("global", "s32", kb.addr(indptr, row, 4))
    hi = kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4)
    xr = nm.mul(alpha, nm.load(x, row))
    with kb.loop(kb.add(lo, lane), hi, 32) as j:
        col = kb.ld("global", "s32", kb.addr(indices, j, 4))
        a = nm.load(data, j)
        nm.red_add(y, col, nm.mul(nm.conj(a) if spec.conj else a, xr))


def _scale(kb: KernelBuilder, nm: Num, spec: SpmvSpec) -> None:
    """Params (src, dst, n, alpha, read_src)."""
    src, dst = kb.param_ptr("src"), kb.param_ptr("dst")
    n = kb.param("n", "u32")
    alpha = nm.param("alpha")
    read_src = kb.param("read_src", "u32")
    i = kb.mad(kb.ctaid(), THREADS, kb.tid())
    kb.ret(kb.setp("ge", i, n))
    out = nm.zero()
    with kb.if_(kb.setp("ne", read_src, 0)):
        nm.assign(out, nm.mul(alpha, nm.load(src, i)))
    nm.store(dst, i, out)


def spmv_configurations(arch: str) -> list[SpmvSpec]:
    out = []
    for d in DTYPES:
        out += [SpmvSpec(arch=arch, dtype=d, variant="vector", width=w) for w in WIDTHS]
        out += [SpmvSpec(arch=arch, dtype=d, variant=v) for v in ("merge", "fixup", "scale")]
        out += [SpmvSpec(arch=arch, dtype=d, variant="transpose", conj=c)
                for c in ((False, True) if d.startswith("complex") else (False,))]
    return out


registry.register_family(SpmvSpec.family, SpmvSpec, generate_spmv, spmv_configurations)
