"""oxicuda.solver LU family (getrf/getrs, solve, inv, det, slogdet, lu_factor/lu_solve,
solve_triangular) on the live backend against float64 numpy/scipy, with poisoned outputs."""


from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from solver_cases import (  # noqa: F401 - fixtures
    DTYPES,
    THRESH,
    assert_forward_close,
    blocked,
    conditioned,
    graded,
    hilbert,
    lu_backward_error,
    no_host_lapack,
    poisoned,
    rand,
    rel,
    solve_residual,
)

import oxicuda
import oxicuda.solver as S

TOL = {"float32": 2e-4, "float64": 1e-11, "complex64": 2e-4, "complex128": 1e-11}


def check_lu(a, lu, piv, pivots=True):
    """Pivots as scipy chooses them (same tie rule; on random matrices, where no two candidates
    are within rounding of each other) and a small backward error for each matrix."""
    a2 = a.reshape(-1, *a.shape[-2:])
    lu2, piv2 = lu.reshape(a2.shape), piv.reshape(a2.shape[:-1])
    for z in range(a2.shape[0]):
        assert np.all(np.isfinite(lu2[z]))
        assert lu_backward_error(a2[z], lu2[z], piv2[z]) < THRESH
        assert np.all((piv2[z] >= np.arange(a.shape[-1])) & (piv2[z] < a.shape[-1]))
        if pivots:
            _, ref_piv = scipy.linalg.lu_factor(a2[z].astype(rel(a.dtype.name)))
            assert np.array_equal(piv2[z], ref_piv)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 7, 7), (33, 33)])
def test_lu_factor_small_path_matches_scipy_pivots_with_small_backward_error(rng, poisoned, dt, shape):
    a = rand(rng, shape, dt)
    with oxicuda.trace() as t:
        lu, piv = S.lu_factor(oxicuda.asarray(a))
    assert any(s is not None and s.family == "solver_getf2" and s.space == "shared" for s in t.specs())
    check_lu(a, lu.get(), piv.get())


@pytest.mark.parametrize("dt", ("float64",))
def test_lu_factor_order_64_small_path(rng, poisoned, dt):
    a = rand(rng, (64, 64), dt)
    lu, piv = S.lu_factor(oxicuda.asarray(a))
    check_lu(a, lu.get(), piv.get())


@pytest.mark.parametrize("dt", DTYPES)
def test_blocked_getrf_crosses_the_block_twice(rng, poisoned, blocked, dt):
    a = rand(rng, (20, 20), dt)
    with oxicuda.trace() as t:
        lu, piv = S.lu_factor(oxicuda.asarray(a))
    fams = [s.family for s in t.specs() if s is not None]
    assert fams.count("solver_getf2") == 3  # panels of 8, 8, 4 columns
    assert "solver_laswp" in fams and "blas3_trsm_panel" in fams
    assert any(f.startswith("gemm") or "gemm" in f for f in fams)
    check_lu(a, lu.get(), piv.get())


def test_blocked_getrf_batch_of_three_and_order_100(rng, poisoned, blocked):
    a = rand(rng, (3, 20, 20), "float64")
    lu, piv = S.lu_factor(oxicuda.asarray(a))
    check_lu(a, lu.get(), piv.get())


def test_order_100_default_dispatch(rng, poisoned):
    a = rand(rng, (100, 100), "float32")
    with oxicuda.trace() as t:
        lu, piv = S.lu_factor(oxicuda.asarray(a))
    assert [s.space for s in t.specs() if s is not None and s.family == "solver_getf2"] == ["global", "global"]
    check_lu(a, lu.get(), piv.get(), pivots=False)


@pytest.mark.parametrize("kind", ("cond1e6", "hilbert", "graded"))
@pytest.mark.parametrize("path", ("small", "blocked"))
def test_backward_error_on_hard_matrices(rng, poisoned, request, kind, path):
    if path == "blocked":
        request.getfixturevalue("blocked")
    n = 20
    a = {"cond1e6": lambda: conditioned(rng, n, 1e6, "float64"), "hilbert": lambda: hilbert(n, "float64"),
         "graded": lambda: graded(rng, n, "float64")}[kind]()
    lu, piv = S.lu_factor(oxicuda.asarray(a))
    check_lu(a, lu.get(), piv.get(), pivots=False)
    b = rand(rng, (n, 3), "float64")
    x = S.solve(oxicuda.asarray(a), oxicuda.asarray(b)).get()
    assert solve_residual(a, x, b) < THRESH


