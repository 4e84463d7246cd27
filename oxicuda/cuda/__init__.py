"""``oxicuda.cuda``: CuPy-shaped entry points (``from oxicuda.cuda import cublas`` works like
``from cupy.cuda import cublas``). Submodules import on first access."""

from __future__ import annotations

import importlib


def __getattr__(name: str):
    if name == "cublas":
        return importlib.import_module("oxicuda.cuda.cublas")
    raise AttributeError(f"module 'oxicuda.cuda' has no attribute {name!r}")
