"""PTX generators of the tridiagonal eigenvalue path (syevd-style eigvalsh for large orders):

- ``solver_sytrd_x``: one CTA, the vector of one step of the Householder tridiagonalization
  (LAPACK's sytd2/hetd2): given p = A22 v (hemv), the reflector's tau (on the device, as geqrf
  wrote it) and v, writes x = y + alpha v with y = tau p, alpha = -1/2 tau (y^H v); the caller
  then applies A22 -= x v^H + v x^H (two gerc);
- ``solver_sytrd_r2``: the rank-2 update A22 -= x v^H + v x^H of that step on the lower
  triangle only (LAPACK's her2, UPLO='L'; the diagonal's imaginary part set to 0 as zher2
  does), one thread per element of a column, grid y the column: a quarter of the traffic of two
  full gerc updates, and the upper triangle is never read;
- ``solver_stebz``: one thread per eigenvalue of the Hermitian tridiagonal matrix held in a
  column-major n x n array (d_i = Re a(i, i), e_i = |a(i + 1, i)|): Gershgorin bounds, then
  bisection on the Sturm count (the number of eigenvalues below x: negative pivots of
  T - x I = L D L^T) until the interval is below 2 eps max|bound| (at most 128 halvings); the
  j-th smallest eigenvalue goes to w[j] (ascending by construction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...ptx import registry
from ...ptx.builder import KernelBuilder
from ...ptx.spec import KernelSpec
from .common import DTYPES, Matrix, cabs, cfms, check_dtype, cmul, components, conj, esize, real_type
from .qr_kernels import _block_sum

X_THREADS = 256
R2_THREADS = 256
STEBZ_THREADS = 128


@dataclass(frozen=True)
class SytrdXSpec(KernelSpec):
    family: ClassVar[str] = "solver_sytrd_x"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "SytrdXSpec")


def generate_sytrd_x(spec: SytrdXSpec) -> str:
    """Params: len, v, p, tau, x (vectors of ``len`` elements, contiguous; tau one element)."""
    rt, nc, es, T = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype), X_THREADS
    rs = es // nc
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    length = kb.param("len", "u32")
    v, p, tau_p, x = kb.param_ptr("v"), kb.param_ptr("p"), kb.param_ptr("tau"), kb.param_ptr("x")
    red = kb.shared("red", rt, T // 32)
    tid = kb.tid()
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    one = kb.mov(1, "u32")
    V, Pm, X = (Matrix(kb, "global", ptr, one, spec.dtype) for ptr in (v, p, x))
    tau = [kb.ld("global", rt, tau_p, offset=c * rs) for c in range(nc)]
    zero = kb.mov(0, "u32")
    parts = [kb.mov(0.0, rt) for _ in range(nc)]
    with kb.loop(tid, length, T) as i:  # y^H v = conj(tau) (p^H v)
        for c, val in enumerate(cmul(kb, conj(kb, Pm.load(i, zero)), V.load(i, zero))):
            kb.add(parts[c], val, out=parts[c])
    pv = [_block_sum(kb, q, red, warp, lane, T) for q in parts]
    yv = cmul(kb, conj(kb, tau), pv)  # y^H v
    # LAPACK's alpha = -1/2 tau (y^H v) (y^H v = conj(tau) v^H A v: |tau|^2 times a real)
    alpha = [kb.mul(q, -0.5) for q in cmul(kb, tau, yv)]
    with kb.loop(tid, length, T) as i:
        y = cmul(kb, tau, Pm.load(i, zero))
        av = cmul(kb, alpha, V.load(i, zero))
        X.store(i, zero, [kb.add(a, b) for a, b in zip(y, av)])
    return kb.ptx()


@dataclass(frozen=True)
class SytrdR2Spec(KernelSpec):
    family: ClassVar[str] = "solver_sytrd_r2"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "SytrdR2Spec")


def generate_sytrd_r2(spec: SytrdR2Spec) -> str:
    """Params: m, x, v (contiguous vectors of m elements), a, lda (the m x m block, column-major);
    grid x covers rows j .. m - 1 of column j = ctaid.y in R2_THREADS-row slices."""
    nc = components(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(R2_THREADS)
    m = kb.param("m", "u32")
    x, v = kb.param_ptr("x"), kb.param_ptr("v")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    j = kb.ctaid("y")
    i = kb.add(j, kb.mad(kb.ctaid(), kb.ntid(), kb.tid()))
    kb.ret(kb.setp("ge", i, m))
    one, zero = kb.mov(1, "u32"), kb.mov(0, "u32")
    X, V = (Matrix(kb, "global", ptr, one, spec.dtype) for ptr in (x, v))
    A = Matrix(kb, "global", a, lda, spec.dtype)
    addr = A.addr(i, j)
    acc = A.load_at(addr)
    cfms(kb, acc, X.load(i, zero), conj(kb, V.load(j, zero)))
    cfms(kb, acc, V.load(i, zero), conj(kb, X.load(j, zero)))
    if nc == 2:
        kb.assign(acc[1], kb.selp(kb.mov(0.0, acc[1].type), acc[1], kb.setp("eq", i, j)))
    A.store_at(addr, acc)
    return kb.ptx()


@dataclass(frozen=True)
class StebzSpec(KernelSpec):
    family: ClassVar[str] = "solver_stebz"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "StebzSpec")


def generate_stebz(spec: StebzSpec) -> str:
    """Params: n, a, lda, stride_a, w, stride_w (u64 strides in elements); grid x over the
    eigenvalue index, grid y the batch."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype)
    rs = es // nc
    eps = 2.0 ** -24 if rt == "f32" else 2.0 ** -53
    tiny = 1e-30 if rt == "f32" else 1e-290
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(STEBZ_THREADS)
    n = kb.param("n", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    w, stride_w = kb.param_ptr("w"), kb.param("stride_w", "u64")
    j = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", j, n))
    z = kb.ctaid("y")
    A = Matrix(kb, "global", kb.addr(a, kb.mul(kb.cvt(z, "u64"), stride_a), es), lda, spec.dtype)
    nm1 = kb.sub(n, 1)

    def d(i):
        return A.load(i, i)[0]

    def e(i):  # |a(i + 1, i)|, i < n - 1
        return cabs(kb, A.load(kb.add(i, 1), i))

    # Gershgorin bounds
    lo, hi = kb.mov(float("inf"), rt), kb.mov(float("-inf"), rt)
    with kb.loop(0, n, 1, type_="u32") as i:
        r = kb.mov(0.0, rt)
        with kb.if_(kb.setp("gt", i, 0)):
            kb.add(r, e(kb.sub(i, 1)), out=r)
        with kb.if_(kb.setp("lt", i, nm1)):
            kb.add(r, e(i), out=r)
        di = d(i)
        kb.min(lo, kb.sub(di, r), out=lo)
        kb.max(hi, kb.add(di, r), out=hi)
    big = kb.max(kb.abs(lo), kb.abs(hi))
    pad = kb.fma(big, 2 * eps * 4, tiny)
    kb.sub(lo, pad, out=lo)
    kb.add(hi, pad, out=hi)
    target = j
    with kb.loop(0, 128, 1, type_="u32"):
        mid = kb.mul(kb.add(lo, hi), 0.5)
        # Sturm count: eigenvalues < mid
        count = kb.mov(0, "u32")
        q = kb.sub(d(kb.mov(0, "u32")), mid)
        with kb.loop(0, n, 1, type_="u32") as i:
            with kb.if_(kb.setp("gt", i, 0)):
                em = e(kb.sub(i, 1))
                qs = kb.selp(kb.mov(-tiny, rt), q, kb.setp("eq", q, 0.0))
                kb.assign(q, kb.sub(kb.sub(d(i), mid), kb.div(kb.mul(em, em), qs)))
            kb.add(count, kb.selp(1, 0, kb.setp("lt", q, 0.0), type_="u32"), out=count)
        below = kb.setp("gt", count, target)  # more than j eigenvalues below mid: the j-th is < mid
        kb.assign(hi, kb.selp(mid, hi, below))
        kb.assign(lo, kb.selp(lo, mid, below))
        width = kb.sub(hi, lo)
        scale = kb.max(kb.abs(lo), kb.abs(hi))
        with kb.if_(kb.setp("le", width, kb.fma(scale, 2 * eps, tiny))):
            kb.bra("$L_stebz_done")
    kb.label("stebz_done")
    wa = kb.addr(w, kb.add(kb.mul(kb.cvt(z, "u64"), stride_w), kb.cvt(j, "u64")), rs)
    kb.st("global", wa, kb.mul(kb.add(lo, hi), 0.5))
    return kb.ptx()


registry.register_family("solver_sytrd_x", SytrdXSpec, generate_sytrd_x,
                         lambda arch: [SytrdXSpec(arch=arch, dtype=d) for d in DTYPES])
registry.register_family("solver_sytrd_r2", SytrdR2Spec, generate_sytrd_r2,
                         lambda arch: [SytrdR2Spec(arch=arch, dtype=d) for d in DTYPES])
registry.register_family("solver_stebz", StebzSpec, generate_stebz,
                         lambda arch: [StebzSpec(arch=arch, dtype=d) for d in DTYPES])
