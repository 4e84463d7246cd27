"""Streams and events, and ``as_stream_handle`` for streams from other packages.

Handles are released with ``weakref.finalize`` (not ``__del__``), so a stream dropped during
interpreter shutdown or garbage collection is destroyed once, without resurrecting anything.
"""

from __future__ import annotations

import contextlib
import weakref

from . import enums
from .backend import api
from .context import ensure_context

#: called with a stream handle just before oxicuda destroys that stream (the memory pool
#: registers one: blocks allocated for the stream must never be recorded on a dead handle)
_retire_hooks: list = []
#: called with the handle of every stream oxicuda creates (a driver may reuse a dead handle)
_create_hooks: list = []


def _destroy_quietly(destroy, handle: int) -> None:
    with contextlib.suppress(Exception):  # the driver may already be shutting down
        destroy(handle)


def _retire_and_destroy(destroy, handle: int) -> None:
    for hook in tuple(_retire_hooks):
        with contextlib.suppress(Exception):  # never let a hook keep a stream alive at shutdown
            hook(handle)
    _destroy_quietly(destroy, handle)


class Stream:
    """A CUDA stream owned by oxicuda, or the legacy default stream (``Stream.null()``)."""

    def __init__(self, non_blocking: bool = False) -> None:
        ensure_context()
        drv = api()
        flags = enums.STREAM_NON_BLOCKING if non_blocking else enums.STREAM_DEFAULT
        self._handle = drv.stream_create(flags)
        self.non_blocking = bool(non_blocking)
        for hook in tuple(_create_hooks):
            hook(self._handle)
        self._finalizer = weakref.finalize(self, _retire_and_destroy, drv.stream_destroy, self._handle)

    @classmethod
    def null(cls) -> Stream:
        """The legacy default stream (handle 0); never destroyed."""
        s = cls.__new__(cls)
        s._handle = 0
        s.non_blocking = False
        s._finalizer = None
        return s

    @property
    def handle(self) -> int:
        """The driver's CUstream value (0 for the default stream)."""
        return self._handle

    def __int__(self) -> int:
        return self._handle

    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol: (version 0, handle)."""
        return (0, self._handle)

    def synchronize(self) -> None:
        """Block until all work queued on this stream is done."""
        api().stream_synchronize(self._handle)

    def query(self) -> bool:
        """True when all work queued on this stream is done."""
        return api().stream_query(self._handle)

    async def synchronize_async(self) -> None:
        """``await s.synchronize_async()``: wait, without blocking the event loop, until the
        work queued on this stream so far is done (an event recorded now, polled)."""
        from .waiting import wait_event

        event = Event(timing=False).record(self)
        await wait_event(event._handle)

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait until ``event`` has completed."""
        api().stream_wait_event(self._handle, as_event_handle(event))

    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new timing event if None) on this stream and return it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def close(self) -> None:
        """Destroy the stream now (idempotent; the null stream is never destroyed)."""
        if self._finalizer is not None:
            self._finalizer()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other._handle == self._handle

    def __hash__(self) -> int:
        return hash(self._handle)

    def __repr__(self) -> str:
        return f"<oxicuda.Stream handle=0x{self._handle:x}>"


class Event:
    """A CUDA event; ``timing=False`` makes a lighter event that cannot be timed."""

    def __init__(self, timing: bool = True) -> None:
        ensure_context()
        drv = api()
        flags = enums.EVENT_DEFAULT if timing else enums.EVENT_DISABLE_TIMING
        self._handle = drv.event_create(flags)
        self.timing = bool(timing)
        self._finalizer = weakref.finalize(self, _destroy_quietly, drv.event_destroy, self._handle)

    @property
    def handle(self) -> int:
        return self._handle

    def __int__(self) -> int:
        return self._handle

    def record(self, stream: object = None) -> Event:
        """Record this event on ``stream`` (anything ``as_stream_handle`` accepts); returns self."""
        api().event_record(self._handle, as_stream_handle(stream))
        return self

    def synchronize(self) -> None:
        """Block until the event has completed."""
        api().event_synchronize(self._handle)

    def query(self) -> bool:
        """True when the work before the event's record point is done."""
        return api().event_query(self._handle)

    async def wait_async(self) -> Event:
        """Wait, without blocking the event loop, until the event has completed; returns self.
        ``await event`` does the same."""
        from .waiting import wait_event

        await wait_event(self._handle)
        return self

    def __await__(self):
        return self.wait_async().__await__()

    def elapsed_time(self, other: Event) -> float:
        """Milliseconds from this event to ``other`` (both recorded and completed)."""
        return Event.elapsed_ms(self, other)

    @staticmethod
    def elapsed_ms(start: Event, end: Event) -> float:
        """Milliseconds between two recorded events; raises ValueError for non-timing events."""
        for label, ev in (("start", start), ("end", end)):
            if isinstance(ev, Event) and not ev.timing:
                raise ValueError(f"Event.elapsed_ms: {label} event was created with timing=False")
        return api().event_elapsed_time(as_event_handle(start), as_event_handle(end))

    def close(self) -> None:
        """Destroy the event now (idempotent)."""
        self._finalizer()

    def __repr__(self) -> str:
        return f"<oxicuda.Event handle=0x{self._handle:x}>"


def as_event_handle(event: object) -> int:
    """An Event or an int handle as the driver's CUevent value."""
    if isinstance(event, Event):
        return event._handle
    if isinstance(event, int) and not isinstance(event, bool):
        return event
    raise TypeError(f"expected an oxicuda Event or an int handle, got {type(event).__name__}")


def as_stream_handle(obj: object) -> int:
    """The CUstream value of any stream-like object.

    Accepts None (the default stream, 0), an int handle, ``Stream``, objects with
    ``__cuda_stream__`` (returning (version, handle)), ``.cuda_stream`` (PyTorch) or ``.ptr``
    (CuPy). Raises TypeError for anything else.
    """
    if obj is None:
        return 0
    if isinstance(obj, Stream):
        return obj._handle
    if isinstance(obj, int) and not isinstance(obj, bool):
        if obj < 0:
            raise ValueError(f"stream handle must be >= 0, got {obj}")
        return obj
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        if isinstance(value, tuple):
            return int(value[1])
        return int(value)
    for attr in ("cuda_stream", "ptr"):
        value = getattr(obj, attr, None)
        if value is not None:
            return int(value)
    raise TypeError(
        f"cannot use {type(obj).__name__} as a stream; pass None, an int handle, an "
        "oxicuda Stream, or an object with __cuda_stream__, .cuda_stream or .ptr"
    )
