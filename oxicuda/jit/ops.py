"""Scalar semantics of the kernel language: typed values, numpy's promotion, casts, operators.

A ``Val`` is a typed scalar: a register (``Value``) or a compile-time constant. Python literals
are *weak* (NEP 50): ``x + 1`` keeps the type of ``x``; two constants fold on the host.

Promotion is numpy's own: the result type of every operator and function is what
``ufunc.resolve_dtypes`` says for the operand dtypes (weak literals passed as ``int``/``float``),
so ``i32 + f32 -> f64``, ``i8 + 1 -> i8``, ``u64 + i64 -> f64``, ``i32 / i32 -> f64``,
``f16 + f32 -> f32``; bf16 follows ml_dtypes (bf16 with f32 -> f32). Integer arithmetic wraps
(two's complement) at the width of its type; 8- and 16-bit values are computed in 32 bits and
wrapped after every operation; f16/bf16 are computed in f32 and rounded after every operation
(for + - * / and sqrt that equals correctly rounded 16-bit arithmetic).

Division: ``/`` is true division (IEEE ``div.rn`` in precise mode). ``//`` and ``%`` on integers
follow Python and numpy (floor division; the remainder has the divisor's sign); an integer
division by zero gives 0 as numpy does, and is reported as a KernelError when checks are on.
``//`` and ``%`` on floats compute ``floor(a / b)`` and ``a - floor(a / b) * b``: numpy computes
them from ``fmod`` and can differ by one ulp (or by one in the quotient) where ``a / b`` rounds
across an integer. Comparisons follow IEEE (every comparison with NaN is false except ``!=``);
signed/unsigned 64-bit comparisons compare the mathematical values, as numpy does.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from oxicuda.memory.dtypes import BFLOAT16
from oxicuda.ptx.builder import KernelBuilder, Value

from . import types as T


class LoweringError(Exception):
    """A construct the compiler rejects; the compiler adds the Python file and line."""


@dataclass
class Val:
    """A typed scalar: ``v`` is a builder register or a Python constant; ``weak`` marks an
    untyped Python literal (its ``t`` is the default i64/f64/bool it becomes when stored)."""

    t: T.ScalarType
    v: object
    weak: bool = False

    @property
    def const(self) -> bool:
        return not isinstance(self.v, Value)


def const(value: object) -> Val:
    """A Python literal as a weak constant (a numpy scalar as a typed one)."""
    if isinstance(value, np.generic):  # before float: np.float64 subclasses float
        st = T.scalar_type(value.dtype)
        return Val(st, _py(value, st), False)
    if isinstance(value, bool):
        return Val(T.bool_, value, True)
    if isinstance(value, int):
        return Val(T.i64, value, True)
    if isinstance(value, float):
        return Val(T.f64, value, True)
    if isinstance(value, np.generic):
        st = T.scalar_type(value.dtype)
        return Val(st, _py(value, st), False)
    raise LoweringError(f"constant {value!r} of type {type(value).__name__} is not a kernel scalar")


def _py(value: object, st: T.ScalarType) -> object:
    """A numpy scalar of type ``st`` as the Python number the builder takes."""
    if st.kind == "b":
        return bool(value)
    if st.kind == "f":
        return float(value)
    return int(value)


def _np(x: Val) -> object:
    return x.v if x.weak else x.t.dtype.type(x.v)


# -- promotion ------------------------------------------------------------------------------------
PY_ZERO = {"b": False, "i": 0, "u": 0, "f": 0.0}
_PY_TYPE = {"b": bool, "i": int, "u": int, "f": float}


def _operand_dtype(x: Val) -> object:
    if x.weak:
        return _PY_TYPE[x.t.kind]
    return x.t.dtype


def _bf16_as_f32(d: object) -> object:
    return np.dtype(np.float32) if d is not int and d is not float and d is not bool and d == BFLOAT16 else d


def resolve(ufunc: np.ufunc, *xs: Val) -> tuple[tuple[T.ScalarType, ...], T.ScalarType]:
    """(input types, output type) numpy picks for ``ufunc`` on these operands."""
    if all(x.weak for x in xs):  # Python values only: their default types (int64, float64)
        dts = tuple(x.t.dtype for x in xs)
    else:
        dts = tuple(_operand_dtype(x) for x in xs)
    all_bf16 = all((not x.weak and x.t is T.bf16) or x.weak for x in xs) and any(
        not x.weak and x.t is T.bf16 for x in xs)
    try:
        res = ufunc.resolve_dtypes((*(_bf16_as_f32(d) for d in dts), None))
    except Exception as exc:  # noqa: BLE001 - numpy's no-loop error is a TypeError subclass on some versions only
        names = ", ".join(x.t.name + (" literal" if x.weak else "") for x in xs)
        raise LoweringError(f"numpy has no {ufunc.__name__} for ({names}): {exc}") from None
    ins = tuple(T.scalar_type(d) for d in res[:-1])
    out = T.scalar_type(res[-1])
    if all_bf16:
        ins = tuple(T.bf16 if t is T.f32 else t for t in ins)
        out = T.bf16 if out is T.f32 else out
    return ins, out


def default_type(x: Val) -> T.ScalarType:
    return x.t


# -- casts ----------------------------------------------------------------------------------------
def materialize(kb: KernelBuilder, x: Val) -> Value:
    """``x`` in a register of its type's register type."""
    if not x.const:
        return x.v
    if x.t.kind == "b":
        return kb.setp("ne", 1 if x.v else 0, 0, type_="s32")
    return kb.mov(_py(x.t.dtype.type(x.v) if not x.weak else x.v, x.t), x.t.reg)


