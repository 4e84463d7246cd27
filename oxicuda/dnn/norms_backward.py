"""Backward passes of layer norm and RMS norm (PyTorch's ``native_layer_norm_backward`` and
``_fused_rms_norm_backward`` results):

- ``layer_norm_backward(dy, x, normalized_shape, weight, bias, mean=, rstd=, eps=)`` ->
  ``(dx, dweight, dbias)``; with ``xhat = (x - mean) * rstd`` and ``g = dy * weight``:
  ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``, ``dweight = sum_rows(dy * xhat)``,
  ``dbias = sum_rows(dy)``;
- ``rms_norm_backward(dy, x, weight, rstd=, eps=)`` -> ``(dx, dweight)``; ``xhat = x * rstd``:
  ``dx = rstd * (g - xhat * mean(g * xhat))``, ``dweight = sum_rows(dy * xhat)``.

The row statistics (float32 ``mean``/``rstd``, what ``layer_norm(..., return_stats=True)``
returns) are read when given and recomputed in the kernel (two passes, as the forward) when not.
All sums are float32 whatever the dtype (float32, float16, bfloat16).

Kernels (family ``dnn_norm_bwd``): the dx kernel, a row per warp (short rows) or per CTA (long
rows), which also writes the recomputed statistics to a workspace; then, when a weight is given,
``dnn_norm_param_grad`` (a thread per column over a chunk of rows, float32 partial sums per chunk)
and ``dnn_norm_param_reduce`` (a thread per column summing the chunks in order). The parameter
gradients are reduced on the device in a fixed order: deterministic, no atomics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.driver.facts import current_device_facts
from oxicuda.memory.array import DeviceArray, asarray, empty
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from . import _common as C
from . import _rows as R
from .norms import NORM_KINDS, normalized_cols

PARAM_THREADS = 256
#: at most this many row chunks (partial sums per column) for the parameter gradients
MAX_CHUNKS = 1024


@dataclass(frozen=True)
class NormBackwardSpec(KernelSpec):
    """The dx kernel of a layer (``kind="layer"``) or RMS norm backward."""

    family: ClassVar[str] = "dnn_norm_bwd"
    kind: str = "layer"
    dtype: str = "f32"
    variant: str = "warp"
    threads: int = 128
    vec: int = 1
    has_weight: bool = False
    stats_in: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in NORM_KINDS or self.variant not in R.VARIANTS:
            raise ValueError(f"NormBackwardSpec: kind={self.kind!r}, variant={self.variant!r}")
        if self.dtype not in C.ELEMENT_BYTES or self.vec not in (1, 2, 4):
            raise ValueError(f"NormBackwardSpec: dtype={self.dtype!r}, vec={self.vec}")


def generate(spec: NormBackwardSpec) -> str:
    """PTX of the dx kernel. Params: dy, x, w, dx, mean, rstd (u64; w may be 0 without a weight,
    mean is unused for rms), rows, cols (u32), eps (f32). With ``stats_in`` the statistics are
    read from mean/rstd, else computed and written there (float32, one per row)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    dy, x, w, dx, mean_p, rstd_p = (kb.param_ptr(n) for n in ("dy", "x", "w", "dx", "mean", "rstd"))
    rows, cols, eps = kb.param("rows", "u32"), kb.param("cols", "u32"), kb.param("eps", "f32")
    size, vec, elem = C.ELEMENT_BYTES[spec.dtype], spec.vec, spec.dtype
    f = R.RowFrame(kb, spec.variant, spec.threads, vec)
    kb.ret(kb.setp("ge", f.row, rows))
    offset = kb.mul(f.row, cols, mode="wide")
    xro, gro, dro = kb.addr(x, offset, size), kb.addr(dy, offset, size), kb.addr(dx, offset, size)
    inv_n = kb.div(1.0, kb.cvt(cols, "f32"), type_="f32")
    layer = spec.kind == "layer"

    def row_sum(term):
        acc = kb.mov(0.0, "f32")
        with kb.loop(f.start, cols, f.step) as j:
            for v in C.load_f32(kb, elem, kb.addr(xro, j, size), vec=vec):
                kb.add(acc, term(v), out=acc)
        return f.reduce((acc,))[0]

    if spec.stats_in:
        mean = kb.ld("global", "f32", kb.addr(mean_p, f.row, 4)) if layer else None
        rstd = kb.ld("global", "f32", kb.addr(rstd_p, f.row, 4))
    else:
        if layer:
            mean = kb.mul(row_sum(lambda v: v), inv_n)

            def squared_deviation(v):
                d = kb.sub(v, mean)
                return kb.mul(d, d)

            var = kb.mul(row_sum(squared_deviation), inv_n)
        else:
            mean = None
            var = kb.mul(row_sum(lambda v: kb.mul(v, v)), inv_n)
        rstd = kb.rsqrt(kb.add(var, eps))
        with kb.if_(kb.setp("eq", f.member, 0)):
            if layer:
                kb.st("global", kb.addr(mean_p, f.row, 4), mean)
            kb.st("global", kb.addr(rstd_p, f.row, 4), rstd)

    def xhat(v):
        return kb.mul(kb.sub(v, mean) if layer else v, rstd)

    def grads(j):
        gs = C.load_f32(kb, elem, kb.addr(gro, j, size), vec=vec)
        if spec.has_weight:
            ws = C.load_f32(kb, elem, kb.addr(w, j, size), vec=vec)
            gs = [kb.mul(g, wv) for g, wv in zip(gs, ws)]
        xs = [xhat(v) for v in C.load_f32(kb, elem, kb.addr(xro, j, size), vec=vec)]
        return gs, xs

    sg, sgx = kb.mov(0.0, "f32"), kb.mov(0.0, "f32")
    with kb.loop(f.start, cols, f.step) as j:
        gs, xs = grads(j)
        for g, xh in zip(gs, xs):
            if layer:
                kb.add(sg, g, out=sg)
            kb.fma(g, xh, sgx, out=sgx)
    if layer:
        sg, sgx = f.reduce((sg, sgx))
        c0 = kb.mul(sg, inv_n)
    else:
        (sgx,) = f.reduce((sgx,))
    c1 = kb.mul(sgx, inv_n)
    with kb.loop(f.start, cols, f.step) as j:
        gs, xs = grads(j)
        out = []
        for g, xh in zip(gs, xs):
            t = kb.fma(xh, c1, c0) if layer else kb.mul(xh, c1)
            out.append(kb.mul(kb.sub(g, t), rstd))
        C.store_f32(kb, elem, kb.addr(dro, j, size), out)
    return kb.ptx()


