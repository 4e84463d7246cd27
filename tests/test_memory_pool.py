"""The caching pool: buckets, reuse, cross-stream safety, OOM release-and-retry, statistics."""

from __future__ import annotations

import gc

import pytest

from oxicuda.driver import backend
from oxicuda.driver.errors import OutOfMemoryError
from oxicuda.memory import pool as pool_mod
from oxicuda.memory.pool import MemoryPool, bucket_size


@pytest.fixture
def pool():
    """A private pool on device 0 whose cache is released afterwards (the primary context made
    current: tests call the driver directly, and one may be the first of a fresh xdist worker)."""
    from oxicuda.driver.context import ensure_context

    ensure_context()
    p = MemoryPool(0)
    yield p
    gc.collect()
    p.free_all_cached()


def test_bucket_sizes_follow_the_documented_rule():
    assert bucket_size(0) == 0
    assert bucket_size(1) == 512 and bucket_size(512) == 512 and bucket_size(513) == 1024
    assert bucket_size(1 << 20) == 1 << 20
    assert bucket_size((1 << 20) + 1) == (1 << 20) + (1 << 17)  # eighths of 1 MiB
    assert bucket_size(5 << 20) == 5 << 20
    assert bucket_size((16 << 20) + 1) == 18 << 20  # 2 MiB steps from 16 MiB
    for n in [3, 1000, 70_000, 3 << 20, 100_000_001]:
        b = bucket_size(n)
        assert n <= b <= n * 1.125 + 512


def test_zero_bytes_allocates_nothing_and_gives_pointer_zero(pool, monkeypatch):
    monkeypatch.setattr(backend.api(), "mem_alloc", lambda n: pytest.fail("allocated"))
    blk = pool.malloc(0)
    assert blk.ptr == 0 and blk.size == 0
    blk.free()
    assert pool.stats()["allocated_bytes"] == 0


def test_a_freed_block_comes_back_on_the_same_stream(pool):
    a = pool.malloc(1000)
    ptr = a.ptr
    a.free()
    b = pool.malloc(900)  # same 1024-byte bucket
    assert b.ptr == ptr
    s = pool.stats()
    assert (s["hits"], s["misses"]) == (1, 1)
    c = pool.malloc(5000)  # another bucket: a fresh block
    assert c.ptr != ptr


def test_garbage_collected_blocks_return_to_the_pool(pool):
    a = pool.malloc(4096)
    ptr = a.ptr
    del a
    gc.collect()
    assert pool.stats()["cached_bytes"] == 4096
    assert pool.malloc(4096).ptr == ptr


def test_double_free_raises(pool):
    a = pool.malloc(64)
    a.free()
    with pytest.raises(RuntimeError, match="double free"):
        a.free()


def test_cross_stream_reuse_waits_for_the_free_event(pool, monkeypatch):
    drv = backend.api()
    s1, s2 = drv.stream_create(), drv.stream_create()
    try:
        pending: set[int] = set()
        real_record, real_query = drv.event_record, drv.event_query

        def record(event, stream):
            real_record(event, stream)
            pending.add(event)  # pretend the stream still has work queued

        monkeypatch.setattr(drv, "event_record", record)
        monkeypatch.setattr(drv, "event_query", lambda e: e not in pending and real_query(e))
        a = pool.malloc(2048, stream=s1)
        ptr = a.ptr
        a.free()
        b = pool.malloc(2048, stream=s2)
        assert b.ptr != ptr  # s1 may still be using the block
        c = pool.malloc(2048, stream=s1)
        assert c.ptr == ptr  # stream order makes it safe on s1
        c.free()
        pending.clear()  # s1's work finished
        d = pool.malloc(2048, stream=s2)
        assert d.ptr == ptr
        b.free()
        d.free()
    finally:
        drv.stream_destroy(s1)
        drv.stream_destroy(s2)


