"""bfloat16 is ml_dtypes' dtype, always: arrays come back from the device as real bfloat16
arrays that numpy computes with and casts correctly."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import oxicuda
from oxicuda.memory import dtypes


def test_bfloat16_is_ml_dtypes_bfloat16():
    assert dtypes.BFLOAT16 == np.dtype(ml_dtypes.bfloat16)
    assert not hasattr(dtypes, "HAVE_ML_DTYPES")  # no structured stand-in any more
    assert dtypes.BFLOAT16.fields is None


def test_get_returns_real_bfloat16_values(rng):
    host = rng.standard_normal((4, 5)).astype(ml_dtypes.bfloat16)
    a = oxicuda.asarray(host)
    got = a.get()
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(np.asarray(got, np.float32), host.astype(np.float32))
    one = oxicuda.full((3,), 1.0, dtype="bfloat16")
    assert np.asarray(one.get(), np.float32).tolist() == [1.0, 1.0, 1.0]
    assert float(one[0]) == 1.0 and one[1].item() == 1.0


def test_bfloat16_arithmetic_works_on_what_comes_back(rng):
    host = rng.standard_normal(8).astype(np.float32)
    back = oxicuda.asarray(host).astype("bfloat16").get()
    np.testing.assert_allclose(back.astype(np.float32) * 2, host * 2, rtol=1e-2)


def test_a_structured_dtype_is_not_a_supported_dtype():
    import pytest

    with pytest.raises(TypeError, match="not supported"):
        dtypes.normalize_dtype(np.dtype([("bfloat16", "<u2")]))
