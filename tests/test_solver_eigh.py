"""oxicuda.solver eigh/eigvalsh (Jacobi, syevj) on the live backend against float64 numpy:
eigen residuals ||A V - V diag(w)|| / (n ||A|| eps) and orthogonality ||V^H V - I|| / (n eps)."""


from __future__ import annotations

import numpy as np
import pytest
from solver_cases import DTYPES, EPS, THRESH, graded, hilbert, no_host_lapack, poisoned, rand, rel  # noqa: F401

import oxicuda
import oxicuda.solver as S
from oxicuda.solver import dispatch


def hermitian(rng, shape, dt):
    x = rand(rng, shape, dt)
    return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dt)


def check_eigh(a, w, v):
    dt = a.dtype.name
    A, W, V = a.astype(rel(dt)), w.astype(np.float64), v.astype(rel(dt))
    n = a.shape[-1]
    norm = max(np.abs(A).sum(axis=-2).max(), np.finfo(float).tiny)
    assert np.all(np.diff(W, axis=-1) >= 0)  # ascending
    assert np.abs(A @ V - V * W[..., None, :]).max() / (n * norm * EPS[dt]) < THRESH
    assert np.abs(np.conj(np.swapaxes(V, -1, -2)) @ V - np.eye(n)).max() / (n * EPS[dt]) < THRESH
    np.testing.assert_allclose(W, np.linalg.eigvalsh(A), atol=THRESH * n * norm * EPS[dt])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape, uplo", [((1, 1), "L"), ((2, 2), "U"), ((3, 5, 5), "L"), ((6, 6), "U")])
def test_eigh_small_shared_path_both_triangles(rng, poisoned, dt, shape, uplo):
    a = hermitian(rng, shape, dt)
    n = shape[-1]
    other = np.triu(np.ones((n, n), bool), 1) if uplo == "L" else np.tril(np.ones((n, n), bool), -1)
    stored = a.copy()
    stored[..., other] = np.nan  # the other triangle must not be read
    with oxicuda.trace() as t:
        w, v = S.eigh(oxicuda.asarray(stored), UPLO=uplo)
    assert [s.space for s in t.specs() if s is not None and s.family == "solver_syevj"] == ["shared"]
    assert w.dtype == np.zeros(1, dt).real.dtype
    check_eigh(a, w.get(), v.get())
    if n > 1:
        wv = S.eigvalsh(oxicuda.asarray(stored), UPLO=uplo).get()
        np.testing.assert_allclose(wv, w.get(), atol=THRESH * n * np.abs(a).max() * EPS[dt])


@pytest.mark.parametrize("dt", ("float64", "complex64"))
def test_eigh_global_path(rng, poisoned, monkeypatch, dt):
    monkeypatch.setitem(dispatch.DISPATCH, "SMALL_MAX", 0)
    a = hermitian(rng, (2, 9, 9), dt)
    with oxicuda.trace() as t:
        w, v = S.eigh(oxicuda.asarray(a))
    assert [s.space for s in t.specs() if s is not None and s.family == "solver_syevj"] == ["global"]
    check_eigh(a, w.get(), v.get())


@pytest.mark.parametrize("kind", ("hilbert", "graded", "repeated"))
def test_hard_spectra(rng, poisoned, kind):
    n = 8
    if kind == "hilbert":
        a = hilbert(n, "float64")
    elif kind == "graded":
        g = graded(rng, n, "float64")
        a = (g + g.T) / 2
    else:  # a repeated eigenvalue: Q diag(1, 1, 1, 2, 2, 3, 4, 5) Q^T
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        a = (q * np.array([1, 1, 1, 2, 2, 3, 4, 5.0])) @ q.T
        a = (a + a.T) / 2
    w, v = S.eigh(oxicuda.asarray(a))
    check_eigh(a, w.get(), v.get())


def test_eigh_no_host_lapack_and_bad_input(rng, no_host_lapack):
    a = hermitian(rng, (4, 4), "complex128")
    with oxicuda.trace() as t:
        S.eigh(oxicuda.asarray(a))
    assert "solver_syevj" in {s.family for s in t.specs() if s is not None}
    with oxicuda.trace() as t:
        with pytest.raises(ValueError, match="UPLO"):
            S.eigh(np.eye(3), UPLO="X")
        with pytest.raises(np.linalg.LinAlgError, match="square"):
            S.eigvalsh(np.ones((3, 2)))
        with pytest.raises(TypeError, match="int64"):
            S.eigh(np.eye(3, dtype=np.int64))
    assert t.launches == []


