"""``conv2d`` forward and its two backward passes (data, filter): validation, dispatch, launch.

Layouts (``layout=``):

- ``"NCHW"``: x (N, C, H, W), w (K, C/groups, R, S), y (N, K, OH, OW);
- ``"NHWC"``: x (N, H, W, C), w (K, R, S, C/groups) (cuDNN's KRSC), y (N, OH, OW, K).

``OH = (H + 2*pad_h - dil_h*(R-1) - 1) // stride_h + 1`` (likewise OW). Elements: float32,
float16 or bfloat16 (x, w, bias the same; accumulation in float32). ``algo``: ``None``
(dispatch, see ``conv_dispatch``), ``"implicit_gemm"``, ``"winograd"`` (F(4x4,3x3) or F(2x2,3x3)
chosen by dispatch), ``"winograd_2x2"``, ``"winograd_4x4"``, ``"im2col"``, and two that pin the
implicit-GEMM kernel: ``"implicit_gemm_tc"`` (tensor cores, ``conv_implicit_gemm_tc``: float16/
bfloat16 on sm_80+ only, ValueError otherwise) and ``"implicit_gemm_simt"`` (``conv_implicit_gemm``,
any dtype). ``"implicit_gemm"`` (and dispatch when it picks implicit GEMM) runs the tensor-core
kernel where it can (half types on sm_80+) and the SIMT one elsewhere. The backward passes are
SIMT for every dtype.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from oxicuda.driver import context as _context
from oxicuda.driver.facts import current_device_facts, device_facts
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache

from . import conv_implicit_gemm_tc as tc
from ._common import (
    PTX_ELEMENT,
    as_float_array,
    contiguous,
    dtype_name_of,
    stream_of,
)
from .channels_last import channels_last_step
from .conv_dispatch import ALGOS, ConvProblem, choose_algo, choose_igemm_tile
from .conv_epilogue import check_activation
from .conv_geometry import LAYOUTS, ConvGeometry, element_strides_nchw, make_geometry

# imported at load so that their kernel families are registered with the rest of conv's
from .conv_im2col import run_im2col
from .conv_implicit_gemm import THREADS, ConvImplicitGemmSpec
from .conv_implicit_gemm_f32 import prepare_implicit_gemm_f32
from .conv_tc_split_k import reduce_step as split_k_reduce_step
from .conv_winograd import prepare_winograd

#: algo names beyond dispatch's that pin one implicit-GEMM kernel
KERNEL_ALGOS = ("implicit_gemm_tc", "implicit_gemm_simt")


def _resolve_dtypes(x: object, w: object, op: str, x_name: str = "x", w_name: str = "w") -> tuple[DeviceArray, DeviceArray, str]:
    xa = as_float_array(x, op, x_name)
    wa = as_float_array(w, op, w_name)
    if xa.dtype != wa.dtype:
        raise TypeError(f"{op}: {x_name} has dtype {dtype_name_of(xa)} but {w_name} has {dtype_name_of(wa)}; "
                        f"they must match")
    return xa, wa, PTX_ELEMENT[dtype_name_of(xa)]


def _check_shape(arr: DeviceArray, expected: tuple[int, ...], what: str, op: str) -> None:
    if tuple(arr.shape) != tuple(expected):
        raise ValueError(f"{op}: {what} has shape {tuple(arr.shape)}; it must be {tuple(expected)}")


def conv2d(x: object, w: object, bias: object = None, stride: object = 1, padding: object = 0,
           dilation: object = 1, groups: int = 1, layout: str = "NCHW", activation: str | None = None,
           algo: str | None = None, out: DeviceArray | None = None) -> DeviceArray:
    """2-D cross-correlation (PyTorch's ``conv2d``) with bias and activation fused: returns
    ``activation(conv(x, w) + bias)`` as a new array in ``layout``.

    ``stride``, ``padding``, ``dilation``: an int or an (h, w) pair. ``activation``: None,
    ``"relu"``, ``"silu"`` or ``"gelu"`` (erf form). ``algo``: see the module docstring.
    ``out``: a C-contiguous device array of the output's shape and dtype to write into (a new
    one by default).
    Raises TypeError (dtypes) or ValueError (shapes, parameters, an algorithm that cannot run
    this problem) before anything is launched.
    """
    key = _call_key(x, w, bias, stride, padding, dilation, groups, layout, activation, algo, out)
    if key is not None:
        hit = _CALL_PLANS.get(key)
        if hit is not None:  # a signature that passed every check below: only pointers differ
            run, y_shape = hit
            y = out if out is not None else empty(y_shape, x.dtype, stream=x.stream or None)
            run(x.ptr, w.ptr, y.ptr, bias.ptr if bias is not None else 0, y.stream or None)
            return y
    op = "conv2d"
    xa, wa, elem = _resolve_dtypes(x, w, op)
    geo = make_geometry(tuple(xa.shape), tuple(wa.shape), stride, padding, dilation, groups, layout, elem, op)
    act = check_activation(activation, op)
    ba = None
    if bias is not None:
        ba = as_float_array(bias, op, "bias")
        if ba.dtype != xa.dtype:
            raise TypeError(f"{op}: bias has dtype {dtype_name_of(ba)} but x has {dtype_name_of(xa)}; they must match")
        _check_shape(ba, (geo.problem.k,), "bias", op)
        ba = contiguous(ba)
    chosen = _resolve_algo(algo, geo.problem, op)
    xa, wa = contiguous(xa), contiguous(wa)
    y = _output(out, geo.y_shape, xa, op)
    run = None
    if chosen.startswith("winograd"):
        run = _plan_runner(prepare_winograd(geo, element_strides_nchw(xa, layout), element_strides_nchw(wa, layout),
                               element_strides_nchw(y, layout), int(y.ptr), ba is not None, act,
                               tile=4 if chosen == "winograd_4x4" else 2))
    elif chosen == "implicit_gemm_simt" and geo.problem.dtype == "f32":
        tile, splits = choose_igemm_tile(geo.problem, device_facts().sm_count)
        run = _plan_runner(prepare_implicit_gemm_f32(geo, (xa.ptr, wa.ptr, y.ptr), ba is not None, act, tile,
                                                     splits))
    elif chosen == "implicit_gemm_tc":
        run = _plan_runner(prepare_tensor_core(geo, int(xa.ptr), int(wa.ptr), int(y.ptr), ba is not None, act))
    if run is not None:
        run(xa.ptr, wa.ptr, y.ptr, ba.ptr if ba is not None else 0, stream_of(y))
        if key is not None:
            if len(_CALL_PLANS) >= CALL_PLAN_LIMIT:
                _CALL_PLANS.clear()
            # keyed on the context current now (the full path may have made one current)
            _CALL_PLANS[(_context._local.__dict__.get("ctx"), *key[1:])] = (run, geo.y_shape)
    elif chosen == "implicit_gemm_simt":
        run_implicit_gemm("fwd", geo, xa, wa, y, ba, act)
    else:
        run_im2col(geo, xa, wa, y, ba, act)
    return y


def _plan_runner(plan: LaunchPlan):
    """A call plan's ``run(x, w, y, bias, stream)`` over a LaunchPlan whose pointers are (x, w, y,
    bias or 0)."""
    run = plan.run

    def runner(x: int, w: int, y: int, bias: int, stream: object) -> None:
        run((x, w, y, bias), (), stream)

    runner.plan = plan
    return runner


#: conv2d call plans by signature (``_call_key``); cleared whole at the limit
CALL_PLAN_LIMIT = 1024
_CALL_PLANS: dict[tuple, tuple] = {}


def clear_call_plans() -> None:
    """Forget every cached conv2d call plan (the next call of each signature is checked and
    dispatched again; needed after changing dispatch settings at run time)."""
    _CALL_PLANS.clear()


def _plain_pair(v: object) -> bool:
    return type(v) is int or (type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int)


def _call_key(x, w, bias, stride, padding, dilation, groups, layout, activation, algo, out) -> tuple | None:
    """What decides a conv2d call's checks and plan, besides the pointers: the arrays' shapes,
    dtypes and 64-byte alignment (vector paths), the parameters and the context. None (no plan
    reuse) unless every argument is of the plain kind the full path accepts unchanged: C-contiguous
    DeviceArrays, ints or pairs of ints (2.0 and True hash like 2 and 1 but must still be
    refused), strings or None."""
    if not (type(x) is DeviceArray and type(w) is DeviceArray and (bias is None or type(bias) is DeviceArray)
            and (out is None or type(out) is DeviceArray) and type(groups) is int and type(layout) is str
            and (activation is None or type(activation) is str) and (algo is None or type(algo) is str)
            and _plain_pair(stride) and _plain_pair(padding) and _plain_pair(dilation)):
        return None
    if not (x.is_c_contiguous and w.is_c_contiguous and (bias is None or bias.is_c_contiguous)
            and (out is None or out.is_c_contiguous)):
        return None
    return (_context._local.__dict__.get("ctx"), x.shape, x.dtype, x.ptr % 64, w.shape, w.dtype, w.ptr % 64,
            None if bias is None else (bias.shape, bias.dtype, bias.ptr % 64),
            None if out is None else (out.shape, out.dtype, out.ptr % 64),
            stride, padding, dilation, groups, layout, activation, algo)


def _output(out: DeviceArray | None, shape: tuple[int, ...], like: DeviceArray, op: str) -> DeviceArray:
    """``out`` checked against the result's shape/dtype/contiguity, or a new array."""
    if out is None:
        return empty(shape, like.dtype, stream=like.stream or None)
    if not isinstance(out, DeviceArray):
        raise TypeError(f"{op}: out is a {type(out).__name__}; it must be an oxicuda DeviceArray")
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype or not out.is_c_contiguous:
        raise ValueError(f"{op}: out has shape {tuple(out.shape)}, dtype {dtype_name_of(out) or out.dtype}"
                         f"{'' if out.is_c_contiguous else ', non-contiguous'}; it must be a C-contiguous "
                         f"{dtype_name_of(like)} array of shape {tuple(shape)}")
    return out


