"""Onesweep LSD radix sort (8-bit digits): one upfront histogram of every pass, then one kernel
per pass that ranks, finds its global offsets by decoupled look-back and scatters.

Family ``prim_onesweep``:

1. stage ``hist``: every CTA counts the digits of all passes of its tile in shared memory and
   adds them to the global per-pass histograms (``red.add``); one read of the keys for all passes;
2. stage ``scatter`` (one launch per pass): CTAs take tiles by an atomic ticket; the tile is
   sorted stably by the pass's 8-bit digit in shared memory (two local 4-bit counting passes over
   u16 slot numbers; the keys stay where they were staged), the 256 digit counts of the tile are
   published per digit with a 2-bit status (aggregate / inclusive prefix) in a 32-bit word and
   each digit's thread looks back over the predecessors' words; the global position of sorted
   element j of digit d is ``hist_excl[d] + prefix[d] + j - tile_start[d]``. Values are read at
   their original positions and written beside their keys.

The status words hold 30-bit counts, so a onesweep sort takes at most 2^30 - 1 keys (the
classic ``prim_radix`` sort takes longer inputs). Digits are taken from the same order-preserving
key image as ``prim_radix`` (``radix.digit_of``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from . import common as C
from .radix import KEYS, VALUE_BYTES, _load_bits, _store_bits, digit_of

DIGIT_BITS = 8
DIGITS = 1 << DIGIT_BITS
THREADS, ITEMS = 256, 8
TILE = THREADS * ITEMS
MAX_KEYS = (1 << 30) - 1
AGGREGATE, INCLUSIVE, VALUE_MASK = 1 << 30, 2 << 30, (1 << 30) - 1


@dataclass(frozen=True)
class OnesweepSpec(KernelSpec):
    family: ClassVar[str] = "prim_onesweep"
    key_type: str = "uint32"
    descending: bool = False
    value_bytes: int = 0
    stage: str = "scatter"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.key_type not in KEYS or self.value_bytes not in VALUE_BYTES or self.stage not in ("hist", "scatter"):
            raise ValueError(f"OnesweepSpec: key_type={self.key_type!r} value_bytes={self.value_bytes} "
                             f"stage={self.stage!r}")
        if self.stage == "hist" and self.value_bytes:
            raise ValueError("OnesweepSpec: the hist stage takes no values")


def _hist(kb: KernelBuilder, spec: OnesweepSpec) -> None:
    """(keys, n, hist u32[passes * 256], begin_bit, end_bit, passes)"""
    keys, n, hist = kb.param_ptr("keys"), kb.param("n", "u32"), kb.param_ptr("hist")
    begin, end, passes = kb.param("begin_bit", "u32"), kb.param("end_bit", "u32"), kb.param("passes", "u32")
    ksz = KEYS[spec.key_type][0] // 8
    maxp = -(-KEYS[spec.key_type][0] // DIGIT_BITS)
    counts = kb.shared("counts", "u32", maxp * DIGITS)
    ca = kb.shared_addr(counts)
    tid = kb.tid()
    for p in range(maxp):
        kb.st("shared", kb.addr(ca, tid, 4), 0, type_="u32", offset=p * DIGITS * 4)
    kb.bar_sync(0)
    base = kb.mul(kb.ctaid(), TILE)
    for k in range(ITEMS):
        idx = kb.add(kb.add(base, k * THREADS), tid)
        with kb.if_(kb.setp("lt", idx, n)):
            key = _load_bits(kb, ksz, kb.addr(keys, idx, ksz))
            with kb.loop(0, passes, 1, type_="u32") as p:
                shift = kb.add(begin, kb.mul(p, DIGIT_BITS))
                width = kb.min(kb.sub(end, shift), DIGIT_BITS)
                mask = kb.sub(kb.shl(kb.mov(1, "u32"), width), 1)
                d = digit_of(kb, spec, key, shift, mask)
                kb.red("shared", "add", "u32", kb.addr(ca, kb.mad(p, DIGITS, d), 4), 1)
    kb.bar_sync(0)
    with kb.loop(0, passes, 1, type_="u32") as p:
        slot = kb.mad(p, DIGITS, tid)
        c = kb.ld("shared", "u32", kb.addr(ca, slot, 4))
        with kb.if_(kb.setp("ne", c, 0)):
            kb.red("global", "add", "u32", kb.addr(hist, slot, 4), c)


def _scatter(kb: KernelBuilder, spec: OnesweepSpec) -> None:
    """(keys_in, keys_out, vals_in, vals_out, n, hist u32[256] of this pass, status u32[tiles * 256],
    counter, shift, mask)"""
    keys_in, keys_out = kb.param_ptr("keys_in"), kb.param_ptr("keys_out")
    vals_in, vals_out = kb.param_ptr("vals_in"), kb.param_ptr("vals_out")
    n, hist = kb.param("n", "u32"), kb.param_ptr("hist")
    status, counter = kb.param_ptr("status"), kb.param_ptr("counter")
    shift, mask = kb.param("shift", "u32"), kb.param("mask", "u32")
    T, I = THREADS, ITEMS
    ksz, vsz = KEYS[spec.key_type][0] // 8, spec.value_bytes
    warps = T // 32
    keybuf = kb.shared("keybuf", "u64" if ksz == 8 else "u32", -(-TILE * ksz // (8 if ksz == 8 else 4)))
    slots_a = kb.shared("slots_a", "u16", TILE)
    slots_b = kb.shared("slots_b", "u16", TILE)
    counts = kb.shared("counts", "u32", 16 * T)
    cnt8 = kb.shared("cnt8", "u32", DIGITS)
    bases = kb.shared("bases", "u32", DIGITS)
    scratch = kb.shared("scratch", "u32", warps + 1)
    ticket = kb.shared("ticket", "u32", 1)
    tid = kb.tid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    with kb.if_(kb.setp("eq", tid, 0)):
        kb.st("shared", ticket, kb.atom("global", "add", "u32", counter, 1))
    kb.st("shared", kb.addr(kb.shared_addr(cnt8), tid, 4), 0, type_="u32")
    kb.bar_sync(0)
    tile = kb.ld("shared", "u32", ticket)
    base = kb.mul(tile, TILE)
    valid = kb.min(kb.sub(n, base), TILE)
    kba, cna = kb.shared_addr(keybuf), kb.shared_addr(counts)
    for k in range(I):
        j = kb.add(tid, k * T)
        with kb.if_(kb.setp("lt", j, valid)):
            _store_bits(kb, ksz, kb.addr(kba, j, ksz), _load_bits(kb, ksz, kb.addr(keys_in, kb.add(base, j), ksz)))
    kb.bar_sync(0)

    def digit8(s):
        return digit_of(kb, spec, _load_bits(kb, ksz, kb.addr(kba, s, ksz)), shift, mask)

    def local_pass(src, dst, sub: int) -> None:
        for d in range(16):
            kb.st("shared", kb.addr(cna, tid, 4), 0, type_="u32", offset=d * T * 4)
        mine = kb.mul(tid, I)
        items = []
        for k in range(I):
            j = kb.add(mine, k)
            ok = kb.setp("lt", j, valid)
            s = kb.mov(0, "u32")
            d4 = kb.mov(0, "u32")
            with kb.if_(ok):
                kb.assign(s, j if src is None else kb.cvt(kb.ld("shared", "u16", kb.addr(kb.shared_addr(src), j, 2)), "u32"))
                d8 = digit8(s)
                if sub == 0:
                    kb.red("shared", "add", "u32", kb.addr(kb.shared_addr(cnt8), d8, 4), 1)
                kb.assign(d4, kb.and_(kb.shr(d8, sub), 15))
                slot = kb.addr(cna, kb.mad(d4, T, tid), 4)
                kb.st("shared", slot, kb.add(kb.ld("shared", "u32", slot), 1))
            items.append((ok, s, d4))
        kb.bar_sync(0)
        run = kb.addr(cna, kb.mul(tid, 16), 4)
        part = [kb.ld("shared", "u32", run, offset=4 * e) for e in range(16)]
        total = part[0]
        for e in range(1, 16):
            total = kb.add(total, part[e])
        excl, _ = C.block_exclusive_scan(kb, "sum", total, scratch, warps, warp, lane, 0)
        acc = kb.mov(excl)
        for e in range(16):
            kb.st("shared", run, acc, offset=4 * e)
            kb.add(acc, part[e], out=acc)
        kb.bar_sync(0)
        for ok, s, d4 in items:
            with kb.if_(ok):
                slot = kb.addr(cna, kb.mad(d4, T, tid), 4)
                pos = kb.ld("shared", "u32", slot)
                kb.st("shared", slot, kb.add(pos, 1))
                kb.st("shared", kb.addr(kb.shared_addr(dst), pos, 2), kb.cvt(s, "u16"))
        kb.bar_sync(0)

    local_pass(None, slots_b, 0)
    local_pass(slots_b, slots_a, 4)
    # tile digit starts and the pass's global digit starts, one digit per thread (T == DIGITS)
    c = kb.ld("shared", "u32", kb.addr(kb.shared_addr(cnt8), tid, 4))
    tile_start, _ = C.block_exclusive_scan(kb, "sum", c, scratch, warps, warp, lane, 0)
    g = kb.ld("global", "u32", kb.addr(hist, tid, 4))
    hist_excl, _ = C.block_exclusive_scan(kb, "sum", g, scratch, warps, warp, lane, 0)
    word = kb.addr(status, kb.mad(tile, DIGITS, tid), 4)
    prefix = kb.mov(0, "u32")
    with kb.if_(kb.setp("eq", tile, 0)):
        kb.st("global", word, kb.or_(c, INCLUSIVE), sem="relaxed")
    with kb.else_():
        kb.st("global", word, kb.or_(c, AGGREGATE), sem="relaxed")
        j = kb.sub(tile, 1)
        look = kb.label("look")
        w = kb.ld("global", "u32", kb.addr(status, kb.mad(j, DIGITS, tid), 4), sem="relaxed")
        kb.bra(look, kb.setp("eq", w, 0))
        kb.add(prefix, kb.and_(w, VALUE_MASK), out=prefix)
        more = kb.setp("eq", kb.and_(w, INCLUSIVE), 0)
        with kb.if_(more):
            kb.sub(j, 1, out=j)
        kb.bra(look, more)
        kb.st("global", word, kb.or_(kb.add(prefix, c), INCLUSIVE), sem="relaxed")
    kb.st("shared", kb.addr(kb.shared_addr(bases), tid, 4), kb.sub(kb.add(hist_excl, prefix), tile_start))
    kb.bar_sync(0)
    for k in range(I):
        j = kb.add(tid, k * T)
        with kb.if_(kb.setp("lt", j, valid)):
            s = kb.cvt(kb.ld("shared", "u16", kb.addr(kb.shared_addr(slots_a), j, 2)), "u32")
            key = _load_bits(kb, ksz, kb.addr(kba, s, ksz))
            d = digit_of(kb, spec, key, shift, mask)
            pos = kb.add(kb.ld("shared", "u32", kb.addr(kb.shared_addr(bases), d, 4)), j)
            _store_bits(kb, ksz, kb.addr(keys_out, pos, ksz), key)
            if vsz:
                v = _load_bits(kb, vsz, kb.addr(vals_in, kb.add(base, s), vsz))
                _store_bits(kb, vsz, kb.addr(vals_out, pos, vsz), v)


def generate_onesweep(spec: OnesweepSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(THREADS)
    (_hist if spec.stage == "hist" else _scatter)(kb, spec)
    return kb.ptx()


def onesweep_configurations(arch: str) -> list[OnesweepSpec]:
    out = []
    for key in KEYS:
        for desc in (False, True):
            out.append(OnesweepSpec(arch=arch, key_type=key, descending=desc, stage="hist"))
            out += [OnesweepSpec(arch=arch, key_type=key, descending=desc, value_bytes=vb) for vb in VALUE_BYTES]
    return out


registry.register_family(OnesweepSpec.family, OnesweepSpec, generate_onesweep, onesweep_configurations)
