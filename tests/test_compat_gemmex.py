"""The CuPy-shaped ``cublas.gemmEx`` over cuBLAS's type table: every supported (Atype, Btype,
Ctype, computeType) combination against a float64 reference (C poisoned with NaN for beta = 0,
random C for beta != 0, scalars through host and device pointers), and every combination outside
the table refused with CUBLAS_STATUS_NOT_SUPPORTED naming the types, before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import cublas
from oxicuda.memory.dtypes import BFLOAT16, host_astype

C = cublas
#: (Atype, Ctype, computeType, relative tolerance of C's rounding/compute)
SUPPORTED = [
    (C.CUDA_R_32F, C.CUDA_R_32F, C.CUBLAS_COMPUTE_32F, 2e-6),
    (C.CUDA_R_32F, C.CUDA_R_32F, C.CUBLAS_COMPUTE_32F_PEDANTIC, 2e-6),
    (C.CUDA_R_32F, C.CUDA_R_32F, C.CUBLAS_COMPUTE_32F_FAST_TF32, 3e-3),
    (C.CUDA_R_32F, C.CUDA_R_32F, C.CUBLAS_COMPUTE_32F_FAST_16F, 2e-6),
    (C.CUDA_R_16F, C.CUDA_R_16F, C.CUBLAS_COMPUTE_32F, 1e-3),
    (C.CUDA_R_16BF, C.CUDA_R_16BF, C.CUBLAS_COMPUTE_32F, 8e-3),
    (C.CUDA_R_16F, C.CUDA_R_32F, C.CUBLAS_COMPUTE_32F, 2e-6),
    (C.CUDA_R_16BF, C.CUDA_R_32F, C.CUBLAS_COMPUTE_32F, 2e-6),
    (C.CUDA_R_64F, C.CUDA_R_64F, C.CUBLAS_COMPUTE_64F, 1e-14),
    (C.CUDA_C_32F, C.CUDA_C_32F, C.CUBLAS_COMPUTE_32F, 2e-6),
    (C.CUDA_C_32F, C.CUDA_C_32F, C.CUBLAS_COMPUTE_32F_FAST_TF32, 2e-6),
    (C.CUDA_C_64F, C.CUDA_C_64F, C.CUBLAS_COMPUTE_64F, 1e-14),
]
NP_TYPES = {C.CUDA_R_32F: np.float32, C.CUDA_R_64F: np.float64, C.CUDA_R_16F: np.float16, C.CUDA_R_16BF: BFLOAT16,
            C.CUDA_C_32F: np.complex64, C.CUDA_C_64F: np.complex128}
SCALE = {C.CUBLAS_COMPUTE_64F: {False: np.float64, True: np.complex128}}


def _host(rng, shape, t):
    x = rng.standard_normal(shape)
    if t in (C.CUDA_C_32F, C.CUDA_C_64F):
        x = x + 1j * rng.standard_normal(shape)
    dev = host_astype(x.astype(np.complex128 if np.iscomplexobj(x) else np.float32), NP_TYPES[t]) \
        if t == C.CUDA_R_16BF else x.astype(NP_TYPES[t])
    exact = host_astype(dev, np.float64) if t == C.CUDA_R_16BF else dev.astype(np.complex128 if np.iscomplexobj(x)
                                                                                  else np.float64)
    return np.asfortranarray(dev), exact


def run_gemmex_combinations(rng, m: int, n: int, k: int) -> None:
    """Every SUPPORTED combination once with beta = 0 (C poisoned) and once with beta != 0 and
    device-pointer scalars, transposes varying; checks every element."""
    h = cublas.create()
    try:
        for i, (at, ct, compute, tol) in enumerate(SUPPORTED):
            is_c = at in (C.CUDA_C_32F, C.CUDA_C_64F)
            ta, tb = (0, 0) if i % 3 == 0 else (1, 0) if i % 3 == 1 else (2 if is_c else 1, 1)
            A, A64 = _host(rng, (m, k) if ta == 0 else (k, m), at)
            B, B64 = _host(rng, (k, n) if tb == 0 else (n, k), at)
            oa = A64 if ta == 0 else (A64.T if ta == 1 else A64.conj().T)
            ob = B64 if tb == 0 else B64.T
            scale_t = np.complex128 if at == C.CUDA_C_64F else np.complex64 if is_c else \
                np.float64 if at == C.CUDA_R_64F else np.float32
            for beta, device_mode in ((0.0, False), (0.5, True)):
                C0, C64 = _host(rng, (m, n), ct)
                if beta == 0:
                    C0 = np.asfortranarray(np.full_like(C0, np.nan)) if ct != C.CUDA_R_16BF else \
                        np.asfortranarray(host_astype(np.full((m, n), np.nan, np.float32), BFLOAT16))
                dA, dB, dC = oxicuda.asarray(A), oxicuda.asarray(B), oxicuda.asarray(C0)
                alpha_v = (1.5 - 0.5j) if is_c else 1.5
                beta_v = (beta + 0.25j) if (is_c and beta) else beta
                keep = [np.array(alpha_v, scale_t), np.array(beta_v, scale_t)]
                if device_mode:
                    cublas.setPointerMode(h, cublas.CUBLAS_POINTER_MODE_DEVICE)
                    keep = [oxicuda.asarray(x.reshape(1)) for x in keep]
                    pa, pb = keep[0].ptr, keep[1].ptr
                else:
                    cublas.setPointerMode(h, cublas.CUBLAS_POINTER_MODE_HOST)
                    pa, pb = keep[0].ctypes.data, keep[1].ctypes.data
                cublas.gemmEx(h, ta, tb, m, n, k, pa, dA.ptr, at, A.shape[0], dB.ptr, at, B.shape[0], pb, dC.ptr,
                              ct, m, compute, cublas.CUBLAS_GEMM_DEFAULT)
                got = dC.get()
                got = host_astype(got, np.float64) if ct == C.CUDA_R_16BF else got.astype(np.complex128)
                ref = alpha_v * (oa @ ob) + (beta_v * C64 if beta else 0)
                assert not np.isnan(got).any(), f"NaN left in C for {(at, ct, compute)}"
                err = np.abs(got - ref) / (np.max(np.abs(ref)))
                assert err.max() <= tol * max(1.0, np.sqrt(k) / 4), ((at, ct, compute, beta), float(err.max()))
    finally:
        cublas.destroy(h)


def test_gemmex_supported_combinations_match_float64(rng):
    run_gemmex_combinations(rng, m=9, n=6, k=12)


@pytest.mark.parametrize("at,bt,ct,compute,why", [
    (C.CUDA_R_16F, C.CUDA_R_32F, C.CUDA_R_32F, C.CUBLAS_COMPUTE_32F, "Atype != Btype"),
    (C.CUDA_R_32F, C.CUDA_R_32F, C.CUDA_R_32F, C.CUBLAS_COMPUTE_64F, "not a supported combination"),
    (C.CUDA_R_64F, C.CUDA_R_64F, C.CUDA_R_64F, C.CUBLAS_COMPUTE_32F, "not a supported combination"),
    (C.CUDA_R_32F, C.CUDA_R_32F, C.CUDA_R_16F, C.CUBLAS_COMPUTE_32F, "not a supported combination"),
    (C.CUDA_R_16F, C.CUDA_R_16F, C.CUDA_R_16F, C.CUBLAS_COMPUTE_16F, "does not implement"),
    (C.CUDA_R_8I, C.CUDA_R_8I, C.CUDA_R_32I, C.CUBLAS_COMPUTE_32I, "does not implement"),
    (C.CUDA_R_16BF, C.CUDA_R_16BF, C.CUDA_R_16BF, C.CUBLAS_COMPUTE_32F_FAST_TF32, "not a supported combination"),
    (C.CUDA_R_32F, C.CUDA_R_32F, C.CUDA_R_32F, 12345, "computeType"),
])
def test_gemmex_unsupported_combinations_say_not_supported_and_name_the_types(at, bt, ct, compute, why):
    h = cublas.create()
    try:
        c = oxicuda.full((4, 4), 7.0, np.float32, order="F")
        one = np.array(1.0, np.float32)
        with pytest.raises(cublas.CUBLASError) as e:
            cublas.gemmEx(h, 0, 0, 4, 4, 4, one.ctypes.data, c.ptr, at, 4, c.ptr, bt, 4, one.ctypes.data, c.ptr, ct,
                          4, compute, -1)
        assert e.value.status == cublas.CUBLAS_STATUS_NOT_SUPPORTED
        assert why in str(e.value) and "Atype=" in str(e.value) and "computeType=" in str(e.value)
        assert (c.get() == 7.0).all()  # nothing written
    finally:
        cublas.destroy(h)
