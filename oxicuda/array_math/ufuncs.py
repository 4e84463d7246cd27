"""numpy's ufuncs on device arrays: loop selection by numpy's resolver, operands cast to the
loop's dtypes, one generated elementwise kernel per (body, dtypes, layout) from
``oxicuda.elementwise``.

``apply(ufunc, inputs, out=None, dtype=None, casting="same_kind")`` is the one entry point;
the operators of DeviceArray and ``DeviceArray.__array_ufunc__`` go through it.
"""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, empty

from . import scalar_bodies as B
from .complex_parts import COMPLEX_BODIES, apply_complex
from .operands import (
    Scalar,
    broadcast_shape,
    elementwise_kernel,
    kernel_scalar,
    kind,
    on_device,
    operand,
    overlaps_partially,
    stream_of,
)


def _same(body: object, kinds: str = "bifc") -> dict[str, object]:
    return dict.fromkeys(kinds, body)


#: ufunc -> {kind of the loop's first dtype: scalar body}. Complex loops are complex_parts'
#: (over the real and imaginary views); a kind missing in both is a loop numpy has and these
#: kernels do not (NotImplementedError), never a silent host computation.
TABLE: dict[np.ufunc, dict[str, object]] = {
    np.add: {"b": B.logical_or2, "i": B.add, "f": B.add},
    np.subtract: _same(B.subtract, "if"),
    np.multiply: {"b": B.logical_and2, "i": B.multiply, "f": B.multiply},
    np.true_divide: _same(B.true_divide, "f"),
    np.floor_divide: {"i": B.floor_divide_int, "f": B.floor_divide_float},
    np.remainder: {"i": B.remainder_int, "f": B.remainder_float},
    np.power: {"i": B.power_int, "f": B.power_float},
    np.negative: _same(B.negative, "if"),
    np.positive: _same(B.positive, "if"),
    np.conjugate: {"b": B.identity, "i": B.identity, "f": B.identity},
    np.absolute: {"b": B.identity, "i": B.absolute, "f": B.absolute},
    np.sign: {"i": B.sign_int, "f": B.sign_float},
    np.exp: _same(B.exp, "f"),
    np.exp2: _same(B.exp2, "f"),
    np.expm1: _same(B.expm1, "f"),
    np.log: _same(B.log, "f"),
    np.log2: _same(B.log2, "f"),
    np.log10: _same(B.log10, "f"),
    np.log1p: _same(B.log1p, "f"),
    np.sqrt: _same(B.sqrt, "f"),
    np.sin: _same(B.sin, "f"),
    np.cos: _same(B.cos, "f"),
    np.tan: _same(B.tan, "f"),
    np.tanh: _same(B.tanh, "f"),
    np.arcsin: _same(B.arcsin, "f"),
    np.arccos: _same(B.arccos, "f"),
    np.arctan: _same(B.arctan, "f"),
    np.arctan2: _same(B.arctan2, "f"),
    np.floor: {"b": B.identity, "i": B.identity, "f": B.floor},
    np.ceil: {"b": B.identity, "i": B.identity, "f": B.ceil},
    np.maximum: {"b": B.logical_or2, "i": B.maximum, "f": B.maximum},
    np.minimum: {"b": B.logical_and2, "i": B.minimum, "f": B.minimum},
    np.fmax: {"b": B.logical_or2, "i": B.maximum, "f": B.fmax},
    np.fmin: {"b": B.logical_and2, "i": B.minimum, "f": B.fmin},
    np.equal: _same(B.equal, "bif"),
    np.not_equal: _same(B.not_equal, "bif"),
    np.less: _same(B.less, "bif"),
    np.less_equal: _same(B.less_equal, "bif"),
    np.greater: _same(B.greater, "bif"),
    np.greater_equal: _same(B.greater_equal, "bif"),
    np.logical_and: _same(B.logical_and, "bif"),
    np.logical_or: _same(B.logical_or, "bif"),
    np.logical_xor: _same(B.logical_xor, "bif"),
    np.logical_not: _same(B.logical_not, "bif"),
    np.isnan: {"b": B.never, "i": B.never, "f": B.isnan},
    np.isinf: {"b": B.never, "i": B.never, "f": B.isinf},
    np.isfinite: {"b": B.always, "i": B.always, "f": B.isfinite},
    np.bitwise_and: {"b": B.logical_and2, "i": B.bitwise_and},
    np.bitwise_or: {"b": B.logical_or2, "i": B.bitwise_or},
    np.bitwise_xor: {"b": B.logical_xor, "i": B.bitwise_xor},
    np.invert: {"b": B.logical_not, "i": B.invert},
    np.left_shift: {"i": B.left_shift},
    np.right_shift: {"i": B.right_shift},
}

