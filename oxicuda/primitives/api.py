"""The numpy-shaped calls of oxicuda.primitives: checks, then a cached plan, then ``plan.run``.

Every call takes ``stream=`` (default: the input's allocation stream) and returns device arrays
allocated on that stream; scratch comes from the workspace cache. Calls whose output size
depends on the data (selection, run-length encoding, reduce-by-key) read one u32 count back from
the device between their two plans; everything else is asynchronous.
"""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, empty
from oxicuda.memory.workspace import workspace_ptr

from . import plan as PL
from .arrays import check_choice, dtype_name, ordinal, output, read_u32, stream_for, vector
from .kernels import common as C
from .kernels.onesweep import MAX_KEYS as ONESWEEP_MAX
from .kernels.radix import KEYS
from .kernels.select import FLAG_DTYPES

__all__ = ["argmax", "argmin", "argsort", "exclusive_scan", "gather", "histogram_even", "inclusive_scan",
           "nonzero", "radix_sort", "reduce", "reduce_by_key", "run_length_encode",
           "segmented_reduce", "select_flagged", "select_if"]

SCAN_OPS = ("sum", "max", "min")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "nonzero")


def _scan(x: object, op: str, exclusive: bool, out: DeviceArray | None, stream: object, what: str) -> DeviceArray:
    check_choice(op, SCAN_OPS, f"{what}: op")
    xa = vector(x, f"{what}: x", C.SCAN_DTYPES, stream)
    stream = stream_for(stream, xa)
    dt = dtype_name(xa.dtype)
    result = output(out, xa.shape, xa.dtype, what, stream)
    n = xa.size
    if n:
        key = (ordinal(), "scan", dt, op, exclusive, n)
        plan = PL.PLANS.get_or_build(key, lambda: PL.scan_plan(dt, op, exclusive, n))
        plan.run((xa.ptr, result.ptr), (), stream)
    return result


def inclusive_scan(x: object, op: str = "sum", out: DeviceArray | None = None, *,
                   stream: object = None) -> DeviceArray:
    """``y[i] = op(x[0], ..., x[i])`` (``op`` ``"sum"``, ``"max"`` or ``"min"``; float max/min
    propagate NaN) for a 1-D int32/int64/uint32/float32/float64 ``x``, in x's dtype (integer sums
    wrap). ``out``: a C-contiguous array of x's shape and dtype (may be x itself). Single pass,
    decoupled look-back. Raises TypeError/ValueError before any launch."""
    return _scan(x, op, False, out, stream, "inclusive_scan")


def exclusive_scan(x: object, op: str = "sum", out: DeviceArray | None = None, *,
                   stream: object = None) -> DeviceArray:
    """``y[0] = identity``, ``y[i] = op(x[0], ..., x[i-1])`` (identity: 0 for sum, the lowest
    value for max, the highest for min); otherwise as ``inclusive_scan``."""
    return _scan(x, op, True, out, stream, "exclusive_scan")


def _reduce(x: object, op: str, out: DeviceArray | None, stream: object, what: str) -> DeviceArray:
    xa = vector(x, f"{what}: x", C.REDUCE_DTYPES, stream)
    stream = stream_for(stream, xa)
    dt = dtype_name(xa.dtype)
    arg = op.startswith("arg")
    if arg and xa.size == 0:
        raise ValueError(f"{what}: x is empty; {op} of an empty array is undefined (numpy raises too)")
    result = output(out, (), np.int64 if arg else xa.dtype, what, stream)
    if xa.size == 0:
        result.fill(C.identity(op, dt))
        return result
    n = xa.size
    plan = PL.PLANS.get_or_build((ordinal(), "reduce", dt, op, n), lambda: PL.reduce_plan(dt, op, n))
    plan.run((xa.ptr, result.ptr), (), stream)
    return result


def reduce(x: object, op: str = "sum", out: DeviceArray | None = None, *,
           stream: object = None) -> DeviceArray:
    """``op`` (``"sum"``, ``"min"``, ``"max"``) over a 1-D array, as a 0-d device array of x's
    dtype (int32/int64/uint32/uint64/float32/float64; integer sums wrap; float min/max propagate
    NaN; an empty x gives the identity)."""
    check_choice(op, C.OPS, "reduce: op")
    return _reduce(x, op, out, stream, "reduce")


