"""Calls in kernels: casts, builtins, ``math``/numpy functions, device functions, intrinsics
(thread geometry, shared arrays, barriers, atomics, warp shuffles, votes and reductions)."""

from __future__ import annotations

import ast
import builtins
import math

import numpy as np

from . import intrinsics as I
from . import mathlib, ops
from . import types as T
from .lower import ArrayVal, Lower, _Static
from .ops import LoweringError, Val

_MATH_NAMES: dict[int, str] = {}
for _name in (*mathlib.UNARY, *mathlib.ROUNDING, *mathlib.PREDICATES, "fabs"):
    for _mod in (math, np):
        _f = getattr(_mod, _name, None)
        if _f is not None:
            _MATH_NAMES[id(_f)] = _name
_MATH_NAMES[id(np.absolute)] = "abs"
_MATH_NAMES[id(builtins.abs)] = "abs"
_UNSUPPORTED_MATH = {id(getattr(m, n)): n for n in mathlib.UNSUPPORTED for m in (math, np)
                     if hasattr(m, n)}
_MINMAX = {id(np.minimum): "min", id(np.maximum): "max", id(builtins.min): "min",
           id(builtins.max): "max", id(np.fmin): "min", id(np.fmax): "max"}
_BINARY_FUNCS = {id(math.copysign): "copysign", id(np.copysign): "copysign",
                 id(math.hypot): "hypot", id(np.hypot): "hypot", id(math.pow): "pow",
                 id(np.power): "pow"}
_PYTHON_FUNCS = (builtins.abs, builtins.min, builtins.max)
_ATOMIC_OPS = {"atomic.add": "add", "atomic.min": "min", "atomic.max": "max",
               "atomic.exch": "exch", "atomic.cas": "cas"}


def call(lw: Lower, node: ast.Call) -> object:
    from .kernel import DeviceFunction, Kernel

    target = lw.expr(node.func)
    if not isinstance(target, _Static):
        raise lw.error(node, "only functions, types and kernel intrinsics can be called")
    fn = target.obj
    if isinstance(fn, I.Intrinsic):
        return _intrinsic(lw, fn, node)
    if node.keywords:
        raise lw.error(node, f"keyword arguments are not supported in calls to {_name_of(fn)}")
    if isinstance(fn, DeviceFunction):
        args = [lw.expr(a) for a in node.args]
        return lw.inline(fn, args, node)
    if isinstance(fn, Kernel):
        raise lw.error(node, f"{fn.info.qualname} is a kernel; kernels cannot call kernels "
                             "(declare helpers with @oxicuda.device)")
    if fn is range:
        raise lw.error(node, "range() is only allowed as the iterable of a for loop")
    if fn is len:
        arr = lw.expr(_one(lw, node))
        if isinstance(arr, ArrayVal):
            return arr.shape[0]
        if isinstance(arr, tuple):
            return ops.const(len(arr))
        raise lw.error(node, "len() of a value that is not an array or tuple")
    key = id(fn)
    if (fn in _PYTHON_FUNCS or getattr(fn, "__module__", None) == "math") and node.args:
        args = [lw.expr(a) for a in node.args]
        if all(isinstance(a, Val) and a.weak and a.const for a in args):
            try:  # Python's own function of Python numbers: a Python (weak) result
                return ops.const(fn(*(a.v for a in args)))
            except (ValueError, OverflowError, ZeroDivisionError) as exc:
                raise lw.error(node, f"constant call: {exc}") from None
    if key in _MATH_NAMES:
        return mathlib.unary(lw, _MATH_NAMES[key], lw.scalar(_one(lw, node)))
    if key in _MINMAX:
        args = [lw.scalar(a) for a in node.args]
        if len(args) < 2:
            raise lw.error(node, f"{_name_of(fn)}() takes two or more scalars in kernels")
        out = args[0]
        for a in args[1:]:
            out = mathlib.minmax(lw, _MINMAX[key], out, a)
        return out
    if key in _BINARY_FUNCS:
        a, b = (lw.scalar(x) for x in _n(lw, node, 2))
        kind = _BINARY_FUNCS[key]
        if kind == "copysign":
            return mathlib.copysign(lw, a, b)
        if kind == "hypot":
            return mathlib.hypot(lw, a, b)
        if fn is math.pow:
            a, b = ops.cast(lw.kb, a, T.f64), ops.cast(lw.kb, b, T.f64)
        return ops.binary(lw, "**", a, b)
    if key in _UNSUPPORTED_MATH:
        raise lw.error(node, f"{_UNSUPPORTED_MATH[key]}() is not supported in kernels yet")
    if fn is np.where:
        c, a, b = (lw.scalar(x) for x in _n(lw, node, 3))
        return ops.select(lw, c, a, b)
    try:
        st = T.scalar_type(fn)
    except TypeError:
        st = None
    if st is not None and (isinstance(fn, (T.ScalarType, type))):
        return ops.cast(lw.kb, lw.scalar(_one(lw, node)), st)
    raise lw.error(node, f"{_name_of(fn)} cannot be called in a kernel")


