"""Loops that wait for another CTA poll with strong loads.

A loop that reloads one address until another CTA changes it (a ready flag, a look-back status
word) must read it with ``ld.volatile``, ``ld.relaxed.<scope>`` or ``ld.acquire.<scope>``. A
cache operator (``ld.global.cv``) only hints at a weak load, which ptxas may hoist out of the loop
or, where the value feeds nothing but the loop's branch, delete with the loop: it did for the
SpTRSV waits, and on the H200 every row read x[c] before it was written. The emulator runs CTAs
one at a time in ticket order, so a wait there never spins and such a kernel passes; hence this
check of the PTX itself, over every registered configuration of the families that wait across
CTAs.
"""

from __future__ import annotations

import pytest

from oxicuda.ptx import registry
from oxicuda.ptx.ir import Addr, Block, Instr, Label, Reg, Vec
from oxicuda.ptx.parse import parse

STRONG = {"volatile", "relaxed", "acquire"}
WAITING_FAMILIES = ("sparse_sptrsv", "prim_scan", "prim_onesweep")


def _flat(body):
    for s in body:
        if isinstance(s, Block):
            yield from _flat(s.body)
        else:
            yield s


def _regs(op) -> set[str]:
    if isinstance(op, Reg):
        return {op.name.lstrip("!")}
    if isinstance(op, Addr):
        return _regs(op.base) | (_regs(op.index) if op.index is not None else set())
    if isinstance(op, Vec):
        return set().union(*(_regs(o) for o in op.items)) if op.items else set()
    return set()


def _writes(ins: Instr) -> set[str]:
    if ins.opcode in ("st", "red", "bra", "ret", "exit", "bar", "barrier", "membar", "fence") \
            or not ins.operands:
        return set()
    return {r for name in _regs(ins.operands[0]) for r in name.split("|")}


def _reads(ins: Instr) -> set[str]:
    ops = ins.operands if not _writes(ins) else ins.operands[1:]
    out = set().union(*(_regs(o) for o in ops)) if ops else set()
    return out | ({ins.pred.reg.name} if ins.pred is not None else set())


def weak_polls(ptx: str) -> list[str]:
    """Each weak load that a backward branch waits on: in the loop, at an address that does not
    change from one iteration to the next, feeding the branch's predicate."""
    found = []
    for fn in parse(ptx).functions:
        body = [s for s in _flat(fn.body) if isinstance(s, (Instr, Label))]
        labels = {s.name: k for k, s in enumerate(body) if isinstance(s, Label)}
        for k, br in enumerate(body):
            if not (isinstance(br, Instr) and br.opcode == "bra" and br.pred is not None):
                continue
            start = labels.get(getattr(br.operands[0], "name", None))
            if start is None or start > k:
                continue
            loop = [s for s in body[start + 1:k] if isinstance(s, Instr)]
            # registers whose value may differ between iterations: what memory reads and
            # atomics give, and everything computed from them (to a fixed point: the loop
            # carries values around its back edge)
            variant: set[str] = set()
            while True:
                before = len(variant)
                for ins in loop:
                    if ins.opcode in ("ld", "atom", "shfl", "vote", "redux") or _reads(ins) & variant:
                        variant |= _writes(ins)
                if len(variant) == before:
                    break
            wanted = {br.pred.reg.name}
            for ins in reversed(loop):
                if not _writes(ins) & wanted:
                    continue
                wanted |= _reads(ins)
                if ins.opcode == "ld" and not STRONG & set(ins.mods) \
                        and not {"shared", "local", "param", "const"} & set(ins.mods) \
                        and not _regs(ins.operands[1]) & variant:
                    found.append(f"{fn.name}: {ins.full_opcode} polled by the loop at {body[start].name}")
    return found


def test_the_check_finds_a_weak_poll_and_passes_a_strong_one():
    bad = """
.version 7.8
.target sm_90
.address_size 64
.visible .entry k(.param .u64 f)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [f];
$L_wait:
    add.u64 %rd2, %rd1, 4;
    ld.global.cv.u32 %r1, [%rd2];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $L_wait;
    ret;
}
"""
    assert weak_polls(bad) == ["k: ld.global.cv.u32 polled by the loop at $L_wait"]
    assert weak_polls(bad.replace("ld.global.cv.u32", "ld.acquire.gpu.global.u32")) == []
    assert weak_polls(bad.replace("ld.global.cv.u32", "ld.relaxed.gpu.global.u32")) == []
    # a search whose next address comes from the value it loaded is not a poll
    search = bad.replace("add.u64 %rd2, %rd1, 4;", "cvt.u64.u32 %rd2, %r1;").replace(
        "ld.global.cv.u32 %r1, [%rd2];", "ld.global.u32 %r1, [%rd2];")
    assert weak_polls(search) == []


@pytest.mark.parametrize("family", WAITING_FAMILIES)
@pytest.mark.parametrize("arch", ["sm_86", "sm_90"])
def test_every_cross_cta_wait_polls_with_a_strong_load(family, arch):
    registry.load_all_families()
    specs = registry.configurations(arch, family)
    assert specs
    for spec in specs:
        assert weak_polls(registry.generate_ptx(spec)) == [], spec


def test_builder_writes_strong_loads_and_stores_and_refuses_hints_on_them():
    from oxicuda.ptx.builder import KernelBuilder

    kb = KernelBuilder("k", arch="sm_90")
    p = kb.param_ptr("p")
    v = kb.ld("global", "u32", p, sem="acquire")
    kb.ld("global", "f64", p, offset=8, sem="relaxed", scope="sys")
    kb.ld("shared", "u32", kb.shared_addr(kb.shared("s", "u32", 4)), sem="volatile")
    kb.st("global", p, v, sem="release")
    kb.st("global", p, v, offset=4, sem="relaxed", scope="cta")
    text = kb.ptx()
    for want in ("ld.acquire.gpu.global.u32", "ld.relaxed.sys.global.f64", "ld.volatile.shared.u32",
                 "st.release.gpu.global.u32", "st.relaxed.cta.global.u32"):
        assert want in text
    with pytest.raises(ValueError, match="sem='release'"):
        kb.ld("global", "u32", p, sem="release")
    with pytest.raises(ValueError, match="no cache operator"):
        kb.ld("global", "u32", p, sem="acquire", cache="cv")
    with pytest.raises(ValueError, match="scope="):
        kb.st("global", p, v, sem="release", scope="device")
    with pytest.raises(ValueError, match="space"):
        kb.ld("param", "u32", p, sem="acquire")
