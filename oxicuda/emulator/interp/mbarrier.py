"""``mbarrier`` (init, arrive, arrive.expect_tx, arrive_drop, expect_tx, complete_tx, test_wait,
try_wait[.parity], inval), ``setmaxnreg`` (no-op) and ``elect.sync``.

The barrier lives where the program put it: in its 8 bytes of shared memory, encoded as
bits 0-20 pending arrivals of the current phase, 21-41 expected arrivals (the init count),
42-62 the transaction count (signed: a TMA may complete bytes before ``expect_tx`` announces
them), 63 the phase parity. A phase completes when its pending arrivals and its transaction
count both reach zero: the parity flips and the pending count resets to the expected count.
Words that do not decode (shared memory starts as 0xFF bytes; ``inval`` writes them) fault as
an uninitialized barrier.

``test_wait``/``try_wait`` return whether the phase named by the parity (or by the state token of
an earlier arrive) has completed. The emulator runs one CTA in order, lowest program counter
first, so a waiter polling a barrier that nothing can change any more would spin forever: after
``DEADLOCK_POLLS`` failed polls of an unchanged barrier word the launch faults as a deadlock.
"""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Addr, Imm
from .faults import LAUNCH_FAILED, Fault, Unsupported
from .memory import SHARED_WINDOW
from .registry import Op, register_handler
from .warp_groups import WARPGROUP, active_groups, require_arch

DEADLOCK_POLLS = 200
_MAX_COUNT = (1 << 20) - 1
_F21 = (1 << 21) - 1


def encode(pending: int, expected: int, tx: int, phase: int) -> int:
    return (pending & _F21) | ((expected & _F21) << 21) | ((tx & _F21) << 42) | ((phase & 1) << 63)


def decode(word: int) -> tuple[int, int, int, int]:
    """(pending, expected, tx, phase) of a barrier word."""
    tx = (word >> 42) & _F21
    if tx >= 1 << 20:
        tx -= 1 << 21
    return word & _F21, (word >> 21) & _F21, tx, (word >> 63) & 1


def _words(cta) -> np.ndarray:
    return cta.mem.shared.view(np.uint64)


def barrier_offsets(cta, instr, values, lanes) -> np.ndarray:
    """Shared offsets of the barriers addressed by ``values`` (shared-window or generic
    addresses); faults on misaligned or out-of-range ones."""
    v = np.asarray(values, dtype=np.uint64)
    if not any(m.split("::")[0] == "shared" for m in instr.mods):
        v = v - np.uint64(SHARED_WINDOW)
    lanes = np.asarray(lanes)
    bad = (v % np.uint64(8) != 0) | (v + np.uint64(8) > np.uint64(cta.mem.shared_size))
    if bad.any():
        k = int(np.argmax(bad))
        raise Fault(LAUNCH_FAILED if v[k] % np.uint64(8) == 0 else 716,
                    f"mbarrier at shared offset {int(v[k])}: must be 8-byte aligned inside the "
                    f"block's {cta.mem.shared_size} bytes of shared memory", int(lanes[k]), int(v[k]))
    return v


