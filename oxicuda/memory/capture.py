"""Memory during the stream captures oxicuda runs (``oxicuda.graph``): blocks reserved for graphs.

A captured graph keeps the device addresses it was captured with, and every replay reads and
writes them, so memory a capture allocates must stay the graph's as long as the graph lives:

- the pool serves an allocation for a capturing stream from a ``GraphReserve``: a block that
  stream freed earlier in the same capture (stream order makes reuse inside the graph safe), a
  block from the pool's cache, or a fresh ``cuMemAlloc`` made with this thread switched to the
  relaxed capture mode (the call is not captured; PyTorch's allocator does the same);
- a block freed during the capture (a temporary, or an array allocated before it and dropped
  inside it) goes back to the reserve, not to the pool, and no event is recorded on the
  capturing stream (an event recorded in a capture cannot be queried later);
- when the graph is released, the reserve's free blocks return to the pool's cache (after an
  event on the stream the graph last ran on) and the blocks still held by arrays return there
  when those arrays go;
- scratch memory (``workspace``) asked for during a capture is the graph's own, so replays on
  any stream never share scratch with eager calls.

With ``stream_ordered=True`` (``oxicuda.graph(..., memory="async")``) the capture's allocations
go to the driver's stream-ordered allocator instead: ``cuMemAllocAsync``/``cuMemFreeAsync`` on the
capturing stream become allocation and free nodes of the graph, which maps the memory only while
it runs. Every array allocated in such a capture must then be freed in it (outputs preallocated
outside), since the driver refuses to launch a graph whose allocation is still live.

A host copy on a capturing stream (a result read back, an upload) cannot be part of a graph:
``check_host_copy`` raises ``GraphCaptureError`` naming the oxicuda call that made it, before the
driver sees the copy, so the capture ends cleanly and the stream stays usable.
"""

from __future__ import annotations

import sys
import threading

from ..driver.backend import api

#: stream handle -> the reserve of the capture oxicuda runs on that stream (its origin)
ACTIVE: dict[int, GraphReserve] = {}
#: capture sequence id -> reserve (streams that joined a capture are found through the driver)
BY_ID: dict[int, GraphReserve] = {}
#: block address -> the reserve that owns it
OWNER: dict[int, GraphReserve] = {}
_lock = threading.RLock()
_RELAXED = 2


class GraphCaptureError(RuntimeError):
    """An oxicuda call that cannot be captured into a CUDA graph was made during a capture."""


class GraphReserve:
    """The device blocks one graph owns (see the module docstring)."""

    def __init__(self, stream: int, capture_id: int, blocking: bool,
                 stream_ordered: bool = False) -> None:
        self.stream = stream
        self.stream_ordered = stream_ordered
        self.async_ptrs: set[int] = set()  # blocks from cuMemAllocAsync
        self.capture_id = capture_id
        self.blocking = blocking
        self.alive = True
        self.capturing = True
        self.free: dict[tuple[int, int], list[int]] = {}  # (stream, bucket size) -> addresses
        self.owned: set[int] = set()
        self.workspaces: dict[tuple, object] = {}  # workspace key -> DeviceArray
        self.last_stream = stream
        self.thread = threading.get_ident()
        self.holders = 0  # the Graph objects replaying this memory (see oxicuda.graphs)

    def take(self, stream: int, size: int) -> int:
        blocks = self.free.get((stream, size))
        return blocks.pop() if blocks else 0

    def give(self, ptr: int, stream: int, size: int) -> None:
        self.free.setdefault((stream, size), []).append(ptr)

    def release(self, pool_of) -> None:
        """The graph is gone: free blocks back to their pools, live ones when they are freed."""
        with _lock:
            self.alive = False
            self.workspaces.clear()
            freed = [(ptr, size) for (_, size), ptrs in self.free.items() for ptr in ptrs]
            self.free.clear()
            for ptr, _ in freed:
                OWNER.pop(ptr, None)
                self.owned.discard(ptr)
        for ptr, size in freed:
            pool_of(ptr).cache_block(ptr, size, self.last_stream)


