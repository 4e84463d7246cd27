"""rand_philox on the live backend (the emulator in CI): the Random123 known-answer vectors from
the inline rounds, every distribution bit for bit (raw, uniform, bounded) or to its float64
reference (normal, log-normal) against the numpy oracle, outputs poisoned first and the words
past the end untouched, moments and a Kolmogorov-Smirnov test per distribution, and the trace."""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R

import oxicuda
from oxicuda.ptx import cache, registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.rand.generator import Engine
from oxicuda.rand.kernels.philox import DISTS, OUTPUT_TYPE, PhiloxSpec
from oxicuda.rand.philox_ptx import philox4x32_10

NP = {"u32": np.uint32, "u64": np.uint64, "f32": np.float32, "f64": np.float64, "s32": np.int32,
      "s64": np.int64}
#: Random123's kat_vectors for philox4x32_10: (ctr, key, expected)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def _kat_kernel():
    kb = KernelBuilder("philox_kat", arch="sm_86")
    inp, out = kb.param_ptr("inp"), kb.param_ptr("out")
    base = kb.mul(kb.tid(), 6)
    words = [kb.ld("global", "u32", kb.addr(inp, kb.add(base, j), 4)) for j in range(6)]
    res = philox4x32_10(kb, words[:4], words[4:])
    obase = kb.mul(kb.tid(), 4)
    for j in range(4):
        kb.st("global", kb.addr(out, kb.add(obase, j), 4), res[j])
    return oxicuda.driver.Module(kb.ptx()).get_function("philox_kat")


def test_inline_rounds_give_the_random123_known_answers():
    inp = np.array([list(c) + list(k) for c, k, _ in KAT], np.uint32)
    out = oxicuda.asarray(np.zeros((len(KAT), 4), np.uint32))
    _kat_kernel()(1, len(KAT), [oxicuda.asarray(inp), out])
    assert out.get().tolist() == [list(e) for _, _, e in KAT]
    # the oracle agrees (it is what the distribution tests compare with)
    ref = R.philox4x32_10(inp[:, :4], inp[:, 4:])
    assert ref.tolist() == [list(e) for _, _, e in KAT]


def _run(dist, seed, offset, n, a=None, b=None, pad=3, shift=0):
    """Fill n values after a NaN/0x7f poison; returns (values, the poison after them intact)."""
    dt = NP[OUTPUT_TYPE[dist]]
    poison = np.full(n + pad + shift, np.nan if dt in (np.float32, np.float64) else 0x7F, dt)
    arr = oxicuda.asarray(poison)
    eng = Engine("philox", seed, offset)
    if a is None and OUTPUT_TYPE[dist][0] in "fs":
        a, b = (0.0, 1.0) if OUTPUT_TYPE[dist][0] == "f" else (0, 2 ** 31)
    eng.fill(dist, arr.ptr + shift * dt().itemsize, n, a, b)
    got = arr.get()
    untouched = np.concatenate([got[:shift], got[shift + n:]])
    intact = np.all(np.isnan(untouched)) if dt in (np.float32, np.float64) else np.all(untouched == 0x7F)
    return got[shift:shift + n], bool(intact), eng


EXACT = ("raw32", "raw64", "uniform_f32", "uniform_f64", "uniform_f64_hq")


@pytest.mark.parametrize("dist", EXACT)
@pytest.mark.parametrize("seed,offset,n", [(1234, 0, 1), (0, 5, 1003), ((1 << 40) + 5, 4097, 777),
                                          (2 ** 64 - 1, 3, 64)])
def test_bit_exact_distributions_match_the_oracle(dist, seed, offset, n):
    got, intact, eng = _run(dist, seed, offset, n)
    want = R.philox_distribution(dist, seed, offset, n)
    np.testing.assert_array_equal(got, want.astype(got.dtype))
    assert intact
    assert eng.offset == offset + n


#: cuRAND's generateUniformDouble values at unit 65536 (t = 0, r = 1, r0 = 1: the double of block
#: r0 + 2 (r - r0) = 1, not 2), H200 call s7c1, offset 5, value 262139
CURAND_DOUBLE_AT_UNIT_65536 = {0: 0.3620914882398166, 1234: 0.11227557330034327,
                               (1 << 40) + 5: 0.8087915226222706}


@pytest.mark.parametrize("seed", sorted(CURAND_DOUBLE_AT_UNIT_65536))
def test_two_block_units_start_where_the_offset_leaves_their_subsequence(seed):
    """The offset skips one block of a subsequence per earlier unit, whatever the distribution;
    from there a double unit takes two blocks. The offset 262141 = 4 * 65536 - 3 leaves r0 = 1
    in every subsequence t < 65535, as offset 5 does in t = 0: cuRAND's value at unit 65536 is
    the same for both."""
    got, intact, eng = _run("uniform_f64_hq", seed, 262141, 11)
    assert got[3] == CURAND_DOUBLE_AT_UNIT_65536[seed]
    np.testing.assert_array_equal(got, R.philox_distribution("uniform_f64_hq", seed, 262141, 11))
    assert intact and eng.offset == 262141 + 11
    # the same rule under the other two-block distributions, and far offsets (r0 = 5, 6)
    for dist in ("raw64", "uniform_f64_hq"):
        for offset in (5 * 262144 + 7, 6 * 262144 - 2):
            got, intact, _ = _run(dist, seed, offset, 13)
            np.testing.assert_array_equal(got, R.philox_distribution(dist, seed, offset, 13))
            assert intact
    got, _, _ = _run("normal_f64", seed, 262141, 10, 0.5, 2.0)
    want = R.philox_distribution("normal_f64", seed, 262141, 10, 0.5, 2.0)
    assert np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))) < 1e-14


