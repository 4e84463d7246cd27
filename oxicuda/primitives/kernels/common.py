"""PTX pieces every primitive kernel shares: element types, operator identities, NaN-propagating
combines, 64-bit-safe shuffles, and the warp/CTA scan and reduce built from them.

Element types are numpy names in specs (``"int32"``, ``"float64"``...); ``PTX`` maps them to the
register type the kernels compute in.
"""

from __future__ import annotations

import numpy as np

from oxicuda.ptx.builder import KernelBuilder, SharedArray, Value

#: numpy dtype name -> PTX register type of the scan/reduce kernels
PTX = {"int32": "s32", "int64": "s64", "uint32": "u32", "uint64": "u64",
       "float32": "f32", "float64": "f64"}
BYTES = {name: np.dtype(name).itemsize for name in PTX}
SCAN_DTYPES = ("int32", "int64", "uint32", "float32", "float64")
REDUCE_DTYPES = ("int32", "int64", "uint32", "uint64", "float32", "float64")
OPS = ("sum", "min", "max")


def identity(op: str, dtype: str) -> int | float:
    """The neutral element of ``op`` over ``dtype`` (sum 0; max the lowest value; min the highest;
    -inf/+inf for floats)."""
    if op == "sum":
        return 0.0 if dtype.startswith("float") else 0
    if dtype.startswith("float"):
        return float("-inf") if op == "max" else float("inf")
    info = np.iinfo(dtype)
    return int(info.min) if op == "max" else int(info.max)


def combine(kb: KernelBuilder, op: str, a: Value, b: Value) -> Value:
    """``op(a, b)``; float min/max propagate NaN (numpy's rule), PTX's own min/max would drop it."""
    if op == "sum":
        return kb.add(a, b)
    r = kb.max(a, b) if op == "max" else kb.min(a, b)
    if a.type in ("f32", "f64"):
        either_nan = kb.setp("nan", a, b)
        r = kb.selp(kb.add(a, b), r, either_nan)
    return r


def shfl(kb: KernelBuilder, mode: str, v: Value, b: object, c: object = None) -> Value:
    """``shfl.sync`` of a 32- or 64-bit value (a 64-bit one moves as two 32-bit halves)."""
    if v.ptype.bits == 32:
        return kb.shfl_sync(mode, v, b, c)
    bits = kb.bitcast(v, "u64")
    lo = kb.cvt(bits, "u32")
    hi = kb.cvt(kb.shr(bits, 32), "u32")
    lo2 = kb.shfl_sync(mode, lo, b, c)
    hi2 = kb.shfl_sync(mode, hi, b, c)
    joined = kb.or_(kb.cvt(lo2, "u64"), kb.shl(kb.cvt(hi2, "u64"), 32))
    return kb.bitcast(joined, v.type)


def warp_inclusive_scan(kb: KernelBuilder, op: str, v: Value, lane: Value, ident: object) -> Value:
    """Each lane gets ``op`` over lanes 0..lane of its warp (Kogge-Stone, shfl.up)."""
    acc = kb.mov(v)
    step = 1
    while step < 32:
        other = shfl(kb, "up", acc, step)
        other = kb.selp(other, ident, kb.setp("ge", lane, step), type_=v.type)
        kb.assign(acc, combine(kb, op, other, acc))
        step *= 2
    return acc


def warp_reduce(kb: KernelBuilder, op: str, v: Value) -> Value:
    """Every lane gets ``op`` over the whole warp (butterfly)."""
    acc = kb.mov(v)
    step = 16
    while step >= 1:
        kb.assign(acc, combine(kb, op, acc, shfl(kb, "bfly", acc, step)))
        step //= 2
    return acc


def block_reduce(kb: KernelBuilder, op: str, v: Value, scratch: SharedArray, warps: int,
                 warp: Value, lane: Value) -> Value:
    """Thread 0 (and every lane of warp 0) gets ``op`` over the CTA's values; ``scratch`` holds
    ``warps`` elements of v's type. Ends with a barrier."""
    size = v.ptype.bits // 8
    r = warp_reduce(kb, op, v)
    if warps == 1:
        return r
    with kb.if_(kb.setp("eq", lane, 0)):
        kb.st("shared", kb.addr(kb.shared_addr(scratch), warp, size), r)
    kb.bar_sync(0)
    acc = kb.ld("shared", v.type, kb.shared_addr(scratch))
    for w in range(1, warps):
        kb.assign(acc, combine(kb, op, acc, kb.ld("shared", v.type, kb.shared_addr(scratch), offset=w * size)))
    kb.bar_sync(0)
    return acc


def block_exclusive_scan(kb: KernelBuilder, op: str, v: Value, scratch: SharedArray, warps: int,
                         warp: Value, lane: Value, ident: object) -> tuple[Value, Value]:
    """(exclusive prefix of this thread's ``v`` over the CTA in thread order, CTA total).
    ``scratch`` holds ``warps + 1`` elements of v's type; ends with a barrier."""
    size = v.ptype.bits // 8
    incl = warp_inclusive_scan(kb, op, v, lane, ident)
    excl = shfl(kb, "up", incl, 1)
    excl = kb.selp(excl, ident, kb.setp("ge", lane, 1), type_=v.type)
    base = kb.shared_addr(scratch)
    with kb.if_(kb.setp("eq", lane, 31)):
        kb.st("shared", kb.addr(base, warp, size), incl)
    kb.bar_sync(0)
    tid = kb.tid()
    with kb.if_(kb.setp("eq", tid, 0)):
        run = kb.mov(ident, v.type)
        for w in range(warps):
            t = kb.ld("shared", v.type, base, offset=w * size)
            kb.st("shared", base, run, offset=w * size)
            kb.assign(run, combine(kb, op, run, t))
        kb.st("shared", base, run, offset=warps * size)
    kb.bar_sync(0)
    wpre = kb.ld("shared", v.type, kb.addr(base, warp, size))
    total = kb.ld("shared", v.type, base, offset=warps * size)
    kb.bar_sync(0)
    return combine(kb, op, wpre, excl), total


def launch_bounds(kb: KernelBuilder, threads: int) -> None:
    kb.maxntid(threads)
