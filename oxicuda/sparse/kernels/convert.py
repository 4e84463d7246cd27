"""Format conversion and element kernels of oxicuda.sparse (int32 indices).

Family ``sparse_convert``, variants (params in each generator's docstring):

- ``expand_rows``: CSR row pointers to one row index per non-zero (a warp per row);
- ``order``: how COO entries already lie (one pass, one atomic OR per CTA into a zeroed word):
  bit 0 some neighbours are equal (duplicates), bit 1 some pair is out of (major, minor) order,
  bit 2 some pair is out of minor order; lets COO -> CSR/CSC skip the sort of sorted input and
  sort CSR -> CSC by the column alone (the rows are already in order);
- ``coo_key``: ``key = major * n_minor + minor`` (u64), the sort key of COO -> CSR/CSC;
- ``split_key``: the inverse, after the sort; ``split_pos``: dense positions to (row, col);
- ``indptr``: row pointers from sorted row indices (thread i fills the pointers of the rows
  between its predecessor's row and its own);
- ``row_lengths``: ``indptr[r + 1] - indptr[r]`` (the SpMV dispatch statistics);
- ``narrow_index``: int64 index arrays to the int32 the kernels read;
- ``diagonal``: ``d[i] = sum of a_(r, r + k)`` for r = row0 + i (duplicates summed), a thread per row;
- ``zero_diagonal``: the entries with ``col - row == k`` zeroed (setdiag);
- ``toarray``: scatter-add of the entries into a zeroed dense row-major array (duplicates sum);
- ``nonzero_flag``: ``s[i] = x[i] != 0`` (complex: either part) for dense -> CSR and
  eliminate_zeros;
- ``cast``: element dtype conversion (complex -> real keeps the real part, as numpy);
- ``conj``: complex conjugate; ``abs``: |x| into the real dtype;
- ``mul_dense``: ``out[j] = a_j * D[row_j, col_j]`` (the element-wise product with a dense D,
  any element strides, 0 to broadcast a vector);
- ``mul_sparse``: ``out[j] = a_j * b(row_j, col_j)`` by a binary search of B's sorted row (0 where B
  has no entry; the caller drops those zeros).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from .numeric import DTYPES, Num

THREADS = 256
INDEX_VARIANTS = ("expand_rows", "order", "coo_key", "split_key", "split_pos", "indptr", "row_lengths", "narrow_index")
VALUE_VARIANTS = ("diagonal", "toarray", "nonzero_flag", "conj", "cast", "mul_dense", "mul_sparse", "zero_diagonal",
                  "abs")


@dataclass(frozen=True)
class ConvertSpec(KernelSpec):
    family: ClassVar[str] = "sparse_convert"
    variant: str = "expand_rows"
    dtype: str = "float32"
    to: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in INDEX_VARIANTS + VALUE_VARIANTS or self.dtype not in DTYPES \
                or self.to not in DTYPES:
            raise ValueError(f"ConvertSpec: variant={self.variant!r} dtype={self.dtype!r} to={self.to!r}")


def _gid(kb: KernelBuilder):
    return kb.mad(kb.ctaid(), THREADS, kb.tid())


def generate_convert(spec: ConvertSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(THREADS)
    globals()[f"_{spec.variant}"](kb, spec)
    return kb.ptx()


def _expand_rows(kb, spec):
    """(indptr, rows, nrows)"""
    indptr, rows = kb.param_ptr("indptr"), kb.param_ptr("rows")
    nrows = kb.param("nrows", "u32")
    tid = kb.tid()
    row = kb.mad(kb.ctaid(), THREADS // 32, kb.shr(tid, 5))
    kb.ret(kb.setp("ge", row, nrows))
    lane = kb.bitcast(kb.and_(tid, 31), "s32")
    lo = kb.ld("global", "s32", kb.addr(indptr, row, 4))
    hi = kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4)
    with kb.loop(kb.add(lo, lane), hi, 32) as j:
        kb.st("global", kb.addr(rows, j, 4), row)


ORDER_DUPLICATE, ORDER_UNSORTED, ORDER_MINOR_UNSORTED = 1, 2, 4
ORDER_ITEMS = 4  # pairs per thread, strided by THREADS (coalesced)


def _order(kb, spec):
    """(major, minor, word, n): ``word |= `` the ORDER_* bits of the pairs (i, i + 1)."""
    major, minor, word = kb.param_ptr("major"), kb.param_ptr("minor"), kb.param_ptr("word")
    n = kb.param("n", "u32")
    tid = kb.tid()
    cta_bits = kb.shared("cta_bits", "u32", 1)
    at = kb.shared_addr(cta_bits)
    with kb.if_(kb.setp("eq", tid, 0)):
        kb.st("shared", at, 0, type_="u32")
    kb.bar_sync(0)
    base = kb.mad(kb.ctaid(), THREADS * ORDER_ITEMS, tid)
    bits = kb.mov(0, "u32")
    for k in range(ORDER_ITEMS):
        i = kb.add(base, k * THREADS)
        with kb.if_(kb.setp("lt", kb.add(i, 1), n)):
            a0 = kb.ld("global", "s32", kb.addr(major, i, 4))
            a1 = kb.ld("global", "s32", kb.addr(major, i, 4), offset=4)
            b0 = kb.ld("global", "s32", kb.addr(minor, i, 4))
            b1 = kb.ld("global", "s32", kb.addr(minor, i, 4), offset=4)
            same = kb.setp("eq", a0, a1)
            dup = kb.and_(same, kb.setp("eq", b0, b1))
            down = kb.or_(kb.setp("gt", a0, a1), kb.and_(same, kb.setp("gt", b0, b1)))
            kb.or_(bits, kb.selp(ORDER_DUPLICATE, 0, dup, type_="u32"), out=bits)
            kb.or_(bits, kb.selp(ORDER_UNSORTED, 0, down, type_="u32"), out=bits)
            kb.or_(bits, kb.selp(ORDER_MINOR_UNSORTED, 0, kb.setp("gt", b0, b1), type_="u32"), out=bits)
    warp_bits = kb.redux_sync("or", bits)
    with kb.if_(kb.and_(kb.setp("eq", kb.and_(tid, 31), 0), kb.setp("ne", warp_bits, 0))):
        kb.red("shared", "or", "b32", at, warp_bits)
    kb.bar_sync(0)
    with kb.if_(kb.setp("eq", tid, 0)):
        total = kb.ld("shared", "u32", at)
        with kb.if_(kb.setp("ne", total, 0)):
            kb.red("global", "or", "b32", word, total)


def _coo_key(kb, spec):
    """(major, minor, key, n, n_minor)"""
    major, minor, key = kb.param_ptr("major"), kb.param_ptr("minor"), kb.param_ptr("key")
    n, n_minor = kb.param("n", "u32"), kb.param("n_minor", "u64")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    a = kb.cvt(kb.ld("global", "u32", kb.addr(major, i, 4)), "u64")
    b = kb.cvt(kb.ld("global", "u32", kb.addr(minor, i, 4)), "u64")
    kb.st("global", kb.addr(key, i, 8), kb.mad(a, n_minor, b))


def _split_key(kb, spec):
    """(key, major, minor, n, n_minor)"""
    key, major, minor = kb.param_ptr("key"), kb.param_ptr("major"), kb.param_ptr("minor")
    n, n_minor = kb.param("n", "u32"), kb.param("n_minor", "u64")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    k = kb.ld("global", "u64", kb.addr(key, i, 8))
    a = kb.div(k, n_minor)
    b = kb.sub(k, kb.mul(a, n_minor))
    kb.st("global", kb.addr(major, i, 4), kb.cvt(a, "u32"))
    kb.st("global", kb.addr(minor, i, 4), kb.cvt(b, "u32"))


def _split_pos(kb, spec):
    """(pos, major, minor, n, n_minor): row-major positions (u32) of a dense array to (row, col)."""
    pos, major, minor = kb.param_ptr("pos"), kb.param_ptr("major"), kb.param_ptr("minor")
    n, n_minor = kb.param("n", "u32"), kb.param("n_minor", "u32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    k = kb.ld("global", "u32", kb.addr(pos, i, 4))
    a = kb.div(k, n_minor)
    kb.st("global", kb.addr(major, i, 4), a)
    kb.st("global", kb.addr(minor, i, 4), kb.sub(k, kb.mul(a, n_minor)))


def _indptr(kb, spec):
    """(major, indptr, n, n_major): thread i in 0..n (inclusive) writes indptr[r] = i for the rows
    r in (major[i-1], major[i]] (major[-1] = -1, major[n] = n_major)."""
    major, indptr = kb.param_ptr("major"), kb.param_ptr("indptr")
    n, n_major = kb.param("n", "s32"), kb.param("n_major", "s32")
    i = kb.bitcast(_gid(kb), "s32")
    kb.ret(kb.setp("gt", i, n))
    prev = kb.mov(-1, "s32")
    with kb.if_(kb.setp("gt", i, 0)):
        kb.assign(prev, kb.ld("global", "s32", kb.addr(major, kb.sub(i, 1), 4)))
    cur = kb.mov(n_major)
    with kb.if_(kb.setp("lt", i, n)):
        kb.assign(cur, kb.ld("global", "s32", kb.addr(major, i, 4)))
    with kb.loop(kb.add(prev, 1), kb.add(cur, 1), 1) as r:
        kb.st("global", kb.addr(indptr, r, 4), i)


def _narrow_index(kb, spec):
    """(src s64, dst s32, n): int64 index arrays (range-checked by the caller) to int32."""
    src, dst = kb.param_ptr("src"), kb.param_ptr("dst")
    n = kb.param("n", "u32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    kb.st("global", kb.addr(dst, i, 4), kb.cvt(kb.ld("global", "s64", kb.addr(src, i, 8)), "s32"))


def _row_lengths(kb, spec):
    """(indptr, lengths, nrows)"""
    indptr, lengths = kb.param_ptr("indptr"), kb.param_ptr("lengths")
    nrows = kb.param("nrows", "u32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, nrows))
    a = kb.addr(indptr, i, 4)
    kb.st("global", kb.addr(lengths, i, 4), kb.sub(kb.ld("global", "s32", a, offset=4), kb.ld("global", "s32", a)))


def _diagonal(kb, spec):
    """(indptr, indices, data, d, count, row0, k): d[i] = the sum of the entries (row0 + i,
    row0 + i + k) (duplicates summed; a linear scan of the row, unsorted indices allowed)."""
    nm = Num(kb, spec.dtype)
    indptr, indices, data, d = (kb.param_ptr(k) for k in ("indptr", "indices", "data", "d"))
    count = kb.param("count", "u32")
    row0, k = kb.param("row0", "s32"), kb.param("k", "s32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, count))
    row = kb.add(kb.bitcast(i, "s32"), row0)
    lo = kb.ld("global", "s32", kb.addr(indptr, row, 4))
    hi = kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4)
    acc = nm.zero()
    me = kb.add(row, k)
    with kb.loop(lo, hi, 1) as j, kb.if_(kb.setp("eq", kb.ld("global", "s32", kb.addr(indices, j, 4)), me)):
        nm.assign(acc, nm.add(acc, nm.load(data, j)))
    nm.store(d, i, acc)


def _zero_diagonal(kb, spec):
    """(rows, indices, data, out, nnz, k, row_end): out[j] = data[j], 0 where indices[j] - rows[j]
    == k and rows[j] < row_end (setdiag: the old entries of the part of the diagonal being set,
    which the new values then replace by a duplicate sum)."""
    nm = Num(kb, spec.dtype)
    rows, indices, data, out = (kb.param_ptr(k) for k in ("rows", "indices", "data", "out"))
    nnz, k, row_end = kb.param("nnz", "u32"), kb.param("k", "s32"), kb.param("row_end", "s32")
    j = _gid(kb)
    kb.ret(kb.setp("ge", j, nnz))
    r = kb.ld("global", "s32", kb.addr(rows, j, 4))
    c = kb.ld("global", "s32", kb.addr(indices, j, 4))
    v = nm.load(data, j)
    res = nm.mov(v)
    with kb.if_(kb.and_(kb.setp("eq", kb.sub(c, r), k), kb.setp("lt", r, row_end))):
        nm.assign(res, nm.zero())
    nm.store(out, j, res)


def _toarray(kb, spec):
    """(indptr, indices, data, dense, nrows, ncols): dense zeroed by the caller."""
    nm = Num(kb, spec.dtype)
    indptr, indices, data, dense = (kb.param_ptr(k) for k in ("indptr", "indices", "data", "dense"))
    nrows, ncols = kb.param("nrows", "u32"), kb.param("ncols", "u32")
    tid = kb.tid()
    row = kb.mad(kb.ctaid(), THREADS // 32, kb.shr(tid, 5))
    kb.ret(kb.setp("ge", row, nrows))
    lane = kb.bitcast(kb.and_(tid, 31), "s32")
    lo = kb.ld("global", "s32", kb.addr(indptr, row, 4))
    hi = kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4)
    base = kb.mul(row, ncols, mode="wide")
    with kb.loop(kb.add(lo, lane), hi, 32) as j:
        col = kb.cvt(kb.ld("global", "u32", kb.addr(indices, j, 4)), "u64")
        nm.red_add(dense, kb.add(base, col), nm.load(data, j))


def _nonzero_flag(kb, spec):
    """(x, s, n)"""
    nm = Num(kb, spec.dtype)
    x, s = kb.param_ptr("x"), kb.param_ptr("s")
    n = kb.param("n", "u32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    v = nm.load(x, i)
    p = kb.setp("ne", v[0], 0.0)
    if len(v) == 2:
        p = kb.or_(p, kb.setp("ne", v[1], 0.0))
    kb.st("global", kb.addr(s, i, 4), kb.selp(1, 0, p, type_="u32"))


def _conj(kb, spec):
    """(src, dst, n)"""
    nm = Num(kb, spec.dtype)
    src, dst = kb.param_ptr("src"), kb.param_ptr("dst")
    n = kb.param("n", "u32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    nm.store(dst, i, nm.conj(nm.load(src, i)))


def _abs(kb, spec):
    """(src, dst, n): |x| into the real dtype ``to`` (complex: sqrt(re^2 + im^2) scaled by the
    larger part, so neither overflows)."""
    nm = Num(kb, spec.dtype)
    src, dst = kb.param_ptr("src"), kb.param_ptr("dst")
    n = kb.param("n", "u32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    v = nm.load(src, i)
    if len(v) == 1:
        r = kb.abs(v[0])
    else:
        x, y = kb.abs(v[0]), kb.abs(v[1])
        hi, lo = kb.max(x, y), kb.min(x, y)
        q = kb.div(lo, kb.selp(1.0, hi, kb.setp("eq", hi, 0.0)))
        r = kb.mul(hi, kb.sqrt(kb.fma(q, q, 1.0)))
    kb.st("global", kb.addr(dst, i, nm.rbytes), r)


def _cast(kb, spec):
    """(src, dst, n)"""
    a, b = Num(kb, spec.dtype), Num(kb, spec.to)
    src, dst = kb.param_ptr("src"), kb.param_ptr("dst")
    n = kb.param("n", "u32")
    i = _gid(kb)
    kb.ret(kb.setp("ge", i, n))
    v = a.load(src, i)
    if a.real != b.real:
        v = tuple(kb.cvt(p, b.real) for p in v)
    if b.parts == 2 and len(v) == 1:
        v = (v[0], kb.mov(0.0, b.real))
    b.store(dst, i, v[:b.parts])


def _mul_dense(kb, spec):
    """(rows, indices, data, dense, out, nnz, row_stride, col_stride): element strides of the
    dense operand (s64; 0 broadcasts a row or column vector over the matrix)."""
    nm = Num(kb, spec.dtype)
    rows, indices, data, dense, out = (kb.param_ptr(k) for k in ("rows", "indices", "data", "dense", "out"))
    nnz = kb.param("nnz", "u32")
    rs, cs = kb.param("row_stride", "s64"), kb.param("col_stride", "s64")
    j = _gid(kb)
    kb.ret(kb.setp("ge", j, nnz))
    r = kb.cvt(kb.ld("global", "u32", kb.addr(rows, j, 4)), "s64", type_="u32")
    c = kb.cvt(kb.ld("global", "u32", kb.addr(indices, j, 4)), "s64", type_="u32")
    at = kb.mad(r, rs, kb.mul(c, cs))
    nm.store(out, j, nm.mul(nm.load(data, j), nm.load(dense, at)))


def _mul_sparse(kb, spec):
    """(rows, indices, data, b_indptr, b_indices, b_data, out, nnz)"""
    nm = Num(kb, spec.dtype)
    rows, indices, data = kb.param_ptr("rows"), kb.param_ptr("indices"), kb.param_ptr("data")
    b_indptr, b_indices, b_data, out = (kb.param_ptr(k) for k in ("b_indptr", "b_indices", "b_data", "out"))
    nnz = kb.param("nnz", "u32")
    j = _gid(kb)
    kb.ret(kb.setp("ge", j, nnz))
    r = kb.ld("global", "u32", kb.addr(rows, j, 4))
    c = kb.ld("global", "s32", kb.addr(indices, j, 4))
    lo = kb.ld("global", "s32", kb.addr(b_indptr, r, 4))
    hi = kb.ld("global", "s32", kb.addr(b_indptr, r, 4), offset=4)
    top = kb.label("search")
    with kb.if_(kb.setp("lt", lo, hi)):
        mid = kb.shr(kb.add(lo, hi), 1)
        right = kb.setp("lt", kb.ld("global", "s32", kb.addr(b_indices, mid, 4)), c)
        kb.selp(kb.add(mid, 1), lo, right, out=lo)
        kb.selp(hi, mid, right, out=hi)
        kb.bra(top)
    res = nm.zero()
    end = kb.ld("global", "s32", kb.addr(b_indptr, r, 4), offset=4)
    # the second condition's load is emitted inside the first block: never past B's row
    with kb.if_(kb.setp("lt", lo, end)), kb.if_(kb.setp("eq", kb.ld("global", "s32", kb.addr(b_indices, lo, 4)), c)):
        nm.assign(res, nm.mul(nm.load(data, j), nm.load(b_data, lo)))
    nm.store(out, j, res)


_REAL_OF = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}


def convert_configurations(arch: str) -> list[ConvertSpec]:
    out = [ConvertSpec(arch=arch, variant=v) for v in INDEX_VARIANTS]
    for d in DTYPES:
        out += [ConvertSpec(arch=arch, variant=v, dtype=d, to=d)
                for v in ("diagonal", "toarray", "nonzero_flag", "mul_dense", "mul_sparse", "zero_diagonal")]
        if d.startswith("complex"):
            out.append(ConvertSpec(arch=arch, variant="conj", dtype=d, to=d))
        out.append(ConvertSpec(arch=arch, variant="abs", dtype=d, to=_REAL_OF[d]))
        out += [ConvertSpec(arch=arch, variant="cast", dtype=d, to=t) for t in DTYPES if t != d]
    return out


registry.register_family(ConvertSpec.family, ConvertSpec, generate_convert, convert_configurations)
