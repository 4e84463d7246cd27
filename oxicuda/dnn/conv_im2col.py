"""im2col + GEMM convolution: an im2col kernel unrolls x into a column matrix (P x Kred, row-major,
P = N*OH*OW pixels, Kred = C/groups * R * S in the filter's own element order), then
``oxicuda.blas.gemm_core.gemm_colmajor`` multiplies it with the filter, writing y in place
(NCHW: one strided batch over images; NHWC: one GEMM per group), and a bias/activation kernel
finishes when either is asked for. The column matrix lives in a cached workspace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.driver.facts import device_facts
from oxicuda.memory.array import DeviceArray
from oxicuda.memory.workspace import workspace
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import PlanCache
from oxicuda.ptx.spec import KernelSpec

from ._common import ELEMENT_BYTES, dtype_name_of, load_f32, store_f32, stream_of
from .conv_epilogue import ACTIVATIONS, emit_activation
from .conv_geometry import element_strides_nchw

FAMILY_IM2COL = "conv_im2col"
FAMILY_BIAS_ACT = "conv_bias_activation"
BLOCK = 256
LAYOUTS = ("NCHW", "NHWC")
#: launch plans of the im2col and bias/activation kernels (the GEMMs between them have their own)
PLANS = PlanCache("conv_im2col")


@dataclass(frozen=True)
class Im2colSpec(KernelSpec):
    """The im2col kernel of one element type and layout (reduction order)."""

    family: ClassVar[str] = FAMILY_IM2COL
    dtype: str = "f32"
    layout: str = "NCHW"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ELEMENT_BYTES or self.layout not in LAYOUTS:
            raise ValueError(f"Im2colSpec: dtype={self.dtype!r}, layout={self.layout!r}; allowed "
                             f"{tuple(ELEMENT_BYTES)} and {LAYOUTS}")


@dataclass(frozen=True)
class BiasActivationSpec(KernelSpec):
    """y = activation(y + bias[channel]) in place; channel = (i // inner) % K."""

    family: ClassVar[str] = FAMILY_BIAS_ACT
    dtype: str = "f32"
    activation: str = "none"
    bias: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ELEMENT_BYTES or self.activation not in ACTIVATIONS:
            raise ValueError(f"BiasActivationSpec: dtype={self.dtype!r}, activation={self.activation!r}")


def _divmod(kb: KernelBuilder, a: Value, d: Value | int) -> tuple[Value, Value]:
    q = kb.div(a, d, type_="u32")
    return q, kb.sub(a, kb.mul(q, d, type_="u32"))


def generate_im2col(spec: Im2colSpec) -> str:
    """col[p, kk] = x[n, c, oh*st-pad+r*dil, ow*st-pad+s*dil] (0 outside x); one thread per
    element. Parameters: x, col; u32 total, kred, cg, h, w, r, s, oh, ow, st_h, st_w, pad_h,
    pad_w, dil_h, dil_w, xs_n, xs_c, xs_h, xs_w (element strides), c0 (first channel)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x, col = kb.param_ptr("x"), kb.param_ptr("col")
    names = ("total", "kred", "cg", "h", "w", "r", "s", "oh", "ow", "st_h", "st_w", "pad_h", "pad_w",
             "dil_h", "dil_w", "xs_n", "xs_c", "xs_h", "xs_w", "c0")
    p = {n: kb.param(n, "u32") for n in names}
    kb.maxntid(BLOCK)
    es = ELEMENT_BYTES[spec.dtype]
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lo", i, p["total"])):
        pix, kk = _divmod(kb, i, p["kred"])
        n, rest = _divmod(kb, pix, kb.mul(p["oh"], p["ow"]))
        oh, ow = _divmod(kb, rest, p["ow"])
        if spec.layout == "NHWC":
            rs, c = _divmod(kb, kk, p["cg"])
            r, s = _divmod(kb, rs, p["s"])
        else:
            c, rs = _divmod(kb, kk, kb.mul(p["r"], p["s"]))
            r, s = _divmod(kb, rs, p["s"])
        ih = kb.sub(kb.mad(oh, p["st_h"], kb.mul(r, p["dil_h"])), p["pad_h"])
        iw = kb.sub(kb.mad(ow, p["st_w"], kb.mul(s, p["dil_w"])), p["pad_w"])
        ok = kb.and_(kb.setp("lo", ih, p["h"]), kb.setp("lo", iw, p["w"]))
        v = kb.mov(0.0, "f32")
        with kb.if_(ok):
            off = kb.mad(iw, p["xs_w"], kb.mad(ih, p["xs_h"], kb.mad(kb.add(c, p["c0"]), p["xs_c"],
                                                                      kb.mul(n, p["xs_n"]))))
            kb.assign(v, load_f32(kb, spec.dtype, kb.addr(x, off, es))[0])
        store_f32(kb, spec.dtype, kb.addr(col, i, es), [v])
    return kb.ptx()


def generate_bias_activation(spec: BiasActivationSpec) -> str:
    """In place over y: y[i] = activation(y[i] + bias[(i / inner) % k]). Parameters: y, bias;
    u32 total, inner, k."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    y, bias = kb.param_ptr("y"), kb.param_ptr("bias")
    total, inner, k = (kb.param(n, "u32") for n in ("total", "inner", "k"))
    kb.maxntid(BLOCK)
    es = ELEMENT_BYTES[spec.dtype]
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lo", i, total)):
        addr = kb.addr(y, i, es)
        v = load_f32(kb, spec.dtype, addr)[0]
        if spec.bias:
            _, ch = _divmod(kb, kb.div(i, inner), k)
            v = kb.add(v, load_f32(kb, spec.dtype, kb.addr(bias, ch, es))[0])
        store_f32(kb, spec.dtype, addr, [emit_activation(kb, v, spec.activation)])
    return kb.ptx()


def run_im2col(geo, x: DeviceArray, w: DeviceArray, y: DeviceArray, bias: DeviceArray | None,
               activation: str) -> None:
    """conv2d forward by im2col + GEMM over validated, C-contiguous x, w, y (see conv.py)."""
    from oxicuda.blas.gemm_core import gemm_colmajor


    p = geo.problem
    cg, kg = p.c // p.groups, p.k // p.groups
    kred, pixels, ohw = cg * p.r * p.s, p.n * p.oh * p.ow, p.oh * p.ow
    facts, stream = device_facts(), stream_of(y)
    col = workspace((x.dtype, pixels * kred), stream)
    total = pixels * kred
    unroll = PLANS.single(("im2col", facts.ordinal, p.dtype, geo.layout, total),
                          lambda: Im2colSpec(arch=facts.arch, dtype=p.dtype, layout=geo.layout),
                          (total + BLOCK - 1) // BLOCK, BLOCK)
    es = x.dtype.itemsize
    dtype = dtype_name_of(x)
    xs = element_strides_nchw(x, geo.layout)
    for g in range(p.groups):
        unroll.run((), (x.ptr, col.ptr, total, kred, cg, p.h, p.w, p.r, p.s, p.oh, p.ow, p.stride[0], p.stride[1],
                        p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], *xs, g * cg), stream)
        w_g = w.ptr + g * kg * kred * es
        if geo.layout == "NHWC":
            # y (P x K) row-major == column-major (K x P); its group block is W_g (Kg x Kred) @ col^T
            gemm_colmajor("T", "N", kg, pixels, kred, 1.0, w_g, kred, col.ptr, kred, 0.0,
                          y.ptr + g * kg * es, p.k, dtype=dtype, stream=stream, _owned=True)
        else:
            # per image: y_n (OH*OW x Kg, column-major, ld OH*OW) = col_n @ W_g^T
            gemm_colmajor("T", "N", ohw, kg, kred, 1.0, col.ptr, kred, w_g, kred, 0.0,
                          y.ptr + g * kg * ohw * es, ohw, dtype=dtype, batch=p.n, stride_a=ohw * kred,
                          stride_b=0, stride_c=p.k * ohw, stream=stream, _owned=True)
    if bias is not None or activation != "none":
        count, has_bias = pixels * p.k, bias is not None
        epilogue = PLANS.single(("bias_act", facts.ordinal, p.dtype, activation, has_bias, count),
                                lambda: BiasActivationSpec(arch=facts.arch, dtype=p.dtype, activation=activation,
                                                           bias=has_bias),
                                (count + BLOCK - 1) // BLOCK, BLOCK)
        epilogue.run((), (y.ptr, bias.ptr if has_bias else 0, count, ohw if geo.layout == "NCHW" else 1, p.k),
                     stream)


def _im2col_configurations(arch: str) -> list[Im2colSpec]:
    return [Im2colSpec(arch=arch, dtype=d, layout=lay) for d in ELEMENT_BYTES for lay in LAYOUTS]


def _bias_act_configurations(arch: str) -> list[BiasActivationSpec]:
    """Every dtype with each epilogue that runs after the GEMM (bias, activation or both)."""
    return [BiasActivationSpec(arch=arch, dtype=d, activation=a, bias=b) for d in ELEMENT_BYTES
            for a in ACTIVATIONS for b in (False, True) if b or a != "none"]


registry.register_family(FAMILY_IM2COL, Im2colSpec, generate_im2col, _im2col_configurations)
registry.register_family(FAMILY_BIAS_ACT, BiasActivationSpec, generate_bias_activation, _bias_act_configurations)
