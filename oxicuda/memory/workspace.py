"""Scratch memory for library calls, cached so that a call allocates (and frees) nothing.

``workspace(request, stream)`` returns a DeviceArray over a cached block keyed on (device,
stream handle, dtype, element count): the same key always gets the same pointer while its entry
is cached, which keeps repeated calls (and CUDA graph capture) free of cuMemAlloc/cuMemFree.

The cache is an LRU of at most ``MAX_ENTRIES`` entries and ``MAX_BYTES`` bytes. An evicted
entry's block goes back to the pool only when no caller still holds an array over it (views keep
their base alive), and the pool reuses it on another stream only after that stream's work is done.

During a CUDA graph capture (``oxicuda.graph``) a request for a capturing stream gets the
graph's own array (from the graph's reserve, kept as long as the graph lives): replays on any
stream then never share scratch memory with eager calls, and nothing is evicted (evicting
synchronizes the context, which a capture forbids) until the capture ends.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ..driver.context import current_device_ordinal
from ..ptx import launch_plan
from . import capture as _capture
from .array import DeviceArray
from .dtypes import normalize_dtype
from .stream_handle import stream_handle

MAX_ENTRIES = 64
MAX_BYTES = 1 << 30

_lock = threading.Lock()
_cache: OrderedDict[tuple, DeviceArray] = OrderedDict()
_cached_bytes = 0


def _parse(request: object) -> tuple[np.dtype, int]:
    if isinstance(request, tuple) and len(request) == 2:
        dtype, count = request
        dt = normalize_dtype(dtype)
    elif isinstance(request, (int, np.integer)) and not isinstance(request, bool):
        dt, count = np.dtype(np.uint8), request
    else:
        raise TypeError(f"workspace request {request!r}; allowed: nbytes (an int) or "
                        "(dtype, element count)")
    if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 0:
        raise ValueError(f"workspace element count {count!r}; it must be an int >= 0")
    return dt, int(count)


def workspace(request: int | tuple[object, int], stream: object = None) -> DeviceArray:
    """A 1-D scratch array: ``request`` is nbytes (uint8 elements) or (dtype, count).

    Repeated requests with the same (stream, dtype, count) return views of the same memory. The
    contents are undefined (whatever the last user left). Use it only on ``stream``.
    """
    return _entry(request, stream)[...]


def workspace_ptr(request: int | tuple[object, int], stream: object = None) -> int:
    """The device address of ``workspace(request, stream)``, without making a view (launch plans
    that pass raw pointers). The memory stays valid for work enqueued on ``stream`` after this
    returns, as a dropped view's would: an evicted entry's block goes back to the pool in stream
    order."""
    return _entry(request, stream).ptr


def _entry(request: int | tuple[object, int], stream: object) -> DeviceArray:
    """The cached array of (device, stream, dtype, count), made (and older entries evicted past
    the limits) on first request."""
    global _cached_bytes
    dt, count = _parse(request)
    handle = stream_handle(stream)
    key = (current_device_ordinal(), handle, dt.str if dt.fields is None else "bfloat16", count)
    if _capture.ACTIVE:
        reserve = _capture.reserve_for(handle)
        if reserve is not None:
            arr = reserve.workspaces.get(key)
            if arr is None:
                arr = reserve.workspaces[key] = DeviceArray((count,), dt, stream=handle)
            return arr
    with _lock:
        arr = _cache.get(key)
        if arr is not None:
            _cache.move_to_end(key)
            return arr
        arr = DeviceArray((count,), dt, stream=handle)
        _cache[key] = arr
        _cached_bytes += arr.nbytes
        evicted = []
        while not _capture.ACTIVE and len(_cache) > 1 and (
                len(_cache) > MAX_ENTRIES or _cached_bytes > MAX_BYTES):
            _, old = _cache.popitem(last=False)
            _cached_bytes -= old.nbytes
            evicted.append(old)
        _release(evicted)
        return arr


def _release(arrays: list[DeviceArray]) -> None:
    """Let the pool cache these dropped entries' blocks without an event on their streams.

    An entry is keyed on a stream handle and does not keep that stream alive: a foreign stream
    (a CuPy or PyTorch stream passed by handle, e.g. through cublas.setStream) may be destroyed
    while its entry sits here, and recording the pool's free event on a destroyed stream crashes
    the driver. So the context is synchronized (all work on these blocks is done) and the blocks
    are detached from their streams before the entries go."""
    if not any(a.memory is not None and a.memory.stream != 0 for a in arrays):
        return
    from oxicuda.driver.backend import api
    from oxicuda.driver.context import ensure_context

    from .pool import get_pool

    ensure_context()
    api().ctx_synchronize()
    for arr in arrays:
        block = arr.memory
        if block is not None and block.size:
            get_pool(block.device).detach(block.ptr)


def workspace_stats() -> dict[str, int]:
    """entries and bytes currently cached."""
    with _lock:
        return {"entries": len(_cache), "bytes": _cached_bytes}


def clear_workspaces() -> None:
    """Drop every cached workspace (blocks return to the pool once no array uses them)."""
    global _cached_bytes
    _capture.check_synchronize(-1, "clear_workspaces (it synchronizes the context)")
    with _lock:
        _release(list(_cache.values()))
        _cache.clear()
        _cached_bytes = 0


launch_plan.set_workspace_source(workspace_ptr)  # launch plans take their scratch from this cache
