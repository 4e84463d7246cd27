"""oxicuda.skcuda.cublas, shaped like skcuda.cublas: host scalar values, char or int op codes,
pointers as ints or objects with __int__, dot/nrm2/asum returning values, 0-based i?amax, the
exception classes, and a scikit-cuda script run with only its import block swapped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_compat_cupy_cublas import run_script

import oxicuda
from oxicuda.skcuda import cublas

SCRIPTS = Path(__file__).parent / "data" / "scripts"
SKCUDA_IMPORTS = """import numpy as np
import oxicuda
from oxicuda.skcuda import cublas


class gpuarray:
    to_gpu = staticmethod(oxicuda.asarray)


def ptr(a):
    return a.gpudata
"""


class GpuData:
    """Like pycuda's DeviceAllocation: only __int__."""

    def __init__(self, ptr: int) -> None:
        self._ptr = ptr

    def __int__(self) -> int:
        return self._ptr


@pytest.fixture
def h():
    handle = cublas.cublasCreate()
    yield handle
    cublas.cublasDestroy(handle)


def test_exception_hierarchy_and_status_table():
    assert issubclass(cublas.cublasInvalidValue, cublas.cublasError)
    assert cublas.cublasExceptions[7] is cublas.cublasInvalidValue
    assert cublas.cublasExceptions[1] is cublas.cublasNotInitialized
    with pytest.raises(cublas.cublasNotSupported):
        cublas.cublasCheckStatus(15)
    cublas.cublasCheckStatus(0)


@pytest.mark.parametrize("p,dt", [("S", np.float32), ("D", np.float64), ("C", np.complex64), ("Z", np.complex128)])
def test_level1_values(rng, h, p, dt):
    n = 29
    cplx = p in "CZ"
    x = (rng.standard_normal(n) + (1j * rng.standard_normal(n) if cplx else 0)).astype(dt)
    y = (rng.standard_normal(n) + (1j * rng.standard_normal(n) if cplx else 0)).astype(dt)
    tol = 1e-4 if p in "SC" else 1e-11
    dx, dy = oxicuda.asarray(x), oxicuda.asarray(y)
    gx = GpuData(dx.ptr)
    alpha = (0.5 + 1j) if cplx else 0.5
    getattr(cublas, f"cublas{p}axpy")(h, n, alpha, gx, 1, dy, 1)
    assert np.allclose(dy.get(), y + alpha * x, atol=tol)
    rp = {"S": "S", "D": "D", "C": "Sc", "Z": "Dz"}[p]
    assert abs(getattr(cublas, f"cublas{rp}nrm2")(h, n, gx, 1) - np.linalg.norm(x)) <= tol * 10
    mag = np.abs(x.real) + np.abs(x.imag)
    assert abs(getattr(cublas, f"cublas{rp}asum")(h, n, gx, 1) - mag.sum()) <= tol * n
    assert getattr(cublas, f"cublasI{p.lower()}amax")(h, n, gx, 1) == int(np.argmax(mag))
    assert getattr(cublas, f"cublasI{p.lower()}amin")(h, n, gx, 1) == int(np.argmin(mag))
    dot = getattr(cublas, f"cublas{p}dotc" if cplx else f"cublas{p}dot")
    assert abs(dot(h, n, gx, 1, dx.ptr, 1) - np.vdot(x, x)) <= tol * n
    dz = oxicuda.zeros((n,), dt)
    getattr(cublas, f"cublas{p}copy")(h, n, dx, 1, dz, 1)
    getattr(cublas, f"cublas{p}scal")(h, n, 2.0, dz, 1)
    assert np.allclose(dz.get(), 2 * x, atol=tol)
    getattr(cublas, f"cublas{p}swap")(h, n, dx, 1, dz, 1)
    assert np.allclose(dx.get(), 2 * x, atol=tol) and np.allclose(dz.get(), x, atol=tol)


