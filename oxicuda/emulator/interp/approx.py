"""The approximate floating-point instructions: ex2, lg2, sin, cos, tanh (always ``.approx``),
``rcp.approx``, ``rsqrt.approx``, ``sqrt.approx``, ``div.approx`` and ``div.full``.

The hardware's results are within documented bounds of the exact function but their exact
bits are not specified, so the emulator computes the exact function in float64 and rounds it
once, which is inside every bound. What the ISA *does* specify, and programs can observe, is
modelled exactly: the special values (``ex2(-inf) = +0``, ``lg2(+-0) = -inf``, ``lg2(x<0)``
NaN, ``rcp(+-0) = +-inf``, ``rsqrt(-0) = -inf``, ...), ``.ftz`` (subnormal inputs and results
flushed to sign-preserving zero), the canonical NaN, ``div.approx`` returning 0 (NaN for an
infinite or NaN dividend) when ``2^126 < |b| < 2^128``, and the range reduction of
``sin``/``cos``, modelled as the SASS that ptxas emits for them,
``MUFU.SIN(FMUL.RZ(x, f32(1/(2 pi))))``: a sine of turns whose argument was rounded toward
zero in f32, so the absolute error grows with ``|x|`` (about ``|x| * 2^-23``; ``sin(1e6)`` is
visibly off), with the signed zeros the H200 gives at half turns (``_sin_f32``). The GPU
differential test (tests/test_emulator_fidelity_gpu.py, with arguments up to 1e6) is the check
of that model.

``MAX_ERROR[op] = (kind, bound)`` ("ulp", "abs" or "rel") holds the tolerances to use when a
result of these instructions (on either backend) is compared with an exact reference: each is
no tighter than the PTX ISA's stated maximum error for the instruction ("Floating-Point
Instructions"); the GPU differential test (tests/test_emulator_fidelity_gpu.py) checks them.
"""

from __future__ import annotations

import numpy as np

from . import floatmath as fm

#: test tolerances, no tighter than the hardware's documented error (f32 unless noted)
MAX_ERROR: dict[str, tuple[str, float]] = {
    "ex2": ("ulp", 2.0),            # full range
    "lg2": ("abs", 2.0 ** -22),     # absolute, on the result
    "sin": ("abs", 2.0 ** -20),     # for |x| <= pi; grows about |x| * 2^-23 beyond
    "cos": ("abs", 2.0 ** -20),
    "tanh": ("rel", 2.0 ** -10.5),
    "rcp": ("ulp", 1.0),
    "rsqrt": ("rel", 2.0 ** -22),
    "sqrt": ("rel", 2.0 ** -22),
    "div.approx": ("ulp", 2.0),     # for 2^-126 <= |b| <= 2^126
    "div.full": ("ulp", 2.0),
    "ex2.f16": ("rel", 2.0 ** -9.5),
    "tanh.f16": ("rel", 2.0 ** -10),
    "f64": ("rel", 2.0 ** -20),     # rcp.approx.ftz.f64 / rsqrt.approx.f64: one MUFU step
}

_INV_2PI_F32 = np.float64(np.float32(0.15915494309189535))  # 0x3E22F983
_TWO_PI = 2.0 * np.pi
_F32_BIG = 2.0 ** 126


def _ftz64(x):
    tiny = np.abs(x) < fm.F64_MIN_NORMAL
    return np.where(tiny & (x != 0), np.copysign(0.0, x), x) if np.any(tiny) else x


def _turns_rz(x32):
    """RZ(x * f32(1/(2 pi))) in f32 -- what ptxas feeds MUFU.SIN/COS -- as float64 turns,
    with subnormal turns flushed (MUFU flushes its input)."""
    t = fm.round_f64(np.asarray(x32, np.float64) * _INV_2PI_F32, "f32", "rz").astype(np.float64)
    return np.where(np.abs(t) < np.float64(fm.F32_MIN_NORMAL), np.copysign(0.0, t), t)


#: MUFU.SIN resolves the distance below a zero crossing (the second quarter of each half
#: turn) on this grid of half turns, truncated: the H200 gives sin.approx(f32(pi)) = +0 where
#: the turns 0.5 - 2^-25 would give 1.87e-7 (tests/test_emulator_h200_observed.py)
_SIN_GRID = 2.0 ** 23


