"""Backward passes of the activations, shaped as PyTorch's derivative functions (what autograd
saves: the input for gelu and silu, the output for relu, sigmoid and tanh):

- ``relu_backward(dy, y)``: ``dy * (y > 0)`` (``threshold_backward(dy, y, 0)``; y or x alike);
- ``gelu_backward(dy, x, approximate="none"|"tanh")``: ``dy * (Phi(x) + x phi(x))`` for the erf
  form; for the tanh form, with ``u = sqrt(2/pi) (x + 0.044715 x^3)`` and ``t = tanh(u)``,
  ``dy * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2))``;
- ``silu_backward(dy, x)``: ``dy * s (1 + x (1 - s))``, ``s = sigmoid(x)``;
- ``sigmoid_backward(dy, y)``: ``dy * y (1 - y)``; ``tanh_backward(dy, y)``: ``dy * (1 - y^2)``.

Kernel family ``dnn_activation_bwd``: one thread per ``vec`` consecutive elements (16/8-byte
accesses where the size and pointers allow), float32/float16/bfloat16 computed in f32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from oxicuda.driver.facts import current_device_facts
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from . import _common as C
from . import _rows as R

OPS = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")
THREADS = 256
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class ActivationBackwardSpec(KernelSpec):
    """``dx = dy * op'(z)`` on ``dtype`` elements, ``vec`` per thread (z is x or y, see module)."""

    family: ClassVar[str] = "dnn_activation_bwd"
    op: str = "relu"
    dtype: str = "f32"
    vec: int = 1
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.op not in OPS:
            raise ValueError(f"ActivationBackwardSpec: op={self.op!r}; allowed {OPS}")
        if self.dtype not in C.ELEMENT_BYTES or self.vec not in (1, 2, 4):
            raise ValueError(f"ActivationBackwardSpec: dtype={self.dtype!r}, vec={self.vec}")


def derivative(kb: KernelBuilder, op: str, z: Value) -> Value:
    """``op'`` at ``z`` (the saved tensor of ``op``: the input for gelu/silu, the output else)."""
    if op == "relu":
        return kb.selp(1.0, 0.0, kb.setp("gt", z, 0.0), type_="f32")
    if op == "sigmoid":
        return kb.mul(z, kb.sub(1.0, z, type_="f32"))
    if op == "tanh":
        return kb.fma(kb.neg(z), z, 1.0)
    if op == "silu":
        s = C.sigmoid_f32(kb, z)
        return kb.mul(s, kb.fma(z, kb.sub(1.0, s, type_="f32"), 1.0))
    if op == "gelu":
        cdf = kb.mul(C.erfc_f32(kb, kb.mul(z, -1.0 / math.sqrt(2.0))), 0.5)
        pdf = kb.mul(C.exp_f32(kb, kb.mul(kb.mul(z, z), -0.5)), _INV_SQRT_2PI)
        return kb.fma(z, pdf, cdf)
    if op == "gelu_tanh":
        z2 = kb.mul(z, z)
        u = kb.mul(kb.mul(z, kb.fma(z2, 0.044715, 1.0)), _SQRT_2_OVER_PI)
        t = C.tanh_f32(kb, u)
        du = kb.mul(kb.fma(z2, 3 * 0.044715, 1.0), _SQRT_2_OVER_PI)
        left = kb.fma(t, 0.5, 0.5)
        return kb.fma(kb.mul(kb.mul(z, 0.5), kb.fma(kb.neg(t), t, 1.0)), du, left)
    raise ValueError(f"unknown activation {op!r}; allowed {OPS}")


