"""The types of the ``@oxicuda.kernel`` language: scalars and array parameters.

Scalars: ``bool_`` (spelled ``bool`` in annotations too), ``i8 i16 i32 i64 u8 u16 u32 u64``,
``f16 bf16 f32 f64``. Each is also a cast, in kernels and in plain Python (``f32(x)`` is
``numpy.float32(x)`` on the host, so a kernel body can be evaluated by Python for reference).

Arrays: ``Array[f32]`` (read-write), ``In[f32]`` (read-only: loads go through the non-coherent
path, ``ld.global.nc``; stores are rejected at compile time), ``Out[f32]`` (written by the kernel).
The number of dimensions and the order may be given, ``Array[f32, 2]``, ``Array[f32, 2, "C"]``;
otherwise they are taken from the first call's argument (one specialization per signature).
Order ``"C"``: C-contiguous, the kernel computes strides from the shape; ``"A"``: any strides
(passed as parameters, in elements).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxicuda.memory.dtypes import BFLOAT16


@dataclass(frozen=True)
class ScalarType:
    """One scalar type: ``name`` (f32), numpy ``dtype``, register type ``reg`` and memory type
    ``mem`` of PTX, ``kind`` (b bool, i signed, u unsigned, f float) and ``bits``."""

    name: str
    dtype: np.dtype
    reg: str
    mem: str
    kind: str
    bits: int

    def __call__(self, value: object) -> object:
        """The host-side cast (plain Python evaluation of kernel code)."""
        return self.dtype.type(value)

    def __repr__(self) -> str:
        return self.name

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"


def _s(name: str, dtype: object, reg: str, mem: str, kind: str, bits: int) -> ScalarType:
    return ScalarType(name, np.dtype(dtype), reg, mem, kind, bits)


bool_ = _s("bool", np.bool_, "pred", "u8", "b", 8)
i8 = _s("i8", np.int8, "s32", "s8", "i", 8)
i16 = _s("i16", np.int16, "s32", "s16", "i", 16)
i32 = _s("i32", np.int32, "s32", "s32", "i", 32)
i64 = _s("i64", np.int64, "s64", "s64", "i", 64)
u8 = _s("u8", np.uint8, "u32", "u8", "u", 8)
u16 = _s("u16", np.uint16, "u32", "u16", "u", 16)
u32 = _s("u32", np.uint32, "u32", "u32", "u", 32)
u64 = _s("u64", np.uint64, "u64", "u64", "u", 64)
f16 = _s("f16", np.float16, "f16", "f16", "f", 16)
bf16 = ScalarType("bf16", BFLOAT16, "bf16", "bf16", "f", 16)
f32 = _s("f32", np.float32, "f32", "f32", "f", 32)
f64 = _s("f64", np.float64, "f64", "f64", "f", 64)

SCALARS: tuple[ScalarType, ...] = (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64)
_BY_DTYPE = {t.dtype: t for t in SCALARS}
_BY_NAME = {t.name: t for t in SCALARS}
_BY_NAME.update({"bool_": bool_, "int8": i8, "int16": i16, "int32": i32, "int64": i64,
                 "uint8": u8, "uint16": u16, "uint32": u32, "uint64": u64, "float16": f16,
                 "bfloat16": bf16, "float32": f32, "float64": f64})


def scalar_type(x: object) -> ScalarType:
    """The ScalarType of ``x``: a ScalarType, a numpy dtype or type, ``bool``/``int``/``float``
    (bool, i64, f64) or a name. TypeError naming the allowed types otherwise."""
    if isinstance(x, ScalarType):
        return x
    if x is bool:
        return bool_
    if x is int:
        return i64
    if x is float:
        return f64
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    try:
        dt = np.dtype(x)
    except TypeError:
        dt = None
    if dt is not None and dt in _BY_DTYPE:
        return _BY_DTYPE[dt]
    raise TypeError(f"{x!r} is not a kernel scalar type; allowed: {', '.join(t.name for t in SCALARS)}")


ACCESS = ("rw", "in", "out")
ORDERS = ("C", "A")


@dataclass(frozen=True)
class ArrayType:
    """An array parameter: element type, ``ndim`` (None: from the first call), ``order``
    (``"C"`` contiguous, ``"A"`` any strides, None: from the call) and ``access``."""

    dtype: ScalarType
    ndim: int | None = None
    order: str | None = None
    access: str = "rw"

    def __post_init__(self) -> None:
        if self.ndim is not None and not (isinstance(self.ndim, int) and 1 <= self.ndim <= 8):
            raise ValueError(f"array ndim={self.ndim!r}; allowed 1..8")
        if self.order is not None and self.order not in ORDERS:
            raise ValueError(f"array order={self.order!r}; allowed {ORDERS}")
        if self.access not in ACCESS:
            raise ValueError(f"array access={self.access!r}; allowed {ACCESS}")

    def __repr__(self) -> str:
        head = {"rw": "Array", "in": "In", "out": "Out"}[self.access]
        return f"{head}[{self.dtype!r}, {self.ndim}, {self.order!r}]"

    @property
    def complete(self) -> bool:
        return self.ndim is not None and self.order is not None


class _ArrayFactory:
    def __init__(self, access: str) -> None:
        self.access = access

    def __getitem__(self, item: object) -> ArrayType:
        args = item if isinstance(item, tuple) else (item,)
        if not 1 <= len(args) <= 3:
            raise TypeError(f"{self!r}[...] takes (dtype[, ndim[, order]]), got {item!r}")
        dt = scalar_type(args[0])
        ndim = args[1] if len(args) > 1 else None
        order = args[2] if len(args) > 2 else None
        return ArrayType(dt, ndim, order, self.access)

    def __repr__(self) -> str:
        return {"rw": "Array", "in": "In", "out": "Out"}[self.access]


Array = _ArrayFactory("rw")
In = _ArrayFactory("in")
Out = _ArrayFactory("out")

__all__ = ["ACCESS", "SCALARS", "Array", "ArrayType", "In", "Out", "ScalarType", "bf16", "bool_",
           "f16", "f32", "f64", "i8", "i16", "i32", "i64", "scalar_type", "u8", "u16", "u32", "u64"]
