"""Normalizations: layer norm, RMS norm (both per row) and batch norm (inference, per channel).

- ``layer_norm(x, normalized_shape=None, weight=None, bias=None, eps=1e-5)``: over the trailing
  ``normalized_shape`` dimensions (default: the last one): ``(x - mean) / sqrt(var + eps) * w + b``
  with the biased variance, computed in two passes (mean, then the mean of squared deviations),
  which stays accurate when |mean| >> std.
- ``rms_norm(x, weight=None, eps=1e-6)``: over the last dimension: ``x / sqrt(mean(x^2) + eps) * w``.
- ``batch_norm(x, running_mean, running_var, weight=None, bias=None, eps=1e-5, layout="NCHW")``:
  inference with the running statistics, channels on axis 1 (NCHW) or the last axis (NHWC).

Kernel families: ``dnn_norm`` (one row per warp for rows up to ``DISPATCH["WARP_MAX_COLS"]``,
else one row per CTA; ``algo="warp"|"block"`` forces one) and ``dnn_batchnorm`` (one thread per
element). float32, float16, bfloat16 (statistics in f32); results are new arrays.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
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

#: provisional (not yet measured on the H200): rows up to this many elements go one per warp
DISPATCH = {"WARP_MAX_COLS": 1024, "WARP_THREADS": 128, "BLOCK_THREADS": 512}
NORM_KINDS = ("layer", "rms")


@dataclass(frozen=True)
class NormSpec(KernelSpec):
    """One row-normalization kernel."""

    family: ClassVar[str] = "dnn_norm"
    kind: str = "layer"
    dtype: str = "f32"
    variant: str = "warp"
    threads: int = 128
    vec: int = 1
    has_weight: bool = False
    has_bias: bool = False
    stats: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in NORM_KINDS or self.variant not in ("warp", "block"):
            raise ValueError(f"NormSpec: kind={self.kind!r}, variant={self.variant!r}; allowed kinds "
                             f"{NORM_KINDS}, variants ('warp', 'block')")
        if self.dtype not in C.ELEMENT_BYTES or self.vec not in (1, 2, 4):
            raise ValueError(f"NormSpec: dtype={self.dtype!r}, vec={self.vec}")
        if self.kind == "rms" and self.has_bias:
            raise ValueError("NormSpec: rms norm has no bias")


def generate_norm(spec: NormSpec) -> str:
    """PTX of one norm kernel. Params: x, y, w, b (u64; unused ones may be 0), rows, cols (u32),
    eps (f32), mean, rstd (u64: with ``stats`` the float32 row statistics are written there)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    x, y, w, b = kb.param_ptr("x"), kb.param_ptr("y"), kb.param_ptr("w"), kb.param_ptr("b")
    rows, cols, eps = kb.param("rows", "u32"), kb.param("cols", "u32"), kb.param("eps", "f32")
    mean_p, rstd_p = kb.param_ptr("mean"), kb.param_ptr("rstd")
    size, vec, elem = C.ELEMENT_BYTES[spec.dtype], spec.vec, spec.dtype
    tid = kb.tid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    warps = spec.threads // 32
    if spec.variant == "warp":
        row, member, group = kb.mad(kb.ctaid(), warps, warp), lane, 32
    else:
        row, member, group = kb.ctaid(), tid, spec.threads
        scratch = kb.shared("scratch", "f32", warps)
    kb.ret(kb.setp("ge", row, rows))
    offset = kb.mul(row, cols, mode="wide")
    xrow, yrow = kb.addr(x, offset, size), kb.addr(y, offset, size)
    start = kb.mul(member, vec) if vec > 1 else member
    step = group * vec
    inv_n = kb.div(1.0, kb.cvt(cols, "f32"), type_="f32")

    def row_sum(term):
        acc = kb.mov(0.0, "f32")
        with kb.loop(start, cols, step) as j:
            for v in C.load_f32(kb, elem, kb.addr(xrow, j, size), vec=vec):
                kb.add(acc, term(v), out=acc)
        if spec.variant == "warp":
            return C.warp_allreduce(kb, (acc,), C.combine_sum)[0]
        return C.block_allreduce(kb, (acc,), C.combine_sum, scratch, warps, warp, lane)[0]

    if spec.kind == "layer":
        mean = kb.mul(row_sum(lambda v: v), inv_n)
        def squared_deviation(v):
            d = kb.sub(v, mean)
            return kb.mul(d, d)

        var = kb.mul(row_sum(squared_deviation), inv_n)
    else:
        mean = None
        var = kb.mul(row_sum(lambda v: kb.mul(v, v)), inv_n)
    rstd = kb.rsqrt(kb.add(var, eps))
    if spec.stats:  # what the backward pass reads (norms_backward)
        with kb.if_(kb.setp("eq", member, 0)):
            if mean is not None:
                kb.st("global", kb.addr(mean_p, row, 4), mean)
            kb.st("global", kb.addr(rstd_p, row, 4), rstd)
    with kb.loop(start, cols, step) as j:
        vals = C.load_f32(kb, elem, kb.addr(xrow, j, size), vec=vec)
        ws = C.load_f32(kb, elem, kb.addr(w, j, size), vec=vec) if spec.has_weight else None
        bs = C.load_f32(kb, elem, kb.addr(b, j, size), vec=vec) if spec.has_bias else None
        out = []
        for k, v in enumerate(vals):
            r = kb.mul(kb.sub(v, mean) if mean is not None else v, rstd)
            if ws is not None:
                r = kb.mul(r, ws[k])
            if bs is not None:
                r = kb.add(r, bs[k])
            out.append(r)
        C.store_f32(kb, elem, kb.addr(yrow, j, size), out)
    return kb.ptx()


