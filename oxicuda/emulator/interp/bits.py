"""Bit-field instructions: bfe, bfi, prmt (all modes), lop3, shf (funnel shift), bmsk, szext."""

from __future__ import annotations

import numpy as np

from .alu import Unsupported_, ptype_of
from .registry import Op, register_handler
from .types import DTYPES, UNSIGNED


def _decode_bfe(instr, kc):
    t = ptype_of(instr)
    dt = DTYPES[t]
    bits = 8 * dt.itemsize
    signed = t.startswith("s")
    dst, a, b, c = instr.operands

    def f(x, pos, ln):
        x = np.asarray(x).astype(np.uint64)
        pos = np.asarray(pos).astype(np.uint64) & np.uint64(0xFF)
        ln = np.asarray(ln).astype(np.uint64) & np.uint64(0xFF)
        shifted = np.where(pos >= bits, np.uint64(0), x >> np.minimum(pos, np.uint64(63)))
        ln_c = np.minimum(ln, np.uint64(bits))
        mask = np.where(ln_c >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                        (np.uint64(1) << np.minimum(ln_c, np.uint64(63))) - np.uint64(1))
        field = shifted & mask
        if signed:
            # sign bit: bit (pos+len-1), clamped to the msb; len 0 gives 0
            sb_pos = np.minimum(pos + ln_c - np.uint64(1), np.uint64(bits - 1))
            sbit = np.where(ln_c == 0, np.uint64(0), (x >> sb_pos) & np.uint64(1))
            fill = np.where(sbit == 1, ~mask, np.uint64(0))
            field = np.where(ln_c == 0, np.uint64(0), field | fill)
        return (field & np.uint64((1 << bits) - 1)).astype(UNSIGNED[dt.itemsize]).view(dt)

    def bind(cta):
        ra, rb, rc = cta.reader(a, t), cta.reader(b, "u32"), cta.reader(c, "u32")
        put = cta.writer(dst, t)
        return lambda m: put(f(ra(), rb(), rc()), m)
    return Op(bind)


def _decode_bfi(instr, kc):
    t = ptype_of(instr)
    dt = DTYPES[t]
    bits = 8 * dt.itemsize
    dst, a, b, c, d = instr.operands

    def f(x, y, pos, ln):
        x = np.asarray(x).astype(np.uint64)
        y = np.asarray(y).astype(np.uint64)
        pos = np.asarray(pos).astype(np.uint64) & np.uint64(0xFF)
        ln = np.minimum(np.asarray(ln).astype(np.uint64) & np.uint64(0xFF), np.uint64(bits))
        mask = np.where(ln >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                        (np.uint64(1) << np.minimum(ln, np.uint64(63))) - np.uint64(1))
        ok = pos < bits
        sh = np.minimum(pos, np.uint64(63))
        r = np.where(ok, (y & ~(mask << sh)) | ((x & mask) << sh), y)
        return (r & np.uint64((1 << bits) - 1)).astype(dt)

    def bind(cta):
        ra, rb = cta.reader(a, t), cta.reader(b, t)
        rc, rd = cta.reader(c, "u32"), cta.reader(d, "u32")
        put = cta.writer(dst, t)
        return lambda m: put(f(ra(), rb(), rc(), rd()), m)
    return Op(bind)


#: prmt modes: source byte index (of the 8 bytes {b, a}) for result byte k given c[1:0] = s
_PRMT_MODES = {
    "f4e": lambda k, s: (k + s) & 7,        # forward 4 extract
    "b4e": lambda k, s: (s - k) & 7,        # backward 4 extract
    "rc8": lambda k, s: s,                   # replicate byte s
    "ecl": lambda k, s: np.maximum(k, s),   # edge clamp left
    "ecr": lambda k, s: np.minimum(k, s),   # edge clamp right
    "rc16": lambda k, s: (k & 1) | ((s & 1) << 1),  # replicate half s & 1
}


