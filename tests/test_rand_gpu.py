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


def test_mrg32k3a_default_ordering_raises_rather_than_giving_other_bits(cp):
    """cuRAND's PSEUDO_DEFAULT MRG32k3a stream is not reproduced (.diag/rand_mrg_default.sh
    searches for its layout): ours raises, nothing is written."""
    g = ox.createGenerator(MRG32K3A)
    buf = cp.zeros(4096, dtype=np.uint32)
    try:
        with pytest.raises(NotImplementedError, match="PSEUDO_LEGACY"):
            ox.generate(g, buf.data.ptr, 4096)
    finally:
        ox.destroyGenerator(g)
    assert not buf.any()


FAR_OFFSETS = (262141, (1 << 20) + 5, 3 * (1 << 18) + 4097, (1 << 33) + 11)


@pytest.mark.parametrize("offset", FAR_OFFSETS)
@pytest.mark.parametrize("rng_type,n", [(PHILOX, (1 << 19) + 3), (XORWOW, 3 * 4096 + 7)])
@pytest.mark.parametrize("call,dtype", [("generate", np.uint32), ("generateUniformDouble", np.float64)])
def test_far_offsets_give_curands_bits(cp, rng_type, n, offset, call, dtype):
    """Offsets past a subsequence's first unit (Philox: 2^18 values; XORWOW: 4096): the offset
    skips one word (block) per earlier value (unit) of each subsequence, doubles take two."""
    ours, theirs = _both(cp, rng_type, 1234, offset, call, n, dtype)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, f"{bad.size} of {n} differ, first at {bad[0]}: {ours[bad[0]]!r} vs {theirs[bad[0]]!r}"


@pytest.mark.parametrize("offset", [4099, 258001])
@pytest.mark.parametrize("rng_type", [PHILOX, XORWOW])
def test_consecutive_double_calls_continue_as_curands(cp, rng_type, offset):
    """The offset advances by the values written (not the words) after a double call (258001:
    the calls cross Philox's first 2^18 values, where two-block units start at r0 + 2 (r - r0))."""
    ours, theirs = _both(cp, rng_type, 99, offset, "generateUniformDouble", 5001, np.float64, calls=3)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, f"{bad.size} of {ours.size} differ, first at {bad[0]}"


@pytest.mark.parametrize("seed,offset", [(1234, 0), (5, 4097), (7, (1 << 20) + 6)])
def test_philox_double_normals_pairing_matches_curand_at_far_offsets(cp, seed, offset):
    """Double normals take two blocks a unit as the hq doubles do: the same place in cuRAND's
    stream (values within a few ulp: libdevice's log and sincospi are not reproduced)."""
    ours, theirs = _both(cp, PHILOX, seed, offset, "generateNormalDouble", (1 << 19) + 2, np.float64, 0.0, 1.0)
    ulp = np.abs(ours.view(np.int64) - theirs.view(np.int64))
    assert ulp.max() <= 8, f"max {ulp.max()} ulp at {np.argmax(ulp)}"


@pytest.mark.parametrize("rng_type,ordering", [(XORWOW, None), (100, None), (MRG32K3A, 103)])
@pytest.mark.parametrize("seed,offset,n", [(1234, 0, 2), (0, 1, 1002), (5, 4097, 3 * 4096 + 6),
                                           ((1 << 40) + 5, 6, (1 << 20) + 2), (7, 8195, 8194)])
@pytest.mark.parametrize("call,args", [("generateNormal", (0.0, 1.0)), ("generateNormal", (2.0, 3.0)),
                                       ("generateLogNormal", (0.5, 0.75))])
def test_subsequence_float_normals_are_curands_bits(cp, rng_type, ordering, seed, offset, n, call, args):
    """XORWOW and MRG32k3a float normals: cuRAND's Box-Muller in its pair layout (values 2i,
    2i + 1 one pair; .diag/rand2_check.sh weighs the candidate layouts when this fails)."""
    ours, theirs = _both(cp, rng_type, seed, offset, call, n, np.float32, *args, ordering=ordering)
    same = ours.view(np.uint32) == theirs.view(np.uint32)
    ulp = np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64))
    assert same.all(), f"{(~same).sum()} of {n} differ (max {ulp.max()} ulp), first at {np.argmin(same)}"


