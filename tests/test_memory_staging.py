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