def _resolve_algo(algo: str | None, problem: ConvProblem, op: str) -> str:
    """The algorithm that runs: ``algo`` checked against the problem, or dispatch's choice;
    implicit GEMM comes back as the kernel (``implicit_gemm_tc`` or ``implicit_gemm_simt``)."""
    if algo is None:
        return _implicit_gemm_kernel(choose_algo(problem), problem)
    if algo not in ALGOS + KERNEL_ALGOS:
        raise ValueError(f"{op}: algo={algo!r}; allowed: None, " + ", ".join(repr(a) for a in ALGOS + KERNEL_ALGOS))
    if algo == "implicit_gemm_tc" and not tc.supported(problem.dtype, device_facts().arch):
        raise ValueError(f"{op}: algo='implicit_gemm_tc' needs float16/bfloat16 data on sm_80+; got "
                         f"{problem.dtype} on {device_facts().arch}; use algo='implicit_gemm_simt' or None")
    if algo == "implicit_gemm":
        return _implicit_gemm_kernel(algo, problem)
    if algo.startswith("winograd"):
        if not problem.winograd_eligible:
            raise ValueError(f"{op}: algo={algo!r} needs a 3x3 filter, stride 1 and dilation 1; got "
                             f"{problem.r}x{problem.s}, stride {problem.stride}, dilation {problem.dilation}")
        if algo == "winograd":
            picked = choose_algo(problem, {"winograd_min_channels": 0, "winograd_4x4_min_output": 8,
                                           "im2col_min_reduction": 1 << 62, "im2col_max_workspace_bytes": 0})
            return picked
    return algo


