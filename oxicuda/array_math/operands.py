"""Operands of the array operations: what a DeviceArray computes with, numpy's dtype rules
(NEP 50: Python scalars are weak), broadcasting, axes, and the kernels' entry points.

Nothing here computes on array data: dtype resolution runs numpy's own resolver on dtypes
(``ufunc.resolve_dtypes``) and the kernels come from ``oxicuda.elementwise`` /
``oxicuda.reduction`` (issue 21, items 1-2).
"""

from __future__ import annotations

import numpy as np

import oxicuda
from oxicuda.memory.array import DeviceArray, asarray
from oxicuda.memory.dtypes import BFLOAT16, SUPPORTED_DTYPES, host_astype

PY_SCALARS = (bool, int, float, complex)
_PY_WEAK = (int, float, complex)
KINDS = {"b": "b", "i": "i", "u": "i", "f": "f", "c": "c"}


class Scalar:
    """A scalar operand: ``value`` and its ``dtype`` (a dtype, or the Python type int/float/
    complex for a weak Python scalar, as ``resolve_dtypes`` takes it)."""

    __slots__ = ("dtype", "value")

    def __init__(self, value: object, dtype: object) -> None:
        self.value = value
        self.dtype = dtype

    shape = ()
    ndim = 0


class HostOperand:
    """A host array operand, copied to the device only once the call is known to be valid
    (bad input raises before anything touches the device)."""

    __slots__ = ("host",)

    def __init__(self, host: np.ndarray) -> None:
        self.host = host

    shape = property(lambda self: self.host.shape)
    dtype = property(lambda self: self.host.dtype)
    ndim = property(lambda self: self.host.ndim)

    def device(self, stream: object = None) -> DeviceArray:
        return asarray(self.host, stream=stream)


def on_device(op: object, stream: object = None) -> object:
    """A HostOperand copied to the device; anything else unchanged."""
    return op.device(stream) if isinstance(op, HostOperand) else op


def kind(dt: np.dtype) -> str:
    """'b', 'i' (signed or unsigned), 'f' (float16/bfloat16/32/64) or 'c'."""
    return "f" if dt == BFLOAT16 else KINDS.get(dt.kind, "?")


def operand(x: object) -> DeviceArray | Scalar | None:
    """``x`` as a DeviceArray, a Scalar or a HostOperand (a host array, copied to the device
    when the call is valid); None for what the operations do not take (the operator then
    returns NotImplemented)."""
    if isinstance(x, (DeviceArray, Scalar, HostOperand)):
        return x
    if type(x) is bool:
        return Scalar(x, np.dtype(np.bool_))
    if isinstance(x, _PY_WEAK) and not isinstance(x, np.generic):
        return Scalar(x, int if isinstance(x, int) else float if isinstance(x, float) else complex)
    if isinstance(x, np.generic):
        return Scalar(x, x.dtype) if x.dtype in _SUPPORTED else None
    if isinstance(x, np.ndarray):
        if x.dtype not in _SUPPORTED:
            return None
        return Scalar(x[()], x.dtype) if x.ndim == 0 else HostOperand(x)
    if isinstance(x, (list, tuple)):
        try:
            h = np.asarray(x)
        except (ValueError, TypeError):
            return None
        return operand(h) if h.dtype in _SUPPORTED else None
    if hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__"):
        try:
            return asarray(x)
        except (TypeError, ValueError):
            return None
    return None


_SUPPORTED = frozenset(SUPPORTED_DTYPES.values())


def scalar_as(s: Scalar, dt: np.dtype) -> np.generic:
    """The scalar converted to ``dt`` as numpy converts a ufunc's scalar operand (an
    out-of-range Python int raises OverflowError, as numpy 2 does)."""
    if isinstance(s.dtype, np.dtype):
        v = np.asarray(s.value)
        return (v if v.dtype == dt else host_astype(v, dt))[()]
    if dt == BFLOAT16:
        return host_astype(np.asarray(s.value), dt)[()]
    return np.asarray(s.value, dtype=dt)[()]


def kernel_scalar(s: Scalar, dt: np.dtype) -> object:
    """The scalar as a kernel argument of dtype ``dt``: a numpy scalar (a bool kernel parameter
    does not pack in s8-jit's launch, reported: a bool goes as a 0-d device array)."""
    v = scalar_as(s, dt)
    return v if dt != np.bool_ else asarray(np.asarray(v))


def broadcast_shape(what: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{what}: operands could not be broadcast together with shapes "
                         f"{' '.join(str(s) for s in shapes)}") from None


def normalize_axis(axis: object, ndim: int, what: str) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints, negative counting from the end) as a sorted
    tuple of axes; numpy's AxisError / ValueError for bad ones."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for ax in axes:
        if not isinstance(ax, (int, np.integer)) or isinstance(ax, bool):
            raise TypeError(f"{what}: axis must be an int or a tuple of ints; got {ax!r}")
        if not -ndim <= ax < ndim:
            raise np.exceptions.AxisError(int(ax), ndim)
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: duplicate value in 'axis': {axis}")
    return tuple(sorted(out))


def extent(a: DeviceArray) -> tuple[int, int]:
    """[lowest, highest+1) byte addresses the array touches (its memory footprint)."""
    lo = hi = a._ptr
    for n, s in zip(a.shape, a.strides):
        if n == 0:
            return a._ptr, a._ptr
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


def overlaps_partially(a: DeviceArray, out: DeviceArray) -> bool:
    """True when ``a`` shares memory with ``out`` other than as the very same view (numpy copies
    such an input first; a kernel reading it while writing ``out`` would see its own writes)."""
    if a.size == 0 or out.size == 0:
        return False
    if a._ptr == out._ptr and a.shape == out.shape and a.strides == out.strides:
        return False
    (alo, ahi), (olo, ohi) = extent(a), extent(out)
    return alo < ohi and olo < ahi


_KERNELS: dict[object, object] = {}


def provided(name: str) -> object:
    """``oxicuda.<name>`` (elementwise, reduction) or None where this build lacks it."""
    try:
        return getattr(oxicuda, name)
    except (AttributeError, ImportError):
        return None


def elementwise_kernel(body: object, name: str) -> object:
    """The ``oxicuda.elementwise`` kernel of ``body`` (built once per body)."""
    ek = _KERNELS.get(body)
    if ek is None:
        make = provided("elementwise")
        if make is None:
            raise NotImplementedError(
                f"{name}: device arrays compute through oxicuda.elementwise (issue 21, items 1-2), "
                "which this build does not have yet")
        ek = _KERNELS[body] = make(body, name=name)
    return ek


def reduction_kernel(key: tuple, name: str, map_: object, reduce_: object, identity: object,
                     post: object = None) -> object:
    """The ``oxicuda.reduction`` kernel for ``key`` (built once per key)."""
    rk = _KERNELS.get(key)
    if rk is None:
        make = provided("reduction")
        if make is None:
            raise NotImplementedError(
                f"{name}: device reductions run through oxicuda.reduction (issue 21, items 1-2), "
                "which this build does not have yet")
        rk = _KERNELS[key] = make(map_, reduce_, identity, post=post, name=name)
    return rk


def stream_of(*arrays: object) -> int:
    for a in arrays:
        if isinstance(a, DeviceArray):
            return a.stream
    return 0
