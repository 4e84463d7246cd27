"""The tiled SGEMM's loop and thread-order variants (``warp_m``: warp-blocked thread order;
``prefetch``: next tile stored and first fragments read before the last K row's FFMAs, scalars
and C resolved after the loop) against float64 numpy on the live backend: every transpose, odd
shapes with tails in M, N and K over several K tiles, lda > rows, beta = 0 over NaN, device
scalars and strided batches. Plus what the specs refuse (split-K partials among it) and the
register budget that keeps the 128 x 128 variants at 2 CTAs per SM."""

from __future__ import annotations

import numpy as np
import pytest
from test_blas_gemm import check, host_random, run_case, to_device

import oxicuda
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.blas.gemm_tiled import TILE_CONFIGS, GemmTiledSpec, generate, spec_for
from oxicuda.ptx import validate

REAL_TRANS = [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")]
VARIANTS = [cfg for cfg in TILE_CONFIGS["float32"]
            if cfg.square_only or (cfg.bm, cfg.bn, cfg.tm, cfg.tn) == (128, 128, 8, 16)]


def _arch() -> str:
    return oxicuda.Device(0).arch.rstrip("a")


def test_the_float32_table_registers_the_variants():
    names = {cfg.name for cfg in VARIANTS}
    assert {"128x128x8_8x8_c2_pf", "128x256x8_8x16_w4x8_pf", "128x128x8_8x16_pf", "128x128x8_8x8_i",
            "128x128x8_8x8_c2_pf_i", "128x128x8_8x16_pf_i"} <= names


# an interior variant's checked loop is its sibling's (tested here); its unchecked loop is tested below
@pytest.mark.parametrize("cfg", [c for c in VARIANTS if not c.interior], ids=lambda c: c.name)
@pytest.mark.parametrize("ta,tb", REAL_TRANS)
def test_variant_matches_reference_on_odd_shapes_for_all_transposes(rng, cfg, ta, tb):
    # 37 x 45 x 19: partial tiles in M, N and K, three K tiles (the prefetch carries fragments
    # across two loop trips); interior pointers and lda > rows force scalar loads and C; the
    # transposes alternate beta = 0 over NaN with beta != 0 and host with device scalars
    i = REAL_TRANS.index((ta, tb))
    spec = spec_for(cfg, arch=_arch(), dtype="float32", transa=ta, transb=tb)
    got, ref, t = run_case(rng, "float32", ta, tb, 37, 45, 19, algo=spec, beta=0.5 * (i % 2),
                           device_scalars=i >= 2)
    assert [x.spec for x in t.launches] == [spec]
    check(got, ref, "float32", 19)


@pytest.mark.parametrize("cfg", [c for c in VARIANTS if c.interior], ids=lambda c: c.name)
@pytest.mark.parametrize("ta,tb", REAL_TRANS)
def test_interior_variant_unchecked_loop_matches_reference(rng, cfg, ta, tb):
    # 136 x 128: CTA 0 is inside M x N (runs the unchecked loop for all but its last two K steps),
    # CTA 1 holds the 8-row edge (checked loop); scalar loads over a K tail (K = 37) or 16-byte
    # loads and C (K = 40); beta = 0 over NaN and beta != 0, host and device scalars
    i = REAL_TRANS.index((ta, tb))
    v = 4 if i % 2 else 1
    k = 40 if v > 1 else 37
    spec = spec_for(cfg, arch=_arch(), dtype="float32", transa=ta, transb=tb, vec_a=v, vec_b=v, vec_c=v)
    got, ref, t = run_case(rng, "float32", ta, tb, 136, 128, k, algo=spec, beta=0.5 * (i // 2),
                           device_scalars=i in (1, 2), pad=4 if v > 1 else 3, offset=(0, 0) if v > 1 else (2, 1))
    assert [x.spec for x in t.launches] == [spec] and t.launches[0].grid[:2] == (2, 1)
    check(got, ref, "float32", k)


@pytest.mark.parametrize("cfg", [c for c in VARIANTS if c.prefetch], ids=lambda c: c.name)
def test_prefetching_variant_strided_batch_with_vector_loads(rng, cfg):
    # two batch entries (grid.z), 16-byte loads and C, K = 32 (four whole K tiles), beta = 0 over NaN
    m, n, k, batch = 32, 24, 32, 2
    A = host_random(rng, (batch, k, m), "float32")  # C-ordered (k, m) = column-major m x k
    B = host_random(rng, (batch, n, k), "float32")
    dA, dB = to_device(A, "float32", order="C"), to_device(B, "float32", order="C")
    dC = oxicuda.asarray(np.full((batch, n, m), np.nan, dtype=np.float32))
    spec = spec_for(cfg, arch=_arch(), dtype="float32", vec_a=4, vec_b=4, vec_c=4)
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, -0.75, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32",
                      batch=batch, stride_a=m * k, stride_b=k * n, stride_c=m * n, algo=spec)
    assert [x.spec for x in t.launches] == [spec] and t.launches[0].grid[2] == batch
    got = dC.get().astype(np.float64)
    ref = -0.75 * np.einsum("zkm,znk->znm", A, B)
    check(got, ref, "float32", k)


def test_variant_specs_refuse_what_they_cannot_lay_out():
    with pytest.raises(ValueError, match="warp_m"):
        GemmTiledSpec(warp_m=3)
    with pytest.raises(ValueError, match="warp_m"):  # 32 / 2 = 16 columns of threads, only 8 there
        GemmTiledSpec(bm=128, bn=64, tm=8, tn=8, warp_m=2)
    with pytest.raises(ValueError, match="bk"):
        GemmTiledSpec(bm=64, bn=64, bk=5, tm=4, tn=4, prefetch=True)


@pytest.mark.parametrize("arch", ["sm_90"])  # the H200's; sm_86 takes fewer registers
@pytest.mark.parametrize("cfg", [c for c in VARIANTS if c.bm * c.bn == 128 * 128], ids=lambda c: c.name)
def test_128x128_tiles_fit_two_ctas_per_sm_without_spills(arch, cfg):
    # the sweep's case: A and B both "N", 16-byte loads and C
    try:
        validate.find_ptxas()
    except validate.PtxasNotFound as exc:
        pytest.skip(f"ptxas not available: {exc}")
    spec = spec_for(cfg, arch=arch, dtype="float32", vec_a=4, vec_b=4, vec_c=4)
    report = validate.assemble(generate(spec), arch)
    assert report.ok and 2 * spec.threads * report.registers <= 65536 and report.spill_stores == 0, (
        report.registers, report.spill_stores)
