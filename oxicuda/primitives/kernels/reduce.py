"""Device-wide reduce (sum/min/max), argmin/argmax, and segmented reduce.

Family ``prim_reduce``: a grid-stride pass in which every CTA folds its share of ``x`` and writes
one partial (value, and the index for argmin/argmax); the same kernel with one CTA then folds
the partials (``indexed``: the second stage reads the partials' indices instead of positions).
argmin/argmax return the first position of the extreme; a NaN is the extreme (numpy's rule).

Family ``prim_segreduce``: one warp per segment ``[begin[s], end[s])`` of ``x``; an empty
segment gives the operator's identity. Complex sums (the sparse library's duplicate sums and row
sums) fold (re, im) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from . import common as C

REDUCE_OPS = ("sum", "min", "max", "argmin", "argmax")
OFFSET_TYPES = {"int32": "s32", "int64": "s64"}
THREADS = 256
#: complex dtypes the segmented sum takes (as (re, im) pairs of this real type)
COMPLEX = {"complex64": "float32", "complex128": "float64"}
NO_INDEX = 0xFFFFFFFF


@dataclass(frozen=True)
class ReduceSpec(KernelSpec):
    family: ClassVar[str] = "prim_reduce"
    dtype: str = "float32"
    op: str = "sum"
    indexed: bool = False
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in C.REDUCE_DTYPES or self.op not in REDUCE_OPS:
            raise ValueError(f"ReduceSpec: dtype={self.dtype!r} op={self.op!r}; allowed "
                             f"{C.REDUCE_DTYPES} x {REDUCE_OPS}")


@dataclass(frozen=True)
class SegReduceSpec(KernelSpec):
    family: ClassVar[str] = "prim_segreduce"
    dtype: str = "float32"
    op: str = "sum"
    offsets: str = "int32"
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        complex_sum = self.dtype in COMPLEX and self.op == "sum"
        if (self.dtype not in C.REDUCE_DTYPES and not complex_sum) or self.op not in C.OPS \
                or self.offsets not in OFFSET_TYPES:
            raise ValueError(f"SegReduceSpec: dtype={self.dtype!r} op={self.op!r} offsets={self.offsets!r}")


def _better(kb: KernelBuilder, op: str, va: Value, ia: Value, vb: Value, ib: Value) -> Value:
    """True where (vb, ib) wins over (va, ia): more extreme, or equal at a lower index; a NaN
    beats any number and the lower-indexed NaN wins."""
    cmp = "gt" if op == "argmax" else "lt"
    wins = kb.setp(cmp, vb, va)
    tie = kb.and_(kb.setp("eq", vb, va), kb.setp("lt", ib, ia))
    wins = kb.or_(wins, tie)
    if va.type in ("f32", "f64"):
        bnan = kb.setp("nan", vb, vb)
        anan = kb.setp("nan", va, va)
        nan_win = kb.and_(bnan, kb.or_(kb.not_(anan), kb.setp("lt", ib, ia)))
        wins = kb.and_(wins, kb.not_(anan))
        wins = kb.or_(wins, nan_win)
    return wins


def _fold_pair(kb, op, va, ia, vb, ib) -> None:
    w = _better(kb, op, va, ia, vb, ib)
    kb.selp(vb, va, w, out=va)
    kb.selp(ib, ia, w, out=ia)


def generate_reduce(spec: ReduceSpec) -> str:
    """Params (x, idx_in, y, idx_out, n): y[ctaid] (and idx_out[ctaid], u64) over this CTA's
    grid-stride share of x[0:n]."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    T = spec.threads
    C.launch_bounds(kb, T)
    t, size = C.PTX[spec.dtype], C.BYTES[spec.dtype]
    arg = spec.op.startswith("arg")
    base_op = spec.op[3:] if arg else spec.op
    ident = C.identity(base_op, spec.dtype)
    x, idx_in = kb.param_ptr("x"), kb.param_ptr("idx_in")
    y, idx_out = kb.param_ptr("y"), kb.param_ptr("idx_out")
    n = kb.param("n", "u32")
    tid = kb.tid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    warps = T // 32
    acc = kb.mov(ident, t)
    best = kb.mov(NO_INDEX, "u32")
    start = kb.mad(kb.ctaid(), T, tid)
    stride = kb.mul(kb.nctaid(), T)
    i = kb.mov(start)
    top = kb.label("grid")
    with kb.if_(kb.setp("lt", i, n)):
        v = kb.ld("global", t, kb.addr(x, i, size))
        if arg:
            j = kb.cvt(kb.ld("global", "u64", kb.addr(idx_in, i, 8)), "u32") if spec.indexed else i
            _fold_pair(kb, spec.op, acc, best, v, j)
        else:
            kb.assign(acc, C.combine(kb, base_op, acc, v))
        kb.add(i, stride, out=i)
        kb.bra(top)
    if arg:
        for step in (16, 8, 4, 2, 1):
            _fold_pair(kb, spec.op, acc, best, C.shfl(kb, "down", acc, step), kb.shfl_sync("down", best, step))
        sv = kb.shared("sv", t, warps)
        si = kb.shared("si", "u32", warps)
        with kb.if_(kb.setp("eq", lane, 0)):
            kb.st("shared", kb.addr(kb.shared_addr(sv), warp, size), acc)
            kb.st("shared", kb.addr(kb.shared_addr(si), warp, 4), best)
        kb.bar_sync(0)
        with kb.if_(kb.setp("eq", tid, 0)):
            for w in range(1, warps):
                _fold_pair(kb, spec.op, acc, best, kb.ld("shared", t, sv, offset=w * size),
                           kb.ld("shared", "u32", si, offset=w * 4))
            kb.st("global", kb.addr(y, kb.ctaid(), size), acc)
            kb.st("global", kb.addr(idx_out, kb.ctaid(), 8), kb.cvt(best, "u64"))
    else:
        scratch = kb.shared("scratch", t, warps)
        r = C.block_reduce(kb, base_op, acc, scratch, warps, warp, lane)
        with kb.if_(kb.setp("eq", tid, 0)):
            kb.st("global", kb.addr(y, kb.ctaid(), size), r)
    return kb.ptx()


