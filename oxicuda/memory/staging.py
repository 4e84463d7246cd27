"""Host<->device copies of contiguous bytes, large ones through a pinned staging buffer.

A pageable numpy array cannot be copied asynchronously: the driver stages it internally, one
copy at a time. ``StagingBuffer`` owns page-locked memory (two halves of ``CHUNK_BYTES``) and moves
a large array in chunks: while the device copies one half, the host fills (or drains) the other.
An event recorded after each chunk's copy says when its half may be reused.

``STAGING_THRESHOLD_BYTES`` decides which copies go through it (a module constant, to be set from
measurements; tests lower it to exercise the path). One buffer per device, made on first use.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..driver.backend import api
from ..driver.context import current_device_ordinal, ensure_context

#: bytes per half of the pinned buffer
CHUNK_BYTES = 8 << 20
#: copies of at least this many bytes use the staging buffer
STAGING_THRESHOLD_BYTES = 16 << 20
#: threads that copy between pageable memory and a pinned half; one thread's memcpy was the
#: limit on the H200 machine (7.1 GB/s staged against 55 GB/s from pinned memory, 2026-11-29)
COPY_THREADS = max(1, min(4, (os.cpu_count() or 1)))

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _copy_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(COPY_THREADS, thread_name_prefix="oxicuda-staging")
    return _pool


def _parallel_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[:] = src`` for equal-length uint8 vectors, split across COPY_THREADS threads
    (numpy releases the GIL while it copies)."""
    n = dst.size
    if COPY_THREADS == 1 or n < (1 << 20):
        dst[:] = src
        return
    step = -(-n // COPY_THREADS)
    parts = [(dst[i:i + step], src[i:i + step]) for i in range(0, n, step)]

    def copy(part: tuple[np.ndarray, np.ndarray]) -> None:
        part[0][:] = part[1]

    for _ in _copy_pool().map(copy, parts):
        pass


class StagingBuffer:
    """Two pinned halves of ``chunk_bytes`` each, reused by every large copy of one device."""

    def __init__(self, chunk_bytes: int = CHUNK_BYTES) -> None:
        if chunk_bytes <= 0:
            raise ValueError(f"chunk_bytes={chunk_bytes}; it must be > 0")
        ensure_context()
        drv = api()
        self.chunk_bytes = int(chunk_bytes)
        self._hptr, view = drv.mem_alloc_host(2 * self.chunk_bytes)
        host = np.frombuffer(view, dtype=np.uint8)
        self._halves = (host[: self.chunk_bytes], host[self.chunk_bytes:])
        self._half_ptrs = (self._hptr, self._hptr + self.chunk_bytes)
        self._events = (drv.event_create(2), drv.event_create(2))  # 2 = DISABLE_TIMING
        self.lock = threading.Lock()

    def upload(self, dst: int, host: np.ndarray, stream: int = 0) -> None:
        """Copy the bytes of contiguous ``host`` to device address ``dst``; returns when done."""
        src = _as_bytes(host)
        drv = api()
        pending = [False, False]
        with self.lock:
            for i, off in enumerate(range(0, src.size, self.chunk_bytes)):
                h = i & 1
                n = min(self.chunk_bytes, src.size - off)
                if pending[h]:
                    drv.event_synchronize(self._events[h])  # its last copy has left the half
                _parallel_copy(self._halves[h][:n], src[off: off + n])
                drv.memcpy_htod(dst + off, self._half_ptrs[h], n, stream)
                drv.event_record(self._events[h], stream)
                pending[h] = True
            drv.stream_synchronize(stream)

    def download(self, host: np.ndarray, src: int, stream: int = 0) -> None:
        """Copy ``host.nbytes`` bytes from device address ``src`` into contiguous ``host``."""
        dst = _as_bytes(host)
        drv = api()
        offsets = list(range(0, dst.size, self.chunk_bytes))
        with self.lock:

            def issue(i: int) -> None:
                off = offsets[i]
                n = min(self.chunk_bytes, dst.size - off)
                drv.memcpy_dtoh(self._half_ptrs[i & 1], src + off, n, stream)
                drv.event_record(self._events[i & 1], stream)

            if offsets:
                issue(0)
            for i, off in enumerate(offsets):
                if i + 1 < len(offsets):
                    issue(i + 1)  # the other half was drained in the previous iteration
                n = min(self.chunk_bytes, dst.size - off)
                drv.event_synchronize(self._events[i & 1])
                _parallel_copy(dst[off: off + n], self._halves[i & 1][:n])


def _as_bytes(a: np.ndarray) -> np.ndarray:
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        raise ValueError("staging copies need a contiguous host array; got a strided one")
    return a.reshape(-1, order="A").view(np.uint8) if a.ndim else a.reshape(1).view(np.uint8)


_buffers: dict[int, StagingBuffer] = {}
_buffers_lock = threading.Lock()


def get_staging_buffer(device: int | None = None) -> StagingBuffer:
    """The staging buffer of ``device`` (default: the current device), made on first use."""
    if device is None:
        device = current_device_ordinal()
    buf = _buffers.get(device)
    if buf is None:
        with _buffers_lock:
            buf = _buffers.get(device)
            if buf is None:
                buf = _buffers[device] = StagingBuffer()
    return buf


def copy_host_to_device(dst: int, host: np.ndarray, stream: int = 0) -> None:
    """Copy contiguous ``host`` to ``dst``; returns once the host array may be reused."""
    nbytes = host.nbytes
    if nbytes == 0:
        return
    if nbytes >= STAGING_THRESHOLD_BYTES:
        get_staging_buffer().upload(dst, host, stream)
        return
    drv = api()
    if stream:
        drv.memcpy_htod(dst, host.ctypes.data, nbytes, stream)
        drv.stream_synchronize(stream)
    else:
        drv.memcpy_htod(dst, host.ctypes.data, nbytes)


def copy_device_to_host(host: np.ndarray, src: int, stream: int = 0) -> None:
    """Copy ``host.nbytes`` bytes from ``src`` into contiguous ``host``; returns once landed."""
    nbytes = host.nbytes
    if nbytes == 0:
        return
    if nbytes >= STAGING_THRESHOLD_BYTES:
        get_staging_buffer().download(host, src, stream)
        return
    drv = api()
    if stream:
        drv.memcpy_dtoh(host.ctypes.data, src, nbytes, stream)
        drv.stream_synchronize(stream)
    else:
        drv.memcpy_dtoh(host.ctypes.data, src, nbytes)
