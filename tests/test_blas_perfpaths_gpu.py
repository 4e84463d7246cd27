"""The GEMM performance paths on a real GPU, against float64 references: every registered
float32/float64 tile (forced), split-K as dispatch routes issue 5's skinny shapes (the real
shapes, on the device's own SM count), the grouped vector reduction, float32 C over
float16/bfloat16 data, and the CuPy-shaped gemmEx type combinations. Skips off-GPU."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm_dispatch as gd
from oxicuda.blas import gemm_dmma
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.blas.gemm_tiled import SPLIT_K_TILES, TILE_CONFIGS, spec_for
from oxicuda.driver.facts import device_facts
from oxicuda.memory.dtypes import BFLOAT16, host_astype

pytestmark = pytest.mark.gpu


def _matmul64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 a @ b, on the GPU through PyTorch when it is there (the skinny shapes are tens of
    GFLOP), else numpy."""
    try:
        import torch

        if torch.cuda.is_available():
            return (torch.from_numpy(a).cuda().double() @ torch.from_numpy(b).cuda().double()).cpu().numpy()
    except ImportError:
        pass
    return a.astype(np.float64) @ b.astype(np.float64)


def _check(got, ref, tol, k):
    assert not np.isnan(got).any(), "NaN left in C"
    err = np.abs(got.astype(np.float64) - ref)
    # plus the standard accumulation term, 16 k eps(f32) |a||b| with unit-variance data: a result
    # near zero is off by that absolute amount (seen on the H200: mma.sync over k = 20000 gives
    # |err| ~ 4e-3 where |ref| ~ 1); a dropped or repeated k-block is off by ~sqrt(block), far more
    bound = tol * max(1.0, np.sqrt(k)) * np.maximum(1.0, np.abs(ref)) + 16 * k * 2.0**-24
    bad = np.argwhere(err > bound)
    assert bad.size == 0, f"{len(bad)} elements off, first at {bad[0].tolist()}: {got[tuple(bad[0])]} vs {ref[tuple(bad[0])]}"


def _operands(rng, m, n, k, ta, tb, dtype):
    A = rng.standard_normal((m, k) if ta == "N" else (k, m)).astype(dtype)
    B = rng.standard_normal((k, n) if tb == "N" else (n, k)).astype(dtype)
    return A, B


CASES = [(dt, cfg, ta, tb) for dt in ("float32", "float64") for cfg in TILE_CONFIGS[dt]
         for ta, tb in (("N", "N"), ("T", "T"))]


@pytest.mark.parametrize("dtype,cfg,ta,tb", CASES, ids=lambda x: getattr(x, "name", str(x)))
@pytest.mark.parametrize("aligned", [True, False])
def test_every_tile_matches_float64(rng, dtype, cfg, ta, tb, aligned):
    m, n, k = (1024, 768, 520) if aligned else (1001, 777, 517)
    v = (4 if dtype == "float32" else 2) if aligned else 1
    A, B = _operands(rng, m, n, k, ta, tb, dtype)
    spec = spec_for(cfg, arch=oxicuda.Device(0).arch.rstrip("a"), dtype=dtype, transa=ta, transb=tb,
                    vec_a=v, vec_b=v, vec_c=v)
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    C = rng.standard_normal((m, n))
    dC = oxicuda.asarray(np.asfortranarray(C.astype(dtype)))
    beta = 0.5 if aligned else 0.0
    if beta == 0:
        dC = oxicuda.asarray(np.full((m, n), np.nan, dtype=dtype, order="F"))
    with oxicuda.trace() as t:
        gemm_colmajor(ta, tb, m, n, k, 1.5, dA.ptr, A.shape[0], dB.ptr, B.shape[0], beta, dC.ptr, m, dtype=dtype,
                      algo=spec)
    assert [x.spec for x in t.launches] == [spec]
    ref = 1.5 * _matmul64(A if ta == "N" else A.T.copy(), B if tb == "N" else B.T.copy())
    if beta:
        ref += beta * C.astype(dtype).astype(np.float64)
    _check(dC.get(), ref, 1e-5 if dtype == "float32" else 1e-12, k)


