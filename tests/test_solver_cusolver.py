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
        ref = np.linalg.solve(mats[z].astype(np.float64), bs[z])
        # float32 on a random matrix: the error scales with the condition, so relative to |x|
        cond = np.linalg.cond(mats[z].astype(np.float64))
        np.testing.assert_allclose(bdev[z].get(), ref, atol=1e-6 * cond * max(np.abs(ref).max(), 1))


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


def _poison(shape, dt):
    return cupy.asarray(np.asfortranarray(np.full(shape, np.nan, dt)))


@pytest.mark.parametrize("dt", list(LETTER))
@pytest.mark.parametrize("uplo", (0, 1))
def test_syevd_heevd_workflow(rng, handle, dt, uplo):
    n = 6
    t = LETTER[dt]
    name = "syevd" if dt.startswith("float") else "heevd"
    x = rand(rng, (n, n), dt)
    h = ((x + x.conj().T) / 2).astype(dt)
    a = cupy.asarray(np.asfortranarray(h))
    rdt = np.zeros(1, dt).real.dtype
    w = cupy.asarray(np.full(n, np.nan, rdt))
    lwork = getattr(cusolver, f"{t}{name}_bufferSize")(handle, cusolver.CUSOLVER_EIG_MODE_VECTOR, uplo, n, P(a), n,
                                                       P(w))
    work = cupy.empty(lwork, dtype=dt)
    info = cupy.full(1, 99, dtype=np.int32)
    with cupy.trace() as tr:
        getattr(cusolver, f"{t}{name}")(handle, cusolver.CUSOLVER_EIG_MODE_VECTOR, uplo, n, P(a), n, P(w), P(work),
                                        lwork, P(info))
    assert "solver_syevj" in {s.family for s in tr.specs() if s is not None}
    assert info.get()[0] == 0
    W, V = w.get().astype(np.float64), a.get().astype(rel(dt))
    np.testing.assert_allclose(W, np.linalg.eigvalsh(h.astype(rel(dt))), atol=TOL[dt] * 10)
    assert np.abs(h @ V - V * W).max() < TOL[dt] * 30
    # jobz = NOVECTOR: eigenvalues only
    a2 = cupy.asarray(np.asfortranarray(h))
    w2 = cupy.asarray(np.full(n, np.nan, rdt))
    getattr(cusolver, f"{t}{name}")(handle, cusolver.CUSOLVER_EIG_MODE_NOVECTOR, uplo, n, P(a2), n, P(w2), P(work),
                                    lwork, P(info))
    np.testing.assert_allclose(w2.get(), W, atol=TOL[dt] * 10)


@pytest.mark.parametrize("dt", ("float32", "complex128"))
def test_syevj_params_and_batched(rng, handle, dt):
    n, batch = 5, 3
    t = LETTER[dt]
    name = "syevj" if dt.startswith("float") else "heevj"
    x = rand(rng, (batch, n, n), dt)
    h = ((x + np.conj(np.swapaxes(x, 1, 2))) / 2).astype(dt)
    params = cusolver.createSyevjInfo()
    cusolver.xsyevjSetTolerance(params, 1e-7 if dt == "float32" else 1e-14)
    cusolver.xsyevjSetMaxSweeps(params, 50)
    cusolver.xsyevjSetSortEig(params, 1)
    rdt = np.zeros(1, dt).real.dtype
    a = cupy.asarray(np.ascontiguousarray(np.swapaxes(h, 1, 2)))  # batch of column-major matrices
    w = cupy.asarray(np.full((batch, n), np.nan, rdt))
    info = cupy.full(batch, 99, dtype=np.int32)
    lw = getattr(cusolver, f"{t}{name}Batched_bufferSize")(handle, 1, 0, n, P(a), n, P(w), params, batch)
    work = cupy.empty(lw, dtype=dt)
    getattr(cusolver, f"{t}{name}Batched")(handle, 1, 0, n, P(a), n, P(w), P(work), lw, P(info), params, batch)
    assert info.get().tolist() == [0] * batch
    np.testing.assert_allclose(w.get(), np.linalg.eigvalsh(h.astype(rel(dt))), atol=TOL[dt] * 10)
    v = np.swapaxes(a.get(), 1, 2).astype(rel(dt))
    assert np.abs(h @ v - v * w.get()[:, None, :]).max() < TOL[dt] * 30
    a1 = cupy.asarray(np.asfortranarray(h[0]))
    w1 = cupy.asarray(np.full(n, np.nan, rdt))
    lw1 = getattr(cusolver, f"{t}{name}_bufferSize")(handle, 0, 1, n, P(a1), n, P(w1), params)
    getattr(cusolver, f"{t}{name}")(handle, 0, 1, n, P(a1), n, P(w1), P(work), lw1, P(info), params)
    np.testing.assert_allclose(w1.get(), np.linalg.eigvalsh(h[0].astype(rel(dt)), UPLO="U"), atol=TOL[dt] * 10)
    cusolver.xsyevjSetMaxSweeps(params, 1)  # one sweep cannot converge a random 5 x 5: devInfo > 0
    a1 = cupy.asarray(np.asfortranarray(h[0]))
    getattr(cusolver, f"{t}{name}")(handle, 1, 0, n, P(a1), n, P(w1), P(work), lw1, P(info), params)
    assert info.get()[0] > 0
    with pytest.raises(cusolver.CUSOLVERError) as e:
        cusolver.xsyevjGetSweeps(handle, params)
    assert e.value.status == cusolver.CUSOLVER_STATUS_NOT_SUPPORTED
    cusolver.destroySyevjInfo(params)
    with pytest.raises(cusolver.CUSOLVERError):
        getattr(cusolver, f"{t}{name}")(handle, 1, 0, n, P(a1), n, P(w1), P(work), lw1, P(info), params)