def _name_of(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "name", None) or repr(fn)


def _one(lw: Lower, node: ast.Call) -> ast.expr:
    return _n(lw, node, 1)[0]


def _n(lw: Lower, node: ast.Call, n: int) -> list[ast.expr]:
    if len(node.args) != n:
        raise lw.error(node, f"{ast.unparse(node.func)}() takes {n} argument(s), {len(node.args)} given")
    return node.args


def _const_int(lw: Lower, node: ast.expr, what: str) -> int:
    v = lw.expr(node)
    if not (isinstance(v, Val) and v.const and v.t.kind in "iu"):
        raise lw.error(node, f"{what} must be a constant integer")
    return int(v.v)


def _intrinsic(lw: Lower, fn: I.Intrinsic, node: ast.Call) -> object:
    kb = lw.kb
    name = fn.name
    kw = {k.arg: k.value for k in node.keywords}
    if name in ("grid", "gridsize"):
        ndim = _const_int(lw, _one(lw, node), f"{name}(ndim)")
        if not 1 <= ndim <= 3:
            raise lw.error(node, f"{name}(ndim): ndim={ndim}; allowed 1, 2, 3")
        out = []
        for d in "xyz"[:ndim]:
            if name == "grid":
                v = kb.mad(kb.ctaid(d), kb.ntid(d), kb.cvt(kb.tid(d), "u64"), mode="wide")
            else:
                v = kb.mul(kb.ntid(d), kb.nctaid(d), mode="wide")
            out.append(Val(T.i64, kb.bitcast(v, "s64")))
        return out[0] if ndim == 1 else tuple(out)
    if name == "syncthreads":
        _n(lw, node, 0)
        kb.bar_sync(0)
        return None
    if name == "lane_id":
        return Val(T.i32, kb.bitcast(kb.laneid(), "s32"))
    if name == "fma":
        a, b, c = (lw.scalar(x) for x in _n(lw, node, 3))
        return _fma(lw, a, b, c)
    if name == "unroll":
        raise lw.error(node, "unroll(...) is only allowed as the iterable of a for loop")
    if name in ("shared.array", "local.array"):
        return _shared_array(lw, node, name, kw)
    if name in _ATOMIC_OPS:
        return _atomic(lw, node, _ATOMIC_OPS[name])
    if name.startswith("shfl"):
        return _shuffle(lw, node, name)
    if name in ("all_sync", "any_sync", "ballot_sync"):
        mask, p = _n(lw, node, 2)
        m = _mask(lw, mask)
        pv = ops.to_bool(lw, lw.scalar(p))
        pv = ops.materialize(kb, pv)
        mode = {"all_sync": "all", "any_sync": "any", "ballot_sync": "ballot"}[name]
        r = kb.vote_sync(mode, pv, m)
        return Val(T.bool_, r) if mode != "ballot" else Val(T.u32, r)
    if name.startswith("warp_reduce."):
        (x,) = _n(lw, node, 1)
        return _warp_reduce(lw, name.split(".")[1], lw.scalar(x))
    raise lw.error(node, f"intrinsic {name} is not supported in kernels")


def _fma(lw: Lower, a: Val, b: Val, c: Val) -> Val:
    kb = lw.kb
    (_ta, _tb), tab = ops.resolve(np.multiply, a, b)
    (_tx, _tc), to = ops.resolve(np.add, Val(tab, 0, False), c)
    st = to
    a, b, c = (ops.cast(kb, v, st) for v in (a, b, c))
    if a.const and b.const and c.const:
        return ops.const(st.dtype.type(a.v) * st.dtype.type(b.v) + st.dtype.type(c.v))
    ct = ops.compute_reg(st)
    x, y, z = (ops.operand(kb, v, st) for v in (a, b, c))
    if not any(isinstance(v, ops.Value) for v in (x, y, z)):
        x = kb.mov(x, ct)
    if st.kind == "f":
        return ops.finish(kb, kb.fma(x, y, z, type_=ct), st)
    if st.kind == "b":
        raise LoweringError("fma of bools")
    return ops.finish(kb, kb.mad(x, y, z, type_=ct), st)


