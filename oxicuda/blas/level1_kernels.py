"""PTX generators for BLAS level 1: element-wise maps (axpy, scal, copy, swap, rot) and reductions
(dot, dotc, asum, nrm2, iamax, iamin, and the max-abs pass of a scaled nrm2).

Vectors are addressed ``base + (i * inc) * elem_size`` with 64-bit signed index arithmetic; the
host moves ``base`` to the lowest address for negative increments (BLAS convention), so the
kernel never sees a negative offset from the allocation's start. Complex vectors are handled as
(re, im) pairs of the real type.

Scalars (alpha, and c/s of rot) come as by-value parameters plus a device pointer: a nonzero
pointer wins (cuBLAS's device pointer mode), so one kernel serves both pointer modes.

Reductions run in two launches of the same family: ``stage="partial"`` (a grid of 256-thread
blocks; each block reduces its grid-strided share into two float64 slots of a workspace) and
``stage="final"`` (one block reducing the partials and writing the result in the output type).
Accumulation is in float64 for every dtype, so float32 sums and sums of squares cannot overflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ptx import registry
from ..ptx.builder import KernelBuilder, Value
from ..ptx.spec import KernelSpec

BLOCK = 256
DTYPES = ("float32", "float64", "complex64", "complex128")
MAP_OPS = ("axpy", "scal", "copy", "swap", "rot")
REDUCE_OPS = ("dotu", "dotc", "asum", "nrm2_sq", "nrm2_scaled", "amax_abs", "iamax", "iamin")
STAGES = ("partial", "final")
#: the index stored for "no element yet" in iamax/iamin accumulators (larger than any index)
NO_INDEX = 4294967296.0


def real_type(dtype: str) -> str:
    """The PTX type of one component: f32 for float32/complex64, f64 otherwise."""
    return "f32" if dtype in ("float32", "complex64") else "f64"


def components(dtype: str) -> int:
    """2 for complex dtypes, 1 for real ones."""
    return 2 if dtype.startswith("complex") else 1


@dataclass(frozen=True)
class Blas1MapSpec(KernelSpec):
    """An element-wise level-1 kernel. ``scalar_real``: the (second, for rot) scalar of a complex
    op is real (csscal, zdscal, csrot, zdrot)."""

    family: ClassVar[str] = "blas1_map"
    op: str = "axpy"
    dtype: str = "float32"
    scalar_real: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.op not in MAP_OPS:
            raise ValueError(f"Blas1MapSpec: op={self.op!r}; allowed: {MAP_OPS}")
        if self.dtype not in DTYPES:
            raise ValueError(f"Blas1MapSpec: dtype={self.dtype!r}; allowed: {DTYPES}")


@dataclass(frozen=True)
class Blas1ReduceSpec(KernelSpec):
    """One stage of a level-1 reduction."""

    family: ClassVar[str] = "blas1_reduce"
    op: str = "dotu"
    dtype: str = "float32"
    stage: str = "partial"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.op not in REDUCE_OPS:
            raise ValueError(f"Blas1ReduceSpec: op={self.op!r}; allowed: {REDUCE_OPS}")
        if self.dtype not in DTYPES:
            raise ValueError(f"Blas1ReduceSpec: dtype={self.dtype!r}; allowed: {DTYPES}")
        if self.stage not in STAGES:
            raise ValueError(f"Blas1ReduceSpec: stage={self.stage!r}; allowed: {STAGES}")


# -- shared pieces ------------------------------------------------------------------------------
def _element_address(kb: KernelBuilder, base: Value, i64: Value, inc: Value, esize: int) -> Value:
    return kb.addr(base, kb.mul(i64, inc), esize)


def _load_vec(kb: KernelBuilder, addr: Value, rt: str, ncomp: int) -> list[Value]:
    size = 4 if rt == "f32" else 8
    return [kb.ld("global", rt, addr, offset=c * size) for c in range(ncomp)]


def _store_vec(kb: KernelBuilder, addr: Value, vals: list[Value], rt: str) -> None:
    size = 4 if rt == "f32" else 8
    for c, v in enumerate(vals):
        kb.st("global", addr, v, offset=c * size)


def _scalar(kb: KernelBuilder, prefix: str, rt: str, ncomp: int) -> list[Value]:
    """A scalar from by-value parameters, replaced by ``*ptr`` when the pointer is nonzero."""
    vals = [kb.param(f"{prefix}_re", rt), kb.param(f"{prefix}_im", rt)][:max(ncomp, 1)]
    ptr = kb.param(f"{prefix}_ptr", "u64")
    with kb.if_(kb.setp("ne", ptr, 0)):
        size = 4 if rt == "f32" else 8
        for c, v in enumerate(vals):
            kb.assign(v, kb.ld("global", rt, ptr, offset=c * size))
    return vals


def _cmul(kb: KernelBuilder, a: list[Value], x: list[Value]) -> list[Value]:
    """a * x for (re[, im]) lists; a real scalar (one entry) scales both components."""
    if len(x) == 1:
        return [kb.mul(a[0], x[0])]
    if len(a) == 1:
        return [kb.mul(a[0], x[0]), kb.mul(a[0], x[1])]
    re = kb.fma(a[0], x[0], kb.neg(kb.mul(a[1], x[1])))
    im = kb.fma(a[0], x[1], kb.mul(a[1], x[0]))
    return [re, im]


def _cadd(kb: KernelBuilder, a: list[Value], b: list[Value]) -> list[Value]:
    return [kb.add(p, q) for p, q in zip(a, b)]


# -- element-wise maps --------------------------------------------------------------------------
def generate_map(spec: Blas1MapSpec) -> str:
    """PTX of one element-wise kernel. Params: n, x, incx, y, incy, then scalars a and b
    (each ``_re, _im, _ptr``). One thread per element."""
    rt, ncomp = real_type(spec.dtype), components(spec.dtype)
    esize = (4 if rt == "f32" else 8) * ncomp
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    n = kb.param("n", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    scalar_comps = 1 if spec.scalar_real else ncomp
    a = _scalar(kb, "a", rt, 1 if spec.op == "rot" else scalar_comps)  # rot: c is real
    b = _scalar(kb, "b", rt, scalar_comps if spec.op == "rot" else 1)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        i64 = kb.cvt(i, "s64")
        xa = _element_address(kb, x, i64, incx, esize)
        if spec.op == "scal":
            _store_vec(kb, xa, _cmul(kb, a, _load_vec(kb, xa, rt, ncomp)), rt)
        else:
            ya = _element_address(kb, y, i64, incy, esize)
            xv = _load_vec(kb, xa, rt, ncomp)
            if spec.op == "copy":
                _store_vec(kb, ya, xv, rt)
            elif spec.op == "axpy":
                _store_vec(kb, ya, _cadd(kb, _cmul(kb, a, xv), _load_vec(kb, ya, rt, ncomp)), rt)
            elif spec.op == "swap":
                yv = _load_vec(kb, ya, rt, ncomp)
                _store_vec(kb, ya, xv, rt)
                _store_vec(kb, xa, yv, rt)
            else:  # rot: x' = c x + s y, y' = c y - conj(s) x (c real)
                yv = _load_vec(kb, ya, rt, ncomp)
                s_conj = b if len(b) == 1 else [b[0], kb.neg(b[1])]
                new_x = _cadd(kb, _cmul(kb, a, xv), _cmul(kb, b, yv))
                t = _cmul(kb, s_conj, xv)
                new_y = [kb.sub(p, q) for p, q in zip(_cmul(kb, a, yv), t)]
                _store_vec(kb, xa, new_x, rt)
                _store_vec(kb, ya, new_y, rt)
    return kb.ptx()


def map_configurations(arch: str) -> list[Blas1MapSpec]:
    specs = [Blas1MapSpec(arch=arch, op=op, dtype=d) for op in MAP_OPS for d in DTYPES]
    specs += [Blas1MapSpec(arch=arch, op=op, dtype=d, scalar_real=True)
              for op in ("scal", "rot") for d in ("complex64", "complex128")]
    return specs


# -- reductions ---------------------------------------------------------------------------------
def _identity(op: str) -> tuple[float, float]:
    if op == "iamax":
        return -1.0, NO_INDEX
    if op == "iamin":
        return float("inf"), NO_INDEX
    return 0.0, 0.0


def _combine(kb: KernelBuilder, op: str, acc: list[Value], other: list[Value]) -> None:
    """acc <- combine(acc, other) for two-slot float64 accumulators."""
    if op == "amax_abs":
        kb.max(acc[0], other[0], out=acc[0])
    elif op in ("iamax", "iamin"):
        better = kb.setp("gt" if op == "iamax" else "lt", other[0], acc[0])
        tie = kb.and_(kb.setp("eq", other[0], acc[0]), kb.setp("lt", other[1], acc[1]))
        take = kb.or_(better, tie)
        kb.selp(other[0], acc[0], take, out=acc[0])
        kb.selp(other[1], acc[1], take, out=acc[1])
    else:
        kb.add(acc[0], other[0], out=acc[0])
        kb.add(acc[1], other[1], out=acc[1])


def _contribution(kb: KernelBuilder, spec: Blas1ReduceSpec, xv: list[Value], yv: list[Value] | None,
                  index: Value, scale: Value | None) -> list[Value]:
    """What element ``index`` adds to the accumulator, as two float64 values."""
    x64 = [kb.cvt(v, "f64") if v.type == "f32" else v for v in xv]
    zero = kb.mov(0.0, "f64")
    op = spec.op
    if op in ("dotu", "dotc"):
        y64 = [kb.cvt(v, "f64") if v.type == "f32" else v for v in yv]
        if len(x64) == 1:
            return [kb.mul(x64[0], y64[0]), zero]
        if op == "dotc":
            x64 = [x64[0], kb.neg(x64[1])]
        return _cmul(kb, x64, y64)
    if op in ("asum", "iamax", "iamin"):
        mag = kb.abs(x64[0])
        if len(x64) == 2:
            mag = kb.add(mag, kb.abs(x64[1]))
        return [mag, kb.cvt(index, "f64") if op != "asum" else zero]
    if op == "amax_abs":
        mag = kb.abs(x64[0])
        return [mag if len(x64) == 1 else kb.max(mag, kb.abs(x64[1])), zero]
    if op == "nrm2_scaled":
        x64 = [kb.div(v, scale) for v in x64]
    sq = kb.mul(x64[0], x64[0])
    if len(x64) == 2:
        sq = kb.fma(x64[1], x64[1], sq)
    return [sq, zero]


def _grid_stride(kb: KernelBuilder, start: Value, stop: Value, stride: Value):
    """Emit ``for i in range(start, stop, stride)`` (runtime stride); yields the counter."""
    i = kb.mov(start, "u32")
    top, end = kb.label(kb._new_label("gs_top")), kb._new_label("gs_end")
    kb.bra(end, kb.setp("ge", i, stop))
    yield i
    kb.add(i, stride, out=i)
    kb.bra(top)
    kb.label(end)


def generate_reduce(spec: Blas1ReduceSpec) -> str:
    """PTX of one reduction stage. Params: n (elements, or partial count in the final stage),
    x, incx, y, incy, part (float64 workspace: two slots per block), aux (float64 scale of
    nrm2_scaled), out (the result, in the output type)."""
    rt, ncomp = real_type(spec.dtype), components(spec.dtype)
    esize = (4 if rt == "f32" else 8) * ncomp
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(BLOCK)
    n = kb.param("n", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    part, aux, out = kb.param_ptr("part"), kb.param_ptr("aux"), kb.param_ptr("out")
    s0, s1 = kb.shared("red0", "f64", BLOCK, align=8), kb.shared("red1", "f64", BLOCK, align=8)
    tid = kb.tid()
    ident = _identity(spec.op)
    acc = [kb.mov(ident[0], "f64"), kb.mov(ident[1], "f64")]
    if spec.stage == "partial":
        scale = kb.ld("global", "f64", aux) if spec.op == "nrm2_scaled" else None
        start = kb.mad(kb.ctaid(), BLOCK, tid)
        stride = kb.mul(kb.nctaid(), BLOCK)
        for i in _grid_stride(kb, start, n, stride):
            i64 = kb.cvt(i, "s64")
            xv = _load_vec(kb, _element_address(kb, x, i64, incx, esize), rt, ncomp)
            yv = None
            if spec.op in ("dotu", "dotc"):
                yv = _load_vec(kb, _element_address(kb, y, i64, incy, esize), rt, ncomp)
            _combine(kb, spec.op, acc, _contribution(kb, spec, xv, yv, i, scale))
    else:
        for i in _grid_stride(kb, tid, n, kb.mov(BLOCK, "u32")):
            p = kb.addr(part, kb.mul(i, 2), 8)
            _combine(kb, spec.op, acc, [kb.ld("global", "f64", p), kb.ld("global", "f64", p, offset=8)])
    kb.st("shared", kb.addr(kb.shared_addr(s0), tid, 8), acc[0])
    kb.st("shared", kb.addr(kb.shared_addr(s1), tid, 8), acc[1])
    kb.bar_sync()
    half = BLOCK // 2
    while half >= 1:
        with kb.if_(kb.setp("lt", tid, half)):
            other = kb.add(tid, half)
            o = [kb.ld("shared", "f64", kb.addr(kb.shared_addr(s0), other, 8)),
                 kb.ld("shared", "f64", kb.addr(kb.shared_addr(s1), other, 8))]
            _combine(kb, spec.op, acc, o)
            kb.st("shared", kb.addr(kb.shared_addr(s0), tid, 8), acc[0])
            kb.st("shared", kb.addr(kb.shared_addr(s1), tid, 8), acc[1])
        kb.bar_sync()
        half //= 2
    with kb.if_(kb.setp("eq", tid, 0)):
        if spec.stage == "partial":
            p = kb.addr(part, kb.mul(kb.ctaid(), 2), 8)
            kb.st("global", p, acc[0])
            kb.st("global", p, acc[1], offset=8)
        else:
            _write_result(kb, spec, acc, aux, out, rt)
    return kb.ptx()


def _write_result(kb: KernelBuilder, spec: Blas1ReduceSpec, acc: list[Value], aux: Value, out: Value,
                  rt: str) -> None:
    op = spec.op
    if op in ("iamax", "iamin"):
        found = kb.setp("lt", acc[1], NO_INDEX)
        idx = kb.cvt(kb.add(acc[1], 1.0), "s32")
        kb.st("global", out, kb.selp(idx, kb.mov(0, "s32"), found))
        return
    if op == "amax_abs":
        kb.st("global", out, acc[0])
        return
    vals = acc[:components(spec.dtype)] if op in ("dotu", "dotc") else [acc[0]]
    if op == "nrm2_sq":
        vals = [kb.sqrt(acc[0])]
    elif op == "nrm2_scaled":
        scale = kb.ld("global", "f64", aux)
        scaled = kb.mul(scale, kb.sqrt(acc[0]))
        # scale 0 (all zeros), inf or NaN: the norm is the scale itself
        usable = kb.and_(kb.setp("gt", scale, 0.0), kb.setp("lt", scale, float("inf")))
        vals = [kb.selp(scaled, scale, usable)]
    size = 4 if rt == "f32" else 8
    for c, v in enumerate(vals):
        kb.st("global", out, kb.cvt(v, "f32") if rt == "f32" else v, offset=c * size)


def reduce_configurations(arch: str) -> list[Blas1ReduceSpec]:
    specs = []
    for d in DTYPES:
        ops = ["dotu", "asum", "iamax", "iamin"]
        ops += ["dotc"] if d.startswith("complex") else []
        ops += ["nrm2_sq"] if real_type(d) == "f32" else ["amax_abs", "nrm2_scaled"]
        specs += [Blas1ReduceSpec(arch=arch, op=op, dtype=d, stage=s) for op in ops for s in STAGES]
    return specs


registry.register_family("blas1_map", Blas1MapSpec, generate_map, map_configurations)
registry.register_family("blas1_reduce", Blas1ReduceSpec, generate_reduce, reduce_configurations)