@pytest.mark.parametrize("dt", list(LETTER))
@pytest.mark.parametrize("jobu, jobvt", [("A", "A"), ("S", "S"), ("N", "N"), ("O", "S")])
def test_gesvd_workflow(rng, handle, dt, jobu, jobvt):
    m, n = 7, 4
    t = LETTER[dt]
    a_host = rand(rng, (m, n), dt)
    a = cupy.asarray(np.asfortranarray(a_host))
    rdt = np.zeros(1, dt).real.dtype
    s = cupy.asarray(np.full(n, np.nan, rdt))
    ucols = {"A": m, "S": n}.get(jobu, 1)
    u, vt = _poison((m, ucols), dt), _poison((n, n), dt)
    lwork = getattr(cusolver, f"{t}gesvd_bufferSize")(handle, m, n)
    work = cupy.empty(lwork, dtype=dt)
    info = cupy.full(1, 99, dtype=np.int32)
    with cupy.trace() as tr:
        getattr(cusolver, f"{t}gesvd")(handle, ord(jobu), ord(jobvt), m, n, P(a), m, P(s), P(u), m, P(vt), n,
                                       P(work), lwork, 0, P(info))
    assert "solver_gesvdj" in {x.family for x in tr.specs() if x is not None}
    assert info.get()[0] == 0
    S_ = s.get().astype(np.float64)
    np.testing.assert_allclose(S_, np.linalg.svd(a_host.astype(rel(dt)), compute_uv=False), atol=TOL[dt] * 10)
    if jobu == "N":
        return
    U = (a.get() if jobu == "O" else u.get()).astype(rel(dt))
    VT = vt.get().astype(rel(dt))
    np.testing.assert_allclose((U[:, :n] * S_) @ VT, a_host, atol=TOL[dt] * 30)
    if jobu == "A":
        np.testing.assert_allclose(U.conj().T @ U, np.eye(m), atol=TOL[dt] * 30)


@pytest.mark.parametrize("dt", ("float64", "complex64"))
@pytest.mark.parametrize("shape, econ", [((6, 4), 0), ((6, 4), 1), ((3, 5), 0), ((3, 5), 1)])
def test_gesvdj_workflow(rng, handle, dt, shape, econ):
    m, n = shape
    k = min(m, n)
    t = LETTER[dt]
    a_host = rand(rng, shape, dt)
    a = cupy.asarray(np.asfortranarray(a_host))
    rdt = np.zeros(1, dt).real.dtype
    s = cupy.asarray(np.full(k, np.nan, rdt))
    u = _poison((m, k if econ else m), dt)
    v = _poison((n, k if econ else n), dt)
    params = cusolver.createGesvdjInfo()
    cusolver.xgesvdjSetTolerance(params, 0.0)
    lwork = getattr(cusolver, f"{t}gesvdj_bufferSize")(handle, 1, econ, m, n, P(a), m, P(s), P(u), m, P(v), n, params)
    work = cupy.empty(lwork, dtype=dt)
    info = cupy.full(1, 99, dtype=np.int32)
    getattr(cusolver, f"{t}gesvdj")(handle, 1, econ, m, n, P(a), m, P(s), P(u), m, P(v), n, P(work), lwork, P(info),
                                    params)
    assert info.get()[0] == 0
    S_, U, V = s.get().astype(np.float64), u.get().astype(rel(dt)), v.get().astype(rel(dt))
    np.testing.assert_allclose(S_, np.linalg.svd(a_host.astype(rel(dt)), compute_uv=False), atol=TOL[dt] * 10)
    np.testing.assert_allclose((U[:, :k] * S_) @ V[:, :k].conj().T, a_host, atol=TOL[dt] * 30)
    for q in (U, V):
        np.testing.assert_allclose(q.conj().T @ q, np.eye(q.shape[1]), atol=TOL[dt] * 30)
    cusolver.destroyGesvdjInfo(params)


def test_eigen_svd_bad_arguments_before_launch(handle):
    a = cupy.asarray(np.asfortranarray(np.eye(4)))
    w = cupy.asarray(np.zeros(4))
    info = cupy.full(1, 99, dtype=np.int32)
    work = cupy.empty(1, dtype=np.float64)
    with cupy.trace() as tr:
        with pytest.raises(cusolver.CUSOLVERError) as e:
            cusolver.dsyevd(handle, 1, 0, 4, P(a), 3, P(w), P(work), 1, P(info))  # lda < n
        assert e.value.status == cusolver.CUSOLVER_STATUS_INVALID_VALUE
        assert info.get()[0] == -5
        with pytest.raises(cusolver.CUSOLVERError):
            cusolver.dsyevd(handle, 1, 0, 4, P(a), 4, P(w), P(work), 0, P(info))  # Lwork < bufferSize
        with pytest.raises(cusolver.CUSOLVERError) as e:
            cusolver.dgesvd(handle, ord("A"), ord("A"), 3, 4, P(a), 4, P(w), P(a), 4, P(a), 4, P(work), 1, 0, P(info))
        assert info.get()[0] == -3  # m < n
        with pytest.raises(cusolver.CUSOLVERError):
            cusolver.dgesvd_bufferSize(handle, 3, 4)
        h2 = cusolver.create()
        cusolver.destroy(h2)
        with pytest.raises(cusolver.CUSOLVERError) as e:
            cusolver.dsyevd(h2, 1, 0, 4, P(a), 4, P(w), P(work), 1, P(info))
        assert e.value.status == cusolver.CUSOLVER_STATUS_NOT_INITIALIZED
    assert not [s for s in tr.specs() if s is not None and s.family in ("solver_syevj", "solver_gesvdj")]