def _wrap(kb: KernelBuilder, v: Value, st: T.ScalarType) -> Value:
    """An 8/16-bit value held in 32 bits, wrapped to its width (sign- or zero-extended)."""
    if st.bits >= 32 or st.kind not in "iu":
        return v
    if st.kind == "u":
        return kb.and_(v, (1 << st.bits) - 1)
    sh = 32 - st.bits
    return kb.shr(kb.shl(v, sh), sh)


def cast(kb: KernelBuilder, x: Val, to: T.ScalarType) -> Val:
    """``x`` converted to ``to`` with numpy's ``astype`` rules (floats to ints truncate; NaN to
    bool is True; ints wrap)."""
    if x.t is to and (not x.weak or not x.const):
        return x if not x.weak else Val(to, x.v)
    if x.const:
        if x.weak and to.kind in "iu" and isinstance(x.v, int) and not isinstance(x.v, bool):
            info = np.iinfo(to.dtype)
            if not info.min <= x.v <= info.max:  # NEP 50: numpy raises OverflowError here
                raise LoweringError(f"Python integer {x.v} out of bounds for {to.dtype}")
        with np.errstate(all="ignore"):
            if to.kind == "b":
                return Val(to, bool(x.v), False)
            if to.kind in "iu" and isinstance(x.v, float):
                if x.v != x.v or x.v in (float("inf"), float("-inf")):
                    v = np.array(x.v).astype(to.dtype)[()]
                else:
                    v = np.array(int(x.v)).astype(np.int64 if int(x.v) < 2**63 else np.uint64)
                    v = v.astype(to.dtype)[()]
            else:
                v = np.array(x.v if not isinstance(x.v, bool) else int(x.v)).astype(to.dtype)[()]
        return Val(to, _py(v, to), False)
    src, v = x.t, x.v
    if to.kind == "b":
        if src.kind == "f":
            vv = _to_f32(kb, x) if src.bits == 16 else v
            return Val(to, kb.setp("neu", vv, 0.0))
        return Val(to, kb.setp("ne", v, 0))
    if src.kind == "b":
        if to.kind == "f":
            ct = "f32" if to.bits <= 32 else "f64"
            r = kb.selp(1.0, 0.0, v, type_=ct)
            return Val(to, r if to.reg == ct else kb.cvt(r, to.reg))
        return Val(to, kb.selp(1, 0, v, type_=to.reg))
    if src.kind in "iu" and to.kind in "iu":
        if src.reg == to.reg:
            r = v
        elif _bits(src.reg) == _bits(to.reg):
            r = kb.bitcast(v, to.reg)
        else:
            r = kb.cvt(v, to.reg)
        return Val(to, _wrap(kb, r, to))
    if src.kind in "iu" and to.kind == "f":
        if to.bits == 16:
            return Val(to, kb.cvt(kb.cvt(v, "f32"), to.reg))
        return Val(to, kb.cvt(v, to.reg))
    if src.kind == "f" and to.kind in "iu":
        vv = kb.cvt(v, "f32") if src.bits == 16 else v
        if to.bits == 64:
            if to.kind == "u":
                signed = kb.cvt(vv, "s64")
                big = kb.bitcast(kb.cvt(vv, "u64"), "s64")
                r = kb.selp(big, signed, kb.setp("ge", vv, 2.0**63), type_="s64")
                return Val(to, kb.bitcast(r, "u64"))
            return Val(to, kb.cvt(vv, "s64"))
        if to is T.u32:
            return Val(to, kb.cvt(kb.cvt(vv, "s64"), "u32"))
        r = kb.cvt(vv, "s32")
        if to.kind == "u":
            r = kb.bitcast(r, "u32")
        return Val(to, _wrap(kb, r, to))
    # float -> float
    if src.bits == 16 and to.bits == 16:
        return Val(to, kb.cvt(kb.cvt(v, "f32"), to.reg))
    return Val(to, kb.cvt(v, to.reg))


