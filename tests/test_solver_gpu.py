"""oxicuda.solver at sizes the emulator cannot run, on a real GPU, against cupy.linalg (cuSOLVER)
where CuPy is importable and against float64 numpy residuals always."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
import oxicuda.solver as S

pytestmark = pytest.mark.gpu


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def _rand(rng, shape, dt):
    v = rng.standard_normal(shape)
    if dt.startswith("complex"):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dt)


EPS = {d: np.finfo(d).eps for d in ("float32", "float64", "complex64", "complex128")}


@pytest.mark.parametrize("dt, n", [("float32", 2048), ("float64", 2048), ("complex64", 1024), ("complex128", 1024)])
def test_solve_large_matches_cupy_and_small_residual(dt, n):
    rng = np.random.default_rng(1)
    a, b = _rand(rng, (n, n), dt), _rand(rng, (n, 4), dt)
    x = S.solve(oxicuda.asarray(a), oxicuda.asarray(b)).get()
    A, X = a.astype(np.complex128), x.astype(np.complex128)
    resid = np.abs(A @ X - b).max() / (n * np.abs(A).sum(axis=1).max() * np.abs(X).max() * EPS[dt])
    assert resid < 30
    cupy = _cupy()
    if cupy is not None:
        ref = cupy.linalg.solve(cupy.asarray(a), cupy.asarray(b)).get()
        assert np.abs(x - ref).max() <= 1e3 * EPS[dt] * max(1.0, np.abs(ref).max()) * np.sqrt(n)


@pytest.mark.parametrize("dt", ("float32", "float64", "complex128"))
def test_cholesky_large(dt):
    n = 2048
    rng = np.random.default_rng(2)
    x = _rand(rng, (n, n), dt)
    a = (x @ x.conj().T / n + np.eye(n)).astype(dt)
    low = S.cholesky(oxicuda.asarray(a)).get().astype(np.complex128)
    err = np.abs(low @ low.conj().T - a).sum(axis=0).max() / (n * np.abs(a).sum(axis=0).max() * EPS[dt])
    assert err < 30
    cupy = _cupy()
    if cupy is not None:
        ref = cupy.linalg.cholesky(cupy.asarray(a)).get()
        assert np.abs(low - ref).max() <= 1e4 * EPS[dt] * np.abs(ref).max()


@pytest.mark.parametrize("dt", ("float32", "float64"))
def test_lu_factor_large_backward_error(dt):
    n = 2048
    rng = np.random.default_rng(3)
    a = _rand(rng, (n, n), dt)
    lu, piv = S.lu_factor(oxicuda.asarray(a))
    f, p = lu.get().astype(np.float64), piv.get()
    pa = a.astype(np.float64)
    for i, j in enumerate(p):
        pa[[i, j]] = pa[[j, i]]
    err = np.abs(pa - (np.tril(f, -1) + np.eye(n)) @ np.triu(f)).sum(axis=0).max()
    assert err / (n * np.abs(a).sum(axis=0).max() * EPS[dt]) < 30


@pytest.mark.parametrize("dt", ("float32", "float64", "complex64"))
def test_qr_large(dt):
    m, n = 1536, 1024
    rng = np.random.default_rng(4)
    a = _rand(rng, (m, n), dt)
    q, r = S.qr(oxicuda.asarray(a))
    Q, R = q.get().astype(np.complex128), r.get().astype(np.complex128)
    assert np.abs(a - Q @ R).sum(axis=0).max() / (m * np.abs(a).sum(axis=0).max() * EPS[dt]) < 30
    assert np.abs(Q.conj().T @ Q - np.eye(n)).max() / (m * EPS[dt]) < 30
    cupy = _cupy()
    if cupy is not None:
        ref_r = cupy.linalg.qr(cupy.asarray(a), mode="r").get()
        assert np.abs(np.abs(np.diag(R)) - np.abs(np.diag(ref_r))).max() <= 1e3 * EPS[dt] * np.abs(ref_r).max()


def test_batched_getrf_and_potrf_10000_of_32():
    n, batch = 32, 10000
    rng = np.random.default_rng(5)
    a = rng.standard_normal((batch, n, n)).astype(np.float32)
    d = oxicuda.asarray(np.ascontiguousarray(a.transpose(0, 2, 1)))
    ptrs = oxicuda.asarray(np.array([d.ptr + z * n * n * 4 for z in range(batch)], np.uint64))
    piv = oxicuda.zeros((batch, n), np.int32)
    info = oxicuda.full((batch,), 7, np.int32)
    S.getrf_batched_ptr(n, ptrs.ptr, n, piv.ptr, info.ptr, batch, dtype="float32")
    assert not info.get().any()
    f = d.get().transpose(0, 2, 1).astype(np.float64)
    p = piv.get() - 1
    for z in rng.choice(batch, 20, replace=False):
        pa = a[z].astype(np.float64)
        for i, j in enumerate(p[z]):
            pa[[i, j]] = pa[[j, i]]
        assert np.abs(pa - (np.tril(f[z], -1) + np.eye(n)) @ np.triu(f[z])).max() < 1e-4 * np.abs(a[z]).max() * n
    spd = (a @ a.transpose(0, 2, 1) / n + np.eye(n)).astype(np.float32)
    d2 = oxicuda.asarray(np.ascontiguousarray(spd.transpose(0, 2, 1)))
    ptrs2 = oxicuda.asarray(np.array([d2.ptr + z * n * n * 4 for z in range(batch)], np.uint64))
    S.potrf_batched_ptr("L", n, ptrs2.ptr, n, info.ptr, batch, dtype="float32")
    assert not info.get().any()
    g = d2.get().transpose(0, 2, 1).astype(np.float64)
    for z in rng.choice(batch, 20, replace=False):
        low = np.tril(g[z])
        assert np.abs(low @ low.T - spd[z]).max() < 1e-4 * n


def test_det_slogdet_inv_large_against_cupy():
    cupy = _cupy()
    n = 512
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, n, n)) / np.sqrt(n)
    da = oxicuda.asarray(a)
    sign, logabs = S.slogdet(da)
    rs, rl = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.get(), rs)
    np.testing.assert_allclose(logabs.get(), rl, rtol=1e-10, atol=1e-9)
    inv = S.inv(da).get()
    assert np.abs(np.einsum("zij,zjk->zik", a, inv) - np.eye(n)).max() < 1e-9
    if cupy is not None:
        np.testing.assert_allclose(S.det(da).get(), cupy.linalg.det(cupy.asarray(a)).get(), rtol=1e-8)


@pytest.mark.parametrize("dt", ("float32", "float64", "complex128"))
def test_eigh_batched_small_and_order_128_against_cupy(dt):
    rng = np.random.default_rng(7)
    for shape in ((500, 32, 32), (128, 128)):
        x = _rand(rng, shape, dt)
        a = ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dt)
        w, v = S.eigh(oxicuda.asarray(a))
        W, V = w.get().astype(np.float64), v.get().astype(np.complex128)
        n = shape[-1]
        norm = np.abs(a).sum(axis=-2).max()
        assert np.abs(a @ V - V * W[..., None, :]).max() / (n * norm * EPS[dt]) < 30
        assert np.abs(np.conj(np.swapaxes(V, -1, -2)) @ V - np.eye(n)).max() / (n * EPS[dt]) < 30
        cupy = _cupy()
        if cupy is not None:
            ref = cupy.linalg.eigvalsh(cupy.asarray(a)).get()
            assert np.abs(W - ref).max() <= 30 * n * norm * EPS[dt]


@pytest.mark.parametrize("dt", ("float32", "float64", "complex64"))
def test_svd_batched_small_and_order_96_against_cupy(dt):
    rng = np.random.default_rng(8)
    for shape in ((400, 24, 16), (96, 96)):
        a = _rand(rng, shape, dt)
        u, s, vh = S.svd(oxicuda.asarray(a), full_matrices=False)
        U, sv, VH = u.get().astype(np.complex128), s.get().astype(np.float64), vh.get().astype(np.complex128)
        m, n = shape[-2:]
        norm = np.abs(a).sum(axis=-2).max()
        assert np.abs(a - (U * sv[..., None, :]) @ VH).sum(axis=-2).max() / (max(m, n) * norm * EPS[dt]) < 30
        cupy = _cupy()
        if cupy is not None:
            ref = cupy.linalg.svd(cupy.asarray(a), compute_uv=False).get()
            assert np.abs(sv - ref).max() <= 30 * max(m, n) * norm * EPS[dt]


@pytest.mark.parametrize("dt, n", [("complex64", 200), ("float64", 150)])
def test_eigh_global_variant_past_the_old_shared_tables(dt, n):
    """Orders whose round of rotations overflowed the global variant's old static shared table
    (real n >= 85, complex n > 128): now in the scratch; also run under memcheck (.diag)."""
    rng = np.random.default_rng(9)
    x = _rand(rng, (2, n, n), dt)
    a = ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dt)
    w, v = S.eigh(oxicuda.asarray(a), algo="jacobi")  # dispatch would take the tridiagonal path
    W, V = w.get().astype(np.float64), v.get().astype(np.complex128)
    norm = np.abs(a).sum(axis=-2).max()
    assert np.abs(a @ V - V * W[..., None, :]).max() / (n * norm * EPS[dt]) < 30
    np.testing.assert_allclose(W, np.linalg.eigvalsh(a.astype(np.complex128)), atol=30 * n * norm * EPS[dt])


@pytest.mark.parametrize("dt", ("float32", "float64", "complex128"))
def test_lstsq_pinv_matrix_rank_against_cupy(dt):
    cupy = _cupy()
    rng = np.random.default_rng(10)
    m, n = 300, 100
    a, b = _rand(rng, (m, n), dt), _rand(rng, (m, 3), dt)
    x, res, rank, _ = S.lstsq(oxicuda.asarray(a), oxicuda.asarray(b))
    X, R, RK, _ = np.linalg.lstsq(a.astype(np.complex128), b.astype(np.complex128), rcond=None)
    assert rank == RK == n
    assert np.abs(x.get() - X).max() <= 1e3 * m * EPS[dt] * max(np.abs(X).max(), 1)
    np.testing.assert_allclose(res.get(), R, rtol=1e3 * m * EPS[dt])
    a2 = a[:120, :80].copy()
    a2[:, 5] = a2[:, 7]
    p = S.pinv(oxicuda.asarray(a2)).get().astype(np.complex128)
    A2 = a2.astype(np.complex128)
    assert np.abs(A2 @ p @ A2 - A2).max() / (120 * np.abs(A2).max() * EPS[dt]) < 300
    st = _rand(rng, (200, 20, 12), dt)
    st[::3, :, 4] = st[::3, :, 0]
    r = S.matrix_rank(oxicuda.asarray(st)).get()
    assert r.tolist() == [11 if z % 3 == 0 else 12 for z in range(200)]
    if cupy is not None:
        # the same cutoff on both sides: cupy's default rcond is 1e-15 (numpy 1's), which in float32
        # keeps the repeated column's noise singular value (entries ~6e4 on the H200); ours is
        # numpy 2's max(m, n) * eps
        cut = 120 * float(EPS[dt])
        np.testing.assert_allclose(p, cupy.linalg.pinv(cupy.asarray(a2), rcond=cut).get(), atol=1e4 * 120 * EPS[dt])
        assert r.tolist() == cupy.linalg.matrix_rank(cupy.asarray(st)).get().tolist()
        cx = cupy.linalg.lstsq(cupy.asarray(a), cupy.asarray(b), rcond=None)[0].get()
        assert np.abs(x.get() - cx).max() <= 1e3 * m * EPS[dt] * max(np.abs(cx).max(), 1)


def test_solve_triangular_zero_diagonal_and_check_finite_large():
    rng = np.random.default_rng(11)
    n = 512
    a = np.triu(rng.standard_normal((3, n, n))) + n * np.eye(n)
    b = rng.standard_normal((3, n, 2))
    x = S.solve_triangular(oxicuda.asarray(a), oxicuda.asarray(b)).get()
    assert np.abs(a @ x - b).max() < 1e-10
    a[2, 300, 300] = 0
    with pytest.raises(np.linalg.LinAlgError, match="diagonal 300") as e:
        S.solve_triangular(oxicuda.asarray(a), oxicuda.asarray(b))
    assert e.value.index == (2,)
    a[1, 7, 400] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        S.lu_factor(oxicuda.asarray(a[1]))


@pytest.mark.parametrize("dt, n", [("float64", 1024), ("float32", 1024), ("complex128", 512), ("float64", 4096)])
def test_eigvalsh_tridiagonal_path_against_cupy(dt, n):
    """eigvalsh of large orders: tridiagonalization (per column: geqrf reflector, hemv,
    solver_sytrd_x, the lower-triangle her2 solver_sytrd_r2) + bisection (solver_stebz); the time is printed next to cuSOLVER's."""
    import time

    rng = np.random.default_rng(12)
    x = _rand(rng, (n, n), dt)
    a = ((x + np.conj(x.T)) / 2).astype(dt)
    da = oxicuda.asarray(a)
    S.eigvalsh(oxicuda.asarray(np.ascontiguousarray(a[:80, :80]))).get()  # compile / load the kernels
    t0 = time.perf_counter()
    with oxicuda.trace() as t:
        w = S.eigvalsh(da).get()
    ours = time.perf_counter() - t0
    fam = {s.family for s in t.specs() if s is not None}
    assert {"solver_sytrd_x", "solver_stebz"} <= fam and "solver_syevj" not in fam
    norm = np.abs(a).sum(axis=-2).max()
    ref = np.linalg.eigvalsh(a.astype(np.complex128))
    assert np.abs(w - ref).max() <= 30 * n * norm * EPS[dt]
    cupy = _cupy()
    if cupy is not None:
        ca = cupy.asarray(a)
        cupy.linalg.eigvalsh(ca)
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        cw = cupy.linalg.eigvalsh(ca).get()
        theirs = time.perf_counter() - t0
        print(f"eigvalsh {dt} n={n}: oxicuda {ours * 1e3:.1f} ms, cuSOLVER {theirs * 1e3:.1f} ms, "
              f"ratio (cuSOLVER/oxicuda) {theirs / ours:.3f}")
        assert np.abs(w - cw).max() <= 30 * n * norm * EPS[dt]


