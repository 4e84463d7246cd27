"""Kernel family ``rand_sobol``: Sobol32 and Sobol64 (unscrambled) quasi-random points in cuRAND's
host layout (``CURAND_ORDERING_QUASI_DEFAULT``: for n values in d dimensions, n/d consecutive
points of dimension 1, then of dimension 2, ...; the generator offset skips points).

Point i of a dimension is the XOR of its direction vectors V[k] over the set bits k of the Gray
code ``i ^ (i >> 1)`` (cuRAND's ``skipahead`` and ``curand`` for Sobol: the first point, i = 0,
is 0). A warp takes 32 consecutive points of one dimension: each lane computes its first point
directly, then steps by 32 points with ``x ^= V[4] ^ V[5 + ctz((i >> 5) + 1)]`` (the Gray codes
of i and i + 32 differ in bit 4 and in the one bit that changes between the Gray codes of
i >> 5 and its successor), so every step is one coalesced store per warp.

Distributions: Sobol32 ``raw32``, ``uniform_f32`` (``_curand_uniform``: ``x 2^-32 + 2^-33`` in
float), ``uniform_f64`` (``x 2^-32 + 2^-32`` in double: what cuRAND's generateUniformDouble gives
for Sobol32, measured on the H200, not the ``+ 2^-33`` of the pseudo generators); Sobol64
``raw64`` and ``uniform_f64`` (``(x >> 11) 2^-53 + 2^-54``, matched on the H200).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from .. import transforms_ptx as T

DISTS = {32: ("raw32", "uniform_f32", "uniform_f64"), 64: ("raw64", "uniform_f64")}
OUTPUT_TYPE = {"raw32": "u32", "raw64": "u64", "uniform_f32": "f32", "uniform_f64": "f64"}
THREADS = 256


@dataclass(frozen=True)
class SobolSpec(KernelSpec):
    """One Sobol kernel: ``bits`` 32 or 64, distribution ``dist``."""

    family: ClassVar[str] = "rand_sobol"
    bits: int = 32
    dist: str = "raw32"
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bits not in DISTS:
            raise ValueError(f"SobolSpec: bits={self.bits}; 32 or 64")
        if self.dist not in DISTS[self.bits]:
            raise ValueError(f"SobolSpec: dist={self.dist!r}; allowed for {self.bits} bits: {DISTS[self.bits]}")


def _ctz_u32(kb: KernelBuilder, x: Value) -> Value:
    """Trailing zeros of a nonzero u32 (clz of the bit reverse)."""
    r = kb._dst("b32", None, "brev")
    kb.instr("brev", ("b32",), (r.reg, kb._src(x, "b32", "brev")))
    c = kb._dst("u32", None, "clz")
    kb.instr("clz", ("b32",), (c.reg, r.reg))
    return c


def generate_sobol(spec: SobolSpec) -> str:
    """Parameters: (vectors, out, npd = points per dimension, blocks = warp blocks per dimension,
    offset, steps[, a, b]): the direction vectors (dims x bits words), the output."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math="precise")
    kb.maxntid(spec.threads)
    vectors, out = kb.param_ptr("vectors"), kb.param_ptr("out")
    npd, blocks = kb.param("npd", "u64"), kb.param("blocks", "u32")
    offset, steps = kb.param("offset", "u64"), kb.param("steps", "u32")
    dims = kb.param("dims", "u32")
    ftype = OUTPUT_TYPE[spec.dist]
    a = b = None
    if ftype[0] == "f":
        a, b = kb.param("a", ftype), kb.param("b", ftype)
    word = "u64" if spec.bits == 64 else "u32"
    wbytes = spec.bits // 8
    gtid = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    warp, lane = kb.shr(gtid, 5), kb.and_(gtid, 31)
    dim = kb.div(warp, blocks)
    kb.ret(kb.setp("ge", dim, dims))
    blk = kb.sub(warp, kb.mul(dim, blocks))
    rel = kb.add(kb.mul(kb.cvt(blk, "u64"), kb.cvt(kb.mul(steps, 32), "u64")), kb.cvt(lane, "u64"))
    i = kb.add(offset, rel)
    vbase = kb.addr(vectors, kb.mul(dim, spec.bits), wbytes)
    gray = kb.xor(i, kb.shr(i, 1))
    x = kb.mov(0, word)
    with kb.loop(0, spec.bits, 1, type_="u32") as k:
        bit = kb.and_(kb.shr(gray, k), 1)
        vk = kb.ld("global", word, kb.addr(vbase, k, wbytes))
        mask = kb.sub(kb.mov(0, word), kb.cvt(bit, word) if word != "u64" else bit)
        kb.xor(x, kb.and_(vk, mask), out=x)
    v4 = kb.ld("global", word, vbase, offset=4 * wbytes)
    dst = kb.addr(out, kb.add(kb.mul(kb.cvt(dim, "u64"), npd), rel), ftype_bytes(ftype))
    end = "$L_sobol_end"
    with kb.loop(0, steps, 1, type_="u32"):
        kb.bra(end, kb.setp("ge", rel, npd))
        kb.st("global", dst, _convert(kb, spec, x, a, b))
        q = kb.cvt(kb.add(kb.shr(i, 5), 1), "u32")
        hi = kb.cvt(kb.shr(kb.add(kb.shr(i, 5), 1), 32), "u32") if spec.bits == 64 else None
        ctz = _ctz_u32(kb, q)
        if hi is not None:
            # (i >> 5) + 1 may have its lowest set bit above bit 31
            ctz = kb.selp(kb.add(_ctz_u32(kb, hi), 32), ctz, kb.setp("eq", q, 0))
        vj = kb.ld("global", word, kb.addr(vbase, kb.add(ctz, 5), wbytes))
        kb.xor(x, kb.xor(v4, vj), out=x)
        kb.add(i, 32, out=i)
        kb.add(rel, 32, out=rel)
        kb.add(dst, 32 * ftype_bytes(ftype), out=dst)
    kb.label(end)
    return kb.ptx()


def ftype_bytes(ftype: str) -> int:
    return 8 if ftype in ("u64", "f64") else 4


def _convert(kb: KernelBuilder, spec: SobolSpec, x: Value, a: Value | None, b: Value | None) -> Value:
    if spec.dist in ("raw32", "raw64"):
        return x
    if spec.dist == "uniform_f32":
        return kb.fma(T.uniform_f32(kb, x), b, a)
    if spec.bits == 32:
        # cuRAND's Sobol32 doubles are (x + 1) 2^-32, not the pseudo generators' x 2^-32 + 2^-33
        # (H200: every value differed from the latter by exactly 2^-33)
        u = kb.fma(kb.cvt(x, "f64", type_="u32"), T.TWO_POW_M32, T.TWO_POW_M32, type_="f64")
        return kb.fma(u, b, a)
    u = kb.fma(kb.cvt(kb.shr(x, 11), "f64", type_="u64"), T.TWO_POW_M53, T.TWO_POW_M53 / 2, type_="f64")
    return kb.fma(u, b, a)


def sobol_configurations(arch: str) -> list[SobolSpec]:
    return [SobolSpec(arch=arch, bits=bits, dist=d) for bits, dists in DISTS.items() for d in dists]


registry.register_family(SobolSpec.family, SobolSpec, generate_sobol, sobol_configurations)
