"""Modified Gram-Schmidt QR written against scikit-cuda's cuBLAS module (skcuda.cublas) and
PyCUDA arrays: cublasSnrm2/cublasSdot return values, cublasSscal/cublasSaxpy update columns in
place, cublasSgemm forms Q^T Q, cublasStrsm solves R x = Q^T b, cublasIsamax is 0-based.
Run with scikit-cuda as is; the oxicuda tests swap only the block between the IMPORTS markers.
"""
# --- IMPORTS ---
import numpy as np
import pycuda.autoinit  # noqa: F401
from pycuda import gpuarray
from skcuda import cublas


def ptr(a):
    return a.gpudata
# --- END IMPORTS ---


def main(m=30, n=8, seed=1):
    rng = np.random.default_rng(seed)
    a_host = rng.standard_normal((m, n)).astype(np.float32)
    q = gpuarray.to_gpu(np.asfortranarray(a_host))
    r_host = np.zeros((n, n), np.float32)
    h = cublas.cublasCreate()
    col = lambda j: int(ptr(q)) + j * m * 4
    for j in range(n):
        for i in range(j):
            rij = cublas.cublasSdot(h, m, col(i), 1, col(j), 1)
            r_host[i, j] = rij
            cublas.cublasSaxpy(h, m, -rij, col(i), 1, col(j), 1)
        rjj = cublas.cublasSnrm2(h, m, col(j), 1)
        r_host[j, j] = rjj
        cublas.cublasSscal(h, m, 1.0 / rjj, col(j), 1)
    q_host = q.get()
    assert np.allclose(q_host @ r_host, a_host, atol=1e-4), "QR does not reproduce A"
    qtq = gpuarray.to_gpu(np.zeros((n, n), np.float32, order="F"))
    cublas.cublasSgemm(h, "t", "n", n, n, m, 1.0, ptr(q), m, ptr(q), m, 0.0, ptr(qtq), n)
    assert np.allclose(qtq.get(), np.eye(n), atol=1e-4), "Q is not orthonormal"
    b_host = rng.standard_normal(m).astype(np.float32)
    b = gpuarray.to_gpu(b_host)
    qtb = gpuarray.to_gpu(np.zeros((n, 1), np.float32, order="F"))
    cublas.cublasSgemv(h, "t", m, n, 1.0, ptr(q), m, ptr(b), 1, 0.0, ptr(qtb), 1)
    r = gpuarray.to_gpu(np.asfortranarray(r_host))
    cublas.cublasStrsm(h, "l", "u", "n", "n", n, 1, 1.0, ptr(r), n, ptr(qtb), n)
    x = qtb.get().reshape(n)
    x_ref = np.linalg.lstsq(a_host.astype(np.float64), b_host, rcond=None)[0]
    assert np.allclose(x, x_ref, atol=1e-3), (x, x_ref)
    k = cublas.cublasIsamax(h, n, ptr(qtb), 1)
    assert k == int(np.argmax(np.abs(x))), (k, x)
    cublas.cublasDestroy(h)
    return float(np.abs(x - x_ref).max())


if __name__ == "__main__":
    print("max error", main())