def norm_configurations(arch: str) -> list[NormSpec]:
    """Both kinds, both variants, every dtype, vector widths 1 and 4 (f32) or 1 and 2 (halves),
    affine and plain, with and without the statistics output."""
    specs = []
    for kind in NORM_KINDS:
        for dtype in ("f32", "f16", "bf16"):
            for variant, threads in (("warp", DISPATCH["WARP_THREADS"]), ("block", DISPATCH["BLOCK_THREADS"])):
                for vec in ((1, 4) if dtype == "f32" else (1, 2, 4)):
                    for affine in (False, True):
                        for stats in (False, True):
                            specs.append(NormSpec(arch=arch, kind=kind, dtype=dtype, variant=variant,
                                                  threads=threads, vec=vec, has_weight=affine,
                                                  has_bias=affine and kind == "layer", stats=stats))
    return specs


registry.register_family(NormSpec.family, NormSpec, generate_norm, norm_configurations)


@dataclass(frozen=True)
class BatchNormSpec(KernelSpec):
    """Batch norm inference: one thread per element, channel = (i // inner) % channels."""

    family: ClassVar[str] = "dnn_batchnorm"
    dtype: str = "f32"
    has_weight: bool = False
    has_bias: bool = False
    threads: int = 256


def generate_batchnorm(spec: BatchNormSpec) -> str:
    """PTX of one batch-norm kernel. Params: x, y, mean, var, w, b (u64), n, inner, channels
    (u32), eps (f32)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    x, y, mean, var, w, b = (kb.param_ptr(p) for p in ("x", "y", "mean", "var", "w", "b"))
    n, inner, channels = kb.param("n", "u32"), kb.param("inner", "u32"), kb.param("channels", "u32")
    eps = kb.param("eps", "f32")
    size, elem = C.ELEMENT_BYTES[spec.dtype], spec.dtype
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        c = C.urem(kb, kb.div(i, inner), channels)
        v = C.load_f32(kb, elem, kb.addr(x, i, size))[0]
        mu = C.load_f32(kb, elem, kb.addr(mean, c, size))[0]
        sigma2 = C.load_f32(kb, elem, kb.addr(var, c, size))[0]
        r = kb.mul(kb.sub(v, mu), kb.rsqrt(kb.add(sigma2, eps)))
        if spec.has_weight:
            r = kb.mul(r, C.load_f32(kb, elem, kb.addr(w, c, size))[0])
        if spec.has_bias:
            r = kb.add(r, C.load_f32(kb, elem, kb.addr(b, c, size))[0])
        C.store_f32(kb, elem, kb.addr(y, i, size), [r])
    return kb.ptx()


def batchnorm_configurations(arch: str) -> list[BatchNormSpec]:
    """Every dtype, with and without the affine parameters."""
    return [BatchNormSpec(arch=arch, dtype=d, has_weight=a, has_bias=a) for d in ("f32", "f16", "bf16")
            for a in (False, True)]


registry.register_family(BatchNormSpec.family, BatchNormSpec, generate_batchnorm, batchnorm_configurations)


# -- problems and plans --------------------------------------------------------------------------
@dataclass(frozen=True)
class NormProblem:
    """One layer/RMS norm call: ``kind`` ("layer" or "rms"), element type, rows x cols, row
    variant, vector width, which affine parameters are given, eps."""

    kind: str
    dtype: str
    rows: int
    cols: int
    variant: str
    vec: int
    has_weight: bool
    has_bias: bool
    eps: float
    stats: bool = False


def plan(problem: NormProblem, device) -> LaunchPlan:
    """The launch plan of a row norm; ``run`` takes pointers (x, out, weight or 0, bias or 0,
    mean or 0, rstd or 0)."""
    p = problem
    threads = DISPATCH["WARP_THREADS"] if p.variant == "warp" else DISPATCH["BLOCK_THREADS"]
    spec = NormSpec(arch=device.arch, kind=p.kind, dtype=p.dtype, variant=p.variant, threads=threads, vec=p.vec,
                    has_weight=p.has_weight, has_bias=p.has_bias, stats=p.stats)
    grid = -(-p.rows // (threads // 32)) if p.variant == "warp" else p.rows
    rows, cols, eps = np.uint32(p.rows), np.uint32(p.cols), np.float32(p.eps)

    def bind(ptr, s, ws):
        return (ptr[0], ptr[1], ptr[2], ptr[3], rows, cols, eps, ptr[4], ptr[5])

    return LaunchPlan(f"{p.kind}_norm", [KernelStep(spec, grid, threads, bind)])


@dataclass(frozen=True)
class BatchNormProblem:
    """One inference batch norm: element type, element count, elements per channel run
    (``inner``), channels, which affine parameters are given, eps."""

    dtype: str
    size: int
    inner: int
    channels: int
    has_weight: bool
    has_bias: bool
    eps: float


def batch_norm_plan(problem: BatchNormProblem, device) -> LaunchPlan:
    """The launch plan of a batch norm; ``run`` takes pointers (x, out, mean, var, w or 0, b or 0)."""
    p = problem
    spec = BatchNormSpec(arch=device.arch, dtype=p.dtype, has_weight=p.has_weight, has_bias=p.has_bias)
    size, inner, channels, eps = np.uint32(p.size), np.uint32(p.inner), np.uint32(p.channels), np.float32(p.eps)

    def bind(ptr, s, ws):
        return (*ptr, size, inner, channels, eps)

    return LaunchPlan("batch_norm", [KernelStep(spec, -(-p.size // spec.threads), spec.threads, bind)])


#: plans by (problem, device ordinal)
PLANS = PlanCache("norms")
BATCH_PLANS = PlanCache("batch_norm")


# -- public calls ---------------------------------------------------------------------------------
def _row_norm(kind: str, xa: DeviceArray, cols: int, weight: object, bias: object, eps: float,
              param_shape: tuple[int, ...], op: str, algo: str | None, return_stats: bool = False):
    if algo not in (None, "warp", "block"):
        raise ValueError(f"{op}: algo={algo!r}; allowed None, 'warp', 'block'")
    wa = C.check_param_array(weight, op, "weight", param_shape, xa.dtype) if weight is not None else None
    ba = C.check_param_array(bias, op, "bias", param_shape, xa.dtype) if bias is not None else None
    rows = xa.size // cols if cols else 0
    C.check_u32_count(rows, op, "the number of rows")
    C.check_u32_count(cols, op, "the row length")
    xa = C.contiguous(xa)
    out = empty(xa.shape, xa.dtype, stream=xa.stream)
    stats_shape = tuple(xa.shape[:xa.ndim - len(param_shape)]) + (1,) * len(param_shape)
    mean = empty(stats_shape, "float32", stream=xa.stream) if return_stats and kind == "layer" else None
    rstd = empty(stats_shape, "float32", stream=xa.stream) if return_stats else None
    stats = tuple(a for a in (mean, rstd) if a is not None)
    if xa.size == 0:
        return (out, *stats) if return_stats else out
    elem = C.PTX_ELEMENT[C.dtype_name_of(xa)]
    variant = algo or ("warp" if cols <= DISPATCH["WARP_MAX_COLS"] else "block")
    arrays = tuple(a for a in (xa, out, wa, ba) if a is not None)
    vec = C.vector_width(arrays, cols, C.ELEMENT_BYTES[elem], (4,) if elem == "f32" else (4, 2))
    problem = NormProblem(kind, elem, rows, cols, variant, vec, wa is not None, ba is not None, eps,
                          bool(return_stats))
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((xa.ptr, out.ptr, 0 if wa is None else wa.ptr, 0 if ba is None else ba.ptr,
                     0 if mean is None else mean.ptr, 0 if rstd is None else rstd.ptr), (), C.stream_of(xa))
    return (out, *stats) if return_stats else out


def normalized_cols(xa: DeviceArray, normalized_shape: int | Sequence[int] | None, op: str) -> tuple[int, ...]:
    """``normalized_shape`` (None: the last dimension) checked against the trailing dimensions
    of ``xa``, as a tuple of ints (shared with the backward pass)."""
    if normalized_shape is None:
        shape = (xa.shape[-1],)
    else:
        try:  # Python and numpy ints only: not 1024.0, not bools, not device arrays (a device
            # array's __index__ reads its value from the device, as numpy's does)
            dims = [normalized_shape] if isinstance(normalized_shape, (int, np.integer)) else list(normalized_shape)
            if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in dims):
                raise TypeError
            shape = tuple(operator.index(d) for d in dims)
        except TypeError:
            raise TypeError(f"{op}: normalized_shape={normalized_shape!r}; it must be an int or a "
                            f"sequence of ints") from None
    if not shape or len(shape) > xa.ndim or tuple(xa.shape[-len(shape):]) != shape:
        raise ValueError(f"{op}: normalized_shape={shape} must equal the trailing dimensions of x, "
                         f"whose shape is {tuple(xa.shape)}")
    return shape


def layer_norm(x: object, normalized_shape: int | Sequence[int] | None = None, weight: object = None,
               bias: object = None, eps: float = 1e-5, *, algo: str | None = None, return_stats: bool = False):
    """Layer normalization of ``x`` over its trailing ``normalized_shape`` dimensions (default:
    the last dimension), as in ``torch.nn.functional.layer_norm``. ``weight`` and ``bias`` have
    shape ``normalized_shape`` and x's dtype. ``return_stats=True`` returns ``(y, mean, rstd)``
    as ``torch.native_layer_norm`` does: float32 statistics of shape ``x.shape[:-k] + (1,) * k``
    (k = len(normalized_shape)), what ``layer_norm_backward`` reads. Raises TypeError/ValueError before any launch for a
    non-float dtype, a normalized_shape that does not match x's trailing dimensions, parameter
    shape or dtype mismatches, or a negative eps."""
    xa = C.as_float_array(x, "layer_norm")
    if xa.ndim == 0:
        raise ValueError("layer_norm: x is 0-d; it needs at least one dimension")
    shape = normalized_cols(xa, normalized_shape, "layer_norm")
    cols = int(np.prod(shape, dtype=np.int64))
    return _row_norm("layer", xa, cols, weight, bias, C.check_eps(eps, "layer_norm"), shape, "layer_norm", algo,
                     return_stats)


def rms_norm(x: object, weight: object = None, eps: float = 1e-6, *, algo: str | None = None,
             return_stats: bool = False):
    """RMS normalization of ``x`` over its last dimension: ``x / sqrt(mean(x^2) + eps) * weight``
    (``weight`` of shape ``(x.shape[-1],)``). ``return_stats=True`` returns ``(y, rstd)``, rstd
    float32 of shape ``x.shape[:-1] + (1,)`` (what ``rms_norm_backward`` reads). Raises like
    ``layer_norm``."""
    xa = C.as_float_array(x, "rms_norm")
    if xa.ndim == 0:
        raise ValueError("rms_norm: x is 0-d; it needs at least one dimension")
    cols = xa.shape[-1]
    return _row_norm("rms", xa, cols, weight, None, C.check_eps(eps, "rms_norm"), (cols,), "rms_norm", algo,
                     return_stats)


def batch_norm(x: object, running_mean: object, running_var: object, weight: object = None,
               bias: object = None, eps: float = 1e-5, layout: str = "NCHW") -> DeviceArray:
    """Batch normalization for inference: ``(x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c]``.

    ``x`` has at least 2 dimensions; its channel axis is 1 for ``layout="NCHW"`` (also NC, NCL,
    NCDHW) and the last for ``"NHWC"``. The statistics and affine parameters have shape ``(C,)``
    and x's dtype. Raises TypeError/ValueError before any launch on bad dtypes, shapes, layout or
    eps."""
    op = "batch_norm"
    xa = C.as_float_array(x, op)
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"{op}: layout={layout!r}; allowed 'NCHW' or 'NHWC'")
    if xa.ndim < 2:
        raise ValueError(f"{op}: x has shape {tuple(xa.shape)}; it needs at least 2 dimensions (N, C, ...)")
    axis = 1 if layout == "NCHW" else xa.ndim - 1
    channels = xa.shape[axis]
    inner = int(np.prod(xa.shape[axis + 1:], dtype=np.int64))
    eps = C.check_eps(eps, op)
    params = [C.check_param_array(p, op, name, (channels,), xa.dtype) if p is not None else None
              for p, name in ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"),
                              (bias, "bias"))]
    if params[0] is None or params[1] is None:
        raise ValueError(f"{op}: running_mean and running_var are required (inference)")
    C.check_u32_count(xa.size, op)
    xa = C.contiguous(xa)
    out = empty(xa.shape, xa.dtype, stream=xa.stream)
    if xa.size == 0:
        return out
    problem = BatchNormProblem(C.PTX_ELEMENT[C.dtype_name_of(xa)], xa.size, max(inner, 1), channels,
                               params[2] is not None, params[3] is not None, eps)
    device = current_device_facts()
    launch_plan = BATCH_PLANS.get_or_build((problem, device.ordinal), lambda: batch_norm_plan(problem, device))
    launch_plan.run((xa.ptr, out.ptr, *(0 if p is None else p.ptr for p in params)), (), C.stream_of(xa))
    return out