def _state(cta, off: int, lane: int) -> tuple[int, int, int, int]:
    word = int(_words(cta)[off // 8])
    pending, expected, tx, phase = decode(word)
    if expected == 0 or expected > _MAX_COUNT or pending > expected:
        raise Fault(LAUNCH_FAILED, f"mbarrier at shared offset {off} is not initialized (word "
                    f"0x{word:016x}); mbarrier.init it first", lane, off)
    return pending, expected, tx, phase


def _store(cta, off: int, pending: int, expected: int, tx: int, phase: int) -> None:
    if pending == 0 and tx == 0:  # the phase completes
        phase ^= 1
        pending = expected
    _words(cta)[off // 8] = np.uint64(encode(pending, expected, tx, phase))


def arrive_lanes(cta, offs, lanes, count: int | np.ndarray, tx: int | np.ndarray) -> np.ndarray:
    """Each lane (in order) adds its ``tx`` bytes and arrives ``count`` times on its barrier;
    returns each lane's state token (the parity of the phase it arrived in, in bit 63)."""
    lanes = np.asarray(lanes)
    counts = np.broadcast_to(np.asarray(count, dtype=np.int64), lanes.shape)
    txs = np.broadcast_to(np.asarray(tx, dtype=np.int64), lanes.shape)
    tokens = np.zeros(len(lanes), dtype=np.uint64)
    for j in range(len(lanes)):
        off, lane = int(offs[j]), int(lanes[j])
        pending, expected, txc, phase = _state(cta, off, lane)
        c = int(counts[j])
        if c > pending:
            raise Fault(LAUNCH_FAILED, f"mbarrier at shared offset {off}: {c} arrival(s) but only "
                        f"{pending} pending in the current phase (expected count {expected})", lane, off)
        tokens[j] = np.uint64(phase << 63 | off)
        _store(cta, off, pending - c, expected, txc + int(txs[j]), phase)
    return tokens


def complete_tx(cta, off: int, nbytes: int, lane: int = 0) -> None:
    """Transaction bytes arrived at the barrier at shared offset ``off`` (TMA, bulk copies)."""
    pending, expected, txc, phase = _state(cta, off, lane)
    _store(cta, off, pending, expected, txc - int(nbytes), phase)


def _lanes(cta, m):
    return cta.lanes_all if m is None else np.flatnonzero(m)


def _addr_operand(instr, op):
    if not isinstance(op, Addr):
        raise Unsupported(f"{instr.full_opcode}: expected a [barrier address] operand")
    return op


def _decode_mbarrier(instr, kc):
    mods = instr.mods
    kind = mods[0] if mods else ""
    if "b64" not in mods:
        raise Unsupported(f"{instr.full_opcode}: only .b64 barriers are emulated")
    ops = instr.operands
    min_sm = 90 if kind in ("expect_tx", "complete_tx", "try_wait") or "expect_tx" in mods else 80
    if kind == "try_wait" and "parity" not in mods:
        min_sm = 90
    require_arch(instr, kc, min_sm, f"mbarrier.{kind}")
    if kind == "init":
        return _bind_simple(instr, ops, kind)
    if kind == "inval":
        return _bind_simple(instr, ops, kind)
    if kind in ("expect_tx", "complete_tx"):
        return _bind_simple(instr, ops, kind)
    if kind in ("arrive", "arrive_drop"):
        if "noComplete" in mods:
            raise Unsupported(f"{instr.full_opcode}: .noComplete is not emulated")
        return _bind_arrive(instr, ops, kind == "arrive_drop", "expect_tx" in mods)
    if kind in ("test_wait", "try_wait"):
        return _bind_wait(instr, ops, "parity" in mods)
    raise Unsupported(f"{instr.full_opcode}: mbarrier.{kind} is not emulated")


def _bind_simple(instr, ops, kind):
    bar = _addr_operand(instr, ops[0])
    val = ops[1] if len(ops) > 1 else None

    def bind(cta):
        ba = cta.address(bar)
        rv = cta.reader(val, "u32") if val is not None else None
        n = cta.nthreads

        def step(m):
            lanes = _lanes(cta, m)
            offs = barrier_offsets(cta, instr, np.broadcast_to(ba(), (n,))[lanes], lanes)
            vals = np.broadcast_to(rv(), (n,))[lanes] if rv is not None else None
            for j in range(len(lanes)):
                off, lane = int(offs[j]), int(lanes[j])
                if kind == "init":
                    c = int(vals[j])
                    if not 1 <= c <= _MAX_COUNT:
                        raise Fault(LAUNCH_FAILED, f"mbarrier.init count {c}; allowed 1..{_MAX_COUNT}",
                                    lane, off)
                    _words(cta)[off // 8] = np.uint64(encode(c, c, 0, 0))
                elif kind == "inval":
                    _words(cta)[off // 8] = np.uint64(0xFFFFFFFFFFFFFFFF)
                elif kind == "expect_tx":
                    pending, expected, txc, phase = _state(cta, off, lane)
                    _words(cta)[off // 8] = np.uint64(encode(pending, expected, txc + int(vals[j]), phase))
                else:
                    complete_tx(cta, off, int(vals[j]), lane)
        return step
    return Op(bind)


def _bind_arrive(instr, ops, drop: bool, expect_tx: bool):
    state_op, bar = ops[0], _addr_operand(instr, ops[1])
    extra = ops[2] if len(ops) > 2 else None

    def bind(cta):
        ba = cta.address(bar)
        put = cta.writer(state_op, "b64")
        rx = cta.reader(extra, "u32") if extra is not None else None
        n = cta.nthreads

        def step(m):
            lanes = _lanes(cta, m)
            offs = barrier_offsets(cta, instr, np.broadcast_to(ba(), (n,))[lanes], lanes)
            x = np.broadcast_to(rx(), (n,))[lanes].astype(np.int64) if rx is not None else None
            count = 1 if (expect_tx or x is None) else x
            tx = x if expect_tx else 0
            if drop:
                for j in range(len(lanes)):
                    off = int(offs[j])
                    pending, expected, txc, phase = _state(cta, off, int(lanes[j]))
                    c = int(np.broadcast_to(count, lanes.shape)[j])
                    _words(cta)[off // 8] = np.uint64(encode(pending, max(expected - c, 0), txc, phase))
            tokens = arrive_lanes(cta, offs, lanes, count, tx)
            full = np.zeros(n, dtype=np.uint64)
            full[lanes] = tokens
            put(full, m)
        return step
    return Op(bind)


def _bind_wait(instr, ops, parity: bool):
    dst, bar, ref = ops[0], _addr_operand(instr, ops[1]), ops[2]

    def bind(cta):
        ba = cta.address(bar)
        rr = cta.reader(ref, "u32" if parity else "b64")
        put = cta.writer(dst, "pred")
        n = cta.nthreads

        def step(m):
            lanes = _lanes(cta, m)
            offs = barrier_offsets(cta, instr, np.broadcast_to(ba(), (n,))[lanes], lanes)
            want = np.broadcast_to(rr(), (n,))[lanes]
            want = (want & 1) if parity else (want.astype(np.uint64) >> np.uint64(63))
            done = np.zeros(n, dtype=bool)
            for off in np.unique(offs):
                sel = offs == off
                _, _, _, phase = _state(cta, int(off), int(lanes[sel][0]))
                done[lanes[sel]] = want[sel].astype(np.int64) != phase
            if not done[lanes].all():
                _note_failed_poll(cta, offs[~done[lanes]], lanes[~done[lanes]])
            put(done, m)
        return step
    return Op(bind)


def _note_failed_poll(cta, offs, lanes) -> None:
    polls = getattr(cta, "_oxicuda_mbar_polls", None)
    owner = (tuple(int(c) for c in cta.ctaid), cta.mem.params)
    if polls is None or polls[0][0] != owner[0] or polls[0][1] is not owner[1]:
        polls = (owner, {})
        cta._oxicuda_mbar_polls = polls
    table = polls[1]
    off = int(offs[0])
    word = int(_words(cta)[off // 8])
    last = table.get(off)
    count = last[1] + 1 if last is not None and last[0] == word else 1
    table[off] = (word, count)
    if count >= DEADLOCK_POLLS:
        del table[off]
        pending, expected, tx, phase = decode(word)
        raise Fault(LAUNCH_FAILED, f"deadlock: threads wait on the mbarrier at shared offset {off} "
                    f"for phase parity {phase}, which never completes ({pending} of {expected} "
                    f"arrivals and {tx} transaction bytes outstanding after {count} polls with no "
                    "change; the emulator runs the lowest program counter first, so a producer "
                    "placed after the waiting code cannot run while it spins)", int(lanes[0]), off)


# -- setmaxnreg, elect ---------------------------------------------------------------------------
def _decode_setmaxnreg(instr, kc):
    require_arch(instr, kc, 90, "setmaxnreg", arch_a=True)
    if not instr.operands or not isinstance(instr.operands[0], Imm):
        raise Unsupported(f"{instr.full_opcode}: needs an immediate register count")
    count = int(instr.operands[0].text, 0)
    if not 24 <= count <= 256 or count % 8:
        raise Unsupported(f"{instr.full_opcode}: register count {count}; allowed 24..256, multiple of 8")

    def bind(cta):
        def step(m):  # registers are not a limited resource here: only the warpgroup rule holds
            active_groups(cta, m, WARPGROUP, "setmaxnreg")
        return step
    return Op(bind)


def _decode_elect(instr, kc):
    require_arch(instr, kc, 90, "elect.sync")
    dst, mask = instr.operands
    names = dst.name.split("|") if hasattr(dst, "name") else ["_"]

    def bind(cta):
        from ...ptx.ir import Reg, Sym

        rm = cta.reader(mask, "u32")
        outs = [Sym("_") if nm == "_" else Reg(nm) for nm in names]
        put_r = cta.writer(outs[0], "b32")
        put_p = cta.writer(outs[1], "pred") if len(outs) > 1 else None
        n = cta.nthreads

        def step(m):
            active = np.ones(n, bool) if m is None else m
            mm = np.broadcast_to(np.asarray(rm(), dtype=np.uint32), (n,))
            leader = np.zeros(n, dtype=np.uint32)
            is_leader = np.zeros(n, dtype=bool)
            for w in np.unique(cta.warp[active]):
                sel = np.flatnonzero(active & (cta.warp == w))
                named = [t for t in sel if (int(mm[t]) >> int(cta.lane[t])) & 1]
                if named:
                    leader[sel] = cta.lane[named[0]]
                    is_leader[named[0]] = True
            put_r(leader, m)
            if put_p is not None:
                put_p(is_leader, m)
        return step
    return Op(bind)


register_handler("mbarrier", _decode_mbarrier)
register_handler("setmaxnreg", _decode_setmaxnreg)
try:
    register_handler("elect", _decode_elect)
except ValueError:  # the core may own elect.sync one day
    pass
