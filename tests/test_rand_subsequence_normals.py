"""Normal and log-normal values of XORWOW and MRG32k3a on the live backend: cuRAND's Box-Muller
transforms (XORWOW: ``_curand_box_muller`` on two words, ``_curand_box_muller_double`` on four;
MRG32k3a: ``curand_box_muller_mrg(_double)`` on two draws) in cuRAND's layout (values 2i, 2i + 1
one pair; rand_reference.subsequence_pair_layout), against the float64 oracle at an odd offset
past the first 4096 values; outputs poisoned first, the values past the end untouched; moments
and a KS test; the trace shows the init and generate kernels. (tests/test_rand_gpu.py compares
with cuRAND on the GPU; test_rand_subsequence_layout.py pins cuRAND's H200 values.)"""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R

import oxicuda
from oxicuda.cuda import curand
from oxicuda.rand.generator import Engine

REFERENCE = {"xorwow": R.xorwow_normals, "mrg32k3a": R.mrg_normals}
TOLERANCE = {"f32": 4e-6, "f64": 1e-14}


@pytest.mark.parametrize("generator", ["xorwow", "mrg32k3a"])
def test_normals_and_lognormals_follow_the_pair_layout(generator):
    seed, offset, n = 1234, 4099, 4106
    for dist in ("normal_f32", "lognormal_f32", "normal_f64", "lognormal_f64"):
        kind = dist[-3:]
        dt = np.float32 if kind == "f32" else np.float64
        arr = oxicuda.asarray(np.full(n + 3, np.nan, dt))
        eng = Engine(generator, seed, offset, ordering=103)
        with oxicuda.trace() as t:
            eng.fill(dist, arr.ptr, n, 0.25, 0.75)
        assert [r.spec.stage for r in t.launches] == ["init", "generate"]
        assert t.launches[1].spec.dist == dist
        got = arr.get()
        want = REFERENCE[generator](seed, offset, n, kind == "f64", 0.25, 0.75)
        if dist.startswith("lognormal"):
            want = np.exp(want)
        err = np.abs(got[:n] - want) / np.maximum(1.0, np.abs(want))
        assert err.max() < TOLERANCE[kind] * (4 if dist.startswith("lognormal") else 1), dist
        assert np.isnan(got[n:]).all() and eng.offset == offset + n


def test_xorwow_normals_through_curand_and_their_distribution():
    stats = pytest.importorskip("scipy.stats")
    g = curand.createGenerator(curand.CURAND_RNG_PSEUDO_XORWOW)
    curand.setPseudoRandomGeneratorSeed(g, 77)
    out = oxicuda.asarray(np.full(1 << 14, np.nan, np.float32))
    curand.generateNormal(g, out.ptr, 1 << 14, 0.0, 1.0)
    with pytest.raises(curand.CURANDError, match="LENGTH_NOT_MULTIPLE"):
        curand.generateNormal(g, out.ptr, 7, 0.0, 1.0)
    curand.destroyGenerator(g)
    z = out.get().astype(np.float64)
    np.testing.assert_allclose(z[:64], R.xorwow_normals(77, 0, 64, False), rtol=0, atol=4e-6)
    assert abs(z.mean()) < 5 / np.sqrt(z.size) and abs(z.var() - 1) < 0.05
    assert stats.kstest(z, stats.norm.cdf).pvalue > 1e-4
