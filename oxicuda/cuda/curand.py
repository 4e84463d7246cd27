"""CuPy-shaped cuRAND (``cupy.cuda.curand``): every public name of oxicuda.compat.curand."""

from oxicuda.compat import curand as _impl
from oxicuda.compat.curand import *
from oxicuda.compat.curand import CURANDError, check_status  # noqa: F401

__all__ = [name for name in vars(_impl) if not name.startswith("_")]
globals().update({name: getattr(_impl, name) for name in __all__})
