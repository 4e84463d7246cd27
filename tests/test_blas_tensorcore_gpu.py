"""Tensor-core GEMMs on a real GPU: bigger shapes than the emulator can run, checked against
float64 numpy (a sample of rows) and, where PyTorch is importable, against cuBLAS through torch.
Run with ``OXICUDA_BACKEND=cuda python3 -m pytest -q tests/test_blas_tensorcore_gpu.py``."""

from __future__ import annotations

import numpy as np
import pytest
from test_blas_tensorcore import TOLERANCE, Operands, _live_arch

import oxicuda
from oxicuda.blas import gemm_tensorcore as tc
from oxicuda.blas import gemm_wgmma as wg
from oxicuda.blas.gemm_problem import column_major_problem

pytestmark = pytest.mark.gpu


def _problem(ops: Operands, transa: bool, transb: bool) -> tc.GemmProblem:
    compute = "tf32" if ops.dtype == "float32" else "f32"
    return column_major_problem(ops.m, ops.n, ops.k, ops.dtype, compute, transa, transb, ops.lda, ops.ldb, ops.ldc, 16,
                          _live_arch())


def _check_full(ops: Operands, alpha: float, beta: float, old: np.ndarray) -> None:
    got = ops.result()
    ref = alpha * ops.product + (beta * old[:, :ops.m].astype(np.float64) if beta else 0.0)
    body = got[:, :ops.m]
    assert not np.isnan(body).any(), f"{np.isnan(body).sum()} elements of C were not written"
    # accumulation over k grows the error like sqrt(k); scale the tolerance with it
    tol = TOLERANCE[ops.dtype] * max(1.0, np.sqrt(ops.k / 64))
    err = np.abs(body - ref).max() / np.abs(ref).max()
    assert err < tol, f"max error {err:.3g} x max|ref| (tolerance {tol:.3g})"
    np.testing.assert_array_equal(got[:, ops.m:], old[:, ops.m:])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("transa,transb", [(False, False), (True, False), (False, True), (True, True)])
def test_mma_sync_gemm_on_gpu_large_tile_with_tails(rng, dtype, transa, transb):
    ops = Operands(rng, 517, 389, 1000, dtype, transa, transb, poison=False)
    old = ops.c_host.copy()
    tc.launch(_problem(ops, transa, transb), 0.75, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb, 0.5, ops.c.ptr, ops.ldc)
    _check_full(ops, 0.75, 0.5, old)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("m,n,k", [(17, 33, 40), (1031, 1100, 777), (1024, 2048, 512)])
def test_wgmma_gemm_on_h200(rng, dtype, m, n, k):
    if _live_arch() != "sm_90":
        pytest.skip(f"wgmma needs sm_90; this GPU is {_live_arch()}")
    ops = Operands(rng, m, n, k, dtype, True, False, poison=True)
    old = ops.c_host.copy()
    with oxicuda.trace() as tr:
        wg.launch(_problem(ops, True, False), 1.25, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb, 0.0, ops.c.ptr, ops.ldc)
    assert isinstance(tr.launches[0].spec, wg.GemmWgmmaSpec)
    _check_full(ops, 1.25, 0.0, old)


@pytest.mark.parametrize("algo", ["tensor_core", "wgmma"])
def test_tensor_core_gemm_matches_torch_cublas_on_4096_bf16(algo):
    torch = pytest.importorskip("torch")
    if algo == "wgmma" and _live_arch() != "sm_90":
        pytest.skip("wgmma needs sm_90")
    m = n = k = 4096
    g = torch.Generator(device="cuda").manual_seed(7)
    # column-major A^T (k x m) is row-major (m x k): a[i, p] = op(A)[i, p]; B column-major k x n
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.full((n, m), float("nan"), device="cuda", dtype=torch.bfloat16)
    p = column_major_problem(m, n, k, "bfloat16", "f32", True, False, k, k, m, 16, _live_arch())
    module = wg if algo == "wgmma" else tc
    module.launch(p, 1.0, a.data_ptr(), k, b.data_ptr(), k, 0.0, c.data_ptr(), m)
    torch.cuda.synchronize()
    ref = (a.float() @ b.float().T).T  # C column-major (m x n) is row-major (n x m)
    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-2, f"{algo}: max error {err:.3g} x max|ref| vs float32 torch reference"