def _sin_f32(x):
    """sin of the turns t as MUFU.SIN evaluates them: by half turns k = floor(2|t|) with sign
    (-1)^k, the rest r in [0, 1) taken to the nearer zero crossing (1 - r truncated to
    ``_SIN_GRID``), then the sign of t; an exact half turn gives a zero of sign (-1)^k * sign(t)
    (H200: sin.approx(8388609.0), 1335088.5 turns, is -0)."""
    t = _turns_rz(x)
    h = 2.0 * np.abs(t)
    k = np.floor(h)
    r = h - k
    upper = r >= 0.5
    d = np.where(upper, np.floor((1.0 - r) * _SIN_GRID) / _SIN_GRID, r)
    s = np.sin(np.pi * d)
    s = np.where(np.fmod(k, 2.0) == 1.0, -s, s)
    return np.where(np.signbit(t), -s, s)


def _cos_f32(x):
    t = _turns_rz(x)
    return np.cos(_TWO_PI * (t - np.rint(t)))


_F32_FUNCS = {
    "ex2": lambda x: np.exp2(np.asarray(x, np.float64)),
    "lg2": lambda x: np.log2(np.asarray(x, np.float64)),
    "sin": _sin_f32,
    "cos": _cos_f32,
    "tanh": lambda x: np.tanh(np.asarray(x, np.float64)),
    "rcp": lambda x: 1.0 / np.asarray(x, np.float64),
    "rsqrt": lambda x: 1.0 / np.sqrt(np.asarray(x, np.float64)),
    "sqrt": lambda x: np.sqrt(np.asarray(x, np.float64)),
}


def _unary_f32(op: str, ftz: bool):
    f = _F32_FUNCS[op]
    # MUFU flushes subnormal outputs of sin/cos whatever .ftz says
    flush_out = ftz or op in ("sin", "cos")

    def run(x):
        x = np.asarray(x, np.float32)
        if ftz:
            x = fm.ftz(x)
        r = f(x).astype(np.float32)
        if flush_out:
            r = fm.ftz(r)
        return fm.canon(r)
    return run


def _div_f32(full: bool, ftz: bool):
    def run(a, b):
        a = np.asarray(a, np.float32)
        b = np.asarray(b, np.float32)
        if ftz:
            a, b = fm.ftz(a), fm.ftz(b)
        q = (a.astype(np.float64) / b.astype(np.float64)).astype(np.float32)
        if not full:
            # a * (1/b): 1/b is below the normal range and flushes to zero
            big = (np.abs(b) > _F32_BIG) & np.isfinite(b)
            if np.any(big):
                zero = np.copysign(np.float32(0), a * np.copysign(np.float32(1), b))
                # a NaN dividend stays NaN (H200: div.approx(NaN, 0x7f7fffff) = 0x7fffffff)
                q = np.where(big, np.where(np.isinf(a) | np.isnan(a), np.float32(np.nan), zero), q)
        if ftz:
            q = fm.ftz(q)
        return fm.canon(q)
    return run


def _half(op: str, t: str):
    f = _F32_FUNCS[op]

    def run(x):
        return fm.pack(t, [f(lane).astype(np.float64) for lane in fm.unpack(t, x)])
    return run


def _f64(op: str, ftz: bool):
    f = {"rcp": lambda x: 1.0 / x, "rsqrt": lambda x: 1.0 / np.sqrt(x),
         "sqrt": np.sqrt}.get(op)
    if f is None:
        return None

    def run(x):
        x = np.asarray(x, np.float64)
        if ftz:
            x = _ftz64(x)
        r = f(x)
        return _ftz64(r) if ftz else r
    return run


def make(op: str, instr, t: str):
    """The numpy function of approximate instruction ``op`` (ex2, lg2, sin, cos, tanh, rcp,
    rsqrt, sqrt, div) at type ``t`` with the instruction's modifiers, or None when the
    combination does not exist in PTX."""
    mods = set(instr.mods)
    ftz = "ftz" in mods
    if op == "div":
        if t != "f32":
            return None
        return _div_f32("full" in mods, ftz)
    if t == "f32":
        return _unary_f32(op, ftz)
    if t == "f64" and op in ("rcp", "rsqrt"):
        return _f64(op, ftz)
    if t in fm.HALF_TYPES and op in ("ex2", "tanh"):
        return _half(op, t)
    return None
