"""rotm, rotg and rotmg (oxicuda.blas.level1_rot) against reference BLAS written out in float64
Python: every dtype BLAS defines them for, both pointer modes (host addresses and device
memory), every rotm flag, rotmg's rescaling, negative increments; the kernels named by trace."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import level1_rot as R

GAM, GAMSQ, RGAMSQ = 4096.0, 4096.0 ** 2, 1.0 / 4096.0 ** 2


def ref_rotg_real(a, b):
    roe = a if abs(a) > abs(b) else b
    scale = abs(a) + abs(b)
    if scale == 0:
        return 0.0, 0.0, 1.0, 0.0
    r = math.copysign(scale * math.sqrt((a / scale) ** 2 + (b / scale) ** 2), 1.0 if roe >= 0 else -1.0)
    c, s = a / r, b / r
    z = s if abs(a) > abs(b) else 1.0
    if abs(b) >= abs(a) and c != 0:
        z = 1.0 / c
    return r, z, c, s


def ref_rotg_complex(a, b):
    if abs(a) == 0:
        return b, 0.0, 1.0 + 0j
    scale = abs(a) + abs(b)
    norm = scale * math.sqrt(abs(a / scale) ** 2 + abs(b / scale) ** 2)
    alpha = a / abs(a)
    return alpha * norm, abs(a) / norm, alpha * np.conj(b) / norm


def ref_rotmg(d1, d2, x1, y1):
    """Reference BLAS drotmg; returns (d1, d2, x1, param) with param's untouched slots NaN."""
    param = [math.nan] * 5
    h11 = h12 = h21 = h22 = 0.0
    if d1 < 0:
        flag, h11, h12, h21, h22, d1, d2, x1 = -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    else:
        p2 = d2 * y1
        if p2 == 0:
            param[0] = -2.0
            return d1, d2, x1, param
        p1 = d1 * x1
        q2, q1 = p2 * y1, p1 * x1
        if abs(q1) > abs(q2):
            h21, h12 = -y1 / x1, p2 / p1
            u = 1 - h12 * h21
            if u > 0:
                flag, d1, d2, x1 = 0.0, d1 / u, d2 / u, x1 * u
            else:
                flag, h11, h12, h21, h22, d1, d2, x1 = -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        elif q2 < 0:
            flag, h11, h12, h21, h22, d1, d2, x1 = -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        else:
            flag, h11, h22 = 1.0, p1 / p2, x1 / y1
            u = 1 + h11 * h22
            d1, d2, x1 = d2 / u, d1 / u, y1 * u
        if d1 != 0:
            while d1 <= RGAMSQ or d1 >= GAMSQ:
                if flag == 0:
                    h11, h22 = 1.0, 1.0
                else:
                    h21, h12 = -1.0, 1.0
                flag = -1.0
                if d1 <= RGAMSQ:
                    d1, x1, h11, h12 = d1 * GAM ** 2, x1 / GAM, h11 / GAM, h12 / GAM
                else:
                    d1, x1, h11, h12 = d1 / GAM ** 2, x1 * GAM, h11 * GAM, h12 * GAM
        if d2 != 0:
            while abs(d2) <= RGAMSQ or abs(d2) >= GAMSQ:
                if flag == 0:
                    h11, h22 = 1.0, 1.0
                else:
                    h21, h12 = -1.0, 1.0
                flag = -1.0
                if abs(d2) <= RGAMSQ:
                    d2, h21, h22 = d2 * GAM ** 2, h21 / GAM, h22 / GAM
                else:
                    d2, h21, h22 = d2 / GAM ** 2, h21 * GAM, h22 * GAM
    param[0] = flag
    if flag != 0:
        param[1], param[4] = h11, h22
    if flag != 1:
        param[2], param[3] = h21, h12
    return d1, d2, x1, param


@pytest.mark.parametrize("dt", ("float32", "float64"))
def test_rotm_every_flag_both_pointer_modes_and_negative_increments(rng, dt):
    n = 37
    tol = 1e-6 if dt == "float32" else 1e-14
    for flag in (-1.0, 0.0, 1.0, -2.0):
        h = rng.standard_normal(4)
        param = np.array([flag, *h], dt)
        h11, h21, h12, h22 = param[1:].astype(np.float64)
        if flag == 0:
            h11 = h22 = 1.0
        elif flag == 1:
            h12, h21 = 1.0, -1.0
        elif flag == -2:
            h11, h21, h12, h22 = 1.0, 0.0, 0.0, 1.0
        for on_host, (incx, incy) in ((True, (1, -2)), (False, (-1, 1))):
            x, y = rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
            xb = np.zeros((n - 1) * abs(incx) + 1, dt)
            xb[::abs(incx)] = x if incx > 0 else x[::-1]
            yb = np.zeros((n - 1) * abs(incy) + 1, dt)
            yb[::abs(incy)] = y if incy > 0 else y[::-1]
            dx, dy = oxicuda.asarray(xb), oxicuda.asarray(yb)
            dparam = oxicuda.asarray(param)
            with oxicuda.trace() as tr:
                R.rotm_ptr(n, dx.ptr, incx, dy.ptr, incy, param.ctypes.data if on_host else dparam.ptr, dtype=dt,
                           param_on_host=on_host)
            gx = dx.get()[::abs(incx)]
            gy = dy.get()[::abs(incy)]
            gx, gy = (gx if incx > 0 else gx[::-1]), (gy if incy > 0 else gy[::-1])
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            assert np.max(np.abs(gx - (h11 * x64 + h12 * y64))) <= tol * 10
            assert np.max(np.abs(gy - (h21 * x64 + h22 * y64))) <= tol * 10
            launched = [r.kernel for r in tr.launches]
            if flag == -2 and on_host:
                assert launched == []  # nothing to do, known on the host
            else:
                assert any("blas1_rotm" in k for k in launched)


