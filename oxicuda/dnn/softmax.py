"""Softmax and log-softmax along any axis.

``softmax(x, axis=-1, log=False)`` returns a new array of x's shape and dtype (float32, float16,
bfloat16; halves are computed in f32 and rounded once at the store).

Numerics (what PyTorch does, and what the tests check): each row is shifted by its maximum, so
magnitudes up to the float32 limit (1e30, -1e30) are exact to a few ulp; ``-inf`` entries give 0
(log: -inf); a row that is entirely ``-inf``, or holds ``+inf`` or a NaN, gives NaN everywhere.

Kernel family ``dnn_softmax``, variants (``algo=`` forces one; ``None`` lets dispatch choose):

- ``"warp"``: one row per warp, three passes over the row (max, sum of exp, write) with
  shuffle reductions; for short rows (many rows per CTA);
- ``"block"``: one row per CTA, the same three passes, reductions through shuffles and shared
  memory; for medium rows;
- ``"online"``: one row per CTA, a single statistics pass keeping a running maximum and a sum
  rescaled whenever the maximum grows (one exp per element), then the write pass; for long rows;
- ``"strided"``: the path for an axis other than the last: one thread per (outer, inner) column
  walking the axis with the online update; no transpose, no copy. Used only for non-last axes.

Loads and stores are 16-byte (f32 x4) or 8-byte vectors where the row length and the pointers
allow. ``math="precise"`` (default) uses an exp accurate to ~2 ulp; ``"fast"`` uses
``ex2.approx(x * log2 e)``.
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

VARIANTS = ("warp", "block", "online", "strided")

#: Dispatch thresholds on the row length (provisional: chosen by reasoning, not yet measured on
#: the H200; the lead owns re-tuning them). rows up to WARP_MAX_COLS -> "warp"; up to
#: BLOCK_MAX_COLS -> "block"; longer -> "online".
DISPATCH = {"WARP_MAX_COLS": 1024, "BLOCK_MAX_COLS": 8192, "WARP_THREADS": 128, "BLOCK_THREADS": 512}
MAX_COLS = 1 << 20


@dataclass(frozen=True)
class SoftmaxSpec(KernelSpec):
    """One softmax kernel: ``variant`` over ``dtype`` rows, ``vec`` elements per access."""

    family: ClassVar[str] = "dnn_softmax"
    dtype: str = "f32"
    log: bool = False
    variant: str = "warp"
    threads: int = 128
    vec: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in VARIANTS:
            raise ValueError(f"SoftmaxSpec: variant={self.variant!r}; allowed {VARIANTS}")
        if self.dtype not in C.ELEMENT_BYTES:
            raise ValueError(f"SoftmaxSpec: dtype={self.dtype!r}; allowed {tuple(C.ELEMENT_BYTES)}")
        if self.vec not in (1, 2, 4) or (self.variant == "strided" and self.vec != 1):
            raise ValueError(f"SoftmaxSpec: vec={self.vec}; allowed 1, 2, 4 (1 for strided)")
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            raise ValueError(f"SoftmaxSpec: threads={self.threads}; a multiple of 32 in 32..1024")


# -- PTX pieces ---------------------------------------------------------------------------------
def online_update(kb: KernelBuilder, m: Value, s: Value, v: Value) -> None:
    """Fold element ``v`` into the running (max ``m``, rescaled sum ``s``) in place, one exp:
    a new maximum rescales the old sum by exp(m - v) and adds 1, else exp(v - m) is added.
    -inf elements add 0 (no -inf - -inf NaN); a NaN element makes s NaN."""
    gt = kb.setp("gt", v, m)
    d = kb.selp(kb.sub(m, v), kb.sub(v, m), gt)
    d = kb.selp(C.NEG_INF, d, kb.setp("eq", v, C.NEG_INF))
    e = C.exp_f32(kb, d)
    kb.selp(kb.fma(s, e, 1.0), kb.add(s, e), gt, out=s)
    kb.max(m, v, out=m)


def combine_online(kb: KernelBuilder, a: tuple[Value, ...], b: tuple[Value, ...]) -> tuple[Value, ...]:
    """Merge two (max, sum) pairs: the larger max, both sums rescaled to it."""
    (m1, s1), (m2, s2) = a, b
    m = kb.max(m1, m2)
    shift = kb.selp(0.0, m, kb.setp("eq", m, C.NEG_INF))
    s = kb.fma(s1, C.exp_f32(kb, kb.sub(m1, shift)), kb.mul(s2, C.exp_f32(kb, kb.sub(m2, shift))))
    return m, s


def _finish(kb: KernelBuilder, m: Value, s: Value, log: bool) -> Value:
    """The per-row constant of the write pass: 1/sum, or log(sum) for log-softmax. A +inf max
    means the row holds +inf: the result is NaN (as inf - inf is)."""
    s = kb.selp(float("nan"), s, kb.setp("eq", m, C.POS_INF))
    return C.log_f32(kb, s) if log else kb.div(1.0, s, type_="f32")


def _result(kb: KernelBuilder, v: Value, m: Value, k: Value, log: bool) -> Value:
    d = kb.sub(v, m)
    return kb.sub(d, k) if log else kb.mul(C.exp_f32(kb, d), k)


def generate_softmax(spec: SoftmaxSpec) -> str:
    """PTX of one softmax kernel. Row variants take (x, y, rows, cols); ``strided`` takes
    (x, y, columns = outer*inner, n = axis length, inner)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    C.launch_bounds(kb, spec.threads)
    if spec.variant == "strided":
        _strided_body(kb, spec)
    else:
        _row_body(kb, spec)
    return kb.ptx()