def generate(spec: ActivationBackwardSpec) -> str:
    """PTX of one kernel. Params: dy, z, dx (u64), n (u32)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    dy, z, dx = kb.param_ptr("dy"), kb.param_ptr("z"), kb.param_ptr("dx")
    n = kb.param("n", "u32")
    size = C.ELEMENT_BYTES[spec.dtype]
    t = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    i = kb.mul(t, spec.vec) if spec.vec > 1 else t
    with kb.if_(kb.setp("lt", i, n)):
        gs = C.load_f32(kb, spec.dtype, kb.addr(dy, i, size), vec=spec.vec)
        zs = C.load_f32(kb, spec.dtype, kb.addr(z, i, size), vec=spec.vec)
        C.store_f32(kb, spec.dtype, kb.addr(dx, i, size),
                    [kb.mul(g, derivative(kb, spec.op, v)) for g, v in zip(gs, zs)])
    return kb.ptx()


def configurations(arch: str) -> list[ActivationBackwardSpec]:
    """Every op and dtype at every vector width ``vector_width`` picks (4, 2, 1)."""
    return [ActivationBackwardSpec(arch=arch, op=op, dtype=d, vec=v) for op in OPS
            for d in ("f32", "f16", "bf16") for v in (1, 2, 4)]


registry.register_family(ActivationBackwardSpec.family, ActivationBackwardSpec, generate, configurations)


@dataclass(frozen=True)
class ActivationBackwardProblem:
    op: str
    dtype: str
    vec: int
    n: int


def plan(problem: ActivationBackwardProblem, device) -> LaunchPlan:
    """One kernel; ``run`` takes pointers (dy, z, dx)."""
    p = problem
    spec = ActivationBackwardSpec(arch=device.arch, op=p.op, dtype=p.dtype, vec=p.vec)
    (n,) = R.u32(p.n)

    def bind(ptr, s, ws):
        return (ptr[0], ptr[1], ptr[2], n)

    return LaunchPlan(f"{p.op}_backward", [KernelStep(spec, -(-(p.n // p.vec) // THREADS), THREADS, bind)])


#: plans by (problem, device ordinal)
PLANS = PlanCache("activation_backward")


def _backward(op: str, dy: object, z: object, name: str, zname: str) -> DeviceArray:
    dya, za = R.check_pair(dy, z, name, ("dy", zname))
    n = za.size
    C.check_u32_count(n, name)
    out = empty(za.shape, za.dtype, stream=za.stream)
    if n == 0:
        return out
    elem = C.PTX_ELEMENT[C.dtype_name_of(za)]
    vec = C.vector_width((dya, za, out), n, C.ELEMENT_BYTES[elem])
    problem = ActivationBackwardProblem(op, elem, vec, n)
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((dya.ptr, za.ptr, out.ptr), (), C.stream_of(za))
    return out


def relu_backward(dy: object, y: object) -> DeviceArray:
    """``dy * (y > 0)``: the gradient of ``relu`` from its output (its input works alike). dy and
    y share shape and dtype (float32, float16, bfloat16); TypeError/ValueError before launch."""
    return _backward("relu", dy, y, "relu_backward", "y")


def gelu_backward(dy: object, x: object, approximate: str = "none") -> DeviceArray:
    """The gradient of ``gelu(x, approximate=...)`` from its input ``x`` (erf form for
    ``"none"``, tanh approximation for ``"tanh"``, PyTorch's names)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu_backward: approximate={approximate!r}; allowed 'none' or 'tanh'")
    return _backward("gelu" if approximate == "none" else "gelu_tanh", dy, x, "gelu_backward", "x")


def silu_backward(dy: object, x: object) -> DeviceArray:
    """The gradient of ``silu`` from its input ``x``: ``dy * s (1 + x (1 - s))``."""
    return _backward("silu", dy, x, "silu_backward", "x")


def sigmoid_backward(dy: object, y: object) -> DeviceArray:
    """The gradient of ``sigmoid`` from its output ``y``: ``dy * y (1 - y)``."""
    return _backward("sigmoid", dy, y, "sigmoid_backward", "y")


def tanh_backward(dy: object, y: object) -> DeviceArray:
    """The gradient of ``tanh`` from its output ``y``: ``dy * (1 - y^2)``."""
    return _backward("tanh", dy, y, "tanh_backward", "y")


__all__ = ["gelu_backward", "relu_backward", "sigmoid_backward", "silu_backward", "tanh_backward"]
