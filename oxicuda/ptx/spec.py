"""Kernel specs: the frozen, hashable description of one generated kernel.

A spec holds everything baked into the PTX (dtypes, tile shape, transposes, arch, math mode)
and nothing that varies per call (sizes that are kernel parameters, pointers, scalars).
Each family subclasses ``KernelSpec`` and registers a generator in ``oxicuda.ptx.registry``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import ClassVar

MATH_MODES = ("precise", "fast")


@dataclass(frozen=True)
class KernelSpec:
    """Base of every family's spec. Subclasses are frozen dataclasses adding their own fields.

    ``arch`` is the target (``sm_86``, ``sm_90``, ``sm_90a``); ``math`` is ``precise`` (no
    contraction unless the generator writes ``fma``, IEEE division and square root) or ``fast``.
    """

    family: ClassVar[str] = ""
    arch: str = "sm_86"
    math: str = "precise"

    def __post_init__(self) -> None:
        if self.math not in MATH_MODES:
            raise ValueError(f"{type(self).__name__}: math={self.math!r}; allowed: {MATH_MODES}")
        if not self.arch.startswith("sm_"):
            raise ValueError(f"{type(self).__name__}: arch={self.arch!r}; expected like 'sm_86'")

    def fields(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def key(self) -> str:
        """A stable text key: family and every field, in declaration order."""
        body = ",".join(f"{k}={v!r}" for k, v in self.fields().items())
        return f"{self.family}({body})"

    def short_digest(self) -> str:
        """Ten hex digits of the spec's key: what makes entry names unique (ASCII, stable)."""
        return hashlib.sha1(self.key().encode()).hexdigest()[:10]

    def kernel_name(self) -> str:
        """The PTX entry name: the family plus a short digest of the spec."""
        return f"oxi_{self.family}_{self.short_digest()}"

    @property
    def sm(self) -> int:
        """The numeric compute capability of ``arch``: 86 for sm_86, 90 for sm_90a."""
        return int(self.arch[3:].rstrip("a"))
