"""The operands of generated elementwise and reduction kernels: arrays and scalars from a call,
typed and broadcast with numpy's rules, and the scalar function bodies typed by the compiler.

Python scalars are weak (NEP 50): a Python ``int``/``float``/``bool`` argument becomes a kernel
parameter of the type numpy gives it next to the call's array dtypes (``np.result_type`` of the
arrays and the value), so ``f32_array * 2.5`` stays f32 and ``i32_array + 2.5`` is f64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxicuda.ptx.builder import KernelBuilder

from . import types as T
from .frontend import CompileError, FunctionInfo
from .lower import MAX_ROUNDS, Lower
from .ops import LoweringError, Val


@dataclass
class Operands:
    """The call's operands: ``arrays`` (DeviceArrays, in argument order, None for scalars),
    ``types`` (ScalarType per argument), ``scalars`` (the scalar values, in order) and the
    broadcast ``shape``."""

    arrays: list
    types: tuple
    scalars: list
    shape: tuple


def gather(name: str, args: tuple, stream) -> Operands:
    from oxicuda.memory.array import DeviceArray, asarray

    arrays: list = []
    for k, a in enumerate(args):
        if isinstance(a, DeviceArray):
            arrays.append(a)
        elif isinstance(a, (bool, int, float, np.generic)) and not isinstance(a, np.ndarray):
            if isinstance(a, (complex, np.complexfloating)):
                raise TypeError(f"{name}: argument {k} is complex; generated kernels take real and "
                                "bool values")
            arrays.append(None)
        elif isinstance(a, complex):
            raise TypeError(f"{name}: argument {k} is complex; generated kernels take real values")
        else:
            try:
                arrays.append(asarray(a, stream=stream))
            except TypeError as exc:
                raise TypeError(f"{name}: argument {k} ({type(a).__name__}) is not an array or a "
                                f"scalar: {exc}") from None
    dts = [a.dtype for a in arrays if a is not None]
    for k, a in enumerate(arrays):
        if a is not None and a.dtype.kind == "c":
            raise TypeError(f"{name}: argument {k} has dtype {a.dtype}; generated kernels take real "
                            "and bool dtypes")
    types = []
    scalars = []
    for a, v in zip(arrays, args):
        if a is not None:
            types.append(T.scalar_type(a.dtype))
            continue
        if isinstance(v, np.generic):
            st = T.scalar_type(v.dtype)
        elif dts:
            st = T.scalar_type(np.result_type(*dts, v))
        else:
            st = T.scalar_type(type(v))
        if st.kind in "iu" and not isinstance(v, (bool, np.bool_)):
            info = np.iinfo(st.dtype)
            if not info.min <= int(v) <= info.max:
                raise OverflowError(f"{name}: Python integer {v} out of bounds for {st.dtype}")
        types.append(st)
        scalars.append(st.dtype.type(v))
    shapes = [a.shape for a in arrays if a is not None]
    try:
        shape = np.broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        raise ValueError(f"{name}: operands could not be broadcast together with shapes "
                         f"{' '.join(str(s) for s in shapes)}") from None
    return Operands(arrays, tuple(types), scalars, tuple(shape))


def broadcast_strides(a, shape: tuple) -> tuple[int, ...]:
    """Element strides of ``a`` broadcast to ``shape`` (0 on broadcast axes)."""
    pad = len(shape) - a.ndim
    out = [0] * pad
    for n, s, m in zip(a.shape, a.strides, shape[pad:]):
        out.append(0 if (n == 1 and m != 1) else s // a.itemsize)
    return tuple(out)


def extent(a, shape=None, strides=None) -> tuple[int, int]:
    """Byte range [lo, hi) touched by ``a``."""
    shape = a.shape if shape is None else shape
    if any(n == 0 for n in shape):
        return (a.ptr, a.ptr)
    strides = a.strides if strides is None else strides
    lo = hi = 0
    for n, s in zip(shape, strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return (a.ptr + lo, a.ptr + hi + a.itemsize)


def check_alias(name: str, out, arrays: list, shape: tuple) -> None:
    """``out`` may be an input exactly (same memory, layout and shape), never overlap one partly."""
    olo, ohi = extent(out)
    for k, a in enumerate(arrays):
        if a is None or a is out:
            continue
        lo, hi = extent(a)
        if lo < ohi and olo < hi:
            same = (a.ptr == out.ptr and a.shape == out.shape and a.strides == out.strides
                    and a.dtype.itemsize == out.dtype.itemsize)
            if not same:
                raise ValueError(f"{name}: out overlaps argument {k} partially (out may be an "
                                 "input exactly, for in-place operation, but no other view of it)")


def body_result(info: FunctionInfo, types: tuple, math: str, arch: str) -> T.ScalarType:
    """The type a scalar function returns for arguments of ``types`` (by lowering it once on a
    scratch builder)."""
    key = (info.digest(), types, math, arch)
    hit = _BODY_TYPES.get(key)
    if hit is not None:
        return hit
    slot_types: dict = {}
    for _ in range(MAX_ROUNDS):
        kb = KernelBuilder("jit_typing", arch=arch, math=math)
        lw = Lower(kb, checks=False, slot_types=slot_types, err_ptr=None)
        lw.kernel_level = 0
        args = [Val(t, kb.reg(t.reg)) for t in types]
        for a in args:
            kb._written.add(a.v.name)
        r = lw.run_function(info, args)
        if not lw.restart:
            break
    if not isinstance(r, Val):
        raise CompileError(f"{info.filename}:{info.line_of(info.node)}: {info.qualname} must return "
                           f"one scalar for an elementwise or reduction kernel, it returns {r!r}")
    _BODY_TYPES[key] = r.t
    return r.t


_BODY_TYPES: dict = {}


def call_body(lw: Lower, info: FunctionInfo, args: list) -> Val:
    """Inline ``info`` on ``args`` in a generated kernel; the result must be a scalar."""
    lw.kernel_level = 0
    r = lw.run_function(info, args, prefix=f"{info.qualname}@{lw.fresh('body')}/")
    if not isinstance(r, Val):
        raise LoweringError(f"{info.qualname} must return one scalar")
    return r
