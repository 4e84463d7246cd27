"""The second kernel of the tensor-core conv's split-K (``conv_implicit_gemm_tc`` with
``split_k``): ``y[i] = activation(sum_s ws[s * total + i] + bias[channel(i)])`` rounded to
float16/bfloat16, over ``splits`` float32 slabs laid out like y (C-contiguous, either layout).

``channel(i) = (i / inner) % K`` with ``inner`` = OH*OW for NCHW and 1 for NHWC. One thread per
element; launch: grid ceil(total / 256), block 256; parameters ws, y, bias; u32 total, splits,
inner, k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep
from oxicuda.ptx.spec import KernelSpec

from ._common import load_f32, store_f32
from .conv_epilogue import ACTIVATIONS, emit_activation

FAMILY = "conv_tc_split_k_reduce"
DTYPES = ("f16", "bf16")
BLOCK = 256


@dataclass(frozen=True)
class ConvTcSplitKReduceSpec(KernelSpec):
    """The reduce-and-epilogue kernel for one element type, activation and bias."""

    family: ClassVar[str] = FAMILY
    dtype: str = "f16"
    activation: str = "none"
    bias: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES:
            raise ValueError(f"ConvTcSplitKReduceSpec: dtype={self.dtype!r}; allowed {DTYPES}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"ConvTcSplitKReduceSpec: activation={self.activation!r}; allowed {ACTIVATIONS}")


def generate(spec: ConvTcSplitKReduceSpec) -> str:
    """PTX of the reduce kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    ws, y, bias = (kb.param_ptr(n) for n in ("ws", "y", "bias"))
    total, splits, inner, k = (kb.param(n, "u32") for n in ("total", "splits", "inner", "k"))
    kb.reqntid(BLOCK)
    i = kb.mad(kb.ctaid(), BLOCK, kb.tid())
    with kb.if_(kb.setp("lo", i, total)):
        ptr = kb.addr(ws, i, 4)
        step = kb.mul(total, 4, mode="wide", type_="u32")
        acc = kb.ld("global", "f32", ptr)
        with kb.loop(1, splits, 1, type_="u32"):
            kb.add(ptr, step, out=ptr)
            kb.add(acc, kb.ld("global", "f32", ptr), out=acc)
        if spec.bias:
            q = kb.div(i, inner)
            ch = kb.sub(q, kb.mul(kb.div(q, k), k))
            kb.add(acc, load_f32(kb, spec.dtype, kb.addr(bias, ch, 2))[0], out=acc)
        store_f32(kb, spec.dtype, kb.addr(y, i, 2), [emit_activation(kb, acc, spec.activation)])
    return kb.ptx()


def configurations(arch: str) -> list[ConvTcSplitKReduceSpec]:
    """Every element type, activation and bias."""
    return [ConvTcSplitKReduceSpec(arch=arch, dtype=d, activation=a, bias=b)
            for d in DTYPES for a in ACTIVATIONS for b in (False, True)]


registry.register_family(FAMILY, ConvTcSplitKReduceSpec, generate, configurations,
                         archs=("sm_80", "sm_86", "sm_90"))


def reduce_step(arch: str, dtype: str, activation: str, has_bias: bool, ws, total: int, splits: int, inner: int,
                k: int) -> KernelStep:
    """``reduce`` as a launch-plan step writing the plan's pointers[2] (y) with bias pointers[3]:
    ``ws`` maps (pointers, workspace) to the partial slabs."""
    spec = ConvTcSplitKReduceSpec(arch=arch, dtype=dtype, activation=activation, bias=has_bias)

    def bind(ptr, s, w):
        return (ws(ptr, w), ptr[2], ptr[3], total, splits, inner, k)

    return KernelStep(spec, -(-total // BLOCK), BLOCK, bind)
