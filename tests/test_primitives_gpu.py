"""Large primitives on the GPU against CuPy (CUB) and numpy."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
import oxicuda.primitives as prim

pytestmark = pytest.mark.gpu


def test_scan_of_2_to_the_26_int32_matches_numpy():
    x = np.random.default_rng(0).integers(-3, 4, 1 << 26).astype(np.int32)
    got = prim.inclusive_scan(oxicuda.asarray(x)).get()
    np.testing.assert_array_equal(got, np.cumsum(x, dtype=np.int64).astype(np.int32))


@pytest.mark.parametrize("algo", ["onesweep", "classic"])
def test_radix_sort_pairs_of_2_to_the_24_match_numpy_and_cupy(algo):
    rng = np.random.default_rng(1)
    k = rng.integers(0, 1 << 20, 1 << 24).astype(np.uint32)
    v = np.arange(k.size, dtype=np.int32)
    sk, sv = prim.radix_sort(oxicuda.asarray(k), oxicuda.asarray(v), algo=algo)
    order = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(sv.get(), order)
    cupy = pytest.importorskip("cupy")
    np.testing.assert_array_equal(sk.get(), cupy.asnumpy(cupy.sort(cupy.asarray(k))))


def test_float64_descending_sort_and_reductions_at_scale():
    rng = np.random.default_rng(2)
    f = rng.standard_normal(1 << 22)
    got = prim.radix_sort(oxicuda.asarray(f), descending=True).get()
    np.testing.assert_array_equal(got, np.sort(f)[::-1])
    assert int(prim.argmax(f).get()) == int(np.argmax(f))
    np.testing.assert_allclose(float(prim.reduce(f).get()), f.sum(), rtol=1e-9)


def test_segmented_reduce_and_select_at_scale():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1 << 24).astype(np.float32)
    off = np.arange(0, x.size + 1, 256, dtype=np.int32)
    got = prim.segmented_reduce(oxicuda.asarray(x), oxicuda.asarray(off)).get()
    np.testing.assert_allclose(got, x.reshape(-1, 256).astype(np.float64).sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(prim.select_if(x, "gt", 1.0).get(), x[x > 1.0])


@pytest.mark.parametrize("dtype,op,exclusive", [("float64", "sum", False), ("int32", "max", True), ("int64", "sum", True)])
def test_scans_with_many_tiles_in_flight_match_numpy(dtype, op, exclusive):
    """2^25 elements: tens of thousands of tiles, so the warp look-back folds aggregates of tiles
    still in flight (the path the emulator never takes)."""
    rng = np.random.default_rng(11)
    n = 1 << 25
    x = rng.standard_normal(n) if dtype == "float64" else rng.integers(-1000, 1000, n).astype(dtype)
    f = prim.exclusive_scan if exclusive else prim.inclusive_scan
    got = f(oxicuda.asarray(x), op).get()
    ref = np.cumsum(x) if op == "sum" else np.maximum.accumulate(x)
    if exclusive:
        first = 0 if op == "sum" else np.iinfo(dtype).min
        ref = np.concatenate([[first], ref[:-1]]).astype(x.dtype)
    if dtype == "float64":
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-6 * np.sqrt(n))
    else:
        np.testing.assert_array_equal(got, ref)
