"""Warp collectives: shfl.sync, vote.sync, redux.sync, activemask, match.sync.

Every thread named by the member mask must be at the instruction (the run loop's active mask)
or the launch faults, as DESIGN.md requires.
"""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Reg
from .alu import Unsupported_, ptype_of
from .faults import LAUNCH_FAILED, Fault
from .registry import Op, register_handler

_LANES = np.arange(32, dtype=np.uint32)


def _member_matrix(cta, membermask, m):
    """(nwarps, 32) bool of lanes named by the mask; fault if one named lane is not active."""
    n = cta.nthreads
    mm = np.broadcast_to(np.asarray(membermask, dtype=np.uint32), (n,))
    active = np.ones(n, bool) if m is None else m
    named = ((mm >> cta.lane) & np.uint32(1)).astype(bool)
    # each active thread's mask must name lanes that are active (and in range); the mask of a
    # warp is the one its first active lane passes (vectorized: this runs per shfl/vote)
    nw = cta.nwarps
    act = np.zeros(nw * 32, bool)
    act[:n] = active
    act = act.reshape(nw, 32)
    has = np.count_nonzero(act, axis=1) > 0
    first = np.minimum(np.arange(nw) * 32 + np.argmax(act, axis=1), n - 1)
    maskw = np.where(has, mm[first], np.uint32(0))
    want = ((maskw[:, None] >> _LANES) & np.uint32(1)).astype(bool)
    miss = want & ~act
    if np.count_nonzero(miss):
        w, missing = divmod(int(np.flatnonzero(miss)[0]), 32)
        raise Fault(LAUNCH_FAILED, f"warp collective with member mask 0x{int(maskw[w]):08x}: lane "
                    f"{missing} of warp {w} is not at this instruction (divergent or "
                    "exited threads)", int(first[w]))
    return named


def _decode_shfl(instr, kc):
    mode = next((m for m in instr.mods if m in ("up", "down", "bfly", "idx")), None)
    if mode is None or "sync" not in instr.mods:
        raise Unsupported_(instr, "only shfl.sync.{up,down,bfly,idx}.b32")
    dst, a, b, c, mask = instr.operands
    dnames = dst.name.split("|") if isinstance(dst, Reg) else ["_"]

    def bind(cta):
        ra, rb, rc, rm = (cta.reader(a, "b32"), cta.reader(b, "u32"), cta.reader(c, "u32"),
                          cta.reader(mask, "u32"))
        put = cta.writer(dst if len(dnames) == 1 else Reg(dnames[0]), "b32")
        putp = cta.writer(Reg(dnames[1]), "pred") if len(dnames) > 1 else None
        n = cta.nthreads
        lane = cta.lane.astype(np.int64)
        base = (cta.warp.astype(np.int64)) * 32

        def step(m):
            _member_matrix(cta, rm(), m)
            val = np.broadcast_to(ra(), (n,))
            bval = np.broadcast_to(rb(), (n,)).astype(np.int64) & 31
            cval = np.broadcast_to(rc(), (n,)).astype(np.int64)
            clamp = cval & 31
            segmask = (cval >> 8) & 31
            max_lane = (lane & segmask) | (clamp & ~segmask)
            min_lane = lane & segmask
            if mode == "up":
                j = lane - bval
                ok = j >= max_lane
            elif mode == "down":
                j = lane + bval
                ok = j <= max_lane
            elif mode == "bfly":
                j = lane ^ bval
                ok = j <= max_lane
            else:
                j = min_lane | (bval & ~segmask)
                ok = j <= max_lane
            j = np.where(ok, j, lane)
            src = base + j
            src = np.where(src < n, src, base + lane)
            out = val[src]
            put(out, m)
            if putp is not None:
                putp(ok, m)
        return step
    return Op(bind)


def _decode_vote(instr, kc):
    mode = next((m for m in instr.mods if m in ("any", "all", "uni", "ballot")), None)
    if mode is None:
        raise Unsupported_(instr, "vote mode")
    dst, p, mask = instr.operands

    def bind(cta):
        rp, rm = cta.reader(p, "pred"), cta.reader(mask, "u32")
        put = cta.writer(dst, "b32" if mode == "ballot" else "pred")
        n = cta.nthreads
        nw = cta.nwarps

        def step(m):
            _member_matrix(cta, rm(), m)
            active = np.ones(n, bool) if m is None else m
            pv = np.broadcast_to(rp(), (n,)) & active
            padded = np.zeros(nw * 32, bool)
            padded[:n] = pv
            act = np.zeros(nw * 32, bool)
            act[:n] = active
            pw, aw = padded.reshape(nw, 32), act.reshape(nw, 32)
            if mode == "ballot":
                bits = (pw.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
                res = bits.astype(np.uint32)[cta.warp]
            elif mode == "any":
                res = pw.any(axis=1)[cta.warp]
            elif mode == "all":
                res = (pw | ~aw).all(axis=1)[cta.warp]
            else:
                res = ((pw | ~aw).all(axis=1) | ~pw.any(axis=1))[cta.warp]
            put(res, m)
        return step
    return Op(bind)


def _decode_redux(instr, kc):
    t = ptype_of(instr)
    op = next((m for m in instr.mods if m in ("add", "min", "max", "and", "or", "xor")), None)
    if op is None or t not in ("u32", "s32", "b32"):
        raise Unsupported_(instr, "redux.sync.{add,min,max,and,or,xor} on 32-bit integers")
    dst, a, mask = instr.operands
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor}[op]

    def bind(cta):
        ra, rm = cta.reader(a, t), cta.reader(mask, "u32")
        put = cta.writer(dst, t)
        n = cta.nthreads

        def step(m):
            _member_matrix(cta, rm(), m)
            active = np.ones(n, bool) if m is None else m
            v = np.broadcast_to(ra(), (n,))
            out = np.zeros(n, dtype=v.dtype)
            for w in np.unique(cta.warp[active]):
                sel = active & (cta.warp == w)
                out[sel] = ufunc.reduce(v[sel])
            put(out, m)
        return step
    return Op(bind)


def _decode_activemask(instr, kc):
    dst, = instr.operands

    def bind(cta):
        put = cta.writer(dst, "b32")
        n = cta.nthreads
        nw = cta.nwarps

        def step(m):
            active = np.ones(n, bool) if m is None else m
            act = np.zeros(nw * 32, bool)
            act[:n] = active
            bits = (act.reshape(nw, 32).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1)
            put(bits.astype(np.uint32)[cta.warp], m)
        return step
    return Op(bind)


def _decode_match(instr, kc):
    t = ptype_of(instr)
    if "any" not in instr.mods:
        raise Unsupported_(instr, "only match.any.sync")
    dst, a, mask = instr.operands

    def bind(cta):
        ra, rm = cta.reader(a, t), cta.reader(mask, "u32")
        put = cta.writer(dst, "b32")
        n = cta.nthreads

        def step(m):
            _member_matrix(cta, rm(), m)
            active = np.ones(n, bool) if m is None else m
            v = np.broadcast_to(ra(), (n,))
            out = np.zeros(n, np.uint32)
            for i in np.flatnonzero(active):
                same = active & (cta.warp == cta.warp[i]) & (v == v[i])
                out[i] = int((same.astype(np.uint64) << (cta.lane.astype(np.uint64))).sum())
            put(out, m)
        return step
    return Op(bind)


register_handler("shfl", _decode_shfl)
register_handler("vote", _decode_vote)
register_handler("redux", _decode_redux)
register_handler("activemask", _decode_activemask)
register_handler("match", _decode_match)
_ = LAUNCH_FAILED
