"""A small kernel family for the PTX-layer tests: ``y[i] = x[i] * factor + offset`` for i < n.

Registered by fixtures (``registered_scale_family``) and removed after, so it never leaks into
the project's real registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

FAMILY = "test_scale"


@dataclass(frozen=True)
class ScaleSpec(KernelSpec):
    family: ClassVar[str] = FAMILY
    dtype: str = "f32"
    factor: float = 2.0
    block: int = 128


CALLS = {"generate": 0}


def generate(spec: ScaleSpec) -> str:
    CALLS["generate"] += 1
    size = {"f32": 4, "f64": 8}[spec.dtype]
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x, y = kb.param_ptr("x"), kb.param_ptr("y")
    n = kb.param("n", "u32")
    offset = kb.param("offset", spec.dtype)
    kb.maxntid(spec.block)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        v = kb.ld("global", spec.dtype, kb.addr(x, i, size))
        if spec.math == "fast":
            r = kb.fma(v, spec.factor, offset)
        else:
            r = kb.add(kb.mul(v, spec.factor), offset)
        kb.st("global", kb.addr(y, i, size), r)
    return kb.ptx()


def configurations(arch: str) -> list[ScaleSpec]:
    return [
        ScaleSpec(arch=arch, dtype=d, factor=f, math=m)
        for d in ("f32", "f64")
        for f in (2.0, -0.5)
        for m in ("precise", "fast")
    ]


def register(archs=("sm_80", "sm_86", "sm_90")) -> None:
    registry.register_family(FAMILY, ScaleSpec, generate, configurations, archs)


def unregister() -> None:
    registry.unregister_family(FAMILY)
