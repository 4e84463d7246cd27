"""A caching device allocator: one ``MemoryPool`` per device.

cuMemAlloc and cuMemFree are slow and cuMemFree synchronizes the device, so freed blocks stay in
the pool and are handed out again.

Buckets. A request is rounded up to its bucket size, and a cached block is reused only for a
request of exactly the same bucket size:
- up to 1 MiB: multiples of 512 B;
- above 1 MiB: multiples of one eighth of the largest power of two not above the size (at most
  12.5% slack), with that step capped at 2 MiB (so sizes from 16 MiB up round to 2 MiB multiples).

Streams. Every block remembers the stream it was last used on (the stream it was allocated for).
When it is freed, an event is recorded on that stream. The block is reusable at once by requests
on the same stream (stream order makes that safe) and by requests on any other stream only once
that event has completed (checked with ``event_query``; the pool never blocks on it).

Extents. The pool records each block's requested size (``nbytes``) and tells the driver seam
(``mem_set_extent``): the real driver ignores it, the emulator then faults on any access past the
requested bytes (and on any access to a cached, freed block), not only past the bucket. The
BLAS pointer checks read the same extents (``live_block_size``, ``block_extent``).

Size 0 allocates nothing: the block has ``ptr == 0`` (as in CuPy).

Out of memory: the pool synchronizes the context, frees every cached block and retries once; if
that fails too it raises ``OutOfMemoryError`` naming the request and the pool statistics.

Graph capture: while ``oxicuda.graph`` captures, allocations for a capturing stream come from
the graph's reserve and blocks freed on it go back there (``oxicuda.memory.capture``).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from dataclasses import dataclass

from ..driver import stream as _stream_module
from ..driver.backend import api
from ..driver.context import current_device_ordinal, ensure_context
from ..driver.errors import OutOfMemoryError
from . import capture as _capture

SMALL_LIMIT = 1 << 20  # up to here: 512-byte granularity
SMALL_STEP = 512
LARGE_STEP_CAP = 2 << 20


def bucket_size(nbytes: int) -> int:
    """The size a request of ``nbytes`` is rounded up to (see the module docstring)."""
    if nbytes <= 0:
        return 0
    if nbytes <= SMALL_LIMIT:
        step = SMALL_STEP
    else:
        step = min(LARGE_STEP_CAP, (1 << (nbytes.bit_length() - 1)) >> 3)
    return -(-nbytes // step) * step


@dataclass
class _FreeBlock:
    ptr: int
    stream: int
    event: int  # recorded on ``stream`` when the block was freed; _NO_EVENT for none


_NO_EVENT = -1
#: the ``stream`` of a cached block whose stream was destroyed after finishing its work: any
#: stream may take it (no real handle is negative)
_ANY_STREAM = -1


class MemoryBlock:
    """One allocation from a pool: ``ptr`` (device address), ``size`` (bucket bytes) and
    ``nbytes`` (bytes requested).

    It returns to its pool when it is garbage collected (``weakref.finalize``) or when ``free()``
    is called, whichever comes first; an explicit second ``free()`` raises RuntimeError. After
    ``free()``, ``released`` is True and every array over the block refuses to be used.
    """

    __slots__ = (
        "__weakref__",
        "_finalizer",
        "device",
        "nbytes",
        "ptr",
        "released",
        "size",
        "stream",
    )

    def __init__(self, pool: MemoryPool, ptr: int, size: int, nbytes: int, stream: int,
                 keepalive: object = None) -> None:
        self.ptr = ptr
        self.size = size
        self.nbytes = nbytes
        self.stream = stream
        self.device = pool.device
        self.released = False
        self._finalizer = None
        if size:
            # ``keepalive`` (a foreign stream object) lives until the block is given back, so the
            # event recorded then is recorded on a live stream
            self._finalizer = weakref.finalize(self, pool._give_back, ptr, size, stream, keepalive)
            self._finalizer.atexit = False  # the driver may be gone at interpreter exit

    @property
    def alive(self) -> bool:
        """False once the block went back to its pool (a 0-byte block is always alive)."""
        return self._finalizer is None or self._finalizer.alive

    def free(self) -> None:
        """Return the block to its pool now. Raises RuntimeError if it was already freed."""
        if self.size == 0:
            return
        if not self._finalizer.alive:
            raise RuntimeError(f"double free of device block at 0x{self.ptr:x} ({self.size} bytes)")
        self.released = True
        self._finalizer()

    def __repr__(self) -> str:
        state = "live" if self.alive else "freed"
        return f"MemoryBlock(ptr=0x{self.ptr:x}, size={self.size}, stream={self.stream}, {state})"


class MemoryPool:
    """The caching allocator of one device (see the module docstring)."""

    def __init__(self, device: int) -> None:
        self.device = device
        self._lock = threading.RLock()
        self._free: dict[int, list[_FreeBlock]] = {}  # bucket size -> cached blocks
        self._spare_events: list[int] = []
        self._in_use: dict[int, tuple[int, int, int]] = {}  # ptr -> (bucket size, stream, nbytes)
        self._cached_ptrs: set[int] = set()  # the ptr of every block in _free
        self._retired: set[int] = set()  # destroyed stream handles whose blocks are all done
        self._detached: set[int] = set()  # in-use blocks to cache without an event (see detach)
        self._held_by_foreign_graphs: list[tuple[int, int]] = []
        self._allocated = 0
        self._cached = 0
        self._peak = 0
        self._hits = 0
        self._misses = 0

    # -- allocation ---------------------------------------------------------------------------
    def malloc(self, nbytes: int, stream: int = 0, keepalive: object = None) -> MemoryBlock:
        """A block of at least ``nbytes`` bytes for use on ``stream`` (a stream handle)."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"malloc: nbytes={nbytes}; it must be >= 0")
        size = bucket_size(nbytes)
        if size == 0:
            return MemoryBlock(self, 0, 0, 0, stream)
        with self._lock:
            reserve = _capture.reserve_for(stream) if _capture.ACTIVE else None
            if reserve is not None and reserve.stream_ordered:
                return self._malloc_async(reserve, size, nbytes, stream, keepalive)
            ptr = reserve.take(stream, size) if reserve is not None else 0
            if not ptr:
                ptr = self._take_cached(size, stream)
            if ptr:
                self._hits += 1
            else:
                self._misses += 1
                if reserve is None and stream:
                    _refuse_in_foreign_capture(stream, nbytes)
                ptr = self._alloc_fresh(size, nbytes)
            if reserve is not None:  # the graph's block; replays may use all of it
                _capture.OWNER[ptr] = reserve
                reserve.owned.add(ptr)
                nbytes_seen = size
            else:
                nbytes_seen = nbytes
            api().mem_set_extent(ptr, nbytes_seen)
            self._in_use[ptr] = (size, stream, nbytes)
            self._allocated += size
            self._peak = max(self._peak, self._allocated)
        return MemoryBlock(self, ptr, size, nbytes, stream, keepalive)

    def _malloc_async(self, reserve, size: int, nbytes: int, stream: int,
                      keepalive: object) -> MemoryBlock:
        """An allocation node of the graph being captured (cuMemAllocAsync on its stream)."""
        ptr = api().mem_alloc_async(size, stream)
        _capture.OWNER[ptr] = reserve
        reserve.owned.add(ptr)
        reserve.async_ptrs.add(ptr)
        self._misses += 1
        self._in_use[ptr] = (size, stream, nbytes)
        self._allocated += size
        self._peak = max(self._peak, self._allocated)
        return MemoryBlock(self, ptr, size, nbytes, stream, keepalive)

    def _take_cached(self, size: int, stream: int) -> int:
        blocks = self._free.get(size)
        if not blocks:
            return 0
        chosen = None
        for i, blk in enumerate(blocks):  # same stream first (always safe), or a finished one
            if blk.stream == stream or blk.stream == _ANY_STREAM:
                chosen = i
                break
        if chosen is None:
            drv = api()
            for i, blk in enumerate(blocks):
                if blk.event != _NO_EVENT and drv.event_query(blk.event):
                    chosen = i
                    break
        if chosen is None:
            return 0
        blk = blocks.pop(chosen)
        self._cached_ptrs.discard(blk.ptr)
        if blk.event != _NO_EVENT:
            self._spare_events.append(blk.event)
        self._cached -= size
        return blk.ptr

    def _alloc_fresh(self, size: int, nbytes: int) -> int:
        ensure_context()
        drv = api()
        try:
            return _capture.relaxed(drv.mem_alloc, size)
        except OutOfMemoryError:
            if _capture.ACTIVE:  # no synchronizing during a capture: report at once
                raise
            drv.ctx_synchronize()
            self.free_all_cached()
        try:
            return drv.mem_alloc(size)
        except OutOfMemoryError as exc:
            s = self.stats()
            raise OutOfMemoryError(
                exc.code,
                "MemoryPool.malloc",
                f"requested {nbytes} bytes (bucket {size}) on device {self.device} after releasing "
                f"the cache; pool: {s['allocated_bytes']} bytes in use in {s['in_use_blocks']} "
                f"blocks, peak {s['peak_bytes']}",
            ) from exc

    # -- release ------------------------------------------------------------------------------
    def _give_back(self, ptr: int, size: int, stream: int, keepalive: object = None) -> None:
        with self._lock:
            if self._in_use.pop(ptr, None) is None:
                raise RuntimeError(f"double free of device block at 0x{ptr:x} ({size} bytes)")
            self._allocated -= size
            if _capture.OWNER or _capture.ACTIVE:
                owner = _capture.OWNER.get(ptr)
                if owner is None and _capture.ACTIVE and ptr not in self._detached:
                    # freed on a capturing stream: the graph's (a detached block's stream may
                    # be gone, so it is never asked about)
                    owner = _capture.reserve_for(stream)
                    if owner is not None:
                        _capture.OWNER[ptr] = owner
                        owner.owned.add(ptr)
                if owner is not None and ptr in owner.async_ptrs:  # the driver's: a free node
                    del _capture.OWNER[ptr]          # while capturing, an eager free after
                    owner.owned.discard(ptr)
                    owner.async_ptrs.discard(ptr)
                    with contextlib.suppress(Exception):
                        api().mem_free_async(ptr, stream)
                    return
                if owner is not None:
                    if owner.alive:  # replays still use it: only the graph may reuse it
                        owner.give(ptr, stream, size)
                        return
                    del _capture.OWNER[ptr]
                    owner.owned.discard(ptr)
                    stream = owner.last_stream
            if (stream and stream not in self._retired and ptr not in self._detached
                    and _foreign_capturing(stream)):
                # freed during a capture oxicuda did not begin: that graph may use the block at
                # every replay and its lifetime is unknown here, so it is never handed out again
                self._held_by_foreign_graphs.append((ptr, size))
                return
            with contextlib.suppress(Exception):  # the driver may be going away (interpreter exit)
                api().mem_set_extent(ptr, 0)  # a cached block: the emulator faults on any access
            if stream in self._retired or ptr in self._detached:  # its stream's work is done
                self._detached.discard(ptr)
                stream, event = _ANY_STREAM, _NO_EVENT
            else:
                event = self._record_event(stream)
            self._free.setdefault(size, []).append(_FreeBlock(ptr, stream, event))
            self._cached_ptrs.add(ptr)
            self._cached += size

    def cache_block(self, ptr: int, size: int, stream: int) -> None:
        """Cache a block that is no longer in use (a released graph's), reusable on ``stream`` at
        once and elsewhere after an event recorded on it now."""
        with self._lock:
            capturing = _capture.reserve_for(stream) if _capture.ACTIVE else None
            if capturing is not None:  # no event in a capture: that capture's graph takes it
                _capture.OWNER[ptr] = capturing
                capturing.owned.add(ptr)
                capturing.give(ptr, stream, size)
                return
            with contextlib.suppress(Exception):
                api().mem_set_extent(ptr, 0)
            event = _NO_EVENT if stream in self._retired else self._record_event(stream)
            self._free.setdefault(size, []).append(_FreeBlock(ptr, stream, event))
            self._cached_ptrs.add(ptr)
            self._cached += size

    def retire_stream(self, handle: int) -> None:
        """``handle`` is about to be destroyed: if blocks of this pool belong to it, wait for its
        work, let any stream take its cached blocks, and never record an event on it again."""
        if handle == 0:
            return
        with self._lock:
            live = any(s == handle for _, s, _ in self._in_use.values())
            cached = [b for blocks in self._free.values() for b in blocks if b.stream == handle]
            if not live and not cached:
                return
            api().stream_synchronize(handle)
            for blk in cached:
                blk.stream = _ANY_STREAM
            if live:
                self._retired.add(handle)

    def detach(self, ptr: int) -> None:
        """The in-use block at ``ptr`` had all its work finished (the caller synchronized the
        context): when it is freed, cache it for any stream without recording an event on its
        stream, which may be gone by then (a foreign stream known only by its handle)."""
        with self._lock:
            if ptr in self._in_use:
                self._detached.add(ptr)

    def stream_created(self, handle: int) -> None:
        """A new stream got ``handle``: a dead stream's handle may be reused by the driver."""
        with self._lock:
            self._retired.discard(handle)

    def _record_event(self, stream: int) -> int:
        try:
            ensure_context()
            drv = api()
            event = self._spare_events.pop() if self._spare_events else drv.event_create(2)
            drv.event_record(event, stream)  # 2 = CU_EVENT_DISABLE_TIMING
            return event
        except Exception:
            # without an event the block is only handed out again on its own stream
            return _NO_EVENT

    def free(self, block: MemoryBlock) -> None:
        """Return ``block`` to the pool (same as ``block.free()``)."""
        block.free()

    # -- CuPy's MemoryPool surface -----------------------------------------------------------
    def used_bytes(self) -> int:
        """Bytes held by live blocks (bucket sizes), as CuPy's ``MemoryPool.used_bytes``."""
        return self._allocated

    def free_bytes(self) -> int:
        """Bytes held by cached (freed, reusable) blocks."""
        return self._cached

    def total_bytes(self) -> int:
        """Bytes the pool holds from the driver: ``used_bytes() + free_bytes()``."""
        with self._lock:
            return self._allocated + self._cached

    def n_free_blocks(self) -> int:
        """How many cached blocks the pool holds."""
        with self._lock:
            return sum(len(b) for b in self._free.values())

    def free_all_blocks(self) -> None:
        """Give every cached block back to the driver (CuPy's name for ``free_all_cached``);
        blocks in use stay."""
        self.free_all_cached()

    def block_extent(self, ptr: int) -> int | None:
        """The requested bytes of the block starting at ``ptr``: its ``nbytes`` when in use, 0
        when cached (freed), None when this pool has no block there."""
        hit = self._in_use.get(ptr)
        if hit is not None:
            return hit[2]
        return 0 if ptr in self._cached_ptrs else None

    def free_all_cached(self) -> None:
        """cuMemFree every cached (unused) block and destroy the spare events. Does nothing
        while oxicuda captures a graph (cuMemFree may synchronize the device, which would break
        the capture): call it again afterwards."""
        if _capture.ACTIVE:
            return
        with self._lock:
            drv = api()
            for blocks in self._free.values():
                for blk in blocks:
                    if blk.event != _NO_EVENT:
                        drv.event_synchronize(blk.event)
                        self._spare_events.append(blk.event)
                    drv.mem_free(blk.ptr)
            self._free.clear()
            self._cached_ptrs.clear()
            self._cached = 0
            for event in self._spare_events:
                drv.event_destroy(event)
            self._spare_events.clear()

    def stats(self) -> dict[str, int]:
        """allocated_bytes (in use), cached_bytes (free, kept), hits, misses, peak_bytes (highest
        allocated_bytes so far), in_use_blocks, cached_blocks, device."""
        with self._lock:
            return {
                "allocated_bytes": self._allocated,
                "cached_bytes": self._cached,
                "hits": self._hits,
                "misses": self._misses,
                "peak_bytes": self._peak,
                "in_use_blocks": len(self._in_use),
                "cached_blocks": sum(len(b) for b in self._free.values()),
                "device": self.device,
            }