@pytest.mark.parametrize("p,dt", [("S", np.float32), ("Z", np.complex128)])
def test_gemm_with_char_and_int_ops(rng, h, p, dt):
    m, n, k = 6, 5, 4
    cplx = p == "Z"

    def r(*s):
        return (rng.standard_normal(s) + (1j * rng.standard_normal(s) if cplx else 0)).astype(dt)
    a, b, c = r(k, m), r(n, k), r(m, n)
    tol = 1e-4 if p == "S" else 1e-11
    for ta, tb in (("t", "T"), (1, 1), ("T", "t")):
        da, db, dc = (oxicuda.asarray(np.asfortranarray(v)) for v in (a, b, c))
        getattr(cublas, f"cublas{p}gemm")(h, ta, tb, m, n, k, 1.5, da, k, db, n, -1.0, dc, m)
        assert np.allclose(dc.get(), 1.5 * a.T @ b.T - c, atol=tol * k)
    with pytest.raises(cublas.cublasInvalidValue):
        getattr(cublas, f"cublas{p}gemm")(h, "x", "n", m, n, k, 1.0, da, k, db, n, 0.0, dc, m)


def test_level2_level3_routines(rng, h):
    n = 9
    a = (np.triu(rng.standard_normal((n, n))) / n + 2 * np.eye(n)).astype(np.float32)
    da = oxicuda.asarray(np.asfortranarray(a))
    x = rng.standard_normal(n).astype(np.float32)
    dx = oxicuda.asarray(x)
    cublas.cublasStrsv(h, "u", "n", "n", n, da, n, dx, 1)
    assert np.allclose(a.astype(np.float64) @ dx.get(), x, atol=1e-4)
    b = rng.standard_normal((n, 2)).astype(np.float32)
    db = oxicuda.asarray(np.asfortranarray(b))
    cublas.cublasStrsm(h, "l", "u", "t", "n", n, 2, 2.0, da, n, db, n)
    assert np.allclose(a.T.astype(np.float64) @ db.get(), 2 * b, atol=1e-4)
    dA = oxicuda.zeros((n, n), np.float32, order="F")
    cublas.cublasSger(h, n, n, 1.0, dx, 1, dx, 1, dA, n)
    xs = dx.get().astype(np.float64)
    assert np.allclose(dA.get(), np.outer(xs, xs), rtol=1e-5, atol=1e-5)
    dy = oxicuda.asarray(np.ones(n, np.float32))
    cublas.cublasSsymv(h, "L", n, 1.0, dA, n, dx, 1, 0.0, dy, 1)
    assert np.allclose(dy.get(), np.outer(xs, xs) @ xs, rtol=1e-4, atol=1e-4)
    dc = oxicuda.zeros((n, n), np.float32, order="F")
    cublas.cublasSsyrk(h, "U", "N", n, 2, 1.0, db, n, 0.0, dc, n)
    bb = db.get().astype(np.float64)
    up = np.triu(np.ones((n, n), bool))
    assert np.allclose(dc.get()[up], (bb @ bb.T)[up], atol=1e-3)


def test_bad_handle_and_arguments(h):
    x = oxicuda.asarray(np.ones(4, np.float32))
    with pytest.raises(cublas.cublasInvalidValue):
        cublas.cublasSaxpy(h, 4, "2", x, 1, x, 1)
    with pytest.raises(cublas.cublasInvalidValue):
        cublas.cublasSnrm2(h, 4, 0, 1)
    dead = cublas.cublasCreate()
    cublas.cublasDestroy(dead)
    with pytest.raises(cublas.cublasNotInitialized):
        cublas.cublasSdot(dead, 4, x, 1, x, 1)
    assert np.all(x.get() == 1.0)


def test_skcuda_script_runs_with_swapped_imports():
    err = run_script(SCRIPTS / "skcuda_gram_schmidt.py", SKCUDA_IMPORTS)
    assert err < 1e-3
