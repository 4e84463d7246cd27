"""GPU checks of oxicuda.rand against the real cuRAND (``cupy.cuda.curand``, same process): the
same seed, offset and length give the same bits, for several seeds, offsets (block-aligned and
not), odd lengths and lengths crossing 4096-word boundaries; consecutive calls continue the
stream as cuRAND's do; the CuPy script gives the same values with only its imports changed.

Run on the GPU machine:  python3 -m pytest -q tests/test_rand_gpu.py -rA
"""

from __future__ import annotations

import numpy as np
import pytest
import rand_script

from oxicuda.cuda import curand as ox

pytestmark = pytest.mark.gpu

SEEDS = (0, 1234, (1 << 40) + 5)
OFFSETS = (0, 1, 5, 4097)
LENGTHS = (1, 1003, 3 * 4096 + 7, (1 << 20) + 3)


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _both(cp, rng_type, seed, offset, call, n, dtype, *args, ordering=None, calls=1):
    """(ours, cuRAND's) outputs of ``calls`` consecutive ``call``s of n values each."""
    from cupy.cuda import curand as vendor

    outs = []
    for lib in (ox, vendor):
        g = lib.createGenerator(rng_type)
        try:
            lib.setPseudoRandomGeneratorSeed(g, seed)
            if ordering is not None:
                lib.setGeneratorOrdering(g, ordering)
            if offset:
                lib.setGeneratorOffset(g, offset)
            parts = []
            for _ in range(calls):
                buf = cp.full(n, np.nan if np.dtype(dtype).kind == "f" else 0, dtype=dtype)
                getattr(lib, call)(g, buf.data.ptr, n, *args)
                parts.append(cp.asnumpy(buf))
            outs.append(np.concatenate(parts))
        finally:
            lib.destroyGenerator(g)
    return outs


PHILOX = 161


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("call,dtype", [("generate", np.uint32), ("generateUniform", np.float32),
                                        ("generateUniformDouble", np.float64)])
def test_philox_raw_and_uniform_are_curands_bits(cp, seed, offset, n, call, dtype):
    ours, theirs = _both(cp, PHILOX, seed, offset, call, n, dtype)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, f"{bad.size} of {n} differ, first at {bad[0]}: {ours[bad[0]]!r} vs {theirs[bad[0]]!r}"


@pytest.mark.parametrize("ordering", [101, 103])
def test_philox_orderings_default_and_legacy_match(cp, ordering):
    ours, theirs = _both(cp, PHILOX, 1234, 0, "generate", 20011, np.uint32, ordering=ordering)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", (0, 1, 6))
@pytest.mark.parametrize("n", (2, 1002, 3 * 4096 + 6, 1 << 20))
@pytest.mark.parametrize("call,dtype,args", [("generateNormal", np.float32, (0.0, 1.0)),
                                             ("generateNormal", np.float32, (2.0, 3.0)),
                                             ("generateLogNormal", np.float32, (0.5, 0.75))])
def test_philox_float_normals_are_curands_bits(cp, seed, offset, n, call, dtype, args):
    ours, theirs = _both(cp, PHILOX, seed, offset, call, n, dtype, *args)
    same = ours.view(np.uint32) == theirs.view(np.uint32)
    ulp = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64))
    assert same.all(), f"{(~same).sum()} of {n} differ (max {ulp.max()} ulp), first at {np.argmin(same)}"


@pytest.mark.parametrize("call,args", [("generateNormalDouble", (0.0, 1.0)),
                                       ("generateLogNormalDouble", (0.5, 0.75))])
def test_philox_double_normals_within_a_few_ulp_of_curand(cp, call, args):
    ours, theirs = _both(cp, PHILOX, 1234, 0, call, 1 << 20, np.float64, *args)
    ulp = np.abs(ours.view(np.int64) - theirs.view(np.int64))
    exact = float(np.mean(ulp == 0))
    print(f"{call}: {exact:.4%} bit-exact, max {ulp.max()} ulp")
    assert ulp.max() <= 8


@pytest.mark.parametrize("call,dtype,n", [("generate", np.uint32, 1001), ("generateUniformDouble", np.float64, 1001),
                                          ("generateNormal", np.float32, 1000)])
def test_consecutive_calls_continue_as_curands(cp, call, dtype, n):
    args = (0.0, 1.0) if "Normal" in call else ()
    ours, theirs = _both(cp, PHILOX, 99, 3, call, n, dtype, *args, calls=3)
    np.testing.assert_array_equal(ours, theirs)


def test_cupy_script_unchanged_and_swapped_give_the_same_values(cp):
    vendor = rand_script.load(rand_script.SCRIPT)["run"](1234, 5, 10007)
    ours = rand_script.load(rand_script.SWAPPED)["run"](1234, 5, 10007)
    for key in vendor:
        np.testing.assert_array_equal(ours[key], vendor[key], err_msg=key)


def test_large_philox_uniform_matches_curand(cp):
    ours, theirs = _both(cp, PHILOX, 7, 0, "generateUniform", 1 << 26, np.float32)
    np.testing.assert_array_equal(ours, theirs)


XORWOW = 101


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("call,dtype", [("generate", np.uint32), ("generateUniform", np.float32),
                                        ("generateUniformDouble", np.float64)])