@pytest.mark.parametrize("tile", gemm_dmma.TILES, ids=str)
@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_every_dmma_tile_matches_float64(rng, tile, ta, tb):
    arch = oxicuda.Device(0).arch.rstrip("a")
    if tile not in gemm_dmma.tiles_for(arch):
        pytest.skip(f"{tile[5]} needs sm_{gemm_dmma.SHAPES[tile[5]]}; this GPU is {arch}")
    for aligned in (True, False):
        m, n, k = (1024, 768, 520) if aligned else (1001, 777, 517)
        v = 2 if aligned else 1
        bm, bn, bk, wm, wn, shape = tile
        spec = gemm_dmma.GemmDmmaSpec(arch=arch, transa=ta, transb=tb, bm=bm, bn=bn, bk=bk, warps_m=wm, warps_n=wn,
                                      vec_a=v, vec_b=v, shape=shape)
        A, B = _operands(rng, m, n, k, ta, tb, np.float64)
        dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
        dC = oxicuda.asarray(np.full((m, n), np.nan, order="F"))
        with oxicuda.trace() as t:
            gemm_colmajor(ta, tb, m, n, k, 1.0, dA.ptr, A.shape[0], dB.ptr, B.shape[0], 0.0, dC.ptr, m,
                          dtype="float64", algo=spec)
        assert [x.spec for x in t.launches] == [spec]
        _check(dC.get(), _matmul64(A if ta == "N" else A.T.copy(), B if tb == "N" else B.T.copy()), 1e-12, k)