@pytest.mark.parametrize("dt", DTYPES)
def test_solve_inv_det_slogdet_batched_match_numpy(rng, poisoned, dt):
    a = rand(rng, (3, 5, 5), dt)
    b = rand(rng, (3, 5, 2), dt)
    da = oxicuda.asarray(a)
    x = S.solve(da, oxicuda.asarray(b)).get()
    assert_forward_close(x, np.linalg.solve(a.astype(rel(dt)), b), a)
    assert_forward_close(S.inv(da).get(), np.linalg.inv(a.astype(rel(dt))), a)
    ref = np.linalg.det(a.astype(rel(dt)))
    np.testing.assert_allclose(S.det(da).get(), ref, rtol=TOL[dt] * 10, atol=0)
    sign, logabs = S.slogdet(da)
    rs, rl = np.linalg.slogdet(a.astype(rel(dt)))
    np.testing.assert_allclose(sign.get(), rs, atol=TOL[dt] * 10)
    np.testing.assert_allclose(logabs.get(), rl, atol=TOL[dt] * 10)
    assert logabs.dtype == np.dtype(dt).type(0).real.dtype


@pytest.mark.parametrize("dt", ("float64", "complex64"))
def test_solve_vector_transposed_rhs_and_shared_matrix(rng, poisoned, dt):
    a = rand(rng, (7, 7), dt)
    ra = a.astype(rel(dt))
    v = rand(rng, (7,), dt)
    np.testing.assert_allclose(S.solve(oxicuda.asarray(a), oxicuda.asarray(v)).get(), np.linalg.solve(ra, v),
                               atol=TOL[dt] * 10)
    bt = rand(rng, (3, 7), dt)  # b = bt.T: an F-ordered (7, 3) view
    dbt = oxicuda.asarray(bt)
    x = S.solve(oxicuda.asarray(a), dbt.T).get()
    np.testing.assert_allclose(x, np.linalg.solve(ra, bt.T), atol=TOL[dt] * 10)
    at = oxicuda.asarray(np.ascontiguousarray(a.T))
    np.testing.assert_allclose(S.solve(at.T, dbt.T).get(), np.linalg.solve(ra, bt.T), atol=TOL[dt] * 10)
    bs = rand(rng, (3, 7, 2), dt)  # one matrix for a stack of right-hand sides
    np.testing.assert_allclose(S.solve(oxicuda.asarray(a), oxicuda.asarray(bs)).get(), np.linalg.solve(ra, bs),
                               atol=TOL[dt] * 10)


@pytest.mark.parametrize("dt", ("float32", "complex128"))
def test_lu_solve_all_transposes_and_blocked_getrs(rng, poisoned, blocked, dt):
    n = 20
    a = rand(rng, (n, n), dt)
    b = rand(rng, (n, 3), dt)
    lu, piv = S.lu_factor(oxicuda.asarray(a))
    ra = a.astype(rel(dt))
    for trans, op in ((0, ra), (1, ra.T), (2, ra.conj().T)):
        with oxicuda.trace() as t:
            x = S.lu_solve((lu, piv), oxicuda.asarray(b), trans=trans).get()
        assert "solver_laswp" in [s.family for s in t.specs() if s is not None]
        assert solve_residual(op.astype(dt), x, b) < THRESH


@pytest.mark.parametrize("dt", DTYPES)
def test_lu_solve_small_kernel_all_transposes_batched(rng, poisoned, dt):
    a = rand(rng, (3, 7, 7), dt)
    b = rand(rng, (3, 7, 2), dt)
    lu, piv = S.lu_factor(oxicuda.asarray(a))
    ra = a.astype(rel(dt))
    for trans, op in ((0, ra), (1, np.swapaxes(ra, 1, 2)), (2, np.swapaxes(ra, 1, 2).conj())):
        with oxicuda.trace() as t:
            x = S.lu_solve((lu, piv), oxicuda.asarray(b), trans=trans).get()
        assert "solver_getrs_small" in [s.family for s in t.specs() if s is not None]
        np.testing.assert_allclose(x, np.linalg.solve(op, b), atol=TOL[dt] * 10)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("lower", (True, False))
