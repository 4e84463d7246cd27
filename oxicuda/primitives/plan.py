"""Launch plans of the primitives, and the step builders other libraries compose into theirs.

A plan is a list of ``KernelStep`` whose arguments come from the call's pointers (``P(i)``),
from the plan's workspace (``W(offset)``) or are constants fixed at plan time. Builders return
``(steps, workspace_bytes)`` with every workspace offset counted from the ``ws`` they are given,
so a caller can place a scan inside a larger plan (the radix sort, sparse conversions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oxicuda.driver.facts import device_facts
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache

from .kernels import common as C
from .kernels.scan import FILL_THREADS, FillSpec, scan_spec, tile_of

PLANS = PlanCache("primitives")


@dataclass(frozen=True)
class P:
    """The call's pointer number ``i`` (plus a byte offset)."""

    i: int
    offset: int = 0


@dataclass(frozen=True)
class W:
    """The workspace pointer plus ``offset`` bytes."""

    offset: int


def bind(*args: object):
    """A ``bind(pointers, scalars, ws)`` giving ``args`` with P/W resolved (constants as given)."""
    getters = []
    for a in args:
        if isinstance(a, P):
            getters.append(lambda p, ws, i=a.i, o=a.offset: p[i] + o)
        elif isinstance(a, W):
            getters.append(lambda p, ws, o=a.offset: ws + o)
        else:
            getters.append(lambda p, ws, v=a: v)
    getters = tuple(getters)

    def run(p: Sequence[int], s: Sequence[object], ws: int) -> tuple:
        return tuple(g(p, ws) for g in getters)

    return run


def shift(ref: object, nbytes: int) -> object:
    """``ref`` moved by ``nbytes``."""
    if isinstance(ref, P):
        return P(ref.i, ref.offset + nbytes)
    if isinstance(ref, W):
        return W(ref.offset + nbytes)
    raise TypeError(f"shift: {ref!r} is not a pointer reference")


def align(n: int, to: int = 256) -> int:
    return -(-n // to) * to


def blocks(n: int, threads: int) -> int:
    return max(1, -(-n // threads))


def arch() -> str:
    return device_facts().arch


def fill_step(arch_: str, dst: object, words: int, value: int = 0) -> KernelStep:
    """``words`` u32 words at ``dst`` set to ``value``."""
    return KernelStep(FillSpec(arch=arch_), blocks(words, FILL_THREADS), FILL_THREADS,
                      bind(dst, words, value))


def scan_steps(arch_: str, dtype: str, op: str, exclusive: bool, n: int, src: object, dst: object,
               ws: int) -> tuple[list[KernelStep], int]:
    """The state reset and the single-pass scan of ``n`` elements from ``src`` to ``dst`` (which
    may be the same); the scan state lives at workspace offset ``ws``. Returns (steps, end)."""
    spec = scan_spec(arch_, dtype, op, exclusive)
    tiles = blocks(n, tile_of(dtype))
    size = C.BYTES[dtype]
    counter = ws
    flags = ws + 4
    agg = align(flags + 4 * tiles, 16)
    pref = agg + size * tiles
    end = align(pref + size * tiles)
    steps = [fill_step(arch_, W(counter), tiles + 1),
             KernelStep(spec, tiles, spec.threads,
                        bind(src, dst, n, W(counter), W(flags), W(agg), W(pref)))]
    return steps, end


def scan_plan(dtype: str, op: str, exclusive: bool, n: int) -> LaunchPlan:
    """pointers (x, y)."""
    steps, end = scan_steps(arch(), dtype, op, exclusive, n, P(0), P(1), 0)
    return LaunchPlan(f"scan {op} {dtype} n={n}", steps, end)


def radix_steps(arch_: str, key_type: str, descending: bool, value_bytes: int, n: int,
                begin_bit: int, end_bit: int, keys_in: object, keys_out: object, vals_in: object,
                vals_out: object, ws: int) -> tuple[list[KernelStep], int]:
    """Every pass of an LSD radix sort of ``n`` keys over bits [begin_bit, end_bit); the last pass
    writes ``keys_out``/``vals_out``, the others alternate with workspace buffers. Returns
    (steps, end of the workspace used)."""
    from .kernels.radix import DIGITS, KEYS, RADIX_BITS, TILE, RadixSpec

    ksz = KEYS[key_type][0] // 8
    tiles = blocks(n, TILE)
    table = DIGITS * tiles
    hist = ws
    offsets = align(hist + 4 * table)
    _, scan_end = scan_steps(arch_, "uint32", "sum", True, table, W(hist), W(offsets), align(offsets + 4 * table))
    tmp_keys = scan_end
    tmp_vals = align(tmp_keys + ksz * n)
    end = align(tmp_vals + value_bytes * n)
    hist_spec = RadixSpec(arch=arch_, key_type=key_type, descending=descending, stage="hist")
    scat_spec = RadixSpec(arch=arch_, key_type=key_type, descending=descending, value_bytes=value_bytes)
    shifts = list(range(begin_bit, end_bit, RADIX_BITS))
    steps: list[KernelStep] = []
    src_k, src_v = keys_in, vals_in
    for p, shift in enumerate(shifts):
        mask = (1 << min(RADIX_BITS, end_bit - shift)) - 1
        last = (len(shifts) - 1 - p) % 2 == 0
        dst_k = keys_out if last else W(tmp_keys)
        dst_v = vals_out if last else W(tmp_vals)
        if not value_bytes:
            src_v = dst_v = 0
        steps.append(KernelStep(hist_spec, tiles, hist_spec.threads,
                                bind(src_k, n, W(hist), shift, mask, tiles)))
        scan, _ = scan_steps(arch_, "uint32", "sum", True, table, W(hist), W(offsets),
                             align(offsets + 4 * table))
        steps.extend(scan)
        steps.append(KernelStep(scat_spec, tiles, scat_spec.threads,
                                bind(src_k, dst_k, src_v, dst_v, n, W(offsets), shift, mask, tiles)))
        src_k, src_v = dst_k, dst_v
    return steps, end


def radix_plan(key_type: str, descending: bool, value_bytes: int, n: int, begin_bit: int,
               end_bit: int) -> LaunchPlan:
    """pointers (keys_in, keys_out, vals_in, vals_out)."""
    steps, end = radix_steps(arch(), key_type, descending, value_bytes, n, begin_bit, end_bit,
                             P(0), P(1), P(2), P(3), 0)
    return LaunchPlan(f"radix sort {key_type} n={n}", steps, end)