def test_double_units_at_offset_5_differ_from_doubled_offsets_exactly_where_curand_did():
    """The whole H200 pattern on the emulator: at offset 5, units (t = 0, r >= 1) take block
    r0 + 2 (r - r0); the 4 values before 2^18 - 1 (here the last unit of the call) show it."""
    got, _, _ = _run("uniform_f64_hq", 0, 5, 262143, pad=0)
    assert got[262139] == CURAND_DOUBLE_AT_UNIT_65536[0]
    np.testing.assert_array_equal(got[-64:], R.philox_distribution("uniform_f64_hq", 0, 5, 262143)[-64:])


@pytest.mark.parametrize("shift", [1, 2, 3])
def test_unaligned_output_pointers_take_the_scalar_stores(shift):
    got, intact, _ = _run("uniform_f32", 99, 2, 37, shift=shift)
    np.testing.assert_array_equal(got, R.philox_distribution("uniform_f32", 99, 2, 37))
    assert intact


@pytest.mark.parametrize("dist,tol", [("normal_f32", 3e-6), ("lognormal_f32", 3e-6),
                                      ("normal_f64", 1e-14), ("lognormal_f64", 1e-14)])
@pytest.mark.parametrize("offset,n", [(0, 1000), (3, 37), (6, 2)])
def test_normal_families_match_the_float64_box_muller(dist, tol, offset, n):
    a, b = 0.25, 1.5
    got, intact, eng = _run(dist, 4321, offset, n, a, b)
    want = R.philox_distribution(dist, 4321, offset, n, a, b)
    scale = np.maximum(1.0, np.abs(want))
    assert np.max(np.abs(got - want) / scale) < tol
    assert intact
    assert eng.offset == offset + n


def test_bounded_integers_are_low_plus_the_high_word_of_the_product():
    got, intact, _ = _run("bounded_s64", 7, 1, 501, -1000, 12345)
    w = R.philox_words(7, 1, 501).astype(np.uint64)
    np.testing.assert_array_equal(got, -1000 + ((w * np.uint64(12345)) >> np.uint64(32)).astype(np.int64))
    got32, _, _ = _run("bounded_s32", 7, 1, 33, -5, 10)
    np.testing.assert_array_equal(got32, -5 + ((w[:33] * np.uint64(10)) >> np.uint64(32)).astype(np.int32))
    assert intact


def test_moments_and_ks_of_every_float_distribution():
    stats = pytest.importorskip("scipy.stats")
    n = 1 << 14
    cases = {"uniform_f32": stats.uniform(0, 1).cdf, "uniform_f64_hq": stats.uniform(0, 1).cdf,
             "normal_f32": stats.norm.cdf, "normal_f64": stats.norm.cdf,
             "lognormal_f32": stats.lognorm(1.0).cdf, "lognormal_f64": stats.lognorm(1.0).cdf}
    for dist, cdf in cases.items():
        got, _, _ = _run(dist, 2024, 0, n)
        got = got.astype(np.float64)
        assert stats.kstest(got, cdf).pvalue > 1e-4, dist
        if dist.startswith("normal"):
            assert abs(got.mean()) < 5 / np.sqrt(n) and abs(got.var() - 1) < 0.05, dist
        if dist.startswith("uniform"):
            assert got.min() > 0 and got.max() <= 1 and abs(got.mean() - 0.5) < 0.02, dist


def test_trace_shows_one_rand_philox_launch_per_call():
    eng = Engine("philox", 5)
    arr = oxicuda.empty(1000, np.float32)
    with oxicuda.trace() as t:
        eng.fill("normal_f32", arr.ptr, 1000, 0.0, 1.0)
    assert len(t.launches) == 1
    spec = t.launches[0].spec
    assert isinstance(spec, PhiloxSpec) and spec.dist == "normal_f32" and spec.aligned


def test_every_registered_configuration_is_reachable_and_every_reachable_one_registered():
    registered = {s for s in registry.configurations("sm_86", "rand_philox")}
    assert {s.dist for s in registered} == set(DISTS)
    reached = set()
    for dist in DISTS:
        for offset in (0, 1):
            for shift in (0, 1):
                dt = NP[OUTPUT_TYPE[dist]]
                arr = oxicuda.empty(8 + 1, dt)
                a, b = ((0.0, 1.0) if OUTPUT_TYPE[dist][0] == "f" else (0, 9)) \
                    if OUTPUT_TYPE[dist][0] in "fs" else (None, None)
                with oxicuda.trace() as t:
                    Engine("philox", 1, offset).fill(dist, arr.ptr + shift * dt().itemsize, 8, a, b)
                reached.add(t.launches[0].spec)
    arch = next(iter(reached)).arch
    assert reached == set(registry.configurations(arch, "rand_philox"))


def test_generated_ptx_is_ascii_and_every_configuration_builds():
    for spec in registry.configurations("sm_90", "rand_philox"):
        text = registry.generate_ptx(spec)
        assert "mul.hi.u32" in text
    assert cache is not None
