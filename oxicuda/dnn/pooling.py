"""2D max and average pooling over NCHW or NHWC tensors.

``max_pool2d(x, kernel_size, stride=None, padding=0, layout="NCHW")`` and
``avg_pool2d(x, kernel_size, stride=None, padding=0, layout="NCHW", count_include_pad=True)``
follow PyTorch (floor mode): output size ``(H + 2p - k) // s + 1``; max pooling pads with -inf
and returns NaN for a window holding a NaN; average pooling divides by ``kh * kw`` when
``count_include_pad`` (every window lies inside the padded input in floor mode) or by the number
of window positions inside the input otherwise. ``padding`` may be at most half the kernel size.

Kernel family ``dnn_pool2d``: one thread per output element, the window walked with runtime
loops; float32, float16, bfloat16 (accumulated in f32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.driver.facts import current_device_facts
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from . import _common as C

THREADS = 256


@dataclass(frozen=True)
class PoolSpec(KernelSpec):
    """One pooling kernel."""

    family: ClassVar[str] = "dnn_pool2d"
    op: str = "max"
    dtype: str = "f32"
    layout: str = "NCHW"
    count_include_pad: bool = True
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.op not in ("max", "avg") or self.layout not in ("NCHW", "NHWC") or self.dtype not in C.ELEMENT_BYTES:
            raise ValueError(f"PoolSpec: op={self.op!r}, layout={self.layout!r}, dtype={self.dtype!r}")


def generate_pool(spec: PoolSpec) -> str:
    """PTX of one pooling kernel. Params: x, y (u64), total, C, H, W, OH, OW, KH, KW, SH, SW,
    PH, PW (u32)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    x, y = kb.param_ptr("x"), kb.param_ptr("y")
    names = ("total", "C", "H", "W", "OH", "OW", "KH", "KW", "SH", "SW", "PH", "PW")
    total, ch, h, w, oh_n, ow_n, kh, kw, sh, sw, ph, pw = (kb.param(n, "u32") for n in names)
    size, elem = C.ELEMENT_BYTES[spec.dtype], spec.dtype
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", i, total))
    if spec.layout == "NCHW":
        ow = C.urem(kb, i, ow_n)
        t = kb.div(i, ow_n)
        oh = C.urem(kb, t, oh_n)
        t = kb.div(t, oh_n)           # n * C + c
        plane = kb.mul(t, kb.mul(h, w))
    else:
        c = C.urem(kb, i, ch)
        t = kb.div(i, ch)
        ow = C.urem(kb, t, ow_n)
        t = kb.div(t, ow_n)
        oh = C.urem(kb, t, oh_n)
        n = kb.div(t, oh_n)
    h0 = kb.sub(kb.mul(oh, sh), ph)   # u32 wrap-around: negative rows compare >= H below
    w0 = kb.sub(kb.mul(ow, sw), pw)
    acc = kb.mov(C.NEG_INF if spec.op == "max" else 0.0, "f32")
    nan_seen = kb.mov(0, "u32")
    count = kb.mov(0, "u32")
    with kb.loop(0, kh, 1, type_="u32") as a:
        hh = kb.add(h0, a)
        with kb.if_(kb.setp("lt", hh, h)), kb.loop(0, kw, 1, type_="u32") as bcol:
            ww = kb.add(w0, bcol)
            with kb.if_(kb.setp("lt", ww, w)):
                if spec.layout == "NCHW":
                    idx = kb.add(plane, kb.mad(hh, w, ww))
                else:
                    idx = kb.mad(kb.mad(kb.mad(n, h, hh), w, ww), ch, c)
                v = C.load_f32(kb, elem, kb.addr(x, idx, size))[0]
                if spec.op == "max":
                    kb.max(acc, v, out=acc)
                    kb.or_(nan_seen, kb.selp(1, 0, kb.setp("nan", v, v), type_="u32"), out=nan_seen)
                else:
                    kb.add(acc, v, out=acc)
                    kb.add(count, 1, out=count)
    if spec.op == "max":
        res = kb.selp(float("nan"), acc, kb.setp("ne", nan_seen, 0))
    else:
        denom = kb.mul(kh, kw) if spec.count_include_pad else count
        res = kb.div(acc, kb.cvt(denom, "f32"))
    C.store_f32(kb, elem, kb.addr(y, i, size), [res])
    return kb.ptx()


