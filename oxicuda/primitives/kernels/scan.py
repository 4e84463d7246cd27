"""Device-wide inclusive/exclusive scan: one pass with decoupled look-back.

Family ``prim_scan``. Each CTA takes the next tile by an atomic ticket (so a tile only waits on
tiles whose CTAs already started: no deadlock however CTAs are scheduled), scans its tile in
shared memory, publishes its aggregate (flag 1), looks back over its predecessors' flags with
its first warp, 32 tiles per step, folding aggregates until it meets an inclusive prefix (flag
2), and publishes its own inclusive prefix. Loads and stores are coalesced (striped) and transposed through shared memory so that
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
    with kb.if_(kb.setp("eq", warp, 0)):
        _look_back(kb, op, t, size, ident, tile_id, total, lane, flags, agg, pref, prefix_slot)
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


def _look_back(kb: KernelBuilder, op: str, t: str, size: int, ident, tile_id, total, lane, flags, agg,
               pref, prefix_slot) -> None:
    """Warp 0: publish this tile's aggregate, then look back 32 predecessors at a time (lane l
    reads tile - 1 - l - 32 r): fold the aggregates of the lanes nearer than the nearest inclusive
    prefix, and that prefix, until one is found; publish the inclusive prefix and leave the
    exclusive one in ``prefix_slot``.

    Every load of another CTA's flag or value is strong (ld.relaxed.gpu). This look-back first
    ran (431e50b) with ``ld.global.cv``, a weak load with a cache hint: ptxas compiled its poll
    loop to a single load (nothing in the SASS branched back), so lanes read aggregates not yet
    written and the H200 run failed. tests/test_sync_loads.py now rejects such a poll."""
    first = kb.setp("eq", tile_id, 0)
    lane0 = kb.setp("eq", lane, 0)
    with kb.if_(lane0):
        with kb.if_(first):
            kb.st("global", pref, total)
            kb.membar("gl")
            kb.st("global", flags, 2, type_="u32", sem="relaxed")
        with kb.else_():
            kb.st("global", kb.addr(agg, tile_id, size), total)
            kb.membar("gl")
            kb.st("global", kb.addr(flags, tile_id, 4), 1, type_="u32", sem="relaxed")
    prefix = kb.mov(ident, t)
    with kb.if_(first, negate=True):
        window = kb.bitcast(kb.sub(tile_id, 1), "s32")
        below = kb.sub(kb.shl(kb.mov(1, "u32"), lane), 1)
        again = kb.label("window")
        j = kb.sub(window, kb.bitcast(lane, "s32"))
        valid = kb.setp("ge", j, 0)
        f = kb.mov(0, "u32")
        with kb.if_(valid):
            poll = kb.label("poll")
            kb.assign(f, kb.ld("global", "u32", kb.addr(flags, j, 4), sem="relaxed"))
            kb.bra(poll, kb.setp("eq", f, 0))
        kb.membar("gl")
        inclusive = kb.and_(valid, kb.setp("eq", f, 2))
        found = kb.vote_sync("ballot", inclusive)
        take = kb.and_(valid, kb.setp("eq", kb.and_(found, below), 0))
        v = kb.mov(ident, t)
        with kb.if_(take):
            with kb.if_(inclusive):
                kb.assign(v, kb.ld("global", t, kb.addr(pref, j, size), sem="relaxed"))
            with kb.else_():
                kb.assign(v, kb.ld("global", t, kb.addr(agg, j, size), sem="relaxed"))
        kb.assign(prefix, C.combine(kb, op, prefix, C.warp_reduce(kb, op, v)))
        kb.sub(window, 32, out=window)
        kb.bra(again, kb.setp("eq", found, 0))
        with kb.if_(lane0):
            kb.st("global", kb.addr(pref, tile_id, size), C.combine(kb, op, prefix, total))
            kb.membar("gl")
            kb.st("global", kb.addr(flags, tile_id, 4), 2, type_="u32", sem="relaxed")
    with kb.if_(lane0):
        kb.st("shared", prefix_slot, prefix)


def scan_spec(arch: str, dtype: str, op: str, exclusive: bool) -> ScanSpec:
    threads, items = TILES[dtype]
    return ScanSpec(arch=arch, dtype=dtype, op=op, exclusive=exclusive, threads=threads, items=items)


def scan_configurations(arch: str) -> list[ScanSpec]:
    return [scan_spec(arch, d, op, ex) for d in C.SCAN_DTYPES for op in SCAN_OPS for ex in (False, True)]


registry.register_family(ScanSpec.family, ScanSpec, generate_scan, scan_configurations)
registry.register_family(FillSpec.family, FillSpec, generate_fill, lambda arch: [FillSpec(arch=arch)])
