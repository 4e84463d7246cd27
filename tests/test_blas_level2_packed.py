"""BLAS level 2 on banded, packed and triangular storage (gbmv, sbmv/hbmv, spmv/hpmv,
trmv/tbmv/tpmv, tbsv/tpsv, syr/syr2/her/her2, spr/spr2/hpr/hpr2) against float64 numpy: every
dtype, every uplo/trans/diag, negative increments, outputs poisoned with NaN where the routine
must not read them, storage padding left untouched, and the kernels that ran named by trace."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import level2_packed as L

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 2e-5, "float64": 1e-12, "complex64": 2e-5, "complex128": 1e-12}


def rand(rng, shape, dt):
    v = rng.standard_normal(shape)
    if dt.startswith("complex"):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dt)


def cplx(dt):
    return dt.startswith("complex")


def check(got, want, dt, scale=1.0):
    got = np.asarray(got)
    assert np.all(np.isfinite(got)), got
    err = np.max(np.abs(got.astype(np.complex128) - want)) if got.size else 0.0
    assert err <= TOL[dt] * max(1.0, scale), err


def strided(v, inc, dt):
    """v laid out with increment ``inc`` (BLAS: element 0 at the high end when inc < 0)."""
    buf = np.zeros((len(v) - 1) * abs(inc) + 1, dt)
    buf[::abs(inc)] = v if inc > 0 else v[::-1]
    return buf


def unstrided(buf, n, inc):
    v = buf[::abs(inc)][:n]
    return v if inc > 0 else v[::-1]


def band_of(a, kl, ku, lda, dt):
    """General band storage (BLAS): A(i, j) at row ku + i - j of column j; padding NaN."""
    m, n = a.shape
    out = np.full((lda, n), np.nan, dt)
    for j in range(n):
        for i in range(max(0, j - ku), min(m, j + kl + 1)):
            out[ku + i - j, j] = a[i, j]
    return out


def sym_band_of(a, k, uplo, lda, dt):
    n = a.shape[0]
    out = np.full((lda, n), np.nan, dt)
    for j in range(n):
        rows = range(j, min(n, j + k + 1)) if uplo == "L" else range(max(0, j - k), j + 1)
        for i in rows:
            out[(i - j) if uplo == "L" else (k + i - j), j] = a[i, j]
    return out


def packed_of(a, uplo, dt):
    n = a.shape[0]
    cols = [a[j:, j] if uplo == "L" else a[:j + 1, j] for j in range(n)]
    return np.concatenate(cols).astype(dt)


def unpack(ap, n, uplo):
    out = np.zeros((n, n), ap.dtype)
    pos = 0
    for j in range(n):
        rows = range(j, n) if uplo == "L" else range(j + 1)
        for i in rows:
            out[i, j] = ap[pos]
            pos += 1
    return out


def op_of(a, t):
    return {"N": a, "T": a.T, "C": a.conj().T}[t]


def kernels(t):
    return {r.kernel for r in t.launches}


def fdev(m):
    return oxicuda.asarray(np.asfortranarray(m))


@pytest.mark.parametrize("dt", DTYPES)
def test_gbmv_matches_reference_for_every_transpose(rng, dt):
    m, n, kl, ku = 9, 7, 2, 1
    lda = kl + ku + 2
    a = rand(rng, (m, n), dt)
    dense = np.array([[a[i, j] if -kl <= j - i <= ku else 0 for j in range(n)] for i in range(m)])
    band = band_of(a, kl, ku, lda, dt)
    alpha, beta = (1.5 - 0.5j, 0.25 + 1j) if cplx(dt) else (1.5, -0.75)
    for t, (incx, incy) in zip(("N", "T", "C") if cplx(dt) else ("N", "T"), ((1, -2), (-1, 1), (2, 3))):
        rows, cols = (m, n) if t == "N" else (n, m)
        x, y = rand(rng, cols, dt), rand(rng, rows, dt)
        da, dx, dy = fdev(band), oxicuda.asarray(strided(x, incx, dt)), oxicuda.asarray(strided(y, incy, dt))
        with oxicuda.trace() as tr:
            L.gbmv_ptr(t, m, n, kl, ku, alpha, da.ptr, lda, dx.ptr, incx, beta, dy.ptr, incy, dtype=dt)
        want = alpha * op_of(dense, t) @ x.astype(np.complex128) + beta * y
        check(unstrided(dy.get(), rows, incy), want, dt, 8)
        assert any("blas2_mv" in k for k in kernels(tr))
        assert np.array_equal(np.isnan(da.get()), np.isnan(band)), "gbmv wrote into A"
    # beta == 0 never reads y: a NaN y gives a finite result
    x = rand(rng, n, dt)
    dy, da, dx = oxicuda.full((m,), np.nan, dt), fdev(band), oxicuda.asarray(x)
    L.gbmv_ptr("N", m, n, kl, ku, 1.0, da.ptr, lda, dx.ptr, 1, 0.0, dy.ptr, 1, dtype=dt)
    check(dy.get(), dense @ x.astype(np.complex128), dt, 8)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_symmetric_and_hermitian_band_and_packed_mv_read_only_the_stored_triangle(rng, dt, uplo):
    n, k = 8, 3
    g = rand(rng, (n, n), dt)
    full = (g + g.conj().T) / 2 if cplx(dt) else (g + g.T) / 2
    banded = np.array([[full[i, j] if abs(i - j) <= k else 0 for j in range(n)] for i in range(n)])
    herm = cplx(dt)
    alpha, beta = (0.5 + 2j, -1 + 0.5j) if herm else (2.0, 0.5)
    x, y = rand(rng, n, dt), rand(rng, n, dt)
    stored = sym_band_of(banded, k, uplo, k + 2, dt)
    dy, da, dx = oxicuda.asarray(strided(y, -1, dt)), fdev(stored), oxicuda.asarray(strided(x, 2, dt))
    with oxicuda.trace() as tr:
        L.sbmv_ptr(uplo, n, k, alpha, da.ptr, k + 2, dx.ptr, 2, beta, dy.ptr, -1, dtype=dt, hermitian=herm)
    check(unstrided(dy.get(), n, -1), alpha * banded @ x.astype(np.complex128) + beta * y, dt, 8)
    ap = packed_of(full, uplo, dt)
    dy, dap, dx = oxicuda.full((n,), np.nan, dt), oxicuda.asarray(ap), oxicuda.asarray(x)
    with oxicuda.trace() as tr2:
        L.spmv_ptr(uplo, n, alpha, dap.ptr, dx.ptr, 1, 0.0, dy.ptr, 1, dtype=dt, hermitian=herm)
    check(dy.get(), alpha * full @ x.astype(np.complex128), dt, 8)
    assert any("blas2_mv" in kk for kk in kernels(tr) | kernels(tr2))
    if herm:
        with pytest.raises(TypeError, match="Hermitian"):
            L.spmv_ptr(uplo, n, alpha, 0, 0, 1, 0.0, 0, 1, dtype=dt, hermitian=False)


def _triangle(rng, n, dt, uplo):
    a = rand(rng, (n, n), dt) / n + 2 * np.eye(n)
    return np.tril(a) if uplo == "L" else np.triu(a)


@pytest.mark.parametrize("dt", DTYPES)
def test_triangular_mv_and_sv_for_every_uplo_trans_diag_and_storage(rng, dt):
    n, k = 7, 2
    ops = ("N", "T", "C") if cplx(dt) else ("N", "T")
    combos = list(itertools.product(("L", "U"), ops, ("N", "U")))
    for idx, (uplo, t, diag) in enumerate(combos):
        storage = ("full", "band", "packed")[idx % 3]
        tri = _triangle(rng, n, dt, uplo)
        if storage == "band":
            tri = np.array([[tri[i, j] if abs(i - j) <= k else 0 for j in range(n)] for i in range(n)])
        eff = tri.astype(np.complex128).copy()
        if diag == "U":
            np.fill_diagonal(eff, 1.0)
        x = rand(rng, n, dt)
        incx = (1, -1, 2)[idx % 3]
        dx = oxicuda.asarray(strided(x, incx, dt))
        if storage == "full":
            inside = (np.arange(n)[:, None] >= np.arange(n)) if uplo == "L" else (np.arange(n)[:, None] <= np.arange(n))
            buf = np.where(inside, tri, np.nan)  # the other triangle is never read
            if diag == "U":
                np.fill_diagonal(buf, np.nan)  # nor is a unit diagonal
            da = fdev(buf.astype(dt))
            mv, sv, lead = L.trmv_ptr, None, (n, da.ptr, n)
        elif storage == "band":
            stored = sym_band_of(tri, k, uplo, k + 1, dt)
            if diag == "U":
                stored[0 if uplo == "L" else k] = np.nan  # the unit diagonal is never read
            da = fdev(stored)
            mv, sv, lead = L.tbmv_ptr, L.tbsv_ptr, (n, k, da.ptr, k + 1)
        else:
            da = oxicuda.asarray(packed_of(tri, uplo, dt))
            mv, sv, lead = L.tpmv_ptr, L.tpsv_ptr, (n, da.ptr)
        with oxicuda.trace() as tr:
            mv(uplo, t, diag, *lead, dx.ptr, incx, dtype=dt)
        check(unstrided(dx.get(), n, incx), op_of(eff, t) @ x.astype(np.complex128), dt, 8)
        assert any("blas2_mv" in kk for kk in kernels(tr)), kernels(tr)
        if sv is not None:
            dx = oxicuda.asarray(strided(x, incx, dt))
            with oxicuda.trace() as tr:
                sv(uplo, t, diag, *lead, dx.ptr, incx, dtype=dt)
            check(op_of(eff, t) @ unstrided(dx.get(), n, incx).astype(np.complex128), x, dt, 8)
            assert any("blas2_sv" in kk for kk in kernels(tr)), kernels(tr)


@pytest.mark.parametrize("dt", DTYPES)
def test_rank_updates_touch_only_the_stored_triangle(rng, dt):
    n = 6
    herm = cplx(dt)
    for uplo, (incx, incy) in (("L", (1, -2)), ("U", (-1, 3))):
        mask = (np.arange(n)[:, None] >= np.arange(n)) if uplo == "L" else (np.arange(n)[:, None] <= np.arange(n))
        g = rand(rng, (n, n), dt)
        base = (g + g.conj().T) / 2 if herm else (g + g.T) / 2
        x, y = rand(rng, n, dt), rand(rng, n, dt)
        dx, dy = oxicuda.asarray(strided(x, incx, dt)), oxicuda.asarray(strided(y, incy, dt))
        x64, y64 = x.astype(np.complex128), y.astype(np.complex128)
        cases = [("syr", {}, 0.75, np.outer(x64, x64)),
                 ("syr2", {}, 0.5 + 0.25j if herm else 0.5, None)]
        if herm:
            cases += [("her", {"hermitian": True}, 0.75, np.outer(x64, x64.conj())),
                      ("her2", {"hermitian": True}, 0.5 + 0.25j, None)]
        for name, kw, alpha, outer in cases:
            if name == "syr2":
                want_upd = alpha * (np.outer(x64, y64) + np.outer(y64, x64))
            elif name == "her2":
                want_upd = alpha * np.outer(x64, y64.conj()) + np.conj(alpha) * np.outer(y64, x64.conj())
            else:
                want_upd = alpha * outer
            want = base + want_upd
            buf = np.where(mask, base, np.nan).astype(dt)
            da = fdev(buf)
            with oxicuda.trace() as tr:
                if name.endswith("2"):
                    L.syr2_ptr(uplo, n, alpha, dx.ptr, incx, dy.ptr, incy, da.ptr, n, dtype=dt, **kw)
                else:
                    L.syr_ptr(uplo, n, alpha, dx.ptr, incx, da.ptr, n, dtype=dt, **kw)
            got = da.get()
            assert np.all(np.isnan(got[~mask])), f"{name} wrote outside the {uplo} triangle"
            check(got[mask], want[mask], dt, 8)
            if herm and name.startswith("her"):
                assert np.all(np.diag(got).imag == 0)
            assert any("blas2_rank" in kk for kk in kernels(tr))
            if herm and not name.startswith("her"):
                continue  # BLAS has no complex symmetric packed update
            ap = packed_of(base, uplo, dt)
            dap = oxicuda.asarray(ap)
            if name.endswith("2"):
                L.spr2_ptr(uplo, n, alpha, dx.ptr, incx, dy.ptr, incy, dap.ptr, dtype=dt, **kw)
            else:
                L.spr_ptr(uplo, n, alpha, dx.ptr, incx, dap.ptr, dtype=dt, **kw)
            check(unpack(dap.get(), n, uplo)[mask], want[mask], dt, 8)


def test_bad_arguments_raise_before_any_launch():
    x = oxicuda.full((4,), 3.0, np.float32)
    with oxicuda.trace() as tr:
        with pytest.raises(ValueError, match="lda"):
            L.gbmv_ptr("N", 4, 4, 1, 1, 1.0, x.ptr, 2, x.ptr, 1, 0.0, x.ptr, 1, dtype=np.float32)
        with pytest.raises(ValueError, match="incx"):
            L.tpmv_ptr("L", "N", "N", 2, x.ptr, x.ptr, 0, dtype=np.float32)
        with pytest.raises(ValueError, match="past the end"):
            L.tpsv_ptr("L", "N", "N", 64, x.ptr, x.ptr, 1, dtype=np.float32)  # 2080 elements
        with pytest.raises(ValueError, match="uplo"):
            L.syr_ptr("X", 2, 1.0, x.ptr, 1, x.ptr, 2, dtype=np.float32)
        with pytest.raises(TypeError, match="Hermitian"):
            L.syr_ptr("L", 2, 1.0, x.ptr, 1, x.ptr, 2, dtype=np.float32, hermitian=True)
        with pytest.raises(ValueError, match="real alpha"):
            L.syr_ptr("L", 2, 1j, x.ptr, 1, x.ptr, 2, dtype=np.complex64, hermitian=True)
    assert tr.launches == []
    assert np.all(x.get() == 3.0)
