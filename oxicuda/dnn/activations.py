"""Element-wise activations with an optional fused bias: relu, gelu (erf and tanh forms), silu,
sigmoid, tanh.

``y = act(x + bias)``, where ``bias`` (when given) has ``x.shape[bias_axis]`` elements and is
broadcast along that axis: ``bias_axis=-1`` (the default) is the last dimension (a linear layer's
output features), ``bias_axis=1`` the channel dimension of an NCHW tensor.

Kernel family ``dnn_activation``: one thread per ``vec`` consecutive elements (vec 4 or 2 when
the size and the pointers allow 16/8-byte accesses, else 1); the bias element of flat index i is
``bias[(i // inner) % channels]`` where ``inner`` is the product of the dimensions after
``bias_axis``. float32, float16 and bfloat16; halves are computed in f32 and rounded once.

Precise math (the default) computes exp, erfc and tanh to a few ulp; NaN in gives NaN out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.driver.facts import current_device_facts
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from . import _common as C

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh")
THREADS = 256
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class ActivationSpec(KernelSpec):
    """One activation kernel: ``op`` on ``dtype`` elements, ``vec`` per thread, fused bias."""

    family: ClassVar[str] = "dnn_activation"
    op: str = "relu"
    dtype: str = "f32"
    has_bias: bool = False
    vec: int = 1
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.op not in ACTIVATIONS:
            raise ValueError(f"ActivationSpec: op={self.op!r}; allowed {ACTIVATIONS}")
        if self.dtype not in C.ELEMENT_BYTES:
            raise ValueError(f"ActivationSpec: dtype={self.dtype!r}; allowed {tuple(C.ELEMENT_BYTES)}")
        if self.vec not in (1, 2, 4):
            raise ValueError(f"ActivationSpec: vec={self.vec}; allowed 1, 2, 4")


def apply_activation(kb: KernelBuilder, op: str, x: Value) -> Value:
    """``op(x)`` on an f32 register (used by this family and by fused epilogues elsewhere)."""
    if op == "relu":
        return kb.selp(0.0, x, kb.setp("lt", x, 0.0))  # NaN passes through, as in PyTorch
    if op == "sigmoid":
        return C.sigmoid_f32(kb, x)
    if op == "silu":
        return kb.div(x, kb.add(C.exp_f32(kb, kb.neg(x)), 1.0))
    if op == "tanh":
        return C.tanh_f32(kb, x)
    if op == "gelu":  # x * Phi(x) = x/2 * erfc(-x / sqrt 2)
        half_x = kb.mul(x, 0.5)
        return kb.mul(half_x, C.erfc_f32(kb, kb.mul(x, -1.0 / math.sqrt(2.0))))
    if op == "gelu_tanh":  # x/2 (1 + tanh u) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
        inner = kb.fma(kb.mul(x, x), 0.044715, 1.0)
        two_u = kb.mul(kb.mul(x, inner), 2.0 * _SQRT_2_OVER_PI)
        return kb.div(x, kb.add(C.exp_f32(kb, kb.neg(two_u)), 1.0))
    raise ValueError(f"unknown activation {op!r}; allowed {ACTIVATIONS}")


def generate_activation(spec: ActivationSpec) -> str:
    """PTX of one activation kernel. Params: x, y, bias (u64), n, inner, channels (u32)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x, y, bias = kb.param_ptr("x"), kb.param_ptr("y"), kb.param_ptr("bias")
    n, inner, channels = kb.param("n", "u32"), kb.param("inner", "u32"), kb.param("channels", "u32")
    C.launch_bounds(kb, spec.threads)
    size = C.ELEMENT_BYTES[spec.dtype]
    t = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    i = kb.mul(t, spec.vec) if spec.vec > 1 else t
    with kb.if_(kb.setp("lt", i, n)):
        vals = C.load_f32(kb, spec.dtype, kb.addr(x, i, size), vec=spec.vec)
        out = []
        for k, v in enumerate(vals):
            if spec.has_bias:
                idx = kb.add(i, k) if k else i
                c = C.urem(kb, kb.div(idx, inner), channels)
                v = kb.add(v, C.load_f32(kb, spec.dtype, kb.addr(bias, c, size))[0])
            out.append(apply_activation(kb, spec.op, v))
        C.store_f32(kb, spec.dtype, kb.addr(y, i, size), out)
    return kb.ptx()


