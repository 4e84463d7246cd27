"""SpGEMM ``C = A B`` of CSR matrices in two phases, with per-row hash tables.

Family ``sparse_spgemm``, variants:

- ``nprod``: thread per row i of A: ``nprod[i] = sum_k len(B_k)`` over the row's columns k (the
  products the row forms: an upper bound of its non-zeros), and the hash-table size the row
  needs, ``2 * nprod`` rounded up to a power of two (at least 32); a row whose table exceeds
  ``CAP`` slots asks for a table in global memory (``fsize``, scanned into offsets);
- ``symbolic``: one CTA (one warp) per row inserts the row's column indices into its table
  (shared memory, or the global fallback) with ``atom.cas`` and linear probing, and counts the
  distinct ones: the row sizes of C, scanned into C's indptr;
- ``numeric``: the same inserts accumulate ``a_ik b_kj`` into the table's values (``red.add``),
  then every occupied slot is written at its rank among the row's columns (a rank sort of the
  table), so C comes out sorted and canonical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.primitives.kernels.common import warp_reduce
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from .numeric import DTYPES, Num

THREADS = 32
CAP = 1024
EMPTY = 0xFFFFFFFF
HASH = 0x9E3779B1


@dataclass(frozen=True)
class SpgemmSpec(KernelSpec):
    family: ClassVar[str] = "sparse_spgemm"
    variant: str = "numeric"
    dtype: str = "float64"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in ("nprod", "symbolic", "numeric") or self.dtype not in DTYPES:
            raise ValueError(f"SpgemmSpec: variant={self.variant!r} dtype={self.dtype!r}")


def _row(kb, indptr, i):
    lo = kb.ld("global", "s32", kb.addr(indptr, i, 4))
    hi = kb.ld("global", "s32", kb.addr(indptr, i, 4), offset=4)
    return lo, hi


def _nprod(kb: KernelBuilder) -> None:
    """(a_indptr, a_indices, b_indptr, nprod u32, size u32, fsize s64, n)"""
    a_indptr, a_indices, b_indptr = kb.param_ptr("a_indptr"), kb.param_ptr("a_indices"), kb.param_ptr("b_indptr")
    nprod, size, fsize = kb.param_ptr("nprod"), kb.param_ptr("size"), kb.param_ptr("fsize")
    n = kb.param("n", "u32")
    i = kb.mad(kb.ctaid(), 256, kb.tid())
    kb.ret(kb.setp("ge", i, n))
    lo, hi = _row(kb, a_indptr, i)
    total = kb.mov(0, "s32")
    with kb.loop(lo, hi, 1) as j:
        k = kb.ld("global", "s32", kb.addr(a_indices, j, 4))
        blo, bhi = _row(kb, b_indptr, k)
        kb.add(total, kb.sub(bhi, blo), out=total)
    kb.st("global", kb.addr(nprod, i, 4), total)
    s = kb.mov(32, "u32")
    want = kb.mul(kb.bitcast(total, "u32"), 2)
    top = kb.label("grow")
    with kb.if_(kb.setp("lt", s, want)):
        kb.shl(s, 1, out=s)
        kb.bra(top)
    kb.st("global", kb.addr(size, i, 4), s)
    f = kb.selp(kb.cvt(s, "s64"), 0, kb.setp("gt", s, CAP), type_="s64")
    kb.st("global", kb.addr(fsize, i, 8), f)


def _insert(kb, space, keys, slot_mask, col, on_new, on_slot):
    """Probe for ``col`` in the table at ``keys`` (u32 window address for shared, u64 for global);
    calls ``on_new()`` when this lane claimed a new slot and ``on_slot(h)`` with the slot index."""
    h = kb.and_(kb.mul(kb.bitcast(col, "u32"), HASH), slot_mask)
    probe = kb.label(f"probe_{space}")
    old = kb.atom(space, "cas", "u32", kb.addr(keys, h, 4), kb.bitcast(col, "u32"), compare=EMPTY)
    claimed = kb.setp("eq", old, EMPTY)
    found = kb.or_(claimed, kb.setp("eq", old, kb.bitcast(col, "u32")))
    with kb.if_(found, negate=True):
        kb.and_(kb.add(h, 1), slot_mask, out=h)
        kb.bra(probe)
    if on_new is not None:
        with kb.if_(claimed):
            on_new()
    if on_slot is not None:
        on_slot(h)


def _phase(kb: KernelBuilder, spec: SpgemmSpec, nm: Num | None) -> None:
    """symbolic (a_indptr, a_indices, b_indptr, b_indices, size, goff, gkeys, rowcount, n);
    numeric adds a_data, b_data, gvals, c_indptr, c_indices, c_data."""
    numeric = nm is not None
    a_indptr, a_indices = kb.param_ptr("a_indptr"), kb.param_ptr("a_indices")
    b_indptr, b_indices = kb.param_ptr("b_indptr"), kb.param_ptr("b_indices")
    size_p, goff, gkeys = kb.param_ptr("size"), kb.param_ptr("goff"), kb.param_ptr("gkeys")
    if numeric:
        a_data, b_data, gvals = kb.param_ptr("a_data"), kb.param_ptr("b_data"), kb.param_ptr("gvals")
        c_indptr, c_indices, c_data = kb.param_ptr("c_indptr"), kb.param_ptr("c_indices"), kb.param_ptr("c_data")
    else:
        rowcount = kb.param_ptr("rowcount")
    kb.param("n", "u32")
    i = kb.ctaid()
    lane = kb.tid()
    size = kb.ld("global", "u32", kb.addr(size_p, i, 4))
    mask = kb.sub(size, 1)
    skeys = kb.shared("keys", "u32", CAP)
    if numeric:
        svals = kb.shared("vals", nm.real, CAP * nm.parts)
    lo, hi = _row(kb, a_indptr, i)
    count = kb.mov(0, "u32")

    def body(space: str) -> None:
        # the global table is filled by atomics (at L2): read it back at L2 too
        gcache = "cg" if space == "global" else None
        if space == "shared":
            keys = kb.shared_addr(skeys)
            vals = kb.shared_addr(svals) if numeric else None
        else:
            off = kb.ld("global", "s64", kb.addr(goff, i, 8))
            keys = kb.addr(gkeys, off, 4)
            vals = kb.addr(gvals, off, nm.size) if numeric else None
        with kb.loop(lane, size, THREADS) as e:
            kb.st(space, kb.addr(keys, e, 4), EMPTY, type_="u32")
            if numeric:
                nm.store(vals, e, nm.zero(), space=space)
        kb.bar_sync(0)
        with kb.loop(lo, hi, 1) as j:
            k = kb.ld("global", "s32", kb.addr(a_indices, j, 4))
            a = nm.load(a_data, j) if numeric else None
            blo, bhi = _row(kb, b_indptr, k)
            with kb.loop(kb.add(blo, kb.bitcast(lane, "s32")), bhi, THREADS) as q:
                col = kb.ld("global", "s32", kb.addr(b_indices, q, 4))
                if numeric:
                    prod = nm.mul(a, nm.load(b_data, q))

                    def add(h, prod=prod):
                        a_ = kb.addr(vals, h, nm.size)
                        for p, part in enumerate(prod):
                            kb.red(space, "add", nm.real, a_, part, offset=p * nm.rbytes)

                    _insert(kb, space, keys, mask, col, None, add)
                else:
                    _insert(kb, space, keys, mask, col, lambda: kb.add(count, 1, out=count), None)
        kb.membar("cta" if space == "shared" else "gl")
        kb.bar_sync(0)
        if numeric:
            base = kb.ld("global", "s32", kb.addr(c_indptr, i, 4))
            with kb.loop(lane, size, THREADS) as e:
                key = kb.ld(space, "u32", kb.addr(keys, e, 4), cache=gcache)
                with kb.if_(kb.setp("ne", key, EMPTY)):
                    rank = kb.mov(0, "s32")
                    with kb.loop(0, size, 1, type_="u32") as f:
                        other = kb.ld(space, "u32", kb.addr(keys, f, 4), cache=gcache)
                        smaller = kb.and_(kb.setp("ne", other, EMPTY), kb.setp("lt", other, key))
                        kb.add(rank, kb.selp(1, 0, smaller, type_="s32"), out=rank)
                    dst = kb.add(base, rank)
                    kb.st("global", kb.addr(c_indices, dst, 4), key)
                    nm.store(c_data, dst, nm.load(vals, e, space=space, cache=gcache))

    with kb.if_(kb.setp("le", size, CAP)):
        body("shared")
    with kb.else_():
        body("global")
    if not numeric:
        total = warp_reduce(kb, "sum", count)
        with kb.if_(kb.setp("eq", lane, 0)):
            kb.st("global", kb.addr(rowcount, i, 4), total)


def generate_spgemm(spec: SpgemmSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    if spec.variant == "nprod":
        kb.maxntid(256)
        _nprod(kb)
    else:
        kb.reqntid(THREADS)
        _phase(kb, spec, Num(kb, spec.dtype) if spec.variant == "numeric" else None)
    return kb.ptx()


def spgemm_configurations(arch: str) -> list[SpgemmSpec]:
    return [SpgemmSpec(arch=arch, variant="nprod"), SpgemmSpec(arch=arch, variant="symbolic")] + [
        SpgemmSpec(arch=arch, variant="numeric", dtype=d) for d in DTYPES]


registry.register_family(SpgemmSpec.family, SpgemmSpec, generate_spgemm, spgemm_configurations)
