"""Extended-precision and packed integer instructions: the carry chain (``add.cc``, ``addc``,
``sub.cc``, ``subc``, ``mad.cc``, ``madc``), ``mul24``/``mad24``, ``dp4a``/``dp2a``, and the
float classifier ``testp``.

The carry flag ``CC.CF`` is per thread (``cta.carry_flag``, a bool array); instructions with
``.cc`` write it for their active lanes, ``addc``/``subc``/``madc`` read it.
"""

from __future__ import annotations

import numpy as np

from .alu import Unsupported_, _mulhi, ptype_of
from .registry import Op, handler_for, register_handler
from .types import UNSIGNED


def _carry_flag(cta) -> np.ndarray:
    cf = getattr(cta, "carry_flag", None)
    if cf is None:
        cf = cta.carry_flag = np.zeros(cta.nthreads, dtype=bool)
    return cf


def _int_type(instr) -> tuple[str, np.dtype]:
    t = ptype_of(instr)
    if t not in ("u32", "s32", "u64", "s64", "b32", "b64"):
        raise Unsupported_(instr, f"type .{t}; the carry chain takes .u32/.s32/.u64/.s64")
    return t, UNSIGNED[int(t[1:]) // 8]


def _product(instr, t: str, bits: np.dtype):
    """lo(a*b) or hi(a*b) of ``.lo``/``.hi`` ``mad`` forms, as unsigned bits."""
    if "hi" in instr.mods:
        hi = _mulhi(t.replace("b", "u"))
        return lambda a, b: np.asarray(hi(a.view(t_np(t)), b.view(t_np(t)))).view(bits)
    if "lo" not in instr.mods:
        raise Unsupported_(instr, "mad.cc/madc need .lo or .hi")
    return lambda a, b: a * b


def t_np(t: str) -> np.dtype:
    """The numpy dtype of integer PTX type ``t`` (b32 as u32)."""
    return np.dtype({"u": "u", "b": "u", "s": "i"}[t[0]] + str(int(t[1:]) // 8))


def _decode_chain(kind: str, base_decoder):
    """Decoder of ``add``/``sub``/``mad`` (with ``.cc``: the carry chain, else ``base_decoder``)
    and of ``addc``/``subc``/``madc`` (``kind`` ending in "c")."""
    def decode(instr, kc):
        reads_cf = kind.endswith("c")
        writes_cf = "cc" in instr.mods
        if not reads_cf and not writes_cf:
            return base_decoder(instr, kc)
        t, bits = _int_type(instr)
        op = kind.rstrip("c") if reads_cf else kind
        if op == "mad":
            dst, a, b, c = instr.operands
            prod = _product(instr, t, bits)
            srcs = (a, b, c)
        else:
            dst, a, b = instr.operands
            srcs = (a, b)

        def bind(cta):
            n = cta.nthreads
            rs = [cta.reader(s, bits.name.replace("uint", "u")) for s in srcs]
            put = cta.writer(dst, bits.name.replace("uint", "u"))
            cf = _carry_flag(cta)

            def step(m):
                vals = [np.broadcast_to(np.asarray(r(), dtype=bits), (n,)) for r in rs]
                cin = cf.astype(bits) if reads_cf else None
                if op == "sub":
                    x, y = vals
                    d = x - y
                    out = x < y
                    if cin is not None:
                        out = out | (d < cin)
                        d = d - cin
                else:
                    x, y = (prod(vals[0], vals[1]), vals[2]) if op == "mad" else vals
                    d = x + y
                    out = d < x
                    if cin is not None:
                        d2 = d + cin
                        out = out | (d2 < d)
                        d = d2
                put(d, m)
                if writes_cf:
                    if m is None:
                        cf[:] = out
                    else:
                        np.copyto(cf, out, where=m)
            return step
        return Op(bind)
    return decode


def _decode_mul24(instr, kc):
    t = ptype_of(instr)
    if t not in ("u32", "s32"):
        raise Unsupported_(instr, f"type .{t}; mul24/mad24 take .u32 or .s32")
    if "sat" in instr.mods:
        raise Unsupported_(instr, "mad24.hi.sat is not supported")
    hi = "hi" in instr.mods
    if not hi and "lo" not in instr.mods:
        raise Unsupported_(instr, "needs .lo or .hi")
    mad = instr.opcode == "mad24"
    dst, *srcs = instr.operands
    if len(srcs) != (3 if mad else 2):
        raise Unsupported_(instr, f"expected {3 if mad else 2} sources, got {len(srcs)}")

    def low24(v):
        v = np.asarray(v).astype(np.uint32).astype(np.int64) & 0xFFFFFF
        return (v ^ 0x800000) - 0x800000 if t == "s32" else v

    def f(a, b, c=None):
        p = low24(a) * low24(b)  # exact: |p| < 2^47
        r = (p >> 16) if hi else p
        r = r & 0xFFFFFFFF
        if c is not None:
            r = (r + (np.asarray(c).astype(np.uint32).astype(np.int64))) & 0xFFFFFFFF
        return r.astype(np.uint32)

    def bind(cta):
        rs = [cta.reader(s, "u32") for s in srcs]
        put = cta.writer(dst, "u32")
        if mad:
            r0, r1, r2 = rs
            return lambda m: put(f(r0(), r1(), r2()), m)
        r0, r1 = rs
        return lambda m: put(f(r0(), r1()), m)
    return Op(bind)


def _decode_dot(instr, kc):
    """dp4a.atype.btype d, a, b, c and dp2a.{lo,hi}.atype.btype d, a, b, c."""
    types = [m for m in instr.mods if m in ("u32", "s32")]
    if len(types) != 2:
        raise Unsupported_(instr, f"needs .atype.btype (.u32/.s32 each); got modifiers {instr.mods}")
    a_signed, b_signed = types[0] == "s32", types[1] == "s32"
    four = instr.opcode == "dp4a"
    if not four and not ({"lo", "hi"} & set(instr.mods)):
        raise Unsupported_(instr, "dp2a needs .lo or .hi")
    b_first = 2 if "hi" in instr.mods else 0
    dst, a, b, c = instr.operands

    def f(av, bv, cv, n):
        av = np.broadcast_to(np.asarray(av, dtype=np.uint32), (n,))
        bv = np.broadcast_to(np.asarray(bv, dtype=np.uint32), (n,))
        bb = np.ascontiguousarray(bv).view(np.int8 if b_signed else np.uint8).reshape(n, 4).astype(np.int64)
        if four:
            aa = np.ascontiguousarray(av).view(np.int8 if a_signed else np.uint8).reshape(n, 4)
            acc = (aa.astype(np.int64) * bb).sum(axis=1)
        else:
            ah = np.ascontiguousarray(av).view(np.int16 if a_signed else np.uint16).reshape(n, 2)
            acc = (ah.astype(np.int64) * bb[:, b_first:b_first + 2]).sum(axis=1)
        cc = np.asarray(cv).astype(np.uint32).astype(np.int64)
        return ((acc + cc) & 0xFFFFFFFF).astype(np.uint32)

    def bind(cta):
        ra, rb, rc = cta.reader(a, "u32"), cta.reader(b, "u32"), cta.reader(c, "u32")
        put = cta.writer(dst, "u32")
        n = cta.nthreads
        return lambda m: put(f(ra(), rb(), rc(), n), m)
    return Op(bind)


_TESTS = {
    "finite": np.isfinite,
    "infinite": np.isinf,
    "number": lambda x: ~np.isnan(x),
    "notanumber": np.isnan,
    "normal": lambda x: np.isfinite(x) & (np.abs(x) >= np.finfo(x.dtype).tiny),
    "subnormal": lambda x: (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny),
}


def _decode_testp(instr, kc):
    t = ptype_of(instr)
    tests = [m for m in instr.mods if m in _TESTS]
    if t not in ("f32", "f64") or len(tests) != 1:
        raise Unsupported_(instr, "needs one of .finite/.infinite/.number/.notanumber/.normal/"
                                  ".subnormal and .f32 or .f64")
    test = _TESTS[tests[0]]
    dst, a = instr.operands

    def bind(cta):
        ra = cta.reader(a, t)
        put = cta.writer(dst, "pred")
        return lambda m: put(test(np.asarray(ra())), m)
    return Op(bind)


for _op in ("add", "sub", "mad"):
    register_handler(_op, _decode_chain(_op, handler_for(_op)), replace=True)
for _op in ("addc", "subc", "madc"):
    register_handler(_op, _decode_chain(_op, None))
register_handler("mul24", _decode_mul24)
register_handler("mad24", _decode_mul24)
register_handler("dp4a", _decode_dot)
register_handler("dp2a", _decode_dot)
register_handler("testp", _decode_testp)