@pytest.mark.parametrize("rng_type", [XORWOW, 100])
def test_xorwow_raw_and_uniform_are_curands_bits(cp, rng_type, seed, offset, n, call, dtype):
    ours, theirs = _both(cp, rng_type, seed, offset, call, n, dtype)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, f"{bad.size} of {n} differ, first at {bad[0]}: {ours[bad[0]]!r} vs {theirs[bad[0]]!r}"


def test_xorwow_consecutive_calls_continue_as_curands(cp):
    ours, theirs = _both(cp, XORWOW, 99, 3, "generate", 5001, np.uint32, calls=3)
    np.testing.assert_array_equal(ours, theirs)


def test_large_xorwow_uniform_matches_curand(cp):
    ours, theirs = _both(cp, XORWOW, 7, 0, "generateUniform", 1 << 26, np.float32)
    np.testing.assert_array_equal(ours, theirs)


MRG32K3A = 121


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("call,dtype", [("generate", np.uint32), ("generateUniform", np.float32),
                                        ("generateUniformDouble", np.float64)])
def test_mrg32k3a_raw_and_uniform_are_curands_bits(cp, seed, offset, n, call, dtype):
    """Under CURAND_ORDERING_PSEUDO_LEGACY (4096 subsequences: verified by the H200 probe)."""
    ours, theirs = _both(cp, MRG32K3A, seed, offset, call, n, dtype, ordering=103)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, f"{bad.size} of {n} differ, first at {bad[0]}: {ours[bad[0]]!r} vs {theirs[bad[0]]!r}"


def test_mrg32k3a_consecutive_calls_continue_as_curands(cp):
    ours, theirs = _both(cp, MRG32K3A, 99, 3, "generateUniformDouble", 5001, np.float64, ordering=103,
                         calls=3)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.xfail(reason="cuRAND's PSEUDO_DEFAULT MRG32k3a ordering uses more than 4096 subsequences "
                          "(H200 probe, call 2); oxicuda gives the legacy ordering", strict=False)
def test_mrg32k3a_default_ordering_subsequence_count(cp):
    """Diagnostic: prints which subsequence count T reproduces cuRAND's default-ordering values
    at a few indices (value n = position n div T of subsequence n mod T)."""
    import rand_reference as R

    _, theirs = _both(cp, MRG32K3A, 1234, 0, "generateUniformDouble", 1 << 18, np.float64)
    found = []
    for t_count in (4096, 8192, 16384, 20480, 32768, 40960, 65536, 81920, 131072):
        idx = [n for n in (4096, 8191, 16383, 40959, 65535, 81919, 131071, 262143)]
        ok = all(R.mrg_uniform_f64(R.mrg_values(1234, n % t_count, n // t_count, 1))[0] == theirs[n]
                 for n in idx)
        if ok:
            found.append(t_count)
    print(f"MRG32k3a default ordering: subsequence counts consistent with cuRAND: {found}")
    ours, _ = _both(cp, MRG32K3A, 1234, 0, "generateUniformDouble", 1 << 18, np.float64)
    np.testing.assert_array_equal(ours, theirs)


def _quasi_both(cp, rng_type, dims, offset, call, n, dtype):
    from cupy.cuda import curand as vendor

    from oxicuda.rand.bench_cases import vendor_set_dimensions

    outs = []
    for lib in (ox, vendor):
        g = lib.createGenerator(rng_type)
        try:
            if lib is ox:
                lib.setQuasiRandomGeneratorDimensions(g, dims)
            else:
                vendor_set_dimensions(g, dims)
            if offset:
                lib.setGeneratorOffset(g, offset)
            buf = cp.zeros(n, dtype=dtype)
            getattr(lib, call)(g, buf.data.ptr, n)
            outs.append(cp.asnumpy(buf))
        finally:
            lib.destroyGenerator(g)
    return outs


@pytest.mark.parametrize("dims", (1, 3, 8, 10))
@pytest.mark.parametrize("offset", (0, 1, 5, 4097))
@pytest.mark.parametrize("rng_type,call,dtype", [(201, "generate", np.uint32), (201, "generateUniform", np.float32),
                                                 (201, "generateUniformDouble", np.float64),
                                                 (203, "generateLongLong", np.uint64),
                                                 (203, "generateUniformDouble", np.float64)])
def test_sobol_points_are_curands(cp, dims, offset, rng_type, call, dtype):
    n = dims * 10007
    ours, theirs = _quasi_both(cp, rng_type, dims, offset, call, n, dtype)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, f"{bad.size} of {n} differ, first at {bad[0]}: {ours[bad[0]]!r} vs {theirs[bad[0]]!r}"


@pytest.mark.parametrize("lam", (0.5, 4.0, 30.0, 1000.0, 1e5))
def test_poisson_matches_curands_distribution(cp, lam):
    """Statistically (not bitwise): both samples of 2^20 counts have the same mean and variance
    within sampling error, and a two-sample KS test does not separate them."""
    stats = pytest.importorskip("scipy.stats")
    ours, theirs = _both(cp, PHILOX, 1234, 0, "generatePoisson", 1 << 20, np.uint32, lam)
    se = np.sqrt(lam / ours.size)
    assert abs(ours.mean() - lam) < 6 * se and abs(theirs.mean() - lam) < 6 * se
    assert abs(ours.var() / theirs.var() - 1) < 0.02
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-4
