"""Backward passes of softmax and log-softmax, from the forward's output (as PyTorch's
``_softmax_backward_data(grad_output, output, dim)``):

- ``softmax_backward(dy, y, axis=-1)``: ``dx = y * (dy - sum(dy * y))``;
- ``log_softmax_backward(dy, y, axis=-1)``: ``dx = dy - exp(y) * sum(dy)``;

sums along ``axis``, in float32 for every dtype (float32, float16, bfloat16; halves rounded once
at the store). Kernel family ``dnn_softmax_bwd``: ``"warp"`` (one row per warp, short rows),
``"block"`` (one row per CTA, long rows), both two passes over the row (the reduction, then the
write), 16-byte loads where the row length and pointers allow; ``"strided"`` for an axis other
than the last (one thread per column walking the axis, no transpose).
"""

from __future__ import annotations

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
from . import _rows as R

VARIANTS = ("warp", "block", "strided")
STRIDED_THREADS = 256


@dataclass(frozen=True)
class SoftmaxBackwardSpec(KernelSpec):
    """One softmax (``log=False``) or log-softmax backward kernel."""

    family: ClassVar[str] = "dnn_softmax_bwd"
    dtype: str = "f32"
    log: bool = False
    variant: str = "warp"
    threads: int = 128
    vec: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in VARIANTS:
            raise ValueError(f"SoftmaxBackwardSpec: variant={self.variant!r}; allowed {VARIANTS}")
        if self.dtype not in C.ELEMENT_BYTES:
            raise ValueError(f"SoftmaxBackwardSpec: dtype={self.dtype!r}; allowed {tuple(C.ELEMENT_BYTES)}")
        if self.vec not in (1, 2, 4) or (self.variant == "strided" and self.vec != 1):
            raise ValueError(f"SoftmaxBackwardSpec: vec={self.vec}; allowed 1, 2, 4 (1 for strided)")


def _term(kb: KernelBuilder, log: bool, g: Value, y: Value) -> Value:
    return g if log else kb.mul(g, y)


def _grad(kb: KernelBuilder, log: bool, g: Value, y: Value, s: Value) -> Value:
    if log:
        return kb.sub(g, kb.mul(C.exp_f32(kb, y), s))
    return kb.mul(y, kb.sub(g, s))


