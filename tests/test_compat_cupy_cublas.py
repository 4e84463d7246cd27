"""oxicuda.cuda.cublas, shaped like cupy.cuda.cublas: pointer scalars in both pointer modes,
results to host and device, every op family against float64 numpy, status codes, handles shared
by threads, and a CuPy script run with only its import block swapped."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import cublas

SCRIPTS = Path(__file__).parent / "data" / "scripts"
CUPY_IMPORTS = """import numpy as np
import oxicuda as xp
from oxicuda.cuda import cublas


def ptr(a):
    return a.ptr
"""


def swap_imports(path: Path, block: str) -> str:
    text = path.read_text()
    new, count = re.subn(r"# --- IMPORTS ---\n.*?# --- END IMPORTS ---\n", block, text, flags=re.DOTALL)
    assert count == 1, f"{path.name} lacks its IMPORTS block"
    return new


def run_script(path: Path, block: str) -> object:
    namespace = {"__name__": "script_under_test"}
    exec(compile(swap_imports(path, block), str(path), "exec"), namespace)  # noqa: S102 - runs the script
    return namespace["main"]()


def hp(value, dtype):
    arr = np.array(value, dtype=dtype)
    return arr, arr.ctypes.data


@pytest.fixture
def handle():
    h = cublas.create()
    yield h
    cublas.destroy(h)


def test_constants_match_cublas_headers():
    assert (cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_C) == (0, 1, 2)
    assert (cublas.CUBLAS_POINTER_MODE_HOST, cublas.CUBLAS_POINTER_MODE_DEVICE) == (0, 1)
    assert (cublas.CUBLAS_FILL_MODE_LOWER, cublas.CUBLAS_FILL_MODE_UPPER) == (0, 1)
    assert (cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_SIDE_RIGHT, cublas.CUBLAS_DIAG_UNIT) == (0, 1, 1)
    assert (cublas.CUDA_R_16F, cublas.CUDA_R_32F, cublas.CUDA_R_64F, cublas.CUDA_R_16BF) == (2, 0, 1, 14)
    assert (cublas.CUDA_C_32F, cublas.CUDA_C_64F) == (4, 5)
    assert (cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_COMPUTE_32F_FAST_TF32, cublas.CUBLAS_COMPUTE_64F) == (68, 77, 70)
    assert cublas.CUBLAS_TF32_TENSOR_OP_MATH == 3 and cublas.CUBLAS_STATUS_INVALID_VALUE == 7


def test_handle_state_round_trips_and_destroyed_handle_raises():
    h = cublas.create()
    s = oxicuda.Stream()
    cublas.setStream(h, s.handle)
    cublas.setPointerMode(h, cublas.CUBLAS_POINTER_MODE_DEVICE)
    cublas.setMathMode(h, cublas.CUBLAS_TF32_TENSOR_OP_MATH)
    assert (cublas.getStream(h), cublas.getPointerMode(h), cublas.getMathMode(h)) == (s.handle, 1, 3)
    with pytest.raises(cublas.CUBLASError) as e:
        cublas.setPointerMode(h, 5)
    assert e.value.status == 7
    cublas.destroy(h)
    with pytest.raises(cublas.CUBLASError) as e:
        cublas.getStream(h)
    assert e.value.status == cublas.CUBLAS_STATUS_NOT_INITIALIZED
    with pytest.raises(cublas.CUBLASError) as e:
        cublas.destroy(h)
    assert e.value.status == 1


@pytest.mark.parametrize("p,dt", [("s", np.float32), ("d", np.float64), ("c", np.complex64), ("z", np.complex128)])
def test_level1_in_host_and_device_pointer_modes(rng, handle, p, dt):
    n = 37
    x = (rng.standard_normal(n) + (1j * rng.standard_normal(n) if p in "cz" else 0)).astype(dt)
    y = (rng.standard_normal(n) + (1j * rng.standard_normal(n) if p in "cz" else 0)).astype(dt)
    rdt = np.float32 if p in "sc" else np.float64
    tol = 1e-4 if p in "sc" else 1e-11
    dx, dy = oxicuda.asarray(x), oxicuda.asarray(y)
    alpha = dt(0.5 - 2j) if p in "cz" else dt(0.5)
    _a_host, a_ptr = hp(alpha, dt)
    getattr(cublas, f"{p}axpy")(handle, n, a_ptr, dx.ptr, 1, dy.ptr, -1)
    assert np.allclose(dy.get()[::-1], y[::-1] + alpha * x, atol=tol)
    red = {"s": "s", "d": "d", "c": "sc", "z": "dz"}[p]
    dot = getattr(cublas, f"{p}dot" if p in "sd" else f"{p}dotc")
    for mode in (0, 1):
        cublas.setPointerMode(handle, mode)
        if mode == 0:
            res, res_ptr = hp(np.nan, dt)
            nrm, nrm_ptr = hp(np.nan, rdt)
            idx, idx_ptr = hp(-1, np.int32)
        else:
            res_d, nrm_d, idx_d = oxicuda.full((1,), np.nan, dt), oxicuda.full((1,), np.nan, rdt), oxicuda.full((1,), -1, np.int32)
            res_ptr, nrm_ptr, idx_ptr = res_d.ptr, nrm_d.ptr, idx_d.ptr
        dot(handle, n, dx.ptr, 1, dx.ptr, 1, res_ptr)
        getattr(cublas, f"{red}nrm2")(handle, n, dx.ptr, 1, nrm_ptr)
        getattr(cublas, f"i{p}amax")(handle, n, dx.ptr, 1, idx_ptr)
        if mode == 1:
            res, nrm, idx = res_d.get()[0], nrm_d.get()[0], idx_d.get()[0]
        assert abs(complex(res) - np.vdot(x, x)) <= tol * n
        assert abs(float(nrm) - np.linalg.norm(x)) <= tol * 10
        assert int(idx) == np.argmax(np.abs(x.real) + np.abs(x.imag)) + 1
    # device pointer mode scalar for scal
    d_alpha = oxicuda.asarray(np.array([alpha]))
    getattr(cublas, f"{p}scal")(handle, n, d_alpha.ptr, dx.ptr, 1)
    assert np.allclose(dx.get(), alpha * x, atol=tol * 10)


@pytest.mark.parametrize("p,dt", [("s", np.float32), ("d", np.float64), ("c", np.complex64), ("z", np.complex128)])
def test_gemm_family_and_gemv(rng, handle, p, dt):
    m, n, k, batch = 9, 7, 5, 3
    tol = 1e-4 if p in "sc" else 1e-11
    cplx = p in "cz"

    def r(*shape):
        v = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if cplx else 0)
        return v.astype(dt)
    a, b, c = r(k, m), r(k, n), r(m, n)
    _one_h, one = hp(1.0, dt)
    _half_h, half = hp(0.5, dt)
    da, db, dc = (oxicuda.asarray(np.asfortranarray(v)) for v in (a, b, c))
    getattr(cublas, f"{p}gemm")(handle, 2 if cplx else 1, 0, m, n, k, one, da.ptr, k, db.ptr, k, half, dc.ptr, m)
    opa = a.conj().T if cplx else a.T
    assert np.allclose(dc.get(), opa @ b + 0.5 * c, atol=tol * k)
    # strided batched
    A, B = r(batch, k, m), r(batch, k, n)
    dA = oxicuda.asarray(np.ascontiguousarray(A.transpose(0, 2, 1)).transpose(0, 2, 1).copy())  # batch of col-major k x m
    dA = oxicuda.asarray(np.stack([np.asfortranarray(A[i]).ravel(order="F") for i in range(batch)]))
    dB = oxicuda.asarray(np.stack([np.asfortranarray(B[i]).ravel(order="F") for i in range(batch)]))
    dC = oxicuda.full((batch, m * n), np.nan, dt)
    _zero_h, zero = hp(0.0, dt)
    getattr(cublas, f"{p}gemmStridedBatched")(handle, 1, 0, m, n, k, one, dA.ptr, k, k * m, dB.ptr, k, k * n,
                                                zero, dC.ptr, m, m * n, batch)
    got = dC.get()
    for i in range(batch):
        assert np.allclose(got[i].reshape((m, n), order="F"), A[i].T @ B[i], atol=tol * k)
    # gemv
    x, y = r(n), r(m)
    dx, dy = oxicuda.asarray(x), oxicuda.asarray(y)
    dm = oxicuda.asarray(np.asfortranarray(c))
    getattr(cublas, f"{p}gemv")(handle, 0, m, n, half, dm.ptr, m, dx.ptr, 1, one, dy.ptr, 1)
    assert np.allclose(dy.get(), 0.5 * c @ x + y, atol=tol * n)


def test_sgemm_batched_pointer_arrays(rng, handle):
    m = n = k = 4
    mats = [oxicuda.asarray(np.asfortranarray(rng.standard_normal((k, k)).astype(np.float32))) for _ in range(6)]
    outs = [oxicuda.full((m, n), np.nan, np.float32, order="F") for _ in range(3)]
    ptrs = lambda arrs: oxicuda.asarray(np.array([a.ptr for a in arrs], np.uint64))
    pa, pb, pc = ptrs(mats[:3]), ptrs(mats[3:]), ptrs(outs)
    _one_h, one = hp(1.0, np.float32)
    _zero_h, zero = hp(0.0, np.float32)
    cublas.sgemmBatched(handle, 0, 0, m, n, k, one, pa.ptr, m, pb.ptr, k, zero, pc.ptr, m, 3)
    for i in range(3):
        want = mats[i].get().astype(np.float64) @ mats[3 + i].get()
        assert np.allclose(outs[i].get(), want, atol=1e-4)


def test_gemmEx_types_and_unsupported_combinations(rng, handle):
    m = n = k = 6
    a, b = (rng.standard_normal((m, m)).astype(np.float32) for _ in range(2))
    da, db = oxicuda.asarray(np.asfortranarray(a)), oxicuda.asarray(np.asfortranarray(b))
    dc = oxicuda.full((m, n), np.nan, np.float32, order="F")
    _one_h, one = hp(1.0, np.float32)
    _zero_h, zero = hp(0.0, np.float32)
    cublas.gemmEx(handle, 0, 0, m, n, k, one, da.ptr, cublas.CUDA_R_32F, m, db.ptr, cublas.CUDA_R_32F, m, zero,
                  dc.ptr, cublas.CUDA_R_32F, m, cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_GEMM_DEFAULT)
    assert np.allclose(dc.get(), a.astype(np.float64) @ b, atol=1e-4)
    with pytest.raises(cublas.CUBLASError) as e:
        cublas.gemmEx(handle, 0, 0, m, n, k, one, da.ptr, cublas.CUDA_R_16F, m, db.ptr, cublas.CUDA_R_32F, m, zero,
                      dc.ptr, cublas.CUDA_R_32F, m, cublas.CUBLAS_COMPUTE_32F, -1)
    assert e.value.status == cublas.CUBLAS_STATUS_NOT_SUPPORTED
    with pytest.raises(cublas.CUBLASError) as e:
        cublas.gemmEx(handle, 0, 0, m, n, k, one, da.ptr, cublas.CUDA_R_32F, m, db.ptr, cublas.CUDA_R_32F, m, zero,
                      dc.ptr, cublas.CUDA_R_32F, m, cublas.CUBLAS_COMPUTE_64F, -1)
    assert e.value.status == cublas.CUBLAS_STATUS_NOT_SUPPORTED  # a type combination outside cuBLAS's table


def test_level2_and_level3_entries(rng, handle):
    n, k = 8, 5
    a = (np.tril(rng.standard_normal((n, n))) / n + 2 * np.eye(n)).astype(np.float64)
    da = oxicuda.asarray(np.asfortranarray(a))
    _one_h, one = hp(1.0, np.float64)
    _zero_h, zero = hp(0.0, np.float64)
    b = rng.standard_normal((n, 3))
    db = oxicuda.asarray(np.asfortranarray(b))
    cublas.dtrsm(handle, 0, 0, 0, 0, n, 3, one, da.ptr, n, db.ptr, n)
    assert np.allclose(a @ db.get(), b, atol=1e-10)
    x = rng.standard_normal(n)
    dx = oxicuda.asarray(x)
    cublas.dtrsv(handle, 0, 1, 0, n, da.ptr, n, dx.ptr, 1)
    assert np.allclose(a.T @ dx.get(), x, atol=1e-10)
    aa = rng.standard_normal((n, k))
    dcc = oxicuda.full((n, n), 5.0, np.float64, order="F")
    daa = oxicuda.asarray(np.asfortranarray(aa))
    cublas.dsyrk(handle, 1, 0, n, k, one, daa.ptr, n, zero, dcc.ptr, n)
    up = np.triu(np.ones((n, n), bool))
    assert np.allclose(dcc.get()[up], (aa @ aa.T)[up]) and np.all(dcc.get()[~up] == 5.0)
    dA = oxicuda.zeros((n, n), np.float64, order="F")
    cublas.dger(handle, n, n, one, dx.ptr, 1, dx.ptr, 1, dA.ptr, n)
    assert np.allclose(dA.get(), np.outer(dx.get(), dx.get()))


def test_bad_arguments_raise_invalid_value_before_writing(handle):
    y = oxicuda.full((4,), 3.0, np.float32)
    _one_h, one = hp(1.0, np.float32)
    for call in (
        lambda: cublas.saxpy(handle, 4, one, 0, 1, y.ptr, 1),                    # NULL x
        lambda: cublas.sgemm(handle, 7, 0, 2, 2, 2, one, y.ptr, 2, y.ptr, 2, one, y.ptr, 2),  # bad op
        lambda: cublas.sgemm(handle, 0, 0, 2, 2, 2, one, y.ptr, 1, y.ptr, 2, one, y.ptr, 2),  # lda < m
        lambda: cublas.sscal(handle, 4, 0, y.ptr, 1),                             # NULL alpha
        lambda: cublas.strsm(handle, 3, 0, 0, 0, 2, 2, one, y.ptr, 2, y.ptr, 2),  # bad side
    ):
        with pytest.raises(cublas.CUBLASError) as e:
            call()
        assert e.value.status == cublas.CUBLAS_STATUS_INVALID_VALUE, e.value
    assert np.all(y.get() == 3.0)


def test_one_handle_shared_by_threads(rng, handle):
    xs = [oxicuda.asarray(rng.standard_normal(50).astype(np.float32)) for _ in range(4)]
    out = [None] * 4
    errors = []

    def work(i):
        try:
            res, rp = hp(0.0, np.float32)
            cublas.snrm2(handle, 50, xs[i].ptr, 1, rp)
            out[i] = float(res)
        except BaseException as exc:
            import traceback

            errors.append("".join(traceback.format_exception(exc)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    for i in range(4):
        assert abs(out[i] - np.linalg.norm(xs[i].get())) < 1e-4


def test_cupy_script_runs_with_swapped_imports():
    err = run_script(SCRIPTS / "cupy_least_squares.py", CUPY_IMPORTS)
    assert err < 1e-3