@pytest.mark.parametrize("m,n,k", [(128, 128, 131072), (512, 512, 65536), (64, 4096, 16384), (127, 129, 40000)])
def test_dispatch_splits_the_skinny_shapes_on_this_gpu(rng, m, n, k):
    A, B = _operands(rng, m, n, k, "N", "N", np.float32)
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    dC = oxicuda.asarray(np.full((m, n), np.nan, np.float32, order="F"))
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32")
    fams = [x.spec.family for x in t.launches]
    assert fams == ["gemm_tiled", "gemm_splitk_reduce"], fams
    info = device_facts(0)
    part = t.launches[0]
    assert part.spec.raw_out and part.grid[2] > 1
    ctas = part.grid[0] * part.grid[1] * part.grid[2]
    cfg, splits = gd.split_k_choice(gd.GemmProblem(m, n, k, "float32", lda=m, ldb=k, ldc=m, arch=info.arch), info)
    assert (part.spec.bm, part.spec.bn) == (cfg.bm, cfg.bn) and part.grid[2] <= splits, (part.grid, splits)
    # the wave model's pick: at least one CTA per SM, whole rounds of resident CTAs on the busiest SM
    per_sm = -(-ctas // info.sm_count)
    assert ctas >= info.sm_count and per_sm % gd.resident_ctas(cfg) == 0, (part.grid, info.sm_count)
    _check(dC.get(), _matmul64(A, B), 1e-5, k)


@pytest.mark.parametrize("cfg", [c for c in SPLIT_K_TILES["float32"]], ids=lambda c: c.name)
@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T")])
def test_split_k_loop_variant_partials_match_float64(rng, cfg, ta, tb):
    # gemm_dispatch.SPLIT_K_VARIANTS' prefetching (and interior) partials, forced, at a size
    # memcheck can run: edge tiles in M and N, a K tail in the last split, beta != 0
    m, n, k, splits = 2 * cfg.bm + 4, 3 * cfg.bn - 8, 6152, 7
    A, B = _operands(rng, m, n, k, ta, tb, np.float32)
    C0 = rng.standard_normal((m, n)).astype(np.float32)
    info = device_facts(0)
    p = gd.GemmProblem(m, n, k, "float32", transa=ta, transb=tb, lda=A.shape[0], ldb=B.shape[0], ldc=m,
                       align_a=16, align_b=16, align_c=16, arch=info.arch)
    plan = gd.split_k_plan(p, info, splits, cfg)
    assert (plan.spec.prefetch, plan.spec.interior, plan.spec.vec_a, plan.spec.vec_b) == (cfg.prefetch, cfg.interior,
                                                                                          4, 4)
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    dC = oxicuda.asarray(np.asfortranarray(C0))
    with oxicuda.trace() as t:
        gemm_colmajor(ta, tb, m, n, k, 1.5, dA.ptr, A.shape[0], dB.ptr, B.shape[0], -0.5, dC.ptr, m,
                      dtype="float32", algo=plan)
    assert [x.spec for x in t.launches] == [plan.spec, plan.reduce] and t.launches[0].grid[2] == plan.splits
    ref = 1.5 * _matmul64(A if ta == "N" else A.T.copy(), B if tb == "N" else B.T.copy()) - 0.5 * C0.astype(np.float64)
    _check(dC.get(), ref, 1e-5, k)


@pytest.mark.parametrize("batch", [64, 9])
def test_strided_batch_runs_the_wave_models_tile_on_this_gpu(rng, batch):
    # 64 x 512^3 (issue 5) and 9 x 512^3: one launch, the tile gemm_dispatch.batched_tile picks for
    # this GPU's SM count, every element against float64
    m = n = k = 512
    A = rng.standard_normal((batch, k, m)).astype(np.float32)  # column-major m x k per entry
    B = rng.standard_normal((batch, n, k)).astype(np.float32)
    dA, dB = oxicuda.asarray(A), oxicuda.asarray(B)
    dC = oxicuda.asarray(np.full((batch, n, m), np.nan, np.float32))
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32", batch=batch,
                      stride_a=m * k, stride_b=k * n, stride_c=m * n)
    info = device_facts(0)
    want = gd.batched_tile(gd.GemmProblem(m, n, k, "float32", lda=m, ldb=k, ldc=m, batch=batch, arch=info.arch), info)
    assert len(t.launches) == 1 and t.launches[0].grid == (m // want.bm, n // want.bn, batch)
    got = dC.get()
    for z in range(batch):
        _check(got[z].T, _matmul64(A[z].T.copy(), B[z].T.copy()), 1e-5, k)


@pytest.mark.parametrize("splits,beta", [(200, 0.0), (37, 0.75)])
def test_forced_split_k_plans_with_grouped_reductions(rng, splits, beta):
    m, n, k = 256, 96, 24000
    info = device_facts(0)
    A, B = _operands(rng, m, n, k, "T", "N", np.float32)
    C = rng.standard_normal((m, n)).astype(np.float32)
    problem = gd.GemmProblem(m, n, k, "float32", transa="T", lda=k, ldb=k, ldc=m, arch=info.arch)
    plan = gd.split_k_plan(problem, info, splits)
    assert plan.reduce.groups == gd.reduce_groups(plan.splits)
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    dC = oxicuda.asarray(np.asfortranarray(C) if beta else np.full((m, n), np.nan, np.float32, order="F"))
    gemm_colmajor("T", "N", m, n, k, 1.0, dA.ptr, k, dB.ptr, k, beta, dC.ptr, m, dtype="float32", algo=plan)
    ref = _matmul64(A.T.copy(), B) + (beta * C.astype(np.float64) if beta else 0)
    _check(dC.get(), ref, 1e-5, k)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("k", [1000, 20000])
@pytest.mark.parametrize("m,family", [(300, "gemm_tiled"), (320, "gemm_tensor_core")])
def test_float32_output_over_half_data(rng, dtype, k, m, family):
    # m = 300: lda of 600 bytes is not 16-byte aligned, so SIMT (split-K for the long K); m = 320: mma.sync
    n = 260
    store = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
    A = host_astype(rng.standard_normal((m, k)).astype(np.float32), store)
    B = host_astype(rng.standard_normal((k, n)).astype(np.float32), store)
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    dC = oxicuda.asarray(np.full((m, n), np.nan, np.float32, order="F"))
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype=dtype, c_dtype="float32")
    last = t.launches[-1].spec
    assert t.launches[0].spec.family == family
    assert (last.c_f32 if family == "gemm_tensor_core" else last.c_dtype == "float32")
    ref = _matmul64(host_astype(A, np.float64), host_astype(B, np.float64))
    _check(dC.get(), ref, 1e-5, k)


def test_gemmex_combinations_on_the_gpu(rng):
    from test_compat_gemmex import run_gemmex_combinations

    run_gemmex_combinations(rng, m=257, n=130, k=300)
