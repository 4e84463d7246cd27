"""The Hopper wgmma + TMA GEMM (oxicuda.blas.gemm_wgmma) on the H200: every layout and dtype
against float64 numpy and against torch (cuBLAS), odd sizes, every registered tile, batched
launches, and dispatch at 8192^3. Run with
``OXICUDA_BACKEND=cuda python3 -m pytest -q tests/test_blas_wgmma_gpu.py``."""

from __future__ import annotations

import numpy as np
import pytest
from test_blas_tensorcore import TOLERANCE, Operands, _live_arch

import oxicuda
from oxicuda.blas import gemm_tensorcore as tc
from oxicuda.blas import gemm_wgmma as wg
from oxicuda.blas.gemm_problem import column_major_problem

pytestmark = pytest.mark.gpu

LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]  # (transa, transb), column-major


@pytest.fixture(autouse=True)
def _needs_sm90():
    if _live_arch() != "sm_90":
        pytest.skip(f"wgmma needs sm_90; the live device is {_live_arch()}")


def _problem(ops: Operands, transa: bool, transb: bool) -> tc.GemmProblem:
    compute = "tf32" if ops.dtype == "float32" else "f32"
    return column_major_problem(ops.m, ops.n, ops.k, ops.dtype, compute, transa, transb, ops.lda, ops.ldb, ops.ldc, 16,
                          _live_arch())


def _check(ops: Operands, alpha: float, beta: float, old: np.ndarray) -> None:
    got = ops.result()
    ref = alpha * ops.product + (beta * old[:, :ops.m].astype(np.float64) if beta else 0.0)
    body = got[:, :ops.m]
    assert not np.isnan(body).any(), f"{np.isnan(body).sum()} elements of C were not written"
    tol = TOLERANCE[ops.dtype] * max(1.0, np.sqrt(ops.k / 64))  # accumulation error grows like sqrt(k)
    err = np.abs(body - ref).max() / np.abs(ref).max()
    assert err < tol, f"max error {err:.3g} x max|ref| (tolerance {tol:.3g})"
    np.testing.assert_array_equal(got[:, ops.m:], old[:, ops.m:])  # the ldc padding is untouched


def _launch(ops, transa, transb, alpha, beta, spec=None, **kw):
    with oxicuda.trace() as tr:
        wg.launch(_problem(ops, transa, transb), alpha, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb, beta, ops.c.ptr,
                  ops.ldc, spec=spec, **kw)
    specs = [rec.spec for rec in tr.launches]
    assert specs and all(isinstance(s, wg.GemmWgmmaSpec) for s in specs)
    assert (specs[0].a_kmajor, specs[0].b_kmajor) == (transa, not transb)
    return specs


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("transa,transb", LAYOUTS)
@pytest.mark.parametrize("m,n,k", [(1000, 999, 1001), (8, 8, 8), (1031, 2100, 777)])
def test_wgmma_every_layout_matches_float64_reference(rng, dtype, transa, transb, m, n, k):
    ops = Operands(rng, m, n, k, dtype, transa, transb, poison=True)
    old = ops.c_host.copy()
    _launch(ops, transa, transb, 1.25, 0.0)
    _check(ops, 1.25, 0.0, old)


@pytest.mark.parametrize("m,n,k", [(1000, 999, 1001), (8, 8, 8), (1031, 2100, 777)])
def test_wgmma_tf32_tn_matches_float64_reference(rng, m, n, k):
    ops = Operands(rng, m, n, k, "float32", True, False, poison=True)
    old = ops.c_host.copy()
    _launch(ops, True, False, -0.5, 0.0)
    _check(ops, -0.5, 0.0, old)


@pytest.mark.parametrize("transa,transb", LAYOUTS)
@pytest.mark.parametrize("m,n,k,batch", [(1000, 999, 1001, 1), (8, 8, 8, 1), (1031, 2100, 777, 1), (300, 260, 200, 3)])
def test_wgmma_tf32_every_layout_matches_float64_reference(rng, transa, transb, m, n, k, batch):
    """tf32 in every layout (MN-major operands transposed into scratch first), odd sizes, and a
    strided batch with beta != 0: one transpose launch per MN-major operand, then one GEMM."""
    from oxicuda.blas import transpose_kernels as tk

    ops = Operands(rng, m, n, k, "float32", transa, transb, batch=batch, poison=batch == 1)
    old = ops.c_host.copy()
    beta = 0.0 if batch == 1 else -1.5
    with oxicuda.trace() as tr:
        wg.launch(_problem(ops, transa, transb), 0.75, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb, beta, ops.c.ptr,
                  ops.ldc, batch=batch, stride_a=ops.stride_a, stride_b=ops.stride_b, stride_c=ops.stride_c)
    _check(ops, 0.75, beta, old)
    specs = [rec.spec for rec in tr.launches]
    assert [type(x) for x in specs] == [tk.TransposeSpec] * ((not transa) + transb) + [wg.GemmWgmmaSpec], specs
    assert all(rec.grid[2] == batch for rec in tr.launches)


