"""``where(cond, x, y)`` and ``clip(a, a_min, a_max)`` on device arrays, numpy's dtype rules."""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, empty

from . import scalar_bodies as B
from .operands import (
    Scalar,
    broadcast_shape,
    elementwise_kernel,
    kernel_scalar,
    on_device,
    operand,
    stream_of,
)
from .ufuncs import _cast_error, apply


def _operands(what: str, values: tuple) -> list:
    ops = []
    for v in values:
        op = operand(v)
        if op is None:
            raise TypeError(f"{what}: operand of type {type(v).__name__} is not supported on "
                            "device arrays")
        ops.append(op)
    return ops


def _prepare(op: object, dt: np.dtype, stream: int) -> object:
    if isinstance(op, Scalar):
        return kernel_scalar(op, dt)
    op = on_device(op, stream)
    return op if op.dtype == dt else op.astype(dt)


def where(condition: object, x: object = None, y: object = None) -> DeviceArray:
    """``numpy.where(condition, x, y)``: x where condition is true, else y, broadcast together;
    the dtype is numpy's result type of x and y (Python scalars weak). The one-argument form
    (``nonzero``) is NotImplementedError."""
    if x is None and y is None:
        raise NotImplementedError("where: the one-argument form (nonzero) does not run on device "
                                  "arrays yet; use oxicuda.primitives.nonzero on a 1-D array")
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y should be given")
    c, xo, yo = _operands("where", (condition, x, y))
    dt = np.result_type(*(o.dtype if not isinstance(o, Scalar) or isinstance(o.dtype, np.dtype)
                          else o.value for o in (xo, yo)))
    shape = broadcast_shape("where", [c.shape, xo.shape, yo.shape])
    stream = stream_of(c, xo, yo)
    args = (_prepare(c, np.dtype(np.bool_), stream), _prepare(xo, dt, stream),
            _prepare(yo, dt, stream))
    out = empty(shape, dt, stream=stream)
    if out.size == 0:
        return out
    return elementwise_kernel(B.where, "array_where")(*args, out=out, stream=stream)


def clip(a: object, a_min: object = None, a_max: object = None, out: DeviceArray | None = None
         ) -> DeviceArray:
    """``numpy.clip``: ``minimum(maximum(a, a_min), a_max)`` in one kernel (NaN propagates);
    one bound None clips on one side only."""
    if a_min is None and a_max is None:
        raise ValueError("clip: One of max or min must be given")
    if a_min is None:
        return apply(np.minimum, (a, a_max), out=out)
    if a_max is None:
        return apply(np.maximum, (a, a_min), out=out)
    ops = _operands("clip", (a, a_min, a_max))
    loop = np._core.umath.clip.resolve_dtypes(tuple(o.dtype for o in ops) + (None,))
    shape = broadcast_shape("clip", [o.shape for o in ops])
    if out is not None:
        if out.shape != shape:
            raise ValueError(f"clip: out has shape {out.shape}; the operands broadcast to {shape}")
        if not np.can_cast(loop[-1], out.dtype, "same_kind"):
            raise _cast_error(np._core.umath.clip, loop[-1], out.dtype, "same_kind")
    stream = out.stream if out is not None else stream_of(*ops)
    args = tuple(_prepare(o, dt, stream) for o, dt in zip(ops, loop[:-1]))
    if out is None:
        out = empty(shape, loop[-1], stream=stream)
    if out.size == 0:
        return out
    return elementwise_kernel(B.clip, "array_clip")(*args, out=out, stream=stream)
