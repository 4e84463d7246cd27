"""BLAS handles: the state a cuBLAS handle carries (stream, pointer mode, math mode), behind an
integer id so that the CuPy- and scikit-cuda-shaped surfaces can pass handles around as cuBLAS
users do (``handle = create()``; ``sgemm(handle, ...)``).

Every piece of state is read and written under the handle's lock, so several threads may share
one handle; ``Handle.snapshot()`` returns a consistent (stream, pointer mode, math mode) triple
for one call. A destroyed or unknown id raises ``InvalidHandle``.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

from ..memory.stream_handle import stream_handle

POINTER_MODE_HOST = 0
POINTER_MODE_DEVICE = 1
POINTER_MODES = (POINTER_MODE_HOST, POINTER_MODE_DEVICE)
#: cuBLAS math modes: DEFAULT, TENSOR_OP (deprecated), PEDANTIC, TF32_TENSOR_OP; the
#: DISALLOW_REDUCED_PRECISION_REDUCTION bit (16) may be or-ed onto any of them.
MATH_MODES = (0, 1, 2, 3)
MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16
TF32_TENSOR_OP_MATH = 3


class InvalidHandle(ValueError):
    """The handle id was never created or has been destroyed."""


@dataclass(frozen=True)
class HandleState:
    """One consistent view of a handle's state."""

    stream: int
    pointer_mode: int
    math_mode: int

    @property
    def device_pointers(self) -> bool:
        return self.pointer_mode == POINTER_MODE_DEVICE

    @property
    def allows_tf32(self) -> bool:
        return (self.math_mode & ~MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) == TF32_TENSOR_OP_MATH


class Handle:
    """A BLAS handle: stream (driver handle int; 0 is the legacy default stream), pointer mode
    (``POINTER_MODE_HOST``/``POINTER_MODE_DEVICE``) and math mode."""

    __slots__ = ("_lock", "_math_mode", "_pointer_mode", "_stream", "id")

    def __init__(self, handle_id: int) -> None:
        self.id = handle_id
        self._lock = threading.Lock()
        self._stream = 0
        self._pointer_mode = POINTER_MODE_HOST
        self._math_mode = 0

    def set_stream(self, stream: object) -> None:
        """Order all later work of this handle on ``stream`` (an int handle or stream object)."""
        h = stream_handle(stream)
        with self._lock:
            self._stream = h

    def set_pointer_mode(self, mode: int) -> None:
        if mode not in POINTER_MODES:
            raise ValueError(f"pointer mode {mode!r}; allowed: 0 (host) or 1 (device)")
        with self._lock:
            self._pointer_mode = int(mode)

    def set_math_mode(self, mode: int) -> None:
        if isinstance(mode, bool) or not isinstance(mode, int) or \
                (mode & ~MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) not in MATH_MODES:
            raise ValueError(f"math mode {mode!r}; allowed: {MATH_MODES}, optionally | 16")
        with self._lock:
            self._math_mode = int(mode)

    @property
    def stream(self) -> int:
        with self._lock:
            return self._stream

    @property
    def pointer_mode(self) -> int:
        with self._lock:
            return self._pointer_mode

    @property
    def math_mode(self) -> int:
        with self._lock:
            return self._math_mode

    def snapshot(self) -> HandleState:
        with self._lock:
            return HandleState(self._stream, self._pointer_mode, self._math_mode)

    def __int__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        s = self.snapshot()
        return f"<oxicuda.blas.Handle {self.id:#x} stream={s.stream:#x} pointer_mode={s.pointer_mode} math_mode={s.math_mode}>"


_ids = itertools.count(0x0C0B1A5)
_registry_lock = threading.Lock()
_handles: dict[int, Handle] = {}


def create_handle() -> Handle:
    """A new handle (default stream, host pointer mode, default math)."""
    with _registry_lock:
        h = Handle(next(_ids))
        _handles[h.id] = h
    return h


def lookup_handle(handle: object) -> Handle:
    """The live handle with id ``handle`` (an int or a Handle); InvalidHandle otherwise."""
    if isinstance(handle, Handle):
        key = handle.id
    elif isinstance(handle, int) and not isinstance(handle, bool):
        key = handle
    else:
        raise InvalidHandle(f"handle {handle!r} ({type(handle).__name__}) is not a BLAS handle id")
    h = _handles.get(key)
    if h is None:
        raise InvalidHandle(f"handle {key:#x} was never created or has been destroyed")
    return h


def destroy_handle(handle: object) -> None:
    """Forget a handle; later use of its id raises InvalidHandle."""
    h = lookup_handle(handle)
    with _registry_lock:
        if _handles.pop(h.id, None) is None:
            raise InvalidHandle(f"handle {h.id:#x} has already been destroyed")
