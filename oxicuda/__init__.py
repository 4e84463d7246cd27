"""oxicuda: a CUDA toolkit in Python.

``import oxicuda`` never fails and never touches a device: the driver loads on the first call
that needs it, and subpackages (``oxicuda.blas``, ``oxicuda.dnn``, ...) import on first access.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> (module, attribute), resolved on first access
_LAZY_NAMES = {
    "get_backend": ("oxicuda.driver.backend", "get_backend"),
    "Device": ("oxicuda.driver.device", "Device"),
    "Stream": ("oxicuda.driver.stream", "Stream"),
    "Event": ("oxicuda.driver.stream", "Event"),
    "trace": ("oxicuda.driver.trace", "trace"),
    "CudaError": ("oxicuda.driver.errors", "CudaError"),
    "OutOfMemoryError": ("oxicuda.driver.errors", "OutOfMemoryError"),
    "DeviceArray": ("oxicuda.memory.array", "DeviceArray"),
    "asarray": ("oxicuda.memory.array", "asarray"),
    "empty": ("oxicuda.memory.array", "empty"),
    "zeros": ("oxicuda.memory.array", "zeros"),
    "full": ("oxicuda.memory.array", "full"),
    "empty_like": ("oxicuda.memory.array", "empty_like"),
    "zeros_like": ("oxicuda.memory.array", "zeros_like"),
    "full_like": ("oxicuda.memory.array", "full_like"),
    "synchronize": ("oxicuda.driver.device", "synchronize"),
    "get_default_memory_pool": ("oxicuda.memory.pool", "get_default_memory_pool"),
    "asnumpy": ("oxicuda.memory.array", "asnumpy"),
    "from_dlpack": ("oxicuda.memory.interop", "from_dlpack"),
    "graph": ("oxicuda.graphs.capture", "graph"),
    "Graph": ("oxicuda.graphs.capture", "Graph"),
    "GraphCaptureError": ("oxicuda.memory.capture", "GraphCaptureError"),
    "where": ("oxicuda.array_math", "where"),
    "clip": ("oxicuda.array_math", "clip"),
    "sum": ("oxicuda.array_math", "sum"),
    "prod": ("oxicuda.array_math", "prod"),
    "mean": ("oxicuda.array_math", "mean"),
    "max": ("oxicuda.array_math", "max"),
    "min": ("oxicuda.array_math", "min"),
    "argmax": ("oxicuda.array_math", "argmax"),
    "argmin": ("oxicuda.array_math", "argmin"),
    "any": ("oxicuda.array_math", "any"),
    "all": ("oxicuda.array_math", "all"),
    "matmul": ("oxicuda.array_math", "matmul"),
    "kernel": ("oxicuda.jit.kernel", "kernel"),
    "device": ("oxicuda.jit.kernel", "device"),
    "KernelError": ("oxicuda.jit.kernel", "KernelError"),
    "elementwise": ("oxicuda.jit.elementwise", "elementwise"),
    "reduction": ("oxicuda.jit.reduction", "reduction"),
}

_SUBPACKAGES = frozenset(
    {"driver", "memory", "ptx", "blas", "dnn", "fft", "sparse", "solver", "rand", "cuda", "skcuda", "compat",
     "graphs", "jit", "types", "emulator"}
)

__all__ = [*sorted(_LAZY_NAMES), "__version__"]  # noqa: PLE0604 - the lazy names, listed once


def __getattr__(name: str):
    if name in _LAZY_NAMES:
        module, attr = _LAZY_NAMES[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"oxicuda.{name}")
    raise AttributeError(f"module 'oxicuda' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | _SUBPACKAGES)
