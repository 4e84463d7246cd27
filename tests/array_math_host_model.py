"""A host model of ``oxicuda.elementwise`` / ``oxicuda.reduction`` for testing the dispatch
layer of oxicuda.array_math (loop selection, casts, broadcasting, out=, axes) and the scalar
bodies' semantics, element by element in numpy scalars.

Only tests install it (``install(monkeypatch)``), and only where the build has no
``oxicuda.elementwise``: it proves nothing about device kernels. The tests that do run the
real kernels check ``oxicuda.trace()``.
"""

from __future__ import annotations

import math
import types

import numpy as np

import oxicuda
from oxicuda.memory.array import DeviceArray, empty

# ``math.*`` in a body as the kernel language types it: in the operand's dtype (numpy's ufuncs on
# numpy scalars), floor/ceil of a float a float (Python's math.floor returns an int)
_NUMPY_MATH = types.SimpleNamespace(
    floor=np.floor, ceil=np.ceil, fmod=np.fmod, copysign=np.copysign, exp=np.exp, exp2=np.exp2,
    expm1=np.expm1, log=np.log, log2=np.log2, log10=np.log10, log1p=np.log1p, sqrt=np.sqrt,
    sin=np.sin, cos=np.cos, tan=np.tan, tanh=np.tanh, asin=np.arcsin, acos=np.arccos,
    atan=np.arctan, atan2=np.arctan2, trunc=np.trunc, hypot=np.hypot, inf=math.inf, nan=math.nan)


def _typed(body: object) -> object:
    body = getattr(body, "__wrapped__", body)  # an @oxicuda.device function
    names = {"math": _NUMPY_MATH}
    for name in body.__code__.co_names:
        helper = body.__globals__.get(name)
        if hasattr(helper, "__wrapped__") and callable(helper):
            names[name] = _typed(helper)
    return types.FunctionType(body.__code__, {**body.__globals__, **names}, body.__name__,
                              body.__defaults__, body.__closure__)


def _host(x: object) -> object:
    return x.get() if isinstance(x, DeviceArray) else x


def _store(host_out: np.ndarray, idx: tuple, value: object) -> None:
    if host_out.dtype.kind in "iub" and not isinstance(value, np.generic):
        value = np.asarray(value).astype(host_out.dtype)
    host_out[idx] = value


class ModelElementwise:
    def __init__(self, body: object, name: str | None = None, math: str = "precise") -> None:
        self.body = _typed(body)
        self.name = name

    def __call__(self, *args, out=None, dtype=None, stream=None):
        hosts = [_host(a) for a in args]
        arrays = [h for h in hosts if isinstance(h, np.ndarray)]
        shape = np.broadcast_shapes(*(h.shape for h in arrays))
        views = [np.broadcast_to(h, shape) if isinstance(h, np.ndarray) else h for h in hosts]
        res = None
        with np.errstate(all="ignore"):
            for idx in np.ndindex(shape):
                vals = [v[idx] if isinstance(v, np.ndarray) else v for v in views]
                r = self.body(*vals)
                if res is None:
                    rdt = out.dtype if out is not None else np.asarray(r).dtype
                    res = np.empty(shape, rdt)
                _store(res, idx, r)
        if out is None:
            out = empty(shape, res.dtype)
        out.set(res)
        return out


class ModelReduction:
    def __init__(self, map_, reduce_, identity, *, post=None, name=None) -> None:
        self.map, self.reduce, self.identity = _typed(map_), _typed(reduce_), identity
        self.post = None if post is None else _typed(post)

    def __call__(self, *args, axis=None, keepdims=False, out=None, dtype=None, stream=None):
        hosts = [_host(a) for a in args]
        arrays = [h for h in hosts if isinstance(h, np.ndarray)]
        shape = np.broadcast_shapes(*(h.shape for h in arrays))
        views = [np.broadcast_to(h, shape) if isinstance(h, np.ndarray) else h for h in hosts]
        ndim = len(shape)
        axes = tuple(range(ndim)) if axis is None else (
            tuple(a % ndim for a in axis) if isinstance(axis, tuple) else (axis % ndim,))
        keep = [i for i in range(ndim) if i not in axes]
        outer = tuple(shape[i] for i in keep)
        inner = tuple(shape[i] for i in axes)
        count = int(np.prod(inner, dtype=np.int64))
        acc_dt = np.dtype(dtype)
        res = np.empty(outer, acc_dt)
        with np.errstate(all="ignore"):
            for o in np.ndindex(outer):
                acc = np.asarray(self.identity).astype(acc_dt)[()]
                for i in np.ndindex(inner):
                    full = [0] * ndim
                    for ax, v in zip(keep, o):
                        full[ax] = v
                    for ax, v in zip(axes, i):
                        full[ax] = v
                    vals = [v[tuple(full)] if isinstance(v, np.ndarray) else v for v in views]
                    m = np.asarray(self.map(*vals)).astype(acc_dt)[()]
                    acc = np.asarray(self.reduce(acc, m)).astype(acc_dt)[()]
                if self.post is not None:
                    acc = self.post(acc, count)
                _store(res, o, acc)
        if keepdims:
            res = res.reshape(tuple(1 if i in axes else n for i, n in enumerate(shape)))
        result = empty(res.shape, res.dtype)
        result.set(res)
        return result


def install(monkeypatch) -> None:
    """Give ``oxicuda`` the model ``elementwise``/``reduction`` (for the test's duration) and
    drop the kernels array_math built with whatever was there before."""
    from oxicuda.array_math import operands

    monkeypatch.setitem(vars(oxicuda), "elementwise", ModelElementwise)
    monkeypatch.setitem(vars(oxicuda), "reduction", ModelReduction)
    monkeypatch.setattr(operands, "_KERNELS", {})




def remove(monkeypatch, name: str) -> None:
    """Make ``oxicuda.<name>`` absent for the test (a build without it)."""
    from oxicuda.array_math import operands

    monkeypatch.setattr(operands, "_KERNELS", {})
    monkeypatch.delitem(vars(oxicuda), name, raising=False)
    monkeypatch.delitem(oxicuda._LAZY_NAMES, name, raising=False)
