"""``math.*`` and numpy functions in kernels: typed by numpy's ufunc rules, computed in PTX.

Precise mode (the default): f32 functions are computed in f64 and rounded once (so they are
correctly rounded but for rare ties), f64 functions by range reduction and polynomials accurate to
a few ulp (sin/cos/tan reduce by a two-part pi, so their absolute error grows like |x| * 1e-16);
f16/bf16 go through f32. ``math="fast"`` uses the approximate f32 instructions (``ex2.approx``,
``lg2.approx``, ``sin.approx``, ``cos.approx``, ``tanh.approx``, ``sqrt.approx``, ``div.full``).
``math.floor/ceil/trunc`` return floats (numpy's ``floor``), and domain errors give NaN, as in
numpy (never Python's ValueError).
"""

from __future__ import annotations

import math

import numpy as np

from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.rand.transforms_ptx import exp_f64 as _exp_normal
from oxicuda.rand.transforms_ptx import log_f64 as _log_normal
from oxicuda.rand.transforms_ptx import sincospi_f64

from . import types as T
from .ops import LoweringError, Val, cast, compute_reg, const, finish, operand, resolve

INF = float("inf")
NAN = float("nan")
LN2 = 0.6931471805599453
LOG2E = 1.4426950408889634
LOG10E = 0.4342944819032518
INV_PI = 0.3183098861837907
PI_HI = 3.141592653589793116
PI_LO = 1.2246467991473532e-16
_EXPM1_SERIES = tuple(1.0 / math.factorial(k) for k in range(1, 20))


# -- f64 building blocks (every function takes and returns f64 registers) ----------------------
def _horner(kb: KernelBuilder, x: Value, coefficients: tuple[float, ...]) -> Value:
    acc = kb.mov(float(coefficients[-1]), "f64")
    for c in reversed(coefficients[:-1]):
        acc = kb.fma(acc, x, float(c))
    return acc


def _isnan(kb: KernelBuilder, x: Value) -> Value:
    return kb.setp("nan", x, x)


def exp_d(kb: KernelBuilder, x: Value) -> Value:
    r = _exp_normal(kb, x)
    return kb.selp(x, r, _isnan(kb, x))


def log_d(kb: KernelBuilder, x: Value) -> Value:
    tiny = kb.setp("lt", x, 2.2250738585072014e-308)
    xs = kb.selp(kb.mul(x, 2.0**54), x, tiny)
    r = _log_normal(kb, xs)
    r = kb.sub(r, kb.selp(54 * LN2, 0.0, tiny, type_="f64"))
    r = kb.selp(-INF, r, kb.setp("eq", x, 0.0))
    r = kb.selp(x, r, kb.setp("gtu", x, 1.7976931348623157e308))  # +inf and NaN pass through
    return kb.selp(NAN, r, kb.setp("lt", x, 0.0))


def expm1_d(kb: KernelBuilder, x: Value) -> Value:
    small = kb.mul(_horner(kb, x, _EXPM1_SERIES), x)
    big = kb.sub(exp_d(kb, x), 1.0)
    return kb.selp(small, big, kb.setp("lt", kb.abs(x), 0.5))


def log1p_d(kb: KernelBuilder, x: Value) -> Value:
    u = kb.add(x, 1.0)
    um1 = kb.sub(u, 1.0)
    safe = kb.selp(1.0, um1, kb.setp("eq", um1, 0.0), type_="f64")
    r = kb.div(kb.mul(log_d(kb, u), x), safe)
    r = kb.selp(x, r, kb.setp("eq", um1, 0.0))
    r = kb.selp(log_d(kb, u), r, kb.setp("eq", u, 0.0))
    return kb.selp(x, r, kb.setp("gtu", x, 1.7976931348623157e308))


