"""oxicuda.primitives: device-wide scan, reduce, sort, select, histogram and run-length encoding
on generated PTX (CUB's role), numpy-shaped, on any stream.

``inclusive_scan``/``exclusive_scan`` (single pass, decoupled look-back), ``reduce``, ``argmin``,
``argmax``, ``segmented_reduce``, ``radix_sort``/``argsort`` (stable LSD, 8- to 64-bit keys),
``select_flagged``, ``select_if``, ``nonzero``, ``histogram_even``, ``run_length_encode``,
``reduce_by_key``. Names load on first use; ``KERNEL_MODULES`` lists the generator modules for
the kernel registry.
"""

from __future__ import annotations

import importlib

_LAZY = {name: "api" for name in (
    "argmax", "argmin", "argsort", "exclusive_scan", "gather", "histogram_even", "inclusive_scan", "nonzero",
    "radix_sort", "reduce", "reduce_by_key", "run_length_encode", "segmented_reduce",
    "select_flagged", "select_if")}

KERNEL_MODULES = tuple(f"{__name__}.kernels.{m}" for m in ("scan", "reduce", "radix", "onesweep", "select"))

__all__ = [*sorted(_LAZY), "KERNEL_MODULES"]  # noqa: PLE0604 - built from the lazy table


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oxicuda.primitives' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
