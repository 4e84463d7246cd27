"""oxicuda.fft real and N-D transforms against numpy: rfft/irfft/hfft/ihfft (even and odd
lengths, n, axes, strides), fft2/ifft2/fftn/ifftn/rfft2/irfft2/rfftn/irfftn over 1-3 axes in any
order, and fftshift/ifftshift/fftfreq/rfftfreq."""

from __future__ import annotations

import numpy as np
import pytest
from fft_checks import check, poisoned, random

import oxicuda
import oxicuda.fft as F

NORMS = [None, "ortho", "forward"]


@pytest.mark.parametrize("n", [1, 2, 3, 8, 9, 15, 16, 22, 97, 128])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rfft_and_irfft_match_numpy(n, dtype, rng):
    x = random(rng, (3, n), dtype)
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    out = poisoned((3, n // 2 + 1), cdt)
    F.rfft(x, out=out)
    check(out.get(), np.fft.rfft(x.astype(np.float64)), [n], dtype)
    spec = random(rng, (3, n // 2 + 1), cdt)
    back = poisoned((3, n), dtype)
    F.irfft(spec, n=n, out=back)
    check(back.get(), np.fft.irfft(spec.astype(np.complex128), n=n), [n], dtype)


@pytest.mark.parametrize("norm", NORMS)
def test_hfft_and_ihfft_every_norm(norm, rng):
    x = random(rng, (2, 9), np.complex128)
    check(F.hfft(x, norm=norm).get(), np.fft.hfft(x, norm=norm), [16], np.float64)
    check(F.hfft(x, n=11, norm=norm).get(), np.fft.hfft(x, n=11, norm=norm), [11], np.float64)
    r = random(rng, (2, 10), np.float64)
    check(F.ihfft(r, norm=norm).get(), np.fft.ihfft(r, norm=norm), [10], np.float64)
    check(F.ihfft(r, n=7, norm=norm).get(), np.fft.ihfft(r, n=7, norm=norm), [7], np.float64)


@pytest.mark.parametrize("norm", NORMS)
def test_real_transforms_on_other_axes_and_lengths(norm, rng):
    x = random(rng, (6, 5, 4), np.float64)
    check(F.rfft(x, axis=0, norm=norm).get(), np.fft.rfft(x, axis=0, norm=norm), [6], np.float64)
    check(F.rfft(x, n=7, axis=1, norm=norm).get(), np.fft.rfft(x, n=7, axis=1, norm=norm), [7], np.float64)
    X = np.fft.rfft(x, axis=0)
    check(F.irfft(X, axis=0, norm=norm).get(), np.fft.irfft(X, axis=0, norm=norm), [6], np.float64)
    check(F.irfft(X, n=3, axis=0, norm=norm).get(), np.fft.irfft(X, n=3, axis=0, norm=norm), [3], np.float64)


def test_real_transforms_of_strided_inputs(rng):
    x = random(rng, (4, 30), np.float32)
    d = oxicuda.asarray(x)
    check(F.rfft(d[:, ::3]).get(), np.fft.rfft(x[:, ::3].astype(np.float64)), [10], np.float32)
    check(F.rfft(d[::-1, 1:]).get(), np.fft.rfft(x[::-1, 1:].astype(np.float64)), [29], np.float32)
    X = random(rng, (4, 12), np.complex64)
    dx = oxicuda.asarray(X)
    check(F.irfft(dx[:, ::2]).get(), np.fft.irfft(X[:, ::2].astype(np.complex128)), [10], np.float32)


@pytest.mark.parametrize("axes", [None, (0,), (1, 2), (2, 0), (0, 1, 2), (-1, -3)])
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_nd_complex_over_any_axes(axes, norm, rng):
    x = random(rng, (4, 6, 5), np.complex128)
    check(F.fftn(x, axes=axes, norm=norm).get(), np.fft.fftn(x, axes=axes, norm=norm), [6, 6], np.complex128)
    check(F.ifftn(x, axes=axes, norm=norm).get(), np.fft.ifftn(x, axes=axes, norm=norm), [6, 6], np.complex128)


def test_nd_with_s_and_2d_forms(rng):
    x = random(rng, (3, 8, 6), np.complex64)
    ref = np.fft.fft2(x.astype(np.complex128), s=(5, 9))
    check(F.fft2(x, s=(5, 9)).get(), ref, [5, 9], np.complex64)
    check(F.ifft2(x).get(), np.fft.ifft2(x.astype(np.complex128)), [8, 6], np.complex64)
    check(F.fftn(x, s=(4, 4), axes=(0, 2)).get(), np.fft.fftn(x.astype(np.complex128), s=(4, 4), axes=(0, 2)),
          [4, 4], np.complex64)


@pytest.mark.parametrize("axes", [None, (0, 1), (2, 0), (1,)])
def test_rfftn_and_irfftn(axes, rng):
    x = random(rng, (4, 6, 10), np.float64)
    check(F.rfftn(x, axes=axes).get(), np.fft.rfftn(x, axes=axes), [10, 6], np.float64)
    X = np.fft.rfftn(x, axes=axes)
    check(F.irfftn(X, axes=axes).get(), np.fft.irfftn(X, axes=axes), [10, 6], np.float64)
    s = (3, 7) if axes is None or len(axes) == 2 else (7,)
    ax = axes if axes is not None else (1, 2)
    check(F.irfftn(X, s=s, axes=ax).get(), np.fft.irfftn(X, s=s, axes=ax), [7, 3], np.float64)


def test_rfft2_and_irfft2(rng):
    x = random(rng, (2, 12, 9), np.float32)
    ref = np.fft.rfft2(x.astype(np.float64))
    check(F.rfft2(x).get(), ref, [12, 9], np.float32)
    check(F.irfft2(ref.astype(np.complex64), s=(12, 9)).get(), np.fft.irfft2(ref, s=(12, 9)), [12, 9], np.float32)


@pytest.mark.parametrize("axes", [None, 0, (1, 2), -1])
def test_fftshift_and_ifftshift_on_the_device(axes, rng):
    x = random(rng, (3, 4, 5), np.complex64)
    d = oxicuda.asarray(x)
    assert np.array_equal(F.fftshift(d, axes).get(), np.fft.fftshift(x, axes))
    assert np.array_equal(F.ifftshift(d, axes).get(), np.fft.ifftshift(x, axes))
    assert np.array_equal(F.fftshift(d[:, ::-1, ::2], axes).get(), np.fft.fftshift(x[:, ::-1, ::2], axes))
    r = random(rng, (7,), np.float32)
    assert np.array_equal(F.ifftshift(F.fftshift(r)).get(), r)


@pytest.mark.parametrize("n", [1, 2, 7, 8])
def test_fftfreq_and_rfftfreq(n):
    assert np.allclose(F.fftfreq(n, 0.25).get(), np.fft.fftfreq(n, 0.25), rtol=1e-15, atol=0)
    assert np.allclose(F.rfftfreq(n).get(), np.fft.rfftfreq(n), rtol=1e-15, atol=0)


def test_misaligned_real_data_takes_the_gather_paths(rng):
    # a float32 view one element in cannot be read or written as complex pairs
    x = random(rng, (33,), np.float32)
    d = oxicuda.asarray(x)
    check(F.rfft(d[1:]).get(), np.fft.rfft(x[1:].astype(np.float64)), [32], np.float32)
    spec = random(rng, (9,), np.complex64)
    big = poisoned((17,), np.float32)
    F.irfft(spec, out=big[1:])
    check(big.get()[1:], np.fft.irfft(spec.astype(np.complex128)), [16], np.float32)
    assert np.isnan(big.get()[0])


FUNCS = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fft2", "rfft2",
         "irfft2", "ifft2"]


def test_random_calls_on_strided_views_match_numpy(rng):
    """Random function, shape, dtype, view (steps 1, 2, -1), axes, n/s and norm, 12 times."""
    for _ in range(12):
        f = FUNCS[rng.integers(len(FUNCS))]
        nd = int(rng.integers(2, 4)) if f.endswith("2") else int(rng.integers(1, 4))
        shape = tuple(int(v) for v in rng.integers(1, 9, nd))
        real_in = f in ("rfft", "rfftn", "ihfft", "rfft2")
        dt = (np.float32, np.float64)[rng.integers(2)] if real_in else (np.complex64, np.complex128)[rng.integers(2)]
        x = random(rng, tuple(2 * s for s in shape), dt)
        view = tuple(slice(None, None, int(rng.choice([1, 2, -1]))) for _ in shape)
        crop = tuple(slice(0, s) for s in shape)
        kw = {"norm": (None, "ortho", "forward", "backward")[rng.integers(4)]}
        if f in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
            kw["axis"] = int(rng.integers(-nd, nd))
            if rng.random() < 0.4:
                kw["n"] = int(rng.integers(2, 12))
        else:
            kw["axes"] = tuple(int(a) for a in rng.permutation(nd)[:2 if f.endswith("2") else rng.integers(1, nd + 1)])
            if rng.random() < 0.4:
                kw["s"] = tuple(int(v) for v in rng.integers(2, 12, len(kw["axes"])))
        host = x[view][crop]
        try:
            ref = getattr(np.fft, f)(host.astype(np.float64 if real_in else np.complex128), **kw)
        except ValueError:
            continue  # numpy refuses the request (e.g. irfft of a length-1 axis)
        got = getattr(F, f)(oxicuda.asarray(x)[view][crop], **kw).get()
        assert got.shape == ref.shape, (f, shape, kw)
        single = dt in (np.float32, np.complex64)
        assert np.linalg.norm(got - ref) <= (3e-6 if single else 1e-13) * max(np.linalg.norm(ref), 1e-30), (f, kw)
