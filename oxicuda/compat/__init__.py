"""Compatibility surfaces: modules shaped like other libraries' cuBLAS bindings, so that scripts
switch to oxicuda by changing their imports.

- ``oxicuda.compat.cupy_cublas`` (also ``oxicuda.cuda.cublas``): like ``cupy.cuda.cublas``;
- ``oxicuda.compat.skcuda_cublas`` (also ``oxicuda.skcuda.cublas``): like ``skcuda.cublas``;
- ``oxicuda.compat.cufft`` (also ``oxicuda.cuda.cufft``): like ``cupy.cuda.cufft``;
- ``oxicuda.compat.skcuda_fft`` (also ``oxicuda.skcuda.fft``): like ``skcuda.fft``;
- ``oxicuda.compat.curand`` (also ``oxicuda.cuda.curand``): like ``cupy.cuda.curand``;
- ``oxicuda.compat.cusolver`` (also ``oxicuda.cuda.cusolver``): like CuPy's ``cusolver``.

Submodules import on first access.
"""

from __future__ import annotations

import importlib

_SUBMODULES = frozenset({"cupy_cublas", "skcuda_cublas", "cublas_common", "cublas_calls", "cufft",
                         "skcuda_fft", "curand", "cusolver"})


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"oxicuda.compat.{name}")
    raise AttributeError(f"module 'oxicuda.compat' has no attribute {name!r}")
