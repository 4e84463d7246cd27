"""Directed rounding (``.rz``/``.rm``/``.rp``) of f32 and f64 arithmetic, exact.

Rounding a float64 intermediate once more is not enough: RN64(x) can land exactly on a target
value when x does not (f32 ``add.rp`` of 1 and 2^-100 must step past 1), and for f64 there is no
wider type at all. Sums use the exact error of ``two_sum``, vectorized (add, sub, and f32 fma,
whose product is exact in float64); f64 mul/fma/div/rcp/sqrt, which no kernel of the project
emits, compare the round-to-nearest result with the exact rational value lane by lane. Every
rounded result is one step from round-to-nearest at most. A sum that is exactly zero is -0 in
``.rm`` unless both addends are +0 (IEEE 754), +0 or the zeros' common sign otherwise.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import floatmath as fm

_MAX = {np.float32: np.float32(3.4028234663852886e38), np.float64: np.float64(1.7976931348623157e308)}


def _step(r, where, toward):
    """``r`` moved one float toward ``toward`` (an array or scalar) where ``where`` holds."""
    if not np.count_nonzero(where):
        return r
    return np.where(where, np.nextafter(r, np.asarray(toward, r.dtype)), r)


def _overflow(r, finite_in, mode: str):
    """Round-to-nearest overflowed to an infinity that the mode replaces by the largest finite
    value (``.rz``; ``.rm`` above, ``.rp`` below)."""
    inf = finite_in & np.isinf(r)
    if not np.count_nonzero(inf):
        return r
    big = _MAX[r.dtype.type]
    cap = inf & ((mode == "rz") | ((mode == "rm") & (r > 0)) | ((mode == "rp") & (r < 0)))
    return np.where(cap, np.copysign(big, r), r).astype(r.dtype)


def sum_directed(x, y, mode: str, dtype):
    """x + y (float64 arrays holding ``dtype`` values, or exact products for f32 fma) rounded
    to ``dtype`` (np.float32 or np.float64) in ``mode``; NaN and infinite inputs give what
    round-to-nearest gives."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        s, e = fm.two_sum(x, y)
    finite_in = np.isfinite(x) & np.isfinite(y)
    if dtype == np.float64:
        r = s
        exact_at_r = np.ones(r.shape, bool)
    else:
        r = fm.round_f64(s, "f32", mode)
        # a sum that is not an f32 value is at least one f64 ulp from every f32 value, farther
        # than e: only an s that is exactly an f32 value needs e's sign
        exact_at_r = r.astype(np.float64) == s
    r = _overflow(np.asarray(r), finite_in, mode)
    inexact = finite_in & np.isfinite(s) & (e != 0) & exact_at_r
    if np.count_nonzero(inexact):
        if mode == "rz":
            r = _step(r, inexact & (np.signbit(e) != np.signbit(s)), 0.0)
        elif mode == "rm":
            r = _step(r, inexact & (e < 0), -np.inf)
        else:
            r = _step(r, inexact & (e > 0), np.inf)
    if mode == "rm":
        zero = finite_in & (s == 0) & ~((x == 0) & ~np.signbit(x) & (y == 0) & ~np.signbit(y))
        if np.count_nonzero(zero):
            r = np.where(zero, np.asarray(-0.0, r.dtype), r)
    return np.asarray(r, dtype)


def _round_exact(rn: float, exact: Fraction, mode: str) -> float:
    """``exact`` rounded in ``mode``, from its round-to-nearest f64 value ``rn`` (finite or an
    overflow infinity)."""
    if np.isinf(rn):
        if mode == "rz" or (mode == "rm" and rn > 0) or (mode == "rp" and rn < 0):
            return float(np.copysign(_MAX[np.float64], rn))
        return rn
    got = Fraction(rn)
    if got == exact:
        return rn
    if mode == "rz":
        return float(np.nextafter(rn, 0.0)) if abs(got) > abs(exact) else rn
    if mode == "rm":
        return float(np.nextafter(rn, -np.inf)) if got > exact else rn
    return float(np.nextafter(rn, np.inf)) if got < exact else rn


def _exact_value(op: str, v: list[float]) -> Fraction | None:
    """The exact rational result of ``op`` on finite ``v`` (None where it is not rational or
    not finite: division by zero, sqrt)."""
    q = [Fraction(x) for x in v]
    if op == "mul":
        return q[0] * q[1]
    if op == "fma":
        return q[0] * q[1] + q[2]
    if op == "div":
        return q[0] / q[1] if q[1] else None
    if op == "rcp":
        return 1 / q[0] if q[0] else None
    return None


def _sqrt_directed(rn: float, a: float, mode: str) -> float:
    if not a > 0:
        return rn
    sq, want = Fraction(rn) ** 2, Fraction(a)
    if sq == want:
        return rn
    if mode == "rp":
        return float(np.nextafter(rn, np.inf)) if sq < want else rn
    return float(np.nextafter(rn, 0.0)) if sq > want else rn


def f64_directed(op: str, mode: str):
    """f(*float64 arrays) -> ``op`` (add, sub, mul, fma, div, rcp, sqrt) of f64 values rounded
    in ``mode`` (rz, rm, rp); NaN results as the round-to-nearest instruction gives them."""
    if op in ("add", "sub"):
        def addsub(a, b):
            a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
            r = sum_directed(a, b if op == "add" else -b, mode, np.float64)
            return fm.propagate_nan_f64(r, a, b)
        return addsub

    nearest = {
        "mul": lambda a, b: fm.propagate_nan_f64(np.multiply(a, b), a, b),
        "fma": fm.fma_f64,
        "div": np.divide,
        "rcp": lambda a: 1.0 / a,
        "sqrt": np.sqrt,
    }[op]

    def lanes(*v):
        v = [np.asarray(x, np.float64) for x in v]
        with np.errstate(all="ignore"):
            r = np.array(nearest(*v), np.float64, ndmin=1)
        shape = np.broadcast_shapes(*(x.shape for x in v))
        flat = [np.broadcast_to(x, shape).reshape(-1) for x in v]
        out = r.reshape(-1).copy()
        finite = np.logical_and.reduce([np.isfinite(x) for x in flat])
        for k in np.flatnonzero(finite):
            args = [float(x[k]) for x in flat]
            if op == "sqrt":
                out[k] = _sqrt_directed(float(out[k]), args[0], mode)
                continue
            exact = _exact_value(op, args)
            if exact is None:
                continue
            if exact == 0:
                if op == "fma" and mode == "rm":
                    prod_zero = args[0] == 0 or args[1] == 0
                    prod_neg = np.signbit(args[0]) != np.signbit(args[1])
                    both_pos = prod_zero and not prod_neg and args[2] == 0 and not np.signbit(args[2])
                    out[k] = 0.0 if both_pos else -0.0
                continue
            out[k] = _round_exact(float(out[k]), exact, mode)
        return out.reshape(shape)
    return lanes


def f32_sum_directed(mode: str, negate_b: bool = False):
    """f(a, b) -> a + b (a - b with ``negate_b``) of float32 arrays rounded in ``mode``."""
    def f(a, b):
        b = np.asarray(b, np.float64)
        return sum_directed(a, -b if negate_b else b, mode, np.float32)
    return f


def f32_fma_directed(mode: str):
    """f(a, b, c) -> a*b + c of float32 arrays rounded once in ``mode`` (the product of two
    f32 values is exact in float64)."""
    def f(a, b, c):
        p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
        return sum_directed(p, c, mode, np.float32)
    return f
