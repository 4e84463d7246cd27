"""``DeviceArray.__array_ufunc__``: numpy's ufuncs called on device arrays run on the device.

``np.add(a, b)``, ``np.exp(a)``, ``np.maximum(a, b, out=c)`` and the ``reduce`` method of
add/multiply/maximum/minimum/logical_and/logical_or return DeviceArrays. Any other ufunc,
method or keyword returns NotImplemented, so numpy raises its TypeError: device data never
goes to the host behind a ufunc call.
"""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray

from . import reductions as R
from .operands import operand
from .ufuncs import apply, supports

_REDUCERS = {np.add: R.sum, np.multiply: R.prod, np.maximum: R.max, np.minimum: R.min,
             np.logical_or: R.any, np.logical_and: R.all}
_CALL_KEYWORDS = frozenset({"out", "dtype", "casting"})


def _single_out(out: object) -> object:
    """The one DeviceArray (or None) of numpy's ``out`` tuple; False when not usable."""
    if isinstance(out, tuple):
        if len(out) != 1:
            return False
        out = out[0]
    if out is None or isinstance(out, DeviceArray):
        return out
    return False


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> object:
    out = _single_out(kwargs.get("out"))
    if out is False:
        return NotImplemented
    if kwargs.get("where", True) is not True:
        return NotImplemented
    if method == "__call__":
        if not supports(ufunc) or set(kwargs) - _CALL_KEYWORDS - {"where"}:
            return NotImplemented
        if any(operand(x) is None for x in inputs):
            return NotImplemented
        return apply(ufunc, inputs, out=out, dtype=kwargs.get("dtype"),
                     casting=kwargs.get("casting", "same_kind"))
    if method == "reduce" and ufunc in _REDUCERS and len(inputs) == 1:
        if set(kwargs) - {"axis", "dtype", "out", "keepdims", "where"}:
            return NotImplemented
        fn = _REDUCERS[ufunc]
        axis = kwargs.get("axis", 0)
        keep = kwargs.get("keepdims", False)
        if ufunc in (np.add, np.multiply):
            return fn(inputs[0], axis=axis, dtype=kwargs.get("dtype"), out=out, keepdims=keep)
        if kwargs.get("dtype") is not None:
            return NotImplemented
        return fn(inputs[0], axis=axis, out=out, keepdims=keep)
    return NotImplemented
