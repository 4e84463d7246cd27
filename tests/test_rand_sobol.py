"""rand_sobol on the live backend: Sobol32/Sobol64 points in cuRAND's quasi layout (n/d points of
each dimension in turn, the offset skipping points) bit for bit against the Gray-code oracle,
for 1, 3, 8 and 20000 dimensions, offsets that cross 32-point steps; the direction vectors follow
the Joe-Kuo recurrence (dimension 2 is the classic 1, 3, 5, 15, ... of Sobol) from the shipped
table of new-joe-kuo-6.21201 (checked against SciPy's copy); bad input."""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R

import oxicuda
from oxicuda.cuda import curand
from oxicuda.rand.kernels.sobol import SobolSpec
from oxicuda.rand.sobol_tables import MAX_DIMENSIONS, direction_vectors, joe_kuo_parameters


def test_direction_vectors_follow_the_joe_kuo_recurrence():
    v = direction_vectors(32)
    assert v.shape == (MAX_DIMENSIONS, 32) == (20000, 32)
    assert [int(x) >> 28 for x in v[1][:4]] == [0x8, 0xC, 0xA, 0xF]      # m = 1, 3, 5, 15
    assert all(int(v[0][k]) == 1 << (31 - k) for k in range(32))
    # the first 18 vectors of 64 bits are the 32-bit ones shifted (every m_k < 2^18)
    assert np.array_equal(direction_vectors(64)[:, :18] >> np.uint64(32), v[:, :18].astype(np.uint64))
    # dimension 10 (line "10 5 7 1 1 7 11 19"): v_5 = 19 << 27, what cuRAND's 10th dimension
    # needs at point 16 (H200: 0x28000000 = v_4 ^ v_5 with v_4 = 11 << 28)
    assert int(v[9][3]) == 11 << 28 and int(v[9][4]) == 19 << 27


def _scalar_recurrence(s: int, a: int, m: list[int], bits: int) -> list[int]:
    v = [0] * (bits + 1)
    for k in range(1, bits + 1):
        if k <= s:
            v[k] = m[k - 1] << (bits - k)
        else:
            x = v[k - s] ^ (v[k - s] >> s)
            for j in range(1, s):
                if (a >> (s - 1 - j)) & 1:
                    x ^= v[k - j]
            v[k] = x
    return v[1:]


@pytest.mark.parametrize("bits", (32, 64))
def test_vectorised_recurrence_matches_the_scalar_one_on_random_dimensions(bits):
    s, a, m = joe_kuo_parameters()
    v = direction_vectors(bits)
    rng = np.random.default_rng(17)
    for d in [1, 2, 9, 19999, *rng.integers(1, 20000, 40)]:
        want = _scalar_recurrence(int(s[d]), int(a[d]), [int(x) for x in m[d]], bits)
        assert [int(x) for x in v[d]] == want, d


def test_joe_kuo_table_is_scipys_copy_of_new_joe_kuo_6_21201():
    """Published lines (spot checks) and, when SciPy is importable, every line of SciPy's copy."""
    s, a, m = joe_kuo_parameters()
    for d, line in ((10, (5, 7, 1, 1, 7, 11, 19)), (14, (6, 1, 1, 3, 3, 9, 7, 49)),
                    (299, (11, 787, 1, 3, 7, 11, 31, 43, 13, 209, 27, 1017, 501)),
                    (162, (11, 2, 1, 3, 3, 15, 27, 49, 113, 123, 113, 67, 469))):
        assert (int(s[d - 1]), int(a[d - 1]), *[int(x) for x in m[d - 1, :s[d - 1]]]) == line
    try:
        import scipy.stats
    except ImportError:
        return
    from pathlib import Path

    ref = np.load(Path(scipy.stats.__file__).with_name("_sobol_direction_numbers.npz"))
    poly, vinit = ref["poly"][:MAX_DIMENSIONS], ref["vinit"][:MAX_DIMENSIONS]
    assert np.array_equal(poly[1:], (1 << s[1:]) | (a[1:] << 1) | 1)
    assert np.array_equal(vinit[1:, :18], m[1:])


@pytest.mark.parametrize("rng,call,dtype,bits", [
    (curand.CURAND_RNG_QUASI_SOBOL32, "generate", np.uint32, 32),
    (curand.CURAND_RNG_QUASI_SOBOL32, "generateUniform", np.float32, 32),
    (curand.CURAND_RNG_QUASI_SOBOL32, "generateUniformDouble", np.float64, 32),
    (curand.CURAND_RNG_QUASI_SOBOL64, "generateLongLong", np.uint64, 64),
    (curand.CURAND_RNG_QUASI_SOBOL64, "generateUniformDouble", np.float64, 64),
])
def test_points_are_the_gray_code_sobol_sequence_in_curands_layout(rng, call, dtype, bits):
    conv = {"generate": lambda x: x, "generateLongLong": lambda x: x, "generateUniform": R.uniform_f32,
            "generateUniformDouble": (lambda x: (x.astype(np.float64) + 1.0) * 2.0 ** -32) if bits == 32 else
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


@pytest.mark.parametrize("rng,bits,dims", [
    (curand.CURAND_RNG_QUASI_SOBOL32, 32, 300),
    (curand.CURAND_RNG_QUASI_SOBOL64, 64, 300),
    (curand.CURAND_RNG_QUASI_SOBOL32, 32, 20000),
])
def test_high_dimensions_take_their_joe_kuo_lines(rng, bits, dims):
    g = curand.createGenerator(rng)
    curand.setQuasiRandomGeneratorDimensions(g, dims)
    curand.setGeneratorOffset(g, 37)
    dt = np.uint32 if bits == 32 else np.uint64
    out = oxicuda.asarray(np.zeros(2 * dims, dt))
    (curand.generate if bits == 32 else curand.generateLongLong)(g, out.ptr, 2 * dims)
    curand.destroyGenerator(g)
    want = R.sobol_points(direction_vectors(bits, dims), 37, 2).reshape(-1)
    np.testing.assert_array_equal(out.get(), want)


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
