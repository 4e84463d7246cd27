"""The measured dispatch tables are pinned: each names the committed sweep it came from, every
conv MEASURED entry is what dispatch picks (turning the lookup off fails here), and gemmEx's
FAST_TF32 runs float32 on TF32 tensor cores (running it as plain FP32 fails here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm_dispatch as gd
from oxicuda.cuda import cublas
from oxicuda.dnn import conv_dispatch as cd
from oxicuda.driver.facts import board_facts, device_facts

ROOT = Path(__file__).resolve().parent.parent


def test_every_dispatch_table_names_a_committed_sweep():
    sources = [*gd.SOURCES.values(), *cd.MEASURED_SOURCE]
    assert set(gd.SOURCES) >= {"TILES", "DMMA_TILES", "TILE_RATE", "SPLIT_K_VARIANTS"}
    for source in sources:
        assert source.startswith("benches/results/") and source.endswith(".json"), source
        assert (ROOT / source).is_file(), f"{source} is not committed"


def _problem(key: tuple) -> cd.ConvProblem:
    dtype, n, c, h, w, k, r, s, stride, padding, dilation, groups = key
    oh = (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    return cd.ConvProblem(n, c, h, w, k, r, s, oh, ow, stride, padding, dilation, groups, dtype)


@pytest.mark.parametrize("key", list(cd.MEASURED), ids=lambda k: "x".join(map(str, k[1:8])))
def test_conv_dispatch_picks_each_measured_winner(key):
    problem = _problem(key)
    assert cd.shape_key(problem) == key
    algo, tile, splits = cd.MEASURED[key]
    assert cd.choose_algo(problem) == algo
    if algo == "implicit_gemm" and tile is not None:
        assert cd.choose_igemm_tile(problem, board_facts("h200").sm_count) == (tile, splits or 1)


def test_the_measured_table_changes_what_the_rules_alone_pick():
    # without the lookup (explicit thresholds skip it) these shapes would run something else
    changed = [k for k, (algo, tile, splits) in cd.MEASURED.items()
               if cd.choose_algo(_problem(k), cd.THRESHOLDS) != algo
               or (algo == "implicit_gemm" and tile is not None
                   and cd.choose_igemm_tile(_problem(k), board_facts("h200").sm_count, cd.THRESHOLDS)
                   != (tile, splits or 1))]
    assert len(changed) >= 4, changed


def _gemm_ex(compute, rng, m=32, n=20, k=24):  # 16-byte aligned columns (tensor cores need them)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    da, db = oxicuda.asarray(np.asfortranarray(a)), oxicuda.asarray(np.asfortranarray(b))
    dc = oxicuda.asarray(np.full((m, n), np.nan, np.float32, order="F"))
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    h = cublas.create()
    try:
        with oxicuda.trace() as t:
            cublas.gemmEx(h, 0, 0, m, n, k, one.ctypes.data, da.ptr, cublas.CUDA_R_32F, m, db.ptr,
                          cublas.CUDA_R_32F, k, zero.ctypes.data, dc.ptr, cublas.CUDA_R_32F, m, compute,
                          cublas.CUBLAS_GEMM_DEFAULT)
    finally:
        cublas.destroy(h)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return t, dc.get().astype(np.float64), ref


def test_gemmex_fast_tf32_runs_float32_on_tf32_tensor_cores(rng):
    if device_facts().cc < (8, 0):
        pytest.skip("TF32 tensor cores need sm_80+")
    t, got, ref = _gemm_ex(cublas.CUBLAS_COMPUTE_32F_FAST_TF32, rng)
    launched = [r.spec for r in t.launches]
    specs = [s for s in launched if s.family != "transpose"]
    assert len(specs) == 1 and specs[0].family in ("gemm_tensor_core", "gemm_wgmma"), launched
    if specs[0].family == "gemm_wgmma":
        # wgmma reads tf32 operands K-major only (16-bit types alone may be transposed in shared
        # memory): column-major A (M-major) goes through one transpose first, B is K-major already
        assert [s.family for s in launched] == ["transpose", "gemm_wgmma"], launched
    else:
        assert len(launched) == 1, launched
    assert specs[0].dtype == "tf32"
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err < 5e-3  # tf32 rounding of the inputs
    t32, got32, _ = _gemm_ex(cublas.CUBLAS_COMPUTE_32F, rng)
    assert [r.spec.family for r in t32.launches] != [specs[0].family]  # full FP32 stays off tensor cores
    assert np.isfinite(got32).all()
