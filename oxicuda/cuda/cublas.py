"""CuPy-shaped cuBLAS (``cupy.cuda.cublas``): the public names of oxicuda.compat.cupy_cublas."""

from oxicuda.compat import cupy_cublas as _impl
from oxicuda.compat.cupy_cublas import *
from oxicuda.compat.cupy_cublas import CUBLASError, check_status  # noqa: F401

__all__ = list(_impl.__all__)
