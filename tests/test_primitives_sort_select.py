"""oxicuda.primitives radix sort (every key width, both directions, stability, bit ranges),
selection, run-length encoding, reduce-by-key and histogram against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
import oxicuda.primitives as prim
from oxicuda.primitives.kernels.radix import TILE

KEY_TYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "uint64", "int64", "float64"]


def _keys(rng, dtype, n):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        k = rng.standard_normal(n).astype(dt) * 100
        k[::7] = np.round(k[::7])  # many duplicates, to see stability
        k[k == 0] = 0.0  # no -0.0: the sort puts it before +0.0, where numpy sees ties
        return k
    info = np.iinfo(dt)
    return rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64 if dt.itemsize < 8 else dt).astype(dt)


def _order(k, descending):
    n = len(k)
    if descending:  # stable descending: by -key, ties by position
        key = -k.astype(np.float64) if k.dtype.kind == "f" else -(k.astype(object))
        return np.array(sorted(range(n), key=lambda i: (key[i], i)), dtype=np.int64)
    return np.argsort(k, kind="stable")


CLASSIC = ["uint8", "int32", "float32", "float64"]


@pytest.mark.parametrize("algo,dtype", [("onesweep", d) for d in KEY_TYPES] + [("classic", d) for d in CLASSIC])
def test_radix_sort_pairs_are_stable_for_every_key_width(rng, algo, dtype):
    n = TILE + 1 if np.dtype(dtype).itemsize < 8 else 777
    k = _keys(rng, dtype, n)
    v = np.arange(n, dtype=np.int32)
    for desc in (False, True):
        with oxicuda.trace() as t:
            sk, sv = prim.radix_sort(k, v, descending=desc, algo=None if algo == "onesweep" else algo)
        order = _order(k, desc)
        np.testing.assert_array_equal(sv.get(), order)
        np.testing.assert_array_equal(sk.get(), k[order])
        fams = [r.spec.family for r in t.launches]
        if algo == "classic":
            passes = np.dtype(dtype).itemsize * 2
            assert fams.count("prim_radix") == 2 * passes and fams.count("prim_scan") == passes
        else:
            passes = np.dtype(dtype).itemsize
            assert fams.count("prim_onesweep") == 1 + passes and "prim_scan" not in fams


@pytest.mark.parametrize("algo", ["onesweep", "classic"])
def test_radix_sort_lengths_around_the_tile_and_wide_values(rng, algo):
    for n in (0, 1, TILE - 1, TILE, 3 * TILE + 5):
        k = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        v = rng.standard_normal(n)
        sk, sv = prim.radix_sort(oxicuda.asarray(k), oxicuda.asarray(v), algo=algo)
        o = np.argsort(k, kind="stable")
        np.testing.assert_array_equal(sk.get(), k[o])
        np.testing.assert_array_equal(sv.get(), v[o])
        np.testing.assert_array_equal(prim.radix_sort(k).get(), np.sort(k))


def test_radix_sort_bit_range_and_float_specials(rng):
    k = rng.integers(0, 1 << 16, 3000).astype(np.uint32)
    v = np.arange(3000, dtype=np.int32)
    for algo in ("onesweep", "classic"):
        _, sv = prim.radix_sort(k, v, begin_bit=4, end_bit=13, algo=algo)
        np.testing.assert_array_equal(sv.get(), np.argsort((k >> 4) & 511, kind="stable"))
    f = np.array([3.0, np.inf, -np.inf, -1.0, 0.0, np.nan, -7.5, 2.0], np.float32)
    got = prim.radix_sort(f).get()
    np.testing.assert_array_equal(got[:-1], np.sort(f)[:-1])
    assert np.isnan(got[-1])


def test_argsort_matches_numpy_stable(rng):
    k = rng.integers(-5, 5, 2500).astype(np.int64)
    np.testing.assert_array_equal(prim.argsort(k).get(), np.argsort(k, kind="stable"))


def test_select_and_nonzero_around_tile_boundaries(rng):
    for n in (1, 2047, 2048, 2049, 6200):
        x = rng.integers(-3, 4, n).astype(np.int32)
        f = rng.standard_normal(n)
        np.testing.assert_array_equal(prim.select_if(x, "gt", 0).get(), x[x > 0])
        np.testing.assert_array_equal(prim.select_if(f, "le", -0.5).get(), f[f <= -0.5])
        np.testing.assert_array_equal(prim.select_flagged(f, x != 0).get(), f[x != 0])
        np.testing.assert_array_equal(prim.nonzero(x).get(), np.nonzero(x)[0])
    c = (rng.standard_normal(100) + 1j * rng.standard_normal(100)).astype(np.complex128)
    flags = rng.integers(0, 2, 100).astype(np.uint8)
    np.testing.assert_array_equal(prim.select_flagged(c, flags).get(), c[flags != 0])
    assert prim.select_if(np.zeros(50, np.float32), "nonzero").size == 0


def test_run_length_encode_and_reduce_by_key(rng):
    for n in (1, 2049, 5000):
        k = np.repeat(rng.integers(0, 6, n), rng.integers(1, 4, n))[:n].astype(np.int16)
        heads = np.concatenate([[True], k[1:] != k[:-1]])
        starts = np.nonzero(heads)[0]
        counts = np.diff(np.concatenate([starts, [n]]))
        u, c = prim.run_length_encode(k)
        np.testing.assert_array_equal(u.get(), k[starts])
        np.testing.assert_array_equal(c.get(), counts)
        v = rng.standard_normal(n)
        uk, red = prim.reduce_by_key(k, v, "sum")
        np.testing.assert_array_equal(uk.get(), k[starts])
        np.testing.assert_allclose(red.get(), np.add.reduceat(v, starts), rtol=1e-12, atol=1e-12)
        _, mx = prim.reduce_by_key(k, v, "max")
        np.testing.assert_array_equal(mx.get(), np.maximum.reduceat(v, starts))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint64"])
def test_histogram_even_matches_numpy_inside_the_range(rng, dtype):
    x = (rng.standard_normal(5000) * 40).astype(dtype)
    got = prim.histogram_even(x, 17, -50, 60).get()
    inside = x[(x >= -50) & (x < 60)]
    want = np.histogram(inside.astype(np.float64), 17, (-50, 60))[0]
    np.testing.assert_array_equal(got, want)


def test_sort_and_select_reject_bad_input_before_launching():
    with oxicuda.trace() as t:
        with pytest.raises(ValueError, match="end_bit"):
            prim.radix_sort(np.zeros(4, np.uint8), end_bit=9)
        with pytest.raises(ValueError, match="must match"):
            prim.radix_sort(np.zeros(4, np.uint32), np.zeros(5, np.int32))
        with pytest.raises(TypeError, match="16 bytes"):
            prim.radix_sort(np.zeros(4, np.uint32), np.zeros(4, np.complex128))
        with pytest.raises(TypeError, match="complex64"):
            prim.radix_sort(np.zeros(4, np.complex64))
        with pytest.raises(ValueError, match="algo='fast'"):
            prim.radix_sort(np.zeros(4, np.uint32), algo="fast")
        with pytest.raises(ValueError, match="must match"):
            prim.select_flagged(np.zeros(4), np.zeros(3, bool))
        with pytest.raises(ValueError, match="pred='bigger'"):
            prim.select_if(np.zeros(4), "bigger")
        with pytest.raises(ValueError, match="lower"):
            prim.histogram_even(np.zeros(4), 3, 1.0, 1.0)
    assert t.launches == []


def test_radix_sort_carries_one_and_two_byte_values_through_argsort(rng):
    k = rng.integers(0, 40, 2100).astype(np.int16)
    v = rng.integers(0, 255, 2100).astype(np.uint8)
    with oxicuda.trace() as t:
        sk, sv = prim.radix_sort(k, v, descending=True)
    assert "prim_gather" in [r.spec.family for r in t.launches]
    order = np.lexsort((np.arange(k.size), -k.astype(np.int64)))
    np.testing.assert_array_equal(sk.get(), k[order])
    np.testing.assert_array_equal(sv.get(), v[order])