def _foreign_capturing(stream: int) -> bool:
    """Whether ``stream`` is capturing a graph that oxicuda did not begin (PyTorch's, CuPy's)."""
    if stream in _capture.ACTIVE:
        return False
    try:
        return api().stream_is_capturing(stream) != 0
    except Exception:
        return False


def _refuse_in_foreign_capture(stream: int, nbytes: int) -> None:
    if _foreign_capturing(stream):
        raise _capture.GraphCaptureError(
            f"{_capture.caller_name()}: needs {nbytes} bytes of new device memory on stream "
            f"0x{stream:x}, which is capturing a CUDA graph that oxicuda did not begin (for "
            "example torch.cuda.graph); allocating now would break that capture. Pass "
            "preallocated outputs (out=, c=) and call it once on that stream before capturing, "
            "so that its workspaces exist, or capture with oxicuda.graph(stream=...)")


_pools: dict[int, MemoryPool] = {}
_pools_lock = threading.Lock()


def get_pool(device: int | None = None) -> MemoryPool:
    """The pool of device ``device`` (default: the device of this thread's current context)."""
    if device is None:
        device = current_device_ordinal()
    pool = _pools.get(device)
    if pool is None:
        with _pools_lock:
            pool = _pools.setdefault(device, MemoryPool(device))
    return pool


