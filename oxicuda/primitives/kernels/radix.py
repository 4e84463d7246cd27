"""LSD radix sort passes: a per-tile digit histogram and a stable per-tile scatter.

One pass sorts by ``RADIX_BITS`` bits at bit ``shift`` (a kernel parameter, so one kernel of a
key type serves every pass):

1. ``prim_radix`` stage ``hist``: each CTA counts the digits of its tile into
   ``hist[digit * tiles + tile]`` (digit-major, so that one exclusive scan of the whole table
   gives every (digit, tile) its first output position);
2. the device-wide exclusive scan (``prim_scan``) of that table;
3. stage ``scatter``: each CTA ranks its tile's keys stably in shared memory (per-thread digit
   counters in digit-major order, one CTA-wide exclusive scan of them), writes the tile sorted
   into shared memory, then stores it to its global positions with consecutive threads writing
   consecutive positions of each digit run. Values follow their keys.

Keys are moved as raw bits; the digit is taken from the key's order-preserving image: signed
integers flip the sign bit, floats flip every bit when negative and the sign bit otherwise
(-0.0 sorts before +0.0, NaN with the sign bit clear after +inf), and descending inverts all
bits, so equal keys keep their input order in both directions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from . import common as C

RADIX_BITS = 4
DIGITS = 1 << RADIX_BITS
#: key dtype -> (bits, kind)
KEYS = {"uint8": (8, "u"), "int8": (8, "s"), "uint16": (16, "u"), "int16": (16, "s"),
        "uint32": (32, "u"), "int32": (32, "s"), "float32": (32, "f"),
        "uint64": (64, "u"), "int64": (64, "s"), "float64": (64, "f")}
#: value sizes carried by the scatter itself (1- and 2-byte values go through argsort + gather)
VALUE_BYTES = (0, 4, 8)
STAGES = ("hist", "scatter")
THREADS, ITEMS = 256, 8
TILE = THREADS * ITEMS
_MEM = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}


@dataclass(frozen=True)
class RadixSpec(KernelSpec):
    family: ClassVar[str] = "prim_radix"
    key_type: str = "uint32"
    descending: bool = False
    value_bytes: int = 0
    stage: str = "scatter"
    threads: int = THREADS
    items: int = ITEMS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.key_type not in KEYS:
            raise ValueError(f"RadixSpec: key_type={self.key_type!r}; allowed {tuple(KEYS)}")
        if self.value_bytes not in VALUE_BYTES or self.stage not in STAGES:
            raise ValueError(f"RadixSpec: value_bytes={self.value_bytes} stage={self.stage!r}")
        if self.stage == "hist" and self.value_bytes:
            raise ValueError("RadixSpec: the hist stage takes no values (value_bytes=0)")


def _load_bits(kb: KernelBuilder, nbytes: int, addr: Value) -> Value:
    """A 1/2/4/8-byte element as u32 (u64 for 8 bytes)."""
    v = kb.ld("global" if addr.type == "u64" else "shared", _MEM[nbytes], addr)
    return kb.cvt(v, "u32") if v.type == "u16" else v


def _store_bits(kb: KernelBuilder, nbytes: int, addr: Value, v: Value) -> None:
    space = "global" if addr.type == "u64" else "shared"
    if nbytes == 2:
        v = kb.cvt(v, "u16")
    kb.st(space, addr, v, type_=_MEM[nbytes])


def digit_of(kb: KernelBuilder, spec: RadixSpec, key: Value, shift: Value, mask: Value) -> Value:
    """The u32 digit of ``key`` (raw bits) at ``shift`` under ``mask``, in sort order."""
    bits, kind = KEYS[spec.key_type]
    wide = bits == 64
    t = "u64" if wide else "u32"
    all_ones = (1 << bits) - 1
    sign = 1 << (bits - 1)
    k = key
    if kind == "s":
        k = kb.xor(k, sign, type_=t)
    elif kind == "f":
        neg = kb.setp("ne", kb.and_(k, sign, type_=t), 0, type_=t)
        k = kb.xor(k, kb.selp(all_ones, sign, neg, type_=t), type_=t)
    if spec.descending:
        k = kb.xor(k, all_ones, type_=t)
    d = kb.shr(k, shift)
    if wide:
        d = kb.cvt(d, "u32")
    return kb.and_(d, mask)


def generate_radix(spec: RadixSpec) -> str:
    """hist params (keys, n, hist, shift, mask, tiles); scatter params (keys_in, keys_out,
    vals_in, vals_out, n, offsets, shift, mask, tiles)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    T, I = spec.threads, spec.items
    tile = T * I
    C.launch_bounds(kb, T)
    ksz = KEYS[spec.key_type][0] // 8
    vsz = spec.value_bytes
    if spec.stage == "hist":
        keys, n, hist = kb.param_ptr("keys"), kb.param("n", "u32"), kb.param_ptr("hist")
        shift, mask, tiles = kb.param("shift", "u32"), kb.param("mask", "u32"), kb.param("tiles", "u32")
        counts = kb.shared("counts", "u32", DIGITS)
        tid, b = kb.tid(), kb.ctaid()
        small = kb.setp("lt", tid, DIGITS)
        with kb.if_(small):
            kb.st("shared", kb.addr(kb.shared_addr(counts), tid, 4), 0, type_="u32")
        kb.bar_sync(0)
        base = kb.mul(b, tile)
        for k in range(I):
            idx = kb.add(kb.add(base, k * T), tid)
            with kb.if_(kb.setp("lt", idx, n)):
                d = digit_of(kb, spec, _load_bits(kb, ksz, kb.addr(keys, idx, ksz)), shift, mask)
                kb.red("shared", "add", "u32", kb.addr(kb.shared_addr(counts), d, 4), 1)
        kb.bar_sync(0)
        with kb.if_(small):
            c = kb.ld("shared", "u32", kb.addr(kb.shared_addr(counts), tid, 4))
            kb.st("global", kb.addr(hist, kb.mad(tid, tiles, b), 4), c)
        return kb.ptx()

    keys_in, keys_out = kb.param_ptr("keys_in"), kb.param_ptr("keys_out")
    vals_in, vals_out = kb.param_ptr("vals_in"), kb.param_ptr("vals_out")
    n, offsets = kb.param("n", "u32"), kb.param_ptr("offsets")
    shift, mask, tiles = kb.param("shift", "u32"), kb.param("mask", "u32"), kb.param("tiles", "u32")
    warps = T // 32
    esz = max(ksz, vsz)
    buf = kb.shared("buf", "u64" if esz == 8 else "u32", -(-tile * esz // (8 if esz == 8 else 4)))
    counts = kb.shared("counts", "u32", DIGITS * T)
    bases = kb.shared("bases", "u32", DIGITS)
    scratch = kb.shared("scratch", "u32", warps + 1)
    tid, b = kb.tid(), kb.ctaid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    base = kb.mul(b, tile)
    valid = kb.min(kb.sub(n, base), tile)
    bufa = kb.shared_addr(buf)
    cnta = kb.shared_addr(counts)

    def stage_striped(src: Value, nbytes: int) -> None:
        for k in range(I):
            j = kb.add(tid, k * T)
            with kb.if_(kb.setp("lt", j, valid)):
                v = _load_bits(kb, nbytes, kb.addr(src, kb.add(base, j), nbytes))
                _store_bits(kb, nbytes, kb.addr(bufa, j, nbytes), v)

    stage_striped(keys_in, ksz)
    for d in range(DIGITS):
        kb.st("shared", kb.addr(cnta, tid, 4), 0, type_="u32", offset=d * T * 4)
    kb.bar_sync(0)
    mine = kb.mul(tid, I)
    keyv, digv, okv = [], [], []
    for k in range(I):
        j = kb.add(mine, k)
        ok = kb.setp("lt", j, valid)
        key = kb.mov(0, "u64" if ksz == 8 else "u32")
        dig = kb.mov(0, "u32")
        with kb.if_(ok):
            kb.assign(key, _load_bits(kb, ksz, kb.addr(bufa, j, ksz)))
            kb.assign(dig, digit_of(kb, spec, key, shift, mask))
            slot = kb.addr(cnta, kb.mad(dig, T, tid), 4)
            kb.st("shared", slot, kb.add(kb.ld("shared", "u32", slot), 1))
        keyv.append(key)
        digv.append(dig)
        okv.append(ok)
    kb.bar_sync(0)
    # CTA-wide exclusive scan of the DIGITS*T counters, DIGITS consecutive ones per thread
    run = kb.addr(cnta, kb.mul(tid, DIGITS), 4)
    part = [kb.ld("shared", "u32", run, offset=4 * e) for e in range(DIGITS)]
    total = part[0]
    for e in range(1, DIGITS):
        total = kb.add(total, part[e])
    excl, _ = C.block_exclusive_scan(kb, "sum", total, scratch, warps, warp, lane, 0)
    acc = kb.mov(excl)
    for e in range(DIGITS):
        kb.st("shared", run, acc, offset=4 * e)
        kb.add(acc, part[e], out=acc)
    kb.bar_sync(0)
    with kb.if_(kb.setp("lt", tid, DIGITS)):
        start = kb.ld("shared", "u32", kb.addr(cnta, kb.mul(tid, T), 4))
        first = kb.ld("global", "u32", kb.addr(offsets, kb.mad(tid, tiles, b), 4))
        kb.st("shared", kb.addr(kb.shared_addr(bases), tid, 4), kb.sub(first, start))
    kb.bar_sync(0)
    local = []
    for k in range(I):
        pos = kb.mov(0, "u32")
        with kb.if_(okv[k]):
            slot = kb.addr(cnta, kb.mad(digv[k], T, tid), 4)
            kb.assign(pos, kb.ld("shared", "u32", slot))
            kb.st("shared", slot, kb.add(pos, 1))
            _store_bits(kb, ksz, kb.addr(bufa, pos, ksz), keyv[k])
        local.append(pos)
    kb.bar_sync(0)
    gpos = []
    for k in range(I):
        j = kb.add(tid, k * T)
        g = kb.mov(0, "u32")
        with kb.if_(kb.setp("lt", j, valid)):
            key = _load_bits(kb, ksz, kb.addr(bufa, j, ksz))
            d = digit_of(kb, spec, key, shift, mask)
            kb.assign(g, kb.add(kb.ld("shared", "u32", kb.addr(kb.shared_addr(bases), d, 4)), j))
            _store_bits(kb, ksz, kb.addr(keys_out, g, ksz), key)
        gpos.append(g)
    if vsz:
        kb.bar_sync(0)
        stage_striped(vals_in, vsz)
        kb.bar_sync(0)
        vals = []
        for k in range(I):
            v = kb.mov(0, "u64" if vsz == 8 else "u32")
            with kb.if_(okv[k]):
                kb.assign(v, _load_bits(kb, vsz, kb.addr(bufa, kb.add(mine, k), vsz)))
            vals.append(v)
        kb.bar_sync(0)
        for k in range(I):
            with kb.if_(okv[k]):
                _store_bits(kb, vsz, kb.addr(bufa, local[k], vsz), vals[k])
        kb.bar_sync(0)
        for k in range(I):
            j = kb.add(tid, k * T)
            with kb.if_(kb.setp("lt", j, valid)):
                v = _load_bits(kb, vsz, kb.addr(bufa, j, vsz))
                _store_bits(kb, vsz, kb.addr(vals_out, gpos[k], vsz), v)
    return kb.ptx()


def radix_configurations(arch: str) -> list[RadixSpec]:
    out = []
    for key in KEYS:
        for desc in (False, True):
            out.append(RadixSpec(arch=arch, key_type=key, descending=desc, stage="hist"))
            for vb in VALUE_BYTES:
                out.append(RadixSpec(arch=arch, key_type=key, descending=desc, value_bytes=vb))
    return out


registry.register_family(RadixSpec.family, RadixSpec, generate_radix, radix_configurations)