def argmin(x: object, out: DeviceArray | None = None, *, stream: object = None) -> DeviceArray:
    """The first index of the minimum of a 1-D array (a NaN counts as the minimum, as numpy's), a
    0-d int64 device array. ValueError for an empty x."""
    return _reduce(x, "argmin", out, stream, "argmin")


def argmax(x: object, out: DeviceArray | None = None, *, stream: object = None) -> DeviceArray:
    """The first index of the maximum (NaN first), a 0-d int64 device array."""
    return _reduce(x, "argmax", out, stream, "argmax")


def segmented_reduce(x: object, offsets: object, op: str = "sum", *, end_offsets: object = None,
                     out: DeviceArray | None = None, stream: object = None) -> DeviceArray:
    """``y[s] = op(x[offsets[s]:offsets[s+1]])`` (``end_offsets`` given: over
    ``x[offsets[s]:end_offsets[s]]``), empty segments giving the identity. ``offsets`` int32 or
    int64, not checked against x's length (as CUB; a bad offset reads out of bounds)."""
    check_choice(op, C.OPS, "segmented_reduce: op")
    xa = vector(x, "segmented_reduce: x", _value_dtypes(op), stream)
    oa = vector(offsets, "segmented_reduce: offsets", ("int32", "int64"), stream)
    if end_offsets is None:
        if oa.size < 1:
            raise ValueError("segmented_reduce: offsets is empty; it needs segments + 1 entries")
        segments = oa.size - 1
        begin, end = oa.ptr, oa.ptr + oa.itemsize
    else:
        ea = vector(end_offsets, "segmented_reduce: end_offsets", ("int32", "int64"), stream)
        if ea.size != oa.size or ea.dtype != oa.dtype:
            raise ValueError(f"segmented_reduce: end_offsets has {ea.size} {ea.dtype} entries and offsets "
                             f"{oa.size} {oa.dtype}; they must match")
        segments, begin, end = oa.size, oa.ptr, ea.ptr
    stream = stream_for(stream, xa)
    dt, ot = dtype_name(xa.dtype), dtype_name(oa.dtype)
    result = output(out, (segments,), xa.dtype, "segmented_reduce", stream)
    if segments:
        key = (ordinal(), "segreduce", dt, op, ot, segments)
        plan = PL.PLANS.get_or_build(key, lambda: PL.segreduce_plan(dt, op, ot, segments))
        plan.run((xa.ptr, begin, end, result.ptr), (), stream)
    return result


def _value_dtypes(op: str) -> tuple[str, ...]:
    """Value dtypes of the segmented reductions: complex ones for sums too."""
    return (*C.REDUCE_DTYPES, "complex64", "complex128") if op == "sum" else C.REDUCE_DTYPES


SORT_ALGOS = ("onesweep", "classic")