def activation_configurations(arch: str) -> list[ActivationSpec]:
    """Every configuration a call can launch: each op and dtype, with and without bias, at every
    vector width ``vector_width`` picks (4, 2 or 1 elements)."""
    return [ActivationSpec(arch=arch, op=op, dtype=dtype, vec=vec, has_bias=has_bias)
            for op in ACTIVATIONS for dtype in ("f32", "f16", "bf16") for vec in (1, 2, 4)
            for has_bias in (False, True)]


registry.register_family(ActivationSpec.family, ActivationSpec, generate_activation, activation_configurations)


@dataclass(frozen=True)
class ActivationProblem:
    """One activation call: op, element type, bias or not, vector width, element count, and the
    bias broadcast (elements per channel run, channels)."""

    op: str
    dtype: str
    has_bias: bool
    vec: int
    n: int
    inner: int
    channels: int


def plan(problem: ActivationProblem, device) -> LaunchPlan:
    """The launch plan of an activation call; ``run`` takes pointers (x, out, bias or 0)."""
    p = problem
    spec = ActivationSpec(arch=device.arch, op=p.op, dtype=p.dtype, has_bias=p.has_bias, vec=p.vec)
    n, inner, channels = np.uint32(p.n), np.uint32(p.inner), np.uint32(p.channels)

    def bind(ptr, s, ws):
        return (ptr[0], ptr[1], ptr[2], n, inner, channels)

    return LaunchPlan(p.op, [KernelStep(spec, -(-(p.n // p.vec) // spec.threads), spec.threads, bind)])


#: plans by (problem, device ordinal)
PLANS = PlanCache("activation")


def _activation(op: str, x: object, bias: object, bias_axis: int, name: str) -> DeviceArray:
    xa = C.contiguous(C.as_float_array(x, name))
    elem = C.PTX_ELEMENT[C.dtype_name_of(xa)]
    n = xa.size
    C.check_u32_count(n, name)
    inner, channels, ba = 1, 1, None
    if bias is not None:
        if xa.ndim == 0:
            raise ValueError(f"{name}: a bias needs x with at least one dimension; x is 0-d")
        axis = C.normalize_axis(bias_axis, xa.ndim, name)
        channels = xa.shape[axis]
        inner = int(np.prod(xa.shape[axis + 1:], dtype=np.int64))
        ba = C.check_param_array(bias, name, "bias", (channels,), xa.dtype)
    out = empty(xa.shape, xa.dtype, stream=xa.stream)
    if n == 0:
        return out
    vec = C.vector_width((xa, out), n, C.ELEMENT_BYTES[elem])
    problem = ActivationProblem(op, elem, ba is not None, vec, n, max(inner, 1), max(channels, 1))
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((xa.ptr, out.ptr, 0 if ba is None else ba.ptr), (), C.stream_of(xa))
    return out


def relu(x: object, bias: object = None, *, bias_axis: int = -1) -> DeviceArray:
    """``max(x + bias, 0)`` as a new array (NaN stays NaN). ``bias`` broadcasts along
    ``bias_axis`` (see the module docstring). Raises TypeError for a non-float dtype or a bias of
    another dtype, ValueError for a bias of the wrong shape, before any launch."""
    return _activation("relu", x, bias, bias_axis, "relu")


def gelu(x: object, bias: object = None, approximate: str = "none", *, bias_axis: int = -1) -> DeviceArray:
    """GELU of ``x + bias``: ``approximate="none"`` is ``x * Phi(x)`` (erf form), ``"tanh"`` the
    tanh approximation ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (PyTorch's names)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate={approximate!r}; allowed 'none' or 'tanh'")
    return _activation("gelu" if approximate == "none" else "gelu_tanh", x, bias, bias_axis, "gelu")


def silu(x: object, bias: object = None, *, bias_axis: int = -1) -> DeviceArray:
    """SiLU (swish) of ``x + bias``: ``v * sigmoid(v)``."""
    return _activation("silu", x, bias, bias_axis, "silu")


def sigmoid(x: object, bias: object = None, *, bias_axis: int = -1) -> DeviceArray:
    """``1 / (1 + exp(-(x + bias)))``."""
    return _activation("sigmoid", x, bias, bias_axis, "sigmoid")


def tanh(x: object, bias: object = None, *, bias_axis: int = -1) -> DeviceArray:
    """``tanh(x + bias)``."""
    return _activation("tanh", x, bias, bias_axis, "tanh")
