"""dtype normalization and the bfloat16 conversions, against independent references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oxicuda.memory import dtypes
from oxicuda.memory.dtypes import (
    BFLOAT16,
    bfloat16_bits_to_float32,
    dtype_name,
    float32_to_bfloat16_bits,
    host_astype,
    normalize_dtype,
)


@pytest.mark.parametrize("name", list(dtypes.SUPPORTED_DTYPES))
def test_every_supported_name_normalizes_to_its_dtype_and_back(name):
    dt = normalize_dtype(name)
    assert dt == dtypes.SUPPORTED_DTYPES[name]
    assert dtype_name(dt) == name
    assert normalize_dtype(dt) == dt


def test_type_objects_short_strings_and_byte_orders_normalize():
    assert normalize_dtype(np.float32) == np.dtype(np.float32)
    assert normalize_dtype(float) == np.dtype(np.float64)
    assert normalize_dtype("f2") == np.dtype(np.float16)
    assert normalize_dtype(">i4") == np.dtype(np.int32)
    assert normalize_dtype(bool) == np.dtype(np.bool_)
    assert normalize_dtype("bf16") == BFLOAT16


def test_bfloat16_is_two_bytes_and_not_uint16():
    assert BFLOAT16.itemsize == 2
    assert BFLOAT16 != np.dtype(np.uint16)
    assert dtype_name(BFLOAT16) == "bfloat16"


@pytest.mark.parametrize("bad", ["object", np.dtype("U3"), "float128", "int4", "V7", None])
def test_unsupported_dtypes_raise_type_error_naming_the_allowed_ones(bad):
    with pytest.raises(TypeError, match="allowed dtypes: bool, int8"):
        normalize_dtype(bad)


def _bf16_reference(x: np.ndarray) -> np.ndarray:
    """Round to nearest even by comparing the two neighbouring bfloat16 values in float64
    (the neighbour past the largest finite value counts as 2**128, as IEEE rounding does)."""
    out = np.empty(x.shape, np.uint16)
    for i, v in enumerate(x.ravel()):
        bits = int(np.array(v, np.float32).view(np.uint32))
        lo = bits & 0xFFFF0000
        hi = lo + 0x10000
        if np.isinf(v):
            out[i] = lo >> 16
            continue
        vlo = float(np.array(lo, np.uint32).view(np.float32))
        if (hi >> 23) & 0xFF == 0xFF:
            vhi = math.copysign(2.0**128, float(v))
        else:
            vhi = float(np.array(hi, np.uint32).view(np.float32))
        dlo, dhi = abs(float(v) - vlo), abs(vhi - float(v))
        pick = lo if dlo < dhi or (dlo == dhi and (lo >> 16) % 2 == 0) else hi
        out[i] = pick >> 16
    return out


def test_float32_to_bfloat16_rounds_to_nearest_even(rng):
    x = (rng.standard_normal(4000) * np.exp(rng.uniform(-30, 30, 4000))).astype(np.float32)
    ties = (rng.integers(0, 1 << 16, 200).astype(np.uint32) << 16 | 0x8000).view(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, 3.3895314e38, 3.4e38, 1e-40], np.float32)
    x = np.concatenate([x, ties[np.isfinite(ties)], specials])
    got = float32_to_bfloat16_bits(x)
    assert got.dtype == np.uint16 and got.shape == x.shape
    np.testing.assert_array_equal(got, _bf16_reference(x))


def test_nan_stays_nan_and_keeps_its_sign():
    x = np.array([np.nan, -np.nan, np.float32(np.uint32(0x7F800001).view(np.float32))], np.float32)
    x[1] = -np.abs(x[1])
    bits = float32_to_bfloat16_bits(x)
    back = bfloat16_bits_to_float32(bits)
    assert np.isnan(back).all()
    assert np.signbit(back[1]) and not np.signbit(back[0])


def test_bfloat16_bits_to_float32_is_exact_for_every_pattern():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    f = bfloat16_bits_to_float32(bits)
    np.testing.assert_array_equal(f.view(np.uint32), bits.astype(np.uint32) << 16)
    finite = np.isfinite(f)
    np.testing.assert_array_equal(float32_to_bfloat16_bits(f[finite]), bits[finite])


def test_host_astype_to_and_from_bfloat16_round_trips_representable_values(rng):
    vals = bfloat16_bits_to_float32(rng.integers(0, 0x7F7F, 300).astype(np.uint16)).reshape(10, 30)
    b = host_astype(vals.astype(np.float64), "bfloat16")
    assert b.dtype == BFLOAT16 and b.shape == (10, 30)
    np.testing.assert_array_equal(host_astype(b, np.float32), vals)
    np.testing.assert_array_equal(host_astype(b, np.float64), vals.astype(np.float64))


def test_dlpack_and_typestr_codes_round_trip():
    for name, dt in dtypes.SUPPORTED_DTYPES.items():
        assert dtypes.dtype_from_dlpack(*dtypes.dlpack_dtype(dt)) == dt, name
        assert dtypes.dtype_from_typestr(dtypes.typestr(dt)) == dt, name
    with pytest.raises(TypeError, match="lanes"):
        dtypes.dtype_from_dlpack(2, 32, 4)