@pytest.mark.parametrize("dt, n", [("float32", 86), ("complex64", 66)])
def test_eigh_global_path_order_above_small_max_batched(rng, poisoned, dt, n):
    """Orders past SMALL_MAX take the global variant, whose round of n/2 rotations once lived in
    a static shared table sized for SMALL_MAX: from n = 85 (real) it overflowed the block's
    shared memory (the H200's illegal address at n = 128). Two matrices check the per-matrix
    scratch stride; a diagonally dominant spectrum keeps the emulator's sweeps few."""
    x = hermitian(rng, (2, n, n), dt) * 1e-2
    a = (x + np.diag(np.arange(1, n + 1)).astype(dt)).astype(dt)
    with oxicuda.trace() as t:
        w, v = S.eigh(oxicuda.asarray(a), algo="jacobi")  # past SYEVD_VECTORS_MIN dispatch picks the tridiagonal path
    assert [s.space for s in t.specs() if s is not None and s.family == "solver_syevj"] == ["global"]
    check_eigh(a, w.get(), v.get())


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_eigvalsh_tridiagonal_bisection_path(rng, poisoned, monkeypatch, dt, uplo):
    """eigvalsh past SYEVD_MIN: Householder tridiagonalization (geqrf reflector, hemv,
    solver_sytrd_x, solver_sytrd_r2) and bisection (solver_stebz); the other triangle is NaN (never read)."""
    monkeypatch.setitem(dispatch.DISPATCH, "SYEVD_MIN", 4)
    n = 11
    a = hermitian(rng, (2, n, n), dt)
    other = np.triu(np.ones((n, n), bool), 1) if uplo == "L" else np.tril(np.ones((n, n), bool), -1)
    stored = a.copy()
    stored[..., other] = np.nan
    with oxicuda.trace() as t:
        w = S.eigvalsh(oxicuda.asarray(stored), UPLO=uplo)
    fam = {s.family for s in t.specs() if s is not None}
    assert {"solver_sytrd_x", "solver_sytrd_r2", "solver_stebz", "solver_geqr2"} <= fam and "solver_syevj" not in fam
    W = w.get().astype(np.float64)
    norm = np.abs(a).sum(axis=-2).max()
    assert np.all(np.diff(W, axis=-1) >= 0)
    np.testing.assert_allclose(W, np.linalg.eigvalsh(a.astype(rel(dt))), atol=THRESH * n * norm * EPS[dt])


def test_eigvalsh_tridiagonal_hard_spectra(rng, poisoned, monkeypatch):
    monkeypatch.setitem(dispatch.DISPATCH, "SYEVD_MIN", 4)
    n = 10
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    rep = (q * np.array([1, 1, 1, 2, 2, 3, 4, 5.0, -1e-8, 0])) @ q.T
    for a in (hilbert(n, "float64"), (rep + rep.T) / 2, np.diag(np.arange(n, dtype=np.float64)), np.zeros((n, n))):
        W = S.eigvalsh(oxicuda.asarray(a)).get()
        np.testing.assert_allclose(W, np.linalg.eigvalsh(a), atol=THRESH * n * max(np.abs(a).max(), 1e-250) * EPS["float64"])


def test_eigvalsh_dispatch_between_jacobi_and_tridiagonal(rng, monkeypatch):
    monkeypatch.setitem(dispatch.DISPATCH, "SYEVD_MIN", 4)
    monkeypatch.setitem(dispatch.DISPATCH, "SYEVD_BATCH_MAX", 2)
    monkeypatch.setitem(dispatch.DISPATCH, "SYEVD_BATCH_ORDER", 6)
    for shape, family in (((2, 5, 5), "solver_stebz"), ((3, 5, 5), "solver_syevj"), ((3, 7, 7), "solver_stebz"),
                          ((4, 4), "solver_syevj")):
        a = hermitian(rng, shape, "float64")
        with oxicuda.trace() as t:
            w = S.eigvalsh(oxicuda.asarray(a)).get()
        fam = {s.family for s in t.specs() if s is not None}
        assert family in fam and ({"solver_stebz", "solver_syevj"} - {family}).isdisjoint(fam)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=1e-12 * shape[-1])
