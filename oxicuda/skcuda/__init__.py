"""``oxicuda.skcuda``: scikit-cuda-shaped entry points (``from oxicuda.skcuda import cublas``
works like ``from skcuda import cublas``). Submodules import on first access."""

from __future__ import annotations

import importlib


def __getattr__(name: str):
    if name == "cublas":
        return importlib.import_module("oxicuda.skcuda.cublas")
    raise AttributeError(f"module 'oxicuda.skcuda' has no attribute {name!r}")
