"""Device arrays that compute, on the GPU at real sizes (issue 21, item 3): operators, ufuncs
and reductions against numpy, with trace() proving which kernels ran."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda

pytestmark = pytest.mark.gpu


def _families(t) -> set:
    return {getattr(r.spec, "family", None) for r in t.launches}


def test_add_and_fused_looking_expression_over_2_28_float32(rng):
    n = 1 << 28
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    da, db = oxicuda.asarray(a), oxicuda.asarray(b)
    with oxicuda.trace() as t:
        s = da + db
        e = da * 2 + db
    assert "jit_elementwise" in _families(t)
    np.testing.assert_array_equal(s.get(), a + b)
    np.testing.assert_array_equal(e.get(), a * np.float32(2) + b)


@pytest.mark.parametrize("ufunc", [np.exp, np.log, np.sqrt, np.sin, np.tanh, np.arctan,
                                   np.log1p, np.expm1, np.floor])
def test_unary_ufuncs_over_2_24_float32_and_float64(rng, ufunc):
    for dt, tol in ((np.float32, 2e-6), (np.float64, 1e-13)):
        h = (rng.random(1 << 24) * 4 + 0.01).astype(dt)
        got = ufunc(oxicuda.asarray(h))
        assert isinstance(got, oxicuda.DeviceArray) and got.dtype == dt
        np.testing.assert_allclose(got.get(), ufunc(h), rtol=tol, atol=tol)


@pytest.mark.parametrize("pair", [("int8", "uint8"), ("int32", "float32"), ("uint32", "int64"),
                                  ("float16", "float32"), ("bool", "int16")])
def test_mixed_dtype_arithmetic_and_comparisons_at_2_22(rng, pair):
    n = 1 << 22
    a = rng.integers(-50, 50, n).astype(pair[0]) if pair[0] != "bool" else rng.random(n) > 0.5
    b = rng.integers(1, 50, n).astype(pair[1])
    da, db = oxicuda.asarray(a), oxicuda.asarray(b)
    with np.errstate(all="ignore"):
        for op in (np.add, np.multiply, np.floor_divide, np.remainder, np.maximum, np.less):
            got = op(da, db)
            want = op(a, b)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.get(), want)


def test_broadcast_views_and_inplace_at_real_sizes(rng):
    h = rng.standard_normal((4096, 4096)).astype(np.float32)
    row = rng.standard_normal(4096).astype(np.float32)
    d = oxicuda.asarray(h)
    np.testing.assert_array_equal((d[::-1, ::2] - oxicuda.asarray(row[::2])).get(),
                                  h[::-1, ::2] - row[::2])
    np.testing.assert_array_equal((d.T * 3.0).get(), h.T * np.float32(3))
    d += oxicuda.asarray(row)
    np.testing.assert_array_equal(d.get(), h + row)


def test_sum_of_2_28_float32_and_max_axis1_of_16384_squared(rng):
    a = rng.standard_normal(1 << 28, dtype=np.float32)
    da = oxicuda.asarray(a)
    s = float(da.sum())
    assert abs(s - float(np.sum(a, dtype=np.float64))) <= 1e-5 * float(np.sum(np.abs(a), dtype=np.float64))
    m = rng.standard_normal((16384, 16384), dtype=np.float32)
    dm = oxicuda.asarray(m)
    with oxicuda.trace() as t:
        r = dm.max(axis=1)
    assert t.launches
    np.testing.assert_array_equal(r.get(), m.max(axis=1))
    m[5, 77] = np.nan
    dm = oxicuda.asarray(m)
    assert np.isnan(dm.max(axis=1).get()[5]) and int(dm.argmax()) == 5 * 16384 + 77


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_reductions_with_axes_at_real_sizes(rng, axis):
    h = rng.standard_normal((256, 512, 64)).astype(np.float32)
    i = rng.integers(-1000, 1000, (256, 512, 64)).astype(np.int32)
    d, di = oxicuda.asarray(h), oxicuda.asarray(i)
    np.testing.assert_allclose(d.sum(axis=axis).get(), h.sum(axis=axis, dtype=np.float64),
                               rtol=1e-4, atol=1e-2)
    np.testing.assert_array_equal(di.sum(axis=axis).get(), i.sum(axis=axis))
    np.testing.assert_allclose(di.mean(axis=axis).get(), i.mean(axis=axis), rtol=1e-12)
    np.testing.assert_array_equal(d.min(axis=axis, keepdims=True).get(),
                                  h.min(axis=axis, keepdims=True))
    np.testing.assert_array_equal((d > 0).any(axis=axis).get(), (h > 0).any(axis=axis))
    if axis is None or isinstance(axis, int):
        np.testing.assert_array_equal(d.argmin(axis=axis).get(), h.argmin(axis=axis))


def test_matmul_operator_at_1024(rng):
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    got = (oxicuda.asarray(a) @ oxicuda.asarray(b)).get()
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < 1e-5
