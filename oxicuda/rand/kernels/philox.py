"""Kernel family ``rand_philox``: cuRAND's Philox4x32-10 host stream and its distributions.

cuRAND's host ordering for Philox (PSEUDO_DEFAULT, BEST, LEGACY alike; established on the H200
with benches/probe_curand.py, call 2): values come in units of four; unit G belongs to
subsequence ``t = G mod 65536`` (``curand_init(seed, t, ...)``) and is its ``r = G div 65536``-th
unit, made from the U next blocks of that subsequence (U = words per value: 1 for raw words,
one-word uniforms and float normals, 2 for hq doubles, 64-bit words and double normals):
``Philox4x32_10(ctr = (r0 + U (r - r0) + u as 64 bits, t, 0), key = (seed lo, seed hi))``, u <
U, where r0 is the number of units of subsequence t before the call's offset (its unit G0 =
offset div 4: r0 = ceil((G0 - t) / 65536) when G0 > t, else 0). So the offset skips one block per
earlier unit whatever the distribution, and the call's units take U blocks each from there
(H200, call s7c1: with r U for doubles, offset 5 differed at exactly the units (t = 0, r >= 1)
and offset 4097 at (t < 1024, r >= 1), the units with r0 = 1; cuRAND's value there is the hq
double of block r0 + 2 (r - r0)). The generator offset counts values: a call writes values
offset, offset + 1, ...; Box-Muller pairs are fixed by the unit, not by the call (an odd offset
starts at a pair's cosine).

One thread computes one unit per step of a grid-stride loop of ``iters`` steps and stores its
four values (one 16-byte store, two for 8-byte values) when ``vec`` and ``aligned`` (the offset
is a multiple of 4) and the unit lies inside the call; else value by value. Distributions
(``DISTS``; words per value in ``WORDS_PER_OUTPUT``):

- ``raw32``: the words; ``raw64``: ``x | y << 32`` of consecutive words;
- ``uniform_f32``, ``uniform_f64`` (one word), ``uniform_f64_hq`` (two words): ``a + b * u``
  with u in (0, 1] as cuRAND converts (a=0, b=1 gives cuRAND's bits: the fma is exact then);
- ``normal_f32`` (pairs of words), ``normal_f64`` (quads): ``a + b * z`` (fma), Box-Muller;
- ``lognormal_f32``, ``lognormal_f64``: ``exp(a + b * z)``;
- ``bounded_s32``, ``bounded_s64``: ``a + hi32(w * b)`` (Lemire's multiply-shift, one word per
  integer in [a, a + b) with b < 2^32; its bias is below b / 2^32).

Kernel parameters: ``(out, n, value0, iters, key0, key1[, a, b])``: n outputs, the offset (in
values), grid-stride steps per thread, the seed's words, the affine coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from .. import transforms_ptx as T
from ..philox_ptx import philox4x32_10

DISTS = ("raw32", "raw64", "uniform_f32", "uniform_f64", "uniform_f64_hq", "normal_f32",
         "normal_f64", "lognormal_f32", "lognormal_f64", "bounded_s32", "bounded_s64")
WORDS_PER_OUTPUT = {"raw32": 1, "raw64": 2, "uniform_f32": 1, "uniform_f64": 1, "uniform_f64_hq": 2,
                    "normal_f32": 1, "normal_f64": 2, "lognormal_f32": 1, "lognormal_f64": 2,
                    "bounded_s32": 1, "bounded_s64": 1}
OUTPUT_TYPE = {"raw32": "u32", "raw64": "u64", "uniform_f32": "f32", "uniform_f64": "f64",
               "uniform_f64_hq": "f64", "normal_f32": "f32", "normal_f64": "f64",
               "lognormal_f32": "f32", "lognormal_f64": "f64", "bounded_s32": "s32",
               "bounded_s64": "s64"}
THREADS = 256
#: subsequences of cuRAND's Philox host stream (block q is subsequence q mod 65536)
SUBSEQUENCES = 65536


@dataclass(frozen=True)
class PhiloxSpec(KernelSpec):
    """One Philox kernel: distribution ``dist``, ``aligned`` (the first word is at a block
    boundary), ``vec`` (16-byte stores: the output pointer is 16-byte aligned)."""

    family: ClassVar[str] = "rand_philox"
    dist: str = "uniform_f32"
    aligned: bool = True
    vec: bool = True
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dist not in DISTS:
            raise ValueError(f"PhiloxSpec: dist={self.dist!r}; allowed {DISTS}")
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            raise ValueError(f"PhiloxSpec: threads={self.threads}; a multiple of 32 in 32..1024")

    @property
    def outputs_per_group(self) -> int:
        return 4

    @property
    def blocks_per_group(self) -> int:
        return WORDS_PER_OUTPUT[self.dist]

    @property
    def output_bytes(self) -> int:
        return 8 if OUTPUT_TYPE[self.dist] in ("u64", "f64", "s64") else 4


def curand_counters(kb: KernelBuilder, unit: Value, blocks: int, unit0: Value | None = None
                    ) -> list[tuple[Value, ...]]:
    """The Philox counters of the ``blocks`` blocks of value unit ``unit`` (u64) in a call whose
    offset is in unit ``unit0`` (u64; needed when blocks > 1): the offset skips r0 blocks of the
    unit's subsequence t, one per earlier unit of t (r0 = ceil((unit0 - t) / 65536) when unit0 >
    t, else 0), and from there each unit takes ``blocks`` blocks: its first block is
    ``r0 + blocks (r - r0)``."""
    sub64 = kb.and_(unit, SUBSEQUENCES - 1)
    sub = kb.cvt(sub64, "u32")
    r = kb.shr(unit, 16)
    base = r
    if blocks > 1:
        ahead = kb.setp("gt", unit0, sub64)
        r0 = kb.selp(kb.shr(kb.add(kb.sub(unit0, sub64), SUBSEQUENCES - 1), 16), kb.mov(0, "u64"), ahead)
        base = kb.add(r0, kb.mul(kb.sub(r, r0), blocks, type_="u64"))
    out = []
    for u in range(blocks):
        hi = kb.add(base, u) if u else base
        out.append((kb.cvt(hi, "u32"), kb.cvt(kb.shr(hi, 32), "u32"), sub, kb.mov(0, "u32")))
    return out


def _transform(kb: KernelBuilder, spec: PhiloxSpec, w: tuple[Value, ...], a: Value | None,
               b: Value | None) -> list[Value]:
    d = spec.dist
    if d == "raw32":
        return list(w)
    if d == "raw64":
        return [kb.or_(kb.cvt(w[i], "u64"), kb.shl(kb.cvt(w[i + 1], "u64"), 32)) for i in (0, 2)]
    if d in ("bounded_s32", "bounded_s64"):
        # Lemire's multiply-shift: low + floor(w * range / 2^32), range in 1..2^32 - 1
        t = "s32" if d == "bounded_s32" else "s64"
        return [kb.add(a, kb.cvt(kb.mul(x, b, mode="hi", type_="u32"), t), type_=t) for x in w]
    if d == "uniform_f32":
        return [kb.fma(T.uniform_f32(kb, x), b, a) for x in w]
    if d == "uniform_f64":
        return [kb.fma(T.uniform_f64(kb, x), b, a) for x in w]
    if d == "uniform_f64_hq":
        return [kb.fma(T.uniform_f64_hq(kb, w[i], w[i + 1]), b, a) for i in (0, 2)]
    if d in ("normal_f32", "lognormal_f32"):
        z = [*T.box_muller_f32(kb, w[0], w[1]), *T.box_muller_f32(kb, w[2], w[3])]
    else:
        z = list(T.box_muller_f64(kb, *w))
    z = [kb.fma(v, b, a) for v in z]
    if d == "lognormal_f32":
        return [T.expf_nv(kb, v) for v in z]
    if d == "lognormal_f64":
        return [T.exp_f64(kb, v) for v in z]
    return z


def generate_philox(spec: PhiloxSpec) -> str:
    """PTX of one Philox kernel (parameters in the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math="precise")
    kb.maxntid(spec.threads)
    out, n = kb.param_ptr("out"), kb.param("n", "u64")
    value0, iters = kb.param("value0", "u64"), kb.param("iters", "u32")
    key = (kb.param("key0", "u32"), kb.param("key1", "u32"))
    ftype = OUTPUT_TYPE[spec.dist]
    a = b = None
    if ftype in ("f32", "f64"):
        a, b = kb.param("a", ftype), kb.param("b", ftype)
    elif ftype in ("s32", "s64"):
        a, b = kb.param("a", ftype), kb.param("b", "u32")
    opg, es = spec.outputs_per_group, spec.output_bytes
    gid = kb.cvt(kb.mad(kb.ctaid(), kb.ntid(), kb.tid()), "u64")
    total = kb.cvt(kb.mul(kb.nctaid(), kb.ntid()), "u64")
    q0 = kb.div(value0, opg, type_="u64")
    shift = kb.sub(value0, kb.mul(q0, opg, type_="u64"))
    span = kb.add(n, shift)
    with kb.loop(0, iters, 1, type_="u32") as j:
        g = kb.mad(kb.cvt(j, "u64"), total, gid, type_="u64")
        start = kb.mul(g, opg, type_="u64")                  # the block's first value - value0 + shift
        with kb.if_(kb.setp("lt", start, span)):
            vals = []
            for ctr in curand_counters(kb, kb.add(q0, g), spec.blocks_per_group, q0):
                vals += _transform(kb, spec, philox4x32_10(kb, ctr, key), a, b)
            if spec.vec and spec.aligned:
                whole = kb.setp("le", kb.add(start, opg), n)
                with kb.if_(whole):
                    dst = kb.addr(out, start, es)
                    per_store = 16 // es
                    for s_ in range(0, opg, per_store):
                        kb.st("global", dst, vals[s_:s_ + per_store], offset=s_ * es)
                with kb.else_():
                    _scalar(kb, out, vals, start, shift, n, es)
            else:
                _scalar(kb, out, vals, start, shift, n, es)
    return kb.ptx()


def _scalar(kb: KernelBuilder, out: Value, vals: list[Value], start: Value, shift: Value, n: Value,
            es: int) -> None:
    """Value e of the block goes to output start + e - shift when that lies in [0, n)."""
    for e, v in enumerate(vals):
        pos = kb.add(start, e)
        i = kb.sub(pos, shift)
        ok = kb.and_(kb.setp("ge", pos, shift), kb.setp("lt", i, n))
        with kb.if_(ok):
            kb.st("global", kb.addr(out, i, es), v)


def philox_configurations(arch: str) -> list[PhiloxSpec]:
    """Every distribution, offset aligned to its block or not, with and without 16-byte stores
    (unaligned offsets always store value by value)."""
    return [PhiloxSpec(arch=arch, dist=d, aligned=al, vec=v) for d in DISTS
            for al, v in ((True, True), (True, False), (False, False))]


registry.register_family(PhiloxSpec.family, PhiloxSpec, generate_philox, philox_configurations)