def _bits(reg: str) -> int:
    return int(reg[1:])


def _to_f32(kb: KernelBuilder, x: Val) -> Value:
    return kb.cvt(x.v, "f32")


def compute_reg(st: T.ScalarType) -> str:
    """The register type operations on ``st`` run in (f32 for 16-bit floats)."""
    return "f32" if st.kind == "f" and st.bits == 16 else st.reg


def operand(kb: KernelBuilder, x: Val, st: T.ScalarType) -> object:
    """``x`` (already of type ``st``) as an operand of ``st``'s compute type: a register or an
    immediate."""
    if x.const:
        if st.kind == "f" and st.bits == 16:
            return float(st.dtype.type(x.v))
        return _py(st.dtype.type(x.v), st) if st.kind != "b" else materialize(kb, x)
    if st.kind == "f" and st.bits == 16:
        return kb.cvt(x.v, "f32")
    return x.v


def finish(kb: KernelBuilder, r: Value, st: T.ScalarType) -> Val:
    """A result computed in ``st``'s compute type, rounded or wrapped back to ``st``."""
    if st.kind == "f" and st.bits == 16:
        return Val(st, kb.cvt(r, st.reg))
    return Val(st, _wrap(kb, r, st))


# -- operators -----------------------------------------------------------------------------------
_UFUNCS = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
    "%": np.remainder, "**": np.power, "&": np.bitwise_and, "|": np.bitwise_or,
    "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift,
}
_PYOPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}


def fold(op: str, a: Val, b: Val) -> Val:
    """Two constants: Python's operator on two weak literals, numpy's otherwise."""
    if a.weak and b.weak:
        try:
            return const(_PYOPS[op](a.v, b.v))
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            raise LoweringError(f"constant expression {a.v!r} {op} {b.v!r}: {exc}") from None
    with np.errstate(all="ignore"):
        r = _UFUNCS[op](_np(a), _np(b))
    return const(np.asarray(r)[()].astype(r.dtype)) if isinstance(r, np.generic) else const(r)


def binary(ctx, op: str, a: Val, b: Val) -> Val:
    """``a <op> b`` for the arithmetic and bitwise operators."""
    kb = ctx.kb
    if a.const and b.const:
        return fold(op, a, b)
    (ta, tb), out = resolve(_UFUNCS[op], a, b)
    if op in ("<<", ">>"):
        a = cast(kb, a, ta)
        b = cast(kb, b, tb)
        return _shift(kb, op, a, b, out)
    if op == "**":
        return power(ctx, a, b, ta, tb, out)
    weak = a.weak and b.weak
    a, b = cast(kb, a, ta), cast(kb, b, tb)
    ct = compute_reg(ta)
    if ta.kind == "b":
        # numpy's bool loops: add is a logical or, multiply a logical and
        fn = {"&": kb.and_, "|": kb.or_, "^": kb.xor, "+": kb.or_, "*": kb.and_}.get(op)
        if fn is None:
            raise LoweringError(f"operator {op} on bool values")
        return Val(T.bool_, fn(materialize(kb, a), materialize(kb, b)))
    x, y = operand(kb, a, ta), operand(kb, b, tb)
    if op == "+":
        r = kb.add(x, y, type_=ct)
    elif op == "-":
        r = kb.sub(x, y, type_=ct)
    elif op == "*":
        r = kb.mul(x, y, type_=ct)
    elif op == "/":
        r = kb.div(x, y, type_=ct)
    elif op in ("&", "|", "^"):
        r = {"&": kb.and_, "|": kb.or_, "^": kb.xor}[op](x, y, type_=ct)
    elif op in ("//", "%"):
        if ta.kind == "f":
            q = kb.floor(kb.div(x, y, type_=ct))
            r = q if op == "//" else kb.sub(x, kb.mul(q, y, type_=ct), type_=ct)
        else:
            r = _int_divmod(ctx, op, x, y, ta)
    else:
        raise LoweringError(f"operator {op}")
    res = finish(kb, r, out)
    res.weak = weak
    return res


