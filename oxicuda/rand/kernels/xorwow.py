"""Kernel family ``rand_xorwow``: cuRAND's default generator (XORWOW) as its host API orders it.

cuRAND's XORWOW host ordering (PSEUDO_DEFAULT, BEST and LEGACY alike; matched bit for bit on the
H200, probe call 2): the result at offset n of the generator's output is word ``n div 4096`` of
subsequence ``n mod 4096`` (``curand_init(seed, n mod 4096, 0)``, subsequences 2^67 words
apart). PSEUDO_SEEDED and DYNAMIC differ and are not reproduced. Two kernels per call:

- ``stage="init"``: thread ``(t, k)`` (t < 4096 the subsequence, k < K the chunk) builds
  cuRAND's seeded state, jumps it by ``t * 2^67`` and by its start position ``p0(t) + k L``
  (``p0(t)``: the first position of subsequence t at or after the generator offset) with the
  4-bit-window matrix tables of ``xorwow_tables``, and stores (v0..v4, d) structure-of-arrays;
- ``stage="generate"``: the same thread steps its state ``L`` times, writing output ``p * 4096 +
  t - offset`` of each position p until the call's length; a warp's 32 subsequences write 32
  consecutive values per step.

Normals (``normal_f32``, ``lognormal_f32``: a Box-Muller pair from two words,
``_curand_box_muller``; ``normal_f64``, ``lognormal_f64``: from four, ``_curand_box_muller_double``)
follow cuRAND's host layout (H200, s7c4: .diag/rand_normals_layout.sh's fractions at offsets 0,
1 and 4097 all reproduced): values 2i, 2i + 1 of a call are one pair (``s sin v``, ``s cos v``, as
``curand_normal2`` stores it); pair i is the (i div 4096)-th pair of the call of subsequence t =
(i mod 4096 + offset) mod 4096, the rotation of the single values, taking the subsequence's next
2 (4) words. At offset 1, pair 0 is subsequence 1's first and pair 4095 subsequence 0's from
word 1; at 4097 pair 0 is subsequence 1's from word 1.

Between calls each subsequence carries on from where the last call left it, as cuRAND's host
generator keeps its 4096 states (set up again only when the seed or offset is set): the init
stage adds ``extra[t]`` (generator.Engine.extra_words: the words the calls so far took beyond one
per value of the offset, nonzero after hq doubles or normal pairs) to p0(t).

Distributions: ``raw32``, ``uniform_f32`` (cuRAND's ``_curand_uniform``), ``uniform_f64`` (one
word, ``_curand_uniform_double``), ``uniform_f64_hq`` (two consecutive words of the value's
subsequence, ``_curand_uniform_double_hq``: what cuRAND's generateUniformDouble does for XORWOW,
measured on the H200), each ``a + b * u`` for the floats. The offset counts values; value i of a
call goes where the same call of raw words would put word i (subsequence t = (offset + i) mod
4096). The offset skips ``p0(t)`` words of subsequence t, one per value before it whatever the
distribution (the count of k < offset with k mod 4096 = t), and then each value takes
``WORDS_PER_VALUE`` words: the s-th double of subsequence t in a call is hq(word p0 + 2s, word
p0 + 2s + 1). (H200, call s7c1: with the offset's words doubled too, only the values whose
subsequence had p0 > 0 differed; offset 1 put that at the last value of every 4096.) A second
double call continues at p0 + 2 (values so far) of each subsequence (the extra words), not at
one word per value of its offset: that rule failed on the H200 (s7c4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from .. import transforms_ptx as T
from ..xorwow_tables import MATRICES, NIBBLES, POSITION_MATRICES, SUBSEQUENCE_MATRICES, TABLE_WORDS

SUBSEQUENCES = 4096
DISTS = ("raw32", "uniform_f32", "uniform_f64", "uniform_f64_hq", "normal_f32", "lognormal_f32",
         "normal_f64", "lognormal_f64")
OUTPUT_TYPE = {"raw32": "u32", "uniform_f32": "f32", "uniform_f64": "f64", "uniform_f64_hq": "f64",
               "normal_f32": "f32", "lognormal_f32": "f32", "normal_f64": "f64", "lognormal_f64": "f64"}
#: stream words per value (the hq double takes two consecutive words of its subsequence; a
#: Box-Muller pair of float normals two words, of double normals four)
WORDS_PER_VALUE = {"raw32": 1, "uniform_f32": 1, "uniform_f64": 1, "uniform_f64_hq": 2,
                   "normal_f32": 1, "lognormal_f32": 1, "normal_f64": 2, "lognormal_f64": 2}
#: the Box-Muller distributions: a thread makes its values two at a time
PAIRED = frozenset(("normal_f32", "lognormal_f32", "normal_f64", "lognormal_f64"))
THREADS = 256
STAGES = ("init", "generate")


@dataclass(frozen=True)
class XorwowSpec(KernelSpec):
    """One XORWOW kernel: ``stage`` init (seed and jump) or generate (``dist``)."""

    family: ClassVar[str] = "rand_xorwow"
    stage: str = "generate"
    dist: str = "raw32"
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.stage not in STAGES:
            raise ValueError(f"XorwowSpec: stage={self.stage!r}; allowed {STAGES}")
        if self.dist not in DISTS:
            raise ValueError(f"XorwowSpec: dist={self.dist!r}; allowed {DISTS}")
        if self.stage == "init" and self.dist != "raw32":
            raise ValueError("XorwowSpec: the init stage has no distribution (dist='raw32')")


def _thread(kb: KernelBuilder, count: Value, offset: Value, chunk: Value, with_p0: bool = False):
    """(tid, t, start position[, p0]) of this thread; threads past ``count`` return. ``p0`` is
    the number of values of subsequence t before the offset (the first position of chunk 0)."""
    tid = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", tid, count))
    t = kb.and_(tid, SUBSEQUENCES - 1)
    k = kb.shr(tid, 12)
    t64 = kb.cvt(t, "u64")
    ahead = kb.setp("gt", offset, t64)
    p0 = kb.selp(kb.shr(kb.add(kb.sub(offset, t64), SUBSEQUENCES - 1), 12), kb.mov(0, "u64"), ahead)
    p = kb.mad(kb.cvt(k, "u64"), chunk, p0, type_="u64")
    return (tid, t, p, p0) if with_p0 else (tid, t, p)


def subsequence_extra(kb: KernelBuilder, extra: Value, t: Value) -> Value:
    """extra[t] (s64, as u64): words subsequence t has advanced beyond one per value of the
    offset, from the calls since the seed or offset was set (generator.Engine keeps it)."""
    return kb.ld("global", "u64", kb.addr(extra, t, 8))


def pair_index(kb: KernelBuilder, tid: Value, t: Value, offset: Value, chunk: Value) -> Value:
    """The output index of the first pair this thread writes: subsequence t's pairs go to value
    pairs ``r, r + 4096, ...`` with ``r = (t - offset) mod 4096`` (the rotation of the single
    values), its chunk k starting at its pair ``k chunk / 2``; a pair fills values 2i, 2i + 1."""
    k = kb.cvt(kb.shr(tid, 12), "u64")
    r = kb.and_(kb.sub(kb.cvt(t, "u64"), offset), SUBSEQUENCES - 1)
    q0 = kb.mul(k, kb.shr(chunk, 1))
    return kb.shl(kb.add(r, kb.shl(q0, 12)), 1)


def _matvec(kb: KernelBuilder, table: Value, v: list[Value]) -> list[Value]:
    """The 5-word image of state ``v`` under the matrix whose window table starts at ``table``."""
    r = [kb.mov(0, "u32") for _ in range(5)]
    for g in range(NIBBLES):
        nib = kb.and_(kb.shr(v[g // 8], 4 * (g % 8)), 15)
        row = kb.addr(table, kb.mad(nib, 5, g * 16 * 5, type_="u32"), 4)
        for w in range(5):
            kb.xor(r[w], kb.ld("global", "u32", row, offset=4 * w), out=r[w])
    return r


def _init_body(kb: KernelBuilder) -> None:
    tables, states, extra = kb.param_ptr("tables"), kb.param_ptr("states"), kb.param_ptr("extra")
    count = kb.param("count", "u32")
    seed0, seed1 = kb.param("seed0", "u32"), kb.param("seed1", "u32")
    offset, chunk = kb.param("offset", "u64"), kb.param("chunk", "u64")
    wpv = kb.param("wpv", "u32")
    tid, t, p, p0 = _thread(kb, count, offset, chunk, with_p0=True)
    # the first word of the thread's first value: subsequence t stands at word p0 + extra[t] (p0:
    # one word per value before the offset; extra: what earlier calls since the seed or offset
    # was set took beyond that), then each value takes wpv words
    p = kb.add(kb.add(p0, subsequence_extra(kb, extra, t)), kb.mul(kb.sub(p, p0), kb.cvt(wpv, "u64")))
    t0 = kb.mul(kb.xor(seed0, 0xAAD26B49), 1099087573)
    t1 = kb.mul(kb.xor(seed1, 0xF7DCEFDD), 2591861531)
    v = [kb.add(t0, 123456789), kb.xor(t0, 362436069), kb.add(t1, 521288629), kb.xor(t1, 88675123),
         kb.add(t0, 5783321)]
    d = kb.add(kb.add(t1, t0), 6615241)
    # matrices 0..11 are the subsequence bits of t, 12..75 the position bits of p
    with kb.loop(0, MATRICES, 1, type_="u32") as m:
        sub = kb.setp("lt", m, SUBSEQUENCE_MATRICES)
        bit_t = kb.and_(kb.shr(t, m), 1)
        pos_m = kb.sub(m, SUBSEQUENCE_MATRICES)
        bit_p = kb.cvt(kb.and_(kb.shr(p, kb.selp(0, pos_m, sub, type_="u32")), 1), "u32")
        bit = kb.selp(bit_t, bit_p, sub)
        index = kb.selp(kb.add(m, POSITION_MATRICES), pos_m, sub)
        with kb.if_(kb.setp("ne", bit, 0)):
            r = _matvec(kb, kb.addr(tables, kb.mul(index, TABLE_WORDS), 4), v)
            for w in range(5):
                kb.assign(v[w], r[w])
    kb.mad(kb.cvt(p, "u32"), 362437, d, type_="u32", out=d)
    for w, value in enumerate(v + [d]):
        kb.st("global", kb.addr(states, kb.mad(count, w, tid, type_="u32"), 4), value)


def _generate_body(kb: KernelBuilder, spec: XorwowSpec) -> None:
    states, out = kb.param_ptr("states"), kb.param_ptr("out")
    count, n = kb.param("count", "u32"), kb.param("n", "u64")
    offset, chunk = kb.param("offset", "u64"), kb.param("chunk", "u64")
    ftype = OUTPUT_TYPE[spec.dist]
    a = b = None
    if ftype != "u32":
        a, b = kb.param("a", ftype), kb.param("b", ftype)
    tid, t, p = _thread(kb, count, offset, chunk)
    v = [kb.ld("global", "u32", kb.addr(states, kb.mad(count, w, tid, type_="u32"), 4)) for w in range(5)]
    d = kb.ld("global", "u32", kb.addr(states, kb.mad(count, 5, tid, type_="u32"), 4))
    idx = kb.sub(kb.add(kb.shl(p, 12), kb.cvt(t, "u64")), offset)
    es = 8 if ftype == "f64" else 4
    end = "$L_xorwow_end"
    def step() -> Value:
        x = kb.xor(v[0], kb.shr(v[0], 2))
        for w in range(4):
            kb.assign(v[w], v[w + 1])
        kb.assign(v[4], kb.xor(kb.xor(v[4], kb.shl(v[4], 4)), kb.xor(x, kb.shl(x, 1))))
        kb.add(d, 362437, out=d)
        return kb.add(v[4], d)

    if spec.dist in PAIRED:
        _pairs(kb, spec, step, out, pair_index(kb, tid, t, offset, chunk), n, chunk, a, b, end)
        return
    with kb.loop(0, kb.cvt(chunk, "u32"), 1, type_="u32"):
        kb.bra(end, kb.setp("ge", idx, n))
        word = step()
        if spec.dist == "uniform_f64_hq":
            value = kb.fma(T.uniform_f64_hq(kb, word, step()), b, a)
        elif spec.dist == "raw32":
            value = word
        elif spec.dist == "uniform_f32":
            value = kb.fma(T.uniform_f32(kb, word), b, a)
        else:
            value = kb.fma(T.uniform_f64(kb, word), b, a)
        kb.st("global", kb.addr(out, idx, es), value)
        kb.add(idx, SUBSEQUENCES, out=idx)
    kb.label(end)


def paired_values(kb: KernelBuilder, dist: str, z: tuple[Value, Value], a: Value, b: Value) -> list[Value]:
    """``a + b z`` (fma) of a Box-Muller pair, exponentiated for the log-normals (libdevice's
    expf for float; an accurate exp for double)."""
    vals = [kb.fma(v, b, a) for v in z]
    if dist == "lognormal_f32":
        return [T.expf_nv(kb, v) for v in vals]
    if dist == "lognormal_f64":
        return [T.exp_f64(kb, v) for v in vals]
    return vals


def store_pairs(kb: KernelBuilder, dist: str, make_pair, out: Value, idx: Value, n: Value, chunk: Value,
                a: Value, b: Value, end: str) -> None:
    """The thread's chunk (an even number of positions: chunk / 2 pairs), a pair at a time, as
    cuRAND's host kernels store ``curand_normal2`` (``_double``): the pair's s sin v at ``idx``,
    its s cos v at ``idx + 1``; the subsequence's next pair 4096 pairs on (``idx + 8192``)."""
    es = 8 if dist.endswith("f64") else 4
    with kb.loop(0, kb.cvt(kb.shr(chunk, 1), "u32"), 1, type_="u32"):
        kb.bra(end, kb.setp("ge", idx, n))
        first, second = paired_values(kb, dist, make_pair(), a, b)
        kb.st("global", kb.addr(out, idx, es), first)
        kb.add(idx, 1, out=idx)
        kb.bra(end, kb.setp("ge", idx, n))
        kb.st("global", kb.addr(out, idx, es), second)
        kb.add(idx, 2 * SUBSEQUENCES - 1, out=idx)


def _pairs(kb: KernelBuilder, spec: XorwowSpec, step, out: Value, idx: Value, n: Value, chunk: Value,
           a: Value, b: Value, end: str) -> None:
    if spec.dist.endswith("f32"):
        def make_pair():
            x = step()
            return T.box_muller_f32(kb, x, step())
    else:
        def make_pair():
            w = [step() for _ in range(4)]
            return T.box_muller_f64(kb, *w)
    store_pairs(kb, spec.dist, make_pair, out, idx, n, chunk, a, b, end)
    kb.label(end)


def generate_xorwow(spec: XorwowSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math="precise")
    kb.maxntid(spec.threads)
    if spec.stage == "init":
        _init_body(kb)
    else:
        _generate_body(kb, spec)
    return kb.ptx()


def xorwow_configurations(arch: str) -> list[XorwowSpec]:
    return [XorwowSpec(arch=arch, stage="init")] + [XorwowSpec(arch=arch, dist=d) for d in DISTS]


registry.register_family(XorwowSpec.family, XorwowSpec, generate_xorwow, xorwow_configurations)
