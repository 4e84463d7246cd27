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


# -- reductions ---------------------------------------------------------------------------------
#: PROVISIONAL (not measured): partial-reduction CTAs per SM of the first reduce stage
REDUCE_CTAS_PER_SM = 4


def reduce_plan(dtype: str, op: str, n: int) -> LaunchPlan:
    """pointers (x, out): out is the value (sum/min/max) or the int64 index (argmin/argmax).
    Two stages (CTA partials in the workspace, then one CTA over them), one when a single CTA
    covers x."""
    from .kernels.reduce import THREADS, ReduceSpec

    a = arch()
    arg = op.startswith("arg")
    ctas = min(blocks(n, THREADS), REDUCE_CTAS_PER_SM * device_facts().sm_count)
    first = ReduceSpec(arch=a, dtype=dtype, op=op)
    vals = 0
    idx = align(C.BYTES[dtype] * (ctas + 1))
    end = align(idx + 8 * ctas)
    final_val, final_idx = (W(vals), P(1)) if arg else (P(1), 0)
    if ctas == 1:
        step = KernelStep(first, 1, THREADS, bind(P(0), 0, final_val, final_idx, n))
        return LaunchPlan(f"reduce {op} {dtype} n={n}", [step], end if arg else 0)
    if arg:
        final_val = W(vals + C.BYTES[dtype] * ctas)
    second = ReduceSpec(arch=a, dtype=dtype, op=op, indexed=arg)
    steps = [KernelStep(first, ctas, THREADS, bind(P(0), 0, W(vals), W(idx), n)),
             KernelStep(second, 1, THREADS, bind(W(vals), W(idx), final_val, final_idx, ctas))]
    return LaunchPlan(f"reduce {op} {dtype} n={n}", steps, end)


