"""``stream_handle(obj) -> int``: any stream-like object as a driver stream handle.

Delegates to ``oxicuda.driver.stream.as_stream_handle`` (None -> 0, ints, ``Stream``, objects with
``__cuda_stream__``, ``.cuda_stream`` or ``.ptr``); resolved once, on first use.
"""

from __future__ import annotations

_resolved = None


def _fallback(obj: object) -> int:
    if obj is None:
        return 0
    if isinstance(obj, int):
        return obj
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        return int(value[1])
    for attr in ("handle", "cuda_stream", "ptr"):
        value = getattr(obj, attr, None)
        if value is not None:
            return int(value)
    raise TypeError(
        f"stream {obj!r} of type {type(obj).__name__} is not a stream; allowed: None, an int "
        "handle, an oxicuda Stream, or an object with __cuda_stream__, .cuda_stream or .ptr"
    )


def stream_handle(obj: object) -> int:
    """The driver handle (int) of ``obj``; None is the legacy default stream, 0."""
    global _resolved
    if obj is None:
        return 0
    if _resolved is None:
        try:
            from ..driver.stream import as_stream_handle

            _resolved = as_stream_handle
        except ImportError:
            return _fallback(obj)
    return _resolved(obj)
