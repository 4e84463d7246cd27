"""The numpy-shaped surface (oxicuda.rand.default_rng): what each method computes (the oracle's
bits for uniform/integers/bits, the float64 reference for normals), size/dtype/out, seed and
offset control, a second call continuing the stream, and bad input raising before any launch
with nothing written."""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R

import oxicuda
from oxicuda.rand import default_rng


def test_random_float32_and_float64_are_curands_uniforms():
    rng = default_rng(1234)
    u32 = rng.random(1001, dtype=np.float32)
    np.testing.assert_array_equal(u32.get(), R.philox_distribution("uniform_f32", 1234, 0, 1001))
    u64 = rng.random((3, 5))
    assert u64.shape == (3, 5) and u64.dtype == np.float64
    np.testing.assert_array_equal(u64.get().ravel(), R.philox_distribution("uniform_f64_hq", 1234, 1001, 15))
    assert rng.offset == 1001 + 15


def test_two_calls_continue_the_stream_of_one():
    a, b = default_rng(77), default_rng(77)
    first = np.concatenate([a.bits(13).get(), a.bits(100).get()])
    np.testing.assert_array_equal(first, b.bits(113).get())


def test_uniform_normal_lognormal_apply_the_affine_map_on_the_device():
    rng = default_rng(9, generator="philox")
    x = rng.uniform(-2.0, 3.0, 64).get()
    np.testing.assert_allclose(x, R.philox_distribution("uniform_f64_hq", 9, 0, 64, -2.0, 5.0), rtol=1e-15, atol=1e-15)
    z = rng.normal(1.0, 2.0, 33, dtype=np.float32).get()
    np.testing.assert_allclose(z, R.philox_distribution("normal_f32", 9, 64, 33, 1.0, 2.0), atol=2e-5)
    ln = rng.lognormal(0.5, 0.25, 10).get()
    np.testing.assert_allclose(ln, R.philox_distribution("lognormal_f64", 9, 64 + 33, 10, 0.5, 0.25),
                               rtol=1e-14)
    s = rng.standard_normal(4).get()
    np.testing.assert_allclose(s, R.philox_distribution("normal_f64", 9, 64 + 33 + 10, 4), rtol=1e-13,
                               atol=1e-15)


def test_integers_cover_the_range_and_match_the_multiply_shift():
    rng = default_rng(5)
    x = rng.integers(-3, 4, size=4000).get()
    assert x.dtype == np.int64 and x.min() == -3 and x.max() == 3
    w = R.philox_distribution("raw32", 5, 0, 4000).astype(np.uint64)
    np.testing.assert_array_equal(x, -3 + ((w * np.uint64(7)) >> np.uint64(32)).astype(np.int64))
    y = rng.integers(10, size=7, dtype=np.int32, endpoint=True).get()
    assert y.dtype == np.int32 and 0 <= y.min() and y.max() <= 10


def test_out_is_filled_in_place_and_seed_offset_restart_the_stream():
    rng = default_rng(3)
    out = oxicuda.asarray(np.full(50, np.nan, np.float32))
    assert rng.random(dtype=np.float32, out=out) is out
    np.testing.assert_array_equal(out.get(), R.philox_distribution("uniform_f32", 3, 0, 50))
    rng.seed = 4
    assert rng.offset == 0
    rng.offset = 10
    np.testing.assert_array_equal(rng.bits(5).get(), R.philox_words(4, 10, 5))
    assert rng.random(0).size == 0


@pytest.mark.parametrize("call,exc,text", [
    (lambda r, o: r.random(5, dtype=np.int32), TypeError, "dtype"),
    (lambda r, o: r.normal(0.0, -1.0, 5), ValueError, "scale=-1.0"),
    (lambda r, o: r.normal(0.0, float("nan"), 5), ValueError, "finite"),
    (lambda r, o: r.lognormal(0.0, -2, 5), ValueError, "sigma=-2"),
    (lambda r, o: r.uniform("a", 1.0, 5), TypeError, "low='a'"),
    (lambda r, o: r.integers(5, 5), ValueError, "empty"),
    (lambda r, o: r.integers(0, 2 ** 33), ValueError, r"2\*\*32"),
    (lambda r, o: r.integers(0, 2 ** 31 + 5, dtype=np.int32), ValueError, "does not fit"),
    (lambda r, o: r.integers(0.5, 3), TypeError, "low=0.5"),
    (lambda r, o: r.random(7, dtype=np.float32, out=o), ValueError, "size=7"),
    (lambda r, o: r.random(dtype=np.float64, out=o), TypeError, "float32"),
    (lambda r, o: r.bits(3, dtype=np.float32), TypeError, "dtype"),
    (lambda r, o: r.random(-1), ValueError, "size=-1"),
    (lambda r, o: r.poisson(-1.0, 3), ValueError, "lam=-1.0"),
])
def test_bad_input_raises_before_anything_is_written(call, exc, text):
    rng = default_rng(1)
    out = oxicuda.asarray(np.full(6, np.nan, np.float32))
    with oxicuda.trace() as t, pytest.raises(exc, match=text):
        call(rng, out)
    assert t.launches == [] and np.all(np.isnan(out.get())) and rng.offset == 0


def test_bad_seed_offset_and_generator_are_rejected():
    with pytest.raises(ValueError, match="seed=-1"):
        default_rng(-1)
    with pytest.raises(ValueError, match="offset"):
        oxicuda.rand.Generator(1, offset=2 ** 64)
    with pytest.raises(ValueError, match="unknown"):
        default_rng(1, generator="lcg")


def test_package_root_lists_its_names():
    from oxicuda import rand

    assert "default_rng" in dir(rand) and rand.default_rng is default_rng
    with pytest.raises(AttributeError, match="no attribute"):
        rand.not_a_name  # noqa: B018
