"""Kernel family ``rand_poisson``: Poisson counts, one independent Philox4x32-10 stream per
output, exact samplers (statistically identical to cuRAND's Poisson, NOT its bits: cuRAND's host
Poisson method is not published, and this is not it).

Output q of the generator (q = offset + i) draws its uniforms from Philox blocks ``ctr = (j, 0,
q lo, q hi | 2^31)``, j = 0, 1, ... with the generator's seed as key: the top bit keeps these
counters apart from the main stream's (subsequence 0), so a Poisson call never reuses words an
other call produced. Each block gives two 53-bit uniforms (cuRAND's hq form).

- ``method="knuth"`` (lambda < 12): multiply uniforms until the product is at most e^-lambda;
- ``method="ptrs"`` (lambda >= 12): Hoermann's transformed rejection with squeeze (1993, as numpy
  uses it), with log(k!) from Stirling's series for k >= 9 and exactly below.

Parameters: ``(out, n, q0, key0, key1, lam, c0, c1, c2, c3, c4, c5)``: knuth uses c0 = e^-lambda;
ptrs uses (b, a, log(invalpha), vr, log(lambda)) as ``c0..c4``. At most ``MAX_ROUNDS`` blocks per
output (a bound never reached in practice: the acceptance rates are above 0.7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from .. import transforms_ptx as T
from ..philox_ptx import philox4x32_10

METHODS = ("knuth", "ptrs")
OUTPUTS = ("u32", "s64")
KNUTH_MAX_LAMBDA = 12.0
MAX_ROUNDS = 4096
THREADS = 256
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class PoissonSpec(KernelSpec):
    family: ClassVar[str] = "rand_poisson"
    method: str = "knuth"
    out_type: str = "u32"
    threads: int = THREADS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in METHODS:
            raise ValueError(f"PoissonSpec: method={self.method!r}; allowed {METHODS}")
        if self.out_type not in OUTPUTS:
            raise ValueError(f"PoissonSpec: out_type={self.out_type!r}; allowed {OUTPUTS}")


def host_constants(lam: float) -> tuple[str, tuple[float, ...]]:
    """(method, c0..c4) for lambda (host setup per call)."""
    if lam < KNUTH_MAX_LAMBDA:
        return "knuth", (math.exp(-lam), 0.0, 0.0, 0.0, 0.0)
    slam = math.sqrt(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    return "ptrs", (b, a, math.log(invalpha), vr, math.log(lam))


def _log_factorial(kb: KernelBuilder, k: Value) -> Value:
    """log(k!) for k >= 0 (f64): the product below 9, Stirling's series from 9 on."""
    x = kb.add(k, 1.0)
    small = kb.setp("lt", k, 9.0)
    prod = kb.mov(1.0, "f64")
    for j in range(2, 10):
        kb.selp(kb.mul(prod, float(j)), prod, kb.setp("ge", k, float(j), type_="f64"), out=prod)
    inv = kb.div(1.0, x, type_="f64")
    inv2 = kb.mul(inv, inv)
    series = kb.mul(inv, kb.fma(inv2, kb.fma(inv2, 1.0 / 1260, -1.0 / 360), 1.0 / 12))
    big = kb.add(kb.fma(kb.sub(x, 0.5), T.log_f64(kb, x), kb.sub(_HALF_LOG_2PI, x, type_="f64")), series)
    return kb.selp(T.log_f64(kb, prod), big, small)


def generate_poisson(spec: PoissonSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math="precise")
    kb.maxntid(spec.threads)
    out, n, q0 = kb.param_ptr("out"), kb.param("n", "u64"), kb.param("q0", "u64")
    key = (kb.param("key0", "u32"), kb.param("key1", "u32"))
    lam = kb.param("lam", "f64")
    c = [kb.param(f"c{i}", "f64") for i in range(5)]
    i = kb.cvt(kb.mad(kb.ctaid(), kb.ntid(), kb.tid()), "u64")
    kb.ret(kb.setp("ge", i, n))
    q = kb.add(q0, i)
    ctr2 = kb.cvt(q, "u32")
    ctr3 = kb.or_(kb.cvt(kb.shr(q, 32), "u32"), 0x80000000)
    zero = kb.mov(0, "u32")
    k = kb.mov(0.0, "f64")
    done = "$L_poisson_done"
    if spec.method == "knuth":
        prod = kb.mov(1.0, "f64")
    with kb.loop(0, MAX_ROUNDS, 1, type_="u32") as j:
        w = philox4x32_10(kb, (j, zero, ctr2, ctr3), key)
        u1 = T.uniform_f64_hq(kb, w[0], w[1])
        u2 = T.uniform_f64_hq(kb, w[2], w[3])
        if spec.method == "knuth":
            for u in (u1, u2):
                kb.mul(prod, u, out=prod)
                kb.bra(done, kb.setp("le", prod, c[0]))
                kb.add(k, 1.0, out=k)
        else:
            b, a, log_invalpha, vr, loglam = c
            uu = kb.sub(u1, 0.5)
            us = kb.sub(0.5, kb.abs(uu), type_="f64")
            kk = kb.floor(kb.add(kb.fma(kb.fma(kb.div(a, us, type_="f64"), 2.0, b), uu, lam), 0.43))
            kb.assign(k, kk)
            quick = kb.and_(kb.setp("ge", us, 0.07), kb.setp("le", u2, vr))
            kb.bra(done, quick)
            reject = kb.or_(kb.setp("lt", kk, 0.0),
                            kb.and_(kb.setp("lt", us, 0.013), kb.setp("gt", u2, us)))
            with kb.if_(reject, negate=True):
                lhs = kb.sub(kb.add(T.log_f64(kb, u2), log_invalpha),
                             T.log_f64(kb, kb.add(kb.div(a, kb.mul(us, us), type_="f64"), b)))
                rhs = kb.sub(kb.fma(kk, loglam, kb.neg(lam)), _log_factorial(kb, kb.max(kk, 0.0)))
                kb.bra(done, kb.setp("le", lhs, rhs))
    kb.label(done)
    value = kb.cvt(k, "u32" if spec.out_type == "u32" else "s64", rnd="rzi")
    kb.st("global", kb.addr(out, i, 4 if spec.out_type == "u32" else 8), value)
    return kb.ptx()


def poisson_configurations(arch: str) -> list[PoissonSpec]:
    return [PoissonSpec(arch=arch, method=m, out_type=o) for m in METHODS for o in OUTPUTS]


registry.register_family(PoissonSpec.family, PoissonSpec, generate_poisson, poisson_configurations)
