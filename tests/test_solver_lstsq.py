"""oxicuda.solver lstsq, pinv, matrix_rank (numpy.linalg semantics), check_finite and
solve_triangular's singular check (scipy.linalg semantics) on the live backend, against float64
numpy with NaN-poisoned allocations; trace tests name the kernels that ran."""


from __future__ import annotations

import numpy as np
import pytest
from solver_cases import DTYPES, EPS, THRESH, no_host_lapack, poisoned, rand, rel  # noqa: F401

import oxicuda
import oxicuda.solver as S


def families(t):
    return [s.family for s in t.specs() if s is not None]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape, k", [((9, 4), 3), ((6, 6), None), ((1, 1), 2)])
def test_lstsq_full_rank_through_qr(rng, poisoned, dt, shape, k):
    m, n = shape
    a = rand(rng, shape, dt)
    b = rand(rng, (m,) if k is None else (m, k), dt)
    with oxicuda.trace() as t:
        x, res, rank, s = S.lstsq(oxicuda.asarray(a), oxicuda.asarray(b))
    fam = families(t)
    assert {"solver_gesvdj", "solver_svals", "solver_geqr2"} <= set(fam)
    X, R, RK, SV = np.linalg.lstsq(a.astype(rel(dt)), b.astype(rel(dt)), rcond=None)
    assert rank == RK == n
    assert x.shape == X.shape and res.shape == R.shape and s.shape == SV.shape
    scale = np.abs(a).sum(axis=0).max() * max(np.abs(X).max(), 1.0)
    assert np.abs(x.get() - X).max() / (m * scale * EPS[dt]) < THRESH * 10
    np.testing.assert_allclose(s.get(), SV, atol=THRESH * m * np.abs(SV).max() * EPS[dt])
    if R.size:
        np.testing.assert_allclose(res.get(), R, rtol=1e3 * EPS[dt], atol=THRESH * m * scale ** 2 * EPS[dt])


@pytest.mark.parametrize("dt", ("float64", "complex64"))
@pytest.mark.parametrize("shape", [(8, 5), (4, 7)])
def test_lstsq_rank_deficient_or_wide_is_minimum_norm(rng, poisoned, dt, shape):
    m, n = shape
    a = rand(rng, shape, dt)
    if m > n:
        a[:, -1] = a[:, 0] + a[:, 1]  # rank n - 1
    b = rand(rng, (m, 2), dt)
    with oxicuda.trace() as t:
        x, res, rank, _ = S.lstsq(oxicuda.asarray(a), oxicuda.asarray(b))
    assert "solver_geqr2" not in families(t) and "solver_svals" in families(t)
    # the reference cuts at the input dtype's eps (a's dependent column is exact only to it)
    X, R, RK, _ = np.linalg.lstsq(a.astype(rel(dt)), b.astype(rel(dt)), rcond=max(m, n) * EPS[dt])
    assert rank == RK and res.shape == R.shape == (0,)
    np.testing.assert_allclose(x.get(), X, atol=1e3 * max(m, n) * EPS[dt] * np.abs(X).max())


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 6), (2, 4, 4)])
def test_pinv_matches_numpy_and_penrose(rng, poisoned, dt, shape):
    a = rand(rng, shape, dt)
    if len(shape) == 3:
        a[1, :, 3] = a[1, :, 0]  # a rank-deficient member of the stack
    with oxicuda.trace() as t:
        p = S.pinv(oxicuda.asarray(a))
    assert {"solver_gesvdj", "solver_svals"} <= set(families(t))
    P = np.linalg.pinv(a.astype(rel(dt)))
    assert p.shape == P.shape
    got = p.get().astype(rel(dt))
    A = a.astype(rel(dt))
    # Penrose: A P A = A
    assert np.abs(A @ got @ A - A).max() / (max(shape[-2:]) * np.abs(A).max() * EPS[dt]) < THRESH * 10
    np.testing.assert_allclose(got, P, atol=1e3 * max(shape[-2:]) * EPS[dt] * np.abs(P).max())


def test_pinv_rcond_cuts_small_singular_values(rng, poisoned):
    q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    a = (q * np.array([1.0, 0.5, 1e-3, 1e-9, 0.0])) @ q.T
    # the smallest singular value each cutoff keeps: 1e-9 (default), 1e-3, 0.5; the pinv is
    # accurate to about eps / s_min relative to its largest entry
    for rc, smin in ((None, 1e-9), (1e-6, 1e-3), (1e-2, 0.5)):
        ref = np.linalg.pinv(a, rcond=rc) if rc is not None else np.linalg.pinv(a)
        np.testing.assert_allclose(S.pinv(oxicuda.asarray(a), rcond=rc).get(), ref,
                                   atol=1e3 * EPS["float64"] / smin * np.abs(ref).max())


