"""``oxicuda.types``: the scalar and array types of ``@oxicuda.kernel`` (see oxicuda.jit.types)."""

from oxicuda.jit.types import (
    SCALARS,
    Array,
    ArrayType,
    In,
    Out,
    ScalarType,
    bf16,
    bool_,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    scalar_type,
    u8,
    u16,
    u32,
    u64,
)

__all__ = ["SCALARS", "Array", "ArrayType", "In", "Out", "ScalarType", "bf16", "bool_", "f16",
           "f32", "f64", "i8", "i16", "i32", "i64", "scalar_type", "u8", "u16", "u32", "u64"]
