"""rand_poisson on the live backend: Poisson counts from both samplers (Knuth below lambda 12,
PTRS above) pass a chi-square test against scipy's Poisson pmf and have its mean and variance;
one stream per output, so two calls equal one; the trace shows the sampler dispatch chose."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import curand
from oxicuda.rand import default_rng
from oxicuda.rand.kernels.poisson import PoissonSpec


def _chi_square_pvalue(x: np.ndarray, lam: float) -> float:
    stats = pytest.importorskip("scipy.stats")
    lo, hi = int(stats.poisson.ppf(1e-4, lam)), int(stats.poisson.ppf(1 - 1e-4, lam))
    edges = np.unique(np.linspace(lo, hi + 1, min(30, hi - lo + 2)).astype(int))
    obs = np.histogram(x, bins=np.concatenate([[-np.inf], edges[1:-1], [np.inf]]))[0]
    p = np.diff(np.concatenate([[0.0], stats.poisson.cdf(edges[1:-1] - 1, lam), [1.0]]))
    return float(stats.chisquare(obs, p * x.size).pvalue)


@pytest.mark.parametrize("lam,method", [(0.5, "knuth"), (4.0, "knuth"), (12.0, "ptrs"), (30.0, "ptrs"),
                                        (2500.0, "ptrs")])
def test_counts_follow_the_poisson_pmf(lam, method):
    rng = default_rng(7)
    with oxicuda.trace() as t:
        x = rng.poisson(lam, 8192).get()
    spec = t.launches[0].spec
    assert isinstance(spec, PoissonSpec) and spec.method == method
    assert x.dtype == np.int64 and x.min() >= 0
    assert _chi_square_pvalue(x.astype(np.float64), lam) > 1e-4
    assert abs(x.mean() - lam) < 5 * np.sqrt(lam / x.size)
    assert abs(x.var() / lam - 1) < 0.1


def test_two_calls_equal_one_and_zero_lambda_gives_zeros():
    a, b = default_rng(3), default_rng(3)
    first = np.concatenate([a.poisson(6.0, 100).get(), a.poisson(6.0, 57).get()])
    np.testing.assert_array_equal(first, b.poisson(6.0, 157).get())
    assert not default_rng(1).poisson(0.0, 10).get().any()


def test_curand_surface_writes_uint32_counts():
    g = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    curand.setPseudoRandomGeneratorSeed(g, 11)
    out = oxicuda.asarray(np.full(1001, 0xFFFFFFFF, np.uint32))
    curand.generatePoisson(g, out.ptr, 1000, 3.0)
    curand.destroyGenerator(g)
    x = out.get()
    assert x[-1] == 0xFFFFFFFF and x[:-1].max() < 30 and abs(x[:-1].mean() - 3.0) < 0.3
