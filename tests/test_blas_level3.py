"""BLAS level 3 beyond GEMM (trsm, syrk, symm, trmm) on the live backend against float64 numpy."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import level3 as L3

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 5e-5, "float64": 1e-12, "complex64": 5e-5, "complex128": 1e-12}


def rand(rng, shape, dt):
    v = rng.standard_normal(shape)
    if dt.startswith("complex"):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dt)


def fdev(m):
    return oxicuda.asarray(np.asfortranarray(m))


def check(got, want, dt, scale=1.0):
    got = np.asarray(got)
    assert np.all(np.isfinite(got))
    err = np.max(np.abs(got.astype(np.complex128) - want))
    assert err <= TOL[dt] * max(1.0, scale), err


def tri_mask(n, uplo):
    return np.tril(np.ones((n, n), bool)) if uplo == "L" else np.triu(np.ones((n, n), bool))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("side", ("L", "R"))
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_trsm_solves_all_ops_across_blocks(rng, dt, side, uplo):
    m, n = 19, 11
    ka = m if side == "L" else n
    a = (rand(rng, (ka, ka), dt) / ka + 2 * np.eye(ka)).astype(dt)
    poisoned = np.where(tri_mask(ka, uplo), a, np.nan).astype(dt)
    da = fdev(poisoned)
    for trans in ("N", "T", "C") if dt.startswith("complex") else ("N", "T"):
        for diag in ("N", "U"):
            tri = np.where(tri_mask(ka, uplo), a, 0).astype(np.complex128)
            if diag == "U":
                tri = tri - np.diag(np.diag(tri)) + np.eye(ka)
            op = {"N": tri, "T": tri.T, "C": tri.conj().T}[trans]
            b = rand(rng, (m, n), dt)
            db = fdev(b)
            alpha = 0.5 + 1j if dt.startswith("complex") else -2.0
            L3.trsm_ptr(side, uplo, trans, diag, m, n, alpha, da.ptr, ka, db.ptr, m, dtype=dt, block=8)
            x = db.get().astype(np.complex128)
            check(op @ x if side == "L" else x @ op, alpha * b, dt, 16)


def test_trsm_runs_panels_and_gemm_updates(rng):
    m, n = 20, 3
    a = fdev(np.tril(rand(rng, (m, m), "float64")) / m + 2 * np.eye(m))
    b = fdev(rand(rng, (m, n), "float64"))
    with oxicuda.trace() as t:
        L3.trsm_ptr("L", "L", "N", "N", m, n, 1.0, a.ptr, m, b.ptr, m, dtype="float64", block=8)
    fams = [type(s).family for s in t.specs()]
    assert fams.count("blas3_trsm_panel") == 3 and "blas3_axpby" not in fams
    assert len(fams) >= 5  # three panels, two GEMM updates


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
@pytest.mark.parametrize("trans", ("N", "T"))
def test_syrk_updates_only_its_triangle(rng, dt, uplo, trans):
    n, k = 14, 9
    a = rand(rng, (n, k) if trans == "N" else (k, n), dt)
    c = rand(rng, (n, n), dt)
    dc = fdev(c)
    da = fdev(a)  # bound: a temporary's block would return to the pool before the kernel runs
    L3.syrk_ptr(uplo, trans, n, k, 1.5, da.ptr, a.shape[0], -0.5, dc.ptr, n, dtype=dt)
    opa = (a if trans == "N" else a.T).astype(np.complex128)
    want = 1.5 * opa @ opa.T - 0.5 * c
    got, mask = dc.get(), tri_mask(n, uplo)
    check(got[mask], want[mask], dt, 4 * k)
    assert np.array_equal(got[~mask], c[~mask])
    dc = fdev(np.full((n, n), np.nan, dt))  # beta = 0 never reads C
    L3.syrk_ptr(uplo, trans, n, k, 1.0, da.ptr, a.shape[0], 0.0, dc.ptr, n, dtype=dt)
    check(dc.get()[mask], (opa @ opa.T)[mask], dt, 4 * k)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("side", ("L", "R"))
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_symm_and_trmm_match_reference(rng, dt, side, uplo):
    m, n = 13, 7
    ka = m if side == "L" else n
    a = rand(rng, (ka, ka), dt)
    mask = tri_mask(ka, uplo)
    poisoned = np.where(mask, a, np.nan).astype(dt)
    stored = np.where(mask, a, 0).astype(np.complex128)
    sym = stored + stored.T - np.diag(np.diag(stored))
    b, c = rand(rng, (m, n), dt), rand(rng, (m, n), dt)
    dc = fdev(c)
    dpoisoned, db0 = fdev(poisoned), fdev(b)  # bound: temporaries would free their blocks early
    L3.symm_ptr(side, uplo, m, n, 2.0, dpoisoned.ptr, ka, db0.ptr, m, 0.5, dc.ptr, m, dtype=dt)
    check(dc.get(), 2.0 * (sym @ b if side == "L" else b @ sym) + 0.5 * c, dt, 4 * ka)
    for trans in ("N", "T"):
        for diag in ("N", "U"):
            tri = stored - np.diag(np.diag(stored)) + np.eye(ka) if diag == "U" else stored
            op = tri if trans == "N" else tri.T
            db = fdev(b)
            dout = fdev(np.full((m, n), np.nan, dt))
            L3.trmm_ptr(side, uplo, trans, diag, m, n, -1.5, dpoisoned.ptr, ka, db.ptr, m, dout.ptr, m, dtype=dt)
            want = -1.5 * (op @ b if side == "L" else b @ op)
            check(dout.get(), want, dt, 4 * ka)
            L3.trmm_ptr(side, uplo, trans, diag, m, n, -1.5, dpoisoned.ptr, ka, db.ptr, m, db.ptr, m, dtype=dt)
            check(db.get(), want, dt, 4 * ka)  # in place (C is B)


def test_level3_device_pointer_scalars(rng):
    n, k = 6, 4
    a, c = rand(rng, (n, k), "float32"), rand(rng, (n, n), "float32")
    scal = oxicuda.asarray(np.array([2.0, 0.25], np.float32))
    dc = fdev(c)
    da = fdev(a)
    L3.syrk_ptr("L", "N", n, k, 0.0, da.ptr, n, 0.0, dc.ptr, n, dtype="float32",
                alpha_ptr=scal.ptr, beta_ptr=scal.ptr + 4)
    mask = tri_mask(n, "L")
    check(dc.get()[mask], (2.0 * a.astype(np.float64) @ a.T + 0.25 * c)[mask], "float32", 16)
    tri = (np.tril(rand(rng, (n, n), "float32")) / n + 2 * np.eye(n, dtype=np.float32)).astype(np.float32)
    b = rand(rng, (n, 3), "float32")
    db = fdev(b)
    dtri = fdev(tri)
    L3.trsm_ptr("L", "L", "N", "N", n, 3, 0.0, dtri.ptr, n, db.ptr, n, dtype="float32", alpha_ptr=scal.ptr)
    check(tri.astype(np.float64) @ db.get(), 2.0 * b, "float32", 16)


def test_level3_bad_arguments_raise_before_writing():
    a = oxicuda.zeros((4, 4), np.float32, order="F")
    b = oxicuda.full((4, 4), 3.0, np.float32)
    with pytest.raises(ValueError, match="side"):
        L3.trsm_ptr("X", "L", "N", "N", 4, 4, 1.0, a.ptr, 4, b.ptr, 4, dtype=np.float32)
    with pytest.raises(ValueError, match="ldb"):
        L3.trsm_ptr("L", "L", "N", "N", 4, 4, 1.0, a.ptr, 4, b.ptr, 3, dtype=np.float32)
    with pytest.raises(ValueError, match="herk"):
        L3.syrk_ptr("L", "C", 4, 4, 1.0, a.ptr, 4, 0.0, b.ptr, 4, dtype=np.complex64)
    with pytest.raises(ValueError, match="both"):
        L3.symm_ptr("L", "L", 4, 4, 1.0, a.ptr, 4, b.ptr, 4, 0.0, b.ptr, 4, dtype=np.float32, alpha_ptr=a.ptr)
    assert np.all(b.get() == 3.0)