def radix_sort(keys: object, values: object = None, descending: bool = False, begin_bit: int = 0,
               end_bit: int | None = None, *, algo: str | None = None, stream: object = None):
    """Stable LSD radix sort of a 1-D ``keys`` array (int8/16/32/64, uint8/16/32/64, float32,
    float64): returns the sorted keys, or ``(keys, values)`` with ``values`` (any dtype of 1, 2, 4
    or 8 bytes, same length) permuted alongside. Only bits ``[begin_bit, end_bit)`` of the keys'
    order-preserving image are compared (default: all). Floats: -0.0 before +0.0, NaNs last
    (first when descending). Equal keys keep their input order in both directions.

    ``algo``: ``"onesweep"`` (8-bit digits: one histogram pass, then one ranking-scatter pass per
    digit with decoupled look-back; up to 2^30 - 1 keys) or ``"classic"`` (4-bit digits: histogram,
    scan and scatter per digit; any length); None takes onesweep where it applies."""
    if algo is not None:
        check_choice(algo, SORT_ALGOS, "radix_sort: algo")
    ka = vector(keys, "radix_sort: keys", tuple(KEYS), stream)
    kt = dtype_name(ka.dtype)
    bits = KEYS[kt][0]
    end_bit = bits if end_bit is None else end_bit
    for name, v in (("begin_bit", begin_bit), ("end_bit", end_bit)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"radix_sort: {name}={v!r} must be an int")
    if not 0 <= begin_bit < end_bit <= bits:
        raise ValueError(f"radix_sort: begin_bit={begin_bit}, end_bit={end_bit}; need 0 <= begin_bit < "
                         f"end_bit <= {bits} for {kt} keys")
    va = None
    if values is not None:
        va = values if isinstance(values, DeviceArray) else vector(values, "radix_sort: values",
                                                                   (dtype_name(np.asarray(values).dtype),), stream)
        if va.ndim != 1 or va.size != ka.size:
            raise ValueError(f"radix_sort: values has shape {va.shape}; keys has {ka.shape}; they must match")
        if va.itemsize not in (1, 2, 4, 8):
            raise TypeError(f"radix_sort: values of {va.dtype} ({va.itemsize} bytes); allowed 1, 2, 4 or 8 "
                            f"bytes per element (sort an index with argsort and gather wider values)")
        va = va if va.is_c_contiguous else va.copy()
    stream = stream_for(stream, ka)
    if algo == "onesweep" and ka.size > ONESWEEP_MAX:
        raise ValueError(f"radix_sort: algo='onesweep' takes at most {ONESWEEP_MAX} keys; got {ka.size} "
                         "(use algo='classic' or None)")
    algo = algo or ("onesweep" if ka.size <= ONESWEEP_MAX else "classic")
    if va is not None and va.itemsize < 4:
        sk, perm = argsort(ka, descending, begin_bit, end_bit, return_keys=True, algo=algo, stream=stream)
        return sk, gather(va, perm, stream=stream)
    out_k = empty(ka.shape, ka.dtype, stream=stream)
    out_v = empty(va.shape, va.dtype, stream=stream) if va is not None else None
    n = ka.size
    if n:
        vb = va.itemsize if va is not None else 0
        key = (ordinal(), algo, kt, bool(descending), vb, n, begin_bit, end_bit)
        build = PL.onesweep_plan if algo == "onesweep" else PL.radix_plan
        plan = PL.PLANS.get_or_build(key, lambda: build(kt, bool(descending), vb, n, begin_bit, end_bit))
        plan.run((ka.ptr, out_k.ptr, va.ptr if vb else 0, out_v.ptr if vb else 0), (), stream)
    return out_k if va is None else (out_k, out_v)


def argsort(keys: object, descending: bool = False, begin_bit: int = 0, end_bit: int | None = None, *,
            return_keys: bool = False, algo: str | None = None, stream: object = None):
    """The stable sorting permutation of ``keys`` (int32 positions): a radix sort of the keys
    carrying ``arange(n)``; ``return_keys=True`` returns ``(sorted_keys, permutation)``."""
    ka = vector(keys, "argsort: keys", tuple(KEYS), stream)
    stream = stream_for(stream, ka)
    n = ka.size
    idx = empty((n,), np.int32, stream=stream)
    if n:
        PL.PLANS.get_or_build((ordinal(), "iota", n), lambda: PL.LaunchPlan(
            "iota", [PL.iota_step(PL.arch(), "int32", n, PL.P(0))])).run((idx.ptr,), (), stream)
    sk, perm = radix_sort(ka, idx, descending, begin_bit, end_bit, algo=algo, stream=stream)
    return (sk, perm) if return_keys else perm


def gather(src: object, index: object, *, stream: object = None) -> DeviceArray:
    """``src[index]`` for a 1-D ``src`` of any 1..16-byte dtype and int32/int64 ``index``
    (not bounds-checked, as a CUB gather)."""
    sa = vector(src, "gather: src", (dtype_name(src.dtype),) if hasattr(src, "dtype") else (), stream)
    ia = vector(index, "gather: index", ("int32", "int64"), stream)
    if sa.itemsize not in (1, 2, 4, 8, 16):
        raise TypeError(f"gather: src elements of {sa.itemsize} bytes; allowed 1, 2, 4, 8, 16")
    stream = stream_for(stream, sa, ia)
    out = empty(ia.shape, sa.dtype, stream=stream)
    n = ia.size
    if n:
        it = dtype_name(ia.dtype)
        key = (ordinal(), "gather", sa.itemsize, it, n)
        PL.PLANS.get_or_build(key, lambda: PL.LaunchPlan("gather", [
            PL.gather_step(PL.arch(), sa.itemsize, it, n, PL.P(0), PL.P(1), PL.P(2))])).run(
            (sa.ptr, ia.ptr, out.ptr), (), stream)
    return out