def test_solve_triangular_both_triangles_all_transposes(rng, poisoned, dt, lower):
    n = 7
    a = rand(rng, (n, n), dt) + 3 * np.eye(n, dtype=dt)
    tri = np.tril(a) if lower else np.triu(a)
    other = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    stored = np.where(other, np.nan, a).astype(dt)  # the other triangle must not be read
    b = rand(rng, (n, 2), dt)
    for trans in (0, 1, 2):
        for unit in (False, True):
            x = S.solve_triangular(oxicuda.asarray(stored), oxicuda.asarray(b), trans=trans, lower=lower,
                                   unit_diagonal=unit, check_finite=False).get()
            t = tri.astype(rel(dt))
            if unit:
                t = t - np.diag(np.diag(t)) + np.eye(n)
            op = (t, t.T, t.conj().T)[trans]
            np.testing.assert_allclose(x, np.linalg.solve(op, b), atol=TOL[dt] * 10)


def test_singular_input_raises_numpy_linalgerror_with_index(rng):
    a = rand(rng, (3, 5, 5), "float64")
    a[1, :, 2] = 0.0  # column 2 of matrix 1 is zero: U[2, 2] == 0
    da = oxicuda.asarray(a)
    for fn in (S.solve, lambda m, b: S.inv(m)):
        with pytest.raises(np.linalg.LinAlgError) as exc:
            fn(da, oxicuda.asarray(rand(rng, (3, 5, 1), "float64")))
        assert isinstance(exc.value, S.LinAlgError)
        assert exc.value.index == (1,) and exc.value.info == 3
        assert "Singular matrix" in str(exc.value)
    d = S.det(da).get()
    assert d[1] == 0.0 and d[0] != 0.0
    sign, logabs = S.slogdet(da)
    assert sign.get()[1] == 0.0 and logabs.get()[1] == -np.inf
    lu, _ = S.lu_factor(da)  # scipy only warns: a factor with a zero pivot
    assert lu.get()[1, 2, 2] == 0.0


def test_nan_input_gives_nan_not_garbage(rng):
    a = rand(rng, (5, 5), "float64")
    a[3, 1] = np.nan
    x = S.solve(oxicuda.asarray(a), oxicuda.asarray(rand(rng, (5,), "float64"))).get()
    assert np.isnan(x).any()


def test_empty_and_zero_order_matrices():
    assert S.det(oxicuda.zeros((2, 0, 0), np.float64)).get().tolist() == [1.0, 1.0]
    assert S.solve(oxicuda.zeros((0, 0), np.float32), oxicuda.zeros((0,), np.float32)).shape == (0,)
    assert S.inv(oxicuda.zeros((0, 3, 3), np.complex64)).shape == (0, 3, 3)


def test_device_path_only_no_host_lapack(rng, no_host_lapack):
    a = rand(rng, (2, 6, 6), "complex128")
    b = rand(rng, (2, 6, 1), "complex128")
    da, db = oxicuda.asarray(a), oxicuda.asarray(b)
    with oxicuda.trace() as t:
        x = S.solve(da, db)
        S.inv(da)
        S.det(da)
        S.slogdet(da)
        S.lu_solve(S.lu_factor(da), db)
        S.solve_triangular(da, db, lower=True)
    fams = {s.family for s in t.specs() if s is not None}
    assert {"solver_getf2", "solver_getrs_small", "solver_copy", "solver_diag", "solver_pivot_shift",
            "blas3_trsm_panel"} <= fams
    assert np.abs(np.einsum("zij,zjk->zik", a, x.get()) - b).max() < 1e-12


@pytest.mark.parametrize("call, exc, words", [
    (lambda: S.solve(np.ones((3, 3), np.int64), np.ones(3)), TypeError, "int64"),
    (lambda: S.solve(np.ones((3, 4)), np.ones(3)), np.linalg.LinAlgError, "square"),
    (lambda: S.solve(np.eye(3), np.ones(4)), ValueError, "order 3"),
    (lambda: S.solve(np.eye(3), np.ones(3, np.float32)), TypeError, "must match"),
    (lambda: S.inv(np.ones(3)), np.linalg.LinAlgError, "two-dimensional"),
    (lambda: S.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1))), ValueError, "batch shape"),
    (lambda: S.lu_solve((np.eye(3), np.zeros(3, np.int64)), np.ones(3)), TypeError, "int32"),
    (lambda: S.lu_solve((np.eye(3), np.zeros(3, np.int32)), np.ones(3), trans=3), ValueError, "trans"),
    (lambda: S.det(np.ones((2, 2), np.float16)), TypeError, "float16"),
])
def test_bad_input_raises_before_any_launch(call, exc, words):
    with oxicuda.trace() as t, pytest.raises(exc, match=words):
        call()
    assert [r for r in t.launches if "solver" in r.kernel or "gemm" in r.kernel] == []
