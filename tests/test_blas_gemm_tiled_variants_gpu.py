"""The tiled SGEMM's sweep variants (prefetching loop, warp-blocked thread order, 8x16 per thread)
on a real GPU against float64 references, every transpose: aligned shapes with 16-byte loads and
C and beta != 0, odd shapes with scalar loads and beta = 0 over NaN, a strided batch, and one
4096^3 product (the sweep's shape, checked element by element). Skips off-GPU."""

from __future__ import annotations

import numpy as np
import pytest
from test_blas_perfpaths_gpu import _check, _matmul64, _operands

import oxicuda
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.blas.gemm_tiled import TILE_CONFIGS, spec_for

pytestmark = pytest.mark.gpu

VARIANTS = [cfg for cfg in TILE_CONFIGS["float32"]
            if cfg.square_only or (cfg.bm, cfg.bn, cfg.tm, cfg.tn) == (128, 128, 8, 16)]


def _arch() -> str:
    return oxicuda.Device(0).arch.rstrip("a")


@pytest.mark.parametrize("cfg", VARIANTS, ids=lambda c: c.name)
@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_variant_matches_float64_on_the_gpu(rng, cfg, ta, tb):
    for aligned in (True, False):
        m, n, k = (1024, 768, 520) if aligned else (1001, 777, 517)
        v = 4 if aligned else 1
        A, B = _operands(rng, m, n, k, ta, tb, np.float32)
        spec = spec_for(cfg, arch=_arch(), dtype="float32", transa=ta, transb=tb, vec_a=v, vec_b=v, vec_c=v)
        dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
        C = rng.standard_normal((m, n)).astype(np.float32)
        beta = 0.5 if aligned else 0.0
        dC = oxicuda.asarray(np.asfortranarray(C) if beta else np.full((m, n), np.nan, np.float32, order="F"))
        with oxicuda.trace() as t:
            gemm_colmajor(ta, tb, m, n, k, 1.5, dA.ptr, A.shape[0], dB.ptr, B.shape[0], beta, dC.ptr, m,
                          dtype="float32", algo=spec)
        assert [x.spec for x in t.launches] == [spec]
        ref = 1.5 * _matmul64(A if ta == "N" else A.T.copy(), B if tb == "N" else B.T.copy())
        if beta:
            ref += beta * C.astype(np.float64)
        _check(dC.get(), ref, 1e-5, k)


@pytest.mark.parametrize("cfg", VARIANTS, ids=lambda c: c.name)
def test_variant_strided_batch_on_the_gpu(rng, cfg):
    m, n, k, batch = 256, 384, 200, 3
    A = rng.standard_normal((batch, k, m)).astype(np.float32)  # C-ordered (k, m): column-major m x k
    B = rng.standard_normal((batch, n, k)).astype(np.float32)
    dA, dB = oxicuda.asarray(A), oxicuda.asarray(B)
    dC = oxicuda.asarray(np.full((batch, n, m), np.nan, np.float32))
    spec = spec_for(cfg, arch=_arch(), dtype="float32", vec_a=4, vec_b=4, vec_c=4)
    gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32", batch=batch,
                  stride_a=m * k, stride_b=k * n, stride_c=m * n, algo=spec)
    got = dC.get()
    for z in range(batch):
        _check(got[z], _matmul64(B[z], A[z]), 1e-5, k)


@pytest.mark.parametrize("cfg", VARIANTS, ids=lambda c: c.name)
def test_variant_at_the_sweep_shape(rng, cfg):
    # 4096^3 N/N as benches/sweep_blas.py runs it, every element against the float64 product
    m = n = k = 4096
    A = rng.standard_normal((k, m)).astype(np.float32)  # C-ordered (k, m): column-major m x k
    B = rng.standard_normal((n, k)).astype(np.float32)
    dA, dB = oxicuda.asarray(A), oxicuda.asarray(B)
    dC = oxicuda.asarray(np.full((n, m), np.nan, np.float32))
    spec = spec_for(cfg, arch=_arch(), dtype="float32", vec_a=4, vec_b=4, vec_c=4)
    gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32", algo=spec)
    _check(dC.get(), _matmul64(B, A), 1e-5, k)
