"""cuBLAS's BLAS-like extensions and the array-level level 3 calls against float64 numpy: geam
(every dtype and op pair, zero scalars never read their matrix, in place), dgmm (both sides,
negative increments), trttp/tpttr, and oxicuda.blas.trsm/trmm/symm/syrk/geam/dgmm on C- and
Fortran-ordered arrays, with the kernels that ran named by trace and bad input refused first."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import oxicuda
from oxicuda import blas
from oxicuda.blas import geam_dgmm as G

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 2e-5, "float64": 1e-12, "complex64": 2e-5, "complex128": 1e-12}


def rand(rng, shape, dt):
    v = rng.standard_normal(shape)
    if dt.startswith("complex"):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dt)


def check(got, want, dt, scale=1.0):
    got = np.asarray(got)
    assert np.all(np.isfinite(got)), got
    err = np.max(np.abs(got.astype(np.complex128) - want)) if got.size else 0.0
    assert err <= TOL[dt] * max(1.0, scale), err


def op_of(a, t):
    return {"N": a, "T": a.T, "C": a.conj().T}[t]


def fdev(m):
    return oxicuda.asarray(np.asfortranarray(m))


def kernels(t):
    return {r.kernel for r in t.launches}


@pytest.mark.parametrize("dt", DTYPES)
def test_geam_every_op_pair_and_zero_scalars_skip_their_matrix(rng, dt):
    m, n = 5, 3
    ops = ("N", "T", "C") if dt.startswith("complex") else ("N", "T")
    alpha, beta = (1.5 - 1j, 0.5 + 2j) if dt.startswith("complex") else (1.5, -0.5)
    for ta, tb in itertools.product(ops, ops):
        a = rand(rng, (m, n) if ta == "N" else (n, m), dt)
        b = rand(rng, (m, n) if tb == "N" else (n, m), dt)
        da, db = fdev(a), fdev(b)
        dc = oxicuda.full((m, n), np.nan, dt, order="F")
        with oxicuda.trace() as tr:
            G.geam_ptr(ta, tb, m, n, alpha, da.ptr, a.shape[0], beta, db.ptr, b.shape[0], dc.ptr, m, dtype=dt)
        check(dc.get(), alpha * op_of(a, ta) + beta * op_of(b, tb), dt, 4)
        assert any("blas_geam" in k for k in kernels(tr))
    nan = oxicuda.full((m, n), np.nan, dt, order="F")
    a = rand(rng, (m, n), dt)
    da, dc = fdev(a), oxicuda.full((m, n), np.nan, dt, order="F")
    G.geam_ptr("N", "N", m, n, alpha, da.ptr, m, 0.0, nan.ptr, m, dc.ptr, m, dtype=dt)
    check(dc.get(), alpha * a, dt, 4)
    G.geam_ptr("N", "N", m, n, 0.0, nan.ptr, m, beta, da.ptr, m, da.ptr, m, dtype=dt)  # in place, C is B
    check(da.get(), beta * a, dt, 4)


def test_geam_refuses_overlap_other_than_in_place_and_bad_leading_dimensions():
    x = oxicuda.full((4, 4), 1.0, np.float32, order="F")
    with oxicuda.trace() as tr:
        with pytest.raises(ValueError, match="overlaps"):
            G.geam_ptr("T", "N", 4, 4, 1.0, x.ptr, 4, 1.0, x.ptr, 4, x.ptr, 4, dtype=np.float32)
        with pytest.raises(ValueError, match="lda"):
            G.geam_ptr("N", "N", 4, 4, 1.0, x.ptr, 3, 1.0, x.ptr, 4, x.ptr, 4, dtype=np.float32)
    assert tr.launches == []


@pytest.mark.parametrize("dt", DTYPES)
def test_dgmm_both_sides_with_negative_increments(rng, dt):
    m, n = 6, 4
    a = rand(rng, (m, n), dt)
    for side, incx in (("L", -2), ("R", 1), ("R", -1)):
        k = m if side == "L" else n
        x = rand(rng, k, dt)
        buf = np.zeros((k - 1) * abs(incx) + 1, dt)
        buf[::abs(incx)] = x if incx > 0 else x[::-1]
        da, dx = fdev(a), oxicuda.asarray(buf)
        dc = oxicuda.full((m, n), np.nan, dt, order="F")
        with oxicuda.trace() as tr:
            G.dgmm_ptr(side, m, n, da.ptr, m, dx.ptr, incx, dc.ptr, m, dtype=dt)
        want = np.diag(x.astype(np.complex128)) @ a if side == "L" else a @ np.diag(x.astype(np.complex128))
        check(dc.get(), want, dt, 2)
        assert any("blas_dgmm" in kk for kk in kernels(tr))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_trttp_and_tpttr_round_trip_one_triangle(rng, dt, uplo):
    n, lda = 5, 7
    a = rand(rng, (lda, n), dt)
    mask = (np.arange(n)[:, None] >= np.arange(n)) if uplo == "L" else (np.arange(n)[:, None] <= np.arange(n))
    want = np.concatenate([a[j:n, j] if uplo == "L" else a[:j + 1, j] for j in range(n)])
    da, dap = fdev(a), oxicuda.full((n * (n + 1) // 2,), np.nan, dt)
    G.trttp_ptr(uplo, n, da.ptr, lda, dap.ptr, dtype=dt)
    check(dap.get(), want, dt)
    back = oxicuda.full((lda, n), np.nan, dt, order="F")
    with oxicuda.trace() as tr:
        G.tpttr_ptr(uplo, n, dap.ptr, back.ptr, lda, dtype=dt)
    got = back.get()
    check(got[:n][mask], a[:n][mask], dt)
    assert np.all(np.isnan(got[:n][~mask])) and np.all(np.isnan(got[n:])), "tpttr wrote outside the triangle"
    assert any("blas_pack" in k for k in kernels(tr))


@pytest.mark.parametrize("dt", ("float32", "complex128"))
def test_array_level_geam_and_dgmm_accept_both_memory_orders(rng, dt):
    a, b = rand(rng, (4, 3), dt), rand(rng, (3, 4), dt)
    ta = "C" if dt.startswith("complex") else "T"
    for oa, ob in itertools.product("CF", "CF"):
        da, db = oxicuda.asarray(np.asarray(a, order=oa)), oxicuda.asarray(np.asarray(b, order=ob))
        got = blas.geam(da, db, alpha=2.0, beta=-1.0, transb=ta)
        check(got.get(), 2 * a - op_of(b, ta), dt, 4)
        x = rand(rng, 4, dt)
        check(blas.dgmm(da, oxicuda.asarray(x), side="L").get(), np.diag(x) @ a, dt, 2)
        x3 = rand(rng, 3, dt)
        check(blas.dgmm(da, oxicuda.asarray(x3), side="R").get(), a @ np.diag(x3), dt, 2)
    with pytest.raises(TypeError, match="dtypes"):
        blas.geam(oxicuda.asarray(a), oxicuda.asarray(rand(rng, (3, 4), "complex64" if dt == "float32" else "float64")))
    with pytest.raises(ValueError, match="shape"):
        blas.geam(oxicuda.asarray(a), oxicuda.asarray(b))
    with pytest.raises(ValueError, match="len"):
        blas.dgmm(oxicuda.asarray(a), oxicuda.asarray(rand(rng, 3, dt)), side="L")


@pytest.mark.parametrize("dt", DTYPES)
def test_array_level_trsm_trmm_symm_syrk_match_numpy_in_both_orders(rng, dt):
    n, m = 5, 3
    cplx = dt.startswith("complex")
    tri = np.tril(rand(rng, (n, n), dt)) / n + 2 * np.eye(n, dtype=dt)
    g = rand(rng, (n, n), dt)
    sym = g + g.T
    for idx, (oa, ob, side) in enumerate(itertools.product("CF", "CF", "LR")):
        b = rand(rng, (n, m) if side == "L" else (m, n), dt)
        t = ("N", "T", "C")[idx % 3] if cplx else ("N", "T")[idx % 2]
        if t == "C" and oa != ob:
            t = "T"
        da, db = oxicuda.asarray(np.asarray(tri, order=oa)), oxicuda.asarray(np.asarray(b, order=ob))
        opa = op_of(tri.astype(np.complex128), t)
        with oxicuda.trace() as tr:
            x = blas.trsm(da, db, side=side, uplo="L", trans=t, alpha=2.0)
        got = x.get().astype(np.complex128)
        check(opa @ got if side == "L" else got @ opa, 2 * b, dt, 8)
        assert any("blas3_trsm_panel" in k for k in kernels(tr))
        check(blas.trmm(da, db, side=side, uplo="L", trans=t, diag="U").get(),
              (op_of(np.tril(tri, -1) + np.eye(n), t) @ b) if side == "L" else b @ op_of(np.tril(tri, -1) + np.eye(n), t),
              dt, 8)
        ds = oxicuda.asarray(np.asarray(np.triu(sym), order=oa))
        c0 = rand(rng, b.shape, dt)
        dc = oxicuda.asarray(np.asarray(c0, order=ob))
        blas.symm(ds, db, dc, side=side, uplo="U", alpha=0.5, beta=2.0)
        check(dc.get(), 0.5 * (sym @ b if side == "L" else b @ sym) + 2 * c0, dt, 8)
        k_a = rand(rng, (n, m) if side == "L" else (m, n), dt)
        ts = "N" if side == "L" else "T"
        c = blas.syrk(oxicuda.asarray(np.asarray(k_a, order=oa)), uplo="U", trans=ts, alpha=2.0)
        opk = k_a if ts == "N" else k_a.T
        check(c.get(), np.triu(2 * opk @ opk.T), dt, 8)
    with pytest.raises(TypeError, match="dtypes"):
        blas.trsm(oxicuda.asarray(tri), oxicuda.asarray(rand(rng, (n, 2), "float64" if cplx else "complex64")))
    with pytest.raises(ValueError, match="square"):
        blas.trsm(oxicuda.asarray(tri), oxicuda.asarray(rand(rng, (n + 1, 2), dt)))
    with pytest.raises(ValueError, match="side"):
        blas.trmm(oxicuda.asarray(tri), oxicuda.asarray(rand(rng, (n, 2), dt)), side="X")
