"""PTX generator of the transform-and-reduce kernel under every vector and matrix norm
(``solver_norm``): rows of a flat array, each row reduced to one real value,

    out[row * chunks + chunk] = fin(op_{j in the chunk's part of the row} fn(x[j]))

- rows are uniform (``row * length`` to ``(row + 1) * length``) or segments given by int32
  ``offsets`` (the CSR row pointers of oxicuda.sparse's norms);
- ``fn``: ``abs`` |x| (complex: overflow-safe hypot), ``sq`` |x|^2, ``pow`` |x|^p, ``nonzero``
  1 where x != 0 (NaN counts, as numpy's ``x != 0``), ``id`` x (real input: the partials);
- ``op``: ``sum``, ``max``, ``min`` (max/min propagate NaN, as numpy's reductions);
- ``fin``: ``none``, ``sqrt``, ``root`` (acc^(1/p)).

All arithmetic is float64 whatever the input (pow and root through exp/log in float64); the
result is stored as ``out`` (float32 or float64). A group of ``group`` lanes (32: a warp, 8 rows
per CTA; 256: the CTA) strides its part of a row and reduces by shuffles (and shared memory for
256). ``chunks`` > 1 splits long rows over several groups, whose float64 partials a second
launch (``id``) combines. With ``full`` != 0 (segments only, max/min only) a segment shorter
than ``full`` also folds in a 0 (the implicit zeros of a sparse row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...ptx import registry
from ...ptx.builder import KernelBuilder, Value
from ...ptx.spec import KernelSpec
from .common import DTYPES, components, esize, exp_f64, log_f64, real_type

NORM_THREADS = 256
FNS = ("abs", "sq", "pow", "nonzero", "id")
OPS = ("sum", "max", "min")
FINS = ("none", "sqrt", "root")
GROUPS = (32, 256)
OUTS = ("float32", "float64")


@dataclass(frozen=True)
class NormSpec(KernelSpec):
    family: ClassVar[str] = "solver_norm"
    dtype: str = "float64"
    fn: str = "sq"
    op: str = "sum"
    fin: str = "none"
    out: str = "float64"
    group: int = 32
    segmented: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES or self.fn not in FNS or self.op not in OPS or self.fin not in FINS \
                or self.out not in OUTS or self.group not in GROUPS:
            raise ValueError(f"NormSpec: dtype={self.dtype!r} fn={self.fn!r} op={self.op!r} fin={self.fin!r} "
                             f"out={self.out!r} group={self.group}")
        if self.fn == "id" and self.dtype.startswith("complex"):
            raise ValueError("NormSpec: fn='id' takes real input (the partials of a first pass)")


def _is_nan(kb: KernelBuilder, v: Value) -> Value:
    return kb.setp("nan", v, v)


def _combine(kb: KernelBuilder, op: str, acc: Value, v: Value) -> Value:
    if op == "sum":
        return kb.add(acc, v)
    take = kb.or_(kb.setp("gt" if op == "max" else "lt", v, acc), _is_nan(kb, v))
    return kb.selp(v, acc, take)


def _abs(kb: KernelBuilder, parts: list[Value]) -> Value:
    if len(parts) == 1:
        return kb.abs(parts[0])
    x, y = kb.abs(parts[0]), kb.abs(parts[1])
    hi, lo = kb.max(x, y), kb.min(x, y)
    r = kb.div(lo, kb.selp(1.0, hi, kb.setp("eq", hi, 0.0)))
    v = kb.mul(hi, kb.sqrt(kb.fma(r, r, 1.0)))
    either_nan = kb.or_(_is_nan(kb, parts[0]), _is_nan(kb, parts[1]))
    v = kb.selp(kb.add(parts[0], parts[1]), v, either_nan)
    # as C99 hypot: an infinite part gives inf even beside a NaN (max drops the NaN)
    return kb.selp(float("inf"), v, kb.setp("eq", hi, float("inf")))


def _pow(kb: KernelBuilder, a: Value, p: Value) -> Value:
    """a^p for a >= 0 (or NaN): exp(p log a); 0^p is 0 (p > 0) or inf (p < 0) through log 0 = -inf."""
    t = kb.mul(p, log_f64(kb, a))
    return kb.selp(t, exp_f64(kb, t), _is_nan(kb, t))


def _transform(kb: KernelBuilder, spec: NormSpec, parts: list[Value], p: Value) -> Value:
    if spec.fn == "id":
        return parts[0]
    if spec.fn == "sq":
        acc = kb.mul(parts[0], parts[0])
        return kb.fma(parts[1], parts[1], acc) if len(parts) == 2 else acc
    if spec.fn == "nonzero":
        nz = kb.setp("neu", parts[0], 0.0)
        if len(parts) == 2:
            nz = kb.or_(nz, kb.setp("neu", parts[1], 0.0))
        return kb.selp(1.0, 0.0, nz, type_="f64")
    a = _abs(kb, parts)
    return a if spec.fn == "abs" else _pow(kb, a, p)


def _shfl_f64(kb: KernelBuilder, v: Value, delta: int) -> Value:
    bits = kb.bitcast(v, "u64")
    lo = kb.shfl_sync("bfly", kb.cvt(bits, "u32"), delta)
    hi = kb.shfl_sync("bfly", kb.cvt(kb.shr(bits, 32), "u32"), delta)
    return kb.bitcast(kb.or_(kb.shl(kb.cvt(hi, "u64"), 32), kb.cvt(lo, "u64")), "f64")


def _warp_reduce(kb: KernelBuilder, op: str, acc: Value) -> Value:
    for delta in (16, 8, 4, 2, 1):
        acc = _combine(kb, op, acc, _shfl_f64(kb, acc, delta))
    return acc


IDENTITY = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}


def generate_norm(spec: NormSpec) -> str:
    """Params: x, offsets, out (pointers), rows, chunks (u32), length, full (u64), p (f64)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(NORM_THREADS)
    x, offsets, out = kb.param_ptr("x"), kb.param_ptr("offsets"), kb.param_ptr("out")
    rows, chunks = kb.param("rows", "u32"), kb.param("chunks", "u32")
    length, full = kb.param("length", "u64"), kb.param("full", "u64")
    p = kb.param("p", "f64")
    G = spec.group
    tid = kb.tid()
    unit = kb.mad(kb.ctaid(), NORM_THREADS // G, kb.shr(tid, G.bit_length() - 1))
    lane = kb.and_(tid, G - 1)
    total = kb.mul(rows, chunks)
    kb.ret(kb.setp("ge", unit, total))  # a whole group (warp-aligned, or the CTA) leaves together
    row = kb.div(unit, chunks)
    chunk = kb.sub(unit, kb.mul(row, chunks))
    if spec.segmented:
        lo = kb.cvt(kb.ld("global", "s32", kb.addr(offsets, row, 4)), "u64", type_="s32")
        hi = kb.cvt(kb.ld("global", "s32", kb.addr(offsets, row, 4), offset=4), "u64", type_="s32")
    else:
        lo = kb.mul(kb.cvt(row, "u64"), length)
        hi = kb.add(lo, length)
    span = kb.sub(hi, lo)
    c64 = kb.cvt(chunks, "u64")
    per = kb.div(kb.add(span, kb.sub(c64, 1)), c64)
    start = kb.mad(kb.cvt(chunk, "u64"), per, lo)
    stop = kb.min(kb.add(start, per), hi)
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype)
    acc = kb.mov(IDENTITY[spec.op], "f64")
    with kb.loop(kb.add(start, kb.cvt(lane, "u64")), stop, G, type_="u64") as j:
        a = kb.addr(x, j, es)
        parts = [kb.ld("global", rt, a, offset=c * (es // nc)) for c in range(nc)]
        if rt == "f32":
            parts = [kb.cvt(v, "f64") for v in parts]
        kb.assign(acc, _combine(kb, spec.op, acc, _transform(kb, spec, parts, p)))
    if spec.segmented and spec.op != "sum":
        fold = kb.and_(kb.and_(kb.setp("lt", span, full), kb.setp("eq", chunk, 0)), kb.setp("eq", lane, 0))
        kb.assign(acc, kb.selp(_combine(kb, spec.op, acc, kb.mov(0.0, "f64")), acc, fold))
    acc = _warp_reduce(kb, spec.op, acc)
    if G == NORM_THREADS:
        warps = kb.shared("warp_acc", "f64", NORM_THREADS // 32)
        wid = kb.shr(tid, 5)
        with kb.if_(kb.setp("eq", kb.and_(tid, 31), 0)):
            kb.st("shared", kb.shared_addr(warps, kb.mul(wid, 8)), acc)
        kb.bar_sync(0)
        with kb.if_(kb.setp("lt", tid, 32)):
            v = kb.mov(IDENTITY[spec.op], "f64")
            with kb.if_(kb.setp("lt", tid, NORM_THREADS // 32)):
                kb.assign(v, kb.ld("shared", "f64", kb.shared_addr(warps, kb.mul(tid, 8))))
            kb.assign(acc, _warp_reduce(kb, spec.op, v))
    with kb.if_(kb.setp("eq", lane, 0)):
        res = acc
        if spec.fin == "sqrt":
            res = kb.sqrt(acc)
        elif spec.fin == "root":
            res = _pow(kb, acc, kb.rcp(p))
        if spec.out == "float32":
            res = kb.cvt(res, "f32")
        kb.st("global", kb.addr(out, unit, 4 if spec.out == "float32" else 8), res)
    return kb.ptx()


def norm_configurations(arch: str) -> list[NormSpec]:
    """Every configuration the norms can launch: first passes for each input dtype, and the
    partial-combining second passes (float64 input, fn ``id``)."""
    out = []
    for d in DTYPES:
        o = "float32" if real_type(d) == "f32" else "float64"
        for fn, op, fin in _FIRST_PASSES:
            for seg in (False, True):
                for g in GROUPS:
                    out.append(NormSpec(arch=arch, dtype=d, fn=fn, op=op, fin=fin, out=o, group=g, segmented=seg))
                    # the same first pass feeding a second one (float64 partials or line sums)
                    out.append(NormSpec(arch=arch, dtype=d, fn=fn, op=op, fin="none", out="float64", group=g,
                                        segmented=seg))
    for o in OUTS:
        for op in OPS:
            for fin in FINS:
                for g in GROUPS:
                    out.append(NormSpec(arch=arch, dtype="float64", fn="id", op=op, fin=fin, out=o, group=g))
                    out.append(NormSpec(arch=arch, dtype="float32", fn="id", op=op, fin=fin, out=o, group=g))
    return sorted(set(out), key=repr)


#: (fn, op, fin) of the first passes the norms use
_FIRST_PASSES = (("sq", "sum", "sqrt"), ("abs", "sum", "none"), ("abs", "max", "none"), ("abs", "min", "none"),
                 ("nonzero", "sum", "none"), ("pow", "sum", "root"))

registry.register_family(NormSpec.family, NormSpec, generate_norm, norm_configurations)
