"""oxicuda.cuda.curand, the cupy.cuda.curand surface: a CuPy script with only its imports
changed computes the oracle's values; every bad input raises CURANDError with cuRAND's status
name before any launch, and nothing is written."""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R
import rand_script

import oxicuda
from oxicuda.cuda import curand


def test_cupy_script_with_swapped_imports_computes_curands_philox_stream():
    run = rand_script.load(rand_script.SWAPPED)["run"]
    seed, offset, n = 1234, 5, 1001
    got = run(seed, offset, n)
    np.testing.assert_array_equal(got["raw"], R.philox_words(seed, offset, n))
    np.testing.assert_array_equal(got["uniform"], R.philox_distribution("uniform_f32", seed, offset + n, n))
    np.testing.assert_array_equal(got["uniform_double"],
                                  R.philox_distribution("uniform_f64_hq", seed, offset + 2 * n, n))
    want = R.philox_distribution("normal_f32", seed, offset + 3 * n, n - 1)
    np.testing.assert_allclose(got["normal"], want, atol=1e-5)


def test_constants_and_status_names_are_curands():
    assert curand.CURAND_RNG_PSEUDO_PHILOX4_32_10 == 161 and curand.CURAND_RNG_PSEUDO_XORWOW == 101
    assert curand.CURAND_ORDERING_PSEUDO_LEGACY == 103 and curand.CURAND_ORDERING_QUASI_DEFAULT == 201
    assert curand.STATUS[105] == "CURAND_STATUS_LENGTH_NOT_MULTIPLE"
    err = curand.CURANDError(curand.CURAND_STATUS_TYPE_ERROR)
    assert err.status == 103 and str(err) == "CURAND_STATUS_TYPE_ERROR"
    assert isinstance(curand.getVersion(), int)


@pytest.fixture
def gen():
    g = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    curand.setPseudoRandomGeneratorSeed(g, 42)
    yield g
    try:
        curand.destroyGenerator(g)
    except curand.CURANDError:
        pass


def _status(fn):
    with pytest.raises(curand.CURANDError) as info:
        fn()
    return curand.STATUS[info.value.status]


def test_bad_input_gives_curands_status_before_any_launch(gen):
    f32 = oxicuda.asarray(np.full(8, np.nan, np.float32))
    f64 = oxicuda.asarray(np.full(8, np.nan, np.float64))
    u32 = oxicuda.asarray(np.zeros(8, np.uint32))
    with oxicuda.trace() as t:
        assert _status(lambda: curand.generateNormal(gen, f32.ptr, 7, 0.0, 1.0)) == "CURAND_STATUS_LENGTH_NOT_MULTIPLE"
        assert _status(lambda: curand.generateLogNormalDouble(gen, f64.ptr, 3, 0.0, 1.0)) == \
            "CURAND_STATUS_LENGTH_NOT_MULTIPLE"
        assert _status(lambda: curand.generateUniformDouble(gen, f64.ptr + 4, 2)) == \
            "CURAND_STATUS_LENGTH_NOT_MULTIPLE"
        assert _status(lambda: curand.generateNormal(gen, f32.ptr, 4, 0.0, -1.0)) == "CURAND_STATUS_OUT_OF_RANGE"
        assert _status(lambda: curand.generateNormal(gen, f32.ptr, 4, 0.0, float("nan"))) == \
            "CURAND_STATUS_OUT_OF_RANGE"
        assert _status(lambda: curand.generatePoisson(gen, u32.ptr, 4, -1.0)) == "CURAND_STATUS_OUT_OF_RANGE"
        assert _status(lambda: curand.generatePoisson(gen, u32.ptr, 4, float("nan"))) == "CURAND_STATUS_OUT_OF_RANGE"
        assert _status(lambda: curand.setQuasiRandomGeneratorDimensions(gen, 3)) == "CURAND_STATUS_TYPE_ERROR"
        assert _status(lambda: curand.generateLongLong(gen, u32.ptr, 4)) == "CURAND_STATUS_TYPE_ERROR"
        assert _status(lambda: curand.generateUniform(gen, u32, 4)) == "CURAND_STATUS_TYPE_ERROR"
        assert _status(lambda: curand.createGenerator(77)) == "CURAND_STATUS_TYPE_ERROR"
        assert _status(lambda: curand.setGeneratorOrdering(gen, curand.CURAND_ORDERING_QUASI_DEFAULT)) == \
            "CURAND_STATUS_OUT_OF_RANGE"
        curand.destroyGenerator(gen)
        assert _status(lambda: curand.generate(gen, u32.ptr, 4)) == "CURAND_STATUS_NOT_INITIALIZED"
        assert _status(lambda: curand.destroyGenerator(gen)) == "CURAND_STATUS_NOT_INITIALIZED"
    assert t.launches == []
    assert np.all(np.isnan(f32.get())) and np.all(np.isnan(f64.get())) and not u32.get().any()


def test_offset_and_stream_calls_shape_the_next_generate(gen):
    out = oxicuda.asarray(np.zeros(9, np.uint32))
    curand.setGeneratorOffset(gen, 123)
    curand.setStream(gen, 0)
    curand.generate(gen, out, 9)
    np.testing.assert_array_equal(out.get(), R.philox_words(42, 123, 9))
    curand.setPseudoRandomGeneratorSeed(gen, 43)
    curand.generate(gen, out.ptr, 9)
    np.testing.assert_array_equal(out.get(), R.philox_words(43, 0, 9))


def test_generators_not_reproduced_say_why_when_created():
    from oxicuda.cuda import curand as c

    for rng, why in ((c.CURAND_RNG_PSEUDO_MT19937, "MT19937 stream layout"),
                     (c.CURAND_RNG_PSEUDO_MTGP32, "MTGP32 layout"),
                     (c.CURAND_RNG_QUASI_SCRAMBLED_SOBOL32, "curandGetScrambleConstants32"),
                     (c.CURAND_RNG_QUASI_SCRAMBLED_SOBOL64, "curandGetScrambleConstants64")):
        with pytest.raises(NotImplementedError, match=why):
            c.createGenerator(rng)