@pytest.mark.parametrize("transa,transb", LAYOUTS)
def test_wgmma_beta_accumulates_and_batched_strided_launch(rng, transa, transb):
    ops = Operands(rng, 300, 260, 200, "bfloat16", transa, transb, batch=3, poison=False)
    old = ops.c_host.copy()
    specs = _launch(ops, transa, transb, 0.5, -1.5, batch=3, stride_a=ops.stride_a, stride_b=ops.stride_b,
                    stride_c=ops.stride_c)
    assert len(specs) == 1
    _check(ops, 0.5, -1.5, old)


@pytest.mark.parametrize("spec", wg.configurations("sm_90a"), ids=lambda s: (
    f"{s.dtype}-{'K' if s.a_kmajor else 'M'}{'K' if s.b_kmajor else 'N'}-{s.block_m}x{s.block_n}-c{s.consumers}"
    f"-s{s.stages}-r{s.raster}"))
def test_every_registered_wgmma_configuration_on_h200(rng, spec):
    """Every tile the family (and the sweep) can launch, on an odd problem spanning several tiles
    and 9 K tiles (the stage ring wraps for every stage count)."""
    transa, transb = spec.a_kmajor, not spec.b_kmajor
    dtype = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32"}[spec.dtype]
    ops = Operands(rng, 300, 520, 555, dtype, transa, transb, poison=True)
    old = ops.c_host.copy()
    _launch(ops, transa, transb, 1.0, 0.0, spec=spec)
    _check(ops, 1.0, 0.0, old)


def _torch():
    torch = pytest.importorskip("torch")
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("transa,transb", LAYOUTS)
def test_wgmma_4096_matches_torch_matmul_in_every_layout(dtype, transa, transb):
    """Column-major op(A) (m x k) and op(B) (k x n) as torch tensors; C compared with a float32
    torch product of the same inputs and with torch.matmul in the data type (cuBLAS)."""
    torch = _torch()
    tdt = getattr(torch, dtype)
    m = n = k = 4096
    g = torch.Generator(device="cuda").manual_seed(11)
    # a column-major X (r x c, ld r) is a row-major torch (c, r) tensor: storage[j, i] = X[i, j]
    a_st = torch.randn((m, k) if transa else (k, m), device="cuda", dtype=tdt, generator=g)
    b_st = torch.randn((k, n) if transb else (n, k), device="cuda", dtype=tdt, generator=g)
    op_a = a_st if transa else a_st.T  # (m, k)
    op_b = b_st.T if not transb else b_st  # (k, n)
    c = torch.full((n, m), float("nan"), device="cuda", dtype=tdt)
    p = column_major_problem(m, n, k, dtype, "f32", transa, transb, k if transa else m, n if transb else k, m, 16,
                       _live_arch())
    with oxicuda.trace() as tr:
        wg.launch(p, 1.0, a_st.data_ptr(), p.lda, b_st.data_ptr(), p.ldb, 0.0, c.data_ptr(), m)
    torch.cuda.synchronize()
    assert isinstance(tr.launches[0].spec, wg.GemmWgmmaSpec)
    ref = (op_a.float() @ op_b.float()).T  # C column-major (m x n) is row-major (n x m)
    vendor = (op_a @ op_b).T.float()
    scale = ref.abs().max()
    err = ((c.float() - ref).abs().max() / scale).item()
    vendor_err = ((vendor - ref).abs().max() / scale).item()
    assert err < 1e-2, f"max error {err:.3g} x max|ref| (torch.matmul in {dtype}: {vendor_err:.3g})"
    assert ((c.float() - vendor).abs().max() / scale).item() < 2e-2