def _decode_prmt(instr, kc):
    mode = next((m for m in instr.mods if m in _PRMT_MODES), None)
    dst, a, b, c = instr.operands

    def fmode(x, y, sel):
        src = np.asarray(x).astype(np.uint64) | (np.asarray(y).astype(np.uint64) << np.uint64(32))
        s = np.asarray(sel).astype(np.uint64) & np.uint64(3)
        pick = _PRMT_MODES[mode]
        out = np.zeros(np.broadcast(src, s).shape, np.uint64)
        for k in range(4):
            idx = np.asarray(pick(np.uint64(k), s)).astype(np.uint64)
            out |= ((src >> (idx * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * k)
        return out.astype(np.uint32)

    def f(x, y, sel):
        if mode is not None:
            return fmode(x, y, sel)
        x = np.asarray(x).astype(np.uint64)
        y = np.asarray(y).astype(np.uint64)
        src = x | (y << np.uint64(32))
        sel = np.asarray(sel).astype(np.uint64)
        out = np.zeros(np.broadcast(x, y, sel).shape, np.uint64)
        for k in range(4):
            s = (sel >> np.uint64(4 * k)) & np.uint64(0xF)
            byte = (src >> ((s & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where((s & np.uint64(8)) != 0, np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
            out |= byte << np.uint64(8 * k)
        return out.astype(np.uint32)

    def bind(cta):
        ra, rb, rc = cta.reader(a, "b32"), cta.reader(b, "b32"), cta.reader(c, "b32")
        put = cta.writer(dst, "b32")
        return lambda m: put(f(ra(), rb(), rc()), m)
    return Op(bind)


def _decode_lop3(instr, kc):
    dst, a, b, c, lut = instr.operands

    def bind(cta):
        ra, rb, rc, rl = (cta.reader(a, "b32"), cta.reader(b, "b32"), cta.reader(c, "b32"),
                          cta.reader(lut, "b32"))
        put = cta.writer(dst, "b32")

        def step(m):
            x, y, z = np.asarray(ra()), np.asarray(rb()), np.asarray(rc())
            tbl = int(np.asarray(rl()).flat[0]) & 0xFF
            r = np.zeros(np.broadcast(x, y, z).shape, np.uint32)
            for i in range(8):
                if (tbl >> i) & 1:
                    ta = x if i & 4 else ~x
                    tb = y if i & 2 else ~y
                    tc = z if i & 1 else ~z
                    r |= ta & tb & tc
            put(r, m)
        return step
    return Op(bind)


def _decode_shf(instr, kc):
    """shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: the funnel shift of the 64-bit {b, a} by c
    (wrap: c mod 32; clamp: min(c, 32)); .l keeps the high word, .r the low word."""
    mods = set(instr.mods)
    left = "l" in mods
    if left == ("r" in mods) or ("wrap" in mods) == ("clamp" in mods):
        raise Unsupported_(instr, "needs one of .l/.r and one of .wrap/.clamp")
    if not ({"b32", "u32", "s32"} & mods):
        raise Unsupported_(instr, "shf takes .b32")
    wrap = "wrap" in mods
    dst, a, b, c = instr.operands

    def f(x, y, n):
        v = np.asarray(x).astype(np.uint64) | (np.asarray(y).astype(np.uint64) << np.uint64(32))
        n = np.asarray(n).astype(np.uint64)
        n = (n & np.uint64(31)) if wrap else np.minimum(n, np.uint64(32))
        if left:
            return ((v << n) >> np.uint64(32)).astype(np.uint32)
        return (v >> n).astype(np.uint32)

    def bind(cta):
        ra, rb, rc = cta.reader(a, "b32"), cta.reader(b, "b32"), cta.reader(c, "u32")
        put = cta.writer(dst, "b32")
        return lambda m: put(f(ra(), rb(), rc()), m)
    return Op(bind)


def _clamp_or_wrap(instr, v):
    v = np.asarray(v).astype(np.uint64)
    return (v & np.uint64(31)) if "wrap" in instr.mods else np.minimum(v, np.uint64(32))


def _decode_bmsk(instr, kc):
    """bmsk.{clamp,wrap}.b32 d, a, b: the mask of b ones starting at bit a."""
    if ("wrap" in instr.mods) == ("clamp" in instr.mods):
        raise Unsupported_(instr, "needs .clamp or .wrap")
    dst, a, b = instr.operands
    ones = np.uint64(0xFFFFFFFF)

    def f(pos, ln):
        pos, ln = _clamp_or_wrap(instr, pos), _clamp_or_wrap(instr, ln)
        end = pos + ln
        lo = np.where(pos >= 32, np.uint64(0), (ones << np.minimum(pos, np.uint64(31))) & ones)
        hi = np.where(end >= 32, np.uint64(0), (ones << np.minimum(end, np.uint64(31))) & ones)
        return (lo & ~hi & ones).astype(np.uint32)

    def bind(cta):
        ra, rb = cta.reader(a, "u32"), cta.reader(b, "u32")
        put = cta.writer(dst, "b32")
        return lambda m: put(f(ra(), rb()), m)
    return Op(bind)


def _decode_szext(instr, kc):
    """szext.{clamp,wrap}.{s32,u32} d, a, b: a sign- (s32) or zero- (u32) extended from its
    low b bits (b = 0 gives 0)."""
    if ("wrap" in instr.mods) == ("clamp" in instr.mods):
        raise Unsupported_(instr, "needs .clamp or .wrap")
    t = ptype_of(instr)
    if t not in ("s32", "u32"):
        raise Unsupported_(instr, "szext takes .s32 or .u32")
    dst, a, b = instr.operands

    def f(x, n):
        x = np.asarray(x).astype(np.uint32).astype(np.int64)
        n = _clamp_or_wrap(instr, n).astype(np.int64)
        low = x & ((np.int64(1) << n) - 1)
        if t == "s32":
            sign = (low >> np.maximum(n - 1, 0)) & 1
            low = np.where((sign == 1) & (n > 0), low - (np.int64(1) << n), low)
        return np.where(n == 0, 0, low).astype(np.int64).astype(np.uint32)

    def bind(cta):
        ra, rb = cta.reader(a, "b32"), cta.reader(b, "u32")
        put = cta.writer(dst, "b32")
        return lambda m: put(f(ra(), rb()), m)
    return Op(bind)


register_handler("shf", _decode_shf)
register_handler("bmsk", _decode_bmsk)
register_handler("szext", _decode_szext)
register_handler("bfe", _decode_bfe)
register_handler("bfi", _decode_bfi)
register_handler("prmt", _decode_prmt)
register_handler("lop3", _decode_lop3)
