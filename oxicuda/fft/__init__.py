"""oxicuda.fft: the cuFFT counterpart, shaped like numpy.fft / cupy.fft, on generated PTX.

Names import on first access (``oxicuda.fft.fft`` loads the api and its kernel families).
``KERNEL_MODULES`` lists the modules that register kernel families.
"""

from __future__ import annotations

import importlib

KERNEL_MODULES = ("oxicuda.fft.kernels.stockham", "oxicuda.fft.kernels.elementwise")

_EXPORTS = {
    **{name: "oxicuda.fft.api" for name in (
        "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
        "rfftn", "irfftn", "hfft", "ihfft")},
    **{name: "oxicuda.fft.helpers" for name in ("fftfreq", "rfftfreq", "fftshift", "ifftshift")},
    "Plan": "oxicuda.fft.user_plan",
    "get_fft_plan": "oxicuda.fft.user_plan",
    "get_plan_cache": "oxicuda.fft.config",
    "config": None,
}


def __getattr__(name: str):
    if name == "config":
        return importlib.import_module("oxicuda.fft.config")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oxicuda.fft' has no attribute {name!r}")
    for m in KERNEL_MODULES:
        importlib.import_module(m)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted([*_EXPORTS, "KERNEL_MODULES"])
