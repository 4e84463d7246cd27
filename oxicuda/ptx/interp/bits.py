"""Bit-field instructions: bfe, bfi, prmt, lop3."""

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


def _decode_prmt(instr, kc):
    mode = next((m for m in instr.mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
    if mode is not None:
        raise Unsupported_(instr, f"prmt mode .{mode}")
    dst, a, b, c = instr.operands

    def f(x, y, sel):
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


register_handler("bfe", _decode_bfe)
register_handler("bfi", _decode_bfi)
register_handler("prmt", _decode_prmt)
register_handler("lop3", _decode_lop3)