def sincos_d(kb: KernelBuilder, x: Value) -> tuple[Value, Value]:
    vh = kb.mul(x, INV_PI)
    res = kb.fma(vh, -PI_HI, x)
    res = kb.fma(vh, -PI_LO, res)
    v = kb.fma(res, INV_PI, vh)
    finite = kb.setp("lt", kb.abs(x), INF)
    v = kb.selp(v, 0.0, finite, type_="f64")
    s, c = sincospi_f64(kb, v)
    s = kb.selp(s, NAN, finite, type_="f64")
    s = kb.selp(x, s, kb.setp("eq", x, 0.0))  # keeps the sign of zero
    c = kb.selp(c, NAN, finite, type_="f64")
    return s, c


def tanh_d(kb: KernelBuilder, x: Value) -> Value:
    ax = kb.abs(x)
    t = expm1_d(kb, kb.add(ax, ax))
    r = kb.div(t, kb.add(t, 2.0))
    r = kb.selp(1.0, r, kb.setp("gt", ax, 22.0), type_="f64")
    signed = kb.bitcast(kb.or_(kb.bitcast(r, "b64"), kb.and_(kb.bitcast(x, "b64"), 1 << 63)), "f64")
    return kb.selp(x, signed, _isnan(kb, x))


def sinh_d(kb: KernelBuilder, x: Value) -> Value:
    ax = kb.abs(x)
    e = expm1_d(kb, ax)
    r = kb.mul(kb.add(e, kb.div(e, kb.add(e, 1.0))), 0.5)
    r = kb.selp(INF, r, kb.setp("gt", ax, 710.0), type_="f64")
    return kb.bitcast(kb.or_(kb.bitcast(r, "b64"), kb.and_(kb.bitcast(x, "b64"), 1 << 63)), "f64")


def cosh_d(kb: KernelBuilder, x: Value) -> Value:
    e = exp_d(kb, kb.abs(x))
    r = kb.mul(kb.add(e, kb.div(1.0, e, type_="f64")), 0.5)
    return kb.selp(INF, r, kb.setp("gt", kb.abs(x), 710.0), type_="f64")


def _sin_d(kb, x):
    return sincos_d(kb, x)[0]


def _cos_d(kb, x):
    return sincos_d(kb, x)[1]


def _tan_d(kb, x):
    s, c = sincos_d(kb, x)
    return kb.div(s, c)


def _exp2_d(kb, x):
    return exp_d(kb, kb.mul(x, LN2))


def _log2_d(kb, x):
    return kb.mul(log_d(kb, x), LOG2E)


def _log10_d(kb, x):
    return kb.mul(log_d(kb, x), LOG10E)


def _sqrt_any(kb, x):
    return kb.sqrt(x)


# name -> (numpy ufunc for typing, f64 implementation, fast f32 form or None)
def _fast_exp(kb, x):
    return kb.ex2(kb.mul(x, LOG2E))


def _fast_log(kb, x):
    return kb.mul(kb.lg2(x), LN2)


def _fast_tanh(kb, x):
    if kb.sm < 75:
        return None
    d = kb.reg("f32")
    kb.instr("tanh", ("approx", "f32"), (d.reg, x.reg))
    kb._written.add(d.name)
    return d


UNARY = {
    "sqrt": (np.sqrt, None, None),
    "exp": (np.exp, exp_d, _fast_exp),
    "log": (np.log, log_d, _fast_log),
    "exp2": (np.exp2, _exp2_d, lambda kb, x: kb.ex2(x)),
    "log2": (np.log2, _log2_d, lambda kb, x: kb.lg2(x)),
    "log10": (np.log10, _log10_d, None),
    "expm1": (np.expm1, expm1_d, None),
    "log1p": (np.log1p, log1p_d, None),
    "sin": (np.sin, _sin_d, lambda kb, x: kb.sin(x)),
    "cos": (np.cos, _cos_d, lambda kb, x: kb.cos(x)),
    "tan": (np.tan, _tan_d, None),
    "tanh": (np.tanh, tanh_d, _fast_tanh),
    "sinh": (np.sinh, sinh_d, None),
    "cosh": (np.cosh, cosh_d, None),
}
ROUNDING = {"floor": (np.floor, "rmi"), "ceil": (np.ceil, "rpi"), "trunc": (np.trunc, "rzi"),
            "rint": (np.rint, "rni")}
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
UNSUPPORTED = ("atan", "asin", "acos", "atan2", "asinh", "acosh", "atanh", "erf", "erfc", "gamma",
               "lgamma", "fmod", "frexp", "ldexp", "modf")