@pytest.mark.parametrize("rng_type,ordering", [(XORWOW, None), (MRG32K3A, 103)])
@pytest.mark.parametrize("offset", (0, 1, 4097))
@pytest.mark.parametrize("call,args", [("generateNormalDouble", (0.0, 1.0)),
                                       ("generateLogNormalDouble", (0.5, 0.75))])
def test_subsequence_double_normals_within_a_few_ulp_of_curand(cp, rng_type, ordering, offset, call, args):
    ours, theirs = _both(cp, rng_type, 1234, offset, call, (1 << 18) + 2, np.float64, *args, ordering=ordering)
    ulp = np.abs(ours.view(np.int64) - theirs.view(np.int64))
    print(f"{call}: {np.mean(ulp == 0):.4%} bit-exact, max {ulp.max()} ulp")
    assert ulp.max() <= 8, f"max {ulp.max()} ulp at {np.argmax(ulp)}"


@pytest.mark.parametrize("rng_type,ordering", [(XORWOW, None), (MRG32K3A, 103)])
def test_subsequence_normal_calls_continue_as_curands(cp, rng_type, ordering):
    """Each subsequence carries on from where the last call's pairs left it (cuRAND's kept
    states; .diag/rand2_check.sh part 2 compares with starting afresh at each call's offset)."""
    ours, theirs = _both(cp, rng_type, 99, 3, "generateNormal", 5002, np.float32, 0.0, 1.0,
                         ordering=ordering, calls=3)
    np.testing.assert_array_equal(ours.view(np.uint32), theirs.view(np.uint32))


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


@pytest.mark.parametrize("dims", (11, 300, 20000))
@pytest.mark.parametrize("rng_type,call,dtype", [(201, "generate", np.uint32),
                                                 (201, "generateUniformDouble", np.float64),
                                                 (203, "generateLongLong", np.uint64)])
def test_sobol_high_dimensions_are_curands(cp, dims, rng_type, call, dtype):
    """Every Joe-Kuo line up to cuRAND's 20000 dimensions."""
    n = dims * 37
    ours, theirs = _quasi_both(cp, rng_type, dims, 3, call, n, dtype)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, f"{bad.size} of {n} differ, first at {bad[0]} (dimension {bad[0] // 37 + 1})"


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


@pytest.mark.parametrize("rng_type,ordering", [(XORWOW, None), (MRG32K3A, 103)])
def test_mixed_consecutive_calls_continue_as_curands(cp, rng_type, ordering):
    """raw, normal, double, double normal, raw from offset 1: every call continues each
    subsequence where the last left it (floats and raw bit for bit, doubles within 8 ulp)."""
    from cupy.cuda import curand as vendor

    calls = [("generate", 4099, (), np.uint32), ("generateNormal", 5002, (0.0, 1.0), np.float32),
             ("generateUniformDouble", 5001, (), np.float64),
             ("generateNormalDouble", 4100, (1.0, 2.0), np.float64), ("generate", 4097, (), np.uint32)]
    outs = []
    for lib in (ox, vendor):
        g = lib.createGenerator(rng_type)
        try:
            lib.setPseudoRandomGeneratorSeed(g, 31)
            if ordering is not None:
                lib.setGeneratorOrdering(g, ordering)
            lib.setGeneratorOffset(g, 1)
            parts = []
            for call, n, args, dtype in calls:
                buf = cp.full(n, np.nan if np.dtype(dtype).kind == "f" else 0, dtype=dtype)
                getattr(lib, call)(g, buf.data.ptr, n, *args)
                parts.append(cp.asnumpy(buf))
            outs.append(parts)
        finally:
            lib.destroyGenerator(g)
    for (call, n, args, dtype), ours, theirs in zip(calls, *outs):
        if np.dtype(dtype) == np.float64:
            ulp = np.abs(ours.view(np.int64) - theirs.view(np.int64))
            assert ulp.max() <= 8, f"{call}: max {ulp.max()} ulp at {np.argmax(ulp)}"
        else:
            bad = np.flatnonzero(ours.view(np.uint32) != theirs.view(np.uint32))
            assert bad.size == 0, f"{call}: {bad.size} of {n} differ, first at {bad[0]}"
