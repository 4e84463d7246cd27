"""Spectra and round trips written against CuPy's FFT modules (cupy.fft, cupy.cuda.cufft):
rfft/irfft, rfftfreq, fft2/ifft2 with norm, fftshift, and Plan1d C2C forward and inverse.
Run with CuPy as is; the oxicuda tests swap only the block between the IMPORTS markers.
"""
# --- IMPORTS ---
import cupy as cp
import cupy.fft as cpfft
import numpy as np
from cupy.cuda import cufft

# --- END IMPORTS ---


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main(n=64, batch=3, seed=2):
    rng = np.random.default_rng(seed)
    sig = rng.standard_normal((batch, n)).astype(np.float32)
    x = cp.asarray(sig)
    spec = cpfft.rfft(x)
    errs = [rel(cp.asnumpy(spec), np.fft.rfft(sig.astype(np.float64)))]
    back = cpfft.irfft(spec, n=n)
    errs.append(rel(cp.asnumpy(back), sig))
    freqs = cp.asnumpy(cpfft.rfftfreq(n, d=0.5))
    errs.append(rel(freqs, np.fft.rfftfreq(n, d=0.5)))
    img = (rng.standard_normal((16, 12)) + 1j * rng.standard_normal((16, 12))).astype(np.complex128)
    f2 = cpfft.fft2(cp.asarray(img), norm="ortho")
    errs.append(rel(cp.asnumpy(f2), np.fft.fft2(img, norm="ortho")))
    errs.append(rel(cp.asnumpy(cpfft.ifft2(f2, norm="ortho")), img))
    errs.append(rel(cp.asnumpy(cpfft.fftshift(f2)), np.fft.fftshift(np.fft.fft2(img, norm="ortho"))))
    c = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))).astype(np.complex64)
    a = cp.asarray(c)
    out = cp.empty((batch, n), np.complex64)
    plan = cufft.Plan1d(n, cufft.CUFFT_C2C, batch)
    plan.fft(a, out, cufft.CUFFT_FORWARD)
    errs.append(rel(cp.asnumpy(out), np.fft.fft(c.astype(np.complex128))))
    plan.fft(out, a, cufft.CUFFT_INVERSE)
    errs.append(rel(cp.asnumpy(a) / n, c))
    return max(errs)