def _dtype_arg(lw: Lower, node: ast.expr) -> T.ScalarType:
    v = lw.expr(node)
    obj = v.obj if isinstance(v, _Static) else None
    try:
        return T.scalar_type(obj)
    except TypeError:
        raise lw.error(node, "the dtype must be a kernel scalar type (f32, np.float32, ...)") from None


def _shared_array(lw: Lower, node: ast.Call, name: str, kw: dict) -> ArrayVal:
    kb = lw.kb
    args = list(node.args)
    shape_node = args[0] if args else kw.get("shape")
    dtype_node = args[1] if len(args) > 1 else kw.get("dtype")
    if shape_node is None or dtype_node is None:
        raise lw.error(node, f"{name}(shape, dtype)")
    st = _dtype_arg(lw, dtype_node)
    shape_v = lw.expr(shape_node)
    shape_t = shape_v if isinstance(shape_v, tuple) else (shape_v,)
    dims = []
    for v in shape_t:
        if not (isinstance(v, Val) and v.const and v.t.kind in "iu"):
            raise lw.error(node, f"{name}: the shape must be constant integers")
        dims.append(int(v.v))
    decl = f"b{st.bits}" if st.kind != "b" else "u8"
    if name == "local.array":
        return _local_array(lw, node, st, decl, dims)
    lw.shared_count += 1
    if dims == [0]:
        if lw.dynamic_shared is None:
            lw.dynamic_shared = kb.dynamic_shared("jit_dyn_smem", lw.dynamic_shared_max or 48 * 1024)
        base = kb.shared_addr(lw.dynamic_shared)
        size = kb.bitcast(kb._special("%dynamic_smem_size"), "s32")
        n = ops.binary(lw, "//", Val(T.i32, size), ops.const(st.itemsize))
        n = ops.cast(kb, n, T.i64)
        return ArrayVal(T.ArrayType(st, 1, "C"), "shared", base, (n,), (ops.const(1),))
    if any(d <= 0 for d in dims):
        raise lw.error(node, f"{name}: shape {tuple(dims)} must be positive (0 alone: dynamic)")
    count = int(np.prod(dims))
    arr = kb.shared(f"jit_smem{lw.shared_count}", decl, count, align=max(16, st.itemsize))
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return ArrayVal(T.ArrayType(st, len(dims), "C"), "shared", arr,
                    tuple(ops.const(d) for d in dims), tuple(ops.const(s) for s in reversed(strides)))


def _local_array(lw: Lower, node: ast.Call, st: T.ScalarType, decl: str, dims: list) -> ArrayVal:
    """A per-thread ``.local`` array (small: at most 16 KB per thread)."""
    from oxicuda.ptx import ir

    kb = lw.kb
    if any(d <= 0 for d in dims):
        raise lw.error(node, f"local.array: shape {tuple(dims)} must be positive")
    count = int(np.prod(dims))
    if count * st.itemsize > 16 * 1024:
        raise lw.error(node, f"local.array of {count * st.itemsize} bytes; at most 16384 per thread")
    lw.shared_count += 1
    name = f"jit_local{lw.shared_count}"
    kb._body.insert(0, ir.VarDecl("local", decl, name, align=max(8, st.itemsize), size=count))
    base = kb.reg("u64")
    kb.instr("mov", ("u64",), (base.reg, ir.Sym(name)))
    kb._written.add(base.name)
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return ArrayVal(T.ArrayType(st, len(dims), "C"), "local", base,
                    tuple(ops.const(d) for d in dims), tuple(ops.const(s) for s in reversed(strides)))