def configurations(arch: str) -> list[NormBackwardSpec]:
    """Both kinds and variants, every dtype and vector width dispatch picks, with and without a
    weight, statistics given or recomputed."""
    return [NormBackwardSpec(arch=arch, kind=kind, dtype=dtype, variant=variant,
                             threads=R.row_geometry(variant, 1)[1], vec=vec, has_weight=hw, stats_in=si)
            for kind in NORM_KINDS for dtype in ("f32", "f16", "bf16") for variant in R.VARIANTS
            for vec in (1, *R.row_vectors(dtype)) for hw in (False, True) for si in (False, True)]


registry.register_family(NormBackwardSpec.family, NormBackwardSpec, generate, configurations)


@dataclass(frozen=True)
class NormParamGradSpec(KernelSpec):
    """Per-chunk float32 partial sums of ``dy * xhat`` (and ``dy`` with ``has_bias``) per column."""

    family: ClassVar[str] = "dnn_norm_param_grad"
    kind: str = "layer"
    dtype: str = "f32"
    has_bias: bool = False
    threads: int = PARAM_THREADS


def generate_param_grad(spec: NormParamGradSpec) -> str:
    """Params: dy, x, mean, rstd, partial (u64), rows, cols, rows_per_chunk (u32). Grid (column
    blocks, chunks); ``partial[chunk * cols + j]`` gets the weight sum and
    ``partial[(chunks + chunk) * cols + j]`` the bias sum."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    dy, x, mean_p, rstd_p, part = (kb.param_ptr(n) for n in ("dy", "x", "mean", "rstd", "partial"))
    rows, cols, per = kb.param("rows", "u32"), kb.param("cols", "u32"), kb.param("rows_per_chunk", "u32")
    size, elem = C.ELEMENT_BYTES[spec.dtype], spec.dtype
    col = kb.mad(kb.ctaid("x"), spec.threads, kb.tid())
    chunk, chunks = kb.ctaid("y"), kb.nctaid("y")
    kb.ret(kb.setp("ge", col, cols))
    r0 = kb.mul(chunk, per)
    r1 = kb.min(rows, kb.add(r0, per))
    aw, ab = kb.mov(0.0, "f32"), kb.mov(0.0, "f32")
    with kb.loop(r0, r1, 1, type_="u32") as r:
        e = kb.add(kb.mul(r, cols, mode="wide"), kb.cvt(col, "u64"))
        g = C.load_f32(kb, elem, kb.addr(dy, e, size))[0]
        v = C.load_f32(kb, elem, kb.addr(x, e, size))[0]
        rstd = kb.ld("global", "f32", kb.addr(rstd_p, r, 4))
        if spec.kind == "layer":
            v = kb.sub(v, kb.ld("global", "f32", kb.addr(mean_p, r, 4)))
        kb.fma(g, kb.mul(v, rstd), aw, out=aw)
        if spec.has_bias:
            kb.add(ab, g, out=ab)
    kb.st("global", kb.addr(part, kb.mad(chunk, cols, col), 4), aw)
    if spec.has_bias:
        kb.st("global", kb.addr(part, kb.mad(kb.add(chunks, chunk), cols, col), 4), ab)
    return kb.ptx()


def param_grad_configurations(arch: str) -> list[NormParamGradSpec]:
    return [NormParamGradSpec(arch=arch, kind=kind, dtype=dtype, has_bias=hb)
            for kind in NORM_KINDS for dtype in ("f32", "f16", "bf16")
            for hb in ((False, True) if kind == "layer" else (False,))]


registry.register_family(NormParamGradSpec.family, NormParamGradSpec, generate_param_grad,
                         param_grad_configurations)


@dataclass(frozen=True)
class ParamReduceSpec(KernelSpec):
    """``out[j] = sum_c partial[c * cols + j]`` for ``count`` stacked outputs, in chunk order."""

    family: ClassVar[str] = "dnn_norm_param_reduce"
    dtype: str = "f32"
    count: int = 1
    threads: int = PARAM_THREADS


def generate_param_reduce(spec: ParamReduceSpec) -> str:
    """Params: partial, out0, out1 (u64; out1 unused when count is 1), cols, chunks (u32)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    part, out0, out1 = kb.param_ptr("partial"), kb.param_ptr("out0"), kb.param_ptr("out1")
    cols, chunks = kb.param("cols", "u32"), kb.param("chunks", "u32")
    col = kb.mad(kb.ctaid(), spec.threads, kb.tid())
    kb.ret(kb.setp("ge", col, cols))
    for k, out in enumerate((out0, out1)[:spec.count]):
        acc = kb.mov(0.0, "f32")
        p = kb.mov(kb.addr(part, kb.mad(kb.mul(chunks, k), cols, col), 4), "u64")
        stride = kb.mul(cols, 4, mode="wide")
        with kb.loop(0, chunks, 1, type_="u32"):
            kb.add(acc, kb.ld("global", "f32", p), out=acc)
            kb.add(p, stride, out=p)
        C.store_f32(kb, spec.dtype, kb.addr(out, col, C.ELEMENT_BYTES[spec.dtype]), [acc])
    return kb.ptx()