def _row_body(kb: KernelBuilder, spec: SoftmaxSpec) -> None:
    x, y = kb.param_ptr("x"), kb.param_ptr("y")
    rows, cols = kb.param("rows", "u32"), kb.param("cols", "u32")
    size, vec = C.ELEMENT_BYTES[spec.dtype], spec.vec
    tid = kb.tid()
    lane = kb.and_(tid, 31)
    warp = kb.shr(tid, 5)
    warps = spec.threads // 32
    if spec.variant == "warp":
        row = kb.mad(kb.ctaid(), warps, warp)
        member, group = lane, 32
    else:
        row = kb.ctaid()
        member, group = tid, spec.threads
        scratch = kb.shared("scratch", "f32", 2 * warps)
    kb.ret(kb.setp("ge", row, rows))
    offset = kb.mul(row, cols, mode="wide")
    xrow, yrow = kb.addr(x, offset, size), kb.addr(y, offset, size)
    start = kb.mul(member, vec) if vec > 1 else member
    step = group * vec

    def reduce(vals, combine):
        if spec.variant == "warp":
            return C.warp_allreduce(kb, vals, combine)
        return C.block_allreduce(kb, vals, combine, scratch, warps, warp, lane)

    m = kb.mov(C.NEG_INF, "f32")
    if spec.variant == "online":
        s = kb.mov(0.0, "f32")
        with kb.loop(start, cols, step) as j:
            for v in C.load_f32(kb, spec.dtype, kb.addr(xrow, j, size), vec=vec):
                online_update(kb, m, s, v)
        m, s = reduce((m, s), combine_online)
    else:
        with kb.loop(start, cols, step) as j:
            for v in C.load_f32(kb, spec.dtype, kb.addr(xrow, j, size), vec=vec):
                kb.max(m, v, out=m)
        (m,) = reduce((m,), C.combine_max)
        s = kb.mov(0.0, "f32")
        with kb.loop(start, cols, step) as j:
            for v in C.load_f32(kb, spec.dtype, kb.addr(xrow, j, size), vec=vec):
                kb.add(s, C.exp_f32(kb, kb.sub(v, m)), out=s)
        (s,) = reduce((s,), C.combine_sum)
    k = _finish(kb, m, s, spec.log)
    with kb.loop(start, cols, step) as j:
        vals = C.load_f32(kb, spec.dtype, kb.addr(xrow, j, size), vec=vec)
        C.store_f32(kb, spec.dtype, kb.addr(yrow, j, size), [_result(kb, v, m, k, spec.log) for v in vals])