def pool_configurations(arch: str) -> list[PoolSpec]:
    """Both ops, layouts and padding modes, every dtype."""
    specs = []
    for dtype in ("f32", "f16", "bf16"):
        for layout in ("NCHW", "NHWC"):
            specs.append(PoolSpec(arch=arch, op="max", dtype=dtype, layout=layout))
            for include in (True, False):
                specs.append(PoolSpec(arch=arch, op="avg", dtype=dtype, layout=layout, count_include_pad=include))
    return specs


registry.register_family(PoolSpec.family, PoolSpec, generate_pool, pool_configurations)


@dataclass(frozen=True)
class PoolProblem:
    """One pooling call: op ("max" or "avg"), element type, layout, count_include_pad and the
    geometry (outputs, C, H, W, OH, OW, KH, KW, SH, SW, PH, PW)."""

    op: str
    dtype: str
    layout: str
    count_include_pad: bool
    geometry: tuple[int, ...]


def plan(problem: PoolProblem, device) -> LaunchPlan:
    """The launch plan of a pooling call; ``run`` takes pointers (x, out)."""
    p = problem
    spec = PoolSpec(arch=device.arch, op=p.op, dtype=p.dtype, layout=p.layout, count_include_pad=p.count_include_pad)
    args = tuple(np.uint32(v) for v in p.geometry)

    def bind(ptr, s, ws):
        return (ptr[0], ptr[1], *args)

    return LaunchPlan("pool", [KernelStep(spec, -(-p.geometry[0] // spec.threads), spec.threads, bind)])


#: plans by (problem, device ordinal)
PLANS = PlanCache("pool")


def _pool(kind: str, x: object, kernel_size: object, stride: object, padding: object, layout: str,
          count_include_pad: bool, op: str) -> DeviceArray:
    xa = C.as_float_array(x, op)
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"{op}: layout={layout!r}; allowed 'NCHW' or 'NHWC'")
    if xa.ndim != 4:
        raise ValueError(f"{op}: x has shape {tuple(xa.shape)}; it must be 4-d ({layout})")
    kh, kw = C.int_pair(kernel_size, "kernel_size", op, 1)
    sh, sw = C.int_pair(kernel_size if stride is None else stride, "stride", op, 1)
    ph, pw = C.int_pair(padding, "padding", op, 0)
    if ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"{op}: padding=({ph}, {pw}) must be at most half the kernel size ({kh}, {kw})")
    if layout == "NCHW":
        n, c, h, w = xa.shape
    else:
        n, h, w, c = xa.shape
    if kh > h + 2 * ph or kw > w + 2 * pw:
        raise ValueError(f"{op}: the window ({kh}, {kw}) is larger than the padded input "
                         f"({h + 2 * ph}, {w + 2 * pw}) (input {h}x{w}, padding ({ph}, {pw}))")
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    out_shape = (n, c, oh, ow) if layout == "NCHW" else (n, oh, ow, c)
    C.check_u32_count(xa.size, op, "the input size")
    xa = C.contiguous(xa)
    out = empty(out_shape, xa.dtype, stream=xa.stream)
    total = n * c * oh * ow
    if total == 0:
        return out
    problem = PoolProblem(kind, C.PTX_ELEMENT[C.dtype_name_of(xa)], layout,
                          bool(count_include_pad) if kind == "avg" else True, (total, c, h, w, oh, ow, kh, kw, sh, sw,
                                                                               ph, pw))
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((xa.ptr, out.ptr), (), C.stream_of(xa))
    return out


def max_pool2d(x: object, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
               padding: int | tuple[int, int] = 0, layout: str = "NCHW") -> DeviceArray:
    """2D max pooling (see the module docstring). Raises TypeError/ValueError before any launch
    for a non-4-d or non-float x, bad sizes, padding over half the kernel, or a window larger
    than the padded input."""
    return _pool("max", x, kernel_size, stride, padding, layout, True, "max_pool2d")


def avg_pool2d(x: object, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
               padding: int | tuple[int, int] = 0, layout: str = "NCHW",
               count_include_pad: bool = True) -> DeviceArray:
    """2D average pooling (see the module docstring); raises like ``max_pool2d``."""
    return _pool("avg", x, kernel_size, stride, padding, layout, count_include_pad, "avg_pool2d")
