"""eigh's tridiagonal path (sytrd, stebz, stein, Householder reorthogonalization, ormtr) at real
sizes on a GPU: LAPACK's scaled residual and orthogonality below 30, eigenvalues against
cupy.linalg.eigh (cuSOLVER syevd) where CuPy is importable, both timed in the same process (the
ratio is printed; the bench cases solver/eigh_* record it)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import oxicuda
import oxicuda.solver as S

pytestmark = pytest.mark.gpu

EPS = {d: np.finfo(d).eps for d in ("float32", "float64", "complex64", "complex128")}


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # no usable CuPy: no vendor column
        return None


def _hermitian(rng, n, dt):
    x = rng.standard_normal((n, n))
    if dt.startswith("complex"):
        x = x + 1j * rng.standard_normal((n, n))
    return ((x + np.conj(x.T)) / 2).astype(dt)


def _errors(a, w, v, dt):
    n = a.shape[-1]
    wide = np.complex128 if dt.startswith("complex") else np.float64
    A, W, V = a.astype(wide), w.astype(np.float64), v.astype(wide)
    norm = np.abs(A).sum(axis=0).max()
    res = np.abs(A @ V - V * W).max() / (n * norm * EPS[dt])
    orth = np.abs(np.conj(V.T) @ V - np.eye(n)).max() / (n * EPS[dt])
    return res, orth, norm


@pytest.mark.parametrize("dt, n, uplo", [("float32", 1024, "L"), ("float64", 1024, "U"), ("complex128", 1024, "L"),
                                         ("float32", 4096, "L"), ("float64", 4096, "L")])
def test_eigh_tridiagonal_path_against_cupy(dt, n, uplo):
    rng = np.random.default_rng(21)
    a = _hermitian(rng, n, dt)
    S.eigh(oxicuda.asarray(_hermitian(rng, 80, dt)))  # compile / load the kernels
    da = oxicuda.asarray(a)
    t0 = time.perf_counter()
    with oxicuda.trace() as t:
        w, v = S.eigh(da, UPLO=uplo)
        W, V = w.get(), v.get()
    ours = time.perf_counter() - t0
    fam = {s.family for s in t.specs() if s is not None}
    assert {"solver_sytrd_x", "solver_stebz", "solver_stein", "solver_geqr2"} <= fam and "solver_syevj" not in fam
    res, orth, norm = _errors(a, W, V, dt)
    assert res < 30 and orth < 30, (res, orth)
    cupy = _cupy()
    if cupy is not None:
        ca = cupy.asarray(a)
        cupy.linalg.eigh(ca, UPLO=uplo)
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        cw, _ = cupy.linalg.eigh(ca, UPLO=uplo)
        cw = cw.get()
        cupy.cuda.Device().synchronize()
        theirs = time.perf_counter() - t0
        print(f"eigh {dt} n={n}: oxicuda {ours * 1e3:.1f} ms, cuSOLVER {theirs * 1e3:.1f} ms, "
              f"ratio (cuSOLVER/oxicuda) {theirs / ours:.3f}; residual {res:.3g}, orthogonality {orth:.3g}")
        assert np.abs(W.astype(np.float64) - cw).max() <= 30 * n * norm * EPS[dt]


def test_eigh_tridiagonal_repeated_spectrum_order_2048():
    """A matrix with eigenvalues of multiplicity 64 (32 distinct values): clusters of identical
    eigenvalues at a size where stein's per-cluster Gram-Schmidt would be long."""
    n = 2048
    rng = np.random.default_rng(22)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    lam = np.repeat(np.arange(32, dtype=np.float64), n // 32)
    a = (q * lam) @ q.T
    a = (a + a.T) / 2
    w, v = S.eigh(oxicuda.asarray(a))
    res, orth, norm = _errors(a, w.get(), v.get(), "float64")
    assert res < 30 and orth < 30, (res, orth)
    assert np.abs(w.get() - lam).max() <= 30 * n * norm * EPS["float64"]
