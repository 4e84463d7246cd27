"""BLAS level 1 on the live backend: every op and dtype against float64 numpy, strided and
negative increments, device-resident results, overflow-safe nrm2, bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import level1 as L

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 2e-5, "float64": 1e-12, "complex64": 2e-5, "complex128": 1e-12}


def rand(rng, n, dt):
    v = rng.standard_normal(n)
    if dt.startswith("complex"):
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dt)


def strided(rng, n, inc, dt):
    """A device buffer holding n elements at step |inc| (poisoned gaps), and the logical vector."""
    buf = np.full(max(1, (n - 1) * abs(inc) + 1), np.nan, dt)
    vals = rand(rng, n, dt)
    idx = np.arange(n) * abs(inc)
    buf[idx if inc > 0 else idx[::-1]] = vals
    return oxicuda.asarray(buf), vals, buf


def close(got, want, dt, scale=1.0):
    got, want = np.asarray(got, np.complex128), np.asarray(want, np.complex128)
    err = np.max(np.abs(got - want)) if got.size else 0.0
    assert np.all(np.isfinite(got)), got
    assert err <= TOL[dt] * max(1.0, scale), (err, got, want)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n,incx,incy", [(1, 1, 1), (17, 2, -3), (100, -1, 1)])
def test_axpy_copy_swap_rot_match_reference(rng, dt, n, incx, incy):
    alpha = complex(0.75, -1.25) if dt.startswith("complex") else -1.5
    dx, x, _ = strided(rng, n, incx, dt)
    dy, y, _ = strided(rng, n, incy, dt)
    L.axpy_ptr(n, alpha, dx.ptr, incx, dy.ptr, incy, dtype=dt)
    got = dy.get()
    idx = np.arange(n) * abs(incy)
    idx = idx if incy > 0 else idx[::-1]
    close(got[idx], y.astype(np.complex128) + alpha * x.astype(np.complex128), dt, 4)
    gaps = np.setdiff1d(np.arange(got.size), idx)
    assert np.all(np.isnan(got[gaps])), "axpy wrote outside the strided elements"
    # copy then swap back
    dz, _, _ = strided(rng, n, incy, dt)
    L.copy_ptr(n, dx.ptr, incx, dz.ptr, incy, dtype=dt)
    close(dz.get()[idx], x, dt)
    dw, w, _ = strided(rng, n, incx, dt)
    L.swap_ptr(n, dw.ptr, incx, dz.ptr, incy, dtype=dt)
    close(dz.get()[idx], w, dt)
    ix = np.arange(n) * abs(incx)
    ix = ix if incx > 0 else ix[::-1]
    close(dw.get()[ix], x, dt)
    # rot with real c, s
    da, a, _ = strided(rng, n, incx, dt)
    db, b, _ = strided(rng, n, incy, dt)
    c, s = 0.6, 0.8
    L.rot_ptr(n, da.ptr, incx, db.ptr, incy, c, s, dtype=dt)
    close(da.get()[ix], c * a + s * b, dt, 2)
    close(db.get()[idx], c * b - s * a, dt, 2)


@pytest.mark.parametrize("dt", ("complex64", "complex128"))
def test_complex_rot_and_real_scal(rng, dt):
    n = 33
    x, y = rand(rng, n, dt), rand(rng, n, dt)
    dx, dy = oxicuda.asarray(x), oxicuda.asarray(y)
    c, s = 0.6, complex(0.48, 0.64)
    L.rot_ptr(n, dx.ptr, 1, dy.ptr, 1, c, s, dtype=dt, s_real=False)
    close(dx.get(), c * x + s * y, dt, 2)
    close(dy.get(), c * y - np.conj(s) * x, dt, 2)
    dz = oxicuda.asarray(x)
    L.scal_ptr(n, 2.5, dz.ptr, 1, dtype=dt, alpha_real=True)
    close(dz.get(), 2.5 * x, dt, 3)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n,inc", [(1, 1), (17, 3), (300, 1)])
def test_scal_and_reductions_match_reference(rng, dt, n, inc):
    dx, x, _ = strided(rng, n, inc, dt)
    x128 = x.astype(np.complex128)
    mag = np.abs(x128.real) + np.abs(x128.imag)
    assert L.iamax(dx[:: inc]) == np.argmax(mag) + 1
    assert L.iamin(dx[:: inc]) == np.argmin(mag) + 1
    close(L.asum(dx[::inc]), mag.sum(), dt, mag.sum())
    close(L.nrm2(dx[::inc]), np.linalg.norm(x128), dt, np.linalg.norm(x128))
    dy, y, _ = strided(rng, n, 1, dt)
    close(L.dot(dx[::inc], dy), np.sum(x128 * y.astype(np.complex128)), dt, n)
    close(L.dotc(dx[::inc], dy), np.vdot(x128, y.astype(np.complex128)), dt, n)
    alpha = complex(-0.5, 2.0) if dt.startswith("complex") else 3.0
    L.scal(alpha, dx[::inc])
    close(dx.get()[:: inc], alpha * x128, dt, 4)


@pytest.mark.parametrize("dt", DTYPES)
def test_dot_with_negative_increment_pairs_reversed_elements(rng, dt):
    n = 40
    dx, x, _ = strided(rng, n, -2, dt)
    dy, y, _ = strided(rng, n, 1, dt)
    host = np.full(1, np.nan, dt)
    L.dot_ptr(n, dx.ptr, -2, dy.ptr, 1, host.ctypes.data, dtype=dt, result_on_host=True)
    close(host[0], np.sum(x.astype(np.complex128) * y), dt, n)


@pytest.mark.parametrize("dt", DTYPES)
def test_results_into_device_memory(rng, dt):
    n = 50
    x, y = rand(rng, n, dt), rand(rng, n, dt)
    dx, dy = oxicuda.asarray(x), oxicuda.asarray(y)
    rdt = np.dtype(dt).type(0).real.dtype
    out = oxicuda.full((1,), np.nan, dt)
    L.dot_ptr(n, dx.ptr, 1, dy.ptr, 1, out.ptr, dtype=dt)
    close(out.get()[0], np.sum(x.astype(np.complex128) * y), dt, n)
    r = oxicuda.full((1,), np.nan, rdt)
    L.nrm2_ptr(n, dx.ptr, 1, r.ptr, dtype=dt)
    close(r.get()[0], np.linalg.norm(x.astype(np.complex128)), dt, 10)
    i = oxicuda.full((1,), -7, np.int32)
    L.iamax_ptr(n, dx.ptr, 1, i.ptr, dtype=dt)
    assert i.get()[0] == np.argmax(np.abs(x.real) + np.abs(x.imag)) + 1


@pytest.mark.parametrize("dt,big", [("float32", 1e30), ("float64", 1e200), ("complex128", 1e200),
                                    ("float64", 1e-200)])
def test_nrm2_neither_overflows_nor_underflows(rng, dt, big):
    x = (rand(rng, 64, dt) * big).astype(dt)
    want = big * np.linalg.norm((x / big).astype(np.complex128))
    got = L.nrm2(oxicuda.asarray(x))
    assert np.isfinite(got) and got > 0
    assert abs(got - want) <= TOL[dt] * want * 4


def test_nrm2_of_zeros_and_empty_and_nonpositive_increment():
    z = oxicuda.zeros((9,), np.float64)
    assert L.nrm2(z) == 0.0
    out = np.full(1, np.nan, np.float32)
    x = oxicuda.asarray(np.ones(4, np.float32))
    L.nrm2_ptr(0, x.ptr, 1, out.ctypes.data, dtype=np.float32, result_on_host=True)
    assert out[0] == 0.0
    out[0] = np.nan
    L.asum_ptr(4, x.ptr, 0, out.ctypes.data, dtype=np.float32, result_on_host=True)
    assert out[0] == 0.0
    idx = np.full(1, 5, np.int32)
    L.iamax_ptr(4, x.ptr, -1, idx.ctypes.data, dtype=np.float32, result_on_host=True)
    assert idx[0] == 0


def test_iamax_picks_first_of_ties():
    x = oxicuda.asarray(np.array([1, -3, 2, 3, -3], np.float32))
    assert L.iamax(x) == 2
    y = oxicuda.asarray(np.array([4, 1, -1, 1], np.float64))
    assert L.iamin(y) == 2


def test_reductions_run_partial_then_final_kernels(rng):
    x = oxicuda.asarray(rand(rng, 600, "float64"))
    with oxicuda.trace() as t:
        L.nrm2(x)
    ops = [(s.op, s.stage) for s in t.specs()]
    assert ops == [("amax_abs", "partial"), ("amax_abs", "final"), ("nrm2_scaled", "partial"),
                   ("nrm2_scaled", "final")]
    assert t.launches[0].grid[0] == 3
    with oxicuda.trace() as t:
        L.nrm2(oxicuda.asarray(rand(rng, 10, "float32")))
    assert [(s.op, s.stage) for s in t.specs()] == [("nrm2_sq", "partial"), ("nrm2_sq", "final")]


def test_bad_arguments_raise_before_writing(rng):
    x = oxicuda.asarray(rand(rng, 8, "float32"))
    y = oxicuda.full((8,), 7.0, np.float32)
    from oxicuda.driver.backend import api

    raw = api().mem_alloc(32)  # exactly 8 floats: the pool would round a DeviceArray up
    try:
        with pytest.raises(ValueError, match="past the end"):
            L.axpy_ptr(9, 1.0, raw, 1, y.ptr, 1, dtype=np.float32)
        with pytest.raises(ValueError, match="past the end"):
            L.axpy_ptr(5, 1.0, x.ptr, 1, raw, 2, dtype=np.float32)
    finally:
        api().mem_free(raw)
    with pytest.raises(TypeError, match="dtype"):
        L.axpy_ptr(8, 1.0, x.ptr, 1, y.ptr, 1, dtype=np.int32)
    with pytest.raises(TypeError, match="n="):
        L.axpy_ptr(8.0, 1.0, x.ptr, 1, y.ptr, 1, dtype=np.float32)
    with pytest.raises(ValueError, match="NULL"):
        L.copy_ptr(8, 0, 1, y.ptr, 1, dtype=np.float32)
    with pytest.raises(ValueError, match="shape"):
        L.axpy(1.0, x, oxicuda.zeros((7,), np.float32))
    with pytest.raises(TypeError, match="dtypes"):
        L.dot(x, oxicuda.zeros((8,), np.float64))
    with pytest.raises(TypeError, match="not a device array"):
        L.nrm2(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="NULL"):
        L.dot_ptr(8, x.ptr, 1, y.ptr, 1, 0, dtype=np.float32)
    assert np.all(y.get() == 7.0)
