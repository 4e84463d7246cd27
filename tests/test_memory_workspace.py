"""Workspaces: the same request gets the same memory; the cache is bounded."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from oxicuda.driver import backend
from oxicuda.memory import get_pool
from oxicuda.memory.workspace import clear_workspaces, workspace, workspace_ptr, workspace_stats

ws_mod = sys.modules["oxicuda.memory.workspace"]


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_workspaces()
    yield
    clear_workspaces()


def test_same_key_gives_the_same_pointer_without_allocating(monkeypatch):
    a = workspace((np.float32, 1000))
    assert a.shape == (1000,) and a.dtype == np.float32
    c = workspace(4000)
    assert c.dtype == np.uint8 and c.nbytes == 4000 and workspace(4000).ptr == c.ptr
    monkeypatch.setattr(backend.api(), "mem_alloc", lambda n: pytest.fail("allocated"))
    misses = get_pool().stats()["misses"]
    b = workspace(("float32", 1000))
    assert b.ptr == a.ptr
    assert get_pool().stats()["misses"] == misses


def test_workspace_ptr_is_the_address_of_the_same_entry(monkeypatch):
    p = workspace_ptr(("float32", 777))
    assert workspace((np.float32, 777)).ptr == p and workspace_stats()["entries"] == 1
    assert workspace_ptr(3108) != p  # another dtype (uint8 bytes), another entry
    monkeypatch.setattr(backend.api(), "mem_alloc", lambda n: pytest.fail("allocated"))
    assert workspace_ptr((np.dtype(np.float32), 777)) == p
    with pytest.raises(ValueError, match="element count"):
        workspace_ptr(("float32", -1))


@pytest.mark.slow
def test_different_keys_get_different_memory():
    drv = backend.api()
    s = drv.stream_create()
    try:
        a = workspace((np.float32, 256))
        assert workspace((np.float32, 257)).ptr != a.ptr
        assert workspace((np.float64, 256)).ptr != a.ptr
        assert workspace((np.float32, 256), stream=s).ptr != a.ptr
    finally:
        clear_workspaces()
        gc.collect()
        drv.stream_destroy(s)


def test_workspace_memory_is_usable(rng):
    w = workspace((np.int32, 77))
    host = rng.integers(-100, 100, 77).astype(np.int32)
    w.set(host)
    np.testing.assert_array_equal(workspace((np.int32, 77)).get(), host)


@pytest.mark.slow
def test_the_cache_is_bounded_and_evicted_blocks_live_while_used(monkeypatch):
    monkeypatch.setattr(ws_mod, "MAX_ENTRIES", 3)
    held = workspace((np.uint8, 1024))
    held.fill(7)
    for n in range(1, 6):
        workspace((np.uint8, 1024 * (n + 1)))
    assert workspace_stats()["entries"] == 3
    gc.collect()
    # the evicted first entry is still held: its memory was not handed out again
    np.testing.assert_array_equal(held.get(), np.full(1024, 7, np.uint8))
    again = workspace((np.uint8, 1024))  # a new entry: the held block is not handed out
    assert again.ptr != held.ptr
    cached = get_pool().stats()["cached_bytes"]
    del held
    gc.collect()
    assert get_pool().stats()["cached_bytes"] == cached + 1024  # back to the pool once unused


def test_bad_requests_raise():
    with pytest.raises(TypeError, match="nbytes"):
        workspace("big")
    with pytest.raises(ValueError, match=">= 0"):
        workspace((np.float32, -1))
    with pytest.raises(TypeError, match="allowed dtypes"):
        workspace(("object", 3))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["clear", "evict"])
def test_entries_of_a_stream_known_only_by_handle_never_record_on_it_after_they_go(monkeypatch, how):
    # a foreign stream passed as an int (cublas.setStream(handle, cupy_stream.ptr)) may be
    # destroyed while its entry is cached; the pool's free event must not go on it (on the H200
    # cuEventRecord on a destroyed stream killed a test worker through clear_workspaces)
    from oxicuda.driver.context import ensure_context

    ensure_context()
    drv = backend.api()
    s = drv.stream_create()
    seen: list[int] = []
    real_record = drv.event_record
    monkeypatch.setattr(drv, "event_record", lambda ev, st: (seen.append(st), real_record(ev, st))[1])
    view = workspace((np.float32, 777), stream=s)
    ptr = view.ptr
    syncs = []
    real_sync = drv.ctx_synchronize
    monkeypatch.setattr(drv, "ctx_synchronize", lambda: (syncs.append(1), real_sync())[1])
    del view
    if how == "clear":
        clear_workspaces()
    else:
        monkeypatch.setattr(ws_mod, "MAX_ENTRIES", 1)
        workspace((np.float32, 5))  # pushes the stream's entry out
    drv.stream_destroy(s)
    gc.collect()
    assert syncs, "the entries' work must be finished before their blocks are detached"
    assert s not in seen
    cached = [blk for blocks in get_pool()._free.values() for blk in blocks if blk.ptr == ptr]
    assert len(cached) == 1 and cached[0].stream == -1  # any stream may take it
