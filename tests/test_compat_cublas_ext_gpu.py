"""GPU-only: the cuBLAS routines added to oxicuda.cuda.cublas (geam, dgmm, sbmv, trsmBatched,
tpttr/trttp, gemmStridedBatchedEx, sgemmEx) on CuPy arrays, compared with CuPy's own cuBLAS on
the same inputs at sizes far beyond the emulator's, and the banded/packed level 2 routines
against float64 numpy at GPU sizes."""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.blas import level2_packed as L2P
from oxicuda.cuda import cublas as ox

pytestmark = pytest.mark.gpu


from compat_gpu_fixtures import cp, handles, hp  # noqa: F401  (fixtures and helper)


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.complex128), np.asarray(want, np.complex128)
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


def test_geam_and_dgmm_match_cupy_cublas(cp, handles, rng):
    ho, hv, vendor = handles
    m, n = 3000, 2049
    a = cp.asarray(rng.standard_normal((n, m)), order="F")  # read transposed
    b = cp.asarray(rng.standard_normal((m, n)), order="F")
    ours = cp.full((m, n), cp.nan, order="F")
    theirs = cp.full((m, n), cp.nan, order="F")
    _al, pa = hp(1.5, np.float64)
    _be, pb = hp(-0.25, np.float64)
    for h, mod, c in ((ho, ox, ours), (hv, vendor, theirs)):
        mod.dgeam(h, 1, 0, m, n, pa, a.data.ptr, n, pb, b.data.ptr, m, c.data.ptr, m)
    cp.cuda.Device().synchronize()
    assert rel_err(ours.get(), theirs.get()) <= 1e-14
    x = cp.asarray(rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(cp.complex64)
    z = cp.asarray(rng.standard_normal((m, n)) + 1j * rng.standard_normal((m, n)), order="F").astype(cp.complex64)
    zo, zt = cp.full_like(z, cp.nan), cp.full_like(z, cp.nan)
    ox.cdgmm(ho, 1, m, n, z.data.ptr, m, x.data.ptr, -1, zo.data.ptr, m)
    vendor.cdgmm(hv, 1, m, n, z.data.ptr, m, x.data.ptr, -1, zt.data.ptr, m)
    cp.cuda.Device().synchronize()
    assert rel_err(zo.get(), zt.get()) <= 1e-6


def test_sbmv_trsm_batched_and_packing_match_cupy_cublas(cp, handles, rng):
    ho, hv, vendor = handles
    n, k = 1 << 16, 17
    band = cp.asarray(rng.standard_normal((k + 1, n)).astype(np.float32), order="F")
    x = cp.asarray(rng.standard_normal(n).astype(np.float32))
    yo, yt = cp.full(n, cp.nan, cp.float32), cp.full(n, cp.nan, cp.float32)
    _one, p1 = hp(1.0, np.float32)
    _zero, p0 = hp(0.0, np.float32)
    ox.ssbmv(ho, 1, n, k, p1, band.data.ptr, k + 1, x.data.ptr, 1, p0, yo.data.ptr, 1)
    vendor.ssbmv(hv, 1, n, k, p1, band.data.ptr, k + 1, x.data.ptr, 1, p0, yt.data.ptr, 1)
    cp.cuda.Device().synchronize()
    assert rel_err(yo.get(), yt.get()) <= 1e-5
    nm, batch = 96, 40
    mats = [cp.asarray(np.tril(rng.standard_normal((nm, nm))) + nm * np.eye(nm), order="F") for _ in range(batch)]
    rhs = [cp.asarray(rng.standard_normal((nm, 8)), order="F") for _ in range(batch)]
    mine, ref = [r.copy(order="F") for r in rhs], [r.copy(order="F") for r in rhs]
    pa = cp.asarray(np.array([m.data.ptr for m in mats], np.uint64))
    _al, palpha = hp(2.0, np.float64)
    for h, mod, outs in ((ho, ox, mine), (hv, vendor, ref)):
        pb = cp.asarray(np.array([o.data.ptr for o in outs], np.uint64))
        mod.dtrsmBatched(h, 0, 0, 0, 0, nm, 8, palpha, pa.data.ptr, nm, pb.data.ptr, nm, batch)
    cp.cuda.Device().synchronize()
    for o, r in zip(mine, ref):
        assert rel_err(o.get(), r.get()) <= 1e-12
    npk = 1500
    full = cp.asarray(rng.standard_normal((npk, npk)), order="F")
    apo, apt = cp.full(npk * (npk + 1) // 2, cp.nan), cp.full(npk * (npk + 1) // 2, cp.nan)
    ox.dtrttp(ho, 0, npk, full.data.ptr, npk, apo.data.ptr)
    vendor.dtrttp(hv, 0, npk, full.data.ptr, npk, apt.data.ptr)
    cp.cuda.Device().synchronize()
    assert bool((apo == apt).all())


def test_gemm_strided_batched_ex_and_sgemm_ex_match_cupy_cublas(cp, handles, rng):
    ho, hv, vendor = handles
    m, n, k, batch = 256, 192, 320, 12
    a = cp.asarray(rng.standard_normal((batch, k, m)).astype(np.float16))
    b = cp.asarray(rng.standard_normal((batch, n, k)).astype(np.float16))
    co, ct = cp.full((batch, n, m), cp.nan, cp.float32), cp.full((batch, n, m), cp.nan, cp.float32)
    _one, p1 = hp(1.0, np.float32)
    _zero, p0 = hp(0.0, np.float32)
    for h, mod, c in ((ho, ox, co), (hv, vendor, ct)):
        mod.gemmStridedBatchedEx(h, 0, 0, m, n, k, p1, a.data.ptr, ox.CUDA_R_16F, m, m * k, b.data.ptr,
                                 ox.CUDA_R_16F, k, k * n, p0, c.data.ptr, ox.CUDA_R_32F, m, m * n, batch,
                                 ox.CUBLAS_COMPUTE_32F, ox.CUBLAS_GEMM_DEFAULT)
    cp.cuda.Device().synchronize()
    assert rel_err(co.get(), ct.get()) <= 1e-3
    c2o, c2t = cp.full((n, m), cp.nan, cp.float32), cp.full((n, m), cp.nan, cp.float32)
    for h, mod, c in ((ho, ox, c2o), (hv, vendor, c2t)):
        mod.sgemmEx(h, 0, 0, m, n, k, p1, a.data.ptr, ox.CUDA_R_16F, m, b.data.ptr, ox.CUDA_R_16F, k, p0,
                    c.data.ptr, ox.CUDA_R_32F, m)
    cp.cuda.Device().synchronize()
    assert rel_err(c2o.get(), c2t.get()) <= 1e-3


def test_banded_and_packed_level2_at_gpu_sizes(cp, rng):
    n, kl, ku = 20000, 5, 3
    band = rng.standard_normal((kl + ku + 1, n))
    x = rng.standard_normal(n)
    dband, dx, dy = cp.asarray(band, order="F"), cp.asarray(x), cp.full(n, cp.nan)
    L2P.gbmv_ptr("N", n, n, kl, ku, 1.0, dband.data.ptr, kl + ku + 1, dx.data.ptr, 1, 0.0, dy.data.ptr, 1,
                 dtype=np.float64)
    want = np.zeros(n)
    for d in range(-kl, ku + 1):  # band row ku - d holds diagonal d (A[i, i + d])
        row = band[ku - d]
        if d >= 0:
            want[:n - d] += row[d:] * x[d:]
        else:
            want[-d:] += row[:n + d] * x[:n + d]
    cp.cuda.Device().synchronize()
    assert rel_err(dy.get(), want) <= 1e-12
    npk = 3000
    tri = np.triu(rng.standard_normal((npk, npk))) / npk + 2 * np.eye(npk)
    ap = np.concatenate([tri[:j + 1, j] for j in range(npk)])
    xs = rng.standard_normal(npk)
    dap, dxs = cp.asarray(ap), cp.asarray(xs)
    L2P.tpsv_ptr("U", "N", "N", npk, dap.data.ptr, dxs.data.ptr, 1, dtype=np.float64)
    cp.cuda.Device().synchronize()
    assert rel_err(tri @ dxs.get(), xs) <= 1e-10