def unary(ctx, name: str, x: Val) -> Val:
    """``name(x)`` for the unary functions above, typed as numpy types the ufunc."""
    kb = ctx.kb
    if name in ("abs", "fabs"):
        return absolute(ctx, x, fabs=name == "fabs")
    if name in PREDICATES:
        return _predicate(ctx, name, x)
    if name in ROUNDING:
        uf, rnd = ROUNDING[name]
        (ti,), to = resolve(uf, x)
        x = cast(kb, x, ti)
        if x.const:
            return const(uf(x.t.dtype.type(x.v)))
        if ti.kind != "f":
            return x
        return finish(kb, kb.cvt(operand(kb, x, ti), compute_reg(ti), rnd=rnd), to)
    if name not in UNARY:
        raise LoweringError(f"function {name}() is not supported in kernels"
                            + (" yet" if name in UNSUPPORTED else ""))
    uf, impl, fast = UNARY[name]
    (ti,), to = resolve(uf, x)
    x = cast(kb, x, ti)
    if x.const:
        with np.errstate(all="ignore"):
            return const(uf(x.t.dtype.type(x.v)))
    v = operand(kb, x, ti)
    ct = compute_reg(ti)
    if name == "sqrt":
        return finish(kb, kb.sqrt(v), to)
    if ct == "f32" and kb.math == "fast" and fast is not None:
        r = fast(kb, v)
        if r is not None:
            return finish(kb, r, to)
    if ct == "f32":
        r = kb.cvt(impl(kb, kb.cvt(v, "f64")), "f32")
        return finish(kb, r, to)
    return finish(kb, impl(kb, v), to)


def absolute(ctx, x: Val, fabs: bool = False) -> Val:
    kb = ctx.kb
    if fabs:
        (ti,), to = resolve(np.fabs, x)
    else:
        (ti,), to = resolve(np.absolute, x)
    x = cast(kb, x, ti)
    if x.const:
        return const(np.absolute(x.t.dtype.type(x.v)))
    if ti.kind in "ub":
        return x
    return finish(kb, kb.abs(operand(kb, x, ti), type_=compute_reg(ti)), to)


def _predicate(ctx, name: str, x: Val) -> Val:
    kb = ctx.kb
    if x.const:
        return Val(T.bool_, bool(PREDICATES[name](x.t.dtype.type(x.v))))
    if x.t.kind != "f":
        return Val(T.bool_, name == "isfinite")
    v = operand(kb, x, x.t)
    if name == "isnan":
        return Val(T.bool_, kb.setp("nan", v, v))
    inf = kb.setp("eq", kb.abs(v), INF)
    if name == "isinf":
        return Val(T.bool_, inf)
    return Val(T.bool_, kb.setp("lt", kb.abs(v), INF))


def minmax(ctx, name: str, a: Val, b: Val) -> Val:
    """numpy's ``minimum``/``maximum``: NaN in either operand gives NaN."""
    kb = ctx.kb
    uf = np.minimum if name == "min" else np.maximum
    (ta, tb), to = resolve(uf, a, b)
    a, b = cast(kb, a, ta), cast(kb, b, tb)
    if a.const and b.const:
        return const(uf(a.t.dtype.type(a.v), b.t.dtype.type(b.v)))
    ct = compute_reg(ta)
    x, y = operand(kb, a, ta), operand(kb, b, tb)
    if ta.kind == "b":
        x, y = kb.selp(1, 0, x, type_="u32"), kb.selp(1, 0, y, type_="u32")
        r = kb.min(x, y) if name == "min" else kb.max(x, y)
        return Val(T.bool_, kb.setp("ne", r, 0))
    if ta.kind == "f":
        # numpy: a > b ? a : b (max), a < b ? a : b (min); equal zeros give b; NaN wins
        x = x if isinstance(x, Value) else kb.mov(x, ct)
        r = kb.selp(x, y, kb.setp("gt" if name == "max" else "lt", x, y, type_=ct), type_=ct)
        r = kb.selp(kb.add(x, y, type_=ct), r, kb.setp("nan", x, y, type_=ct), type_=ct)
        return finish(kb, r, to)
    if not isinstance(x, Value):
        x, y = y, x
    r = kb.min(x, y, type_=ct) if name == "min" else kb.max(x, y, type_=ct)
    return finish(kb, r, to)


