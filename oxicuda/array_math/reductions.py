"""numpy's reductions on device arrays: ``sum, prod, mean, max, min, argmax, argmin, any,
all`` with ``axis`` (None, int, tuple, negative), ``keepdims``, ``dtype`` and ``out``.

Result dtypes are numpy's (sum/prod of small integers and bools in the platform int, mean of
integers in float64, float16/bfloat16 accumulated in float32 and rounded once at the end).
sum/max/min of the CUB-role dtypes (and complex sums) run ``oxicuda.primitives`` where that
needs no extra pass: full reductions (device-wide reduce) and reductions over the trailing axes
of a C-contiguous array (segmented reduce, one segment per output); argmin/argmax without an
axis run primitives' argmin/argmax. The rest run generated ``oxicuda.reduction`` kernels
(without those, sum/max/min bring the reduced axes last with one device copy and segment).
max/min propagate NaN; max/min/argmax/argmin of an empty selection raise ValueError as numpy's.
"""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, asarray
from oxicuda.memory.dtypes import BFLOAT16

from . import scalar_bodies as B
from .operands import kind, normalize_axis, provided, reduction_kernel

_PRIMITIVE_DTYPES = frozenset(np.dtype(t) for t in ("int32", "int64", "uint32", "uint64",
                                                    "float32", "float64"))
_NUMPY_NAMES = {"max": "maximum", "min": "minimum"}
_NARROW_FLOATS = (np.dtype(np.float16), BFLOAT16)


def _device(a: object, what: str) -> DeviceArray:
    if isinstance(a, DeviceArray):
        return a
    return asarray(a)


def _result_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    c = 1
    for ax in axes:
        c *= shape[ax]
    return c


def _check_out(out: object, shape: tuple, dt: np.dtype, what: str) -> None:
    if out is None:
        return
    if not isinstance(out, DeviceArray):
        raise TypeError(f"{what}: out must be a DeviceArray; got {type(out).__name__}")
    if out.shape != shape:
        raise ValueError(f"{what}: out has shape {out.shape}; the result has shape {shape}")
    if not np.can_cast(dt, out.dtype, "same_kind"):
        raise TypeError(f"{what}: cannot cast the {dt} result to out's {out.dtype} with casting "
                        "rule 'same_kind'")
    out._check_writable(what)


def _numpy_dtype(op: str, dt: np.dtype, dtype: object) -> np.dtype:
    """numpy's result dtype of ``np.<op>`` over ``dt`` with ``dtype=`` (resolved on a
    one-element host array: dtypes only)."""
    fn = getattr(np, op)
    probe = np.zeros(1, dt)
    return np.dtype(fn(probe, dtype=dtype).dtype if dtype is not None else fn(probe).dtype)