def _strided_body(kb: KernelBuilder, spec: SoftmaxSpec) -> None:
    x, y = kb.param_ptr("x"), kb.param_ptr("y")
    columns, n, inner = kb.param("columns", "u32"), kb.param("n", "u32"), kb.param("inner", "u32")
    size = C.ELEMENT_BYTES[spec.dtype]
    col = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", col, columns))
    outer_i = kb.div(col, inner)
    inner_i = kb.sub(col, kb.mul(outer_i, inner))
    base = kb.add(kb.mul(kb.mul(outer_i, n, mode="wide"), kb.cvt(inner, "u64")), kb.cvt(inner_i, "u64"))
    xcol, ycol = kb.addr(x, base, size), kb.addr(y, base, size)
    stride = kb.mul(inner, size, mode="wide")
    m, s = kb.mov(C.NEG_INF, "f32"), kb.mov(0.0, "f32")
    p = kb.mov(xcol, "u64")
    with kb.loop(0, n, 1, type_="u32"):
        online_update(kb, m, s, C.load_f32(kb, spec.dtype, p)[0])
        kb.add(p, stride, out=p)
    k = _finish(kb, m, s, spec.log)
    kb.assign(p, xcol)
    q = kb.mov(ycol, "u64")
    with kb.loop(0, n, 1, type_="u32"):
        v = C.load_f32(kb, spec.dtype, p)[0]
        C.store_f32(kb, spec.dtype, q, [_result(kb, v, m, k, spec.log)])
        kb.add(p, stride, out=p)
        kb.add(q, stride, out=q)


def softmax_configurations(arch: str) -> list[SoftmaxSpec]:
    """The configurations dispatch can pick: every variant, both forms, every dtype and vector
    width it uses (f32 vec 1/4, halves vec 1/2/4)."""
    specs = []
    for dtype in ("f32", "f16", "bf16"):
        for log in (False, True):
            for variant, threads in (("warp", DISPATCH["WARP_THREADS"]), ("block", DISPATCH["BLOCK_THREADS"]),
                                     ("online", DISPATCH["BLOCK_THREADS"])):
                for vec in ((1, 4) if dtype == "f32" else (1, 2, 4)):
                    specs.append(SoftmaxSpec(arch=arch, dtype=dtype, log=log, variant=variant,
                                             threads=threads, vec=vec))
            specs.append(SoftmaxSpec(arch=arch, dtype=dtype, log=log, variant="strided", threads=256))
    return specs


registry.register_family(SoftmaxSpec.family, SoftmaxSpec, generate_softmax, softmax_configurations)


# -- dispatch and the public call ----------------------------------------------------------------
def choose_variant(cols: int) -> str:
    """The row variant for rows of ``cols`` elements (a pure function of the problem; thresholds
    in ``DISPATCH``)."""
    if cols <= DISPATCH["WARP_MAX_COLS"]:
        return "warp"
    if cols <= DISPATCH["BLOCK_MAX_COLS"]:
        return "block"
    return "online"


@dataclass(frozen=True)
class SoftmaxProblem:
    """One softmax call's signature: element type, ``rows`` x ``cols`` (the softmax axis has
    ``cols`` elements; for a non-last axis ``rows`` counts the columns and ``inner`` the elements
    after the axis, else ``inner`` is 0), log or not, the row variant, vector width, math mode."""

    dtype: str
    rows: int
    cols: int
    inner: int
    log: bool
    variant: str
    vec: int
    math: str = "precise"


