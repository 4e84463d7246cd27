"""scikit-cuda-shaped cuBLAS (``skcuda.cublas``): the public names of oxicuda.compat.skcuda_cublas
(and ``ctypes``, as scikit-cuda's module has it)."""

import ctypes  # noqa: F401

from oxicuda.compat import skcuda_cublas as _impl
from oxicuda.compat.skcuda_cublas import *

__all__ = list(_impl.__all__)
