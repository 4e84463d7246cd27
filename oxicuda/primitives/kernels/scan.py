"""Device-wide inclusive/exclusive scan: one pass with decoupled look-back.

Family ``prim_scan``. Each CTA takes the next tile by an atomic ticket (so a tile only waits on
tiles whose CTAs already started: no deadlock however CTAs are scheduled), scans its tile in
shared memory, publishes its aggregate (flag 1), looks back over its predecessors' flags,
folding aggregates until it meets an inclusive prefix (flag 2), and publishes its own inclusive
prefix. Loads and stores are coalesced (striped) and transposed through shared memory so that
every thread scans ``items`` consecutive elements.

State (in the caller's workspace): one u32 ticket counter followed by a u32 flag per tile
(zeroed by ``prim_fill`` before the scan), then an aggregate and an inclusive prefix per tile.

Family ``prim_fill``: ``p[i] = value`` for i < n (u32 words): the scan state reset and the
histogram zeroing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from . import common as C

SCAN_OPS = ("sum", "max", "min")
#: dtype -> (threads, items per thread) of the one configuration per dtype
TILES = {"int32": (256, 8), "uint32": (256, 8), "float32": (256, 8),
         "int64": (256, 4), "float64": (256, 4)}
FILL_THREADS = 256


def tile_of(dtype: str) -> int:
    threads, items = TILES[dtype]
    return threads * items


@dataclass(frozen=True)
class ScanSpec(KernelSpec):
    """One scan kernel: ``op`` over ``dtype``, inclusive or exclusive."""

    family: ClassVar[str] = "prim_scan"
    dtype: str = "int32"
    op: str = "sum"
    exclusive: bool = False
    threads: int = 256
    items: int = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in C.SCAN_DTYPES:
            raise ValueError(f"ScanSpec: dtype={self.dtype!r}; allowed {C.SCAN_DTYPES}")
        if self.op not in SCAN_OPS:
            raise ValueError(f"ScanSpec: op={self.op!r}; allowed {SCAN_OPS}")
        if self.threads % 32 or not 32 <= self.threads <= 1024 or self.items < 1:
            raise ValueError(f"ScanSpec: threads={self.threads}, items={self.items}")


@dataclass(frozen=True)
class FillSpec(KernelSpec):
    """``p[i] = value`` over u32 words."""

    family: ClassVar[str] = "prim_fill"
    threads: int = FILL_THREADS


def generate_fill(spec: FillSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    p = kb.param_ptr("p")
    n = kb.param("n", "u32")
    value = kb.param("value", "u32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        kb.st("global", kb.addr(p, i, 4), value)
    return kb.ptx()


def generate_scan(spec: ScanSpec) -> str:
    """Params (x, y, n, counter, flags, agg, pref)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    T, I = spec.threads, spec.items
    C.launch_bounds(kb, T)
    t, size, op = C.PTX[spec.dtype], C.BYTES[spec.dtype], spec.op
    ident = C.identity(op, spec.dtype)
    x, y = kb.param_ptr("x"), kb.param_ptr("y")
    n = kb.param("n", "u32")
    counter, flags = kb.param_ptr("counter"), kb.param_ptr("flags")
    agg, pref = kb.param_ptr("agg"), kb.param_ptr("pref")
    warps = T // 32
    sh = kb.shared("tile", t, T * I + T * I // 32)
    misc = kb.shared("misc", t, warps + 2)
    ticket = kb.shared("ticket", "u32", 1)
    tid = kb.tid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    is0 = kb.setp("eq", tid, 0)
    with kb.if_(is0):
        kb.st("shared", ticket, kb.atom("global", "add", "u32", counter, 1))
    kb.bar_sync(0)
    tile_id = kb.ld("shared", "u32", ticket)
    base = kb.mul(tile_id, T * I)
    shb = kb.shared_addr(sh)

    def slot(i):
        """Shared address of tile element i, one pad element per 32 (the blocked reads of
        ``items`` consecutive elements per thread would otherwise hit one bank ``items`` times)."""
        return kb.addr(shb, kb.add(i, kb.shr(i, 5)), size)

    striped = [slot(kb.add(tid, k * T)) for k in range(I)]
    mine_at = [slot(kb.add(kb.mul(tid, I), k)) for k in range(I)]
    for k in range(I):
        idx = kb.add(base, k * T + 0)
        idx = kb.add(idx, tid)
        v = kb.mov(ident, t)
        with kb.if_(kb.setp("lt", idx, n)):
            kb.assign(v, kb.ld("global", t, kb.addr(x, idx, size)))
        kb.st("shared", striped[k], v)
    kb.bar_sync(0)
    vals = [kb.ld("shared", t, mine_at[k]) for k in range(I)]
    incl = [vals[0]]
    for k in range(1, I):
        incl.append(C.combine(kb, op, incl[-1], vals[k]))
    texcl, total = C.block_exclusive_scan(kb, op, incl[-1], misc, warps, warp, lane, ident)
    prefix_slot = kb.shared_addr(misc, (warps + 1) * size)
    with kb.if_(is0):
        prefix = kb.mov(ident, t)
        with kb.if_(kb.setp("eq", tile_id, 0)):
            kb.st("global", pref, total)
            kb.membar("gl")
            kb.st("global", flags, 2, type_="u32", sem="relaxed")
        with kb.else_():
            kb.st("global", kb.addr(agg, tile_id, size), total)
            kb.membar("gl")
            kb.st("global", kb.addr(flags, tile_id, 4), 1, type_="u32", sem="relaxed")
            j = kb.sub(tile_id, 1)
            look = kb.label("look")
            # strong loads (relaxed.gpu): a cache hint on a weak load does not keep ptxas from
            # moving or deleting a polling loop (see tests/test_sync_loads.py)
            f = kb.ld("global", "u32", kb.addr(flags, j, 4), sem="relaxed")
            kb.bra(look, kb.setp("eq", f, 0))
            kb.membar("gl")
            done = kb.setp("eq", f, 2)
            with kb.if_(done):
                kb.assign(prefix, C.combine(kb, op, kb.ld("global", t, kb.addr(pref, j, size), sem="relaxed"), prefix))
            with kb.else_():
                kb.assign(prefix, C.combine(kb, op, kb.ld("global", t, kb.addr(agg, j, size), sem="relaxed"), prefix))
                kb.sub(j, 1, out=j)
            kb.bra(look, done, negate=True)
            kb.st("global", kb.addr(pref, tile_id, size), C.combine(kb, op, prefix, total))
            kb.membar("gl")
            kb.st("global", kb.addr(flags, tile_id, 4), 2, type_="u32", sem="relaxed")
        kb.st("shared", prefix_slot, prefix)
    kb.bar_sync(0)
    lead = C.combine(kb, op, kb.ld("shared", t, prefix_slot), texcl)
    for k in range(I):
        if spec.exclusive:
            r = lead if k == 0 else C.combine(kb, op, lead, incl[k - 1])
        else:
            r = C.combine(kb, op, lead, incl[k])
        kb.st("shared", mine_at[k], r)
    kb.bar_sync(0)
    for k in range(I):
        idx = kb.add(kb.add(base, k * T), tid)
        with kb.if_(kb.setp("lt", idx, n)):
            kb.st("global", kb.addr(y, idx, size), kb.ld("shared", t, striped[k]))
    return kb.ptx()


def scan_spec(arch: str, dtype: str, op: str, exclusive: bool) -> ScanSpec:
    threads, items = TILES[dtype]
    return ScanSpec(arch=arch, dtype=dtype, op=op, exclusive=exclusive, threads=threads, items=items)


def scan_configurations(arch: str) -> list[ScanSpec]:
    return [scan_spec(arch, d, op, ex) for d in C.SCAN_DTYPES for op in SCAN_OPS for ex in (False, True)]


registry.register_family(ScanSpec.family, ScanSpec, generate_scan, scan_configurations)
registry.register_family(FillSpec.family, FillSpec, generate_fill, lambda arch: [FillSpec(arch=arch)])