def begin(stream: int, capture_id: int, blocking: bool, stream_ordered: bool = False) -> GraphReserve:
    reserve = GraphReserve(stream, capture_id, blocking, stream_ordered)
    with _lock:
        ACTIVE[stream] = reserve
        BY_ID[capture_id] = reserve
    return reserve


def end(reserve: GraphReserve) -> None:
    with _lock:
        reserve.capturing = False
        ACTIVE.pop(reserve.stream, None)
        BY_ID.pop(reserve.capture_id, None)


def reserve_for(stream: int) -> GraphReserve | None:
    """The reserve of the oxicuda capture ``stream`` records into (None when it does not);
    asks the driver only while a capture is active and the stream is not a capture's origin."""
    if not ACTIVE:
        return None
    hit = ACTIVE.get(stream)
    if hit is not None or stream == 0:
        return hit
    status, ident = api().stream_get_capture_info(stream)
    return BY_ID.get(ident) if status else None


def relaxed(call, *args):
    """``call(*args)`` with this thread in the relaxed capture mode while a capture is active
    (an allocation or free that is not part of any graph)."""
    if not ACTIVE:
        return call(*args)
    drv = api()
    old = drv.thread_exchange_stream_capture_mode(_RELAXED)
    try:
        return call(*args)
    finally:
        drv.thread_exchange_stream_capture_mode(old)


def caller_name() -> str:
    """The outermost oxicuda function on the stack (the public call being made)."""
    frame = sys._getframe(1)
    name = ""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("oxicuda.") and not module.startswith("oxicuda.graphs"):
            code = frame.f_code
            name = f"{module}.{getattr(code, 'co_qualname', code.co_name)}"
        frame = frame.f_back
    return name or "a host copy"


def check_host_copy(stream: int, what: str) -> None:
    """Raise GraphCaptureError when a host copy on ``stream`` would break an oxicuda capture:
    the stream records into one, or it is the legacy stream while a blocking stream captures."""
    if not ACTIVE:
        return
    reserve = reserve_for(stream)
    if reserve is None and stream == 0:
        reserve = next((r for r in ACTIVE.values() if r.blocking), None)
    if reserve is None:
        return
    raise GraphCaptureError(
        f"{caller_name()}: {what} during the capture of a CUDA graph on stream "
        f"0x{reserve.stream:x}; a graph cannot read results back to the host, upload host "
        "data or wait for the device. Call it outside the capture (warm it up once eagerly so "
        "that its tables are uploaded and its plans made), or keep its results on the device."
    )


def check_uncapturable(who: str, why: str) -> None:
    """Raise GraphCaptureError when this thread runs an oxicuda capture: ``who`` (a public call)
    cannot be captured, for the reason ``why``."""
    if ACTIVE:
        me = threading.get_ident()
        for reserve in tuple(ACTIVE.values()):
            if reserve.thread == me:
                raise GraphCaptureError(
                    f"{who}: {why}, so it cannot be captured into the CUDA graph this thread is "
                    f"capturing on stream 0x{reserve.stream:x}; call it outside the capture")


def check_synchronize(stream: int, what: str) -> None:
    """Raise GraphCaptureError for a wait on ``stream`` (or on the context, ``stream=-1``)
    that would invalidate an oxicuda capture."""
    if not ACTIVE:
        return
    if stream == -1 or reserve_for(stream) is not None or (
            stream == 0 and any(r.blocking for r in ACTIVE.values())):
        names = ", ".join(f"0x{s:x}" for s in ACTIVE)
        raise GraphCaptureError(
            f"{caller_name()}: {what} while stream(s) {names} capture a CUDA graph; waiting for "
            "captured work is not possible until the capture ends (the graph has not run yet)"
        )