def generate(spec: SoftmaxBackwardSpec) -> str:
    """PTX of one kernel. Row variants take (dy, y, dx, rows, cols); ``strided`` takes (dy, y,
    dx, columns = outer*inner, n = axis length, inner)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    dy, y, dx = kb.param_ptr("dy"), kb.param_ptr("y"), kb.param_ptr("dx")
    size, elem = C.ELEMENT_BYTES[spec.dtype], spec.dtype
    if spec.variant == "strided":
        columns, n, inner = kb.param("columns", "u32"), kb.param("n", "u32"), kb.param("inner", "u32")
        col = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
        kb.ret(kb.setp("ge", col, columns))
        outer_i = kb.div(col, inner)
        inner_i = kb.sub(col, kb.mul(outer_i, inner))
        base = kb.add(kb.mul(kb.mul(outer_i, n, mode="wide"), kb.cvt(inner, "u64")), kb.cvt(inner_i, "u64"))
        stride = kb.mul(inner, size, mode="wide")
        s = kb.mov(0.0, "f32")
        pg, py = kb.mov(kb.addr(dy, base, size), "u64"), kb.mov(kb.addr(y, base, size), "u64")
        with kb.loop(0, n, 1, type_="u32"):
            g, v = C.load_f32(kb, elem, pg)[0], C.load_f32(kb, elem, py)[0]
            kb.add(s, _term(kb, spec.log, g, v), out=s)
            kb.add(pg, stride, out=pg)
            kb.add(py, stride, out=py)
        kb.assign(pg, kb.addr(dy, base, size))
        kb.assign(py, kb.addr(y, base, size))
        pd = kb.mov(kb.addr(dx, base, size), "u64")
        with kb.loop(0, n, 1, type_="u32"):
            g, v = C.load_f32(kb, elem, pg)[0], C.load_f32(kb, elem, py)[0]
            C.store_f32(kb, elem, pd, [_grad(kb, spec.log, g, v, s)])
            for p in (pg, py, pd):
                kb.add(p, stride, out=p)
        return kb.ptx()
    rows, cols = kb.param("rows", "u32"), kb.param("cols", "u32")
    f = R.RowFrame(kb, spec.variant, spec.threads, spec.vec)
    kb.ret(kb.setp("ge", f.row, rows))
    offset = kb.mul(f.row, cols, mode="wide")
    gro, yro, dro = (kb.addr(p, offset, size) for p in (dy, y, dx))
    s = kb.mov(0.0, "f32")
    with kb.loop(f.start, cols, f.step) as j:
        gs = C.load_f32(kb, elem, kb.addr(gro, j, size), vec=spec.vec)
        ys = C.load_f32(kb, elem, kb.addr(yro, j, size), vec=spec.vec)
        for g, v in zip(gs, ys):
            kb.add(s, _term(kb, spec.log, g, v), out=s)
    (s,) = f.reduce((s,))
    with kb.loop(f.start, cols, f.step) as j:
        gs = C.load_f32(kb, elem, kb.addr(gro, j, size), vec=spec.vec)
        ys = C.load_f32(kb, elem, kb.addr(yro, j, size), vec=spec.vec)
        C.store_f32(kb, elem, kb.addr(dro, j, size), [_grad(kb, spec.log, g, v, s) for g, v in zip(gs, ys)])
    return kb.ptx()


def configurations(arch: str) -> list[SoftmaxBackwardSpec]:
    """Every dtype, both forms, both row variants at every vector width dispatch picks, strided."""
    specs = []
    for dtype in ("f32", "f16", "bf16"):
        for log in (False, True):
            for variant in R.VARIANTS:
                threads = R.row_geometry(variant, 1)[1]
                for vec in (1, *R.row_vectors(dtype)):
                    specs.append(SoftmaxBackwardSpec(arch=arch, dtype=dtype, log=log, variant=variant,
                                                     threads=threads, vec=vec))
            specs.append(SoftmaxBackwardSpec(arch=arch, dtype=dtype, log=log, variant="strided",
                                             threads=STRIDED_THREADS))
    return specs


registry.register_family(SoftmaxBackwardSpec.family, SoftmaxBackwardSpec, generate, configurations)


@dataclass(frozen=True)
class SoftmaxBackwardProblem:
    """One call: element type, log or not, rows x cols (for the strided variant rows counts the
    columns and inner the elements after the axis), variant, vector width."""

    dtype: str
    log: bool
    rows: int
    cols: int
    inner: int
    variant: str
    vec: int


def plan(problem: SoftmaxBackwardProblem, device) -> LaunchPlan:
    """One kernel; ``run`` takes pointers (dy, y, dx)."""
    p = problem
    if p.variant == "strided":
        spec = SoftmaxBackwardSpec(arch=device.arch, dtype=p.dtype, log=p.log, variant="strided",
                                   threads=STRIDED_THREADS)
        args = R.u32(p.rows, p.cols, p.inner)
        grid, threads = -(-p.rows // STRIDED_THREADS), STRIDED_THREADS
    else:
        grid, threads = R.row_geometry(p.variant, p.rows)
        spec = SoftmaxBackwardSpec(arch=device.arch, dtype=p.dtype, log=p.log, variant=p.variant,
                                   threads=threads, vec=p.vec)
        args = R.u32(p.rows, p.cols)

    def bind(ptr, s, ws):
        return (ptr[0], ptr[1], ptr[2], *args)

    return LaunchPlan("softmax_backward", [KernelStep(spec, grid, threads, bind)])


#: plans by (problem, device ordinal)
PLANS = PlanCache("softmax_backward")


def _backward(dy: object, y: object, axis: int, log: bool, algo: str | None, op: str) -> DeviceArray:
    dya, ya = R.check_pair(dy, y, op, ("dy", "y"))
    if ya.ndim == 0:
        raise ValueError(f"{op}: y is 0-d; it needs at least one dimension")
    ax = C.normalize_axis(axis, ya.ndim, op)
    last = ax == ya.ndim - 1
    n = ya.shape[ax]
    if algo is not None and not last:
        raise ValueError(f"{op}: algo={algo!r} applies to the last axis only; axis {ax} of a {ya.ndim}-d "
                         f"array always uses the strided kernel")
    variant = R.choose_variant(n, algo, op) if last else "strided"
    C.check_u32_count(ya.size, op)
    out = empty(ya.shape, ya.dtype, stream=ya.stream)
    if ya.size == 0:
        return out
    elem = C.PTX_ELEMENT[C.dtype_name_of(ya)]
    if last:
        vec = C.vector_width((dya, ya, out), n, C.ELEMENT_BYTES[elem], R.row_vectors(elem))
        problem = SoftmaxBackwardProblem(elem, log, ya.size // n, n, 0, variant, vec)
    else:
        inner = int(np.prod(ya.shape[ax + 1:], dtype=np.int64))
        problem = SoftmaxBackwardProblem(elem, log, ya.size // n, n, inner, "strided", 1)
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((dya.ptr, ya.ptr, out.ptr), (), C.stream_of(ya))
    return out


def softmax_backward(dy: object, y: object, axis: int = -1, *, algo: str | None = None) -> DeviceArray:
    """The gradient of ``softmax(x, axis)`` with respect to x, from the upstream gradient ``dy``
    and the forward's output ``y`` (same shape and dtype: float32, float16, bfloat16):
    ``y * (dy - sum(dy * y, axis))``. ``algo``: ``"warp"`` or ``"block"`` forces a row variant
    (last axis only). Raises TypeError (dtypes) or ValueError (shapes, axis, algo) before any
    launch."""
    return _backward(dy, y, axis, False, algo, "softmax_backward")


def log_softmax_backward(dy: object, y: object, axis: int = -1, *, algo: str | None = None) -> DeviceArray:
    """The gradient of ``log_softmax(x, axis)`` with respect to x, from ``dy`` and the forward's
    output ``y``: ``dy - exp(y) * sum(dy, axis)``. Arguments and errors as ``softmax_backward``."""
    return _backward(dy, y, axis, True, algo, "log_softmax_backward")
