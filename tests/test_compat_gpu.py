"""GPU-only checks of the cuBLAS compatibility surfaces: CuPy arrays (pointers from
``cupy.ndarray.data.ptr``) through oxicuda.cuda.cublas, compared with CuPy's own cuBLAS on the
same inputs; bigger level-1/2/3 problems; the CuPy script run unchanged under CuPy and with
swapped imports under oxicuda."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import cublas as ox

pytestmark = pytest.mark.gpu


from compat_gpu_fixtures import cp, handles, hp  # noqa: F401  (fixtures and helper)


def test_level1_on_cupy_arrays_matches_cupy_cublas(cp, handles, rng):
    ho, hv, vendor = handles
    n = 1 << 20
    x = cp.asarray(rng.standard_normal(n).astype(np.float32))
    y = cp.asarray(rng.standard_normal(n).astype(np.float32))
    ours, ours_p = hp(0.0, np.float32)
    theirs, theirs_p = hp(0.0, np.float32)
    ox.sdot(ho, n, x.data.ptr, 1, y.data.ptr, 1, ours_p)
    vendor.sdot(hv, n, x.data.ptr, 1, y.data.ptr, 1, theirs_p)
    assert abs(float(ours) - float(theirs)) <= 1e-3 * max(1.0, abs(float(theirs)))
    ox.snrm2(ho, n, x.data.ptr, 1, ours_p)
    vendor.snrm2(hv, n, x.data.ptr, 1, theirs_p)
    assert abs(float(ours) - float(theirs)) <= 1e-4 * float(theirs)
    io, io_p = hp(0, np.int32)
    iv, iv_p = hp(0, np.int32)
    ox.isamax(ho, n, x.data.ptr, 1, io_p)
    vendor.isamax(hv, n, x.data.ptr, 1, iv_p)
    assert int(io) == int(iv)
    _a, a_p = hp(0.75, np.float32)
    y1, y2 = y.copy(), y.copy()
    ox.saxpy(ho, n, a_p, x.data.ptr, 1, y1.data.ptr, 1)
    vendor.saxpy(hv, n, a_p, x.data.ptr, 1, y2.data.ptr, 1)
    assert float(cp.abs(y1 - y2).max()) <= 1e-6


@pytest.mark.parametrize("p,dt", [("s", np.float32), ("d", np.float64), ("z", np.complex128)])
def test_gemm_trsm_syrk_on_cupy_arrays_match_cupy(cp, handles, rng, p, dt):
    ho, hv, vendor = handles
    n = 512
    cplx = p == "z"

    def r(*s):
        v = rng.standard_normal(s) + (1j * rng.standard_normal(s) if cplx else 0)
        return cp.asarray(np.asfortranarray(v.astype(dt)))
    a, b = r(n, n), r(n, n)
    _one, one_p = hp(1.0, dt)
    _zero, zero_p = hp(0.0, dt)
    c1, c2 = cp.zeros((n, n), dt, order="F"), cp.zeros((n, n), dt, order="F")
    getattr(ox, f"{p}gemm")(ho, 1, 0, n, n, n, one_p, a.data.ptr, n, b.data.ptr, n, zero_p, c1.data.ptr, n)
    getattr(vendor, f"{p}gemm")(hv, 1, 0, n, n, n, one_p, a.data.ptr, n, b.data.ptr, n, zero_p, c2.data.ptr, n)
    tol = 1e-3 if p == "s" else 1e-9
    assert float(cp.abs(c1 - c2).max()) <= tol * n ** 0.5
    tri = cp.asfortranarray(cp.tril(a) / n + 2 * cp.eye(n, dtype=dt))
    b1, b2 = b.copy(order="F"), b.copy(order="F")
    getattr(ox, f"{p}trsm")(ho, 0, 0, 0, 0, n, n, one_p, tri.data.ptr, n, b1.data.ptr, n)
    getattr(vendor, f"{p}trsm")(hv, 0, 0, 0, 0, n, n, one_p, tri.data.ptr, n, b2.data.ptr, n)
    assert float(cp.abs(b1 - b2).max()) <= tol * 10
    c1, c2 = cp.zeros((n, n), dt, order="F"), cp.zeros((n, n), dt, order="F")
    getattr(ox, f"{p}syrk")(ho, 0, 0, n, n, one_p, a.data.ptr, n, zero_p, c1.data.ptr, n)
    getattr(vendor, f"{p}syrk")(hv, 0, 0, n, n, one_p, a.data.ptr, n, zero_p, c2.data.ptr, n)
    low = cp.tril(cp.ones((n, n), bool))
    assert float(cp.abs(cp.where(low, c1 - c2, 0)).max()) <= tol * n ** 0.5


def test_device_pointer_mode_on_a_stream(cp, rng):
    h = ox.create()
    s = cp.cuda.Stream(non_blocking=True)
    ox.setStream(h, s.ptr)
    ox.setPointerMode(h, ox.CUBLAS_POINTER_MODE_DEVICE)
    with s:
        x = cp.asarray(rng.standard_normal(100000).astype(np.float64))
        out = cp.zeros(1, np.float64)
    ox.dnrm2(h, x.size, x.data.ptr, 1, out.data.ptr)
    s.synchronize()
    assert abs(float(out[0]) - float(cp.linalg.norm(x))) <= 1e-10 * float(out[0])
    ox.destroy(h)


def test_cupy_script_under_cupy_and_under_oxicuda(cp):
    from pathlib import Path

    from test_compat_cupy_cublas import CUPY_IMPORTS, run_script

    path = Path(__file__).parent / "data" / "scripts" / "cupy_least_squares.py"
    namespace = {"__name__": "cupy_original"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - runs the script
    assert namespace["main"]() < 1e-3
    assert run_script(path, CUPY_IMPORTS) < 1e-3


def test_oxicuda_arrays_through_cublas_match_numpy_at_size(rng):
    n = 4096
    a = rng.standard_normal((n, n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    da, dx = oxicuda.asarray(np.asfortranarray(a)), oxicuda.asarray(x)
    h = ox.create()
    _one, one_p = hp(1.0, np.float32)
    _zero, zero_p = hp(0.0, np.float32)
    dA = oxicuda.zeros((n, n), np.float32, order="F")
    ox.sger(h, n, n, one_p, dx.ptr, 1, dx.ptr, 1, dA.ptr, n)
    assert np.allclose(dA.get(), np.outer(x, x), rtol=1e-6, atol=1e-6)
    dy = oxicuda.zeros((n,), np.float32)
    ox.ssymv(h, 0, n, one_p, da.ptr, n, dx.ptr, 1, zero_p, dy.ptr, 1)
    sym = np.tril(a) + np.tril(a, -1).T
    assert np.allclose(dy.get(), sym.astype(np.float64) @ x, rtol=1e-3, atol=1e-2)
    ox.destroy(h)