_KIND_NAMES = {"b": "bool", "i": "integer", "f": "floating", "c": "complex"}


_SHIFTS = frozenset({np.left_shift, np.right_shift})
COMPARISONS = frozenset({np.equal, np.not_equal, np.less, np.less_equal, np.greater,
                         np.greater_equal})


def _exact_int(op: object) -> object:
    """A weak Python int as a strong int64/uint64/float64 scalar of the same value (for one
    outside the loop dtype's range: numpy 2 compares such ints exactly instead of refusing them (an
    int8 array == 300 is all False), which the wider loop reproduces."""
    v = op.value
    dt = np.int64 if -2**63 <= v < 2**63 else np.uint64 if 0 <= v < 2**64 else np.float64
    return Scalar(dt(v), np.dtype(dt))


def _outside(op: object, dt: np.dtype) -> bool:
    """True for a weak Python int that the integer loop dtype ``dt`` cannot hold."""
    if not (isinstance(op, Scalar) and op.dtype is int and dt.kind in "iu"):
        return False
    info = np.iinfo(dt)
    return not info.min <= op.value <= info.max


def supports(ufunc: object) -> bool:
    return ufunc in TABLE


def _cast_error(ufunc: np.ufunc, frm: np.dtype, to: np.dtype, casting: str) -> TypeError:
    return TypeError(f"Cannot cast ufunc {ufunc.__name__!r} output from {frm!r} to {to!r} with "
                     f"casting rule {casting!r}")


def resolve(ufunc: np.ufunc, ops: list, dtype: object = None,
            casting: str = "same_kind") -> tuple[np.dtype, ...]:
    """numpy's loop dtypes (inputs then output) for operands ``ops``; numpy's TypeError
    (UFuncTypeError) where numpy has no loop."""
    dts = tuple(o.dtype for o in ops) + (None,)
    if dtype is None:
        return ufunc.resolve_dtypes(dts, casting=casting)
    sig = (None,) * len(ops) + (np.dtype(dtype),)
    return ufunc.resolve_dtypes(dts, signature=sig, casting=casting)


