"""PTX generator of the Jacobi eigensolver for Hermitian matrices (syevj), one CTA per matrix
(grid x = batch):

- the stored ``uplo`` triangle is read and the full Hermitian matrix built in shared memory
  (``space="shared"``) or in a global scratch (``"global"``, for orders whose A and V do not fit);
- cyclic sweeps in round-robin order: each round takes n/2 disjoint pairs (p, q) (the circle
  method; an odd order pads a dummy index), one thread per pair computes the rotation that zeroes
  A(p, q) (the real 2 x 2 problem after the phase of A(p, q) is factored out: zeta = (a_qq -
  a_pp) / 2|a_pq|, t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), c = 1/sqrt(1 + t^2), s = c t),
  then all rows, then all columns (and V's columns) are rotated in parallel: A <- J^H A J, V <- V J;
  a rotation with |a_pq| <= tol sqrt|a_pp a_qq| is skipped (below rounding, it only adds noise);
- after each sweep the off-diagonal mass is reduced over the CTA; the sweeps stop when it is at
  most n (tol ||A||_F)^2 or after ``max_sweeps`` (info = max_sweeps + 1 then, as syevj reports
  non-convergence);
- the eigenvalues (real diagonal) are ranked ascending (ties by index) and written with their
  eigenvectors in that order.
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
)
from .qr_kernels import _block_sum

SPACES = ("shared", "global")
JACOBI_THREADS = 128
#: the largest order the shared-memory variant holds (A and V together)
SMALL_MAX = 64


@dataclass(frozen=True)
class SyevjSpec(KernelSpec):
    family: ClassVar[str] = "solver_syevj"
    dtype: str = "float32"
    uplo: str = "L"
    vectors: bool = True
    space: str = "shared"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "SyevjSpec")
        if self.uplo not in ("L", "U") or self.space not in SPACES:
            raise ValueError(f"SyevjSpec: uplo={self.uplo!r}, space={self.space!r}")


def shared_bytes(n: int, dtype: str, vectors: bool) -> int:
    """Dynamic shared memory of the shared variant: A (and V), then the rotation table of one
    round (at most SMALL_MAX / 2 pairs of 2 + nc reals; 4 elements a pair bound it)."""
    if n > SMALL_MAX:
        raise ValueError(f"syevj shared variant: order {n} > {SMALL_MAX}; the global variant takes it")
    return (2 if vectors else 1) * n * n * esize(dtype) + SMALL_MAX * 4 * esize(dtype)


def scratch_elements(n, kb: KernelBuilder | None = None):
    """Elements (of the dtype) of the global variant's scratch per matrix: A and V (n^2 each) and
    the rotation table, 2 (n + 1) elements, which holds ceil(n/2) pairs of 2 + nc reals for real
    (3 (n + 1) / 2 <= 2 (n + 1)) and complex (4 (n + 1) / 2 reals = (n + 1) elements) dtypes. With
    ``kb``, ``n`` is a u32 register and the count is computed in the kernel."""
    if kb is None:
        return 2 * n * n + 2 * (n + 1)
    return kb.add(kb.mul(kb.mul(n, n), 2), kb.mul(kb.add(n, 1), 2))


def generate_syevj(spec: SyevjSpec) -> str:
    """Params: n, a, lda, stride_a, w, stride_w, v, ldv, stride_v, scratch, info, tol, max_sweeps.
    a: the input (only the uplo triangle read); w: n eigenvalues (real dtype) per matrix; v: the
    eigenvectors (columns; unused without ``vectors``); scratch: 2 n^2 elements per matrix (global
    space only); info: one int32 per matrix (0 or max_sweeps + 1)."""
    rt, nc, es, T = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype), JACOBI_THREADS
    rs = es // nc
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    n = kb.param("n", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    w, stride_w = kb.param_ptr("w"), kb.param("stride_w", "u64")
    v, ldv, stride_v = kb.param_ptr("v"), kb.param("ldv", "u32"), kb.param("stride_v", "u64")
    scratch, info = kb.param_ptr("scratch"), kb.param_ptr("info")
    tol, max_sweeps = kb.param("tol", rt), kb.param("max_sweeps", "u32")
    red = kb.shared("red", rt, T // 32)
    tid, bat = kb.tid(), kb.ctaid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    src = Matrix(kb, "global", batch_base(kb, a, bat, stride_a, es), lda, spec.dtype)
    if spec.space == "shared":
        limit = SHARED_OPTIN_LIMIT[max(k for k in SHARED_OPTIN_LIMIT if k <= spec.sm)]
        smem = kb.dynamic_shared("work", min(shared_bytes(SMALL_MAX, spec.dtype, True), limit - 256))
        base = kb.shared_addr(smem)
        A = Matrix(kb, "shared", base, n, spec.dtype)
        nn_bytes = kb.mul(kb.mul(n, n), es)
        V = Matrix(kb, "shared", kb.add(base, nn_bytes), n, spec.dtype)
        rot = kb.add(base, kb.mul(nn_bytes, 2 if spec.vectors else 1))
        rot_space = "shared"
    else:
        # A, V and the round's rotation table (ceil(n/2) pairs of 2 + nc reals: any order, so it
        # cannot be a static shared array sized for SMALL_MAX) in the global scratch
        sb = batch_base(kb, scratch, bat, kb.cvt(scratch_elements(n, kb), "u64"), es)
        A = Matrix(kb, "global", sb, n, spec.dtype)
        V = Matrix(kb, "global", kb.addr(sb, kb.mul(n, n), es), n, spec.dtype)
        rot = kb.addr(sb, kb.mul(kb.mul(n, n), 2), es)
        rot_space = "global"
    zero = kb.mov(0.0, rt)
    lower = spec.uplo == "L"
    total = kb.mul(n, n)
    with kb.loop(tid, total, T) as e:  # the full Hermitian matrix from the stored triangle; V = I
        j = kb.div(e, n)
        i = kb.sub(e, kb.mul(j, n))
        stored = kb.setp("ge" if lower else "le", i, j)
        x = src.load(kb.selp(i, j, stored), kb.selp(j, i, stored))
        x = [x[0]] + ([kb.selp(x[1], kb.neg(x[1]), stored)] if nc == 2 else [])
        if nc == 2:
            x[1] = kb.selp(zero, x[1], kb.setp("eq", i, j))
        A.store(i, j, x)
        if spec.vectors:
            V.store(i, j, [kb.selp(1.0, 0.0, kb.setp("eq", i, j), type_=rt)] + [zero] * (nc - 1))
    kb.bar_sync()
    # the Frobenius norm squared, for the stopping test
    part = kb.mov(0.0, rt)
    with kb.loop(tid, total, T) as e:
        j = kb.div(e, n)
        for x in A.load(kb.sub(e, kb.mul(j, n)), j):
            kb.fma(x, x, part, out=part)
    fro = _block_sum(kb, part, red, warp, lane, T)
    limit = kb.mul(kb.mul(kb.mul(tol, tol), fro), kb.cvt(n, rt))  # off-norm <= tol sqrt(n) ||A||_F
    m = kb.add(n, kb.and_(n, 1))         # rounds pair m indices; an odd n pads the dummy n
    half = kb.shr(m, 1)
    rounds = kb.sub(m, 1)
    sweeps = kb.mov(0, "u32")
    converged = kb.mov(0, "u32")
    rsz = rs * (1 + 1 + nc)              # per pair: c, s, u (nc components)

    def rem(x: Value, d: Value) -> Value:
        return kb.sub(x, kb.mul(kb.div(x, d), d))

    def pair(r: Value, i: Value) -> tuple[Value, Value]:
        """The i-th pair of round r (circle method over m - 1 rotating players and player m - 1)."""
        mm1 = rounds
        p0 = kb.selp(kb.sub(m, 1), rem(kb.add(r, i), mm1), kb.setp("eq", i, 0))
        q0 = rem(kb.sub(kb.add(r, mm1), i), mm1)
        q0 = kb.selp(r, q0, kb.setp("eq", i, 0))
        return kb.min(p0, q0), kb.max(p0, q0)

    loop_top = "$L_sweep"
    done = "$L_sweeps_done"
    kb.label("sweep")
    with kb.if_(kb.setp("ge", sweeps, max_sweeps)):
        kb.bra(done)
    with kb.loop(0, rounds, 1, type_="u32") as r:
        with kb.loop(tid, half, T) as i:  # the rotations of this round
            p, q = pair(r, i)
            ra = kb.addr(rot, i, rsz)
            real = kb.setp("lt", q, n)   # not the dummy partner of an odd order
            qc = kb.min(q, kb.sub(n, 1))
            app, aqq = A.load(p, p)[0], A.load(qc, qc)[0]
            apq = A.load(p, qc)
            g = cabs(kb, apq)  # scaled: an underflowing |a_pq|^2 would make |u| != 1 (J not unitary)
            # rotations below rounding (|a_pq| <= tol sqrt|a_pp a_qq|) are skipped: they only add noise
            small = kb.setp("le", g, kb.mul(tol, kb.sqrt(kb.abs(kb.mul(app, aqq)))))
            skip = kb.or_(kb.or_(kb.not_(real), kb.setp("eq", g, 0.0)), small)
            gs = kb.selp(1.0, g, skip, type_=rt)
            zeta = kb.div(kb.sub(aqq, app), kb.mul(gs, 2.0))
            t = kb.div(1.0, kb.add(kb.abs(zeta), kb.sqrt(kb.fma(zeta, zeta, 1.0))), type_=rt)
            t = kb.selp(kb.neg(t), t, kb.setp("lt", zeta, 0.0))
            c = kb.div(1.0, kb.sqrt(kb.fma(t, t, 1.0)), type_=rt)
            s = kb.mul(c, t)
            if nc == 1:
                u = [kb.selp(1.0, kb.selp(1.0, -1.0, kb.setp("ge", apq[0], 0.0), type_=rt), skip, type_=rt)]
            else:
                u = [kb.selp(1.0, kb.div(apq[0], gs), skip, type_=rt), kb.selp(zero, kb.div(apq[1], gs), skip)]
            c = kb.selp(1.0, c, skip, type_=rt)
            s = kb.selp(zero, s, skip)
            for k, val in enumerate([c, s] + u):
                kb.st(rot_space, ra, val, offset=k * rs)
        kb.bar_sync()

        def load_rot(i: Value) -> tuple[Value, Value, list[Value]]:
            ra = kb.addr(rot, i, rsz)
            vals = [kb.ld(rot_space, rt, ra, offset=k * rs) for k in range(2 + nc)]
            return vals[0], vals[1], vals[2:]

        items = kb.mul(half, n)
        with kb.loop(tid, items, T) as e:  # rows: A_p <- c A_p - s u A_q, A_q <- s A_p + c u A_q
            i = kb.div(e, n)
            k = kb.sub(e, kb.mul(i, n))
            p, q = pair(r, i)
            with kb.if_(kb.setp("lt", q, n)):
                c, s, u = load_rot(i)
                xp, xq = A.load(p, k), A.load(q, k)
                uq = cmul(kb, u, xq)
                A.store(p, k, [kb.fma(c, x, kb.neg(kb.mul(s, y))) for x, y in zip(xp, uq)])
                A.store(q, k, [kb.fma(s, x, kb.mul(c, y)) for x, y in zip(xp, uq)])
        kb.bar_sync()
        with kb.loop(tid, items, T) as e:  # columns of A and V: X_p <- c X_p - s conj(u) X_q, ...
            i = kb.div(e, n)
            k = kb.sub(e, kb.mul(i, n))
            p, q = pair(r, i)
            with kb.if_(kb.setp("lt", q, n)):
                c, s, u = load_rot(i)
                cu = conj(kb, u)
                for X in ([A, V] if spec.vectors else [A]):
                    xp, xq = X.load(k, p), X.load(k, q)
                    uq = cmul(kb, cu, xq)
                    X.store(k, p, [kb.fma(c, x, kb.neg(kb.mul(s, y))) for x, y in zip(xp, uq)])
                    X.store(k, q, [kb.fma(s, x, kb.mul(c, y)) for x, y in zip(xp, uq)])
        kb.bar_sync()
    kb.add(sweeps, 1, out=sweeps)
    part = kb.mov(0.0, rt)
    with kb.loop(tid, total, T) as e:
        j = kb.div(e, n)
        i = kb.sub(e, kb.mul(j, n))
        with kb.if_(kb.setp("ne", i, j)):
            for x in A.load(i, j):
                kb.fma(x, x, part, out=part)
    off = _block_sum(kb, part, red, warp, lane, T)
    with kb.if_(kb.setp("le", off, limit)):
        kb.mov(1, "u32", out=converged)
        kb.bra(done)
    kb.bra(loop_top)
    kb.label("sweeps_done")
    with kb.if_(kb.setp("eq", tid, 0)):
        bad = kb.selp(kb.cvt(kb.add(max_sweeps, 1), "s32"), 0, kb.setp("eq", converged, 0), type_="s32")
        kb.st("global", kb.addr(info, bat, 4), bad)
    # rank the eigenvalues ascending and write them (and their vectors) in that order
    wb = batch_base(kb, w, bat, stride_w, rs)
    vout = Matrix(kb, "global", batch_base(kb, v, bat, stride_v, es), ldv, spec.dtype)
    with kb.loop(tid, n, T) as i:
        di = A.load(i, i)[0]
        rank = kb.mov(0, "u32")
        with kb.loop(0, n, 1, type_="u32") as j:
            dj = A.load(j, j)[0]
            before = kb.or_(kb.setp("lt", dj, di), kb.and_(kb.setp("eq", dj, di), kb.setp("lt", j, i)))
            kb.add(rank, kb.selp(1, 0, before, type_="u32"), out=rank)
        kb.st("global", kb.addr(wb, rank, rs), di)
        if spec.vectors:
            with kb.loop(0, n, 1, type_="u32") as k:
                vout.store(k, rank, V.load(k, i))
    return kb.ptx()


registry.register_family("solver_syevj", SyevjSpec, generate_syevj,
                         lambda arch: [SyevjSpec(arch=arch, dtype=d, uplo=u, vectors=vec, space=sp) for d in DTYPES
                                       for u in ("L", "U") for vec in (True, False) for sp in SPACES])
