"""The FFT kernel families: ``stockham`` (single-pass transforms) and ``elementwise`` (the
pre/post-processing, gathers and shifts around them)."""

from . import elementwise, stockham

__all__ = ["elementwise", "stockham"]