def apply(ufunc: np.ufunc, inputs: tuple, out: DeviceArray | None = None, dtype: object = None,
          casting: str = "same_kind") -> DeviceArray:
    """``ufunc(*inputs, out=out, dtype=dtype, casting=casting)`` on the device.

    Inputs: DeviceArrays, host arrays (copied to the device), numpy scalars and Python scalars
    (weak, NEP 50). Broadcasting, loop selection and output casting are numpy's. Integer
    ``power`` refuses a negative scalar exponent as numpy does; a negative element of an
    exponent array gives ``1 // x**-e`` (as CuPy; numpy raises after scanning the data). Raises
    numpy's TypeError for a missing loop or a refused cast, ValueError for shapes that do not
    broadcast or an ``out`` of the wrong shape, NotImplementedError for a loop these kernels
    lack; all before any launch.
    """
    name = ufunc.__name__
    bodies = TABLE.get(ufunc)
    if bodies is None:
        raise NotImplementedError(f"{name}: this ufunc does not run on device arrays yet")
    ops = []
    for x in inputs:
        op = operand(x)
        if op is None:
            raise TypeError(f"{name}: operand of type {type(x).__name__} is not supported on "
                            "device arrays (DeviceArray, numpy array or scalar, Python scalar)")
        ops.append(op)
    if len(ops) != ufunc.nin:
        raise TypeError(f"{name}: takes {ufunc.nin} inputs; got {len(ops)}")
    loop = resolve(ufunc, ops, dtype, casting)
    if ufunc in COMPARISONS and any(_outside(op, dt) for op, dt in zip(ops, loop)):
        ops = [_exact_int(op) if _outside(op, dt) else op for op, dt in zip(ops, loop)]
        loop = resolve(ufunc, ops, dtype, casting)
    in_dts, res_dt = loop[:-1], loop[-1]
    complex_loop = kind(in_dts[0]) == "c" and ufunc in COMPLEX_BODIES
    body = bodies.get(kind(in_dts[0])) if not complex_loop else apply_complex
    if body is None:
        raise NotImplementedError(f"{name}: the {in_dts[0]} loop ({_KIND_NAMES.get(kind(in_dts[0]), '?')}"
                                  ") does not run on device arrays yet")
    if ufunc is np.power and kind(in_dts[0]) == "i" and isinstance(ops[1], Scalar) and (
            ops[1].value < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")
    shape = broadcast_shape(name, [o.shape for o in ops])
    if out is not None:
        if not isinstance(out, DeviceArray):
            raise TypeError(f"{name}: out must be a DeviceArray; got {type(out).__name__}")
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}; the operands broadcast to "
                             f"{shape} and out must have that shape")
        if not np.can_cast(res_dt, out.dtype, casting):
            raise _cast_error(ufunc, res_dt, out.dtype, casting)
        out._check_writable(name)
    args = []
    host_stream = out.stream if out is not None else stream_of(*ops)
    for op, dt in zip(ops, in_dts):
        if isinstance(op, Scalar):
            args.append(kernel_scalar(op, dt))
            continue
        op = on_device(op, host_stream)
        if op.dtype != dt:
            op = op.astype(dt)
        elif out is not None and overlaps_partially(op, out):
            op = op.copy()
        args.append(op)
    stream = out.stream if out is not None else stream_of(*args)
    if out is None:
        out = empty(shape, res_dt, stream=stream)
    if out.size == 0:
        return out
    if complex_loop:
        return apply_complex(ufunc, args, res_dt, out, stream)
    if body is B.power_int and in_dts[0].kind == "u" and in_dts[1].kind == "u":
        body = B.power_uint  # (no -1 to compare an unsigned base with)
    if ufunc in _SHIFTS:  # the bodies take the width, to give numpy's result for wide counts
        args.append(in_dts[1].type(8 * in_dts[0].itemsize))
    ek = elementwise_kernel(body, f"array_{name}")
    return ek(*args, out=out, stream=stream)


def binary(ufunc: np.ufunc, x: object, y: object) -> object:
    """``x <op> y`` for the operators: NotImplemented for operands the arrays do not take (so
    Python tries the other operand's reflected operator)."""
    x, y = operand(x), operand(y)
    if x is None or y is None:
        return NotImplemented
    return apply(ufunc, (x, y))


def power(x: object, y: object) -> object:
    """``x ** y``: np.power, except numpy's operator shortcut ``a ** 2`` = ``square(a)``,
    which gives int8 for a bool array."""
    if isinstance(x, DeviceArray) and x.dtype == np.bool_ and type(y) is int and y == 2:
        return binary(np.multiply, x.astype(np.int8), x.astype(np.int8))
    return binary(np.power, x, y)


def inplace(ufunc: np.ufunc, a: DeviceArray, y: object) -> object:
    """``a <op>= y``: the result written into ``a`` (numpy's same_kind rule for the cast)."""
    y = operand(y)
    if y is None:
        return NotImplemented
    apply(ufunc, (a, y), out=a)
    return a


def unary(ufunc: np.ufunc, a: DeviceArray) -> DeviceArray:
    return apply(ufunc, (a,))