def plan(problem: SoftmaxProblem, device) -> LaunchPlan:
    """The launch plan of ``problem``: one kernel; ``run`` takes pointers (x, out)."""
    p = problem
    if p.variant == "strided":
        spec = SoftmaxSpec(arch=device.arch, math=p.math, dtype=p.dtype, log=p.log, variant="strided", threads=256)
        columns, n, inner = np.uint32(p.rows), np.uint32(p.cols), np.uint32(p.inner)

        def bind(ptr, s, ws):
            return (ptr[0], ptr[1], columns, n, inner)

        return LaunchPlan("softmax", [KernelStep(spec, -(-p.rows // 256), 256, bind)])
    threads = DISPATCH["WARP_THREADS"] if p.variant == "warp" else DISPATCH["BLOCK_THREADS"]
    spec = SoftmaxSpec(arch=device.arch, math=p.math, dtype=p.dtype, log=p.log, variant=p.variant,
                       threads=threads, vec=p.vec)
    grid = -(-p.rows // (threads // 32)) if p.variant == "warp" else p.rows
    rows, cols = np.uint32(p.rows), np.uint32(p.cols)

    def bind(ptr, s, ws):
        return (ptr[0], ptr[1], rows, cols)

    return LaunchPlan("softmax", [KernelStep(spec, grid, threads, bind)])


#: softmax plans by (problem, device ordinal)
PLANS = PlanCache("softmax")


def softmax(x: object, axis: int = -1, log: bool = False, out: DeviceArray | None = None, *,
            algo: str | None = None, math: str = "precise") -> DeviceArray:
    """Softmax (or log-softmax with ``log=True``) of ``x`` along ``axis``.

    ``x``: a DeviceArray or anything ``oxicuda.asarray`` accepts, float32/float16/bfloat16, with
    ``x.shape[axis]`` from 1 to 2^20. ``out``: an optional C-contiguous DeviceArray of x's shape
    and dtype to write (else a new array is returned). ``algo``: ``"warp"``, ``"block"`` or
    ``"online"`` forces a row variant (last axis only); non-last axes always use ``"strided"``.
    Raises TypeError (dtype) or ValueError (axis, sizes, algo, out) before any launch.
    """
    xa = C.as_float_array(x, "softmax")
    if xa.ndim == 0:
        raise ValueError("softmax: x is 0-d; it needs at least one dimension")
    ax = C.normalize_axis(axis, xa.ndim, "softmax")
    if math not in ("precise", "fast"):
        raise ValueError(f"softmax: math={math!r}; allowed 'precise' or 'fast'")
    last = ax == xa.ndim - 1
    if algo is not None and algo not in ("warp", "block", "online", "strided"):
        raise ValueError(f"softmax: algo={algo!r}; allowed None, 'warp', 'block', 'online', 'strided'")
    if algo is not None and (algo == "strided") == last:
        raise ValueError(f"softmax: algo={algo!r} does not apply to axis {ax} of a {xa.ndim}-d array; "
                         f"'strided' is for non-last axes, the row variants for the last axis")
    n = xa.shape[ax]
    if not 1 <= n <= MAX_COLS and xa.size:
        raise ValueError(f"softmax: the softmax axis has {n} elements; allowed 1..{MAX_COLS}")
    C.check_u32_count(xa.size // max(n, 1), "softmax", "the number of rows")
    elem = C.PTX_ELEMENT[C.dtype_name_of(xa)]
    xa = C.contiguous(xa)
    if out is None:
        result = empty(xa.shape, xa.dtype, stream=xa.stream)
    else:
        if not isinstance(out, DeviceArray) or out.shape != xa.shape or out.dtype != xa.dtype \
                or not out.is_c_contiguous:
            raise ValueError(f"softmax: out must be a C-contiguous DeviceArray of shape {xa.shape} and "
                             f"dtype {xa.dtype}; got {out!r}")
        result = out
    if xa.size == 0:
        return result
    if not last:
        problem = SoftmaxProblem(elem, xa.size // n, n, int(np.prod(xa.shape[ax + 1:], dtype=np.int64)), bool(log),
                                 "strided", 1, math)
    else:
        variant = algo or choose_variant(n)
        widths = (4,) if elem == "f32" else (4, 2)
        vec = C.vector_width((xa, result), n, C.ELEMENT_BYTES[elem], widths)
        problem = SoftmaxProblem(elem, xa.size // n, n, 0, bool(log), variant, vec, math)
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((xa.ptr, result.ptr), (), C.stream_of(xa))
    return result


def log_softmax(x: object, axis: int = -1, out: DeviceArray | None = None, *, algo: str | None = None,
                math: str = "precise") -> DeviceArray:
    """``softmax(x, axis, log=True)``: ``x - max - log(sum(exp(x - max)))``."""
    return softmax(x, axis, log=True, out=out, algo=algo, math=math)