def _atomic(lw: Lower, node: ast.Call, op: str) -> Val:
    kb = lw.kb
    n = 4 if op == "cas" else 3
    args = _n(lw, node, n)
    arr = lw.expr(args[0])
    if not isinstance(arr, ArrayVal):
        raise lw.error(node, f"atomic.{op}: the first argument must be an array")
    if arr.t.access == "in":
        raise lw.error(node, f"atomic.{op} on an In[...] (read-only) array")
    idx = lw.indices(args[1])
    st = arr.t.dtype
    allowed = {"add": ("i32", "u32", "u64", "i64", "f32", "f64"),
               "min": ("i32", "u32", "i64", "u64"), "max": ("i32", "u32", "i64", "u64"),
               "exch": ("i32", "u32", "i64", "u64", "f32", "f64"),
               "cas": ("i32", "u32", "i64", "u64", "f32", "f64")}[op]
    if st.name not in allowed:
        raise lw.error(node, f"atomic.{op} on {st.name} elements; allowed {', '.join(allowed)}")
    _, base, offset = lw.element_address(arr, idx)
    value = ops.cast(kb, lw.scalar(args[-1]), st)
    ptype = {"i64": "u64" if op == "add" else "s64"}.get(st.name, st.reg)
    vv = ops.operand(kb, value, st)
    if op == "cas":
        cmp = ops.operand(kb, ops.cast(kb, lw.scalar(args[2]), st), st)
        old = kb.atom(arr.space, "cas", ptype, base, vv, compare=cmp, offset=offset)
    else:
        if isinstance(vv, ops.Value) and ptype == "u64" and vv.type == "s64":
            vv = kb.bitcast(vv, "u64")
        old = kb.atom(arr.space, op, ptype, base, vv, offset=offset)
    if old.type != st.reg:
        old = kb.bitcast(old, st.reg)
    return Val(st, old)


def _mask(lw: Lower, node: ast.expr) -> object:
    m = lw.scalar(node)
    if m.const:
        return int(m.v) & 0xFFFFFFFF
    return ops.materialize(lw.kb, ops.cast(lw.kb, m, T.u32))


def _shuffle(lw: Lower, node: ast.Call, name: str) -> Val:
    kb = lw.kb
    mask_n, val_n, lane_n = _n(lw, node, 3)
    mode = {"shfl_sync": "idx", "shfl_down_sync": "down", "shfl_up_sync": "up",
            "shfl_xor_sync": "bfly"}[name]
    m = _mask(lw, mask_n)
    v = lw.scalar(val_n)
    lane = lw.scalar(lane_n)
    lane_v = int(lane.v) if lane.const else ops.materialize(kb, ops.cast(kb, lane, T.u32))
    return _shfl(kb, mode, v, lane_v, m)


def _shfl(kb, mode: str, v: Val, lane: object, m: object) -> Val:
    st = v.t
    if st.kind == "b":
        r = kb.shfl_sync(mode, kb.selp(1, 0, v.v, type_="u32") if not v.const else kb.mov(int(v.v), "u32"), lane, mask=m)
        return Val(T.bool_, kb.setp("ne", r, 0, type_="u32"))
    x = ops.materialize(kb, v)
    if st.bits == 64:
        b = kb.bitcast(x, "b64") if x.type != "b64" else x
        lo = kb.cvt(kb.bitcast(b, "u64"), "u32")
        hi = kb.cvt(kb.shr(kb.bitcast(b, "u64"), 32), "u32")
        lo, hi = kb.shfl_sync(mode, lo, lane, mask=m), kb.shfl_sync(mode, hi, lane, mask=m)
        w = kb.or_(kb.shl(kb.cvt(hi, "u64"), 32), kb.cvt(lo, "u64"))
        return Val(st, kb.bitcast(w, st.reg))
    if st.bits == 16 and st.kind == "f":
        r = kb.shfl_sync(mode, kb.cvt(kb.bitcast(x, "b16"), "u32", type_="u16")
                         if False else kb.cvt(kb.bitcast(x, "u16"), "u32"), lane, mask=m)
        return Val(st, kb.bitcast(kb.cvt(r, "u16"), st.reg))
    return Val(st, kb.shfl_sync(mode, x, lane, mask=m))


def _warp_reduce(lw: Lower, op: str, v: Val) -> Val:
    """A butterfly over the full warp: every lane gets the reduction of all 32."""
    kb = lw.kb
    st = v.t
    acc = ops.materialize(kb, v) if st.kind != "b" else None
    if acc is None:
        raise lw.error(lw._node, f"warp_reduce.{op} of bools; use any_sync/all_sync")
    cur = Val(st, acc)
    for d in (16, 8, 4, 2, 1):
        other = _shfl(kb, "bfly", cur, d, 0xFFFFFFFF)
        if op == "add":
            cur = ops.binary(lw, "+", cur, other)
        else:
            cur = mathlib.minmax(lw, op, cur, other)
    return cur
