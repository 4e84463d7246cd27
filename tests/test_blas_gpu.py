"""GEMM on a real GPU: bigger shapes than the emulator can afford, every SIMT path, against
float64 references (host) and cuBLAS via PyTorch/CuPy when importable. Skips off-GPU."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm, matmul
from oxicuda.blas.gemm_core import gemm_colmajor

pytestmark = pytest.mark.gpu


def _f64(x):
    return x.astype(np.float64)


@pytest.mark.parametrize("algo", ["tiled", "split_k", "naive"])
@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_sgemm_paths_match_float64(rng, algo, ta, tb):
    m, n, k = (513, 257, 1031) if algo != "naive" else (129, 65, 97)
    A = rng.standard_normal((m, k) if ta == "N" else (k, m)).astype(np.float32)
    B = rng.standard_normal((k, n) if tb == "N" else (n, k)).astype(np.float32)
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    dC = oxicuda.asarray(np.full((m, n), np.nan, np.float32, order="F"))
    with oxicuda.trace() as t:
        gemm_colmajor(ta, tb, m, n, k, 1.0, dA.ptr, A.shape[0], dB.ptr, B.shape[0], 0.0, dC.ptr, m,
                      dtype="float32", algo=algo)
    oa = _f64(A) if ta == "N" else _f64(A).T
    ob = _f64(B) if tb == "N" else _f64(B).T
    ref = oa @ ob
    got = dC.get()
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    assert t.launches[0].spec.family == ("gemm_naive" if algo == "naive" else "gemm_tiled")


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-11), ("complex64", 1e-4), ("complex128", 1e-11)])
def test_other_dtypes_tiled(rng, dtype, tol):
    m, n, k = 300, 200, 400
    mk = lambda s: (rng.standard_normal(s) + (1j * rng.standard_normal(s) if dtype.startswith("c") else 0)).astype(dtype)
    A, B = mk((k, m)), mk((k, n))
    out = gemm(oxicuda.asarray(A), oxicuda.asarray(B), transa="C" if dtype.startswith("c") else True)
    ref = (A.conj().T if dtype.startswith("c") else A.T).astype(np.complex128) @ B
    np.testing.assert_allclose(out.get(), ref, rtol=tol, atol=tol * np.sqrt(k))


def test_dispatch_on_h200_shapes(rng):
    """The skinny shapes the bench measures take split_k on the device; results stay right."""
    m, n, k = 128, 128, 32768
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    with oxicuda.trace() as t:
        out = matmul(oxicuda.asarray(A), oxicuda.asarray(B))
    fams = [s.family for s in t.specs()]
    assert fams == ["gemm_tiled", "gemm_splitk_reduce"], fams
    np.testing.assert_allclose(out.get(), _f64(A) @ B, rtol=1e-4, atol=1e-3)


def test_sgemv_large(rng):
    from oxicuda.blas.gemv import gemv_colmajor

    m, n = 4096, 3000
    A = rng.standard_normal((n, m)).astype(np.float32)  # C order (n, m) = column-major m x n
    x, y = rng.standard_normal(m).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dA, dx, dy = oxicuda.asarray(A), oxicuda.asarray(x), oxicuda.asarray(y)
    gemv_colmajor("T", m, n, 2.0, dA.ptr, m, dx.ptr, 1, 0.5, dy.ptr, 1, dtype="float32")
    np.testing.assert_allclose(dy.get(), 2.0 * _f64(A) @ x + 0.5 * y, rtol=1e-4, atol=1e-3)
    dy2 = oxicuda.asarray(np.full(m, np.nan, np.float32))
    dyy = oxicuda.asarray(y)
    gemv_colmajor("N", m, n, 1.0, dA.ptr, m, dyy.ptr, 1, 0.0, dy2.ptr, 1, dtype="float32")
    np.testing.assert_allclose(dy2.get(), _f64(A).T @ y, rtol=1e-4, atol=1e-3)


def test_matches_torch_cublas_when_available(rng):
    torch = pytest.importorskip("torch")
    a = torch.randn(1024, 768, device="cuda")
    b = torch.randn(768, 512, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    out = gemm(a, b)  # zero-copy through DLPack/CAI
    ref = (a.double() @ b.double()).cpu().numpy()
    np.testing.assert_allclose(out.get(), ref, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(out.get(), (a @ b).cpu().numpy(), rtol=1e-4, atol=1e-3)


def test_strided_batched_large(rng):
    A = rng.standard_normal((16, 256, 192)).astype(np.float32)
    B = rng.standard_normal((16, 192, 128)).astype(np.float32)
    with oxicuda.trace() as t:
        out = matmul(oxicuda.asarray(A), oxicuda.asarray(B))
    assert len(t.launches) == 1 and t.launches[0].grid[2] == 16
    np.testing.assert_allclose(out.get(), _f64(A) @ B, rtol=1e-4, atol=1e-3)
