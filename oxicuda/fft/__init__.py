"""oxicuda.fft: the cuFFT counterpart. Not implemented yet: the package exists so the layout is
stable, and every name looked up in it raises an AttributeError that says so."""

from __future__ import annotations


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"oxicuda.fft.{name}: the cuFFT counterpart (oxicuda.fft) is not implemented yet; "
        "only oxicuda.blas and oxicuda.dnn have kernels today"
    )
