"""BLAS level 2 (ger, symv/hemv, trsv) on the live backend against float64 numpy."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import level2 as L2

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 3e-5, "float64": 1e-12, "complex64": 3e-5, "complex128": 1e-12}


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
    err = np.max(np.abs(got.astype(np.complex128) - want)) if got.size else 0.0
    assert err <= TOL[dt] * max(1.0, scale), err


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("m,n,lda,incx,incy", [(1, 1, 1, 1, 1), (17, 5, 20, -2, 3), (33, 40, 33, 1, -1)])
def test_ger_matches_reference_and_leaves_padding(rng, dt, m, n, lda, incx, incy):
    buf = np.full((lda, n), np.nan, dt)
    a = rand(rng, (m, n), dt)
    buf[:m] = a
    da = fdev(buf)
    x, y = rand(rng, m, dt), rand(rng, n, dt)
    xb = np.zeros((m - 1) * abs(incx) + 1, dt)
    xb[::abs(incx)] = x if incx > 0 else x[::-1]
    yb = np.zeros((n - 1) * abs(incy) + 1, dt)
    yb[::abs(incy)] = y if incy > 0 else y[::-1]
    dx, dy = oxicuda.asarray(xb), oxicuda.asarray(yb)
    alpha = 1.5 - 0.5j if dt.startswith("complex") else 1.5
    for conj in ((False, True) if dt.startswith("complex") else (False,)):
        da.set(np.asfortranarray(buf))
        L2.ger_ptr(m, n, alpha, dx.ptr, incx, dy.ptr, incy, da.ptr, lda, dtype=dt, conj=conj)
        got = da.get()
        yy = np.conj(y) if conj else y
        check(got[:m], a.astype(np.complex128) + alpha * np.outer(x, yy), dt, 8)
        assert np.all(np.isnan(got[m:])), "ger wrote into the lda padding"


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_symv_and_hemv_read_only_the_stored_triangle(rng, dt, uplo):
    n = 23
    full = rand(rng, (n, n), dt)
    stored = np.tril(full) if uplo == "L" else np.triu(full)
    other = np.triu(np.ones((n, n), bool), 1) if uplo == "L" else np.tril(np.ones((n, n), bool), -1)
    poisoned = stored.copy()
    poisoned[other] = np.nan  # the kernel must never read it
    dpoisoned = fdev(poisoned)  # bound: a temporary would free its block before the kernel runs
    for herm in ((False, True) if dt.startswith("complex") else (False,)):
        s = stored.astype(np.complex128)
        off = np.tril(s, -1) if uplo == "L" else np.triu(s, 1)
        diag = np.diag(np.diag(s).real if herm else np.diag(s))
        sym = diag + off + (off.conj().T if herm else off.T)
        x, y = rand(rng, n, dt), rand(rng, n, dt)
        dx, dy = oxicuda.asarray(x), oxicuda.asarray(y)
        L2.symv_ptr(uplo, n, 0.5, dpoisoned.ptr, n, dx.ptr, 1, -2.0, dy.ptr, 1, dtype=dt, hermitian=herm)
        check(dy.get(), 0.5 * sym @ x - 2.0 * y, dt, 4 * n)
        # beta == 0: y is never read (NaN stays out)
        dy = oxicuda.full((n,), np.nan, dt)
        L2.symv_ptr(uplo, n, 1.0, dpoisoned.ptr, n, dx.ptr, 1, 0.0, dy.ptr, 1, dtype=dt, hermitian=herm)
        check(dy.get(), sym @ x, dt, 4 * n)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
@pytest.mark.parametrize("diag", ("N", "U"))
def test_trsv_solves_every_op(rng, dt, uplo, diag):
    n = 29
    a = rand(rng, (n, n), dt) / n + 2 * np.eye(n, dtype=dt)
    tri = np.tril(a) if uplo == "L" else np.triu(a)
    if diag == "U":
        tri = tri - np.diag(np.diag(tri)) + np.eye(n)
        a = a + np.diag(np.full(n, np.nan, dt))  # unit diagonal must not be read
    poisoned = np.where(np.tril(np.ones((n, n), bool)) if uplo == "L" else np.triu(np.ones((n, n), bool)), a, np.nan)
    da = fdev(poisoned.astype(dt))
    for trans in ("N", "T", "C") if dt.startswith("complex") else ("N", "T"):
        op = {"N": tri, "T": tri.T, "C": tri.conj().T}[trans].astype(np.complex128)
        b = rand(rng, n, dt)
        for inc in (1, -2):
            buf = np.zeros((n - 1) * abs(inc) + 1, dt)
            buf[::abs(inc)] = b if inc > 0 else b[::-1]
            dx = oxicuda.asarray(buf)
            L2.trsv_ptr(uplo, trans, diag, n, da.ptr, n, dx.ptr, inc, dtype=dt)
            sol = dx.get()[::abs(inc)]
            sol = sol if inc > 0 else sol[::-1]
            check(op @ sol, b, dt, 8)


def test_level2_bad_arguments_raise():
    a = oxicuda.zeros((4, 4), np.float32, order="F")
    x = oxicuda.zeros((4,), np.float32)
    with pytest.raises(ValueError, match="lda"):
        L2.ger_ptr(4, 4, 1.0, x.ptr, 1, x.ptr, 1, a.ptr, 3, dtype=np.float32)
    with pytest.raises(ValueError, match="incx=0"):
        L2.symv_ptr("L", 4, 1.0, a.ptr, 4, x.ptr, 0, 0.0, x.ptr, 1, dtype=np.float32)
    with pytest.raises(ValueError, match="uplo"):
        L2.trsv_ptr("X", "N", "N", 4, a.ptr, 4, x.ptr, 1, dtype=np.float32)
    with pytest.raises(ValueError, match="diag"):
        L2.trsv_ptr("L", "N", "Q", 4, a.ptr, 4, x.ptr, 1, dtype=np.float32)
    with pytest.raises(TypeError, match="dtype"):
        L2.trsv_ptr("L", "N", "N", 4, a.ptr, 4, x.ptr, 1, dtype=np.int64)