def generate_segreduce(spec: SegReduceSpec) -> str:
    """Params (x, begin, end, y, segments): y[s] = op over x[begin[s]:end[s]], a warp per segment."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    T = spec.threads
    C.launch_bounds(kb, T)
    parts = 2 if spec.dtype in COMPLEX else 1
    real = COMPLEX.get(spec.dtype, spec.dtype)
    t, size = C.PTX[real], C.BYTES[real] * parts
    ot = OFFSET_TYPES[spec.offsets]
    osize = 4 if ot == "s32" else 8
    ident = C.identity(spec.op, real)
    x, begin, end, y = (kb.param_ptr(k) for k in ("x", "begin", "end", "y"))
    segments = kb.param("segments", "u32")
    tid = kb.tid()
    lane = kb.and_(tid, 31)
    seg = kb.mad(kb.ctaid(), T // 32, kb.shr(tid, 5))
    kb.ret(kb.setp("ge", seg, segments))
    lo = kb.ld("global", ot, kb.addr(begin, seg, osize))
    hi = kb.ld("global", ot, kb.addr(end, seg, osize))
    if ot == "s32":
        lo, hi = kb.cvt(lo, "s64"), kb.cvt(hi, "s64")
    acc = [kb.mov(ident, t) for _ in range(parts)]
    i = kb.add(lo, kb.cvt(lane, "s64"))
    with kb.loop(i, hi, 32, type_="s64") as j:
        v = kb.ld("global", t, kb.addr(x, j, size), vec=parts)
        for a, e in zip(acc, v if parts == 2 else (v,)):
            kb.assign(a, C.combine(kb, spec.op, a, e))
    r = [C.warp_reduce(kb, spec.op, a) for a in acc]
    with kb.if_(kb.setp("eq", lane, 0)):
        kb.st("global", kb.addr(y, seg, size), r if parts == 2 else r[0])
    return kb.ptx()


def reduce_configurations(arch: str) -> list[ReduceSpec]:
    out = []
    for d in C.REDUCE_DTYPES:
        for op in REDUCE_OPS:
            for indexed in ((False, True) if op.startswith("arg") else (False,)):
                out.append(ReduceSpec(arch=arch, dtype=d, op=op, indexed=indexed))
    return out


def segreduce_configurations(arch: str) -> list[SegReduceSpec]:
    return [SegReduceSpec(arch=arch, dtype=d, op=op, offsets=o)
            for d in C.REDUCE_DTYPES for op in C.OPS for o in OFFSET_TYPES] + [
        SegReduceSpec(arch=arch, dtype=d, op="sum", offsets=o) for d in COMPLEX for o in OFFSET_TYPES]


registry.register_family(ReduceSpec.family, ReduceSpec, generate_reduce, reduce_configurations)
registry.register_family(SegReduceSpec.family, SegReduceSpec, generate_segreduce, segreduce_configurations)