# -- data-dependent sizes -----------------------------------------------------------------------
def _count(xa: DeviceArray, pred: str, value: object, stream: object) -> tuple[int, object, int]:
    """Run flag + scan; (selected count, the count plan, offset of the scan in its workspace)."""
    dt = dtype_name(xa.dtype)
    n = xa.size
    vdt = np.dtype(np.uint8) if dt == "bool" else xa.dtype
    scalar = np.asarray(0 if pred in ("nonzero", "head") else value).astype(vdt)[()]
    key = (ordinal(), "flag", dt, pred, n, scalar.item())
    plan, s = PL.PLANS.get_or_build(key, lambda: PL.count_plan(dt, pred, n, scalar))
    plan.run((xa.ptr,), (), stream)
    ws = workspace_ptr(plan.workspace_bytes, stream)
    return read_u32(ws + s + 4 * (n - 1), stream), plan, s


def _compact(xa: DeviceArray, plan, s: int, count: int, with_index: bool, value_bytes: int,
             stream: object) -> tuple[DeviceArray, DeviceArray | None]:
    n = xa.size
    out = empty((count,), xa.dtype, stream=stream)
    idx = empty((count,), np.int32, stream=stream) if with_index else None
    if count:
        key = (ordinal(), "compact", value_bytes, with_index, n, s, plan.workspace_bytes)
        cplan = PL.PLANS.get_or_build(key, lambda: PL.compact_plan(value_bytes, with_index, n, s,
                                                                   plan.workspace_bytes))
        cplan.run((xa.ptr, out.ptr, idx.ptr if with_index else 0), (), stream)
    return out, idx


def select_flagged(x: object, flags: object, *, stream: object = None) -> DeviceArray:
    """The elements of 1-D ``x`` where ``flags`` (same length; bool or any integer/float type) is
    nonzero, in order (CUB's DeviceSelect::Flagged)."""
    xa = vector(x, "select_flagged: x", (*FLAG_DTYPES, "complex64", "complex128"), stream)
    fa = vector(flags, "select_flagged: flags", tuple(FLAG_DTYPES), stream)
    if fa.size != xa.size:
        raise ValueError(f"select_flagged: flags has {fa.size} elements and x {xa.size}; they must match")
    stream = stream_for(stream, xa)
    if xa.size == 0:
        return empty((0,), xa.dtype, stream=stream)
    count, plan, s = _count(fa, "nonzero", 0, stream)
    return _compact(xa, plan, s, count, False, xa.itemsize, stream)[0]


def select_if(x: object, pred: str = "nonzero", value: object = 0, *, stream: object = None) -> DeviceArray:
    """The elements of 1-D ``x`` for which ``x <pred> value`` holds (``pred`` one of eq ne lt le gt
    ge, or ``nonzero``), in order (CUB's DeviceSelect::If)."""
    check_choice(pred, COMPARISONS, "select_if: pred")
    xa = vector(x, "select_if: x", tuple(FLAG_DTYPES) if pred == "nonzero" else tuple(C.PTX), stream)
    stream = stream_for(stream, xa)
    if xa.size == 0:
        return empty((0,), xa.dtype, stream=stream)
    count, plan, s = _count(xa, pred, value, stream)
    return _compact(xa, plan, s, count, False, xa.itemsize, stream)[0]


def nonzero(x: object, *, stream: object = None) -> DeviceArray:
    """The int32 positions of the nonzero elements of a 1-D ``x``, ascending."""
    xa = vector(x, "nonzero: x", tuple(FLAG_DTYPES), stream)
    stream = stream_for(stream, xa)
    if xa.size == 0:
        return empty((0,), np.int32, stream=stream)
    count, plan, s = _count(xa, "nonzero", 0, stream)
    return _compact(xa, plan, s, count, True, 0, stream)[1]


def _runs(xa: DeviceArray, stream: object):
    """(unique heads, starts pointer inside the workspace, runs, plan, s) of ``xa``'s runs."""
    n = xa.size
    runs, plan, s = _count(xa, "head", 0, stream)
    ws = workspace_ptr(plan.workspace_bytes, stream)
    starts = ws + PL.starts_offset(plan.workspace_bytes - PL.align(4 * (n + 1)))
    return runs, plan, s, ws, starts