def test_wgmma_tf32_4096_tn_matches_torch():
    torch = _torch()
    m = n = k = 4096
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(m, k, device="cuda", generator=g)  # column-major A^T (k x m)
    b = torch.randn(n, k, device="cuda", generator=g)  # column-major B (k x n)
    c = torch.full((n, m), float("nan"), device="cuda")
    p = column_major_problem(m, n, k, "float32", "tf32", True, False, k, k, m, 16, _live_arch())
    wg.launch(p, 1.0, a.data_ptr(), k, b.data_ptr(), k, 0.0, c.data_ptr(), m)
    torch.cuda.synchronize()
    ref = (a.double() @ b.double().T).T
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    assert err < 3e-3, f"tf32: max error {err:.3g} x max|ref| vs a float64 torch reference"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("transa,transb", LAYOUTS)
def test_dispatch_picks_wgmma_for_8192_in_every_layout(dtype, transa, transb):
    """The public row-major ``gemm`` on torch tensors at 8192^3: one wgmma launch with the large
    tile, result equal to torch.matmul's within bf16/fp16 rounding."""
    torch = _torch()
    tdt = getattr(torch, dtype)
    s = 8192
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(s, s, device="cuda", dtype=tdt, generator=g)
    b = torch.randn(s, s, device="cuda", dtype=tdt, generator=g)
    c = torch.full((s, s), float("nan"), device="cuda", dtype=tdt)
    with oxicuda.trace() as tr:
        oxicuda.blas.gemm(a, b, c, transa=transa, transb=transb)
    torch.cuda.synchronize()
    specs = [rec.spec for rec in tr.launches]
    assert len(specs) == 1 and isinstance(specs[0], wg.GemmWgmmaSpec), specs
    assert (specs[0].block_m, specs[0].block_n) == wg.TILES[0][:2]
    want = (a.T if transa else a) @ (b.T if transb else b)
    err = ((c.float() - want.float()).abs().max() / want.float().abs().max()).item()
    assert err < 2e-2, f"max difference from torch.matmul {err:.3g} x max|C|"


def test_dispatch_picks_wgmma_for_tf32_tn_when_the_math_mode_allows_tf32():
    from oxicuda.cuda import cublas

    torch = _torch()
    s = 8192
    g = torch.Generator(device="cuda").manual_seed(9)
    a = torch.randn(s, s, device="cuda", generator=g)  # column-major A^T storage
    b = torch.randn(s, s, device="cuda", generator=g)
    c = torch.full((s, s), float("nan"), device="cuda")
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    h = cublas.create()
    try:
        for mode, want in ((cublas.CUBLAS_DEFAULT_MATH, None), (cublas.CUBLAS_TF32_TENSOR_OP_MATH, wg.GemmWgmmaSpec)):
            cublas.setMathMode(h, mode)
            with oxicuda.trace() as tr:
                cublas.sgemm(h, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, s, s, s, one.ctypes.data, a.data_ptr(), s,
                             b.data_ptr(), s, zero.ctypes.data, c.data_ptr(), s)
            torch.cuda.synchronize()
            specs = [rec.spec for rec in tr.launches]
            if want is None:
                assert not any(isinstance(x, wg.GemmWgmmaSpec) for x in specs), specs
            else:
                assert len(specs) == 1 and isinstance(specs[0], want), specs
        ref = a[:256].double() @ b.double().T  # rows 0..255 of C = op(A) op(B)
        got = c[:, :256].T.double()  # C column-major is row-major C^T: its first 256 columns
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        assert err < 3e-3, f"tf32 8192: max error {err:.3g} on the first 256 columns of C"
    finally:
        cublas.destroy(h)


