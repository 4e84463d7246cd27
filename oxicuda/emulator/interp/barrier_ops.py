"""``bar.warp.sync`` (``__syncwarp``) and ``bar.red`` / ``barrier.red`` (``__syncthreads_count``,
``__syncthreads_and``, ``__syncthreads_or``).

``bar.warp.sync mask``: each thread waits until every thread named in ``mask`` (of its own warp)
has reached a ``bar.warp.sync`` -- the same instruction or another one, as sm_70+ allows --
then the named threads go on together. Threads named in the mask that have exited or do not
exist (a partial last warp) count as arrived. A thread must name itself in its mask, and the
threads of one warp that arrive together must pass the same mask (the ISA leaves anything else
undefined; the emulator faults).

``bar.red.popc.u32 d, 0, {!}p`` and ``bar.red.{and,or}.pred d, 0, {!}p``: the whole-CTA barrier
``bar.sync 0`` that also reduces ``p`` over the threads of the CTA and gives every thread the
result. Barrier ids other than 0 and thread counts are reported as unsupported.
"""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Imm
from .faults import LAUNCH_FAILED, Fault, Unsupported
from .registry import BARRIER, Op

WARP_SYNC = "warp"
_LANES = np.arange(32, dtype=np.uint32)


def decode_warp_sync(instr, kc) -> Op:
    if len(instr.operands) != 1:
        raise Unsupported(f"{instr.full_opcode}: expected 'bar.warp.sync membermask'")
    return Op(None, BARRIER, barrier=(instr.operands[0], None, False, WARP_SYNC))


def warp_sync_arrive(cta, nb, arriving: np.ndarray, live: np.ndarray) -> np.ndarray | None:
    """Threads ``arriving`` reach a ``bar.warp.sync``; returns the threads released (bool
    mask) or None. ``nb`` = (mask reader, None, False, this function)."""
    n = cta.nthreads
    if not arriving.any():
        return None
    masks = np.broadcast_to(np.asarray(nb[0](), dtype=np.uint32), (n,))
    state = cta.__dict__.setdefault("warp_sync", {})
    lanes = np.flatnonzero(arriving)
    if not state:  # the common case: one mask, every named live thread arrives now
        m0 = masks[lanes[0]]
        if not np.count_nonzero(masks[lanes] != m0):
            named = ((m0 >> cta.lane) & np.uint32(1)).astype(bool)
            if np.count_nonzero(named[lanes]) == len(lanes) and \
                    not np.count_nonzero(named & live & ~arriving):
                return arriving.copy()
    if not (((masks[lanes] >> cta.lane[lanes]) & np.uint32(1)).astype(bool)).all():
        k = int(lanes[np.argmin((masks[lanes] >> cta.lane[lanes]) & np.uint32(1))])
        raise Fault(LAUNCH_FAILED, f"bar.warp.sync: thread's member mask 0x{int(masks[k]):08x} "
                    f"does not name its own lane {int(cta.lane[k])}", k)
    released = None
    for w in np.unique(cta.warp[lanes]).tolist():
        base = 32 * w
        group = lanes[cta.warp[lanes] == w]
        mask = int(masks[group[0]])
        if (masks[group] != mask).any():
            k = int(group[np.argmax(masks[group] != mask)])
            raise Fault(LAUNCH_FAILED, f"bar.warp.sync: threads of warp {w} pass different member "
                        f"masks (0x{mask:08x} and 0x{int(masks[k]):08x})", k)
        st = state.get(w)
        if st is None:
            st = state[w] = [mask, np.zeros(32, bool)]
        elif st[0] != mask:
            raise Fault(LAUNCH_FAILED, f"bar.warp.sync: warp {w} waits with member mask "
                        f"0x{st[0]:08x}; thread arrives with 0x{mask:08x}", int(group[0]))
        st[1][group - base] = True
        named = ((np.uint32(mask) >> _LANES) & np.uint32(1)).astype(bool)
        present = np.zeros(32, bool)
        top = min(32, n - base)
        present[:top] = live[base:base + top]
        if (named & present & ~st[1]).any():
            continue
        del state[w]
        done = np.zeros(n, bool)
        done[base:base + top] = st[1][:top]
        released = done if released is None else (released | done)
    return released


def reset(cta) -> None:
    """A new CTA: no warp waits at a bar.warp.sync."""
    cta.warp_sync = {}


def decode_bar_red(instr, kc) -> Op:
    mods = set(instr.mods)
    op = next((m for m in ("popc", "and", "or") if m in mods), None)
    if op is None:
        raise Unsupported(f"{instr.full_opcode}: bar.red needs .popc, .and or .or")
    ops = instr.operands
    if len(ops) != 3:
        raise Unsupported(f"{instr.full_opcode}: only 'bar.red.op d, 0, {{!}}p' (barrier 0 without a "
                          "thread count) is supported")
    dst, bid, pred = ops
    if not (isinstance(bid, Imm) and bid.text.strip() == "0"):
        raise Unsupported(f"{instr.full_opcode}: only barrier 0 is supported for bar.red")
    if op == "popc" and "u32" not in mods:
        raise Unsupported(f"{instr.full_opcode}: bar.red.popc takes .u32")
    if op != "popc" and "pred" not in mods:
        raise Unsupported(f"{instr.full_opcode}: bar.red.{op} takes .pred")

    def bind(cta):
        rp = cta.reader(pred, "pred")
        put = cta.writer(dst, "u32" if op == "popc" else "pred")
        n = cta.nthreads

        def step(m):  # runs when the barrier releases: m = the CTA's live threads
            p = np.broadcast_to(np.asarray(rp(), dtype=bool), (n,))
            vals = p if m is None else p[m]
            if op == "popc":
                r = np.uint32(np.count_nonzero(vals))
            elif op == "and":
                r = np.bool_(vals.all())
            else:
                r = np.bool_(vals.any())
            put(np.full(n, r), m)
        return step
    return Op(bind, BARRIER)