def _int_divmod(ctx, op: str, x: object, y: object, st: T.ScalarType) -> Value:
    """Floor division / remainder with numpy's semantics (0 for a zero divisor)."""
    kb = ctx.kb
    ct = st.reg
    yv = y if isinstance(y, Value) else kb.mov(y, ct)
    zero = kb.setp("eq", yv, 0, type_=ct)
    ctx.check(zero, "integer division by zero", None, None)
    safe = kb.selp(1, yv, zero, type_=ct)
    q = kb.div(x, safe, type_=ct)
    if st.kind == "u":
        r = q if op == "//" else kb.sub(x, kb.mul(q, safe, type_=ct), type_=ct)
        return kb.selp(0, r, zero, type_=ct)
    rem = kb.sub(x, kb.mul(q, safe, type_=ct), type_=ct)
    # the truncated remainder has x's sign; floor semantics move it to y's sign
    nz = kb.setp("ne", rem, 0, type_=ct)
    diff = kb.setp("lt", kb.xor(rem, safe, type_=ct), 0, type_=ct)
    adjust = kb.and_(nz, diff)
    if op == "//":
        r = kb.sub(q, kb.selp(1, 0, adjust, type_=ct), type_=ct)
    else:
        r = kb.add(rem, kb.selp(safe, 0, adjust, type_=ct), type_=ct)
    return kb.selp(0, r, zero, type_=ct)


def _shift(kb: KernelBuilder, op: str, a: Val, b: Val, out: T.ScalarType) -> Val:
    ct = a.t.reg
    x = operand(kb, a, a.t)
    if b.const:
        n = max(0, min(int(b.v), 64))
    else:
        bv = b.v
        if b.t.bits == 64:
            bv = kb.cvt(kb.min(kb.max(bv, 0), 64) if b.t.kind == "i" else kb.min(bv, 64), "u32")
        elif b.t.kind == "i":
            bv = kb.bitcast(kb.max(bv, 0), "u32")
        n = bv
    if isinstance(x, int):
        x = kb.mov(x, ct)
    r = kb.shl(x, n, type_=ct) if op == "<<" else kb.shr(x, n, type_=ct)
    return finish(kb, r, out)


def power(ctx, a: Val, b: Val, ta: T.ScalarType, tb: T.ScalarType, out: T.ScalarType) -> Val:
    """``a ** b``: small constant integer exponents multiply; integer powers square-and-multiply;
    float powers use exp(b log|a|) with the sign and zero cases of C's pow."""
    kb = ctx.kb
    a, b = cast(kb, a, ta), cast(kb, b, tb)
    if b.const and float(b.v) == int(b.v) and 0 <= int(b.v) <= 8:
        n = int(b.v)
        if n == 0:
            return cast(kb, const(1), out)
        x = operand(kb, a, ta)
        x = x if isinstance(x, Value) else kb.mov(x, compute_reg(ta))
        r = x
        for _ in range(n - 1):
            r = kb.mul(r, x, type_=compute_reg(ta))
        return finish(kb, r, out)
    if ta.kind in "iu":
        ct = ta.reg
        base = kb.mov(operand(kb, a, ta), ct)
        e = kb.mov(operand(kb, b, tb), ct)
        acc = kb.mov(1, ct)
        top = kb.label(ctx.fresh("pow"))
        done = kb.setp("le", e, 0, type_=ct)
        end = "$L_" + ctx.fresh("powend")
        kb.bra(end, done)
        odd = kb.setp("ne", kb.and_(e, 1, type_=ct), 0, type_=ct)
        kb.assign(acc, kb.selp(kb.mul(acc, base, type_=ct), acc, odd, type_=ct))
        kb.assign(base, kb.mul(base, base, type_=ct))
        kb.assign(e, kb.shr(e, 1, type_=ct))
        kb.bra(top)
        kb.label(end)
        return finish(kb, acc, out)
    from . import mathlib

    return mathlib.pow_(ctx, a, b, out)


