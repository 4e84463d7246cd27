"""The cuSOLVER-shaped surface (oxicuda.cuda.cusolver, CuPy's low-level module): CuPy-style
workflows with only the imports changed, devInfo semantics, status errors before any launch."""

from __future__ import annotations

import numpy as np
import pytest
from solver_cases import rand, rel

import oxicuda as cupy  # a CuPy script: only this import and the next differ
from oxicuda.cuda import cusolver


def P(x):
    """x.data.ptr, CuPy's spelling, where DeviceArray has it (the memory issue adds .data); .ptr before."""
    return x.data.ptr if hasattr(x, "data") else x.ptr


LETTER = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
TOL = {"float32": 1e-4, "float64": 1e-11, "complex64": 1e-4, "complex128": 1e-11}


@pytest.fixture
def handle():
    h = cusolver.create()
    yield h
    cusolver.destroy(h)


@pytest.mark.parametrize("dt", list(LETTER))
def test_getrf_getrs_workflow(rng, handle, dt):
    n, nrhs = 7, 2
    t = LETTER[dt]
    a_host, b_host = rand(rng, (n, n), dt), rand(rng, (n, nrhs), dt)
    a = cupy.asarray(np.asfortranarray(a_host))
    b = cupy.asarray(np.asfortranarray(b_host))
    lwork = getattr(cusolver, f"{t}getrf_bufferSize")(handle, n, n, P(a), n)
    work = cupy.empty(lwork, dtype=dt)
    ipiv = cupy.empty(n, dtype=np.int32)
    dev_info = cupy.full(1, 99, dtype=np.int32)
    getattr(cusolver, f"{t}getrf")(handle, n, n, P(a), n, P(work), P(ipiv), P(dev_info))
    assert dev_info.get()[0] == 0
    getattr(cusolver, f"{t}getrs")(handle, cusolver.CUBLAS_OP_T, n, nrhs, P(a), n, P(ipiv),
                                   P(b), n, P(dev_info))
    assert dev_info.get()[0] == 0
    np.testing.assert_allclose(b.get(), np.linalg.solve(a_host.astype(rel(dt)).T, b_host), atol=TOL[dt] * 10)


@pytest.mark.parametrize("dt", ("float64", "complex64"))
@pytest.mark.parametrize("uplo", (0, 1))
def test_potrf_potrs_workflow_and_batched(rng, handle, dt, uplo):
    n = 6
    t = LETTER[dt]
    x = rand(rng, (n, n), dt)
    spd = (x @ x.conj().T / n + np.eye(n)).astype(dt)
    a = cupy.asarray(np.asfortranarray(spd))
    lwork = getattr(cusolver, f"{t}potrf_bufferSize")(handle, uplo, n, P(a), n)
    work = cupy.empty(lwork, dtype=dt)
    info = cupy.full(1, 99, dtype=np.int32)
    getattr(cusolver, f"{t}potrf")(handle, uplo, n, P(a), n, P(work), lwork, P(info))
    assert info.get()[0] == 0
    b_host = rand(rng, (n, 1), dt)
    b = cupy.asarray(np.asfortranarray(b_host))
    getattr(cusolver, f"{t}potrs")(handle, uplo, n, 1, P(a), n, P(b), n, P(info))
    np.testing.assert_allclose(b.get(), np.linalg.solve(spd.astype(rel(dt)), b_host), atol=TOL[dt] * 10)
    # batched: 3 matrices, the second not positive definite
    mats = [spd.copy() for _ in range(3)]
    mats[1][2, 2] = -1.0
    dev = [cupy.asarray(np.asfortranarray(m)) for m in mats]
    arr = cupy.asarray(np.array([P(d) for d in dev], np.uint64))
    infos = cupy.full(3, 99, dtype=np.int32)
    getattr(cusolver, f"{t}potrfBatched")(handle, uplo, n, P(arr), n, P(infos), 3)
    got = infos.get()
    assert got[0] == 0 and got[2] == 0 and 1 <= got[1] <= 3