def test_cusolver_compat_syevd_gesvd_gesvdj_against_cupy():
    """The CuPy-shaped calls at sizes past the shared variants (global Jacobi kernels)."""
    from oxicuda.cuda import cusolver

    rng = np.random.default_rng(13)
    h = cusolver.create()
    n = 160
    x = rng.standard_normal((n, n))
    a_host = (x + x.T) / 2
    a = oxicuda.asarray(np.asfortranarray(a_host))
    w = oxicuda.asarray(np.zeros(n))
    info = oxicuda.full((1,), 99, np.int32)
    lw = cusolver.dsyevd_bufferSize(h, 1, 0, n, a.ptr, n, w.ptr)
    work = oxicuda.asarray(np.zeros(lw))
    cusolver.dsyevd(h, 1, 0, n, a.ptr, n, w.ptr, work.ptr, lw, info.ptr)
    assert info.get()[0] == 0
    W, V = w.get(), a.get()
    assert np.abs(a_host @ V - V * W).max() < 1e-10 * n
    m, k = 200, 120
    b_host = rng.standard_normal((m, k)).astype(np.float32)
    b = oxicuda.asarray(np.asfortranarray(b_host))
    s = oxicuda.asarray(np.zeros(k, np.float32))
    u = oxicuda.asarray(np.zeros((m, m), np.float32, order="F"))
    vt = oxicuda.asarray(np.zeros((k, k), np.float32, order="F"))
    lw = cusolver.sgesvd_bufferSize(h, m, k)
    work = oxicuda.asarray(np.zeros(lw, np.float32))
    cusolver.sgesvd(h, ord("A"), ord("A"), m, k, b.ptr, m, s.ptr, u.ptr, m, vt.ptr, k, work.ptr, lw, 0, info.ptr)
    assert info.get()[0] == 0
    U, SV, VT = u.get().astype(np.float64), s.get().astype(np.float64), vt.get().astype(np.float64)
    assert np.abs((U[:, :k] * SV) @ VT - b_host).max() < 1e-4 * np.abs(b_host).max() * 10
    assert np.abs(U.T @ U - np.eye(m)).max() < 1e-4
    cupy = _cupy()
    if cupy is not None:
        np.testing.assert_allclose(W, cupy.linalg.eigvalsh(cupy.asarray(a_host)).get(), atol=1e-10 * n)
        np.testing.assert_allclose(SV, cupy.linalg.svd(cupy.asarray(b_host), compute_uv=False).get(),
                                   atol=1e-4 * np.abs(SV).max())
    cusolver.destroy(h)
