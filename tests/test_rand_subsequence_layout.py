"""XORWOW and MRG32k3a normals in cuRAND's host layout, and subsequences carried between calls.

cuRAND's values below are from the H200 (cupy.cuda.curand, seed 1234, mean 0, stddev 1; MRG32k3a
under PSEUDO_LEGACY), the first two outputs of generateNormal / generateNormalDouble at offsets
0, 1 and 4097, as .diag/rand_normals_layout.sh printed them (/work/gpu-results/s7c4). They show
the layout: values 2i, 2i + 1 are one Box-Muller pair (sin, cos), pair i of a call comes from
subsequence (i mod 4096 + offset) mod 4096 standing at p0 (one word per value before the offset):
offset 1 starts at subsequence 1's first pair, offset 4097 at subsequence 1's pair from word 1.
The consecutive-call tests compare with rand_reference.SubsequenceHost (4096 states carried from
call to call, as cuRAND's host generator keeps them); outputs are poisoned first and the trace
shows our kernels ran.
"""

from __future__ import annotations

import numpy as np
import pytest
import rand_reference as R

import oxicuda
from oxicuda.rand.generator import Engine

#: (generator, double) -> {offset: cuRAND's first two values}
CURAND_H200 = {
    ("xorwow", False): {0: (0.7809736132621765, -1.8015779256820679),
                        1: (-0.2808487117290497, 0.5635464787483215),
                        4097: (-0.028876038268208504, -0.38990679383277893)},
    ("xorwow", True): {0: (0.3587397985244547, -1.239592503223552),
                       1: (-0.09149539977360861, -0.38011893868395424),
                       4097: (-1.0782113866649288, 0.4209979657342858)},
    ("mrg32k3a", False): {0: (-0.3606535494327545, -0.5912813544273376),
                          1: (-1.7185362577438354, -0.9016120433807373),
                          4097: (-0.6858488321304321, -0.5668580532073975)},
    ("mrg32k3a", True): {0: (-0.36065364611174483, -0.591281403741744),
                         1: (-1.7185360616531142, -0.9016126252167348),
                         4097: (-0.685848920409296, -0.5668581847479603)},
}


def _fill(eng: Engine, dist: str, n: int, a=0.0, b=1.0) -> np.ndarray:
    dt = np.float64 if "f64" in dist else np.float32
    arr = oxicuda.asarray(np.full(n + 2, np.nan, dt))
    with oxicuda.trace() as tr:
        eng.fill(dist, arr.ptr, n, a, b)
    assert [r.spec.stage for r in tr.launches] == ["init", "generate"]
    assert tr.launches[1].spec.dist == dist
    got = arr.get()
    assert np.isnan(got[n:]).all()
    return got[:n]


@pytest.mark.parametrize("generator,double", list(CURAND_H200))
def test_normals_give_curands_values_at_offsets_0_1_4097(generator, double):
    dist = "normal_f64" if double else "normal_f32"
    for offset, want in CURAND_H200[(generator, double)].items():
        got = _fill(Engine(generator, 1234, offset, ordering=103), dist, 2)
        # doubles: within a few ulp; floats: cuRAND's bits on a GPU (tests/test_rand_gpu.py), a few
        # e-7 off on the emulator, whose sinf/logf are not the GPU's (another layout is O(1) off)
        tol = 1e-14 if double else 2e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"offset {offset}")
        # the same values from the reference layout
        ref = (R.xorwow_normals if generator == "xorwow" else R.mrg_normals)(1234, offset, 2, double)
        np.testing.assert_allclose(ref, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("generator", ["xorwow", "mrg32k3a"])
def test_a_subsequence_pair_lands_on_consecutive_values_across_the_rotation(generator):
    """Offset 4095 + 4096: pair 0 is subsequence 4095's (from word 1), pair 1 subsequence 0's
    (from word 2), pair 4096 subsequence 4095's second (word 3); an odd length writes half a pair."""
    seed, offset, n = 77, 8191, 8195
    got = _fill(Engine(generator, seed, offset, ordering=103), "normal_f32", n, 0.5, 2.0)
    want = (R.xorwow_normals if generator == "xorwow" else R.mrg_normals)(seed, offset, n, False, 0.5, 2.0)
    assert np.abs(got - want).max() < 1e-5
    t, start, _ = R.subsequence_pair_layout(offset, n, 2)
    assert (t[0], start[0], t[2], start[2], t[8192], start[8192]) == (4095, 1, 0, 2, 4095, 3)


@pytest.mark.parametrize("generator", ["xorwow", "mrg32k3a"])
def test_consecutive_normal_calls_carry_the_subsequences_on(generator):
    """Offset 3, three calls of 5002 float normals (tests/test_rand_gpu.py's case): each call's
    pairs move their subsequences on by two words, not one per value of the offset."""
    eng = Engine(generator, 99, 3, ordering=103)
    host = R.SubsequenceHost(generator, 99, 3)
    for call in range(3):
        got = _fill(eng, "normal_f32", 5002)
        want = host.normals(5002, False)
        assert np.abs(got - want).max() < 1e-5, f"call {call}"
        assert eng.offset == host.offset
    assert eng.extra_words is not None
    np.testing.assert_array_equal(eng.extra_words, host.words - R.values_before(eng.offset, np.arange(4096)))
    eng.offset = eng.offset            # setting the offset sets the subsequences up afresh
    assert eng.extra_words is None


@pytest.mark.slow
def test_consecutive_xorwow_double_calls_carry_the_subsequences_on():
    """Offset 4099, three calls of 5001 hq doubles (the GPU test that failed on the H200 when each
    call started every subsequence at one word per value of its offset): two words a value from
    where the last call left the subsequence."""
    eng = Engine("xorwow", 99, 4099)
    host = R.SubsequenceHost("xorwow", 99, 4099)
    for call in range(3):
        got = _fill(eng, "uniform_f64_hq", 5001, 0.0, 1.0)
        np.testing.assert_array_equal(got, host.xorwow_hq_doubles(5001), err_msg=f"call {call}")
    # one call from a fresh generator at the same offset is the single-call rule
    fresh = _fill(Engine("xorwow", 99, 4099 + 5001), "uniform_f64_hq", 5001, 0.0, 1.0)
    np.testing.assert_array_equal(fresh, R.xorwow_hq_doubles(99, 4099 + 5001, 5001))


def test_raw_words_after_a_normal_call_continue_each_subsequence():
    """A normal call at offset 0 of 2 values takes words 0, 1 of subsequence 0 only: the next raw
    call (offset 2) gives subsequence 2's word 0, ..., subsequence 0's word 2 at value 4094 and
    subsequence 1's word 0 at value 4095."""
    eng = Engine("xorwow", 5, 0)
    _fill(eng, "normal_f32", 2)
    assert list(eng.extra_words[:3]) == [1, -1, 0]
    arr = oxicuda.asarray(np.zeros(4096, np.uint32))
    eng.fill("raw32", arr.ptr, 4096)
    got = arr.get()
    assert got[0] == R.xorwow_subsequence_words(5, 2, 0, 1)[0]
    assert got[4094] == R.xorwow_subsequence_words(5, 0, 2, 1)[0]
    assert got[4095] == R.xorwow_subsequence_words(5, 1, 0, 1)[0]
    assert eng.extra_words is not None and eng.offset == 4098
