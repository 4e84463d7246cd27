"""rand_xorwow on the live backend: cuRAND's documented XORWOW host ordering (word n from
subsequence n mod 4096, position n div 4096) bit for bit against the numpy oracle (which jumps
with its own GF(2) matrix powers), across a 4096-word boundary, at an unaligned offset, with a
second call continuing the first; the trace shows the init and generate kernels. (About 7 s a
call on the emulator: 4096 seeded states, each jumped by matrix tables.)"""

from __future__ import annotations

import numpy as np
import rand_reference as R

import oxicuda
from oxicuda.rand import default_rng
from oxicuda.rand.generator import Engine
from oxicuda.rand.kernels.xorwow import XorwowSpec
from oxicuda.rand.xorwow_tables import host_tables, step_matrix


def test_window_tables_reproduce_the_oracles_matrix_powers():
    tables = host_tables()
    assert tables.shape == (76, 40 * 16 * 5)
    assert np.array_equal(step_matrix().astype(bool), R.xorwow_step_matrix())
    # the 4-bit window of nibble 3, value 0b0101 of A^(2^5) is the XOR of rows 12 and 14
    rows = R.xorwow_power(5)
    want = R._words((rows[12] ^ rows[14])[None, :].astype(np.int64))[0]
    np.testing.assert_array_equal(tables[5].reshape(40, 16, 5)[3, 5], want)


def test_raw_then_uniform_are_the_documented_interleaved_stream():
    seed, offset, n = 1234, 3, 2 * 4096 + 5
    eng = Engine("xorwow", seed, offset)
    raw = oxicuda.asarray(np.zeros(n + 2, np.uint32))
    with oxicuda.trace() as t:
        eng.fill("raw32", raw.ptr, n)
    assert [r.spec.stage for r in t.launches] == ["init", "generate"]
    assert all(isinstance(r.spec, XorwowSpec) for r in t.launches)
    got = raw.get()
    np.testing.assert_array_equal(got[:n], R.xorwow_interleaved(seed, offset, n))
    assert not got[n:].any() and eng.offset == offset + n
    uni = oxicuda.asarray(np.full(101, np.nan, np.float32))
    eng.fill("uniform_f32", uni.ptr, 100, 0.0, 1.0)
    words = R.xorwow_interleaved(seed, offset + n, 100)
    np.testing.assert_array_equal(uni.get()[:100], R.uniform_f32(words))
    assert np.isnan(uni.get()[100])


def test_double_uniforms_take_two_words_of_their_subsequence():
    """As cuRAND's generateUniformDouble does for XORWOW (measured on the H200): the offset skips
    one word per earlier value of each subsequence, then each double takes two words."""
    rng = default_rng((1 << 40) + 5, generator="xorwow")
    rng.offset = 4097
    got = rng.random(33).get()
    np.testing.assert_array_equal(got, R.xorwow_hq_doubles((1 << 40) + 5, 4097, 33))
    assert rng.offset == 4097 + 33
    # cuRAND's own values (H200, s7c1): seed 0 at offset 1, value 4095 is the double of words
    # 1 and 2 of subsequence 0 (not 2 and 3); at offset 4097, value 0 is words 1, 2 of subsequence 1
    rng = default_rng(0, generator="xorwow")
    rng.offset = 1
    got = rng.random(4096).get()
    assert got[4095] == 0.517012790997496
    np.testing.assert_array_equal(got, R.xorwow_hq_doubles(0, 1, 4096))
    rng.offset = 4097
    assert rng.random(1).get()[0] == 0.3334639800773778
