"""``oxicuda.skcuda``: scikit-cuda-shaped entry points (``from oxicuda.skcuda import cublas``
works like ``from skcuda import cublas``; likewise ``fft``). Submodules import on first access."""

from __future__ import annotations

import importlib

SUBMODULES = ("cublas", "fft")


def __getattr__(name: str):
    if name in SUBMODULES:
        return importlib.import_module(f"oxicuda.skcuda.{name}")
    raise AttributeError(f"module 'oxicuda.skcuda' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(SUBMODULES)
