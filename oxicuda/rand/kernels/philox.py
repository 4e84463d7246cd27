"""Kernel family ``rand_philox``: cuRAND's Philox4x32-10 host stream and its distributions.

The stream (cuRAND's ``CURAND_ORDERING_PSEUDO_DEFAULT`` / ``LEGACY`` for Philox, as this module
assumes until the GPU probe, benches/probe_curand.py, says otherwise): word ``p`` of the stream
of seed ``s`` is word ``p % 4`` of ``Philox4x32_10(ctr = (p // 4 as 128 bits), key = (s lo,
s hi))``; a call with generator offset ``o`` writes the distribution of words ``o, o+1, ...``.

One thread handles one group of four words per step (one Philox block when the group is aligned
to a block, two otherwise: spec ``aligned``) in a grid-stride loop of ``iters`` steps, and writes
the group's outputs with one 16-byte store (two for one-word doubles) when ``vec`` is set and
the group is whole; the last partial group stores element by element. Distributions
(``DISTS``; words per output in ``WORDS_PER_OUTPUT``):

- ``raw32``: the words; ``raw64``: ``x | y << 32`` of consecutive words;
- ``uniform_f32``, ``uniform_f64`` (one word), ``uniform_f64_hq`` (two words): ``a + b * u``
  with u in (0, 1] as cuRAND converts (a=0, b=1 gives cuRAND's bits: the fma is exact then);
- ``normal_f32`` (pairs of words), ``normal_f64`` (quads): ``a + b * z`` (fma), Box-Muller;
- ``lognormal_f32``, ``lognormal_f64``: ``exp(a + b * z)``;
- ``bounded_s32``, ``bounded_s64``: ``a + hi32(w * b)`` (Lemire's multiply-shift, one word per
  integer in [a, a + b) with b < 2^32; its bias is below b / 2^32).

Kernel parameters: ``(out, n, word0, iters, key0, key1[, a, b])``: n outputs, the stream position
of the first word, grid-stride steps per thread, the seed's words, the affine coefficients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from .. import transforms_ptx as T
from ..philox_ptx import philox4x32_10, stream_counter

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
LAYOUTS = ("sequential", "interleaved")
#: distributions the interleaved layout makes (one word per value)
INTERLEAVED_DISTS = ("raw32", "uniform_f32", "uniform_f64")
SUBSEQUENCES = 4096
#: cuRAND's Philox host ordering as this package reads it: "sequential" (value n is word n of
#: the stream of curand_init(seed, 0, 0)) or "interleaved" (4096 subsequences, as XORWOW's);
#: benches/probe_curand.py and tests/test_rand_gpu.py decide it on the GPU. The one-word
#: distributions follow it; the others are always sequential.
PHILOX_LAYOUT = "sequential"


@dataclass(frozen=True)
class PhiloxSpec(KernelSpec):
    """One Philox kernel: distribution ``dist``, ``aligned`` (the first word is at a block
    boundary), ``vec`` (16-byte stores: the output pointer is 16-byte aligned)."""

    family: ClassVar[str] = "rand_philox"
    dist: str = "uniform_f32"
    aligned: bool = True
    vec: bool = True
    layout: str = "sequential"
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dist not in DISTS:
            raise ValueError(f"PhiloxSpec: dist={self.dist!r}; allowed {DISTS}")
        if self.threads % 32 or not 32 <= self.threads <= 1024:
            raise ValueError(f"PhiloxSpec: threads={self.threads}; a multiple of 32 in 32..1024")
        if self.layout not in LAYOUTS:
            raise ValueError(f"PhiloxSpec: layout={self.layout!r}; allowed {LAYOUTS}")
        if self.layout == "interleaved" and (self.dist not in INTERLEAVED_DISTS or not self.aligned
                                             or self.vec):
            raise ValueError(f"PhiloxSpec: the interleaved layout makes {INTERLEAVED_DISTS} only, "
                             f"with aligned=True and vec=False")

    @property
    def outputs_per_group(self) -> int:
        return 4 // WORDS_PER_OUTPUT[self.dist]

    @property
    def output_bytes(self) -> int:
        return 8 if OUTPUT_TYPE[self.dist] in ("u64", "f64", "s64") else 4


def _words(kb: KernelBuilder, spec: PhiloxSpec, block: Value, rot: Value | None,
           key: tuple[Value, Value]) -> tuple[Value, ...]:
    """The four stream words of one group: one block, or the tail of one and head of the next."""
    a = philox4x32_10(kb, stream_counter(kb, block), key)
    if spec.aligned:
        return a
    b = philox4x32_10(kb, stream_counter(kb, kb.add(block, 1)), key)
    pool = a + b
    r1, r2 = kb.setp("eq", rot, 1), kb.setp("eq", rot, 2)
    out = []
    for j in range(4):
        w = kb.selp(pool[j + 2], pool[j + 3], r2)
        out.append(kb.selp(pool[j + 1], w, r1))
    return tuple(out)


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
    word0, iters = kb.param("word0", "u64"), kb.param("iters", "u32")
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
    if spec.layout == "interleaved":
        _interleaved_body(kb, spec, out, n, word0, iters, key, a, b, gid, total)
        return kb.ptx()
    rot = None if spec.aligned else kb.cvt(kb.and_(word0, 3), "u32")
    first_block = kb.shr(word0, 2)
    with kb.loop(0, iters, 1, type_="u32") as j:
        g = kb.mad(kb.cvt(j, "u64"), total, gid, type_="u64")
        first = kb.mul(g, opg, type_="u64")
        with kb.if_(kb.setp("lt", first, n)):
            vals = _transform(kb, spec, _words(kb, spec, kb.add(first_block, g), rot, key), a, b)
            dst = kb.addr(out, first, es)
            whole = kb.setp("le", kb.add(first, opg), n)
            if spec.vec:
                with kb.if_(whole):
                    per_store = 16 // es
                    for s in range(0, opg, per_store):
                        kb.st("global", dst, vals[s:s + per_store], offset=s * es)
                with kb.else_():
                    _tail(kb, dst, vals, first, n, es)
            else:
                _tail(kb, dst, vals, first, n, es)
    return kb.ptx()


def _interleaved_body(kb, spec, out, n, word0, iters, key, a, b, gid, total) -> None:
    """The 4096-subsequence hypothesis of cuRAND's host ordering: value n is position n div
    4096 of subsequence n mod 4096 (``ctr = (position // 4 as 64 bits, subsequence, 0)``).
    Group g = (block, t), t fastest: one Philox block of subsequence t, four scalar stores
    4096 values apart (coalesced across a warp's 32 subsequences)."""
    es = spec.output_bytes
    first_block = kb.shr(word0, 14)
    with kb.loop(0, iters, 1, type_="u32") as j:
        g = kb.mad(kb.cvt(j, "u64"), total, gid, type_="u64")
        t = kb.cvt(kb.and_(g, SUBSEQUENCES - 1), "u32")
        block = kb.add(first_block, kb.shr(g, 12))
        lo, hi = kb.cvt(block, "u32"), kb.cvt(kb.shr(block, 32), "u32")
        w = philox4x32_10(kb, (lo, hi, t, kb.mov(0, "u32")), key)
        vals = _transform(kb, spec, w, a, b)
        for k in range(4):
            pos = kb.add(kb.shl(block, 2), k)
            idx = kb.add(kb.shl(pos, 12), kb.cvt(t, "u64"))
            rel = kb.sub(idx, word0)
            ok = kb.and_(kb.setp("ge", idx, word0), kb.setp("lt", rel, n))
            with kb.if_(ok):
                kb.st("global", kb.addr(out, rel, es), vals[k])


def _tail(kb: KernelBuilder, dst: Value, vals: list[Value], first: Value, n: Value, es: int) -> None:
    kb.st("global", dst, vals[0])
    for i in range(1, len(vals)):
        with kb.if_(kb.setp("lt", kb.add(first, i), n)):
            kb.st("global", dst, vals[i], offset=i * es)


def philox_configurations(arch: str) -> list[PhiloxSpec]:
    """Every distribution, aligned or not, with and without 16-byte stores (the one-word
    distributions in the interleaved layout instead when ``PHILOX_LAYOUT`` says so)."""
    interleaved = PHILOX_LAYOUT == "interleaved"
    specs = [PhiloxSpec(arch=arch, dist=d, aligned=al, vec=v) for d in DISTS
             if not (interleaved and d in INTERLEAVED_DISTS) for al in (True, False) for v in (True, False)]
    if interleaved:
        specs += [PhiloxSpec(arch=arch, dist=d, vec=False, layout="interleaved") for d in INTERLEAVED_DISTS]
    return specs


registry.register_family(PhiloxSpec.family, PhiloxSpec, generate_philox, philox_configurations)
