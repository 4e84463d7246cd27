"""oxicuda.primitives scan, reduce, argmin/argmax and segmented reduce against numpy (float64
references), at lengths around the tile boundaries, with NaN-poisoned outputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import oxicuda
import oxicuda.primitives as prim
from oxicuda.primitives.kernels.scan import tile_of


def _data(rng, dtype, n):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    lo = 0 if np.dtype(dtype).kind == "u" else -1000
    return rng.integers(lo, 1000, n).astype(dtype)


def _lengths(dtype):
    t = tile_of(dtype)
    return (0, 1, t - 1, t, t + 1, 3 * t + 7)


def _poisoned(n, dtype):
    fill = np.nan if np.dtype(dtype).kind == "f" else np.iinfo(dtype).max // 3
    return oxicuda.full((n,), fill, dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_scans_match_numpy_at_tile_boundaries(rng, dtype, op):
    for n in _lengths(dtype):
        x = _data(rng, dtype, n)
        ref64 = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
        incl = np.cumsum(ref64) if op == "sum" else np.maximum.accumulate(ref64) if n else ref64
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(dtype).min
        excl = np.concatenate([[0 if op == "sum" else lowest], incl[:-1]]) if n else incl
        for fn, want in ((prim.inclusive_scan, incl), (prim.exclusive_scan, excl)):
            out = _poisoned(n, dtype)
            with oxicuda.trace() as t:
                r = fn(oxicuda.asarray(x), op, out=out)
            assert r is out
            got = out.get()
            if x.dtype.kind == "f":
                tol = 1e-4 if dtype == "float32" else 1e-10
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1, np.sqrt(n)) * 4)
            else:
                np.testing.assert_array_equal(got, want.astype(dtype))
            kernels = [r.spec.family for r in t.launches]
            assert kernels == ([] if n == 0 else ["prim_fill", "prim_scan"])


def test_scan_max_propagates_nan_and_min_works(rng):
    x = rng.standard_normal(3000).astype(np.float32)
    x[1234] = np.nan
    got = prim.inclusive_scan(x, "max").get()
    np.testing.assert_array_equal(got[:1234], np.maximum.accumulate(x[:1234]))
    assert np.isnan(got[1234:]).all()
    y = rng.integers(-50, 50, 5000).astype(np.int64)
    np.testing.assert_array_equal(prim.inclusive_scan(y, "min").get(), np.minimum.accumulate(y))


def test_scan_in_place_and_on_a_stream(rng):
    from oxicuda.driver.stream import Stream

    s = Stream()
    x = rng.integers(-9, 9, 4100).astype(np.int32)
    d = oxicuda.asarray(x)
    prim.inclusive_scan(d, out=d, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(d.get(), np.cumsum(x).astype(np.int32))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64", "float32", "float64"])
def test_reductions_and_arg_extremes_match_numpy(rng, dtype):
    for n in (1, 257, 5000):
        x = _data(rng, dtype, n)
        ref = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
        s = prim.reduce(x, "sum").get()
        if x.dtype.kind == "f":
            np.testing.assert_allclose(s, ref.sum(), rtol=1e-4, atol=1e-3 * np.sqrt(n))
        else:
            assert int(s) == int(ref.sum().astype(dtype))
        assert prim.reduce(x, "min").get() == x.min()
        assert prim.reduce(x, "max").get() == x.max()
        x[n // 2] = x.max()  # a tie: the first index wins
        assert int(prim.argmax(x).get()) == int(np.argmax(x))
        assert int(prim.argmin(x).get()) == int(np.argmin(x))


def test_reduce_edge_cases(rng):
    assert prim.reduce(np.zeros(0, np.float32)).get() == 0
    assert prim.reduce(np.zeros(0, np.int32), "max").get() == np.iinfo(np.int32).min
    x = rng.standard_normal(1000)
    x[[700, 900]] = np.nan
    assert int(prim.argmax(x).get()) == 700 and int(prim.argmin(x).get()) == 700
    assert np.isnan(prim.reduce(x, "max").get())
    with pytest.raises(ValueError, match="empty"):
        prim.argmax(np.zeros(0, np.float32))


@pytest.mark.parametrize("op", ["sum", "min", "max"])
@pytest.mark.parametrize("offsets", ["int32", "int64"])
def test_segmented_reduce_with_empty_and_long_segments(rng, op, offsets):
    x = rng.standard_normal(3000)
    lengths = rng.integers(0, 8, 200)
    lengths[[0, 5, 17]] = 0
    lengths[50] = 1500
    off = np.concatenate([[0], np.cumsum(lengths)]).astype(offsets)
    x = x[:off[-1]]
    out = _poisoned(200, np.float64)
    prim.segmented_reduce(x, off, op, out=out)
    ident = {"sum": 0.0, "min": np.inf, "max": -np.inf}[op]
    fn = {"sum": np.sum, "min": np.min, "max": np.max}[op]
    want = [fn(x[a:b]) if b > a else ident for a, b in itertools.pairwise(off)]
    np.testing.assert_allclose(out.get(), want, rtol=1e-12, atol=1e-12)
    begin, end = off[:-1], off[1:]
    np.testing.assert_allclose(prim.segmented_reduce(x, begin, op, end_offsets=end).get(), want,
                               rtol=1e-12, atol=1e-12)


def test_bad_arguments_raise_before_any_launch():
    x = oxicuda.asarray(np.arange(10, dtype=np.float32))
    with oxicuda.trace() as t:
        with pytest.raises(ValueError, match="op='prod'"):
            prim.inclusive_scan(x, "prod")
        with pytest.raises(TypeError, match="complex64"):
            prim.inclusive_scan(np.zeros(4, np.complex64))
        with pytest.raises(ValueError, match="1-D"):
            prim.reduce(np.zeros((2, 2), np.float32))
        with pytest.raises(ValueError, match="out must be"):
            prim.inclusive_scan(x, out=oxicuda.empty((9,), np.float32))
        with pytest.raises(ValueError, match="out must be"):
            prim.inclusive_scan(x, out=oxicuda.empty((10,), np.float64))
        with pytest.raises(TypeError, match="offsets has dtype float32"):
            prim.segmented_reduce(x, x)
    assert t.launches == []


@pytest.mark.parametrize("dtype", ["int32", "float64"])
@pytest.mark.parametrize("nearest_inclusive", [None, 40, 69])
def test_look_back_folds_aggregates_across_windows_up_to_the_nearest_inclusive_prefix(rng, dtype, nearest_inclusive):
    """The emulator runs CTAs in ticket order, so a scan there always finds its predecessor's
    inclusive prefix at once; this launches the tile T = 70 alone over a state whose earlier
    tiles hold only aggregates (flag 1) except tile 0 (and ``nearest_inclusive``), as on a GPU
    where many tiles are in flight: the warp must fold 32 tiles a step through three windows."""
    from oxicuda.primitives.kernels.scan import scan_spec
    from oxicuda.primitives.plan import arch
    from oxicuda.ptx.cache import load

    spec = scan_spec(arch(), dtype, "sum", False)
    tile, T = tile_of(dtype), 70
    x = _data(rng, dtype, (T + 1) * tile)
    agg = _data(rng, dtype, T + 1)
    pref = _data(rng, dtype, T + 1)
    flags = np.zeros(T + 1, np.uint32)
    flags[1:T] = 1
    flags[0] = 2
    if nearest_inclusive is not None:
        flags[nearest_inclusive] = 2
    k = nearest_inclusive or 0
    want_prefix = pref[k].astype(np.float64) + agg[k + 1:T].astype(np.float64).sum()
    y = _poisoned(x.size, dtype)
    counter = oxicuda.asarray(np.array([T], np.uint32))
    d_flags, d_agg, d_pref = oxicuda.asarray(flags), oxicuda.asarray(agg), oxicuda.asarray(pref)
    fn = load(spec)
    fn(1, spec.threads, (oxicuda.asarray(x), y, x.size, counter, d_flags, d_agg, d_pref))
    got = y.get()[T * tile:]
    want = want_prefix + np.cumsum(x[T * tile:].astype(np.float64))
    tol = 1e-9 if dtype == "float64" else 0
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
    assert d_flags.get()[T] == 2  # published its inclusive prefix
    np.testing.assert_allclose(d_pref.get()[T].astype(np.float64), want[-1], rtol=tol, atol=tol)
