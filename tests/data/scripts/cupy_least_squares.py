"""A least-squares solve written against CuPy's cuBLAS module (cupy.cuda.cublas).

Normal equations: G = A^T A (sgemm), c = A^T b (sgemv), Cholesky-free solve by steepest descent
steps (sdot, snrm2, saxpy), then a triangular check with strsm and isamax of the residual.
Run with CuPy as is; the oxicuda tests swap only the block between the IMPORTS markers.
"""
# --- IMPORTS ---
import cupy as xp
import numpy as np
from cupy.cuda import cublas


def ptr(a):
    return a.data.ptr
# --- END IMPORTS ---


def host_ptr(value, dtype=np.float32):
    arr = np.array(value, dtype=dtype)
    return arr, arr.ctypes.data


def main(m=40, n=12, steps=60, seed=0):
    rng = np.random.default_rng(seed)
    a_host = rng.standard_normal((m, n)).astype(np.float32)
    x_true = rng.standard_normal(n).astype(np.float32)
    b_host = a_host @ x_true
    a = xp.asarray(np.asfortranarray(a_host))
    b = xp.asarray(b_host)
    handle = cublas.create()
    _one, p_one = host_ptr(1.0)
    _zero, p_zero = host_ptr(0.0)
    # G = A^T A (n x n, column-major), c = A^T b
    g = xp.zeros((n, n), dtype=np.float32, order="F")
    cublas.sgemm(handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, n, m, p_one, ptr(a), m, ptr(a), m,
                 p_zero, ptr(g), n)
    c = xp.zeros(n, dtype=np.float32)
    cublas.sgemv(handle, cublas.CUBLAS_OP_T, m, n, p_one, ptr(a), m, ptr(b), 1, p_zero, ptr(c), 1)
    # steepest descent on 0.5 x^T G x - c^T x
    x = xp.zeros(n, dtype=np.float32)
    r = xp.zeros(n, dtype=np.float32)
    gr = xp.zeros(n, dtype=np.float32)
    _minus_one, p_minus_one = host_ptr(-1.0)
    rr, p_rr = host_ptr(0.0)
    rgr, p_rgr = host_ptr(0.0)
    for _ in range(steps):
        r[...] = c
        cublas.sgemv(handle, cublas.CUBLAS_OP_N, n, n, p_minus_one, ptr(g), n, ptr(x), 1, p_one, ptr(r), 1)
        cublas.sdot(handle, n, ptr(r), 1, ptr(r), 1, p_rr)
        if rr <= 1e-12:
            break
        cublas.sgemv(handle, cublas.CUBLAS_OP_N, n, n, p_one, ptr(g), n, ptr(r), 1, p_zero, ptr(gr), 1)
        cublas.sdot(handle, n, ptr(r), 1, ptr(gr), 1, p_rgr)
        _step, p_step = host_ptr(rr / rgr)
        cublas.saxpy(handle, n, p_step, ptr(r), 1, ptr(x), 1)
    x_host = xp.asnumpy(x)
    err = np.linalg.norm(x_host - x_true) / np.linalg.norm(x_true)
    assert err < 1e-3, f"least squares did not converge: relative error {err}"
    # norm of the residual b - A x, through snrm2 in device pointer mode
    res = xp.asarray(b_host)
    cublas.sgemv(handle, cublas.CUBLAS_OP_N, m, n, p_minus_one, ptr(a), m, ptr(x), 1, p_one, ptr(res), 1)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_DEVICE)
    nrm = xp.zeros(1, dtype=np.float32)
    cublas.snrm2(handle, m, ptr(res), 1, ptr(nrm))
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    want = np.linalg.norm(b_host - a_host @ x_host)
    assert abs(float(xp.asnumpy(nrm)[0]) - want) <= 1e-4 * max(1.0, want), (xp.asnumpy(nrm), want)
    # strsm: solve U y = x with U = upper triangle of G (+ diagonal shift), check U y == x
    u_host = np.triu(xp.asnumpy(g)) + n * np.eye(n, dtype=np.float32)
    u = xp.asarray(np.asfortranarray(u_host))
    y = xp.asarray(np.asfortranarray(x_host.reshape(n, 1)))
    cublas.strsm(handle, cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_FILL_MODE_UPPER, cublas.CUBLAS_OP_N,
                 cublas.CUBLAS_DIAG_NON_UNIT, n, 1, p_one, ptr(u), n, ptr(y), n)
    y_host = xp.asnumpy(y).reshape(n)
    assert np.allclose(u_host.astype(np.float64) @ y_host, x_host, rtol=1e-4, atol=1e-4)
    idx, p_idx = host_ptr(0, np.int32)
    cublas.isamax(handle, n, ptr(x), 1, p_idx)
    assert idx == np.argmax(np.abs(x_host)) + 1
    cublas.destroy(handle)
    return err


if __name__ == "__main__":
    print("relative error", main())
