"""oxicuda.solver Cholesky family (potrf/potrs, cholesky, cho_factor, cho_solve) on the live
backend against float64 numpy/scipy, with poisoned outputs and the unused triangle poisoned."""


from __future__ import annotations

import numpy as np
import pytest
from solver_cases import (  # noqa: F401 - fixtures
    DTYPES,
    EPS,
    THRESH,
    blocked,
    conditioned,
    hilbert,
    no_host_lapack,
    poisoned,
    rand,
    rel,
    solve_residual,
)

import oxicuda
import oxicuda.solver as S
from oxicuda.solver import potrf as C


def spd(rng, shape, dt):
    x = rand(rng, shape, dt)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) / n + np.eye(n)).astype(dt)


def chol_backward_error(a, l_factor):
    """||A - L L^H||_1 / (n ||A||_1 eps)."""
    dt = a.dtype.name
    A, L = a.astype(rel(dt)), l_factor.astype(rel(dt))
    n = a.shape[-1]
    return np.abs(A - L @ L.conj().T).sum(axis=0).max() / (n * np.abs(A).sum(axis=0).max() * EPS[dt])


def poison_other(a, upper):
    n = a.shape[-1]
    mask = np.tril(np.ones((n, n), bool), -1) if upper else np.triu(np.ones((n, n), bool), 1)
    out = a.copy()
    out[..., mask] = np.nan
    return out


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 7, 7), (33, 33)])
@pytest.mark.parametrize("upper", (False, True))
def test_cholesky_small_path_both_triangles(rng, poisoned, dt, shape, upper):
    a = spd(rng, shape, dt)
    with oxicuda.trace() as t:
        f = S.cholesky(oxicuda.asarray(poison_other(a, upper)), upper=upper).get()
    assert any(s is not None and s.family == "solver_potf2" and s.space == "shared" for s in t.specs())
    for z, fz in enumerate(f.reshape(-1, *shape[-2:])):
        az = a.reshape(-1, *shape[-2:])[z]
        lz = fz.conj().T if upper else fz
        assert np.all(lz == np.tril(lz))  # zeros above (exactly)
        assert chol_backward_error(az, lz) < THRESH


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("upper", (False, True))
def test_blocked_potrf_crosses_the_block_twice(rng, poisoned, blocked, dt, upper):
    a = spd(rng, (20, 20), dt)
    with oxicuda.trace() as t:
        f = S.cholesky(oxicuda.asarray(poison_other(a, upper)), upper=upper).get()
    fams = [s.family for s in t.specs() if s is not None]
    assert fams.count("solver_potf2") == 3 and "blas3_trsm_panel" in fams
    assert fams.count("solver_herk_tri") == 2 and any("gemm" in f for f in fams)
    lz = f.conj().T if upper else f
    assert chol_backward_error(a, lz) < THRESH


def test_order_100(rng, poisoned):
    for n in (100,):
        a = spd(rng, (n, n), "float64")
        assert chol_backward_error(a, S.cholesky(oxicuda.asarray(a)).get()) < THRESH


@pytest.mark.parametrize("kind", ("cond1e6", "hilbert"))
def test_hard_spd_matrices(rng, poisoned, blocked, kind):
    n = 12
    if kind == "hilbert":
        a = hilbert(n, "float64")
    else:
        q = conditioned(rng, n, 1e6, "float64")
        a = q @ q.T
        a = (a + a.T) / 2 + 1e-9 * np.eye(n)
    l_factor = S.cholesky(oxicuda.asarray(a)).get()
    assert chol_backward_error(a, l_factor) < THRESH


@pytest.mark.parametrize("dt, path", [(d, "small") for d in DTYPES] + [("float64", "blocked"),
                                                                         ("complex128", "blocked")])
