"""``oxicuda.cuda``: CuPy-shaped entry points (``from oxicuda.cuda import cublas`` works like
``from cupy.cuda import cublas``; likewise cufft, curand, cusolver). Submodules import on first
access."""

from __future__ import annotations

import importlib

SUBMODULES = ("cublas", "cufft", "curand", "cusolver")


def __getattr__(name: str):
    if name in SUBMODULES:
        return importlib.import_module(f"oxicuda.cuda.{name}")
    raise AttributeError(f"module 'oxicuda.cuda' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(SUBMODULES)
