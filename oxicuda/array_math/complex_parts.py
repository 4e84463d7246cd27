"""Complex ufuncs on the real and imaginary parts: the elementwise compiler has no complex
type, so a complex array is two strided float views (``real_view``/``imag_view``, no copy) and
each complex ufunc is one or two float kernels over them (numpy's formulas: Smith's division,
``hypot`` for ``absolute``)."""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, empty

from . import scalar_bodies as B
from .operands import elementwise_kernel

_PART = {np.dtype(np.complex64): np.dtype(np.float32),
         np.dtype(np.complex128): np.dtype(np.float64)}


def _part(a: DeviceArray, offset: int) -> DeviceArray:
    dt = _PART[a.dtype]
    return DeviceArray.from_pointer(a._ptr + offset * dt.itemsize, a.shape, dt, a.strides,
                                    owner=a, stream=a.stream, readonly=a.readonly,
                                    device=a.device)


def real_view(a: DeviceArray) -> DeviceArray:
    """The real parts of a complex array as a float view (shares memory)."""
    return _part(a, 0)


def imag_view(a: DeviceArray) -> DeviceArray:
    """The imaginary parts of a complex array as a float view (shares memory)."""
    return _part(a, 1)


def real(a: DeviceArray) -> DeviceArray:
    """numpy's ``a.real``: the real view of a complex array, ``a`` itself otherwise."""
    return real_view(a) if a.dtype in _PART else a


def imag(a: DeviceArray) -> DeviceArray:
    """numpy's ``a.imag``: the imaginary view of a complex array, zeros otherwise."""
    if a.dtype in _PART:
        return imag_view(a)
    from oxicuda.memory.array import zeros

    return zeros(a.shape, a.dtype, stream=a.stream)


def _parts(x: object) -> tuple[object, object]:
    if isinstance(x, DeviceArray):
        return real_view(x), imag_view(x)
    return x.real, x.imag  # a numpy complex scalar of the loop dtype


#: ufunc -> (parts the result has: 2 complex, 1 real/bool; bodies over the parts)
COMPLEX_BODIES = {
    np.add: (2, B.add, B.add),
    np.subtract: (2, B.subtract, B.subtract),
    np.multiply: (2, B.cmul_re, B.cmul_im),
    np.true_divide: (2, B.cdiv_re, B.cdiv_im),
    np.negative: (2, B.negative, B.negative),
    np.positive: (2, B.positive, B.positive),
    np.conjugate: (2, B.positive, B.negative),
    np.absolute: (1, B.cabs),
    np.equal: (1, B.cequal),
    np.not_equal: (1, B.cnot_equal),
    np.isnan: (1, B.cisnan),
    np.isinf: (1, B.cisinf),
    np.isfinite: (1, B.cisfinite),
    np.logical_not: (1, B.ciszero),
}
_SEPARATE = frozenset({np.add, np.subtract, np.negative, np.positive, np.conjugate})


def apply_complex(ufunc: np.ufunc, args: list, res_dt: np.dtype, out: DeviceArray,
                  stream: int) -> DeviceArray:
    """``ufunc`` over complex ``args`` (arrays and scalars already of the loop dtype) into
    ``out`` (of the result's shape)."""
    entry = COMPLEX_BODIES[ufunc]
    target = out if out.dtype == res_dt else empty(out.shape, res_dt, stream=stream)
    parts = [_parts(a) for a in args]
    name = f"array_{ufunc.__name__}_complex"
    if entry[0] == 2:
        re_out, im_out = real_view(target), imag_view(target)
        if ufunc in _SEPARATE:  # componentwise: the real body on each part
            elementwise_kernel(entry[1], name)(*(p[0] for p in parts), out=re_out, stream=stream)
            elementwise_kernel(entry[2], name)(*(p[1] for p in parts), out=im_out, stream=stream)
        else:
            flat = [v for p in parts for v in p]
            elementwise_kernel(entry[1], name)(*flat, out=re_out, stream=stream)
            elementwise_kernel(entry[2], name)(*flat, out=im_out, stream=stream)
    else:
        flat = [v for p in parts for v in p]
        elementwise_kernel(entry[1], name)(*flat, out=target, stream=stream)
    if target is not out:
        out._copy_from(target)
    return out