@pytest.mark.parametrize("lower", (False, True))
def test_cho_factor_cho_solve(rng, poisoned, request, dt, lower, path):
    if path == "blocked":
        request.getfixturevalue("blocked")
    n = 7 if path == "small" else 20
    a = spd(rng, (n, n), dt)
    b = rand(rng, (n, 3), dt)
    c = S.cho_factor(oxicuda.asarray(a), lower=lower)
    assert c[1] is lower
    cf = c[0].get()
    keep = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    assert np.array_equal(cf[keep], a[keep])  # the other triangle is a's, untouched
    fam = "solver_potrs_small" if path == "small" else "blas3_trsm_panel"
    with oxicuda.trace() as t:
        x = S.cho_solve(c, oxicuda.asarray(b)).get()
    assert fam in [s.family for s in t.specs() if s is not None]
    assert solve_residual(a, x, b) < THRESH
    bt = rand(rng, (2, n), dt)  # a transposed right-hand side (F-ordered view)
    x = S.cho_solve(c, oxicuda.asarray(bt).T).get()
    assert solve_residual(a, x, bt.T) < THRESH


def test_batched_cho_solve_and_vector(rng, poisoned):
    a = spd(rng, (3, 5, 5), "complex128")
    b = rand(rng, (3, 5, 2), "complex128")
    c = S.cho_factor(oxicuda.asarray(a), lower=True)
    x = S.cho_solve(c, oxicuda.asarray(b)).get()
    np.testing.assert_allclose(x, np.linalg.solve(a, b), atol=1e-12)
    a1 = a[0]
    v = rand(rng, (5,), "complex128")
    x = S.cho_solve(S.cho_factor(oxicuda.asarray(a1)), oxicuda.asarray(v)).get()
    np.testing.assert_allclose(x, np.linalg.solve(a1, v), atol=1e-12)


@pytest.mark.parametrize("path", ("small", "blocked"))
def test_indefinite_raises_with_index_and_minor(rng, request, path):
    if path == "blocked":
        request.getfixturevalue("blocked")
    n = 20
    a = spd(rng, (3, n, n), "float64")
    a[2, 11, 11] = -50.0  # minor of order 12 fails
    with pytest.raises(np.linalg.LinAlgError) as exc:
        S.cholesky(oxicuda.asarray(a))
    assert exc.value.index == (2,) and exc.value.info == 12
    assert "not positive definite" in str(exc.value)
    nan = spd(rng, (4, 4), "float32")
    nan[1, 1] = np.nan
    with pytest.raises(S.LinAlgError):  # the device factorization reports the NaN pivot
        S.cho_factor(oxicuda.asarray(nan), check_finite=False)
    with pytest.raises(ValueError, match="infs or NaNs"):  # scipy's check_finite, on the device
        S.cho_factor(oxicuda.asarray(nan))


def test_potrf_ptr_info_per_matrix_and_triangle_untouched(rng):
    n = 6
    a = spd(rng, (3, n, n), "float64")
    a[1, 3, 3] = -1.0
    stored = poison_other(a, False)
    d = oxicuda.asarray(np.ascontiguousarray(stored.transpose(0, 2, 1)))
    info = oxicuda.full((3,), 9, np.int32)
    C.potrf_ptr("L", n, d.ptr, n, info.ptr, dtype="float64", batch=3, stride_a=n * n)
    assert info.get().tolist() == [0, 4, 0]
    f = d.get().transpose(0, 2, 1)
    assert np.isnan(f[:, np.triu(np.ones((n, n), bool), 1)]).all()


def test_no_host_lapack_on_the_cholesky_path(rng, no_host_lapack):
    a = spd(rng, (2, 6, 6), "complex64")
    with oxicuda.trace() as t:
        S.cho_solve(S.cho_factor(oxicuda.asarray(a)), oxicuda.asarray(rand(rng, (2, 6, 1), "complex64")))
        S.cholesky(oxicuda.asarray(a))
    assert {"solver_potf2", "solver_potrs_small"} <= {s.family for s in t.specs() if s is not None}


@pytest.mark.parametrize("call, exc, words", [
    (lambda: S.cholesky(np.ones((3, 3), np.int32)), TypeError, "int32"),
    (lambda: S.cholesky(np.ones((3, 2))), np.linalg.LinAlgError, "square"),
    (lambda: S.cho_solve((np.eye(3), True), np.ones(2)), ValueError, "order 3"),
    (lambda: S.cho_solve(np.eye(3), np.ones(3)), TypeError, "pair"),
])
def test_bad_input_raises_before_any_launch(call, exc, words):
    with oxicuda.trace() as t, pytest.raises(exc, match=words):
        call()
    assert [r for r in t.launches if "solver" in r.kernel] == []