def test_geqrf_orgqr_ormqr_workflow(rng, handle):
    m, n = 8, 5
    a_host = rand(rng, (m, n), "complex128")
    a = cupy.asarray(np.asfortranarray(a_host))
    tau = cupy.empty(n, dtype="complex128")
    info = cupy.full(1, 99, dtype=np.int32)
    lwork = cusolver.zgeqrf_bufferSize(handle, m, n, P(a), m)
    work = cupy.empty(lwork, dtype="complex128")
    cusolver.zgeqrf(handle, m, n, P(a), m, P(tau), P(work), lwork, P(info))
    r = np.triu(a.get())[:n]
    c_host = rand(rng, (m, 2), "complex128")
    c = cupy.asarray(np.asfortranarray(c_host))
    lw = cusolver.zunmqr_bufferSize(handle, cusolver.CUBLAS_SIDE_LEFT, cusolver.CUBLAS_OP_C, m, 2, n, P(a), m,
                                    P(tau), P(c), m)
    w1 = cupy.empty(lw, dtype="complex128")
    cusolver.zunmqr(handle, cusolver.CUBLAS_SIDE_LEFT, cusolver.CUBLAS_OP_C, m, 2, n, P(a), m, P(tau),
                    P(c), m, P(w1), lw, P(info))
    lw = cusolver.zungqr_bufferSize(handle, m, n, n, P(a), m, P(tau))
    w2 = cupy.empty(lw, dtype="complex128")
    cusolver.zungqr(handle, m, n, n, P(a), m, P(tau), P(w2), lw,
                    P(info))
    q = a.get()
    assert info.get()[0] == 0
    np.testing.assert_allclose(q @ r, a_host, atol=1e-12)
    np.testing.assert_allclose(c.get()[:n], q.conj().T @ c_host, atol=1e-12)


def test_getrf_batched_getrs_batched(rng, handle):
    n, batch = 5, 3
    mats = rand(rng, (batch, n, n), "float32")
    dev = [cupy.asarray(np.asfortranarray(m)) for m in mats]
    arr = cupy.asarray(np.array([P(d) for d in dev], np.uint64))
    piv = cupy.empty(n * batch, dtype=np.int32)
    infos = cupy.empty(batch, dtype=np.int32)
    cusolver.sgetrfBatched(handle, n, P(arr), n, P(piv), P(infos), batch)
    bs = rand(rng, (batch, n, 1), "float32")
    bdev = [cupy.asarray(np.asfortranarray(b)) for b in bs]
    barr = cupy.asarray(np.array([P(d) for d in bdev], np.uint64))
    host_info = np.full(1, 7, np.int32)
    cusolver.sgetrsBatched(handle, cusolver.CUBLAS_OP_N, n, 1, P(arr), n, P(piv), P(barr), n,
                           host_info.ctypes.data, batch)
    assert host_info[0] == 0 and not infos.get().any()
    for z in range(batch):
        np.testing.assert_allclose(bdev[z].get(), np.linalg.solve(mats[z].astype(np.float64), bs[z]), atol=1e-4)


def test_dev_info_reports_singular_pivot(rng, handle):
    n = 4
    a_host = rand(rng, (n, n), "float64")
    a_host[:, 2] = 0.0
    a = cupy.asarray(np.asfortranarray(a_host))
    info = cupy.full(1, 99, dtype=np.int32)
    work, ipiv = cupy.empty(1, "float64"), cupy.empty(n, np.int32)
    cusolver.dgetrf(handle, n, n, P(a), n, P(work), P(ipiv), P(info))
    assert info.get()[0] == 3


def test_bad_arguments_raise_invalid_value_and_set_dev_info(handle):
    a = cupy.zeros((4, 4), "float64")
    info = cupy.full(1, 99, dtype=np.int32)
    with cupy.trace() as t:
        with pytest.raises(cusolver.CUSOLVERError) as exc:
            cusolver.dpotrf(handle, cusolver.CUBLAS_FILL_MODE_LOWER, 4, P(a), 3, P(a), 1, P(info))
        assert exc.value.status == cusolver.CUSOLVER_STATUS_INVALID_VALUE and "lda" in str(exc.value)
        assert info.get()[0] == -4
        with pytest.raises(cusolver.CUSOLVERError, match="Lwork"):
            cusolver.dpotrf(handle, 0, 4, P(a), 4, P(a), 0, P(info))
        with pytest.raises(cusolver.CUSOLVERError, match="uplo"):
            cusolver.dpotrf(handle, 5, 4, P(a), 4, P(a), 1, P(info))
        with pytest.raises(cusolver.CUSOLVERError, match="run"):  # A too short for 512x512
            cusolver.dgetrf(handle, 512, 512, P(a), 512, P(a), P(info), P(info))
    assert [r for r in t.launches if "solver" in r.kernel] == []


def test_destroyed_handle_and_streams():
    h = cusolver.create()
    cusolver.setStream(h, 0)
    assert cusolver.getStream(h) == 0
    cusolver.destroy(h)
    with pytest.raises(cusolver.CUSOLVERError) as exc:
        cusolver.sgetrf_bufferSize(h, 4, 4, 0, 4)
    assert exc.value.status == cusolver.CUSOLVER_STATUS_NOT_INITIALIZED
    cusolver.check_status(0)
    with pytest.raises(cusolver.CUSOLVERError):
        cusolver.check_status(cusolver.CUSOLVER_STATUS_ZERO_PIVOT)
