"""rand_sobol on the live backend: Sobol32/Sobol64 points in cuRAND's quasi layout (n/d points of
each dimension in turn, the offset skipping points) bit for bit against the Gray-code oracle,
for 1, 3 and 8 dimensions, offsets that cross 32-point steps; the direction vectors follow the
Joe-Kuo recurrence (dimension 2 is the classic 1, 3, 5, 15, ... of Sobol); bad input."""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R

import oxicuda
from oxicuda.cuda import curand
from oxicuda.rand.kernels.sobol import SobolSpec
from oxicuda.rand.sobol_tables import MAX_DIMENSIONS, direction_vectors


def test_direction_vectors_follow_the_joe_kuo_recurrence():
    v = direction_vectors(32)
    assert [int(x) >> 28 for x in v[1][:4]] == [0x8, 0xC, 0xA, 0xF]      # m = 1, 3, 5, 15
    assert all(int(v[0][k]) == 1 << (31 - k) for k in range(32))
    assert np.array_equal(direction_vectors(64)[:, :32] >> np.uint64(32), v.astype(np.uint64))


@pytest.mark.parametrize("rng,call,dtype,bits", [
    (curand.CURAND_RNG_QUASI_SOBOL32, "generate", np.uint32, 32),
    (curand.CURAND_RNG_QUASI_SOBOL32, "generateUniform", np.float32, 32),
    (curand.CURAND_RNG_QUASI_SOBOL32, "generateUniformDouble", np.float64, 32),
    (curand.CURAND_RNG_QUASI_SOBOL64, "generateLongLong", np.uint64, 64),
    (curand.CURAND_RNG_QUASI_SOBOL64, "generateUniformDouble", np.float64, 64),
])
def test_points_are_the_gray_code_sobol_sequence_in_curands_layout(rng, call, dtype, bits):
    conv = {"generate": lambda x: x, "generateLongLong": lambda x: x, "generateUniform": R.uniform_f32,
            "generateUniformDouble": R.uniform_f64 if bits == 32 else
            (lambda x: (x >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 + 2.0 ** -54)}[call]
    for dims, offset, npd in ((1, 0, 1000), (8, 5, 77), (3, (1 << 20) + 3, 130)):
        g = curand.createGenerator(rng)
        curand.setQuasiRandomGeneratorDimensions(g, dims)
        curand.setGeneratorOffset(g, offset)
        out = oxicuda.asarray(np.zeros(dims * npd + 1, dtype))
        with oxicuda.trace() as t:
            getattr(curand, call)(g, out.ptr, dims * npd)
        assert len(t.launches) == 1 and isinstance(t.launches[0].spec, SobolSpec)
        curand.destroyGenerator(g)
        got = out.get()
        want = conv(R.sobol_points(direction_vectors(bits, dims), offset, npd)).reshape(-1)
        np.testing.assert_array_equal(got[:-1], want)
        assert got[-1] == 0


def test_second_call_continues_at_the_next_point():
    g = curand.createGenerator(curand.CURAND_RNG_QUASI_SOBOL32)
    curand.setQuasiRandomGeneratorDimensions(g, 2)
    a = oxicuda.asarray(np.zeros(20, np.uint32))
    b = oxicuda.asarray(np.zeros(30, np.uint32))
    curand.generate(g, a.ptr, 20)
    curand.generate(g, b.ptr, 30)
    curand.destroyGenerator(g)
    v = direction_vectors(32, 2)
    np.testing.assert_array_equal(a.get(), R.sobol_points(v, 0, 10).reshape(-1))
    np.testing.assert_array_equal(b.get(), R.sobol_points(v, 10, 15).reshape(-1))


def test_quasi_bad_input_gives_curands_status():
    g = curand.createGenerator(curand.CURAND_RNG_QUASI_SOBOL32)
    out = oxicuda.asarray(np.zeros(8, np.uint32))
    try:
        for dims, status in ((0, 104), (20001, 104)):
            with pytest.raises(curand.CURANDError) as e:
                curand.setQuasiRandomGeneratorDimensions(g, dims)
            assert e.value.status == status
        with pytest.raises(NotImplementedError, match=f"1..{MAX_DIMENSIONS}"):
            curand.setQuasiRandomGeneratorDimensions(g, MAX_DIMENSIONS + 1)
        curand.setQuasiRandomGeneratorDimensions(g, 3)
        with pytest.raises(curand.CURANDError, match="LENGTH_NOT_MULTIPLE"):
            curand.generate(g, out.ptr, 7)
        with pytest.raises(curand.CURANDError, match="TYPE_ERROR"):
            curand.setPseudoRandomGeneratorSeed(g, 5)
        with pytest.raises(curand.CURANDError, match="TYPE_ERROR"):
            curand.generateLongLong(g, out.ptr, 3)
        assert not out.get().any()
    finally:
        curand.destroyGenerator(g)
    g64 = curand.createGenerator(curand.CURAND_RNG_QUASI_SOBOL64)
    with pytest.raises(curand.CURANDError, match="TYPE_ERROR"):
        curand.generate(g64, out.ptr, 4)
    curand.destroyGenerator(g64)
