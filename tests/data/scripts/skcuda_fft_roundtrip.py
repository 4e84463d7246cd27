"""A batched real FFT round trip and a 2-D complex transform written against scikit-cuda's
skcuda.fft and PyCUDA arrays (Plan, fft, ifft with scale=True).
Run with scikit-cuda as is; the oxicuda tests swap only the block between the IMPORTS markers.
"""
# --- IMPORTS ---
import numpy as np
import pycuda.autoinit  # noqa: F401
import skcuda.fft as cu_fft
from pycuda import gpuarray

# --- END IMPORTS ---


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main(n=48, batch=4, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n)).astype(np.float32)
    x_gpu = gpuarray.to_gpu(x)
    xf_gpu = gpuarray.empty((batch, n // 2 + 1), np.complex64)
    plan_forward = cu_fft.Plan(x.shape[1], np.float32, np.complex64, batch)
    cu_fft.fft(x_gpu, xf_gpu, plan_forward)
    y_gpu = gpuarray.empty_like(x_gpu)
    plan_inverse = cu_fft.Plan(x.shape[1], np.complex64, np.float32, batch)
    cu_fft.ifft(xf_gpu, y_gpu, plan_inverse, True)
    errs = [rel(xf_gpu.get(), np.fft.rfft(x.astype(np.float64))), rel(y_gpu.get(), x)]
    z = (rng.standard_normal((2, 8, 6)) + 1j * rng.standard_normal((2, 8, 6))).astype(np.complex128)
    z_gpu = gpuarray.to_gpu(z)
    zf_gpu = gpuarray.empty_like(z_gpu)
    plan2 = cu_fft.Plan((8, 6), np.complex128, np.complex128, batch=2)
    cu_fft.fft(z_gpu, zf_gpu, plan2)
    errs.append(rel(zf_gpu.get(), np.fft.fftn(z, axes=(1, 2))))
    return max(errs)
