"""scikit-cuda-shaped cuBLAS (``skcuda.cublas``): every public name of oxicuda.compat.skcuda_cublas."""

from oxicuda.compat import skcuda_cublas as _impl

__all__ = [name for name in vars(_impl) if not name.startswith("_")]
globals().update({name: getattr(_impl, name) for name in __all__})
