"""Sparse triangular solves (SpTRSV) of CSR matrices: a level analysis on the device, then a
sync-free solve in level order.

Family ``sparse_sptrsv``, variants (one warp per CTA, one row per CTA):

- ``levels``: CTAs take rows by an atomic ticket in dependency order (ascending for lower,
  descending for upper triangles), wait for the ``ready`` flags of the rows they depend on and
  set ``level[i] = 1 + max(level[j])``. A row only waits on rows whose CTAs started before it, so
  the scheme cannot deadlock however CTAs are scheduled.
- ``solve``: CTAs take rows in level order (the analysis' stable sort of the levels), wait for
  the ``done`` flags of the rows their row reads, and write ``x[i] = (b[i] - sum_j a_ij x[j]) /
  a_ii`` (``unit``: a_ii = 1). Rows of one level never wait on each other.

Entries on the other side of the diagonal are ignored (as the triangle the solve reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.primitives.kernels.common import warp_reduce
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from .numeric import DTYPES, Num, divide

THREADS = 32


@dataclass(frozen=True)
class SptrsvSpec(KernelSpec):
    family: ClassVar[str] = "sparse_sptrsv"
    variant: str = "solve"
    dtype: str = "float64"
    lower: bool = True
    unit: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in ("levels", "solve") or self.dtype not in DTYPES:
            raise ValueError(f"SptrsvSpec: variant={self.variant!r} dtype={self.dtype!r}")


def _ticket(kb: KernelBuilder, counter, lane):
    t = kb.mov(0, "u32")
    with kb.if_(kb.setp("eq", lane, 0)):
        kb.assign(t, kb.atom("global", "add", "u32", counter, 1))
    return kb.shfl_sync("idx", t, 0)


def _wait(kb: KernelBuilder, flags, c, name: str) -> None:
    """Spin until ``flags[c]`` is set, with an acquire load: the reads after it see what the
    flag's writer stored before its release. The loaded value feeds only the branch, so a weak
    load (``ld.cv``, a cache hint) let ptxas delete the whole loop: on the H200 every row then
    read x[c] before it was written (the emulator, running CTAs one by one in ticket order,
    never waits and could not see it; tests/test_sync_loads.py checks the PTX instead)."""
    top = kb.label(name)
    f = kb.ld("global", "u32", kb.addr(flags, c, 4), sem="acquire", scope="gpu")
    kb.bra(top, kb.setp("eq", f, 0))


def _publish(kb: KernelBuilder, flags, i) -> None:
    """``flags[i] = 1`` with release order: after this thread's stores of row i's results."""
    kb.st("global", kb.addr(flags, i, 4), 1, type_="u32", sem="release", scope="gpu")


def generate_sptrsv(spec: SptrsvSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(THREADS)
    indptr, indices = kb.param_ptr("indptr"), kb.param_ptr("indices")
    if spec.variant == "levels":
        level, ready, counter = kb.param_ptr("level"), kb.param_ptr("ready"), kb.param_ptr("counter")
    else:
        data, b, x = kb.param_ptr("data"), kb.param_ptr("b"), kb.param_ptr("x")
        done, counter, order = kb.param_ptr("done"), kb.param_ptr("counter"), kb.param_ptr("order")
    n = kb.param("n", "u32")
    lane = kb.tid()
    t = _ticket(kb, counter, lane)
    kb.ret(kb.setp("ge", t, n))
    if spec.variant == "levels":
        i = t if spec.lower else kb.sub(kb.sub(n, 1), t)
    else:
        i = kb.ld("global", "u32", kb.addr(order, t, 4))
    me = kb.bitcast(i, "s32")
    lo = kb.ld("global", "s32", kb.addr(indptr, i, 4))
    hi = kb.ld("global", "s32", kb.addr(indptr, i, 4), offset=4)
    start = kb.add(lo, kb.bitcast(lane, "s32"))
    if spec.variant == "levels":
        m = kb.mov(0, "s32")
        with kb.loop(start, hi, THREADS) as j:
            c = kb.ld("global", "s32", kb.addr(indices, j, 4))
            with kb.if_(kb.setp("lt" if spec.lower else "gt", c, me)):
                _wait(kb, ready, c, "wait")
                kb.max(m, kb.ld("global", "s32", kb.addr(level, c, 4)), out=m)
        m = warp_reduce(kb, "max", m)
        with kb.if_(kb.setp("eq", lane, 0)):
            kb.st("global", kb.addr(level, i, 4), kb.add(m, 1))
            _publish(kb, ready, i)
        return kb.ptx()
    nm = Num(kb, spec.dtype)
    acc = nm.zero()
    diag = nm.zero()
    with kb.loop(start, hi, THREADS) as j:
        c = kb.ld("global", "s32", kb.addr(indices, j, 4))
        with kb.if_(kb.setp("lt" if spec.lower else "gt", c, me)):
            _wait(kb, done, c, "wait")
            # x[c] was written by another CTA of this launch; the acquire in _wait orders this
            # read after it (ptxas invalidates L1 there), .cg keeps it at L2 all the same
            nm.assign(acc, nm.fma(nm.load(data, j), nm.load(x, c, cache="cg"), acc))
        if not spec.unit:
            with kb.if_(kb.setp("eq", c, me)):
                nm.assign(diag, nm.add(diag, nm.load(data, j)))
    acc = tuple(warp_reduce(kb, "sum", v) for v in acc)
    if spec.unit:
        diag = (kb.mov(1.0, nm.real),) + ((kb.mov(0.0, nm.real),) if nm.parts == 2 else ())
    else:
        diag = tuple(warp_reduce(kb, "sum", v) for v in diag)
    with kb.if_(kb.setp("eq", lane, 0)):
        nm.store(x, i, divide(nm, nm.sub(nm.load(b, i), acc), diag))
        _publish(kb, done, i)
    return kb.ptx()


def sptrsv_configurations(arch: str) -> list[SptrsvSpec]:
    out = [SptrsvSpec(arch=arch, variant="levels", lower=lo) for lo in (True, False)]
    out += [SptrsvSpec(arch=arch, variant="solve", dtype=d, lower=lo, unit=u)
            for d in DTYPES for lo in (True, False) for u in (False, True)]
    return out


registry.register_family(SptrsvSpec.family, SptrsvSpec, generate_sptrsv, sptrsv_configurations)
