"""GPU differential tests of the emulator's tensor-core and asynchronous instructions: the same
kernels (from test_emulator_tensorcore / test_emulator_async) with the same inputs run on the real
GPU and on an in-process emulator; the results must agree (f16/bf16/tf32 products to the
rounding of the accumulator, data movement bit for bit) and match the float64 reference.

Run on a GPU machine: ``OXICUDA_BACKEND=cuda python3 -m pytest -q tests/test_emulator_tc_gpu.py``.
The wgmma/TMA/stmatrix tests need compute capability 9.0 (H200).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_emulator_async import (
    MBARRIER_PHASES_WANT,
    TMA_OOB_COORDS,
    WGMMA_LAYOUT_CASES,
    cp_async_kernel,
    mbarrier_phases_kernel,
    run_tma_oob,
    run_tma_store,
    run_wgmma_layout,
    run_wgmma_tma,
)
from test_emulator_tensorcore import (
    TOL,
    emulator,
    ldmatrix_mma_case,
    ldmatrix_mma_kernel,
    ldmatrix_roundtrip_kernel,
    run_mma,
)

from oxicuda.emulator.interp.harness import run_ptx

pytestmark = [pytest.mark.gpu, pytest.mark.gpu_isolated]  # hand-built Hopper kernels may fault


def gpu_api():
    """The real driver with the primary context current."""
    from oxicuda.driver.backend import api
    from oxicuda.driver.context import ensure_context

    ensure_context()
    return api()


def needs_sm90():
    import oxicuda

    cc = oxicuda.Device(0).compute_capability
    if tuple(cc) < (9, 0):
        pytest.skip(f"needs compute capability 9.0 (wgmma/TMA); this GPU has {cc}")


def twin_rngs(rng):
    seed = int(rng.integers(0, 2**31))
    return np.random.default_rng(seed), np.random.default_rng(seed)


@pytest.mark.parametrize("shape,elem,acc", [
    ("m16n8k16", "f16", "f32"), ("m16n8k16", "f16", "f16"), ("m16n8k16", "bf16", "f32"),
    ("m16n8k8", "f16", "f32"), ("m16n8k8", "bf16", "f32"), ("m16n8k8", "tf32", "f32"),
    ("m16n8k4", "tf32", "f32"), ("m8n8k4", "f64", "f64"),
])
def test_mma_sync_on_gpu_and_emulator_agree(shape, elem, acc, rng):
    r1, r2 = twin_rngs(rng)
    d_gpu, ref = run_mma(gpu_api(), shape, elem, acc, r1)
    d_emu, ref2 = run_mma(emulator("sm_90"), shape, elem, acc, r2)
    assert (ref == ref2).all()
    scale = np.abs(ref).max()
    assert np.abs(d_gpu - ref).max() <= TOL[acc] * scale, "GPU vs float64 reference"
    assert np.abs(d_gpu - d_emu).max() <= TOL[acc] * scale, "GPU vs emulator"


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_ldmatrix_fed_mma_on_gpu_and_emulator_agree(elem, rng):
    args, ref = ldmatrix_mma_case(rng, elem)
    name = f"ldsm_mma_{elem}"
    ptx = ldmatrix_mma_kernel(elem)
    d_gpu = run_ptx(gpu_api(), ptx, name, (1, 1, 1), (32, 1, 1), args)[3]
    d_emu = run_ptx(emulator("sm_90"), ptx, name, (1, 1, 1), (32, 1, 1), args)[3]
    scale = np.abs(ref).max()
    assert np.abs(d_gpu - ref).max() <= 2e-6 * scale
    assert np.abs(d_gpu - d_emu).max() <= 2e-6 * scale


@pytest.mark.parametrize("num,trans", [(1, False), (2, True), (4, False), (4, True)])
def test_ldmatrix_and_stmatrix_move_the_same_bits_on_gpu_and_emulator(num, trans, rng):
    needs_sm90()
    mats = rng.integers(0, 1 << 16, size=(num, 8, 8), dtype=np.uint16)
    args = [mats, np.zeros((32, num), np.uint32), np.zeros_like(mats)]
    name = f"ldsm_x{num}{'_t' if trans else ''}"
    ptx = ldmatrix_roundtrip_kernel(num, trans)
    g = run_ptx(gpu_api(), ptx, name, (1, 1, 1), (32, 1, 1), args)
    e = run_ptx(emulator("sm_90"), ptx, name, (1, 1, 1), (32, 1, 1), args)
    assert (g[1] == e[1]).all() and (g[2] == e[2]).all() and (g[2] == mats).all()


def test_cp_async_zero_fill_agrees_with_gpu(rng):
    src = rng.integers(1, 256, size=(32, 16), dtype=np.uint8)
    src2 = rng.integers(1, 256, size=(32, 16), dtype=np.uint8)
    args = [src, src2, np.zeros((32, 2, 16), np.uint8)]
    g = run_ptx(gpu_api(), cp_async_kernel(), "cpasync_groups", (1, 1, 1), (32, 1, 1), args)[2]
    e = run_ptx(emulator(), cp_async_kernel(), "cpasync_groups", (1, 1, 1), (32, 1, 1), args)[2]
    assert (g[:, 0] == e[:, 0]).all()  # group 1 was not waited for: its contents may differ


@pytest.mark.parametrize("swizzle", ["none", "128B"])
def test_wgmma_from_tma_tiles_on_gpu_and_emulator_agree(swizzle, rng):
    needs_sm90()
    r1, r2 = twin_rngs(rng)
    d_gpu, ref = run_wgmma_tma(gpu_api(), swizzle, r1)
    d_emu, _ = run_wgmma_tma(emulator("sm_90"), swizzle, r2)
    scale = np.abs(ref).max()
    assert np.abs(d_gpu - ref).max() <= 2e-6 * scale, "GPU vs float64 reference"
    assert np.abs(d_gpu - d_emu).max() <= 2e-6 * scale, "GPU vs emulator"


def test_tma_out_of_bounds_fill_agrees_with_gpu(rng):
    needs_sm90()
    X = rng.standard_normal((10, 12)).astype(np.float32)
    gpu = run_tma_oob(gpu_api(), X, TMA_OOB_COORDS)
    emu = run_tma_oob(emulator("sm_90"), X, TMA_OOB_COORDS)
    for (cx, cy), g, e in zip(TMA_OOB_COORDS, gpu, emu):
        want = np.zeros((16, 8), np.float32)
        ys, xs = slice(max(cy, 0), min(cy + 16, 10)), slice(max(cx, 0), min(cx + 8, 12))
        want[ys.start - cy:ys.stop - cy, xs.start - cx:xs.stop - cx] = X[ys, xs]
        assert (g == want).all(), f"box at ({cx}, {cy}): GPU vs reference"
        assert (e == g).all(), f"box at ({cx}, {cy}): emulator vs GPU"


@pytest.mark.parametrize("cx", [-3, 7])
def test_tma_box_with_unaligned_innermost_coordinate_is_illegal_on_gpu_and_emulator(rng, cx):
    """A box whose innermost start is not on a 16-byte boundary (f32 x = -3 or 7) stops the kernel
    with CUDA_ERROR_ILLEGAL_INSTRUCTION on the GPU; the emulator faults with the same code."""
    from oxicuda.driver.errors import CudaError

    needs_sm90()
    X = rng.standard_normal((10, 12)).astype(np.float32)
    for api in (emulator("sm_90"), gpu_api()):  # the GPU last: its context is lost afterwards
        with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_INSTRUCTION"):
            run_tma_oob(api, X, [(cx, 0)])


def test_mbarrier_phases_agree_with_gpu():
    needs_sm90()
    args = [np.full((64, 5), 7, np.uint32)]
    g = run_ptx(gpu_api(), mbarrier_phases_kernel(), "mbar_phases", (1, 1, 1), (64, 1, 1), args)[0]
    e = run_ptx(emulator("sm_90"), mbarrier_phases_kernel(), "mbar_phases", (1, 1, 1), (64, 1, 1), args)[0]
    want = np.array(MBARRIER_PHASES_WANT, np.uint32)
    assert (g == want).all(), f"GPU table (threads x probes):\n{g}"
    assert (e == g).all(), f"emulator table:\n{e}\nGPU table:\n{g}"


@pytest.mark.parametrize("case", WGMMA_LAYOUT_CASES, ids=lambda c: "-".join(map(str, c[:5])) +
                         ("-regA" if c[5] else ""))
def test_wgmma_shared_layouts_on_gpu_and_emulator_agree(case, rng):
    """Every canonical layout (K-/MN-major, no swizzle, 32/64/128B), register A, tf32, f16
    accumulators, imm-scale-a and scale-d: the hardware is the judge of the ISA restatement."""
    needs_sm90()
    elem, n, al, bl, acc, regs, sa, accum = case
    r1, r2 = twin_rngs(rng)
    d_gpu, ref = run_wgmma_layout(gpu_api(), r1, elem, n, al, bl, acc, regs, sa, accum)
    d_emu, _ = run_wgmma_layout(emulator("sm_90"), r2, elem, n, al, bl, acc, regs, sa, accum)
    tol = (2e-3 if acc == "f16" else 2e-6) * np.abs(ref).max()
    assert np.abs(d_gpu - ref).max() <= tol, "GPU vs float64 reference"
    assert np.abs(d_gpu - d_emu).max() <= tol, "GPU vs emulator"


def test_tma_64b_swizzle_and_tma_store_agree_with_gpu(rng):
    needs_sm90()
    X = rng.standard_normal((8, 16)).astype(np.float32)
    raw_g, y_g = run_tma_store(gpu_api(), X)
    raw_e, y_e = run_tma_store(emulator("sm_90"), X)
    assert (raw_g == raw_e).all() and (y_g == X).all() and (y_e == X).all()
