"""Host<->device copies of contiguous bytes, large ones through pinned staging memory.

A pageable numpy array cannot be copied asynchronously: the driver stages it internally, one
copy at a time. ``StagingBuffer`` owns page-locked memory and moves a large array in chunks of
``CHUNK_BYTES`` with ``COPY_WORKERS`` threads. Worker ``t`` takes chunks ``t``, ``t + workers``,
... and moves each through its own two pinned slots: it copies between the array and a slot on
the host (numpy releases the GIL) and issues the asynchronous driver copy of that slot on the
caller's stream, double buffered, so host copies of all workers and the device's copies overlap
and no worker waits for another. An event recorded after each slot's copy says when the slot may
be reused.

Why workers: one thread's memcpy between pageable and pinned memory is the limit on the H200
machine (about 9 GB/s). ``benches/sweep_staging.py`` on the H200 (results in
``benches/results/2026-11-30-h200-session5``): 256 MiB with 8 workers and 4 MiB chunks moved at
46.7 GB/s host-to-device and 39.0 GB/s device-to-host (1 worker: 8.6 and 7.8; pinned memory
itself: 55 GB/s; plain copies of the pageable array: 7.3 and 10.9). The previous design, 4
threads splitting each 8 MiB chunk with a barrier per chunk, measured 13 GB/s both ways there.
Staging beat plain copies from 8 MiB on (8 MiB: 14.6 against 11.4 GB/s host-to-device; 4 MiB:
8.9 against 10.3), hence the threshold.

``STAGING_THRESHOLD_BYTES`` decides which copies go through it (tests lower it to exercise the
path). One buffer per device, made on first use; it holds ``2 * workers * chunk`` bytes pinned.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..driver.backend import api
from ..driver.context import current_device_ordinal, ensure_context
from . import capture as _capture

#: bytes per pinned slot (each worker has two)
CHUNK_BYTES = 4 << 20
#: copies of at least this many bytes use the staging buffer
STAGING_THRESHOLD_BYTES = 8 << 20
#: worker threads per staging buffer (the calling thread is worker 0)
COPY_WORKERS = max(1, min(8, (os.cpu_count() or 1)))


class StagingBuffer:
    """Pinned slots (two per worker, ``chunk_bytes`` each) and the workers that move large copies
    of one device through them. Copies through one buffer are serialized by ``lock``."""

    def __init__(self, chunk_bytes: int = CHUNK_BYTES, workers: int | None = None) -> None:
        workers = COPY_WORKERS if workers is None else workers
        if chunk_bytes <= 0 or workers <= 0:
            raise ValueError(f"chunk_bytes={chunk_bytes}, workers={workers}; both must be > 0")
        ensure_context()
        drv = api()
        self.chunk_bytes = int(chunk_bytes)
        self.workers = int(workers)
        self._hptr, view = drv.mem_alloc_host(2 * self.workers * self.chunk_bytes)
        host = np.frombuffer(view, dtype=np.uint8)
        c = self.chunk_bytes
        self._slots = [host[i * c:(i + 1) * c] for i in range(2 * self.workers)]
        self._events = [drv.event_create(2) for _ in range(2 * self.workers)]  # 2 = DISABLE_TIMING
        self._pool = (ThreadPoolExecutor(self.workers - 1, thread_name_prefix="oxicuda-staging")
                      if self.workers > 1 else None)
        self.lock = threading.Lock()

    def close(self) -> None:
        """Stop the workers, free the pinned memory and the events (a buffer made by hand; the
        per-device buffers of ``get_staging_buffer`` live as long as the process). Idempotent."""
        with self.lock:
            if self._hptr is None:
                return
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            drv = api()
            for event in self._events:
                drv.event_synchronize(event)
                drv.event_destroy(event)
            drv.mem_free_host(self._hptr)
            self._hptr = None
            self._slots = self._events = []

    def upload(self, dst: int, host: np.ndarray, stream: int = 0) -> None:
        """Copy the bytes of contiguous ``host`` to device address ``dst``; returns when done."""
        src = _as_bytes(host)
        drv, chunk = api(), self.chunk_bytes
        starts = range(0, src.size, chunk)

        def work(t: int) -> None:
            slots, events, base = self._slots, self._events, self._hptr
            for j, i in enumerate(range(t, len(starts), self.workers)):
                s = 2 * t + (j & 1)
                if j >= 2:
                    drv.event_synchronize(events[s])  # the slot's last copy has left it
                off = starts[i]
                n = min(chunk, src.size - off)
                slots[s][:n] = src[off:off + n]
                drv.memcpy_htod(dst + off, base + s * chunk, n, stream)
                drv.event_record(events[s], stream)

        self._run(len(starts), work, stream)

    def download(self, host: np.ndarray, src: int, stream: int = 0) -> None:
        """Copy ``host.nbytes`` bytes from device address ``src`` into contiguous ``host``."""
        dst = _as_bytes(host)
        drv, chunk = api(), self.chunk_bytes
        starts = range(0, dst.size, chunk)

        def work(t: int) -> None:
            slots, events, base = self._slots, self._events, self._hptr
            mine = range(t, len(starts), self.workers)

            def issue(j: int) -> None:
                s, off = 2 * t + (j & 1), starts[mine[j]]
                drv.memcpy_dtoh(base + s * chunk, src + off, min(chunk, dst.size - off), stream)
                drv.event_record(events[s], stream)

            if mine:
                issue(0)
            for j, i in enumerate(mine):
                if j + 1 < len(mine):
                    issue(j + 1)  # into the other slot, drained in the previous iteration
                s, off = 2 * t + (j & 1), starts[i]
                n = min(chunk, dst.size - off)
                drv.event_synchronize(events[s])
                dst[off:off + n] = slots[s][:n]

        self._run(len(starts), work, stream)

    def _run(self, chunks: int, work: Callable[[int], None], stream: int) -> None:
        """Run ``work(t)`` for the workers that have chunks (worker 0 on this thread, the others
        in the pool, in this thread's context), wait for all of them and for every copy they
        issued, then raise the first error any of them met."""
        if chunks == 0:
            return
        drv = api()
        with self.lock:
            if self._hptr is None:
                raise RuntimeError("this StagingBuffer was closed; get_staging_buffer() gives a live one")
            ctx = ensure_context()

            def in_context(t: int) -> None:
                drv.ctx_set_current(ctx)
                work(t)

            futures, inline = [], []
            for t in range(1, min(self.workers, chunks)):
                try:
                    futures.append(self._pool.submit(in_context, t))
                except RuntimeError:  # no new threads at interpreter exit: this thread does it
                    inline.append(t)
            error: BaseException | None = None
            try:
                for t in (0, *inline):
                    work(t)
            except BaseException as exc:
                error = exc
            for future in futures:
                try:
                    future.result()
                except BaseException as exc:
                    error = error or exc
            try:  # no copy may still read or write a slot (or the array) after this returns
                drv.stream_synchronize(stream)
            except BaseException:
                if error is None:
                    raise
            if error is not None:
                raise error


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
    if _capture.ACTIVE:
        _capture.check_host_copy(stream, f"a host-to-device upload of {nbytes} bytes")
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
    if _capture.ACTIVE:
        _capture.check_host_copy(stream, f"a device-to-host read-back of {nbytes} bytes")
    if nbytes >= STAGING_THRESHOLD_BYTES:
        get_staging_buffer().download(host, src, stream)
        return
    drv = api()
    if stream:
        drv.memcpy_dtoh(host.ctypes.data, src, nbytes, stream)
        drv.stream_synchronize(stream)
    else:
        drv.memcpy_dtoh(host.ctypes.data, src, nbytes)
