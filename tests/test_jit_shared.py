"""Shared memory, barriers, atomics and warp collectives in @oxicuda.kernel, and the docs'
16x16 tiled SGEMM, on the emulator against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.jit import (
    all_sync,
    any_sync,
    atomic,
    ballot_sync,
    block_dim,
    block_idx,
    grid,
    shared,
    shfl_down_sync,
    shfl_xor_sync,
    syncthreads,
    thread_idx,
    warp_reduce,
)
from oxicuda.types import Array, In, Out, f32, f64, i32, u32


@oxicuda.kernel
def block_sums(x: In[f32], out: Out[f32]):
    buf = shared.array(128, f32)
    t = thread_idx.x
    i = block_idx.x * block_dim.x + t
    buf[t] = x[i] if i < len(x) else f32(0)
    syncthreads()
    s = 64
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        syncthreads()
        s //= 2
    if t == 0:
        out[block_idx.x] = buf[0]


def test_static_shared_tree_reduction(rng):
    x = rng.standard_normal(300).astype(np.float32)
    out = oxicuda.full(3, np.nan, np.float32)
    block_sums[3, 128](oxicuda.asarray(x), out)
    pad = np.zeros(384, np.float32)
    pad[:300] = x
    want = pad.reshape(3, 128).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out.get(), want, rtol=1e-5)
    assert ".shared .align 16 .b32 jit_smem" in block_sums.ptx(oxicuda.asarray(x), out)


def test_dynamic_shared_array_reverses_a_block(rng):
    @oxicuda.kernel
    def reverse(x: Array[f64]):
        buf = shared.array(0, f64)
        t = thread_idx.x
        n = block_dim.x
        buf[t] = x[t]
        syncthreads()
        x[t] = buf[n - 1 - t]

    h = rng.standard_normal(64)
    x = oxicuda.asarray(h)
    reverse[1, 64](x, shared_mem=64 * 8)
    np.testing.assert_array_equal(x.get(), h[::-1])
    with pytest.raises(oxicuda.KernelError, match="bound 32"):
        reverse[1, 64](x, shared_mem=32 * 8)  # the dynamic size bounds the array


def test_global_and_shared_atomics(rng):
    @oxicuda.kernel
    def hist(v: In[i32], bins: Array[i32], total: Array[f64], hi: Array[i32], lo: Array[i32]):
        local_bins = shared.array(8, i32)
        t = thread_idx.x
        if t < 8:
            local_bins[t] = 0
        syncthreads()
        i = grid(1)
        if i < len(v):
            atomic.add(local_bins, v[i] % 8, 1)
            atomic.add(total, 0, f64(v[i]))
            atomic.max(hi, 0, v[i])
            atomic.min(lo, 0, v[i])
        syncthreads()
        if t < 8:
            atomic.add(bins, t, local_bins[t])

    h = rng.integers(0, 1000, 500).astype(np.int32)
    bins, total = oxicuda.zeros(8, np.int32), oxicuda.zeros(1, np.float64)
    hi, lo = oxicuda.full(1, -1, np.int32), oxicuda.full(1, 10**9, np.int32)
    hist[4, 128](oxicuda.asarray(h), bins, total, hi, lo)
    np.testing.assert_array_equal(bins.get(), np.bincount(h % 8, minlength=8))
    assert total.get()[0] == h.sum() and hi.get()[0] == h.max() and lo.get()[0] == h.min()


def test_atomic_exchange_and_compare_and_swap():
    @oxicuda.kernel
    def claim(slot: Array[i32], prevs: Out[i32], last: Array[u32], olds: Out[u32]):
        t = thread_idx.x
        prevs[t] = atomic.cas(slot, 0, 0, t + 1)
        olds[t] = atomic.exch(last, 0, u32(t))

    slot, prevs = oxicuda.zeros(1, np.int32), oxicuda.full(32, -1, np.int32)
    last, olds = oxicuda.full(1, 99, np.uint32), oxicuda.zeros(32, np.uint32)
    claim[1, 32](slot, prevs, last, olds)
    p = prevs.get()
    (w,) = np.flatnonzero(p == 0)  # exactly one thread found the slot empty
    assert int(slot.get()[0]) == w + 1 and (np.delete(p, w) == w + 1).all()
    # exch hands every value on exactly once: the olds and the final value are 99 and 0..31
    assert sorted([*olds.get().tolist(), int(last.get()[0])]) == [*range(32), 99]


def test_warp_shuffles_votes_and_reductions(rng):
    @oxicuda.kernel
    def warp_ops(x: In[f32], s1: Out[f32], s2: Out[f32], ball: Out[u32], anyall: Out[i32]):
        t = thread_idx.x
        v = x[t]
        acc = v
        d = 16
        while d > 0:
            acc += shfl_down_sync(0xFFFFFFFF, acc, d)
            d //= 2
        b = v
        for k in (1, 2, 4, 8, 16):
            b = max(b, shfl_xor_sync(0xFFFFFFFF, b, k))
        s1[t] = acc
        s2[t] = warp_reduce.add(v) - b * 0
        ball[t] = ballot_sync(0xFFFFFFFF, v > 0)
        anyall[t] = i32(any_sync(0xFFFFFFFF, v > 2)) * 2 + i32(all_sync(0xFFFFFFFF, v > -10))

    h = rng.standard_normal(32).astype(np.float32)
    h[5] = 3.0
    outs = [oxicuda.empty(32, np.float32), oxicuda.empty(32, np.float32),
            oxicuda.empty(32, np.uint32), oxicuda.empty(32, np.int32)]
    warp_ops[1, 32](oxicuda.asarray(h), *outs)
    s1, s2, ball, anyall = (o.get() for o in outs)
    np.testing.assert_allclose(s1[0], h.astype(np.float64).sum(), rtol=1e-5)
    np.testing.assert_allclose(s2, np.full(32, h.astype(np.float64).sum()), rtol=1e-5)
    want_ball = sum(1 << k for k in range(32) if h[k] > 0)
    assert (ball == want_ball).all()
    assert (anyall == 3).all()


TILE = 16


@oxicuda.kernel
def sgemm_tiled(a: In[f32, 2], b: In[f32, 2], c: Out[f32, 2]):
    """c = a @ b with 16x16 tiles of a and b staged in shared memory (docs/jit.md)."""
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


def test_docs_tiled_sgemm_matches_numpy_at_odd_sizes(rng):
    m, k, n = 37, 45, 29
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = oxicuda.full((m, n), np.nan, np.float32)
    grid_ = (-(-n // TILE), -(-m // TILE))
    sgemm_tiled[grid_, (TILE, TILE)](oxicuda.asarray(a), oxicuda.asarray(b), c)
    np.testing.assert_allclose(c.get(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_small_local_arrays_per_thread(rng):
    from oxicuda.jit import local
    from oxicuda.types import i64

    @oxicuda.kernel
    def sort4(x: Array[f32, 2]):
        r = grid(1)
        if r < x.shape[0]:
            v = local.array(4, f32)
            for j in range(4):
                v[j] = x[r, j]
            for i in range(4):  # insertion sort in local memory
                for j in range(3 - i):
                    if v[j] > v[j + 1]:
                        t = v[j]
                        v[j] = v[j + 1]
                        v[j + 1] = t
            for j in range(4):
                x[r, j] = v[j]

    @oxicuda.kernel
    def oob(n: i64, out: Array[f64]):
        v = local.array((2, 3), f64)
        v[1, n] = 1.0
        out[0] = v[1, 2]

    h = rng.standard_normal((70, 4)).astype(np.float32)
    x = oxicuda.asarray(h)
    sort4[3, 32](x)
    np.testing.assert_array_equal(x.get(), np.sort(h, axis=1))
    out = oxicuda.zeros(1, np.float64)
    oob[1, 1](2, out)
    assert out.get()[0] == 1.0
    with pytest.raises(oxicuda.KernelError, match="axis 1: index 3, bound 3"):
        oob[1, 1](3, out)
