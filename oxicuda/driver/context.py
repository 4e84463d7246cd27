"""The primary context, retained once per device and made current in each thread that needs it.

Using the primary context (not a context of our own) is what lets PyTorch, CuPy and JAX in the
same process share pointers with oxicuda.
"""

from __future__ import annotations

import threading

from .backend import api

_lock = threading.Lock()
_primary: dict[int, int] = {}  # device ordinal -> retained primary context handle
_local = threading.local()


def primary_context(ordinal: int = 0) -> int:
    """Retain (once per process) and return the primary context of device ``ordinal``."""
    ctx = _primary.get(ordinal)
    if ctx is None:
        with _lock:
            ctx = _primary.get(ordinal)
            if ctx is None:
                drv = api()
                count = drv.device_get_count()
                if not 0 <= ordinal < count:
                    raise ValueError(f"device ordinal {ordinal} out of range; {count} device(s)")
                ctx = drv.device_primary_ctx_retain(drv.device_get(ordinal))
                _primary[ordinal] = ctx
    return ctx


def ensure_context(ordinal: int | None = None) -> int:
    """Make a context current in this thread and return it.

    With ``ordinal=None``: keep whatever context is current (a framework may have set one);
    if none is, make device 0's primary context current.
    """
    drv = api()
    if ordinal is None:
        cached = getattr(_local, "ctx", None)
        if cached is not None:
            return cached
        current = drv.ctx_get_current()
        if current:
            _local.ctx = current
            return current
        ordinal = 0
    ctx = primary_context(ordinal)
    drv.ctx_set_current(ctx)
    _local.ctx = ctx
    return ctx


def current_device_ordinal() -> int:
    """The ordinal of the device of this thread's current context (making one current if needed)."""
    ensure_context()
    return api().ctx_get_device()