def _accumulator(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in _NARROW_FLOATS else dt


def _finish(result: DeviceArray, want: np.dtype, out: DeviceArray | None) -> DeviceArray:
    """The accumulator-dtype ``result`` as the caller's ``out`` or as ``want``."""
    if out is not None:
        if result is not out:
            out._copy_from(result)  # a device cast (copy kernel)
        return out
    return result if result.dtype == want else result.astype(want)


def _generated(name: str, a: DeviceArray, acc: np.dtype, axes: tuple, keepdims: bool,
               map_: object, reduce_: object, identity: object, post: object = None,
               extra: tuple = ()) -> DeviceArray:
    key = ("reduction", name, acc.str, map_, reduce_, post)
    rk = reduction_kernel(key, f"array_{name}", map_, reduce_, identity, post)
    axis = axes if len(axes) != a.ndim else None  # (map results are cast to dtype=acc)
    return rk(a, *extra, axis=axis, keepdims=keepdims, dtype=acc, stream=a.stream)


_OFFSETS: dict[tuple, DeviceArray] = {}


def _segment_offsets(outer: int, inner: int, device: int) -> DeviceArray:
    """``[0, inner, 2 inner, ..., outer inner]`` (int64) on the device: the segment table of a
    reduction over ``inner`` contiguous elements per output; built once per shape."""
    key = (outer, inner, device)
    table = _OFFSETS.get(key)
    if table is None:
        if len(_OFFSETS) > 64:
            _OFFSETS.clear()
        table = _OFFSETS[key] = asarray(np.arange(outer + 1, dtype=np.int64) * inner)
    return table


def _trailing(a: DeviceArray, axes: tuple[int, ...]) -> bool:
    """True when the reduced axes are the last ones of a C-contiguous array (rows in place)."""
    return a.is_c_contiguous and axes == tuple(range(a.ndim - len(axes), a.ndim))


def _primitive_ok(op: str, acc: np.dtype) -> bool:
    return acc in _PRIMITIVE_DTYPES or (op == "sum" and kind(acc) == "c")


def _use_primitives(op: str, a: DeviceArray, acc: np.dtype, axes: tuple[int, ...]) -> bool:
    """oxicuda.primitives' device-wide / segmented reduce where it needs no extra pass (a full
    reduction, or rows already contiguous, of the accumulator's dtype), or wherever no
    generated reduction exists."""
    if not _primitive_ok(op, acc):
        return False
    if not _generated_reductions():
        return True
    # (a generated reduction casts as it reads: no separate cast pass)
    return a.dtype == acc and (len(axes) == a.ndim or _trailing(a, axes))


def _generated_reductions() -> bool:
    return provided("reduction") is not None


def _primitive_reduce(op: str, a: DeviceArray, acc: np.dtype, axes: tuple[int, ...],
                      shape: tuple[int, ...]) -> DeviceArray:
    from oxicuda import primitives

    src = a if a.dtype == acc else a.astype(acc)
    if len(axes) == src.ndim and kind(acc) != "c":  # (complex: one segment below)
        flat = src.reshape(-1) if src.is_c_contiguous else src.copy().reshape(-1)
        return primitives.reduce(flat, op).reshape(shape)
    kept = tuple(i for i in range(src.ndim) if i not in axes)
    outer, inner = _count(src.shape, kept), _count(src.shape, axes)
    if outer == 0:
        return empty_result(shape, acc, src.stream)
    if not _trailing(src, axes):  # bring the reduced axes last, as rows (one device copy)
        src = src.transpose(kept + axes).copy()
    rows = primitives.segmented_reduce(src.reshape(-1), _segment_offsets(outer, inner, src.device),
                                       op)
    return rows.reshape(shape)


def empty_result(shape: tuple[int, ...], dt: np.dtype, stream: int) -> DeviceArray:
    from oxicuda.memory.array import empty

    return empty(shape, dt, stream=stream)


def _identity(op: str, dt: np.dtype) -> object:
    k = kind(dt)
    if op == "sum":
        return 0
    if op == "prod":
        return 1
    if k == "b":
        return op == "min"
    if k == "f":
        return -np.inf if op == "max" else np.inf
    info = np.iinfo(dt)
    return int(info.min) if op == "max" else int(info.max)


def _sum_like(op: str, a: object, axis: object, dtype: object, out: object,
              keepdims: bool) -> DeviceArray:
    a = _device(a, op)
    axes = normalize_axis(axis, a.ndim, op)
    want = _numpy_dtype(op, a.dtype, dtype)
    if kind(want) == "c" and op == "prod":
        raise NotImplementedError("prod: complex products do not run on device arrays yet")
    shape = _result_shape(a.shape, axes, keepdims)
    _check_out(out, shape, want, op)
    acc = _accumulator(want)
    if op == "sum" and _use_primitives(op, a, acc, axes):
        return _finish(_primitive_reduce(op, a, acc, axes, shape), want, out)
    body = B.add if op == "sum" else B.multiply
    if kind(acc) == "b":  # a bool accumulator only with dtype=bool: numpy's logical or/and
        body = B.logical_or2 if op == "sum" else B.logical_and2
    r = _generated(op, a, acc, axes, keepdims, B.identity, body, _identity(op, acc))
    return _finish(r, want, out)


def sum(a: object, axis: object = None, dtype: object = None, out: object = None,
        keepdims: bool = False) -> DeviceArray:
    """numpy.sum on the device (integer sums wrap in the result dtype, as numpy's)."""
    return _sum_like("sum", a, axis, dtype, out, keepdims)


def prod(a: object, axis: object = None, dtype: object = None, out: object = None,
         keepdims: bool = False) -> DeviceArray:
    """numpy.prod on the device."""
    return _sum_like("prod", a, axis, dtype, out, keepdims)


def mean(a: object, axis: object = None, dtype: object = None, out: object = None,
         keepdims: bool = False) -> DeviceArray:
    """numpy.mean on the device: float64 for integer and bool input, the input's float dtype
    otherwise (float16/bfloat16 accumulated in float32); an empty selection gives NaN."""
    a = _device(a, "mean")
    axes = normalize_axis(axis, a.ndim, "mean")
    want = _numpy_dtype("mean", a.dtype, dtype)
    shape = _result_shape(a.shape, axes, keepdims)
    _check_out(out, shape, want, "mean")
    acc = _accumulator(want)
    r = _generated("mean", a, acc, axes, keepdims, B.identity, B.add, 0, post=B.mean_post)
    return _finish(r, want, out)


def _extremum(op: str, a: object, axis: object, out: object, keepdims: bool) -> DeviceArray:
    a = _device(a, op)
    axes = normalize_axis(axis, a.ndim, op)
    if _count(a.shape, axes) == 0:
        raise ValueError(f"zero-size array to reduction operation {_NUMPY_NAMES[op]} which has no "
                         "identity")
    if kind(a.dtype) == "c":
        raise NotImplementedError(f"{op}: complex {op} (numpy's lexicographic order) does not run "
                                  "on device arrays yet")
    shape = _result_shape(a.shape, axes, keepdims)
    _check_out(out, shape, a.dtype, op)
    if _use_primitives(op, a, a.dtype, axes):
        return _finish(_primitive_reduce(op, a, a.dtype, axes, shape), a.dtype, out)
    wide = _arg_dtype(a.dtype)  # an order-preserving cast onto primitives' dtypes
    if not _generated_reductions():
        return _finish(_primitive_reduce(op, a.astype(wide), wide, axes, shape), a.dtype, out)
    body = B.maximum if op == "max" else B.minimum
    if kind(a.dtype) == "b":
        body = B.logical_or2 if op == "max" else B.logical_and2
    r = _generated(op, a, a.dtype, axes, keepdims, B.identity, body, _identity(op, a.dtype))
    return _finish(r, a.dtype, out)


def max(a: object, axis: object = None, out: object = None, keepdims: bool = False) -> DeviceArray:
    """numpy.max (amax) on the device; NaN propagates; ValueError for an empty selection."""
    return _extremum("max", a, axis, out, keepdims)


def min(a: object, axis: object = None, out: object = None, keepdims: bool = False) -> DeviceArray:
    """numpy.min (amin) on the device; NaN propagates; ValueError for an empty selection."""
    return _extremum("min", a, axis, out, keepdims)


# order-preserving casts onto the dtypes of oxicuda.primitives' argmin/argmax
_ARG_CASTS = {"b": np.dtype(np.int32), "f": np.dtype(np.float32)}


def _arg_dtype(dt: np.dtype) -> np.dtype:
    if dt in _PRIMITIVE_DTYPES:
        return dt
    k = kind(dt)
    if k == "i":
        return np.dtype(np.uint32) if dt.kind == "u" else np.dtype(np.int32)
    return _ARG_CASTS[k]


def _argextremum(op: str, a: object, axis: object, out: object, keepdims: bool) -> DeviceArray:
    a = _device(a, op)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{op}: axis must be None or an int; got {axis!r}")
    axes = normalize_axis(axis, a.ndim, op)
    if _count(a.shape, axes) == 0:
        raise ValueError(f"attempt to get {op} of an empty sequence")
    if kind(a.dtype) == "c":
        raise NotImplementedError(f"{op}: complex {op} does not run on device arrays yet")
    shape = _result_shape(a.shape, axes, keepdims)
    idx_dt = np.dtype(np.int64)
    _check_out(out, shape, idx_dt, op)
    from oxicuda import primitives

    if axis is None or a.ndim == 1:
        dt = _arg_dtype(a.dtype)
        flat = a.reshape(-1) if a.is_c_contiguous else a.copy().reshape(-1)
        if flat.dtype != dt:
            flat = flat.astype(dt)
        r = getattr(primitives, op)(flat).reshape(shape)
        return _finish(r, idx_dt, out)
    ax = axes[0]
    n = a.shape[ax]
    extreme = _extremum("max" if op == "argmax" else "min", a, ax, None, True)
    index_shape = tuple(n if i == ax else 1 for i in range(a.ndim))
    # the axis' indices: n small constants uploaded once per call (no host computation on a)
    index = asarray(np.arange(n, dtype=np.int64).reshape(index_shape), stream=a.stream)
    r = _generated(op, a, idx_dt, (ax,), keepdims, B.match_index, B.minimum, n,
                   extra=(extreme, index, np.int64(n)))
    return _finish(r, idx_dt, out)


def argmax(a: object, axis: object = None, out: object = None, keepdims: bool = False) -> DeviceArray:
    """numpy.argmax on the device (the first maximum; a NaN counts as the maximum)."""
    return _argextremum("argmax", a, axis, out, keepdims)


def argmin(a: object, axis: object = None, out: object = None, keepdims: bool = False) -> DeviceArray:
    """numpy.argmin on the device (the first minimum; a NaN counts as the minimum)."""
    return _argextremum("argmin", a, axis, out, keepdims)


def _logical(op: str, a: object, axis: object, out: object, keepdims: bool) -> DeviceArray:
    a = _device(a, op)
    axes = normalize_axis(axis, a.ndim, op)
    shape = _result_shape(a.shape, axes, keepdims)
    want = np.dtype(np.bool_)
    _check_out(out, shape, want, op)
    body = B.or_step if op == "any" else B.and_step
    r = _generated(op, a, want, axes, keepdims, B.nonzero, body, op == "all")
    return _finish(r, want, out)


def any(a: object, axis: object = None, out: object = None, keepdims: bool = False) -> DeviceArray:
    """numpy.any on the device (a bool array; NaN counts as true)."""
    return _logical("any", a, axis, out, keepdims)


def all(a: object, axis: object = None, out: object = None, keepdims: bool = False) -> DeviceArray:
    """numpy.all on the device."""
    return _logical("all", a, axis, out, keepdims)