def test_out_of_memory_releases_the_cache_and_retries_once(pool, monkeypatch):
    drv = backend.api()
    cached = pool.malloc(1 << 16)
    cached.free()
    assert pool.stats()["cached_bytes"] == 1 << 16
    real_alloc = drv.mem_alloc
    calls = []

    def fail_once(n):
        calls.append(n)
        if len(calls) == 1:
            raise OutOfMemoryError(2, "cuMemAlloc_v2")
        return real_alloc(n)

    monkeypatch.setattr(drv, "mem_alloc", fail_once)
    blk = pool.malloc(3 << 20)
    assert blk.ptr and len(calls) == 2
    assert pool.stats()["cached_bytes"] == 0  # the cache was released before the retry


def test_out_of_memory_twice_raises_naming_the_request_and_the_pool(pool, monkeypatch):
    drv = backend.api()
    keep = pool.malloc(1000)

    def always_fail(n):
        raise OutOfMemoryError(2, "cuMemAlloc_v2")

    monkeypatch.setattr(drv, "mem_alloc", always_fail)
    with pytest.raises(OutOfMemoryError, match=r"requested 12345 bytes.*1024 bytes in use"):
        pool.malloc(12345)
    keep.free()


def test_stats_track_allocated_cached_and_peak(pool):
    a, b = pool.malloc(512), pool.malloc(3000)
    s = pool.stats()
    assert s["allocated_bytes"] == 512 + 3072 and s["peak_bytes"] == 3584
    assert s["in_use_blocks"] == 2 and s["cached_bytes"] == 0
    a.free()
    s = pool.stats()
    assert s["allocated_bytes"] == 3072 and s["cached_bytes"] == 512 and s["peak_bytes"] == 3584
    pool.free_all_cached()
    assert pool.stats()["cached_bytes"] == 0 and pool.stats()["cached_blocks"] == 0
    b.free()


def test_get_pool_is_one_pool_per_device():
    assert pool_mod.get_pool() is pool_mod.get_pool(0)
    import oxicuda

    x = oxicuda.zeros(100)
    assert x.memory is not None and x.memory.ptr == x.ptr


def _recording_event_record(monkeypatch):
    drv = backend.api()
    seen: list[int] = []
    real = drv.event_record

    def record(event, stream):
        seen.append(stream)
        return real(event, stream)

    monkeypatch.setattr(drv, "event_record", record)
    return seen


@pytest.mark.slow
def test_a_block_outliving_its_closed_stream_is_never_recorded_on_the_dead_handle(monkeypatch):
    # on the real driver cuEventRecord on a destroyed stream crashes the process (seen on the H200)
    import numpy as np

    import oxicuda
    from oxicuda.driver.stream import Stream

    seen = _recording_event_record(monkeypatch)
    s = Stream()
    handle = s.handle
    a = oxicuda.empty(1000, np.float32, stream=s)
    ptr = a.ptr
    s.close()
    del a
    gc.collect()
    assert handle not in seen
    cached = [blk for blocks in pool_mod.get_pool()._free.values() for blk in blocks if blk.ptr == ptr]
    assert [blk.stream for blk in cached] == [pool_mod._ANY_STREAM]  # any stream may take it now


@pytest.mark.slow
def test_a_foreign_stream_object_stays_alive_until_the_block_is_freed():
    import weakref

    import numpy as np

    import oxicuda
    from oxicuda.driver.stream import Stream

    class Foreign:  # another package's stream: only the CUDA stream protocol
        def __init__(self):
            self.inner = Stream()

        def __cuda_stream__(self):
            return (0, self.inner.handle)

    f = Foreign()
    ref = weakref.ref(f)
    a = oxicuda.empty(10, np.float32, stream=f)
    del f
    gc.collect()
    assert ref() is not None  # the block holds it: freeing records on a live stream
    del a
    gc.collect()
    assert ref() is None


@pytest.mark.slow
def test_cached_blocks_of_a_closed_stream_go_to_any_stream(monkeypatch):
    import numpy as np

    import oxicuda
    from oxicuda.driver.stream import Stream

    s = Stream()
    a = oxicuda.empty(3000, np.float32, stream=s)
    ptr = a.ptr
    del a
    gc.collect()
    s.close()
    t = Stream()
    b = oxicuda.empty(3000, np.float32, stream=t)
    assert b.ptr == ptr