def param_reduce_configurations(arch: str) -> list[ParamReduceSpec]:
    return [ParamReduceSpec(arch=arch, dtype=d, count=c) for d in ("f32", "f16", "bf16") for c in (1, 2)]


registry.register_family(ParamReduceSpec.family, ParamReduceSpec, generate_param_reduce,
                         param_reduce_configurations)


# -- problems and plans --------------------------------------------------------------------------
@dataclass(frozen=True)
class NormBackwardProblem:
    """One backward call: kind, element type, rows x cols, row variant, vector width, weight and
    bias gradients wanted, statistics given, eps."""

    kind: str
    dtype: str
    rows: int
    cols: int
    variant: str
    vec: int
    has_weight: bool
    has_bias: bool
    stats_in: bool
    eps: float


def chunking(rows: int, cols: int, sm_count: int) -> tuple[int, int]:
    """(rows per chunk, chunks) of the parameter-gradient pass: enough CTAs to fill the device
    about 4 deep, at least 4 rows a chunk, at most ``MAX_CHUNKS`` chunks."""
    col_blocks = -(-cols // PARAM_THREADS)
    want = max(1, min(-(-rows // 4), -(-4 * sm_count // col_blocks), MAX_CHUNKS))
    per = -(-rows // want)
    return per, -(-rows // per)


def _align(n: int) -> int:
    return -(-n // 256) * 256


def plan(problem: NormBackwardProblem, device) -> LaunchPlan:
    """The dx kernel, then (with a weight) the partial sums and their reduction. ``run`` takes
    pointers (dy, x, w or 0, dx, mean or 0, rstd or 0, dweight or 0, dbias or 0); statistics not
    given and the partial sums live in the plan's workspace."""
    p = problem
    grid, threads = R.row_geometry(p.variant, p.rows)
    spec = NormBackwardSpec(arch=device.arch, kind=p.kind, dtype=p.dtype, variant=p.variant, threads=threads,
                            vec=p.vec, has_weight=p.has_weight, stats_in=p.stats_in)
    rows, cols = R.u32(p.rows, p.cols)
    eps = np.float32(p.eps)
    stats_bytes = 0 if p.stats_in else 2 * _align(4 * p.rows)
    mean_off, rstd_off = 0, _align(4 * p.rows)
    stats_in = p.stats_in

    def bind_dx(ptr, s, ws):
        mean, rstd = (ptr[4], ptr[5]) if stats_in else (ws + mean_off, ws + rstd_off)
        return (ptr[0], ptr[1], ptr[2], ptr[3], mean, rstd, rows, cols, eps)

    steps = [KernelStep(spec, grid, threads, bind_dx)]
    workspace = stats_bytes
    if p.has_weight:
        per, chunks = chunking(p.rows, p.cols, device.sm_count)
        count = 2 if p.has_bias else 1
        part_off = stats_bytes
        workspace += _align(4 * count * chunks * p.cols)
        per_u, chunks_u = R.u32(per, chunks)
        grad = NormParamGradSpec(arch=device.arch, kind=p.kind, dtype=p.dtype, has_bias=p.has_bias)
        red = ParamReduceSpec(arch=device.arch, dtype=p.dtype, count=count)

        def bind_grad(ptr, s, ws):
            mean, rstd = (ptr[4], ptr[5]) if stats_in else (ws + mean_off, ws + rstd_off)
            return (ptr[0], ptr[1], mean, rstd, ws + part_off, rows, cols, per_u)

        def bind_reduce(ptr, s, ws):
            return (ws + part_off, ptr[6], ptr[7], cols, chunks_u)

        col_blocks = -(-p.cols // PARAM_THREADS)
        steps += [KernelStep(grad, (col_blocks, chunks), PARAM_THREADS, bind_grad),
                  KernelStep(red, col_blocks, PARAM_THREADS, bind_reduce)]
    return LaunchPlan(f"{p.kind}_norm_backward", steps, workspace_bytes=workspace)


#: plans by (problem, device ordinal)
PLANS = PlanCache("norms_backward")


def _stats_array(obj: object, rows: int, op: str, what: str) -> DeviceArray:
    """A float32 statistics array of ``rows`` elements (any shape with that size), contiguous."""
    arr = obj if isinstance(obj, DeviceArray) else asarray(np.asarray(obj))
    if C.dtype_name_of(arr) != "float32":
        raise TypeError(f"{op}: {what} has dtype {C.dtype_name_of(arr) or arr.dtype}; it must be float32 "
                        f"(as layer_norm(..., return_stats=True) returns it)")
    if arr.size != rows:
        raise ValueError(f"{op}: {what} has shape {tuple(arr.shape)} ({arr.size} elements); it must hold one "
                         f"value per normalized row ({rows})")
    return C.contiguous(arr)


def _norm_backward(kind: str, dy: object, x: object, cols_shape: tuple[int, ...], weight: object,
                   want_bias: bool, mean: object, rstd: object, eps: float, algo: str | None,
                   op: str) -> tuple[DeviceArray, DeviceArray | None, DeviceArray | None]:
    dya, xa = R.check_pair(dy, x, op, ("dy", "x"))
    cols = int(np.prod(cols_shape, dtype=np.int64))
    rows = xa.size // cols if cols else 0
    variant = R.choose_variant(cols, algo, op)
    wa = C.check_param_array(weight, op, "weight", cols_shape, xa.dtype) if weight is not None else None
    if kind == "layer" and (mean is None) != (rstd is None):
        raise ValueError(f"{op}: pass both mean and rstd (from layer_norm(..., return_stats=True)) or neither")
    stats_in = rstd is not None
    ma = _stats_array(mean, rows, op, "mean") if stats_in and kind == "layer" else None
    ra = _stats_array(rstd, rows, op, "rstd") if stats_in else None
    C.check_u32_count(xa.size, op)
    dx = empty(xa.shape, xa.dtype, stream=xa.stream)
    dw = empty(cols_shape, xa.dtype, stream=xa.stream) if wa is not None else None
    db = empty(cols_shape, xa.dtype, stream=xa.stream) if wa is not None and want_bias else None
    if xa.size == 0:
        for a in (dw, db):
            if a is not None and a.size:
                a.fill(0)
        return dx, dw, db
    elem = C.PTX_ELEMENT[C.dtype_name_of(xa)]
    arrays = tuple(a for a in (dya, xa, dx, wa) if a is not None)
    vec = C.vector_width(arrays, cols, C.ELEMENT_BYTES[elem], R.row_vectors(elem))
    problem = NormBackwardProblem(kind, elem, rows, cols, variant, vec, wa is not None, db is not None, stats_in,
                                  eps)
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    ptrs = (dya.ptr, xa.ptr, 0 if wa is None else wa.ptr, dx.ptr, 0 if ma is None else ma.ptr,
            0 if ra is None else ra.ptr, 0 if dw is None else dw.ptr, 0 if db is None else db.ptr)
    launch_plan.run(ptrs, (), C.stream_of(xa))
    return dx, dw, db


def layer_norm_backward(dy: object, x: object, normalized_shape: int | Sequence[int] | None = None,
                        weight: object = None, bias: object = None, *, mean: object = None, rstd: object = None,
                        eps: float = 1e-5, algo: str | None = None
                        ) -> tuple[DeviceArray, DeviceArray | None, DeviceArray | None]:
    """Gradients of ``layer_norm(x, normalized_shape, weight, bias, eps)`` given the upstream
    gradient ``dy``: ``(dx, dweight, dbias)``, dweight None without a weight and dbias None
    without a bias (the bias's values do not enter; it says that its gradient is wanted).

    ``mean``/``rstd``: the float32 statistics of ``layer_norm(..., return_stats=True)`` (one per
    row, any shape of that size); without them they are recomputed (two passes, as the forward).
    dy and x share shape and dtype (float32, float16, bfloat16); weight and bias have shape
    ``normalized_shape`` and that dtype; results in that dtype. Raises TypeError/ValueError
    before any launch."""
    op = "layer_norm_backward"
    xa = C.as_float_array(x, op, "x")
    shape = normalized_cols(xa, normalized_shape, op)
    return _norm_backward("layer", dy, xa, shape, weight, bias is not None, mean, rstd,
                          C.check_eps(eps, op), algo, op)


def rms_norm_backward(dy: object, x: object, weight: object = None, *, rstd: object = None, eps: float = 1e-6,
                      algo: str | None = None) -> tuple[DeviceArray, DeviceArray | None]:
    """Gradients of ``rms_norm(x, weight, eps)`` (over the last dimension) given ``dy``:
    ``(dx, dweight)`` (dweight None without a weight). ``rstd``: the float32 statistics of
    ``rms_norm(..., return_stats=True)``, else recomputed. Raises like ``layer_norm_backward``."""
    op = "rms_norm_backward"
    xa = C.as_float_array(x, op, "x")
    if xa.ndim == 0:
        raise ValueError(f"{op}: x is 0-d; it needs at least one dimension")
    dx, dw, _ = _norm_backward("rms", dy, xa, (xa.shape[-1],), weight, False, None, rstd,
                               C.check_eps(eps, op), algo, op)
    return dx, dw