def _implicit_gemm_kernel(algo: str, problem: ConvProblem) -> str:
    if algo != "implicit_gemm":
        return algo
    return "implicit_gemm_tc" if tc.supported(problem.dtype, device_facts().arch) else "implicit_gemm_simt"


def _contiguous_strides(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int]:
    """Element strides in (n, c, h, w) order of a C-contiguous 4-D array of ``shape`` in ``layout``."""
    _, b, c, d = shape
    s = (b * c * d, c * d, d, 1)
    return s if layout == "NCHW" else (s[0], s[3], s[1], s[2])


def prepare_tensor_core(geo: ConvGeometry, x_ptr: int, w_ptr: int, y_ptr: int, has_bias: bool,
                        activation: str) -> LaunchPlan:
    """The launch plan of the tensor-core forward pass of ``geo`` for C-contiguous x, w, y of the
    alignment of these pointers; ``run`` takes pointers (x, w, y, bias or 0). An NCHW problem that
    ``tc.nchw_via_channels_last`` accepts first has x and w transposed to NHWC in the workspace
    (two ``channels_last`` steps), then runs the NHWC kernel writing y in NCHW. A grid short of
    one wave with a long reduction runs split-K (``tc.choose_splits``): float32 partial sums in
    y-shaped workspace slabs, then one step adds them with the epilogue."""
    p, device = geo.problem, device_facts()
    arch = device.arch
    x_aligned, w_aligned = x_ptr % tc.COPY_BYTES == 0, w_ptr % tc.COPY_BYTES == 0
    layout, x_strides = geo.layout, _contiguous_strides(geo.x_shape, geo.layout)
    cg, kg = p.c // p.groups, p.k // p.groups
    via_channels_last = layout == "NCHW" and tc.nchw_via_channels_last(p, x_aligned, w_aligned)
    x_bytes = cl_bytes = 0
    if via_channels_last:
        x_bytes = -(-p.n * p.c * p.h * p.w * 2 // tc.COPY_BYTES) * tc.COPY_BYTES
        cl_bytes = -(-(x_bytes + p.k * cg * p.r * p.s * 2) // 256) * 256
        layout, x_strides = "NHWC", (p.h * p.w * p.c, 1, p.w * p.c, p.c)
    spec = tc.choose_spec(p, layout, arch, x_aligned=x_aligned, w_aligned=w_aligned, activation=activation,
                          bias=has_bias, y_layout=geo.layout, y_aligned=y_ptr % 4 == 0, sm_count=device.sm_count)
    y_strides = _contiguous_strides(geo.y_shape, geo.layout)
    splits = tc.choose_splits(p, spec, device.sm_count)
    if splits > 1:
        spec = dataclasses.replace(spec, split_k=True, activation="none", bias=False, y_pairs=False)
    total = p.n * p.k * p.oh * p.ow
    gm, gk = p.n * p.oh * p.ow, cg * p.r * p.s
    ktiles = -(-gk // tc.BLOCK_K)
    chunk = -(-ktiles // splits)
    splits = -(-ktiles // chunk)  # no empty split
    grid = (-(-gm // spec.block_m), -(-kg // spec.block_n), p.groups * splits)
    if grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"conv2d: K/groups={kg}, groups={p.groups} and {splits} splits give a grid of {grid}; "
                         "at most 65535 CTAs in y and z")
    tail = (gm, kg, gk, cg, p.h, p.w, p.r, p.s, p.oh, p.ow, p.stride[0], p.stride[1], p.padding[0],
            p.padding[1], p.dilation[0], p.dilation[1], *x_strides, *y_strides, p.groups, chunk, gm * p.k)
    steps = []
    if via_channels_last:
        steps += [channels_last_step(tc.spec_arch(arch), lambda ptr, ws: ptr[0], lambda ptr, ws: ws, p.n, p.c,
                                     p.h * p.w),
                  channels_last_step(tc.spec_arch(arch), lambda ptr, ws: ptr[1], lambda ptr, ws: ws + x_bytes,
                                     p.k, cg, p.r * p.s)]

    def operand(ptr, ws):
        return (ws, ws + x_bytes) if via_channels_last else (ptr[0], ptr[1])

    if splits == 1:
        def bind(ptr, s, ws):
            return (*operand(ptr, ws), ptr[2], ptr[3], *tail)

        steps.append(KernelStep(spec, grid, spec.threads, bind, spec.shared_bytes))
        return LaunchPlan("conv2d_tc", steps, cl_bytes)

    def bind_partials(ptr, s, ws):
        return (*operand(ptr, ws), ws + cl_bytes, 0, *tail)

    steps.append(KernelStep(spec, grid, spec.threads, bind_partials, spec.shared_bytes))
    steps.append(split_k_reduce_step(spec.arch, p.dtype, activation, has_bias, lambda ptr, ws: ws + cl_bytes, total,
                                     splits, p.oh * p.ow if geo.layout == "NCHW" else 1, p.k))
    return LaunchPlan("conv2d_tc", steps, cl_bytes + 4 * splits * total)


@dataclass(frozen=True)
class ImplicitGemmProblem:
    """One SIMT implicit-GEMM launch: the mode (fwd, bwd_data, bwd_filter), the geometry, the
    element strides of x, w and y in (n, c, h, w) order, the epilogue."""

    mode: str
    geo: ConvGeometry
    strides: tuple[int, ...]
    activation: str
    has_bias: bool


def implicit_gemm_plan(problem: ImplicitGemmProblem, device) -> LaunchPlan:
    """The launch plan of one SIMT implicit-GEMM kernel; ``run`` takes pointers (x, w, y, bias or
    0): ``mode`` decides which two are read and which one is written."""
    q, p = problem, problem.geo.problem
    cg, kg = p.c // p.groups, p.k // p.groups
    if q.mode == "fwd":
        gm, gn, gk = p.n * p.oh * p.ow, kg, cg * p.r * p.s
    elif q.mode == "bwd_data":
        gm, gn, gk = p.n * p.h * p.w, cg, kg * p.r * p.s
    else:
        gm, gn, gk = kg, cg * p.r * p.s, p.n * p.oh * p.ow
    spec = ConvImplicitGemmSpec(arch=device.arch, mode=q.mode, dtype=p.dtype, layout=q.geo.layout,
                                activation=q.activation, bias=q.has_bias)
    tail = (gm, gn, gk, p.n, cg, p.h, p.w, kg, p.r, p.s, p.oh, p.ow, p.stride[0], p.stride[1], p.padding[0],
            p.padding[1], p.dilation[0], p.dilation[1], *q.strides)

    def bind(ptr, s, ws):
        return (*ptr, *tail)

    grid = ((gm + spec.bm - 1) // spec.bm, (gn + spec.bn - 1) // spec.bn, p.groups)
    return LaunchPlan("conv_implicit_gemm", [KernelStep(spec, grid, THREADS, bind)])


#: implicit-GEMM plans by (problem, device ordinal)
IMPLICIT_GEMM_PLANS = PlanCache("conv_implicit_gemm")


def run_implicit_gemm(mode: str, geo: ConvGeometry, x: DeviceArray, w: DeviceArray, y: DeviceArray,
                      bias: DeviceArray | None, activation: str) -> None:
    """Launch one implicit-GEMM kernel over validated, C-contiguous x, w, y (``mode`` decides
    which two are read and which one is written) through its cached plan. The float32 forward
    pass has its own kernel (``prepare_implicit_gemm_f32``, through conv2d's call plans)."""
    strides = (*element_strides_nchw(x, geo.layout), *element_strides_nchw(w, geo.layout),
               *element_strides_nchw(y, geo.layout))
    problem = ImplicitGemmProblem(mode, geo, strides, activation, bias is not None)
    device = current_device_facts()
    plan = IMPLICIT_GEMM_PLANS.get_or_build((problem, device.ordinal), lambda: implicit_gemm_plan(problem, device))
    plan.run((x.ptr, w.ptr, y.ptr, 0 if bias is None else bias.ptr), (), stream_of(y))


def conv2d_backward_data(dy: object, w: object, x_shape: tuple[int, ...], stride: object = 1, padding: object = 0,
                         dilation: object = 1, groups: int = 1, layout: str = "NCHW",
                         algo: str | None = None, out: DeviceArray | None = None) -> DeviceArray:
    """The gradient of ``conv2d`` with respect to x: ``dx`` of shape ``x_shape`` (in ``layout``)
    from ``dy`` (the output's shape) and ``w``. Only ``algo="implicit_gemm"`` (or None) exists;
    ``out`` as in ``conv2d``."""
    op = "conv2d_backward_data"
    dya, wa, elem = _resolve_dtypes(dy, w, op, "dy", "w")
    geo = make_geometry(tuple(int(v) for v in x_shape), tuple(wa.shape), stride, padding, dilation, groups,
                        layout, elem, op)
    _check_shape(dya, geo.y_shape, "dy", op)
    _check_backward_algo(algo, op)
    dx = _output(out, geo.x_shape, dya, op)
    run_implicit_gemm("bwd_data", geo, dx, contiguous(wa), contiguous(dya), None, "none")
    return dx


def conv2d_backward_filter(x: object, dy: object, w_shape: tuple[int, ...], stride: object = 1,
                           padding: object = 0, dilation: object = 1, groups: int = 1, layout: str = "NCHW",
                           algo: str | None = None, out: DeviceArray | None = None) -> DeviceArray:
    """The gradient of ``conv2d`` with respect to w: ``dw`` of shape ``w_shape`` (in ``layout``)
    from ``x`` and ``dy``. Only ``algo="implicit_gemm"`` (or None) exists; ``out`` as in
    ``conv2d``."""
    op = "conv2d_backward_filter"
    xa, dya, elem = _resolve_dtypes(x, dy, op, "x", "dy")
    geo = make_geometry(tuple(xa.shape), tuple(int(v) for v in w_shape), stride, padding, dilation, groups,
                        layout, elem, op)
    _check_shape(dya, geo.y_shape, "dy", op)
    _check_backward_algo(algo, op)
    dw = _output(out, geo.w_shape, xa, op)
    run_implicit_gemm("bwd_filter", geo, contiguous(xa), dw, contiguous(dya), None, "none")
    return dw


def _check_backward_algo(algo: str | None, op: str) -> None:
    if algo not in (None, "implicit_gemm", "implicit_gemm_simt"):
        raise ValueError(f"{op}: algo={algo!r}; allowed: None, 'implicit_gemm', 'implicit_gemm_simt' "
                         "(the SIMT implicit GEMM is the only backward kernel, for every dtype)")


__all__ = ["KERNEL_ALGOS", "LAYOUTS", "conv2d", "conv2d_backward_data", "conv2d_backward_filter"]