def segreduce_step(arch_: str, dtype: str, op: str, offsets: str, segments: int, x: object,
                   begin: object, end: object, y: object) -> KernelStep:
    from .kernels.reduce import THREADS, SegReduceSpec

    spec = SegReduceSpec(arch=arch_, dtype=dtype, op=op, offsets=offsets)
    return KernelStep(spec, blocks(segments, THREADS // 32), THREADS, bind(x, begin, end, y, segments))


def segreduce_plan(dtype: str, op: str, offsets: str, segments: int) -> LaunchPlan:
    """pointers (x, begin, end, y)."""
    return LaunchPlan(f"segmented reduce {op} {dtype}", [
        segreduce_step(arch(), dtype, op, offsets, segments, P(0), P(1), P(2), P(3))])


# -- selection, runs, histogram -----------------------------------------------------------------
def flag_steps(arch_: str, dtype: str, pred: str, n: int, x: object, value: object,
               ws: int) -> tuple[list[KernelStep], int, int]:
    """Flags of ``x`` scanned inclusively in place at workspace ``ws``: (steps, s offset, end).
    ``s[n-1]`` is the number selected."""
    from .kernels.select import THREADS, FlagSpec

    s = ws
    scan, end = scan_steps(arch_, "uint32", "sum", False, n, W(s), W(s), align(s + 4 * n))
    flag = KernelStep(FlagSpec(arch=arch_, dtype=dtype, pred=pred), blocks(n, THREADS), THREADS,
                      bind(x, W(s), n, value))
    return [flag, *scan], s, end


def starts_offset(end: int) -> int:
    """Where the run starts (n + 1 int32) live after a ``flag_steps`` workspace ending at ``end``."""
    return end


def count_plan(dtype: str, pred: str, n: int, value: object) -> tuple[LaunchPlan, int]:
    """pointers (x,): the flags and their scan; returns (plan, offset of s in the workspace)."""
    steps, s, end = flag_steps(arch(), dtype, pred, n, P(0), value, 0)
    total = align(starts_offset(end) + 4 * (n + 1))
    return LaunchPlan(f"flag {pred} {dtype} n={n}", steps, total), s


def compact_plan(value_bytes: int, with_index: bool, n: int, s: int, workspace: int) -> LaunchPlan:
    """pointers (x, out, idx): the scatter after ``count_plan`` (same workspace)."""
    from .kernels.select import THREADS, CompactSpec

    spec = CompactSpec(arch=arch(), value_bytes=value_bytes, with_index=with_index)
    step = KernelStep(spec, blocks(n, THREADS), THREADS, bind(P(0), W(s), P(1), P(2) if with_index else 0, n))
    return LaunchPlan(f"compact n={n}", [step], workspace)


def runs_step(arch_: str, runs: int, n: int, starts: object, counts: object) -> KernelStep:
    from .kernels.select import THREADS, RunsSpec

    return KernelStep(RunsSpec(arch=arch_), blocks(runs, THREADS), THREADS, bind(starts, counts, runs, n))


def histogram_plan(dtype: str, n: int, bins: int, lower: float, upper: float) -> LaunchPlan:
    """pointers (x, hist)."""
    import numpy as np

    from .kernels.select import THREADS, HistogramSpec

    a = arch()
    scale = np.float64(bins) / (np.float64(upper) - np.float64(lower))
    steps = [fill_step(a, P(1), bins)]
    if n:
        steps.append(KernelStep(HistogramSpec(arch=a, dtype=dtype), blocks(n, THREADS), THREADS,
                                bind(P(0), n, P(1), bins, np.float64(lower), np.float64(upper), scale)))
    return LaunchPlan(f"histogram {dtype} bins={bins}", steps)


def gather_step(arch_: str, value_bytes: int, index: str, n: int, src: object, idx: object,
                out: object) -> KernelStep:
    from .kernels.select import THREADS, GatherSpec

    return KernelStep(GatherSpec(arch=arch_, value_bytes=value_bytes, index=index),
                      blocks(n, THREADS), THREADS, bind(src, idx, out, n))


def iota_step(arch_: str, index: str, n: int, out: object) -> KernelStep:
    from .kernels.select import THREADS, IotaSpec

    return KernelStep(IotaSpec(arch=arch_, index=index), blocks(n, THREADS), THREADS, bind(out, n))


def onesweep_steps(arch_: str, key_type: str, descending: bool, value_bytes: int, n: int,
                   begin_bit: int, end_bit: int, keys_in: object, keys_out: object, vals_in: object,
                   vals_out: object, ws: int) -> tuple[list[KernelStep], int]:
    """The onesweep sort: the histograms of all passes, then one ranking-scatter launch per 8-bit
    pass (its look-back state reset first). Returns (steps, end of the workspace used)."""
    from .kernels.onesweep import DIGIT_BITS, DIGITS, THREADS, TILE, OnesweepSpec
    from .kernels.radix import KEYS

    ksz = KEYS[key_type][0] // 8
    tiles = blocks(n, TILE)
    shifts = list(range(begin_bit, end_bit, DIGIT_BITS))
    hist = ws
    counter = align(hist + 4 * DIGITS * len(shifts))
    status = counter + 4
    tmp_keys = align(status + 4 * DIGITS * tiles)
    tmp_vals = align(tmp_keys + ksz * n)
    end = align(tmp_vals + value_bytes * n)
    hspec = OnesweepSpec(arch=arch_, key_type=key_type, descending=descending, stage="hist")
    sspec = OnesweepSpec(arch=arch_, key_type=key_type, descending=descending, value_bytes=value_bytes)
    steps = [fill_step(arch_, W(hist), DIGITS * len(shifts)),
             KernelStep(hspec, tiles, THREADS, bind(keys_in, n, W(hist), begin_bit, end_bit, len(shifts)))]
    src_k, src_v = keys_in, vals_in
    for p, shift in enumerate(shifts):
        mask = (1 << min(DIGIT_BITS, end_bit - shift)) - 1
        last = (len(shifts) - 1 - p) % 2 == 0
        dst_k = keys_out if last else W(tmp_keys)
        dst_v = vals_out if last else W(tmp_vals)
        if not value_bytes:
            src_v = dst_v = 0
        steps.append(fill_step(arch_, W(counter), 1 + DIGITS * tiles))
        steps.append(KernelStep(sspec, tiles, THREADS, bind(src_k, dst_k, src_v, dst_v, n, W(hist + 4 * DIGITS * p),
                                                            W(status), W(counter), shift, mask)))
        src_k, src_v = dst_k, dst_v
    return steps, end


def onesweep_plan(key_type: str, descending: bool, value_bytes: int, n: int, begin_bit: int,
                  end_bit: int) -> LaunchPlan:
    """pointers (keys_in, keys_out, vals_in, vals_out)."""
    steps, end = onesweep_steps(arch(), key_type, descending, value_bytes, n, begin_bit, end_bit,
                                P(0), P(1), P(2), P(3), 0)
    return LaunchPlan(f"onesweep sort {key_type} n={n}", steps, end)
