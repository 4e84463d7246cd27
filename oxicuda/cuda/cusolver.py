"""CuPy-shaped cuSOLVER (``cupy_backends.cuda.libs.cusolver``): every public name of
oxicuda.compat.cusolver."""

from oxicuda.compat import cusolver as _impl
from oxicuda.compat.cusolver import *
from oxicuda.compat.cusolver import CUSOLVERError, check_status  # noqa: F401

__all__ = [name for name in vars(_impl) if not name.startswith("_")]
globals().update({name: getattr(_impl, name) for name in __all__})
