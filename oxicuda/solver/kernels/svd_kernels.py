"""PTX generator of the one-sided Jacobi SVD (gesvdj) of an m x n matrix with m >= n, one CTA per
matrix (grid x = batch):

- A is copied into a work array W (shared memory when W and V fit the opt-in limit, else a
  global scratch) and V = I;
- cyclic sweeps in round-robin order over column pairs: per pair one warp reduces alpha =
  ||w_p||^2, beta = ||w_q||^2 and gamma = w_p^H w_q, and the rotation J that diagonalizes the
  Gram block [[alpha, gamma], [conj gamma, beta]] (the formula of the Hermitian Jacobi
  eigensolver) is applied to W's and V's columns: W <- W J, V <- V J; pairs with |gamma| <=
  tol sqrt(alpha beta) are left alone; the sweeps stop after one without a rotation, or after
  ``max_sweeps`` (info = max_sweeps + 1);
- sigma_j = ||w_j||, ranked descending (ties by index); U's column = w_j / sigma_j (zero for
  sigma_j = 0), and V^H's row = conj(v_j), written in that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...ptx import registry
from ...ptx.builder import KernelBuilder, Value
from ...ptx.builder_base import SHARED_OPTIN_LIMIT
from ...ptx.spec import KernelSpec
from .common import (
    DTYPES,
    Matrix,
    batch_base,
    cabs,
    check_dtype,
    cmul,
    components,
    conj,
    esize,
    real_type,
    warp_sum,
)

SPACES = ("shared", "global")
SVD_THREADS = 128
SMALL_MAX = 64


@dataclass(frozen=True)
class GesvdjSpec(KernelSpec):
    family: ClassVar[str] = "solver_gesvdj"
    dtype: str = "float32"
    vectors: bool = True
    space: str = "shared"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "GesvdjSpec")
        if self.space not in SPACES:
            raise ValueError(f"GesvdjSpec: space={self.space!r}; allowed {SPACES}")


def shared_bytes(m: int, n: int, dtype: str) -> int:
    """Dynamic shared memory of the shared variant (W and V; the column norms are a static array
    of SMALL_MAX reals, so n must not exceed it)."""
    if n > SMALL_MAX:
        raise ValueError(f"gesvdj shared variant: n={n} > {SMALL_MAX}; the global variant takes it")
    return (m * n + n * n) * esize(dtype)


def scratch_elements(m, n, kb: KernelBuilder | None = None):
    """Elements (of the dtype) of the global variant's scratch per matrix: W (m n), V (n^2) and
    the n column norms (reals, one element each). With ``kb``, m and n are u32 registers."""
    if kb is None:
        return m * n + n * n + n
    return kb.add(kb.add(kb.mul(m, n), kb.mul(n, n)), n)


def generate_gesvdj(spec: GesvdjSpec) -> str:
    """Params: m, n, a, lda, stride_a, s, stride_s, u, ldu, stride_u, vt, ldvt, stride_vt,
    scratch, info, tol, max_sweeps."""
    rt, nc, es, T = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype), SVD_THREADS
    rs = es // nc
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    m, n = kb.param("m", "u32"), kb.param("n", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    s_p, stride_s = kb.param_ptr("s"), kb.param("stride_s", "u64")
    u_p, ldu, stride_u = kb.param_ptr("u"), kb.param("ldu", "u32"), kb.param("stride_u", "u64")
    vt_p, ldvt, stride_vt = kb.param_ptr("vt"), kb.param("ldvt", "u32"), kb.param("stride_vt", "u64")
    scratch, info = kb.param_ptr("scratch"), kb.param_ptr("info")
    tol, max_sweeps = kb.param("tol", rt), kb.param("max_sweeps", "u32")
    flag = kb.shared("flag", "u32", 1)
    tid, bat = kb.tid(), kb.ctaid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    nwarps = T // 32
    src = Matrix(kb, "global", batch_base(kb, a, bat, stride_a, es), lda, spec.dtype)
    if spec.space == "shared":
        limit = SHARED_OPTIN_LIMIT[max(k for k in SHARED_OPTIN_LIMIT if k <= spec.sm)]
        smem = kb.dynamic_shared("work", min(2 * SMALL_MAX * SMALL_MAX * es, limit - 1024))
        base = kb.shared_addr(smem)
        W = Matrix(kb, "shared", base, m, spec.dtype)
        V = Matrix(kb, "shared", kb.add(base, kb.mul(kb.mul(m, n), es)), n, spec.dtype)
        norms, nspace = kb.shared_addr(kb.shared("norms", rt, SMALL_MAX)), "shared"  # n <= SMALL_MAX here
    else:
        # W, V and the n column norms (any n: not a static shared array) in the global scratch
        sb = batch_base(kb, scratch, bat, kb.cvt(scratch_elements(m, n, kb), "u64"), es)
        W = Matrix(kb, "global", sb, m, spec.dtype)
        V = Matrix(kb, "global", kb.addr(sb, kb.mul(m, n), es), n, spec.dtype)
        norms, nspace = kb.addr(sb, kb.add(kb.mul(m, n), kb.mul(n, n)), es), "global"
    zero = kb.mov(0.0, rt)
    with kb.loop(tid, kb.mul(m, n), T) as e:
        j = kb.div(e, m)
        i = kb.sub(e, kb.mul(j, m))
        W.store(i, j, src.load(i, j))
    with kb.loop(tid, kb.mul(n, n), T) as e:
        j = kb.div(e, n)
        i = kb.sub(e, kb.mul(j, n))
        V.store(i, j, [kb.selp(1.0, 0.0, kb.setp("eq", i, j), type_=rt)] + [zero] * (nc - 1))
    kb.bar_sync()
    mm = kb.add(n, kb.and_(n, 1))
    half, rounds = kb.shr(mm, 1), kb.sub(mm, 1)

    def rem(x: Value, d: Value) -> Value:
        return kb.sub(x, kb.mul(kb.div(x, d), d))

    def pair(r: Value, i: Value) -> tuple[Value, Value]:
        p0 = kb.selp(kb.sub(mm, 1), rem(kb.add(r, i), rounds), kb.setp("eq", i, 0))
        q0 = kb.selp(r, rem(kb.sub(kb.add(r, rounds), i), rounds), kb.setp("eq", i, 0))
        return kb.min(p0, q0), kb.max(p0, q0)

    sweeps, converged = kb.mov(0, "u32"), kb.mov(0, "u32")
    flag_a = kb.shared_addr(flag)
    kb.label("sweep")
    with kb.if_(kb.setp("ge", sweeps, max_sweeps)):
        kb.bra("$L_svd_done")
    with kb.if_(kb.setp("eq", tid, 0)):
        kb.st("shared", flag_a, kb.mov(0, "u32"))
    kb.bar_sync()
    with kb.loop(0, rounds, 1, type_="u32") as r:
        with kb.loop(warp, half, nwarps) as i:  # one warp per pair: Gram block, rotation, update
            p, q = pair(r, i)
            with kb.if_(kb.setp("lt", q, n)):
                al, be = kb.mov(0.0, rt), kb.mov(0.0, rt)
                ga = [kb.mov(0.0, rt) for _ in range(nc)]
                with kb.loop(lane, m, 32) as k:
                    xp, xq = W.load(k, p), W.load(k, q)
                    for x in xp:
                        kb.fma(x, x, al, out=al)
                    for x in xq:
                        kb.fma(x, x, be, out=be)
                    for c, val in enumerate(cmul(kb, conj(kb, xp), xq)):
                        kb.add(ga[c], val, out=ga[c])
                al, be = warp_sum(kb, al), warp_sum(kb, be)
                ga = [warp_sum(kb, x) for x in ga]
                g = cabs(kb, ga)
                skip = kb.or_(kb.setp("eq", g, 0.0), kb.setp("le", g, kb.mul(tol, kb.sqrt(kb.mul(al, be)))))
                with kb.if_(skip, negate=True):
                    with kb.if_(kb.setp("eq", lane, 0)):
                        kb.st("shared", flag_a, kb.mov(1, "u32"))
                    zeta = kb.div(kb.sub(be, al), kb.mul(g, 2.0))
                    t = kb.div(1.0, kb.add(kb.abs(zeta), kb.sqrt(kb.fma(zeta, zeta, 1.0))), type_=rt)
                    t = kb.selp(kb.neg(t), t, kb.setp("lt", zeta, 0.0))
                    c = kb.div(1.0, kb.sqrt(kb.fma(t, t, 1.0)), type_=rt)
                    s = kb.mul(c, t)
                    cu = conj(kb, [kb.div(x, g) for x in ga])
                    for X, rows in ((W, m), (V, n)) if spec.vectors else ((W, m),):
                        with kb.loop(lane, rows, 32) as k:
                            xp, xq = X.load(k, p), X.load(k, q)
                            uq = cmul(kb, cu, xq)
                            X.store(k, p, [kb.fma(c, x, kb.neg(kb.mul(s, y))) for x, y in zip(xp, uq)])
                            X.store(k, q, [kb.fma(s, x, kb.mul(c, y)) for x, y in zip(xp, uq)])
        kb.bar_sync()
    kb.add(sweeps, 1, out=sweeps)
    with kb.if_(kb.setp("eq", kb.ld("shared", "u32", flag_a), 0)):
        kb.mov(1, "u32", out=converged)
        kb.bra("$L_svd_done")
    kb.bar_sync()  # every thread has read the flag before thread 0 clears it
    kb.bra("$L_sweep")
    kb.label("svd_done")
    kb.bar_sync()
    with kb.if_(kb.setp("eq", tid, 0)):
        bad = kb.selp(kb.cvt(kb.add(max_sweeps, 1), "s32"), 0, kb.setp("eq", converged, 0), type_="s32")
        kb.st("global", kb.addr(info, bat, 4), bad)
    with kb.loop(warp, n, nwarps) as j:  # column norms
        acc = kb.mov(0.0, rt)
        with kb.loop(lane, m, 32) as k:
            for x in W.load(k, j):
                kb.fma(x, x, acc, out=acc)
        acc = warp_sum(kb, acc)
        with kb.if_(kb.setp("eq", lane, 0)):
            kb.st(nspace, kb.addr(norms, j, rs), kb.sqrt(acc))
    kb.bar_sync()
    sb_out = batch_base(kb, s_p, bat, stride_s, rs)
    U = Matrix(kb, "global", batch_base(kb, u_p, bat, stride_u, es), ldu, spec.dtype)
    VT = Matrix(kb, "global", batch_base(kb, vt_p, bat, stride_vt, es), ldvt, spec.dtype)
    with kb.loop(tid, n, T) as i:
        si = kb.ld(nspace, rt, kb.addr(norms, i, rs))
        rank = kb.mov(0, "u32")
        with kb.loop(0, n, 1, type_="u32") as j:
            sj = kb.ld(nspace, rt, kb.addr(norms, j, rs))
            before = kb.or_(kb.setp("gt", sj, si), kb.and_(kb.setp("eq", sj, si), kb.setp("lt", j, i)))
            kb.add(rank, kb.selp(1, 0, before, type_="u32"), out=rank)
        kb.st("global", kb.addr(sb_out, rank, rs), si)
        if spec.vectors:
            inv = kb.div(1.0, kb.selp(1.0, si, kb.setp("eq", si, 0.0), type_=rt), type_=rt)
            inv = kb.selp(zero, inv, kb.setp("eq", si, 0.0))
            with kb.loop(0, m, 1, type_="u32") as k:
                U.store(k, rank, [kb.mul(x, inv) for x in W.load(k, i)])
            with kb.loop(0, n, 1, type_="u32") as k:
                VT.store(rank, k, conj(kb, V.load(k, i)))
    return kb.ptx()


registry.register_family("solver_gesvdj", GesvdjSpec, generate_gesvdj,
                         lambda arch: [GesvdjSpec(arch=arch, dtype=d, vectors=v, space=sp) for d in DTYPES
                                       for v in (True, False) for sp in SPACES])