@pytest.mark.parametrize("dt", ("float32", "float64", "complex64", "complex128"))
def test_rotg_matches_reference_blas_in_both_pointer_modes(rng, dt):
    cplx = dt.startswith("complex")
    rdt = {"complex64": "float32", "complex128": "float64"}.get(dt, dt)
    tol = 1e-5 if dt in ("float32", "complex64") else 1e-13
    pairs = [(3.0, 4.0), (-5.0, 2.0), (0.0, 0.0), (0.0, 2.5), (1e-3, -7.0)]
    if cplx:
        pairs = [(a + 1j * rng.standard_normal(), b - 0.5j) for a, b in pairs] + [(0.0, 1 + 1j)]
    for on_host in (True, False):
        for a, b in pairs:
            ab = np.array([a, b], dt)
            c, s = np.zeros(1, rdt), np.zeros(1, dt)
            if on_host:
                R.rotg_ptr(ab.ctypes.data, ab.ctypes.data + ab.itemsize, c.ctypes.data, s.ctypes.data, dtype=dt)
                got_ab, got_c, got_s = ab, c, s
            else:
                dab, dc, ds = oxicuda.asarray(ab), oxicuda.asarray(c), oxicuda.asarray(s)
                with oxicuda.trace() as tr:
                    R.rotg_ptr(dab.ptr, dab.ptr + ab.itemsize, dc.ptr, ds.ptr, dtype=dt, on_host=False)
                assert any("blas1_rotg" in r.kernel for r in tr.launches)
                got_ab, got_c, got_s = dab.get(), dc.get(), ds.get()
            a0, b0 = np.array([a, b], dt).astype(np.complex128 if cplx else np.float64)
            if cplx:
                r, cc, ss = ref_rotg_complex(a0, b0)
                want = [r, b0, cc, ss]
            else:
                want = list(ref_rotg_real(float(a0), float(b0)))
            got = [got_ab[0], got_ab[1], got_c[0], got_s[0]]
            for g, w in zip(got, want):
                assert abs(complex(g) - complex(w)) <= tol * max(1.0, abs(w)), (a, b, got, want)


@pytest.mark.parametrize("dt", ("float32", "float64"))
def test_rotmg_matches_reference_blas_including_rescaling(dt):
    tol = 1e-5 if dt == "float32" else 1e-13
    cases = [(2.0, 3.0, 1.5, 0.5), (1.0, 1.0, 0.1, 2.0), (1e-9, 1.0, 1.0, 1.0), (-1.0, 2.0, 1.0, 1.0),
             (1.0, 0.0, 1.0, 1.0), (4e8, 1.0, 1e-3, 1.0), (1.0, -2.0, 1.0, 3.0), (1.0, 1e-9, 1.0, 1e-2)]
    for on_host in (True, False):
        for d1, d2, x1, y1 in cases:
            v = np.array([d1, d2, x1, y1], dt)
            param = np.full(5, np.nan, dt)
            if on_host:
                e = v.itemsize
                R.rotmg_ptr(v.ctypes.data, v.ctypes.data + e, v.ctypes.data + 2 * e, v.ctypes.data + 3 * e,
                            param.ctypes.data, dtype=dt)
                got_v, got_p = v, param
            else:
                dv, dp = oxicuda.asarray(v), oxicuda.asarray(param)
                e = v.itemsize
                R.rotmg_ptr(dv.ptr, dv.ptr + e, dv.ptr + 2 * e, dv.ptr + 3 * e, dp.ptr, dtype=dt, on_host=False)
                got_v, got_p = dv.get(), dp.get()
            rd1, rd2, rx1, rparam = ref_rotmg(*[float(t) for t in np.array([d1, d2, x1, y1], dt)])
            for g, w in zip(got_v[:3], (rd1, rd2, rx1)):
                assert abs(float(g) - w) <= tol * max(1.0, abs(w)), (d1, d2, x1, y1, got_v, (rd1, rd2, rx1))
            for g, w in zip(got_p, rparam):
                if math.isnan(w):
                    assert np.isnan(g), (got_p, rparam)  # a slot BLAS leaves alone stays untouched
                else:
                    assert abs(float(g) - w) <= tol * max(1.0, abs(w)), (d1, d2, x1, y1, got_p, rparam)


def test_rotations_refuse_bad_arguments_before_any_launch():
    x = oxicuda.full((4,), 1.0, np.float32)
    with oxicuda.trace() as tr:
        with pytest.raises(TypeError, match="float32/float64"):
            R.rotm_ptr(4, x.ptr, 1, x.ptr, 1, x.ptr, dtype=np.complex64, param_on_host=False)
        with pytest.raises(ValueError, match="NULL"):
            R.rotg_ptr(0, x.ptr, x.ptr, x.ptr, dtype=np.float32, on_host=False)
        with pytest.raises(ValueError, match="NULL"):
            R.rotm_ptr(4, x.ptr, 1, x.ptr, 1, 0, dtype=np.float32)
    assert tr.launches == []
