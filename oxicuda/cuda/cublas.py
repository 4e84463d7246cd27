"""CuPy-shaped cuBLAS (``cupy.cuda.cublas``): every public name of oxicuda.compat.cupy_cublas."""

from oxicuda.compat import cupy_cublas as _impl
from oxicuda.compat.cupy_cublas import *
from oxicuda.compat.cupy_cublas import CUBLASError, check_status  # noqa: F401

__all__ = [name for name in vars(_impl) if not name.startswith("_")]
globals().update({name: getattr(_impl, name) for name in __all__})
