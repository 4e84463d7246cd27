"""PTX generators of the Cholesky factorization (potrf) and its solve (potrs):

- ``solver_potf2``: the unblocked Cholesky of a w x w block (A = L L^H from the lower triangle,
  or A = U^H U from the upper), one CTA per matrix (grid x = batch). Per column: the diagonal's
  real part checked (not > 0, NaN included: ``*info`` = column + 1 + offset if still 0, and the
  CTA stops, as LAPACK's potf2), its square root, the column scaled, and the rank-1 update of the
  stored triangle of the trailing block. ``space="shared"`` loads the block into shared memory
  (the batched small path: the block is the whole matrix). Only the ``uplo`` triangle is read
  or written.
- ``solver_herk_tri``: D -= W on one triangle of D (the blocked potrf's trailing update, W =
  L21 L21^H from one GEMM), for complex dtypes the diagonal's imaginary part set to 0 (herk).
- ``solver_potrs_small``: op(A) X = B with the factor, one CTA per matrix (grid y = batch):
  forward then backward substitution with L and L^H (or U^H and U), threads owning rows.
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
    cdiv,
    cfms,
    check_dtype,
    conj,
    esize,
    matrix_base,
    real_type,
)
from .lu_kernels import GETF2_THREADS, GETRS_THREADS, SMALL_MAX, SPACES, _copy_panel

UPLOS = ("L", "U")
HERK_THREADS = 128


@dataclass(frozen=True)
class Potf2Spec(KernelSpec):
    family: ClassVar[str] = "solver_potf2"
    dtype: str = "float32"
    uplo: str = "L"
    space: str = "global"
    array: bool = False  # matrices from a device array of pointers (potrfBatched)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "Potf2Spec")
        if self.uplo not in UPLOS or self.space not in SPACES:
            raise ValueError(f"Potf2Spec: uplo={self.uplo!r}, space={self.space!r}; allowed {UPLOS}, {SPACES}")

    @property
    def threads(self) -> int:
        return GETF2_THREADS[self.space]


class _Lower:
    """L(i, j) of the factor, i >= j: the stored element itself (lower) or conj(A(j, i)) (upper)."""

    def __init__(self, kb: KernelBuilder, m: Matrix, uplo: str) -> None:
        self.kb, self.m, self.upper = kb, m, uplo == "U"

    def addr(self, i: Value, j: Value) -> Value:
        return self.m.addr(j, i) if self.upper else self.m.addr(i, j)

    def load(self, i: Value, j: Value) -> list[Value]:
        v = self.m.load_at(self.addr(i, j))
        return conj(self.kb, v) if self.upper else v

    def store(self, i: Value, j: Value, v: list[Value]) -> None:
        self.m.store_at(self.addr(i, j), conj(self.kb, v) if self.upper else v)


def generate_potf2(spec: Potf2Spec) -> str:
    """Params: w, a, lda, stride_a, info, offset. Grid x: the batch."""
    rt, es, T, nc = real_type(spec.dtype), esize(spec.dtype), spec.threads, (2 if spec.dtype.startswith("c") else 1)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    w = kb.param("w", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    info, offset = kb.param_ptr("info"), kb.param("offset", "u32")
    tid, bat = kb.tid(), kb.ctaid()
    a = matrix_base(kb, a, bat, stride_a, es, spec.array)
    info = kb.addr(info, bat, 4)
    g = Matrix(kb, "global", a, lda, spec.dtype)
    if spec.space == "shared":
        panel = kb.dynamic_shared("panel", SMALL_MAX * SMALL_MAX * es)
        s = Matrix(kb, "shared", kb.shared_addr(panel), w, spec.dtype)
        _copy_panel(kb, g, s, w, w, tid, T)
        kb.bar_sync()
        M = s
    else:
        M = g
    L = _Lower(kb, M, spec.uplo)
    done = "$L_potf2_done"
    with kb.loop(0, w, 1, type_="u32") as j:
        d = M.load(j, j)[0]
        bad = kb.setp("gt", d, 0.0)  # false for d <= 0 and for NaN
        with kb.if_(bad, negate=True):
            with kb.if_(kb.setp("eq", tid, 0)), kb.if_(kb.setp("eq", kb.ld("global", "s32", info), 0)):
                kb.st("global", info, kb.cvt(kb.add(kb.add(j, offset), 1), "s32"))
            kb.bra(done)
        r = kb.sqrt(d)
        kb.bar_sync()  # every thread has read the diagonal before it is overwritten
        with kb.if_(kb.setp("eq", tid, 0)):
            M.store(j, j, [r] + [kb.mov(0.0, rt) for _ in range(nc - 1)])
        with kb.loop(kb.add(kb.add(j, 1), tid), w, T) as i:
            L.store(i, j, [kb.div(v, r) for v in L.load(i, j)])
        kb.bar_sync()
        with kb.loop(kb.add(kb.add(j, 1), tid), w, T) as i:
            lij = L.load(i, j)
            with kb.loop(kb.add(j, 1), kb.add(i, 1), 1, type_="u32") as c:
                acc = L.load(i, c)
                cfms(kb, acc, lij, conj(kb, L.load(c, j)))
                L.store(i, c, acc)
        kb.bar_sync()
    kb.label("potf2_done")
    if spec.space == "shared":
        kb.bar_sync()
        _copy_panel(kb, M, g, w, w, tid, T)
    return kb.ptx()


@dataclass(frozen=True)
class HerkTriSpec(KernelSpec):
    family: ClassVar[str] = "solver_herk_tri"
    dtype: str = "float32"
    uplo: str = "L"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "HerkTriSpec")
        if self.uplo not in UPLOS:
            raise ValueError(f"HerkTriSpec: uplo={self.uplo!r}; allowed {UPLOS}")


def generate_herk_tri(spec: HerkTriSpec) -> str:
    """Params: n, d, ldd, w, ldw. Grid x over rows, y over columns (n <= 65535)."""
    rt = real_type(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(HERK_THREADS)
    n, d, ldd = kb.param("n", "u32"), kb.param_ptr("d"), kb.param("ldd", "u32")
    w, ldw = kb.param_ptr("w"), kb.param("ldw", "u32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    j = kb.ctaid("y")
    kb.ret(kb.setp("ge", i, n))
    kb.ret(kb.setp("lt" if spec.uplo == "L" else "gt", i, j))
    D, W = Matrix(kb, "global", d, ldd, spec.dtype), Matrix(kb, "global", w, ldw, spec.dtype)
    da = D.addr(i, j)
    v = D.load_at(da)
    u = W.load(i, j)
    res = [kb.sub(x, y) for x, y in zip(v, u)]
    if len(res) == 2:
        res[1] = kb.selp(kb.mov(0.0, rt), res[1], kb.setp("eq", i, j))
    D.store_at(da, res)
    return kb.ptx()


@dataclass(frozen=True)
class PotrsSmallSpec(KernelSpec):
    family: ClassVar[str] = "solver_potrs_small"
    dtype: str = "float32"
    uplo: str = "L"
    array: bool = False  # A and B from device arrays of pointers (potrsBatched)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "PotrsSmallSpec")
        if self.uplo not in UPLOS:
            raise ValueError(f"PotrsSmallSpec: uplo={self.uplo!r}; allowed {UPLOS}")


def generate_potrs_small(spec: PotrsSmallSpec) -> str:
    """Params: n, nrhs, a, lda, stride_a, b, ldb, stride_b. Grid x over blocks of GETRS_THREADS
    right-hand sides, grid y = batch. Solves A X = B in place of B, A = L L^H (or U^H U)."""
    es, T = esize(spec.dtype), GETRS_THREADS
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    n, nrhs = kb.param("n", "u32"), kb.param("nrhs", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    b, ldb, stride_b = kb.param_ptr("b"), kb.param("ldb", "u32"), kb.param("stride_b", "u64")
    tid, bat = kb.tid(), kb.ctaid("y")
    a = matrix_base(kb, a, bat, stride_a, es, spec.array)
    c0 = kb.mul(kb.ctaid(), T)
    b = kb.addr(matrix_base(kb, b, bat, stride_b, es, spec.array), kb.mul(c0, ldb, mode="wide"), es)
    cols = kb.min(kb.sub(nrhs, c0), T)
    L = _Lower(kb, Matrix(kb, "global", a, lda, spec.dtype), spec.uplo)
    B = Matrix(kb, "global", b, ldb, spec.dtype)

    def sweep(forward: bool) -> None:
        """forward: L y = b; backward: L^H x = y."""
        def op(i: Value, k: Value) -> list[Value]:
            return L.load(i, k) if forward else conj(kb, L.load(k, i))

        with kb.loop(0, n, 1, type_="u32") as t:
            k = t if forward else kb.sub(kb.sub(n, 1), t)
            dkk = op(k, k)
            with kb.loop(tid, cols, T) as c:
                B.store(k, c, cdiv(kb, B.load(k, c), dkk))
            kb.bar_sync()
            lo, hi = (kb.add(k, 1), n) if forward else (kb.mov(0, "u32"), k)
            with kb.loop(kb.add(lo, tid), hi, T) as i:
                lik = op(i, k)
                with kb.loop(0, cols, 1, type_="u32") as c:
                    acc = B.load(i, c)
                    cfms(kb, acc, lik, B.load(k, c))
                    B.store(i, c, acc)
            kb.bar_sync()

    sweep(True)
    sweep(False)
    return kb.ptx()


registry.register_family("solver_potf2", Potf2Spec, generate_potf2,
                         lambda arch: [Potf2Spec(arch=arch, dtype=d, uplo=u, space=s, array=ar) for d in DTYPES
                                       for u in UPLOS for s in SPACES for ar in (False, True)])
registry.register_family("solver_herk_tri", HerkTriSpec, generate_herk_tri,
                         lambda arch: [HerkTriSpec(arch=arch, dtype=d, uplo=u) for d in DTYPES for u in UPLOS])
registry.register_family("solver_potrs_small", PotrsSmallSpec, generate_potrs_small,
                         lambda arch: [PotrsSmallSpec(arch=arch, dtype=d, uplo=u, array=ar) for d in DTYPES
                                       for u in UPLOS for ar in (False, True)])
