"""The array and memory names CuPy and PyTorch users look for: oxicuda.synchronize(),
Device(i).mem_info(), get_default_memory_pool() with CuPy's used/total/free_all_blocks, and the
*_like constructors at the top level."""

from __future__ import annotations

import numpy as np

import oxicuda


def test_synchronize_and_device_synchronize_wait_for_queued_work():
    a = oxicuda.zeros(10)
    a.fill(2.5)
    oxicuda.synchronize()
    oxicuda.Device(0).synchronize()
    np.testing.assert_array_equal(a.get(), np.full(10, 2.5, np.float32))


def test_mem_info_reports_free_and_total_bytes_and_sees_allocations():
    free, total = oxicuda.Device(0).mem_info()
    assert 0 < free <= total == oxicuda.Device(0).total_memory
    pool = oxicuda.get_default_memory_pool()
    pool.free_all_blocks()
    before = oxicuda.Device(0).mem_info()[0]
    a = oxicuda.empty(1 << 20, np.uint8)
    assert oxicuda.Device(0).mem_info()[0] <= before - a.nbytes or oxicuda.get_backend() == "cuda"


def test_default_memory_pool_counts_like_cupys():
    pool = oxicuda.get_default_memory_pool()
    assert pool is oxicuda.memory.get_pool()
    pool.free_all_blocks()
    used0, total0 = pool.used_bytes(), pool.total_bytes()
    a = oxicuda.empty(3000, np.float32)  # 12000 bytes: a 12288-byte bucket
    assert pool.used_bytes() == used0 + 12288
    assert pool.total_bytes() >= total0 + 12288
    del a
    assert pool.used_bytes() == used0
    assert pool.free_bytes() >= 12288 and pool.n_free_blocks() >= 1
    pool.free_all_blocks()
    assert pool.free_bytes() == 0 and pool.total_bytes() == pool.used_bytes()


def test_like_constructors_are_exported_at_the_top_level():
    ref = oxicuda.asarray(np.ones((2, 3), np.float64, order="F"))
    z, e, f = oxicuda.zeros_like(ref), oxicuda.empty_like(ref), oxicuda.full_like(ref, 1.5)
    for x in (z, e, f):
        assert x.shape == (2, 3) and x.dtype == np.float64 and x.is_f_contiguous
    np.testing.assert_array_equal(z.get(), np.zeros((2, 3)))
    np.testing.assert_array_equal(f.get(), np.full((2, 3), 1.5))
    assert {"zeros_like", "empty_like", "full_like", "synchronize", "get_default_memory_pool"} <= set(dir(oxicuda))
