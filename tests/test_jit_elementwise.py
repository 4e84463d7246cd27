"""oxicuda.elementwise and oxicuda.reduction against numpy on the emulator (the contract of
CONTRACT-elementwise.md): broadcasting, strides, weak scalars, out/dtype, aliasing, axes."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.memory.dtypes import BFLOAT16

add = oxicuda.elementwise(lambda x, y: x + y, name="add")
fused = oxicuda.elementwise(lambda x, y, z: x * y + z, name="fused")
rsum = oxicuda.reduction(lambda x: x, lambda a, b: a + b, 0, name="sum")
rmax = oxicuda.reduction(lambda x: x, lambda a, b: max(a, b), float("-inf"), name="max")
rmean = oxicuda.reduction(lambda x: x, lambda a, b: a + b, 0, post=lambda s, n: s / n, name="mean")
rany = oxicuda.reduction(lambda x: x != 0, lambda a, b: a or b, False, name="any")
rdot = oxicuda.reduction(lambda x, y: x * y, lambda a, b: a + b, 0, name="dot")

DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64, np.float16,
          np.float32, np.float64, np.bool_]


def _rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", [np.int8, np.int32, np.uint64, np.float16, np.float32, np.float64,
                                np.bool_])
def test_add_promotes_like_numpy_for_dtype_pairs(da, db, rng):
    a, b = _rand(rng, (5, 7), da), _rand(rng, (7,), db)
    with np.errstate(all="ignore"):
        want = a + b  # two bools: a logical or
    got = add(oxicuda.asarray(a), oxicuda.asarray(b))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.get(), want)


def test_fused_expression_on_strided_broadcast_and_negative_strides(rng):
    x = rng.standard_normal((6, 8)).astype(np.float32)
    y = rng.standard_normal((1, 8)).astype(np.float32)
    z = rng.standard_normal((6, 1)).astype(np.float32)
    dx = oxicuda.asarray(x)
    with oxicuda.trace() as t:
        got = fused(dx[::-1, ::2], oxicuda.asarray(y)[:, ::2], oxicuda.asarray(z)[::-1])
    np.testing.assert_array_equal(got.get(), x[::-1, ::2] * y[:, ::2] + z[::-1])
    (rec,) = t.launches
    assert rec.spec.family == "jit_elementwise" and rec.spec.layout == "strided"
    with oxicuda.trace() as t:
        fused(dx, dx, dx)
    assert t.launches[0].spec.layout == "contig"


def test_python_scalars_are_weak_and_numpy_scalars_are_not(rng):
    x = rng.standard_normal(50).astype(np.float32)
    i = rng.integers(-9, 9, 50).astype(np.int8)
    assert add(oxicuda.asarray(x), 2.5).dtype == np.float32
    assert add(oxicuda.asarray(i), 3).dtype == np.int8
    assert add(oxicuda.asarray(i), 2.5).dtype == np.float64
    assert add(oxicuda.asarray(x), np.float64(1)).dtype == np.float64
    np.testing.assert_array_equal(add(oxicuda.asarray(i), 120).get(), i + 120)  # wraps like numpy
    with pytest.raises(OverflowError):
        add(oxicuda.asarray(i), 1000)


def test_out_dtype_inplace_and_partial_overlap(rng):
    x = rng.standard_normal(64).astype(np.float32)
    dx = oxicuda.asarray(x)
    out = oxicuda.full(64, np.nan, np.float64)
    r = add(dx, dx, out=out)
    assert r is out
    np.testing.assert_array_equal(out.get(), (x + x).astype(np.float64))
    assert add(dx, 1, dtype=np.int32).dtype == np.int32
    np.testing.assert_array_equal(add(dx, 1, dtype=np.int32).get(), (x + 1).astype(np.int32))
    add(dx, dx, out=dx)  # in place
    np.testing.assert_array_equal(dx.get(), x + x)
    with pytest.raises(ValueError, match="overlaps"):
        add(dx[1:], dx[1:], out=dx[:-1])
    with pytest.raises(ValueError, match="out has shape"):
        add(dx, dx, out=oxicuda.empty(63, np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        add(dx, oxicuda.empty(3, np.float32))


def test_host_arrays_and_empty_shapes(rng):
    x = rng.standard_normal((3, 4))
    np.testing.assert_array_equal(add(x, x.T[:4, :3].T).get(), x + x)
    e = add(np.zeros((0, 3)), 1.0)
    assert e.shape == (0, 3) and e.dtype == np.float64


def test_bfloat16_and_float16_round_per_operation(rng):
    x = rng.standard_normal(40).astype(np.float16)
    np.testing.assert_array_equal(fused(x, x, x).get(), x * x + x)
    b = rng.standard_normal(40).astype(BFLOAT16)
    got = add(b, b)
    assert got.dtype == BFLOAT16
    np.testing.assert_array_equal(got.get().astype(np.float32), (b + b).astype(np.float32))


def test_grid_stride_loop_covers_more_elements_than_threads(rng):
    n = 70_000
    x = rng.standard_normal(n).astype(np.float32)
    got = fused(x, x, 1.0).get()
    np.testing.assert_array_equal(got, x * x + np.float32(1.0))


# -- reductions ---------------------------------------------------------------------------------
def test_full_sum_is_device_wide_and_multi_block(rng):
    x = rng.standard_normal(20_000)
    with oxicuda.trace() as t:
        got = rsum(x)
    assert got.shape == () and got.dtype == np.float64
    np.testing.assert_allclose(got.get(), x.sum(), rtol=1e-12)
    fams = [(r.spec.family, r.spec.kind, r.grid[0]) for r in t.launches]
    assert fams[0][:2] == ("jit_reduction", "partial") and fams[0][2] > 1
    assert fams[1][:2] == ("jit_reduction", "final")


@pytest.mark.parametrize("axis", [0, 1, -1, (0, 2), (1, 2), None, (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_axis_reductions_match_numpy(axis, keepdims, rng):
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    got = rmax(x, axis=axis, keepdims=keepdims)
    want = x.max(axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.get(), want)
    got = rsum(x, axis=axis, keepdims=keepdims, dtype=np.float64)
    np.testing.assert_allclose(got.get(), x.sum(axis=axis, keepdims=keepdims, dtype=np.float64),
                               rtol=1e-12)


def test_reduction_of_strided_views_and_identity_of_empty(rng):
    x = rng.standard_normal((9, 10))
    d = oxicuda.asarray(x)
    np.testing.assert_allclose(rsum(d[::-2, 1::3], axis=0).get(), x[::-2, 1::3].sum(axis=0))
    np.testing.assert_allclose(rsum(d.T, axis=1).get(), x.T.sum(axis=1))
    assert float(rsum(np.zeros(0)).get()) == 0.0
    assert float(rmax(np.zeros((0,), np.float32)).get()) == -np.inf
    np.testing.assert_array_equal(rsum(np.zeros((3, 0)), axis=1).get(), np.zeros(3))
    assert rsum(np.zeros((0, 3)), axis=1).shape == (0,)


def test_mean_post_any_and_dot(rng):
    x = rng.standard_normal((4, 300)).astype(np.float32)
    got = rmean(x, axis=1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.get(), x.mean(axis=1), rtol=1e-5)
    b = np.zeros((3, 5), np.int32)
    b[1, 2] = 4
    np.testing.assert_array_equal(rany(b, axis=1).get(), b.any(axis=1))
    assert rany(b).dtype == np.bool_ and bool(rany(b).get())
    y = rng.standard_normal(1000)
    np.testing.assert_allclose(rdot(y, y[::-1]).get(), y @ y[::-1], rtol=1e-12)


def test_integer_sums_with_an_accumulator_dtype(rng):
    x = rng.integers(-100, 100, 5000).astype(np.int8)
    got = rsum(x, dtype=np.int64)
    assert got.dtype == np.int64 and int(got.get()) == int(x.sum(dtype=np.int64))
    assert rsum(x).dtype == np.int8  # without dtype: the reduce function's own type (wraps)
    assert int(rsum(x).get()) == int(np.array(x.sum(dtype=np.int64)).astype(np.int8))


def test_reduction_errors():
    with pytest.raises(np.exceptions.AxisError):
        rsum(np.zeros((2, 3)), axis=2)
    with pytest.raises(ValueError, match="duplicate"):
        rsum(np.zeros((2, 3)), axis=(1, -1))
    with pytest.raises(ValueError, match="out has shape"):
        rsum(np.zeros((2, 3)), axis=0, out=oxicuda.empty(2))
    with pytest.raises(TypeError, match="takes 1 arguments"):
        rsum(np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.int16,
                                   np.uint8, np.bool_])
def test_contiguous_calls_use_vector_accesses_and_a_scalar_tail(dtype, rng):
    n = 256 * 4 * 3 + 7  # vectors plus a tail
    x = _rand(rng, n, dtype)
    dx = oxicuda.asarray(x)
    with oxicuda.trace() as t:
        got = fused(dx, dx, dx)
    assert t.launches[0].spec.vec > 1
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got.get(), x * x + x)
        shifted = fused(dx[1:], dx[1:], dx[1:])  # misaligned: scalar accesses
        np.testing.assert_array_equal(shifted.get(), x[1:] * x[1:] + x[1:])
    text = oxicuda.ptx.registry.generate_ptx(t.launches[0].spec)
    assert ".v4." in text or ".v2." in text


@pytest.mark.parametrize("shape, axis, kind", [((100, 400), 0, "cols"), ((40, 300), 1, "rows"),
                                               ((300, 20), 1, "cols"), ((8, 300, 30), (0, 2), "rows")])
def test_axis_reductions_pick_rows_or_columns_and_both_agree(shape, axis, kind, rng):
    x = rng.standard_normal(shape)
    with oxicuda.trace() as t:
        got = rsum(x, axis=axis)
    assert t.launches[0].spec.kind == kind
    np.testing.assert_allclose(got.get(), x.sum(axis=axis), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(rmax(x, axis=axis, keepdims=True).get(), x.max(axis=axis, keepdims=True))
