"""Control flow, barriers and ordering: bra, ret, exit, bar/barrier, membar/fence, trap."""

from __future__ import annotations

from ..ir import Imm, Sym
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
    if instr.opcode == "bar" and mods & {"arrive", "red"} or "arrive" in mods or "red" in mods:
        raise Unsupported(f"{instr.full_opcode}: only bar.sync / barrier.sync are supported")
    ops = instr.operands
    if ops and not (isinstance(ops[0], Imm) and ops[0].text == "0"):
        raise Unsupported(f"{instr.full_opcode}: only barrier 0 is supported (named barriers are not)")
    count = ops[1] if len(ops) > 1 else None

    def bind(cta):
        if count is None:
            return None
        rc = cta.reader(count, "u32")

        def check(mask):
            want = int(rc())
            if want != cta.nthreads:
                raise Fault(LAUNCH_FAILED, f"bar.sync with a thread count of {want}; the emulator "
                                           f"supports only the whole CTA ({cta.nthreads})")
        return check
    return Op(bind if count is not None else None, BARRIER)


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
