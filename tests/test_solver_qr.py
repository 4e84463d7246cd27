"""oxicuda.solver Householder QR (geqrf, orgqr, ormqr, qr in every mode) on the live backend
against float64 numpy, with poisoned outputs; LAPACK-style backward and orthogonality errors."""


from __future__ import annotations

import numpy as np
import pytest
from solver_cases import (  # noqa: F401 - fixtures
    DTYPES,
    EPS,
    THRESH,
    conditioned,
    graded,
    hilbert,
    no_host_lapack,
    poisoned,
    rand,
    rel,
)

import oxicuda
import oxicuda.solver as S
from oxicuda.solver import dispatch
from oxicuda.solver import geqrf as Q


@pytest.fixture
def small_qr_block(monkeypatch):
    monkeypatch.setitem(dispatch.DISPATCH, "QR_NB", 4)
    return 4


def check_qr(a, q, r):
    """||A - Q R|| / (n ||A|| eps) and ||Q^H Q - I|| / (m eps) below the threshold, R upper."""
    dt = a.dtype.name
    A, Qm, R = a.astype(rel(dt)), q.astype(rel(dt)), r.astype(rel(dt))
    m, n = a.shape[-2:]
    assert np.all(np.isfinite(Qm)) and np.all(np.isfinite(R))
    assert np.all(np.tril(R, -1) == 0)
    norm = max(np.abs(A).sum(axis=-2).max(), np.finfo(float).tiny)
    assert np.abs(A - Qm @ R).sum(axis=-2).max() / (max(m, n) * norm * EPS[dt]) < THRESH
    eye = np.eye(Qm.shape[-1])
    assert np.abs(np.conj(np.swapaxes(Qm, -1, -2)) @ Qm - eye).max() / (max(m, 1) * EPS[dt]) < THRESH


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (7, 5), (5, 7), (3, 6, 4)])
def test_qr_reduced_and_complete(rng, poisoned, dt, shape):
    a = rand(rng, shape, dt)
    da = oxicuda.asarray(a)
    for mode in ("reduced", "complete"):
        q, r = S.qr(da, mode=mode)
        ref_q, ref_r = np.linalg.qr(a.astype(rel(dt)), mode=mode)
        assert q.shape == ref_q.shape and r.shape == ref_r.shape
        check_qr(a, q.get(), r.get())
        np.testing.assert_allclose(r.get(), ref_r, atol=2e3 * EPS[dt] * np.abs(a).max())  # LAPACK's signs


@pytest.mark.parametrize("dt", ("float32", "complex128"))
def test_qr_modes_r_and_raw_match_numpy(rng, poisoned, dt):
    a = rand(rng, (6, 4), dt)
    r = S.qr(oxicuda.asarray(a), mode="r").get()
    np.testing.assert_allclose(r, np.linalg.qr(a.astype(rel(dt)), mode="r"), atol=1e3 * EPS[dt])
    h, tau = S.qr(oxicuda.asarray(a), mode="raw")
    rh, rtau = np.linalg.qr(a.astype(rel(dt)), mode="raw")
    assert h.shape == rh.shape and tau.shape == rtau.shape
    np.testing.assert_allclose(h.get(), rh, atol=1e3 * EPS[dt])
    np.testing.assert_allclose(tau.get(), rtau, atol=1e3 * EPS[dt])


@pytest.mark.parametrize("dt", DTYPES)
def test_blocked_geqrf_and_orgqr_cross_the_block(rng, poisoned, small_qr_block, dt):
    a = rand(rng, (14, 10), dt)  # panels of 4, 4, 2 columns
    with oxicuda.trace() as t:
        q, r = S.qr(oxicuda.asarray(a))
    fams = [s.family for s in t.specs() if s is not None]
    assert fams.count("solver_geqr2") == 3 and "solver_larft" in fams
    assert any("gemm" in f for f in fams)
    check_qr(a, q.get(), r.get())


@pytest.mark.parametrize("kind", ("cond1e6", "hilbert", "graded"))
def test_hard_matrices(rng, poisoned, small_qr_block, kind):
    n = 10
    a = {"cond1e6": lambda: conditioned(rng, n, 1e6, "float64"), "hilbert": lambda: hilbert(n, "float64"),
         "graded": lambda: graded(rng, n, "float64")}[kind]()
    q, r = S.qr(oxicuda.asarray(a))
    check_qr(a, q.get(), r.get())


@pytest.mark.parametrize("dt", ("float64", "complex64"))
def test_ormqr_both_sides_and_transposes(rng, small_qr_block, dt):
    m, k = 11, 7
    a = rand(rng, (m, k), dt)
    d = oxicuda.asarray(np.asfortranarray(a))
    tau = oxicuda.zeros((k,), dt)
    Q.geqrf_ptr(m, k, d.ptr, m, tau.ptr, dtype=dt)
    qfull, _ = np.linalg.qr(a.astype(rel(dt)), mode="complete")
    # numpy's Q is LAPACK's: the same reflectors, so the same matrix
    c = rand(rng, (m, 3), dt)
    for trans, op in (("N", qfull), ("C", qfull.conj().T)):
        dc = oxicuda.asarray(np.asfortranarray(c))
        Q.ormqr_ptr("L", trans, m, 3, k, d.ptr, m, tau.ptr, dc.ptr, m, dtype=dt)
        np.testing.assert_allclose(dc.get(), op @ c, atol=1e3 * EPS[dt])
    c2 = rand(rng, (3, m), dt)
    for trans, op in (("N", qfull), ("C", qfull.conj().T)):
        dc = oxicuda.asarray(np.asfortranarray(c2))
        Q.ormqr_ptr("R", trans, 3, m, k, d.ptr, m, tau.ptr, dc.ptr, 3, dtype=dt)
        np.testing.assert_allclose(dc.get(), c2 @ op, atol=1e3 * EPS[dt])


def test_orgqr_in_place(rng, small_qr_block):
    m, n = 9, 6
    a = rand(rng, (m, n), "float64")
    d = oxicuda.asarray(np.asfortranarray(a))
    tau = oxicuda.zeros((n,), "float64")
    Q.geqrf_ptr(m, n, d.ptr, m, tau.ptr, dtype="float64")
    r = np.triu(d.get())[:n]
    Q.orgqr_ptr(m, n, n, d.ptr, m, tau.ptr, d.ptr, m, dtype="float64")
    check_qr(a, d.get(), r)


def test_zero_columns_and_no_host_lapack(rng, no_host_lapack):
    a = rand(rng, (5, 3), "complex64")
    a[:, 1] = 0.0  # a zero column: tau = 0 for it, no NaN
    with oxicuda.trace() as t:
        q, r = S.qr(oxicuda.asarray(a))
    assert {"solver_geqr2", "solver_larft"} <= {s.family for s in t.specs() if s is not None}
    assert np.all(np.isfinite(q.get()))
    np.testing.assert_allclose(q.get() @ r.get(), a, atol=1e-5)


def test_bad_input_raises_before_any_launch():
    with oxicuda.trace() as t:
        with pytest.raises(ValueError, match="mode"):
            S.qr(np.eye(3), mode="economic")
        with pytest.raises(np.linalg.LinAlgError, match="two-dimensional"):
            S.qr(np.ones(3))
        with pytest.raises(TypeError, match="int64"):
            S.qr(np.ones((3, 3), np.int64))
    assert t.launches == []
