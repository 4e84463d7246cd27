"""setp, selp, slct, set: comparisons and selection."""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Reg
from .alu import Unsupported_, ptype_of
from .registry import Op, register_handler
from .types import is_float

_ORDERED = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}


def _cmp(op: str, t: str):
    if op in ("num", "nan"):
        return (lambda a, b: ~(np.isnan(a) | np.isnan(b))) if op == "num" else \
            (lambda a, b: np.isnan(a) | np.isnan(b))
    if op.endswith("u") and op[:-1] in _ORDERED and op not in ("lu",):
        base = _ORDERED[op[:-1]]
        return lambda a, b: base(a, b) | np.isnan(a) | np.isnan(b)
    base = _ORDERED[op]
    if op == "ne" and is_float(t):
        return lambda a, b: np.not_equal(a, b) & ~(np.isnan(a) | np.isnan(b))
    return base


def _half_view(t, v):
    from . import floatmath as fm
    return fm.unpack(t, v)[0] if t in ("bf16",) else v


def _decode_setp(instr, kc):
    t = ptype_of(instr)
    mods = instr.mods
    op = next((m for m in mods if m in _ORDERED or m in ("num", "nan") or
               (m.endswith("u") and m[:-1] in _ORDERED)), None)
    if op is None:
        raise Unsupported_(instr, "no comparison operator")
    cmp = _cmp(op, t)
    combine = next((m for m in mods if m in ("and", "or", "xor")), None)
    ops = instr.operands
    dst = ops[0]
    a, b = ops[1], ops[2]
    c = ops[3] if combine else None
    if t in ("f16x2", "bf16x2"):
        raise Unsupported_(instr, "packed half comparisons")
    ftz = "ftz" in mods
    names = dst.name.split("|") if isinstance(dst, Reg) else [dst.name]

    def bind(cta):
        ra, rb = cta.reader(a, t), cta.reader(b, t)
        rc = cta.reader(c, "pred") if c is not None else None
        puts = [cta.writer(Reg(nm), "pred") for nm in names]
        comb = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(combine)
        conv = (lambda v: _half_view(t, v)) if t == "bf16" else None

        def step(m):
            x, y = ra(), rb()
            if conv:
                x, y = conv(x), conv(y)
            if ftz:
                from .floatmath import ftz as flush
                x, y = flush(x), flush(y)
            r = cmp(x, y)
            if comb is None:
                puts[0](r, m)
                if len(puts) > 1:
                    puts[1](~r, m)
            else:
                p = rc()
                puts[0](comb(r, p), m)
                if len(puts) > 1:
                    puts[1](comb(~r, p), m)
        return step
    return Op(bind)


def _decode_selp(instr, kc):
    t = ptype_of(instr)
    dst, a, b, p = instr.operands

    def bind(cta):
        ra, rb, rp = cta.reader(a, t), cta.reader(b, t), cta.reader(p, "pred")
        put = cta.writer(dst, t)
        return lambda m: put(np.where(rp(), ra(), rb()), m)
    return Op(bind)


def _decode_slct(instr, kc):
    t = instr.mods[-2] if len(instr.mods) >= 2 else ptype_of(instr)
    ct = instr.mods[-1]
    dst, a, b, c = instr.operands

    def bind(cta):
        ra, rb, rc = cta.reader(a, t), cta.reader(b, t), cta.reader(c, ct)
        put = cta.writer(dst, t)
        return lambda m: put(np.where(rc() >= 0, ra(), rb()), m)
    return Op(bind)


register_handler("setp", _decode_setp)
register_handler("selp", _decode_selp)
register_handler("slct", _decode_slct)
