"""Control flow, barriers and ordering: bra, ret, exit, bar/barrier, membar/fence, trap."""

from __future__ import annotations

from ...ptx.ir import Imm, Sym
from .barrier_ops import decode_bar_red, decode_warp_sync
from .faults import LAUNCH_FAILED, Fault, Unsupported
from .registry import BARRIER, BRANCH, EXIT, Op, register_handler


def _bra(instr, kc):
    if len(instr.operands) != 1 or not isinstance(instr.operands[0], Sym):
        raise Unsupported(f"{instr.full_opcode}: only 'bra label' is supported")
    return Op(None, BRANCH, label=instr.operands[0].name, uniform="uni" in instr.mods)


def _exit(instr, kc):
    return Op(None, EXIT)


def _bar(instr, kc):
    mods = set(instr.mods)
    if "red" in mods:
        return decode_bar_red(instr, kc)
    if "warp" in mods:
        return decode_warp_sync(instr, kc)
    ops = instr.operands
    if not ops or len(ops) > 2:
        raise Unsupported(f"{instr.full_opcode}: expected 'bar.sync id[, count]'")
    arrive = "arrive" in mods
    count = ops[1] if len(ops) > 1 else None
    if arrive and count is None:
        raise Unsupported(f"{instr.full_opcode}: bar.arrive needs a thread count")
    if not arrive and count is None and isinstance(ops[0], Imm) and ops[0].text == "0":
        return Op(None, BARRIER)  # the whole CTA: the run loop's own rule
    return Op(None, BARRIER, barrier=(ops[0], count, arrive))


def _noop(instr, kc):
    return Op(lambda cta: (lambda m: None))


def _trap(instr, kc):
    def bind(cta):
        def trap(m):
            raise Fault(LAUNCH_FAILED, "trap instruction executed")
        return trap
    return Op(bind)


register_handler("bra", _bra)
register_handler("ret", _exit)
register_handler("exit", _exit)
register_handler("bar", _bar)
register_handler("barrier", _bar)
for _n in ("membar", "fence", "nanosleep", "prefetch", "prefetchu", "pmevent", "griddepcontrol"):
    register_handler(_n, _noop)
register_handler("trap", _trap)
