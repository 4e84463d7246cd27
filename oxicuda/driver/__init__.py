"""oxicuda.driver: the driver API, one surface with two implementations (libcuda, emulator).

Importing this package loads neither the driver nor cffi: the live implementation is chosen by
the first call of ``api()``.

Note: ``api`` here is the function ``backend.api()``, not the ``api.py`` submodule (import the
seam classes with ``from oxicuda.driver.api import DriverAPI``).
"""

from __future__ import annotations

from .backend import api, get_backend
from .context import ensure_context
from .device import Device
from .errors import CudaError, DriverNotFoundError, LaunchError, ModuleLoadError, OutOfMemoryError
from .module import ArgPacker, Function, Module
from .stream import Event, Stream, as_stream_handle
from .trace import LaunchRecord, trace

__all__ = [
    "ArgPacker",
    "CudaError",
    "Device",
    "DriverNotFoundError",
    "Event",
    "Function",
    "LaunchError",
    "LaunchRecord",
    "Module",
    "ModuleLoadError",
    "OutOfMemoryError",
    "Stream",
    "api",
    "as_stream_handle",
    "ensure_context",
    "get_backend",
    "trace",
]


def __dir__() -> list[str]:
    # the public names and the module attributes, not the submodules and helpers imported above
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
