"""PTX generator of the tridiagonal eigenvector solver (LAPACK's stein, inverse iteration):

``solver_stein``: one thread per eigenvalue lambda_j of the Hermitian tridiagonal matrix that
sytrd/hetrd left in a column-major n x n array (d_i = Re a(i, i), t_i = a(i + 1, i), possibly
complex or negative). The thread works on T' = D^H T D, the real symmetric tridiagonal with
off-diagonal |t_i| (D = diag(d), d_0 = 1, d_{i+1} = d_i t_i / |t_i|, a diagonal unitary
scaling), and writes D y, an eigenvector of T:

- T' - lambda_j I = P L U by Gaussian elimination with partial pivoting (LAPACK's lagtf: U has
  two super-diagonals, L one multiplier per step); pivots smaller than eps ||T||_1 replaced by
  that value with their sign (lagts's perturbation, so an exact eigenvalue gives a huge but
  finite solution rather than a division by zero);
- a pseudo-random start vector b (a hash of (i, j) in (-1, 1), as stein's dlarnv: vectors of a
  repeated eigenvalue start independent, so they span its eigenspace), then ``STEIN_ITERS``
  solves (T' - lambda_j I) x = b, b rescaled before each to ||b||_1 = n eps ||T||_1 (stein's
  scaling, which keeps x bounded);
- x normalized in the 2-norm (scaled by max |x_i| first), D applied, column j of ``y``.

The factors and the iterate live in a per-thread global scratch of 6 arrays of n reals laid out
[array][i][thread], so a warp's accesses are coalesced. ``info`` (one int32 per matrix) is set
to 1 when T holds a NaN or an infinity (the caller raises LinAlgError). Vectors of eigenvalues
in a cluster are not orthogonalized here: the caller does that for the whole Y (eigen.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...ptx import registry
from ...ptx.builder import KernelBuilder
from ...ptx.spec import KernelSpec
from .common import DTYPES, Matrix, cabs, check_dtype, cmul, components, esize, real_type

STEIN_THREADS = 128
#: inverse-iteration solves per eigenvalue (stein: at most 5, usually 3: one to converge and
#: its two extra ones)
STEIN_ITERS = 4
#: per-thread scratch arrays: U1, U2, U3 (U's diagonals), L (multipliers), P (swaps), B (iterate)
STEIN_ARRAYS = 6


@dataclass(frozen=True)
class SteinSpec(KernelSpec):
    family: ClassVar[str] = "solver_stein"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "SteinSpec")


def generate_stein(spec: SteinSpec) -> str:
    """Params: n, a, lda (the tridiagonal, one matrix), w (its n ascending eigenvalues), j0, cnt
    (this launch's eigenvalues j0 .. j0 + cnt - 1, one thread each), ws (6 n cnt reals), y, ldy
    (column j of y gets eigenvector j), info (one int32)."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype)
    rs = es // nc
    eps = 2.0 ** -24 if rt == "f32" else 2.0 ** -53
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(STEIN_THREADS)
    n = kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    w, j0, cnt = kb.param_ptr("w"), kb.param("j0", "u32"), kb.param("cnt", "u32")
    ws = kb.param_ptr("ws")
    y, ldy, info = kb.param_ptr("y"), kb.param("ldy", "u32"), kb.param_ptr("info")
    jl = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", jl, cnt))
    j = kb.add(j0, jl)
    A = Matrix(kb, "global", a, lda, spec.dtype)
    Y = Matrix(kb, "global", y, ldy, spec.dtype)
    nm1 = kb.sub(n, 1)
    n64, cnt64, jl64 = kb.cvt(n, "u64"), kb.cvt(cnt, "u64"), kb.cvt(jl, "u64")
    bases = [kb.mul(n64, arr) for arr in range(STEIN_ARRAYS)]

    def slot(arr: int, i):  # address of scratch array ``arr``, row i, this thread
        return kb.addr(ws, kb.mad(kb.add(bases[arr], kb.cvt(i, "u64")), cnt64, jl64), rs)

    def ld(arr: int, i):
        return kb.ld("global", rt, slot(arr, i))

    def st(arr: int, i, v):
        kb.st("global", slot(arr, i), v)

    def d(i):
        return A.load(i, i)[0]

    def e(i):  # |t_i|, i < n - 1
        return cabs(kb, A.load(kb.add(i, 1), i))

    U1, U2, U3, L, P, B = range(STEIN_ARRAYS)
    # ||T||_1 and a finiteness check (NaN and inf survive a sum; max/min would drop NaN)
    onenrm, total = kb.mov(0.0, rt), kb.mov(0.0, rt)
    with kb.loop(0, n, 1, type_="u32") as i:
        r = kb.abs(d(i))
        with kb.if_(kb.setp("gt", i, 0)):
            kb.add(r, e(kb.sub(i, 1)), out=r)
        with kb.if_(kb.setp("lt", i, nm1)):
            kb.add(r, e(i), out=r)
        kb.max(onenrm, r, out=onenrm)
        kb.add(total, r, out=total)
    with kb.if_(kb.setp("lt", total, float("inf")), negate=True):
        kb.st("global", info, kb.mov(1, "s32"))
        kb.ret()
    kb.assign(onenrm, kb.selp(kb.mov(1.0, rt), onenrm, kb.setp("eq", onenrm, 0.0)))
    pert = kb.mul(onenrm, eps)
    target = kb.mul(kb.mul(kb.cvt(n, rt), eps), onenrm)  # stein's ||b||_1 before each solve
    lam = kb.ld("global", rt, kb.addr(w, j, rs))

    def perturbed(u):
        s = kb.selp(kb.neg(pert), pert, kb.setp("lt", u, 0.0))
        return kb.selp(u, s, kb.setp("ge", kb.abs(u), pert))

    # P L U of T' - lambda I (lagtf); the active row holds (pa, pb) at columns k, k + 1
    pa = kb.sub(d(kb.mov(0, "u32")), lam)
    pb = kb.mov(0.0, rt)
    with kb.if_(kb.setp("gt", n, 1)):
        kb.assign(pb, e(kb.mov(0, "u32")))
    zero = kb.mov(0.0, rt)
    with kb.loop(0, nm1, 1, type_="u32") as k:
        k1 = kb.add(k, 1)
        c = e(k)
        na = kb.sub(d(k1), lam)
        nb = kb.mov(0.0, rt)
        with kb.if_(kb.setp("lt", k1, nm1)):
            kb.assign(nb, e(k1))
        swap = kb.setp("lt", kb.abs(pa), kb.abs(c))
        num, den = kb.selp(pa, c, swap), kb.selp(c, pa, swap)
        den_zero = kb.setp("eq", den, 0.0)
        lk = kb.selp(zero, kb.div(num, kb.selp(kb.mov(1.0, rt), den, den_zero)), den_zero)
        st(U1, k, perturbed(kb.selp(c, pa, swap)))
        st(U2, k, kb.selp(na, pb, swap))
        st(U3, k, kb.selp(nb, zero, swap))
        st(L, k, lk)
        st(P, k, kb.selp(kb.mov(1.0, rt), zero, swap))
        new_a = kb.selp(kb.fma(kb.neg(lk), na, pb), kb.fma(kb.neg(lk), pb, na), swap)
        new_b = kb.selp(kb.neg(kb.mul(lk, nb)), nb, swap)
        kb.assign(pa, new_a)
        kb.assign(pb, new_b)
    st(U1, nm1, perturbed(pa))

    # the start vector: a hash of (i, j) mapped to (-1, 1)
    norm1 = kb.mov(0.0, rt)
    jh = kb.add(kb.mul(j, 0x85EBCA77), 0x165667B1)
    with kb.loop(0, n, 1, type_="u32") as i:
        h = kb.xor(kb.mul(i, 0x9E3779B1), jh)
        h = kb.xor(h, kb.shr(h, 15))
        h = kb.mul(h, 0x2C1B3C6D)
        h = kb.xor(h, kb.shr(h, 12))
        h = kb.mul(h, 0x297A2D39)
        h = kb.xor(h, kb.shr(h, 15))
        u = kb.fma(kb.cvt(kb.shr(h, 8), rt), 2.0 ** -23, -1.0 + 2.0 ** -24)
        st(B, i, u)
        kb.add(norm1, kb.abs(u), out=norm1)

    xmax = kb.mov(0.0, rt)
    with kb.loop(0, STEIN_ITERS, 1, type_="u32"):
        scale = kb.div(target, kb.selp(kb.mov(1.0, rt), norm1, kb.setp("eq", norm1, 0.0)))
        # forward: b := L^-1 P b (scaled), the row k + 1 entry carried in a register
        carry = kb.mul(ld(B, kb.mov(0, "u32")), scale)
        with kb.loop(0, nm1, 1, type_="u32") as k:
            k1 = kb.add(k, 1)
            nxt = kb.mul(ld(B, k1), scale)
            lk = ld(L, k)
            swapped = kb.setp("ne", ld(P, k), 0.0)
            st(B, k, kb.selp(nxt, carry, swapped))
            kb.assign(carry, kb.selp(kb.fma(kb.neg(lk), nxt, carry), kb.fma(kb.neg(lk), carry, nxt), swapped))
        # back: x := U^-1 b, overwriting b; x_{k+1}, x_{k+2} carried
        x1 = kb.div(carry, ld(U1, nm1))
        st(B, nm1, x1)
        x2 = kb.mov(0.0, rt)
        kb.assign(norm1, kb.abs(x1))
        kb.assign(xmax, kb.abs(x1))
        with kb.loop(0, nm1, 1, type_="u32") as m:
            k = kb.sub(kb.sub(nm1, 1), m)
            acc = kb.fma(kb.neg(ld(U2, k)), x1, ld(B, k))
            kb.fma(kb.neg(ld(U3, k)), x2, acc, out=acc)
            x = kb.div(acc, ld(U1, k))
            st(B, k, x)
            kb.assign(x2, x1)
            kb.assign(x1, x)
            kb.add(norm1, kb.abs(x), out=norm1)
            kb.max(xmax, kb.abs(x), out=xmax)

    # normalize (2-norm, scaled by max |x_i|), apply D, write column j
    inv_max = kb.rcp(kb.selp(kb.mov(1.0, rt), xmax, kb.setp("eq", xmax, 0.0)))
    ss = kb.mov(0.0, rt)
    with kb.loop(0, n, 1, type_="u32") as i:
        q = kb.mul(ld(B, i), inv_max)
        kb.fma(q, q, ss, out=ss)
    f = kb.div(inv_max, kb.sqrt(kb.selp(kb.mov(1.0, rt), ss, kb.setp("eq", ss, 0.0))))
    ph = [kb.mov(1.0, rt)] + [kb.mov(0.0, rt) for _ in range(nc - 1)]
    with kb.loop(0, n, 1, type_="u32") as i:
        x = kb.mul(ld(B, i), f)
        Y.store(i, j, [kb.mul(p, x) for p in ph])
        with kb.if_(kb.setp("lt", i, nm1)):
            t = A.load(kb.add(i, 1), i)
            mag = cabs(kb, t)
            tz = kb.setp("eq", mag, 0.0)
            inv = kb.rcp(kb.selp(kb.mov(1.0, rt), mag, tz))
            unit = [kb.selp(kb.mov(1.0, rt), kb.mul(t[0], inv), tz)] + \
                [kb.selp(zero, kb.mul(t[c], inv), tz) for c in range(1, nc)]
            for dst, val in zip(ph, cmul(kb, ph, unit)):
                kb.assign(dst, val)
    return kb.ptx()


registry.register_family("solver_stein", SteinSpec, generate_stein,
                         lambda arch: [SteinSpec(arch=arch, dtype=d) for d in DTYPES])
