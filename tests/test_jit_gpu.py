"""Python kernels on a real GPU at real sizes: the same properties as the emulator tests (numpy
references, poisoned outputs, KernelError through kern.check()), plus the asynchronous error
path and the disk/cubin cache. Skips off-GPU."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.jit import KernelError, block_idx, grid, gridsize, shared, syncthreads, thread_idx
from oxicuda.types import In, Out, f32

pytestmark = pytest.mark.gpu

TILE = 16


@oxicuda.kernel
def saxpy(a: f32, x: In[f32], y: In[f32], out: Out[f32]):
    i = grid(1)
    while i < len(out):
        out[i] = a * x[i] + y[i]
        i += gridsize(1)


@oxicuda.kernel
def sgemm_tiled(a: In[f32, 2], b: In[f32, 2], c: Out[f32, 2]):
    ta = shared.array((TILE, TILE), f32)
    tb = shared.array((TILE, TILE), f32)
    tx, ty = thread_idx.x, thread_idx.y
    row = block_idx.y * TILE + ty
    col = block_idx.x * TILE + tx
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    acc = f32(0)
    for t0 in range(0, k, TILE):
        ta[ty, tx] = a[row, t0 + tx] if row < m and t0 + tx < k else f32(0)
        tb[ty, tx] = b[t0 + ty, col] if t0 + ty < k and col < n else f32(0)
        syncthreads()
        for kk in range(TILE):
            acc = oxicuda.jit.fma(ta[ty, kk], tb[kk, tx], acc)
        syncthreads()
    if row < m and col < n:
        c[row, col] = acc


def test_saxpy_2_26_grid_stride_and_forall(rng):
    n = 1 << 26
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = oxicuda.full(n, np.nan, np.float32)
    saxpy[1024, 256](2.0, oxicuda.asarray(x), oxicuda.asarray(y), out)
    saxpy.check()
    np.testing.assert_array_equal(out.get(), np.float32(2.0) * x + y)
    out.fill(np.nan)
    saxpy.forall(n)(3.0, oxicuda.asarray(x), oxicuda.asarray(y), out)
    np.testing.assert_array_equal(out.get(), np.float32(3.0) * x + y)


def test_elementwise_and_reductions_at_real_sizes(rng):
    fused = oxicuda.elementwise(lambda x, y, z: x * y + z)
    x = rng.standard_normal(1 << 24, dtype=np.float32)
    got = fused(x, x, 1.5).get()
    np.testing.assert_array_equal(got, x * x + np.float32(1.5))
    rsum = oxicuda.reduction(lambda v: v, lambda a, b: a + b, 0)
    rmax = oxicuda.reduction(lambda v: v, lambda a, b: max(a, b), float("-inf"))
    np.testing.assert_allclose(rsum(x, dtype=np.float64).get(), x.sum(dtype=np.float64), rtol=1e-12)
    m = rng.standard_normal((4096, 4096), dtype=np.float32)
    np.testing.assert_array_equal(rmax(m, axis=1).get(), m.max(axis=1))
    np.testing.assert_array_equal(rmax(m, axis=0).get(), m.max(axis=0))


def test_tiled_sgemm_1000(rng):
    m, k, n = 1000, 700, 900
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = oxicuda.full((m, n), np.nan, np.float32)
    sgemm_tiled[(-(-n // TILE), -(-m // TILE)), (TILE, TILE)](oxicuda.asarray(a), oxicuda.asarray(b), c)
    ref = a.astype(np.float64) @ b
    assert np.abs(c.get() - ref).max() / np.abs(ref).max() < 1e-5


def test_kernel_error_is_raised_by_check_and_the_context_stays_usable():
    @oxicuda.kernel
    def shifted(x, out):
        i = grid(1)
        if i < len(out):
            out[i] = x[i + 1]

    x = oxicuda.asarray(np.arange(1 << 20, dtype=np.float32))
    out = oxicuda.empty(1 << 20, np.float32)
    shifted[(1 << 20) // 256, 256](x, out)
    with pytest.raises(KernelError, match="index out of bounds for axis 0: index 1048576, bound 1048576"):
        shifted.check()
    shifted[(1 << 20) // 256, 256](x, out[: (1 << 20) - 1])
    shifted.check()
    np.testing.assert_array_equal(out.get()[:100], np.arange(1, 101, dtype=np.float32))


def test_jit_kernels_load_from_the_cubin_cache(tmp_path, monkeypatch):
    from oxicuda.ptx import cache

    monkeypatch.setenv("OXICUDA_CACHE_DIR", str(tmp_path))
    cache.clear_memory_cache()
    x = oxicuda.asarray(np.ones(256, np.float32))

    @oxicuda.kernel
    def inc(v):
        i = grid(1)
        if i < len(v):
            v[i] += 1

    inc[1, 256](x)
    cache.clear_memory_cache()
    inc2 = oxicuda.kernel(inc.__wrapped__)
    inc2[1, 256](x)
    info = cache.cache_info()["disk"]
    assert info["hits"] >= 1 and info["cubin_hits"] >= 1
    np.testing.assert_array_equal(x.get(), np.full(256, 3, np.float32))