def run_length_encode(x: object, *, stream: object = None) -> tuple[DeviceArray, DeviceArray]:
    """``(values, counts)`` of the runs of equal consecutive elements of 1-D ``x`` (counts int32);
    a NaN never equals the element before it."""
    xa = vector(x, "run_length_encode: x", tuple(FLAG_DTYPES), stream)
    stream = stream_for(stream, xa)
    if xa.size == 0:
        return empty((0,), xa.dtype, stream=stream), empty((0,), np.int32, stream=stream)
    n = xa.size
    runs, plan, s, ws, starts = _runs(xa, stream)
    values = empty((runs,), xa.dtype, stream=stream)
    counts = empty((runs,), np.int32, stream=stream)
    key = (ordinal(), "rle", xa.itemsize, n, runs, plan.workspace_bytes)
    b = PL.PLANS.get_or_build(key, lambda: _rle_plan(xa.itemsize, n, runs, s, starts - ws, plan.workspace_bytes))
    b.run((xa.ptr, values.ptr, counts.ptr), (), stream)
    return values, counts


def _rle_plan(value_bytes: int, n: int, runs: int, s: int, starts: int, workspace: int):
    from .kernels.select import THREADS, CompactSpec

    a = PL.arch()
    compact = PL.KernelStep(CompactSpec(arch=a, value_bytes=value_bytes, with_index=True),
                            PL.blocks(n, THREADS), THREADS, PL.bind(PL.P(0), PL.W(s), PL.P(1), PL.W(starts), n))
    return PL.LaunchPlan("run-length encode", [compact, PL.runs_step(a, runs, n, PL.W(starts), PL.P(2))],
                         workspace)


def reduce_by_key(keys: object, values: object, op: str = "sum", *,
                  stream: object = None) -> tuple[DeviceArray, DeviceArray]:
    """``(unique_keys, reduced)``: ``op`` (sum/min/max) of ``values`` over each run of equal
    consecutive ``keys`` (CUB's ReduceByKey)."""
    check_choice(op, C.OPS, "reduce_by_key: op")
    ka = vector(keys, "reduce_by_key: keys", tuple(FLAG_DTYPES), stream)
    va = vector(values, "reduce_by_key: values", _value_dtypes(op), stream)
    if ka.size != va.size:
        raise ValueError(f"reduce_by_key: keys has {ka.size} elements and values {va.size}; they must match")
    stream = stream_for(stream, ka)
    if ka.size == 0:
        return empty((0,), ka.dtype, stream=stream), empty((0,), va.dtype, stream=stream)
    n = ka.size
    runs, plan, s, ws, starts = _runs(ka, stream)
    uk = empty((runs,), ka.dtype, stream=stream)
    red = empty((runs,), va.dtype, stream=stream)
    vt = dtype_name(va.dtype)
    key = (ordinal(), "rbk", ka.itemsize, vt, op, n, runs, plan.workspace_bytes)

    def build():
        from .kernels.select import THREADS, CompactSpec

        a = PL.arch()
        st = starts - ws
        compact = PL.KernelStep(CompactSpec(arch=a, value_bytes=ka.itemsize, with_index=True),
                                PL.blocks(n, THREADS), THREADS,
                                PL.bind(PL.P(0), PL.W(s), PL.P(1), PL.W(st), n))
        return PL.LaunchPlan("reduce by key", [
            compact, PL.runs_step(a, runs, n, PL.W(st), PL.W(s)),
            PL.segreduce_step(a, vt, op, "int32", runs, PL.P(2), PL.W(st), PL.W(st + 4), PL.P(3))],
            plan.workspace_bytes)

    PL.PLANS.get_or_build(key, build).run((ka.ptr, uk.ptr, va.ptr, red.ptr), (), stream)
    return uk, red


def histogram_even(x: object, bins: int, lower: float, upper: float, *,
                   stream: object = None) -> DeviceArray:
    """Counts (int32, ``bins`` of them) of the samples of 1-D ``x`` in ``bins`` equal bins over
    ``[lower, upper)``; samples outside (and NaN) are not counted (CUB's HistogramEven)."""
    xa = vector(x, "histogram_even: x", tuple(C.PTX), stream)
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool) or bins < 1:
        raise ValueError(f"histogram_even: bins={bins!r}; a positive int is required")
    lo, hi = float(lower), float(upper)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"histogram_even: lower={lower!r}, upper={upper!r}; need finite lower < upper")
    stream = stream_for(stream, xa)
    dt = dtype_name(xa.dtype)
    hist = empty((int(bins),), np.int32, stream=stream)
    n = xa.size
    key = (ordinal(), "hist", dt, n, int(bins), lo, hi)
    PL.PLANS.get_or_build(key, lambda: PL.histogram_plan(dt, n, int(bins), lo, hi)).run(
        (xa.ptr, hist.ptr), (), stream)
    return hist
