"""PTX generators of the Householder QR (geqrf) and the compact-WY factor of a block of reflectors:

- ``solver_geqr2``: the unblocked Householder QR of an m x w panel (LAPACK's geqr2/larfg), one
  CTA per matrix (grid x = batch). Per column j: ||A(j+1:m, j)||^2 by a block reduction, the
  reflector H = I - tau v v^H with beta = -sign(Re alpha) ||(alpha, x)|| (tau = 0 when x = 0 and
  alpha is real), x scaled by 1/(alpha - beta), then H^H applied to the panel's columns j+1..w-1,
  one warp per column (a shuffle-reduced v^H a_c, then a_c -= conj(tau) (v^H a_c) v). The
  reflectors are left below the diagonal, R on and above it, tau in ``tau``.
- ``solver_larft``: T (w x w upper triangular, zeros below) with H_1 ... H_w = I - V T V^H
  (LAPACK's larft, forward, columnwise): T(j, j) = tau_j, T(0:j, j) = -tau_j T(0:j, 0:j) V^H v_j,
  the dot products one warp each. The blocked geqrf, orgqr and ormqr apply blocks with it
  through oxicuda.blas GEMMs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...ptx import registry
from ...ptx.builder import KernelBuilder, Value
from ...ptx.spec import KernelSpec
from .common import (
    DTYPES,
    Matrix,
    batch_base,
    cdiv,
    check_dtype,
    cmul,
    components,
    conj,
    esize,
    real_type,
    warp_sum,
)

QR_THREADS = 256
#: the widest block larft takes (its z vector lives in shared memory)
NB_MAX = 64


@dataclass(frozen=True)
class Geqr2Spec(KernelSpec):
    family: ClassVar[str] = "solver_geqr2"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "Geqr2Spec")


def _block_sum(kb: KernelBuilder, v: Value, red, warp: Value, lane: Value, T: int) -> Value:
    """Sum of ``v`` over the CTA, in every thread (warp shuffles, then the warps' partials through
    shared memory); two barriers."""
    size = 4 if v.type == "f32" else 8
    w = warp_sum(kb, v)
    with kb.if_(kb.setp("eq", lane, 0)):
        kb.st("shared", kb.mad(warp, size, kb.shared_addr(red)), w)
    kb.bar_sync()
    total = kb.mov(0.0, v.type)
    base = kb.shared_addr(red)
    for k in range(T // 32):
        kb.add(total, kb.ld("shared", v.type, base, offset=k * size), out=total)
    kb.bar_sync()
    return total


def generate_geqr2(spec: Geqr2Spec) -> str:
    """Params: m, w, a, lda, stride_a, tau, stride_tau. Grid x: the batch."""
    rt, nc, es, T = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype), QR_THREADS
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    m, w = kb.param("m", "u32"), kb.param("w", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    tau_p, stride_tau = kb.param_ptr("tau"), kb.param("stride_tau", "u64")
    red = kb.shared("red", rt, T // 32)
    tid, bat = kb.tid(), kb.ctaid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    a = batch_base(kb, a, bat, stride_a, es)
    tau_p = batch_base(kb, tau_p, bat, stride_tau, es)
    A = Matrix(kb, "global", a, lda, spec.dtype)
    zero = kb.mov(0.0, rt)
    with kb.loop(0, kb.min(m, w), 1, type_="u32") as j:
        part = kb.mov(0.0, rt)
        with kb.loop(kb.add(kb.add(j, 1), tid), m, T) as i:
            for x in A.load(i, j):
                kb.fma(x, x, part, out=part)
        xnorm2 = _block_sum(kb, part, red, warp, lane, T)
        alpha = A.load(j, j)
        kb.bar_sync()  # every thread has read alpha before thread 0 overwrites it with beta
        trivial = kb.setp("eq", xnorm2, 0.0)
        if nc == 2:
            trivial = kb.and_(trivial, kb.setp("eq", alpha[1], 0.0))
        sq = kb.fma(alpha[0], alpha[0], xnorm2)
        if nc == 2:
            sq = kb.fma(alpha[1], alpha[1], sq)
        mag = kb.sqrt(sq)
        beta = kb.selp(kb.neg(mag), mag, kb.setp("ge", alpha[0], 0.0))
        tau = [kb.div(kb.sub(beta, alpha[0]), beta)] + ([kb.div(kb.neg(alpha[1]), beta)] if nc == 2 else [])
        tau = [kb.selp(zero, t, trivial) for t in tau]
        scal = cdiv(kb, [kb.mov(1.0, rt)] + [zero] * (nc - 1), [kb.sub(alpha[0], beta)] + alpha[1:])
        with kb.if_(trivial, negate=True):
            with kb.loop(kb.add(kb.add(j, 1), tid), m, T) as i:
                A.store(i, j, cmul(kb, A.load(i, j), scal))
            with kb.if_(kb.setp("eq", tid, 0)):
                A.store(j, j, [beta] + [zero] * (nc - 1))
        with kb.if_(kb.setp("eq", tid, 0)):
            A.store_at(kb.addr(tau_p, j, es), tau)
        kb.bar_sync()
        ctau = conj(kb, tau)
        with kb.loop(kb.add(kb.add(j, 1), warp), w, T // 32) as c:
            s = [kb.mov(0.0, rt) for _ in range(nc)]
            with kb.loop(kb.add(j, lane), m, 32) as i:
                v = A.load(i, j)
                one = kb.setp("eq", i, j)
                v = [kb.selp(kb.mov(1.0, rt), v[0], one)] + [kb.selp(zero, x, one) for x in v[1:]]
                for q, val in enumerate(cmul(kb, conj(kb, v), A.load(i, c))):
                    kb.add(s[q], val, out=s[q])
            s = [warp_sum(kb, x) for x in s]
            f = cmul(kb, ctau, s)
            with kb.loop(kb.add(j, lane), m, 32) as i:
                v = A.load(i, j)
                one = kb.setp("eq", i, j)
                v = [kb.selp(kb.mov(1.0, rt), v[0], one)] + [kb.selp(zero, x, one) for x in v[1:]]
                ac = A.load(i, c)
                upd = cmul(kb, f, v)
                A.store(i, c, [kb.sub(x, y) for x, y in zip(ac, upd)])
        kb.bar_sync()
    return kb.ptx()


@dataclass(frozen=True)
class LarftSpec(KernelSpec):
    family: ClassVar[str] = "solver_larft"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "LarftSpec")


def generate_larft(spec: LarftSpec) -> str:
    """Params: m (rows of V), w (reflectors, <= NB_MAX), v, ldv (the panel as geqr2 left it:
    unit diagonal implicit), tau, t, ldt. One CTA."""
    rt, nc, es, T = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype), QR_THREADS
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    m, w = kb.param("m", "u32"), kb.param("w", "u32")
    v, ldv = kb.param_ptr("v"), kb.param("ldv", "u32")
    tau_p, t, ldt = kb.param_ptr("tau"), kb.param_ptr("t"), kb.param("ldt", "u32")
    z = kb.shared("z", rt, NB_MAX * nc)
    tid = kb.tid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    V, Tm = Matrix(kb, "global", v, ldv, spec.dtype), Matrix(kb, "global", t, ldt, spec.dtype)
    Z = Matrix(kb, "shared", kb.shared_addr(z), kb.mov(1, "u32"), spec.dtype)
    zero = kb.mov(0.0, rt)
    with kb.loop(0, w, 1, type_="u32") as j:
        tau = V.load_at(kb.addr(tau_p, j, es))
        ntau = [kb.neg(x) for x in tau]
        with kb.loop(warp, j, T // 32) as i:  # z_i = -tau_j V(:, i)^H v_j over rows >= j
            s = [kb.mov(0.0, rt) for _ in range(nc)]
            with kb.loop(kb.add(j, lane), m, 32) as r:
                vj = V.load(r, j)
                one = kb.setp("eq", r, j)
                vj = [kb.selp(kb.mov(1.0, rt), vj[0], one)] + [kb.selp(zero, x, one) for x in vj[1:]]
                for q, val in enumerate(cmul(kb, conj(kb, V.load(r, i)), vj)):
                    kb.add(s[q], val, out=s[q])
            s = [warp_sum(kb, x) for x in s]
            with kb.if_(kb.setp("eq", lane, 0)):
                Z.store(i, kb.mov(0, "u32"), cmul(kb, ntau, s))
        kb.bar_sync()
        with kb.loop(tid, w, T) as i:  # column j of T: T(0:j, 0:j) z above, tau_j on, 0 below
            acc = [kb.mov(0.0, rt) for _ in range(nc)]
            with kb.if_(kb.setp("lt", i, j)), kb.loop(i, j, 1, type_="u32") as q:
                for c, val in enumerate(cmul(kb, Tm.load(i, q), Z.load(q, kb.mov(0, "u32")))):
                    kb.add(acc[c], val, out=acc[c])
            eq = kb.setp("eq", i, j)
            out = [kb.selp(tau[c], acc[c], eq) for c in range(nc)]
            Tm.store(i, j, out)
        kb.bar_sync()
    return kb.ptx()


registry.register_family("solver_geqr2", Geqr2Spec, generate_geqr2,
                         lambda arch: [Geqr2Spec(arch=arch, dtype=d) for d in DTYPES])
registry.register_family("solver_larft", LarftSpec, generate_larft,
                         lambda arch: [LarftSpec(arch=arch, dtype=d) for d in DTYPES])
