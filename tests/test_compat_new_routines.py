"""The routines added to both compat modules, called as CuPy and scikit-cuda users call them
(pointer scalars in CuPy's module, values and gpudata pointers in scikit-cuda's), against
float64 numpy: one call per routine family, status exceptions for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import cublas as cp
from oxicuda.skcuda import cublas as sk


class GpuData:
    """Like PyCUDA's DeviceAllocation: an address behind __int__."""

    def __init__(self, ptr: int) -> None:
        self._ptr = ptr

    def __int__(self) -> int:
        return self._ptr


def G(a) -> GpuData:
    return GpuData(a.ptr)


def hp(value, dtype):
    arr = np.array(value, dtype=dtype)
    return arr, arr.ctypes.data


def rand(rng, shape, dt):
    v = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dt)


def fdev(m):
    return oxicuda.asarray(np.asfortranarray(m))


@pytest.fixture
def ch():
    h = cp.create()
    yield h
    cp.destroy(h)


@pytest.fixture
def sh():
    h = sk.cublasCreate()
    yield h
    sk.cublasDestroy(h)


def close(got, want, tol):
    assert np.all(np.isfinite(got)) and np.max(np.abs(np.asarray(got, np.complex128) - want)) <= tol


def test_cupy_geam_dgmm_sbmv_and_packing(rng, ch):
    m, n = 5, 4
    a, b = rand(rng, (m, n), np.float64), rand(rng, (n, m), np.float64)
    da, db, dc = fdev(a), fdev(b), oxicuda.full((m, n), np.nan, np.float64, order="F")
    _al, pa = hp(2.0, np.float64)
    _be, pb = hp(-1.0, np.float64)
    cp.dgeam(ch, cp.CUBLAS_OP_N, cp.CUBLAS_OP_T, m, n, pa, da.ptr, m, pb, db.ptr, n, dc.ptr, m)
    close(dc.get(), 2 * a - b.T, 1e-12)
    z = rand(rng, (m, n), np.complex64)
    x = rand(rng, n, np.complex64)
    dz, dx, dout = fdev(z), oxicuda.asarray(x), oxicuda.full((m, n), np.nan, np.complex64, order="F")
    cp.cdgmm(ch, cp.CUBLAS_SIDE_RIGHT, m, n, dz.ptr, m, dx.ptr, 1, dout.ptr, m)
    close(dout.get(), z @ np.diag(x), 1e-5)
    k = 1
    full = rand(rng, (n, n), np.float32)
    full = full + full.T
    band_full = np.array([[full[i, j] if abs(i - j) <= k else 0 for j in range(n)] for i in range(n)])
    band = np.zeros((k + 1, n), np.float32)
    for j in range(n):
        for i in range(j, min(n, j + k + 1)):
            band[i - j, j] = full[i, j]
    xs = rand(rng, n, np.float32)
    dband, dxs, dy = fdev(band), oxicuda.asarray(xs), oxicuda.full((n,), np.nan, np.float32)
    _one, p1 = hp(1.0, np.float32)
    _zero, p0 = hp(0.0, np.float32)
    cp.ssbmv(ch, cp.CUBLAS_FILL_MODE_LOWER, n, k, p1, dband.ptr, k + 1, dxs.ptr, 1, p0, dy.ptr, 1)
    close(dy.get(), band_full @ xs.astype(np.float64), 1e-5)
    ap = oxicuda.full((n * (n + 1) // 2,), np.nan, np.float64)
    dfull = fdev(full.astype(np.float64))
    cp.dtrttp(ch, cp.CUBLAS_FILL_MODE_UPPER, n, dfull.ptr, n, ap.ptr)
    back = oxicuda.zeros((n, n), np.float64, order="F")
    cp.dtpttr(ch, cp.CUBLAS_FILL_MODE_UPPER, n, ap.ptr, back.ptr, n)
    close(back.get(), np.triu(full.astype(np.float64)), 1e-12)
    with pytest.raises(cp.CUBLASError) as e:
        cp.dgeam(ch, 5, 0, m, n, pa, da.ptr, m, pb, db.ptr, n, dc.ptr, m)
    assert e.value.status == cp.CUBLAS_STATUS_INVALID_VALUE


def test_cupy_trsm_batched_sgemm_ex_and_strided_batched_ex(rng, ch):
    n, batch = 4, 2
    mats = [np.tril(rand(rng, (n, n), np.complex128)) + 3 * np.eye(n) for _ in range(batch)]
    rhs = [rand(rng, (n, 2), np.complex128) for _ in range(batch)]
    da, db = [fdev(m) for m in mats], [fdev(b) for b in rhs]
    pa = oxicuda.asarray(np.array([d.ptr for d in da], np.uint64))
    pb = oxicuda.asarray(np.array([d.ptr for d in db], np.uint64))
    _al, palpha = hp(1.0 + 0j, np.complex128)
    cp.ztrsmBatched(ch, cp.CUBLAS_SIDE_LEFT, cp.CUBLAS_FILL_MODE_LOWER, cp.CUBLAS_OP_N, cp.CUBLAS_DIAG_NON_UNIT,
                    n, 2, palpha, pa.ptr, n, pb.ptr, n, batch)
    for m, b, d in zip(mats, rhs, db):
        close(m @ d.get(), b, 1e-12)
    m_, n_, k_ = 6, 5, 4
    a16 = rand(rng, (m_, k_), np.float16)
    b16 = rand(rng, (k_, n_), np.float16)
    da16, db16 = fdev(a16), fdev(b16)
    dc32 = oxicuda.full((m_, n_), np.nan, np.float32, order="F")
    _one, p1 = hp(1.0, np.float32)
    _zero, p0 = hp(0.0, np.float32)
    cp.sgemmEx(ch, 0, 0, m_, n_, k_, p1, da16.ptr, cp.CUDA_R_16F, m_, db16.ptr, cp.CUDA_R_16F, k_, p0, dc32.ptr,
               cp.CUDA_R_32F, m_)
    close(dc32.get(), a16.astype(np.float64) @ b16.astype(np.float64), 1e-3)
    batch = 3
    A = rand(rng, (batch, k_, m_), np.float32)  # each A[i] read column-major as m x k
    B = rand(rng, (batch, n_, k_), np.float32)
    dA, dB = oxicuda.asarray(A), oxicuda.asarray(B)
    dC = oxicuda.full((batch, n_, m_), np.nan, np.float32)
    cp.gemmStridedBatchedEx(ch, 0, 0, m_, n_, k_, p1, dA.ptr, cp.CUDA_R_32F, m_, m_ * k_, dB.ptr, cp.CUDA_R_32F,
                            k_, k_ * n_, p0, dC.ptr, cp.CUDA_R_32F, m_, m_ * n_, batch, cp.CUBLAS_COMPUTE_32F,
                            cp.CUBLAS_GEMM_DEFAULT)
    for i in range(batch):
        close(dC.get()[i].T, A[i].T.astype(np.float64) @ B[i].T, 1e-4)
    with pytest.raises(cp.CUBLASError) as e:
        cp.sgemmEx(ch, 0, 0, m_, n_, k_, p1, da16.ptr, cp.CUDA_R_8I, m_, db16.ptr, cp.CUDA_R_8I, k_, p0, dc32.ptr,
                   cp.CUDA_R_32F, m_)
    assert e.value.status == cp.CUBLAS_STATUS_NOT_SUPPORTED


def test_skcuda_banded_packed_and_triangular_level2(rng, sh):
    n = 5
    a = rand(rng, (n, n), np.float32)
    x = rand(rng, n, np.float32)
    dx = oxicuda.asarray(x)
    kl = ku = 1
    band = np.zeros((kl + ku + 1, n), np.float32)
    dense = np.zeros((n, n))
    for j in range(n):
        for i in range(max(0, j - ku), min(n, j + kl + 1)):
            band[ku + i - j, j] = a[i, j]
            dense[i, j] = a[i, j]
    dband, dy = fdev(band), oxicuda.full((n,), np.nan, np.float32)
    sk.cublasSgbmv(sh, "t", n, n, kl, ku, 2.0, G(dband), kl + ku + 1, G(dx), 1, 0.0, G(dy), 1)
    close(dy.get(), 2 * dense.T @ x, 1e-5)
    tri = np.triu(a) + 3 * np.eye(n, dtype=np.float32)
    dtri, dv = fdev(tri), oxicuda.asarray(x)
    sk.cublasStrmv(sh, "u", "n", "n", n, G(dtri), n, G(dv), 1)
    close(dv.get(), tri.astype(np.float64) @ x, 1e-4)
    ap = np.concatenate([tri[:j + 1, j] for j in range(n)])
    dap, dv = oxicuda.asarray(ap), oxicuda.asarray(x)
    sk.cublasStpsv(sh, "u", "t", "n", n, G(dap), G(dv), 1)
    close(tri.T.astype(np.float64) @ dv.get(), x, 1e-4)
    z = rand(rng, n, np.complex128)
    dz = oxicuda.asarray(z)
    h = rand(rng, (n, n), np.complex128)
    h = h + h.conj().T
    hp_ = np.concatenate([h[j:, j] for j in range(n)])
    dhp, dout = oxicuda.asarray(hp_), oxicuda.full((n,), np.nan, np.complex128)
    sk.cublasZhpmv(sh, "l", n, 1 - 1j, G(dhp), G(dz), 1, 0.0, G(dout), 1)
    close(dout.get(), (1 - 1j) * h @ z, 1e-12)
    sk.cublasZhpr(sh, "l", n, 0.5, G(dz), 1, G(dhp))
    want = h + 0.5 * np.outer(z, z.conj())
    close(dhp.get(), np.concatenate([want[j:, j] for j in range(n)]), 1e-12)
    full = fdev(np.zeros((n, n), np.float64))
    xd = oxicuda.asarray(x.astype(np.float64))
    sk.cublasDsyr2(sh, "U", n, 1.5, G(xd), 1, G(xd), 1, G(full), n)
    x64 = x.astype(np.float64)
    close(full.get(), np.triu(3.0 * np.outer(x64, x64)), 1e-12)
    with pytest.raises(sk.cublasInvalidValue):
        sk.cublasSgbmv(sh, "t", n, n, kl, ku, 2.0, G(dband), 1, G(dx), 1, 0.0, G(dy), 1)  # lda < kl + ku + 1


def test_skcuda_level3_extensions_rotations_and_pointer_mode(rng, sh):
    n, k = 4, 3
    a = rand(rng, (n, k), np.complex64)
    da, dc = fdev(a), fdev(np.zeros((n, n), np.complex64))
    sk.cublasCherk(sh, "L", "n", n, k, 1.0, G(da), n, 0.0, G(dc), n)
    a64 = a.astype(np.complex128)
    close(dc.get(), np.tril(a64 @ a64.conj().T), 1e-4)
    b = rand(rng, (n, k), np.float64)
    db, dc2 = fdev(b), fdev(np.zeros((n, n)))
    sk.cublasDsyr2k(sh, "U", "N", n, k, 1.0, G(db), n, G(db), n, 0.0, G(dc2), n)
    close(dc2.get(), np.triu(2 * b @ b.T), 1e-12)
    h = rand(rng, (n, n), np.complex128)
    h = h + h.conj().T
    bm = rand(rng, (n, 2), np.complex128)
    dh, dbm, dcm = fdev(np.tril(h)), fdev(bm), fdev(np.zeros((n, 2), np.complex128))
    sk.cublasZhemm(sh, "l", "l", n, 2, 1.0, G(dh), n, G(dbm), n, 0.0, G(dcm), n)
    close(dcm.get(), h @ bm, 1e-12)
    x = rand(rng, (n, 2), np.float32)
    dx, dout = fdev(x), fdev(np.zeros((2, n), np.float32))
    sk.cublasSgeam(sh, "t", "n", 2, n, 1.0, G(dx), n, 0.0, G(dout), 2, G(dout), 2)
    close(dout.get(), x.T, 0)
    r, c, s = sk.cublasDrotg(sh, 3.0, 4.0)
    close(np.array([r, c, s]), np.array([5.0, 0.6, 0.8]), 1e-12)
    r, c, s = sk.cublasCrotg(sh, 1 + 1j, 2 - 1j)
    gmat = np.array([[c, s], [-np.conj(s), c]])
    close(gmat @ np.array([1 + 1j, 2 - 1j]), np.array([r, 0]), 1e-5)
    sparam = sk.cublasDrotmg(sh, 2.0, 3.0, 1.5, 0.5)
    assert sparam.shape == (5,) and sparam[0] in (-1.0, 0.0, 1.0)
    v, w = rand(rng, 6, np.float64), rand(rng, 6, np.float64)
    dv, dw = oxicuda.asarray(v), oxicuda.asarray(w)
    param = np.array([-1.0, 0.5, 0.25, -0.75, 2.0])
    sk.cublasDrotm(sh, 6, G(dv), 1, G(dw), 1, param)
    close(dv.get(), 0.5 * v - 0.75 * w, 1e-12)
    close(dw.get(), 0.25 * v + 2.0 * w, 1e-12)
    with pytest.raises(sk.cublasInvalidValue, match="sparam"):
        sk.cublasDrotm(sh, 6, G(dv), 1, G(dw), 1, [1.0] * 5)
    assert sk.cublasGetPointerMode(sh) == sk.CUBLAS_POINTER_MODE_HOST
    sk.cublasSetPointerMode(sh, sk.CUBLAS_POINTER_MODE_DEVICE)
    assert sk.cublasGetPointerMode(sh) == 1
    close(sk.cublasDnrm2(sh, 6, G(dv), 1), np.linalg.norm(dv.get()), 1e-12)  # values in either mode
    with pytest.raises(sk.cublasInvalidValue):
        sk.cublasSetPointerMode(sh, 7)