def _torch_tf32(monkeypatch):
    """torch with TF32 matmuls allowed for this test only (the flag is process-wide)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", True)
    return torch


@pytest.mark.parametrize("transa,transb", LAYOUTS)
def test_wgmma_tf32_4096_every_layout_matches_torch_matmul_with_tf32(monkeypatch, transa, transb):
    """tf32 in every layout through the public column-major entry (MN-major operands transposed
    into scratch, then the K-major wgmma kernel): against a float64 product of the same inputs and
    against torch.matmul with allow_tf32 (cuBLAS's tf32)."""
    from oxicuda.blas import transpose_kernels as tk
    from oxicuda.blas.gemm_core import gemm_colmajor

    torch = _torch_tf32(monkeypatch)
    m = n = k = 4096
    g = torch.Generator(device="cuda").manual_seed(21)
    a_st = torch.randn((m, k) if transa else (k, m), device="cuda", generator=g)  # column-major storage
    b_st = torch.randn((k, n) if transb else (n, k), device="cuda", generator=g)
    op_a = a_st if transa else a_st.T  # (m, k)
    op_b = b_st.T if not transb else b_st  # (k, n)
    c = torch.full((n, m), float("nan"), device="cuda")
    with oxicuda.trace() as tr:
        gemm_colmajor("T" if transa else "N", "T" if transb else "N", m, n, k, 1.0, a_st.data_ptr(),
                      k if transa else m, b_st.data_ptr(), n if transb else k, 0.0, c.data_ptr(), m, dtype="float32",
                      compute="tf32")
    torch.cuda.synchronize()
    specs = [rec.spec for rec in tr.launches]
    assert isinstance(specs[-1], wg.GemmWgmmaSpec), specs
    assert [type(s) for s in specs[:-1]] == [tk.TransposeSpec] * ((not transa) + transb), specs
    ref = (op_a.double() @ op_b.double()).T
    vendor = (op_a @ op_b).T.double()
    scale = ref.abs().max()
    err = ((c.double() - ref).abs().max() / scale).item()
    vendor_err = ((vendor - ref).abs().max() / scale).item()
    assert err < 3e-3, f"tf32: max error {err:.3g} x max|ref| (torch.matmul tf32: {vendor_err:.3g})"
    assert ((c.double() - vendor).abs().max() / scale).item() < 4e-3


def test_dispatch_runs_tf32_row_major_cublas_sgemm_through_transpose_and_wgmma_at_8192(monkeypatch):
    """What bench case blas/tf32_8192 times: column-major NN with the TF32 math mode (the layout of
    row-major matmul: op(A) MN-major). One transpose of A, then the K-major wgmma GEMM."""
    from oxicuda.blas import transpose_kernels as tk
    from oxicuda.cuda import cublas

    torch = _torch_tf32(monkeypatch)
    s = 8192
    g = torch.Generator(device="cuda").manual_seed(13)
    a = torch.randn(s, s, device="cuda", generator=g)  # column-major A: storage[j, i] = A[i, j]
    b = torch.randn(s, s, device="cuda", generator=g)
    c = torch.full((s, s), float("nan"), device="cuda")
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    h = cublas.create()
    try:
        cublas.setMathMode(h, cublas.CUBLAS_TF32_TENSOR_OP_MATH)
        with oxicuda.trace() as tr:
            cublas.sgemm(h, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, s, s, s, one.ctypes.data, a.data_ptr(), s,
                         b.data_ptr(), s, zero.ctypes.data, c.data_ptr(), s)
        torch.cuda.synchronize()
    finally:
        cublas.destroy(h)
    specs = [rec.spec for rec in tr.launches]
    assert [type(x) for x in specs] == [tk.TransposeSpec, wg.GemmWgmmaSpec], specs
    assert (specs[0].vec_in, specs[0].vec_out) == (4, 4)
    # C^T (row-major view of column-major C) = B^T A^T with A^T, B^T the torch tensors a, b
    ref = b[:256].double() @ a.double()  # rows 0..255 of C^T: the first 256 columns of C
    err = ((c[:256].double() - ref).abs().max() / ref.abs().max()).item()
    assert err < 3e-3, f"tf32 8192 NN: max error {err:.3g} on the first 256 columns of C"


@pytest.mark.parametrize("rows,cols", [(8192, 8192), (1000, 17), (17, 1000), (4097, 4099)])
def test_transpose_kernel_on_h200_matches_torch_and_moves_near_copy_bandwidth(rows, cols):
    """The transpose alone: exact against torch's, and at 8192^2 float32 its time against a
    device-to-device copy of the same bytes (CUDA events, median of 20 samples of 10 calls)."""
    from oxicuda.blas import transpose_kernels as tk

    torch = _torch()
    src = torch.randn(cols, rows, device="cuda")  # column-major rows x cols, ld = rows
    dst = torch.full((rows, cols), float("nan"), device="cuda")
    run = lambda: tk.transpose(rows, cols, src.data_ptr(), rows, dst.data_ptr(), cols, elem_bytes=4)
    run()
    torch.cuda.synchronize()
    assert torch.equal(dst, src.T.contiguous())
    if rows * cols < 8192 * 8192:
        return
    copy_dst = torch.empty_like(src)
    times = {}
    for name, fn in (("transpose", run), ("copy", lambda: copy_dst.copy_(src))):
        for _ in range(3):
            fn()
        samples = []
        for _ in range(20):  # 10 back-to-back calls per sample: the host's launch cost stays hidden
            t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0.record()
            for _ in range(10):
                fn()
            t1.record()
            t1.synchronize()
            samples.append(t0.elapsed_time(t1) / 10)
        times[name] = sorted(samples)[10]
    gbs = {k: 2 * rows * cols * 4 / (v * 1e-3) / 1e9 for k, v in times.items()}
    print(f"8192^2 float32: transpose {times['transpose']:.3f} ms ({gbs['transpose']:.0f} GB/s), "
          f"copy {times['copy']:.3f} ms ({gbs['copy']:.0f} GB/s)")
    assert gbs["transpose"] >= 0.6 * gbs["copy"], gbs
