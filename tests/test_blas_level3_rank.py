"""herk, syr2k, her2k and trsmBatched (oxicuda.blas.level3_rank) against float64 numpy: every
dtype they are defined for, both triangles, every transpose, scalars as values and as device
pointers, the other triangle untouched (NaN stays NaN), a real diagonal for the Hermitian forms,
and a batch with one bad matrix writing nothing."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import level3_rank as R

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 3e-5, "float64": 1e-12, "complex64": 3e-5, "complex128": 1e-12}


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


def fdev(m):
    return oxicuda.asarray(np.asfortranarray(m))


def tri_mask(n, uplo):
    i, j = np.indices((n, n))
    return i >= j if uplo == "L" else i <= j


def op_of(a, t):
    return {"N": a, "T": a.T, "C": a.conj().T}[t]


@pytest.mark.parametrize("dt", DTYPES)
def test_syr2k_and_the_hermitian_updates_touch_one_triangle(rng, dt):
    n, k = 6, 4
    cplx = dt.startswith("complex")
    for uplo in ("L", "U"):
        mask = tri_mask(n, uplo)
        ops = ("N", "T")
        for idx, t in enumerate(ops):
            a = rand(rng, (n, k) if t == "N" else (k, n), dt)
            b = rand(rng, (n, k) if t == "N" else (k, n), dt)
            c0 = rand(rng, (n, n), dt)
            dc = fdev(np.where(mask, c0, np.nan).astype(dt))
            alpha = (0.5 - 1j) if cplx else 0.5
            da, db = fdev(a), fdev(b)
            with oxicuda.trace() as tr:
                R.syr2k_ptr(uplo, t, n, k, alpha, da.ptr, a.shape[0], db.ptr, b.shape[0], 2.0, dc.ptr, n, dtype=dt)
            oa, ob = op_of(a.astype(np.complex128), t), op_of(b.astype(np.complex128), t)
            got = dc.get()
            assert np.all(np.isnan(got[~mask]))
            check(got[mask], (alpha * (oa @ ob.T + ob @ oa.T) + 2 * c0)[mask], dt, 8)
            assert {"blas3_axpby"} <= {r.spec.family for r in tr.launches}
            if not cplx:
                continue
            th = ("N", "C")[idx]
            a = rand(rng, (n, k) if th == "N" else (k, n), dt)
            b = rand(rng, (n, k) if th == "N" else (k, n), dt)
            g = rand(rng, (n, n), dt)
            h0 = g + g.conj().T
            oa, ob = op_of(a.astype(np.complex128), th), op_of(b.astype(np.complex128), th)
            da, db = fdev(a), fdev(b)
            dc = fdev(np.where(mask, h0, np.nan).astype(dt))
            R.herk_ptr(uplo, th, n, k, 0.75, da.ptr, a.shape[0], -0.5, dc.ptr, n, dtype=dt)
            got = dc.get()
            assert np.all(np.isnan(got[~mask])) and np.all(np.diag(got).imag == 0)
            check(got[mask], (0.75 * oa @ oa.conj().T - 0.5 * h0)[mask], dt, 8)
            dc = fdev(np.where(mask, h0, np.nan).astype(dt))
            R.her2k_ptr(uplo, th, n, k, 1 + 2j, da.ptr, a.shape[0], db.ptr, b.shape[0], 0.5, dc.ptr, n, dtype=dt)
            got = dc.get()
            want = (1 + 2j) * oa @ ob.conj().T + (1 - 2j) * ob @ oa.conj().T + 0.5 * h0
            assert np.all(np.isnan(got[~mask])) and np.all(np.diag(got).imag == 0)
            check(got[mask], want[mask], dt, 8)


def test_device_pointer_scalars_and_the_real_scalar_rules(rng):
    n, k, dt = 5, 3, "complex64"
    a = rand(rng, (n, k), dt)
    da = fdev(a)
    scal = oxicuda.asarray(np.array([1.5, 0.0], np.float32))  # alpha, beta: real device scalars
    dc = oxicuda.full((n, n), np.nan, dt, order="F")
    R.herk_ptr("L", "N", n, k, 0.0, da.ptr, n, 0.0, dc.ptr, n, dtype=dt, alpha_ptr=scal.ptr, beta_ptr=scal.ptr + 4)
    got = dc.get()
    mask = tri_mask(n, "L")
    a64 = a.astype(np.complex128)
    check(got[mask], (1.5 * a64 @ a64.conj().T)[mask], dt, 8)  # a zero beta never reads the NaN C
    with pytest.raises(ValueError, match="real"):
        R.herk_ptr("L", "N", n, k, 1j, da.ptr, n, 0.0, dc.ptr, n, dtype=dt)
    with pytest.raises(TypeError, match="Hermitian"):
        R.herk_ptr("L", "N", n, k, 1.0, da.ptr, n, 0.0, dc.ptr, n, dtype=np.float32)
    with pytest.raises(ValueError, match="trans"):
        R.herk_ptr("L", "T", n, k, 1.0, da.ptr, n, 0.0, dc.ptr, n, dtype=dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_trsm_batched_solves_every_matrix_and_writes_nothing_on_a_bad_entry(rng, dt):
    n, nrhs, batch = 4, 3, 3
    cplx = dt.startswith("complex")
    for side, uplo, t in (("L", "L", "N"), ("R", "U", "C" if cplx else "T")):
        mats = [np.tril(rand(rng, (n, n), dt)) / n + 2 * np.eye(n, dtype=dt) for _ in range(batch)]
        mats = [m if uplo == "L" else m.T.copy() for m in mats]
        rhs = [rand(rng, (n, nrhs) if side == "L" else (nrhs, n), dt) for _ in range(batch)]
        da, db = [fdev(m) for m in mats], [fdev(b) for b in rhs]
        pa = oxicuda.asarray(np.array([d.ptr for d in da], np.uint64))
        pb = oxicuda.asarray(np.array([d.ptr for d in db], np.uint64))
        rows = n if side == "L" else nrhs
        cols = nrhs if side == "L" else n
        with oxicuda.trace() as tr:
            R.trsm_batched_ptr(side, uplo, t, "N", rows, cols, 2.0, pa.ptr, n, pb.ptr, rows, batch, dtype=dt)
        for m, b, d in zip(mats, rhs, db):
            x = d.get().astype(np.complex128)
            om = op_of(m.astype(np.complex128), t)
            check(om @ x if side == "L" else x @ om, 2 * b, dt, 8)
        assert sum(r.spec.family == "blas3_trsm_panel" for r in tr.launches) >= batch
    bad = oxicuda.asarray(np.array([da[0].ptr, 0, da[2].ptr], np.uint64))  # a NULL matrix in the middle
    before = [d.get() for d in db]
    with oxicuda.trace() as tr, pytest.raises(ValueError, match=r"A\[1\]"):
        R.trsm_batched_ptr("L", "L", "N", "N", n, nrhs, 1.0, bad.ptr, n, pb.ptr, n, batch, dtype=dt)
    assert tr.launches == []
    assert all(np.array_equal(d.get(), b0) for d, b0 in zip(db, before))
