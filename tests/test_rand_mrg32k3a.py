"""rand_mrg32k3a on the live backend: L'Ecuyer's published MRG32k3a values (seed 0 is cuRAND's
"original published" state, all 12345) from the device, and cuRAND's documented host ordering
(value n from subsequence n mod 4096, 2^76 apart) bit for bit against the numpy oracle for raw,
float and double uniforms at unaligned offsets, with a second call continuing the first."""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R

import oxicuda
from oxicuda.cuda import curand
from oxicuda.rand import default_rng
from oxicuda.rand.generator import Engine
from oxicuda.rand.kernels.mrg32k3a import Mrg32k3aSpec
from oxicuda.rand.mrg32k3a_tables import host_tables

#: L'Ecuyer (1999), MRG32k3a with all six seeds 12345: the first five uniforms
PUBLISHED = (0.1270111501, 0.3185275653, 0.3091860155, 0.8258468509, 0.2216299306)


def test_seed_zero_subsequence_zero_is_lecuyers_published_sequence():
    assert np.allclose(R.mrg_uniform_f64(R.mrg_values(0, 0, 0, 5)), PUBLISHED, atol=5e-11)
    # on the device: subsequence 0 is output 0, 4096, 8192, ... of the host ordering
    out = oxicuda.asarray(np.zeros(4 * 4096 + 1, np.float64))
    Engine("mrg32k3a", 0, ordering=103).fill("uniform_f64", out.ptr, 4 * 4096 + 1, 0.0, 1.0)
    got = out.get()[::4096]
    assert np.allclose(got, PUBLISHED, atol=5e-11)


def test_jump_tables_are_exact_matrix_powers():
    tables = host_tables()
    a1 = tuple(tuple(int(v) for v in row) for row in tables[10, :9].reshape(3, 3))
    assert a1 == R.mrg_matrix_power(R.MRG_A1, 1 << 10, R.MRG_M1)
    a2 = tuple(tuple(int(v) for v in row) for row in tables[64 + 3, 9:].reshape(3, 3))
    assert a2 == R.mrg_matrix_power(R.MRG_A2, 1 << (76 + 3), R.MRG_M2)


def test_raw_float_double_are_the_documented_interleaved_stream():
    seed, offset = 1234, 4097
    gen = curand.createGenerator(curand.CURAND_RNG_PSEUDO_MRG32K3A)
    curand.setPseudoRandomGeneratorSeed(gen, seed)
    curand.setGeneratorOrdering(gen, curand.CURAND_ORDERING_PSEUDO_LEGACY)
    curand.setGeneratorOffset(gen, offset)
    raw = oxicuda.asarray(np.zeros(1003, np.uint32))
    with oxicuda.trace() as t:
        curand.generate(gen, raw.ptr, 1001)
    assert [r.spec.stage for r in t.launches] == ["init", "generate"]
    assert all(isinstance(r.spec, Mrg32k3aSpec) for r in t.launches)
    f32 = oxicuda.asarray(np.full(77, np.nan, np.float32))
    f64 = oxicuda.asarray(np.full(33, np.nan, np.float64))
    curand.generateUniform(gen, f32.ptr, 77)
    curand.generateUniformDouble(gen, f64.ptr, 33)
    curand.destroyGenerator(gen)
    r = R.mrg_interleaved(seed, offset, 1001 + 77 + 33)
    np.testing.assert_array_equal(raw.get()[:1001], R.mrg_raw(r[:1001]))
    assert not raw.get()[1001:].any()
    np.testing.assert_array_equal(f32.get(), R.mrg_uniform_f32(r[1001:1078]))
    np.testing.assert_array_equal(f64.get(), R.mrg_uniform_f64(r[1078:]))


def test_orderings_whose_stream_is_not_reproduced_raise_before_any_launch():
    """cuRAND's PSEUDO_DEFAULT (the generator's initial ordering) and BEST orderings of MRG32k3a
    differ from LEGACY after value 4095; rather than other bits, generation raises."""
    gen = curand.createGenerator(curand.CURAND_RNG_PSEUDO_MRG32K3A)
    out = oxicuda.asarray(np.zeros(8, np.uint32))
    try:
        for ordering in (None, curand.CURAND_ORDERING_PSEUDO_BEST, curand.CURAND_ORDERING_PSEUDO_DEFAULT):
            if ordering is not None:
                curand.setGeneratorOrdering(gen, ordering)
            with oxicuda.trace() as t, pytest.raises(NotImplementedError, match="PSEUDO_LEGACY"):
                curand.generate(gen, out.ptr, 8)
            assert not t.launches and not out.get().any()
        curand.setGeneratorOrdering(gen, curand.CURAND_ORDERING_PSEUDO_LEGACY)
        curand.generate(gen, out.ptr, 8)
        np.testing.assert_array_equal(out.get(), R.mrg_raw(R.mrg_interleaved(0, 0, 8)))
    finally:
        curand.destroyGenerator(gen)
    # the numpy-shaped generator gives the legacy stream
    rng = default_rng(99, generator="mrg32k3a")
    np.testing.assert_array_equal(rng.random(5).get(), R.mrg_uniform_f64(R.mrg_interleaved(99, 0, 5)))