_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_CMP_PY = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}
_CMP_UFUNC = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
              ">": np.greater, ">=": np.greater_equal}
_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def compare(ctx, op: str, a: Val, b: Val) -> Val:
    """``a <op> b`` as a bool."""
    kb = ctx.kb
    if a.const and b.const:
        with np.errstate(all="ignore"):
            return Val(T.bool_, bool(_CMP_PY[op](_np(a), _np(b))))
    (ta, tb), _ = resolve(_CMP_UFUNC[op], a, b)
    if ta is not tb:  # signed vs u64: compare the mathematical values
        s, u, cmp = (a, b, _CMP[op]) if ta.kind == "i" else (b, a, _SWAP[_CMP[op]])
        sv = materialize(kb, cast(kb, s, T.i64))
        uv = materialize(kb, cast(kb, u, T.u64))
        neg = kb.setp("lt", sv, 0)
        as_u = kb.setp(cmp, kb.bitcast(sv, "u64"), uv)
        # s < 0: s is below every u64 value
        below = {"lt": True, "le": True, "gt": False, "ge": False, "eq": False, "ne": True}[cmp]
        fixed = kb.setp("ne", 1 if below else 0, 0, type_="s32")
        return Val(T.bool_, kb.or_(kb.and_(neg, fixed), kb.and_(kb.not_(neg), as_u)))
    st = ta
    if st.kind == "b":
        st = T.i32
    a, b = cast(kb, a, st), cast(kb, b, st)
    ct = compute_reg(st)
    x, y = operand(kb, a, st), operand(kb, b, st)
    cmp = _CMP[op]
    if st.kind == "f" and cmp == "ne":
        cmp = "neu"
    if not isinstance(x, Value):
        x, y, cmp = y, x, _SWAP.get(cmp, cmp)
    return Val(T.bool_, kb.setp(cmp, x, y, type_=ct))


def to_bool(ctx, x: Val) -> Val:
    """Python truthiness of a scalar (numpy's bool cast)."""
    return cast(ctx.kb, x, T.bool_)


def negate(ctx, x: Val) -> Val:
    kb = ctx.kb
    if x.const:
        return const(-x.v) if x.weak else const(np.negative(_np(x)))
    if x.t.kind == "b":
        raise LoweringError("unary - of a bool (numpy does not allow it; use `not`)")
    if x.t.kind == "u":
        return finish(kb, kb.sub(0, x.v, type_=x.t.reg), x.t)
    return finish(kb, kb.neg(operand(kb, x, x.t), type_=compute_reg(x.t)), x.t)


def invert(ctx, x: Val) -> Val:
    kb = ctx.kb
    if x.const:
        return const(~x.v) if x.weak else const(np.invert(_np(x)))
    if x.t.kind == "f":
        raise LoweringError(f"operator ~ on a {x.t.name} value")
    return finish(kb, kb.not_(x.v), x.t) if x.t.kind != "b" else Val(T.bool_, kb.not_(x.v))


def logical_not(ctx, x: Val) -> Val:
    b = to_bool(ctx, x)
    if b.const:
        return Val(T.bool_, not b.v)
    return Val(T.bool_, ctx.kb.not_(b.v))


def select(ctx, cond: Val, a: Val, b: Val) -> Val:
    """``a if cond else b`` for two already evaluated values (both sides computed)."""
    kb = ctx.kb
    _, st = resolve(np.add, a, b) if not (a.t.kind == b.t.kind == "b") else ((), T.bool_)
    if a.weak and b.weak and type(a.v) is type(b.v):
        st = a.t
    a, b = cast(kb, a, st), cast(kb, b, st)
    c = cast(kb, cond, T.bool_)
    if c.const:
        return a if c.v else b
    if st.kind == "b":
        av, bv = materialize(kb, a), materialize(kb, b)
        return Val(st, kb.or_(kb.and_(c.v, av), kb.and_(kb.not_(c.v), bv)))
    av = a.v if not a.const else operand(kb, a, st)
    bv = b.v if not b.const else operand(kb, b, st)
    if st.kind == "f" and st.bits == 16:
        av, bv = materialize(kb, a), materialize(kb, b)
    return Val(st, kb.selp(av, bv, c.v, type_=st.reg))
