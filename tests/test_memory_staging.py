"""Large transfers through the pinned staging buffer round-trip bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.driver import backend
from oxicuda.memory import staging


@pytest.fixture
def small_chunks(monkeypatch):
    """A private 1 MiB-chunk buffer and a low threshold, so modest arrays take the staged path."""
    buf = staging.StagingBuffer(chunk_bytes=1 << 20)
    monkeypatch.setattr(staging, "get_staging_buffer", lambda device=None: buf)
    monkeypatch.setattr(staging, "STAGING_THRESHOLD_BYTES", 1 << 16)
    return buf


def test_twenty_mib_round_trip_through_the_default_buffer_is_bit_exact(rng):
    n = (20 << 20) // 4 + 3  # 20 MiB and a bit: not a multiple of the 8 MiB chunk
    host = rng.integers(0, 1 << 32, n, dtype=np.uint32).view(np.float32)
    assert host.nbytes >= staging.STAGING_THRESHOLD_BYTES
    dev = oxicuda.asarray(host)
    back = dev.get()
    assert back.tobytes() == host.tobytes()


def test_staged_copies_use_chunks_and_events(rng, small_chunks, monkeypatch):
    drv = backend.api()
    calls = {"htod": 0, "dtoh": 0}
    real_htod, real_dtoh = drv.memcpy_htod, drv.memcpy_dtoh

    def htod(dst, src, n, stream=None):
        calls["htod"] += 1
        assert n <= small_chunks.chunk_bytes
        return real_htod(dst, src, n, stream)

    def dtoh(dst, src, n, stream=None):
        calls["dtoh"] += 1
        assert n <= small_chunks.chunk_bytes
        return real_dtoh(dst, src, n, stream)

    monkeypatch.setattr(drv, "memcpy_htod", htod)
    monkeypatch.setattr(drv, "memcpy_dtoh", dtoh)
    host = rng.standard_normal((1000, 700))  # 5.34 MiB: 6 chunks, the last one partial
    dev = oxicuda.asarray(np.asfortranarray(host))
    back = dev.get()
    assert calls == {"htod": 6, "dtoh": 6}
    assert back.flags.f_contiguous and np.array_equal(back, host)


def test_staged_copies_on_a_created_stream(rng, small_chunks):
    stream = oxicuda.Stream()
    host = rng.integers(-(1 << 15), 1 << 15, (3, 1 << 19), dtype=np.int16)
    dev = oxicuda.asarray(host, stream=stream)
    assert dev.stream == stream.handle != 0
    np.testing.assert_array_equal(dev.get(stream=stream), host)
    np.testing.assert_array_equal(dev[1:, ::2].get(), host[1:, ::2])


def test_a_closed_buffer_refuses_copies_and_a_second_close_is_harmless(rng):
    buf = staging.StagingBuffer(chunk_bytes=1 << 16)
    host = rng.integers(0, 256, 3 << 16, dtype=np.uint8)
    dev = oxicuda.empty(host.size, np.uint8)
    buf.upload(dev.ptr, host)
    back = np.zeros_like(host)
    buf.download(back, dev.ptr)
    assert np.array_equal(back, host)
    buf.close()
    buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        buf.upload(dev.ptr, host)
    with pytest.raises(RuntimeError, match="closed"):
        buf.download(back, dev.ptr)


def test_the_staging_sweep_script_runs_and_checks_its_copies(tmp_path, capsys):
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benches" / "sweep_staging.py"
    spec = importlib.util.spec_from_file_location("sweep_staging", path)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    assert sweep.main(["--tiny", "--json", str(tmp_path / "s.json")]) == 0
    rows = json.loads((tmp_path / "s.json").read_text())["rows"]
    kinds = {(r["kind"], r["direction"]) for r in rows}
    assert {("plain", "h2d"), ("pinned", "d2h"), ("staging", "h2d"), ("staging", "d2h")} <= kinds
    assert all(r["GB/s"] > 0 for r in rows)


@pytest.mark.parametrize("workers", [1, 3, 5])
def test_every_worker_count_moves_every_chunk_exactly(rng, workers):
    """Workers take every ``workers``-th chunk through their own two slots: with 1, 3 and 5
    workers, more and fewer chunks than workers and a partial last chunk, every byte lands."""
    buf = staging.StagingBuffer(chunk_bytes=1 << 16, workers=workers)
    try:
        for nbytes in (1, (1 << 16) - 3, 2 << 16, (11 << 16) + 5):
            host = rng.integers(0, 256, nbytes, dtype=np.uint8)
            dev = oxicuda.asarray(np.full(nbytes, 0xA5, np.uint8))  # poisoned first
            buf.upload(dev.ptr, host)
            assert np.array_equal(dev.get(), host)
            back = np.full(nbytes, 0x5A, np.uint8)
            buf.download(back, dev.ptr)
            assert np.array_equal(back, host)
    finally:
        buf.close()


def test_a_worker_that_fails_raises_its_error_and_the_buffer_still_works(rng, monkeypatch):
    drv = backend.api()
    buf = staging.StagingBuffer(chunk_bytes=1 << 16, workers=3)
    host = rng.integers(0, 256, 9 << 16, dtype=np.uint8)
    dev = oxicuda.empty(host.size, np.uint8)
    real = drv.memcpy_htod
    calls = []

    def failing(dst, src, n, stream=None):
        calls.append(dst)
        if len(calls) == 5:
            raise RuntimeError("injected copy failure")
        return real(dst, src, n, stream)

    monkeypatch.setattr(drv, "memcpy_htod", failing)
    try:
        with pytest.raises(RuntimeError, match="injected copy failure"):
            buf.upload(dev.ptr, host)
        monkeypatch.setattr(drv, "memcpy_htod", real)
        buf.upload(dev.ptr, host)
        assert np.array_equal(dev.get(), host)
    finally:
        buf.close()


def test_without_worker_threads_the_calling_thread_moves_every_chunk(rng, monkeypatch):
    """At interpreter exit the pool refuses new work (RuntimeError); a copy made then (an array's
    .get() in an atexit hook) still moves every chunk, on the calling thread."""
    buf = staging.StagingBuffer(chunk_bytes=1 << 16, workers=4)
    try:
        def refuse(*args, **kwargs):
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

        monkeypatch.setattr(buf._pool, "submit", refuse)
        host = rng.integers(0, 256, (9 << 16) + 7, dtype=np.uint8)
        dev = oxicuda.asarray(np.zeros(host.size, np.uint8))
        buf.upload(dev.ptr, host)
        back = np.zeros_like(host)
        buf.download(back, dev.ptr)
        assert np.array_equal(back, host) and np.array_equal(dev.get(), host)
    finally:
        monkeypatch.undo()
        buf.close()