def copysign(ctx, a: Val, b: Val) -> Val:
    kb = ctx.kb
    (ta, tb), to = resolve(np.copysign, a, b)
    a, b = cast(kb, a, ta), cast(kb, b, tb)
    if a.const and b.const:
        return const(np.copysign(a.t.dtype.type(a.v), b.t.dtype.type(b.v)))
    ct = compute_reg(ta)
    x = operand(kb, a, ta)
    y = operand(kb, b, tb)
    x = x if isinstance(x, Value) else kb.mov(x, ct)
    y = y if isinstance(y, Value) else kb.mov(y, ct)
    bits = f"b{32 if ct == 'f32' else 64}"
    sign = 1 << (31 if ct == "f32" else 63)
    mag = kb.and_(kb.bitcast(x, bits), sign - 1)
    r = kb.bitcast(kb.or_(mag, kb.and_(kb.bitcast(y, bits), sign)), ct)
    return finish(kb, r, to)


def hypot(ctx, a: Val, b: Val) -> Val:
    kb = ctx.kb
    (ta, tb), to = resolve(np.hypot, a, b)
    a, b = cast(kb, a, ta), cast(kb, b, tb)
    x, y = (cast(kb, v, T.f64) for v in (a, b))
    xv = x.v if not x.const else kb.mov(float(x.v), "f64")
    yv = y.v if not y.const else kb.mov(float(y.v), "f64")
    ax, ay = kb.abs(xv), kb.abs(yv)
    big, small = kb.max(ax, ay), kb.min(ax, ay)
    safe = kb.selp(1.0, big, kb.setp("eq", big, 0.0), type_="f64")
    q = kb.div(small, safe)
    r = kb.mul(big, kb.sqrt(kb.fma(q, q, 1.0)))
    r = kb.selp(INF, r, kb.setp("eq", big, INF), type_="f64")
    return cast(kb, Val(T.f64, r), to)


def pow_(ctx, a: Val, b: Val, out: T.ScalarType) -> Val:
    """``a ** b`` for floats: exp(b log|a|) in f64 with C pow's special cases (negative base
    with an integral exponent, zeros, infinities, NaN)."""
    kb = ctx.kb
    x = cast(kb, a, T.f64)
    y = cast(kb, b, T.f64)
    xv = x.v if not x.const else kb.mov(float(x.v), "f64")
    yv = y.v if not y.const else kb.mov(float(y.v), "f64")
    ax = kb.abs(xv)
    r = exp_d(kb, kb.mul(yv, log_d(kb, ax)))
    yint = kb.setp("eq", kb.cvt(yv, "f64", rnd="rzi"), yv)
    half = kb.mul(yv, 0.5)
    odd = kb.and_(yint, kb.setp("ne", kb.cvt(half, "f64", rnd="rzi"), half))
    neg = kb.setp("lt", xv, 0.0)
    r = kb.selp(kb.neg(r), r, kb.and_(neg, odd))
    r = kb.selp(NAN, r, kb.and_(neg, kb.not_(yint)))
    r = kb.selp(kb.selp(kb.neg(r), r, kb.and_(kb.setp("lt", xv, 0.0), odd)), r,
                kb.setp("eq", xv, 0.0))
    r = kb.selp(1.0, r, kb.or_(kb.setp("eq", yv, 0.0), kb.setp("eq", xv, 1.0)), type_="f64")
    return cast(kb, Val(T.f64, r), out)
