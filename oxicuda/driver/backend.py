"""Which driver implementation is live: the backend rule of DESIGN.md.

``OXICUDA_BACKEND=cuda|emulator`` forces one. Otherwise the real driver is used when it loads,
initializes and reports at least one device; any other machine gets the emulator. Nothing here
runs at import time: the first call to ``api()`` decides, once per process.
"""

from __future__ import annotations

import os
import threading

from .api import DriverAPI

_lock = threading.Lock()
_api: DriverAPI | None = None
_why_not_cuda: str = ""


def _load_cuda() -> DriverAPI:
    from .libcuda import LibCudaAPI

    api = LibCudaAPI()
    api.init()
    if api.device_get_count() < 1:
        from .errors import CudaError

        raise CudaError(100, "cuDeviceGetCount")
    return api


def _load_emulator() -> DriverAPI:
    from ..emulator.api import EmulatorAPI

    api = EmulatorAPI(require_context=True)
    api.init()
    return api


def api() -> DriverAPI:
    """The live driver implementation, chosen on first use."""
    global _api, _why_not_cuda
    if _api is not None:
        return _api
    with _lock:
        if _api is not None:
            return _api
        choice = os.environ.get("OXICUDA_BACKEND", "").strip().lower()
        if choice == "cuda":
            _api = _load_cuda()
        elif choice == "emulator":
            _api = _load_emulator()
        elif choice:
            raise ValueError(f"OXICUDA_BACKEND={choice!r}; allowed values are 'cuda' and 'emulator'")
        else:
            try:
                _api = _load_cuda()
            except Exception as exc:  # no driver, no device, stub library: fall back
                _why_not_cuda = f"{type(exc).__name__}: {exc}"
                _api = _load_emulator()
    return _api


def get_backend() -> str:
    """ "cuda" or "emulator": the implementation ``api()`` uses (loading it if needed)."""
    return api().name


def why_not_cuda() -> str:
    """Why the default rule fell back to the emulator ('' if it did not)."""
    return _why_not_cuda