@pytest.mark.parametrize("dt", DTYPES)
def test_matrix_rank_stack_tol_and_vector(rng, poisoned, dt):
    a = rand(rng, (3, 6, 4), dt)
    a[1, :, 2] = 0
    a[2] = np.outer(rand(rng, 6, dt), rand(rng, 4, dt))
    with oxicuda.trace() as t:
        r = S.matrix_rank(oxicuda.asarray(a))
    assert {"solver_gesvdj", "solver_svals"} <= set(families(t))
    assert r.dtype == np.int64 and r.shape == (3,)
    sv = np.linalg.svd(a.astype(rel(dt)), compute_uv=False)
    ref = (sv > sv[:, :1] * 6 * EPS[dt]).sum(axis=-1)  # numpy's rule at the input dtype's eps
    assert r.get().tolist() == ref.tolist() == [4, 3, 1]
    assert int(S.matrix_rank(oxicuda.asarray(a[0])).get()) == 4
    big = float(np.linalg.svd(a[0].astype(rel(dt)), compute_uv=False)[1]) * 0.999
    assert int(S.matrix_rank(oxicuda.asarray(a[0]), tol=big).get()) == 2
    assert int(S.matrix_rank(oxicuda.asarray(np.zeros(4, dt))).get()) == 0
    assert int(S.matrix_rank(oxicuda.asarray(np.ones(4, dt))).get()) == 1


def test_no_host_lapack(rng, no_host_lapack):
    a = rand(rng, (6, 4), "float64")
    S.lstsq(oxicuda.asarray(a), oxicuda.asarray(rand(rng, (6,), "float64")))
    S.pinv(oxicuda.asarray(a))
    S.matrix_rank(oxicuda.asarray(a))


def test_bad_input_raises_before_launch():
    with oxicuda.trace() as t:
        with pytest.raises(np.linalg.LinAlgError):
            S.lstsq(np.ones((3, 2, 2)), np.ones((2,)))
        with pytest.raises(np.linalg.LinAlgError):
            S.lstsq(np.ones((3, 2)), np.ones((4,)))
        with pytest.raises(TypeError):
            S.lstsq(np.ones((3, 2)), np.ones((3,), np.float32))
        with pytest.raises(TypeError):
            S.pinv(np.ones((3, 2), np.int64))
        with pytest.raises(np.linalg.LinAlgError):
            S.pinv(np.ones(3))
        with pytest.raises(ValueError):
            S.matrix_rank(np.ones((3, 2)), tol=1.0, rtol=1.0)
    assert t.launches == []


@pytest.mark.parametrize("dt", DTYPES)
def test_solve_triangular_zero_diagonal_raises_like_scipy(rng, dt):
    n = 6
    a = np.triu(rand(rng, (2, n, n), dt)) + 3 * np.eye(n, dtype=dt)
    a[1, 3, 3] = 0
    b = rand(rng, (2, n, 1), dt)
    with oxicuda.trace() as t, pytest.raises(np.linalg.LinAlgError,
                                             match="singular matrix.*resolution failed at diagonal 3") as e:
        S.solve_triangular(oxicuda.asarray(a), oxicuda.asarray(b))
    assert e.value.index == (1,)
    assert "solver_svals" in families(t) and not any("trsm" in f for f in families(t))  # raised before the solve
    # unit_diagonal ignores the stored diagonal
    x = S.solve_triangular(oxicuda.asarray(a[1]), oxicuda.asarray(b[1]), unit_diagonal=True).get()
    t1 = np.triu(a[1], 1).astype(rel(dt)) + np.eye(n)
    np.testing.assert_allclose(x, np.linalg.solve(t1, b[1]), atol=1e3 * n * EPS[dt] * 30)


@pytest.mark.parametrize("fn", ("lu_factor", "cho_factor", "solve_triangular", "lu_solve", "cho_solve"))
def test_check_finite_on_the_device(rng, fn):
    a = rand(rng, (4, 4), "float64") + 4 * np.eye(4)
    a = a @ a.T
    b = rand(rng, (4,), "float64")
    bad = a.copy()
    bad[2, 1] = np.inf
    badb = b.copy()
    badb[0] = np.nan
    da, dbad, db, dbadb = (oxicuda.asarray(x) for x in (a, bad, b, badb))
    call = {
        "lu_factor": lambda m, v: S.lu_factor(m),
        "cho_factor": lambda m, v: S.cho_factor(m),
        "solve_triangular": lambda m, v: S.solve_triangular(m, v),
        "lu_solve": lambda m, v: S.lu_solve(S.lu_factor(da) if m is da else (m, oxicuda.asarray(np.zeros(4, np.int32))), v),
        "cho_solve": lambda m, v: S.cho_solve(S.cho_factor(da) if m is da else (m, False), v),
    }[fn]
    with oxicuda.trace() as t, pytest.raises(ValueError, match="infs or NaNs"):
        call(dbad, db)
    assert "solver_svals" in families(t)
    if fn in ("solve_triangular", "lu_solve", "cho_solve"):
        with pytest.raises(ValueError, match="infs or NaNs"):
            call(da, dbadb)
    call(da, db)  # finite input passes
