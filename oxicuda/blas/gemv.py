"""GEMV: ``y = alpha * op(A) @ x + beta * y`` for column-major A (m x n), cuBLAS semantics.

Two kernels (one spec family): ``trans="T"`` reduces along A's contiguous columns, a warp per
output with vector loads and a shuffle reduction; ``trans="N"`` gives each lane ``vec``
consecutive rows (coalesced along the column) and splits the columns over the CTA's warps, then
sums the warps' partials through shared memory. ``gemv_colmajor`` is the building block for the
level-2 routines and the ``m == 1``/``n == 1`` GEMM branch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass

from oxicuda.driver.facts import device_facts
from oxicuda.memory.dtypes import dtype_name, normalize_dtype
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from . import gemm_codegen as cg
from .flags import trans_op
from .operands import check_span, matrix_span, vector_span

WARPS = 8
#: launch plans of gemv_colmajor, by call signature (gemm's matrix-vector path has its own)
PLANS = PlanCache("gemv")


@dataclass(frozen=True)
class GemvSpec(KernelSpec):
    """GEMV kernel: ``trans`` "N" or "T" (conjugation is ``conj_a``), ``conj_x``, ``vec``
    elements of A per load."""

    family = "gemv"
    dtype: str = "float32"
    trans: str = "N"
    conj_a: bool = False
    conj_x: bool = False
    vec: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        kind = cg.kind_of(self.dtype)
        if self.trans not in ("N", "T"):
            raise ValueError(f"GemvSpec: trans={self.trans!r}; allowed 'N', 'T' (conjugation is conj_a)")
        if (self.conj_a or self.conj_x) and not kind.complex:
            raise ValueError(f"GemvSpec: conjugation needs a complex dtype, got {self.dtype!r}")
        if self.vec not in (1, 2, 4) or self.vec * kind.nbytes > 16 or (self.vec > 1 and kind.complex):
            raise ValueError(f"GemvSpec: vec={self.vec} not allowed for {self.dtype}")


def _shfl_down(kb: KernelBuilder, v: Value, delta: int) -> Value:
    """``v`` from lane + delta (f32 directly, f64 as two 32-bit halves)."""
    if v.type == "f32":
        return kb.shfl_sync("down", v, delta)
    bits = kb.bitcast(v, "u64")
    lo = kb.cvt(bits, "u32")
    hi = kb.cvt(kb.shr(bits, 32), "u32")
    lo2, hi2 = kb.shfl_sync("down", lo, delta), kb.shfl_sync("down", hi, delta)
    joined = kb.or_(kb.shl(kb.cvt(hi2, "u64"), 32), kb.cvt(lo2, "u64"))
    return kb.bitcast(joined, "f64")


def generate(spec: GemvSpec) -> str:
    """PTX of the GEMV for ``spec``. Parameters: m n (u32), a lda (u64), x, incx (s64), y,
    incy (s64), alpha[, alpha_im] alpha_ptr, beta[, beta_im] beta_ptr. Negative increments
    walk the vector backwards from its last element, as in cuBLAS (the host passes the
    pointer of element 0 in memory order). Block: 32 * WARPS threads."""
    kind = cg.kind_of(spec.dtype)
    es, v = kind.nbytes, spec.vec
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    m, n = kb.param("m", "u32"), kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u64")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    alpha, _ = cg.scalar_params(kb, kind, "alpha")
    beta, beta_zero = cg.scalar_params(kb, kind, "beta")
    kb.reqntid(32 * WARPS)
    lane = kb.and_(kb.tid(), 31)
    warp = kb.shr(kb.tid(), 5)
    acc = [cg.zero(kb, kind) for _ in range(v)]

    def x_at(idx: Value) -> cg.Element:
        off = kb.mul(kb.cvt(idx, "s64"), incx)
        return cg.load(kb, kind, kb.addr(x, off, es), conj=spec.conj_x)

    if spec.trans == "T":
        # output j = this warp; lanes walk the column i = lane*v, lane*v + 32v, ...
        j = kb.mad(kb.ctaid(), WARPS, warp)
        with kb.if_(kb.setp("lt", j, n)):
            col = kb.addr(a, kb.mul(kb.cvt(j, "u64"), lda), es)
            with kb.loop(kb.mul(lane, v), m, 32 * v, type_="u32") as i:
                ptr = kb.addr(col, i, es)
                if v > 1:
                    vals = cg.widen(kb, kind, kb.ld("global", kind.storage, ptr, vec=v))
                    elems = [(val,) for val in vals]
                else:
                    elems = [cg.load(kb, kind, ptr, conj=spec.conj_a)]
                for e in range(v):
                    cg.mul_add(kb, kind, elems[e], x_at(kb.add(i, e)), acc[e])
            total = acc[0]
            for e in range(1, v):
                for t, s in zip(total, acc[e]):
                    kb.add(t, s, out=t)
            for delta in (16, 8, 4, 2, 1):
                for t in total:
                    kb.add(t, _shfl_down(kb, t, delta), out=t)
            with kb.if_(kb.setp("eq", lane, 0)):
                yp = kb.addr(y, kb.mul(kb.cvt(j, "s64"), incy), es)
                cg.epilogue(kb, kind, yp, total, alpha, beta, beta_zero)
        return kb.ptx()

    # trans N: rows r0 + lane*v + e; warps take columns warp, warp + WARPS, ...
    rows_per_cta = 32 * v
    r = kb.add(kb.mul(kb.ctaid(), rows_per_cta), kb.mul(lane, v))
    live = kb.setp("lt", r, m)
    with kb.if_(live):
        ptr = kb.addr(a, kb.add(kb.cvt(r, "u64"), kb.mul(kb.cvt(warp, "u64"), lda)), es)
        step = kb.mul(lda, WARPS * es)
        with kb.loop(warp, n, WARPS, type_="u32") as jj:
            xv = x_at(jj)
            if v > 1:
                vals = cg.widen(kb, kind, kb.ld("global", kind.storage, ptr, vec=v))
                elems = [(val,) for val in vals]
            else:
                elems = [cg.load(kb, kind, ptr, conj=spec.conj_a)]
            for e in range(v):
                cg.mul_add(kb, kind, elems[e], xv, acc[e])
            kb.add(ptr, step, out=ptr)
    sz = kind.acc_nbytes
    part = kb.shared("partials", kind.acc, WARPS * rows_per_cta * kind.comps, align=16)
    slot = kb.mad(kb.tid(), v * sz, kb.shared_addr(part), type_="u32")
    for e in range(v):
        kb.st("shared", slot, list(acc[e]) if kind.complex else acc[e][0], offset=e * sz)
    kb.bar_sync()
    with kb.if_(kb.setp("eq", warp, 0)), kb.if_(live):
        for e in range(v):
            total = acc[e]
            for w in range(1, WARPS):
                # warp w's partial of this lane's row e: slot + w * 32 * v * sz + e * sz
                got = _load_acc(kb, kind, slot, w * 32 * v * sz + e * sz)
                for t, s in zip(total, got):
                    kb.add(t, s, out=t)
            with kb.if_(kb.setp("lt", kb.add(r, e), m)):
                yp = kb.addr(y, kb.mul(kb.cvt(kb.add(r, e), "s64"), incy), es)
                cg.epilogue(kb, kind, yp, total, alpha, beta, beta_zero)
    return kb.ptx()


def _load_acc(kb: KernelBuilder, kind: cg.ElementKind, addr: Value, offset: int) -> cg.Element:
    if kind.complex:
        return kb.ld("shared", kind.acc, addr, offset=offset, vec=2)
    return (kb.ld("shared", kind.acc, addr, offset=offset),)


def configurations(arch: str) -> Iterable[GemvSpec]:
    """Both transposes for every dtype (conjugations for complex), scalar and vector loads."""
    for dtype in cg.GEMM_DTYPES:
        kind = cg.kind_of(dtype)
        conj = [(False, False), (True, False), (False, True), (True, True)] if kind.complex else [(False, False)]
        vecs = [1] if kind.complex else [1, min(4, 16 // kind.nbytes)]
        for trans in ("N", "T"):
            for ca, cx in conj:
                for v in vecs:
                    yield GemvSpec(arch=arch, dtype=dtype, trans=trans, conj_a=ca, conj_x=cx, vec=v)


register_family("gemv", GemvSpec, generate, configurations)


# -- host entry --------------------------------------------------------------------------------

def _int(value: object, what: str, minimum: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"gemv: {what}={value!r} must be an int")  # noqa: TRY004 - gemv's one error type for bad arguments
    if minimum is not None and int(value) < minimum:
        raise ValueError(f"gemv: {what}={int(value)} must be >= {minimum}")
    return int(value)


def gemv_colmajor(trans: str, m: int, n: int, alpha, a_ptr: int, lda: int, x_ptr: int, incx: int, beta,
                  y_ptr: int, incy: int, *, dtype, stream=None, alpha_ptr: int = 0, beta_ptr: int = 0,
                  conj_a: bool = False, conj_x: bool = False, _owned: bool = False) -> None:
    """``y = alpha * op(A) @ x + beta * y`` with A column-major m x n (lda >= max(1, m)),
    ``trans`` "N" (y has m entries, x n), "T" or "C" (y has n, x m); ``incx``/``incy`` nonzero
    element steps (negative: cuBLAS's backwards walk). ``conj_a``/``conj_x`` (not in cuBLAS)
    conjugate A or x. ``alpha_ptr``/``beta_ptr``: device scalars (of the accumulator type).
    beta == 0 never reads y. Raises ValueError on bad arguments before any launch, among them
    pointers whose operand does not lie inside one device allocation of the current context
    (freed, foreign or too short). ``_owned``: the caller checked the operands' memory (gemm's
    matrix-vector path), which skips that check."""
    try:
        dt = dtype_name(normalize_dtype(dtype))
    except TypeError as exc:
        raise ValueError(f"gemv: dtype={dtype!r} is not supported; allowed: {cg.GEMM_DTYPES}") from exc
    kind = cg.kind_of(dt)
    op = trans_op(trans, "gemv")
    if op == "C":
        op, conj_a = "T", (not conj_a) if kind.complex else conj_a
    conj_a, conj_x = bool(conj_a) and kind.complex, bool(conj_x) and kind.complex
    m, n = _int(m, "m", 0), _int(n, "n", 0)
    lda = _int(lda, "lda", max(1, m))
    incx, incy = _int(incx, "incx", None), _int(incy, "incy", None)
    if incx == 0 or incy == 0:
        raise ValueError(f"gemv: incx={incx}, incy={incy}; increments must be nonzero")
    ylen, xlen = (m, n) if op == "N" else (n, m)
    if ylen == 0:
        return
    for name, p in (("a_ptr", a_ptr), ("x_ptr", x_ptr), ("y_ptr", y_ptr)):
        if _int(p, name, 0) == 0 and (name == "y_ptr" or xlen > 0):
            raise ValueError(f"gemv: {name} is 0 (a null pointer)")
    for what, s in (("alpha", alpha), ("beta", beta)):
        if isinstance(s, bool) or not isinstance(s, numbers.Number):
            raise ValueError(f"gemv: {what}={s!r} must be a number")  # noqa: TRY004 - as above
    if not _owned:
        es = kind.nbytes
        check_span(y_ptr, vector_span(ylen, incy, es), f"gemv: y ({ylen} entries, incy={incy})")
        if xlen > 0:
            check_span(a_ptr, matrix_span(m, n, lda, es), f"gemv: A ({m}x{n}, lda={lda})")
            check_span(x_ptr, vector_span(xlen, incx, es), f"gemv: x ({xlen} entries, incx={incx})")
        scalar_bytes = cg.kind_of(cg.ACC_DTYPES[dt]).nbytes
        for what, p in (("alpha_ptr", alpha_ptr), ("beta_ptr", beta_ptr)):
            if p:
                check_span(p, scalar_bytes, f"gemv: {what}")
    # cuBLAS: with inc < 0, element i lives at ptr + (len - 1 - i) * |inc|
    x0 = x_ptr + (xlen - 1) * (-incx) * kind.nbytes if incx < 0 else x_ptr
    y0 = y_ptr + (ylen - 1) * (-incy) * kind.nbytes if incy < 0 else y_ptr
    width = 1 if kind.complex else min(4, 16 // kind.nbytes)
    aligned = a_ptr % 16 == 0 and (lda * kind.nbytes) % 16 == 0 and m % width == 0
    vec = width if aligned and width > 1 else 1
    facts = device_facts()
    grid = max(1, math.ceil(n / WARPS) if op == "T" else math.ceil(m / (32 * vec)))
    run = PLANS.single((facts.ordinal, dt, op, conj_a, conj_x, vec, grid),
                       lambda: GemvSpec(arch=facts.arch, dtype=dt, trans=op, conj_a=conj_a, conj_x=conj_x, vec=vec),
                       grid, 32 * WARPS)
    run.run((), (m, n, a_ptr, lda, x0, incx, y0, incy, *cg.scalar_args(kind, alpha), alpha_ptr,
                 *cg.scalar_args(kind, beta), beta_ptr), stream)


def plan(problem, device) -> LaunchPlan:
    """The launch plan of a GEMM problem with m == 1 or n == 1 (batch 1, no pointer arrays) as one
    matrix-vector product; ``run`` takes the GEMM's pointers (a, b, c, alpha_ptr, beta_ptr) and
    scalars (alpha, beta; complex ones as re, im, re, im).

    n == 1: C[:, 0] = alpha * op(A) @ x + beta * C[:, 0] with x = op(B)[:, 0] (B's elements 1 or
    ldb apart). m == 1: C[0, :] = op(B)^T @ x with x = op(A)[0, :]; op(B)^T is B^T (transb N), B
    (T) or conj(B) (C), and C's row is ldc apart."""
    p = problem
    kind = cg.kind_of(p.dtype)
    if p.n == 1:
        trans, conj_a, conj_x = ("N" if p.transa == "N" else "T"), p.transa == "C", p.transb == "C"
        rows, cols = (p.m, p.k) if p.transa == "N" else (p.k, p.m)
        mat, vec_ptr, lda, incx, incy, align = 0, 1, p.lda, (1 if p.transb == "N" else p.ldb), 1, p.align_a
    elif p.m == 1:
        trans, conj_a, conj_x = ("T" if p.transb == "N" else "N"), p.transb == "C", p.transa == "C"
        rows, cols = (p.k, p.n) if p.transb == "N" else (p.n, p.k)
        mat, vec_ptr, lda, incx, incy, align = 1, 0, p.ldb, (p.lda if p.transa == "N" else 1), p.ldc, p.align_b
    else:
        raise ValueError(f"gemv: a GEMM of m={p.m}, n={p.n} is not a matrix-vector product")
    conj_a, conj_x = conj_a and kind.complex, conj_x and kind.complex
    width = 1 if kind.complex else min(4, 16 // kind.nbytes)
    vec = width if width > 1 and align >= 16 and rows % width == 0 else 1
    spec = GemvSpec(arch=device.arch, dtype=p.dtype, trans=trans, conj_a=conj_a, conj_x=conj_x, vec=vec)
    grid = math.ceil(cols / WARPS) if trans == "T" else math.ceil(rows / (32 * vec))
    if kind.complex:
        def bind(ptr, s, ws):
            return (rows, cols, ptr[mat], lda, ptr[vec_ptr], incx, ptr[2], incy, s[0], s[1], ptr[3], s[2], s[3],
                    ptr[4])
    else:
        def bind(ptr, s, ws):
            return (rows, cols, ptr[mat], lda, ptr[vec_ptr], incx, ptr[2], incy, s[0], ptr[3], s[1], ptr[4])
    return LaunchPlan("gemv", [KernelStep(spec, max(1, grid), 32 * WARPS, bind)])
