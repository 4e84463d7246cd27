"""oxicuda.fft complex transforms on the live backend against numpy's float64 FFT: every length
1..64, powers of two to 4096, 3/5/7 products, primes (Bluestein), lengths past one CTA
(four-step), batches, norms, n padding/cropping, strided and in-place calls."""

from __future__ import annotations

import numpy as np
import pytest
from fft_checks import check, poisoned, random

import oxicuda
import oxicuda.fft as F

C = (np.complex64, np.complex128)


def ref_fft(x, inverse=False, **kw):
    f = np.fft.ifft if inverse else np.fft.fft
    return f(x.astype(np.complex128), **kw)


@pytest.mark.parametrize("n", range(1, 65))
def test_fft_matches_numpy_for_every_length_up_to_64(n, rng):
    x = random(rng, (3, n), np.complex64)
    out = poisoned((3, n), np.complex64)
    F.fft(oxicuda.asarray(x), out=out)
    check(out.get(), ref_fft(x), [n], np.complex64)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 11, 13, 30, 49, 60, 63, 64])
def test_ifft_complex128_matches_numpy(n, rng):
    x = random(rng, (3, n), np.complex128)
    out = poisoned((3, n), np.complex128)
    F.ifft(oxicuda.asarray(x), out=out)
    check(out.get(), ref_fft(x, True), [n], np.complex128)


@pytest.mark.parametrize("k", [7, 8, 9, 10, pytest.param(11, marks=pytest.mark.slow),
                               pytest.param(12, marks=pytest.mark.slow)])
@pytest.mark.parametrize("dtype", C)
def test_powers_of_two(k, dtype, rng):
    n = 1 << k
    x = random(rng, (1, n), dtype)
    check(F.fft(x).get(), ref_fft(x), [n], dtype)


@pytest.mark.parametrize("n", [15, 21, 35, 105, 225, 343, 441, 1000])
def test_products_of_3_5_7(n, rng):
    x = random(rng, (3, n), np.complex64)
    check(F.fft(x).get(), ref_fft(x), [n], np.complex64)


@pytest.mark.parametrize("n", [7, 11, 97, 257])
@pytest.mark.parametrize("dtype", C)
def test_primes_through_bluestein(n, dtype, rng):
    x = random(rng, (3, n), dtype)
    check(F.fft(x).get(), ref_fft(x), [n], dtype)
    check(F.ifft(x).get(), ref_fft(x, True), [n], dtype)


@pytest.mark.slow
def test_prime_4099_through_four_step_bluestein(rng):
    x = random(rng, (1, 4099), np.complex128)
    check(F.fft(x).get(), ref_fft(x), [4099], np.complex128)


def test_four_step_past_one_cta(rng):
    # complex128 transforms above 4096 points split into two passes (5000 = 50 x 100)
    x = random(rng, (2, 5000), np.complex128)
    check(F.fft(x).get(), ref_fft(x), [5000], np.complex128)
    check(F.ifft(x, norm="ortho").get(), ref_fft(x, True, norm="ortho"), [5000], np.complex128)


def test_four_step_on_an_inner_axis(rng):
    x = random(rng, (4200, 2), np.complex128)  # 4200 = 60 x 70: staged column and row passes
    check(F.fft(x, axis=0).get(), ref_fft(x, axis=0), [4200], np.complex128)


@pytest.mark.slow
def test_four_step_complex64_and_bluestein_through_four_step(rng):
    x = random(rng, (9000, 2), np.complex64)  # 9000 = 90 x 100 past complex64's 8192 on sm_86
    check(F.fft(x, axis=0).get(), ref_fft(x, axis=0), [9000], np.complex64)
    z = random(rng, (1, 2053), np.complex128)  # prime: Bluestein over m = 8192 = 64 x 128
    check(F.ifft(z).get(), ref_fft(z, True), [2053], np.complex128)


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("inverse", [False, True])
def test_every_norm(norm, inverse, rng):
    x = random(rng, (3, 24), np.complex128)
    f = F.ifft if inverse else F.fft
    check(f(x, norm=norm).get(), ref_fft(x, inverse, norm=norm), [24], np.complex128)


@pytest.mark.parametrize("n", [5, 16, 40])
def test_n_pads_and_crops(n, rng):
    x = random(rng, (3, 20), np.complex64)
    check(F.fft(x, n=n).get(), ref_fft(x, n=n), [n], np.complex64)
    check(F.ifft(x, n=n, axis=0).get(), ref_fft(x, True, n=n, axis=0), [n], np.complex64)


@pytest.mark.parametrize("dtype,result", [(np.float32, np.complex64), (np.float64, np.complex128),
                                          (np.complex64, np.complex64), (np.complex128, np.complex128)])
def test_result_dtypes_follow_numpy_precision(dtype, result, rng):
    x = random(rng, (2, 12), dtype)
    y = F.fft(x)
    assert y.dtype == np.dtype(result)
    check(y.get(), ref_fft(x), [12], result)


def test_batch_1_and_3_on_a_middle_axis(rng):
    for batch in (1, 3):
        x = random(rng, (batch, 18, 5), np.complex128)
        check(F.fft(x, axis=1).get(), ref_fft(x, axis=1), [18], np.complex128)


def test_strided_and_reversed_inputs(rng):
    x = random(rng, (6, 40), np.complex64)
    d = oxicuda.asarray(x)
    check(F.fft(d[::2, 1::3]).get(), ref_fft(x[::2, 1::3]), [13], np.complex64)
    check(F.fft(d[:, ::-1]).get(), ref_fft(x[:, ::-1]), [40], np.complex64)
    check(F.fft(d.T, axis=0).get(), ref_fft(x.T, axis=0), [40], np.complex64)


def test_in_place_out_is_the_input(rng):
    x = random(rng, (3, 32), np.complex128)
    d = oxicuda.asarray(x)
    y = F.fft(d, out=d)
    assert y is d
    check(d.get(), ref_fft(x), [32], np.complex128)