def get_default_memory_pool() -> MemoryPool:
    """The pool of the current device (CuPy's ``get_default_memory_pool``)."""
    return get_pool()


def live_block_size(ptr: int) -> int | None:
    """The requested bytes (``nbytes``, not the bucket) of the in-use block that starts at
    ``ptr`` in the current device's pool; None for any other address. A dict lookup, for the
    pointer checks of the BLAS (``blas.operands.check_span``), which otherwise ask the driver."""
    pools = tuple(_pools.values())  # one per device in use
    if len(pools) != 1:
        pool = _pools.get(current_device_ordinal())
        pools = (pool,) if pool is not None else ()
    for pool in pools:
        hit = pool._in_use.get(ptr)
        if hit is not None:
            return hit[2]
    return None


def block_extent(base: int) -> int | None:
    """The requested bytes of the pool block starting at ``base`` (an allocation base, as
    cuMemGetAddressRange reports it): ``nbytes`` when in use, 0 when cached (freed), None when
    no pool of oxicuda's holds a block there."""
    for pool in tuple(_pools.values()):
        extent = pool.block_extent(base)
        if extent is not None:
            return extent
    return None


def freed_block(ptr: int) -> bool:
    """Whether ``ptr`` starts a block that was freed and sits in one of oxicuda's pools (the
    driver still counts it as allocated, so only the pool can tell a use after free)."""
    return any(ptr in pool._cached_ptrs for pool in tuple(_pools.values()))


def malloc(nbytes: int, stream: int = 0, keepalive: object = None) -> MemoryBlock:
    """A block of ``nbytes`` from the current device's pool, for use on ``stream``; ``keepalive``
    (the stream object, for streams oxicuda did not create) is kept until the block is freed."""
    return get_pool().malloc(nbytes, stream, keepalive)


def _retire_stream(handle: int) -> None:
    for pool in tuple(_pools.values()):
        pool.retire_stream(handle)


def _stream_created(handle: int) -> None:
    for pool in tuple(_pools.values()):
        pool.stream_created(handle)


_stream_module._retire_hooks.append(_retire_stream)
_stream_module._create_hooks.append(_stream_created)
