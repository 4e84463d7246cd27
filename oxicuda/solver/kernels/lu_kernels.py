"""PTX generators of the LU factorization (getrf) and its solve (getrs):

- ``solver_getf2``: the unblocked right-looking LU with partial pivoting of an m x w column panel,
  one CTA per matrix of a batch (grid x = batch). Per column: the pivot search (each thread scans
  its rows for the largest |re| + |im|, then a tree reduction in shared memory; ties go to the
  lowest row, as LAPACK's i?amax), the row swap across the panel, the column scaled by the
  pivot, and the rank-1 update of the panel's remaining columns. ``space="shared"`` loads the
  whole panel into shared memory first (the batched small-matrix path: the entire matrix is the
  panel); ``"global"`` works in place (the panel of the blocked getrf). Pivots are written
  1-based and absolute (``+ offset``); the first exactly-zero pivot sets ``*info`` (1-based) if
  it is still 0, and its column is not scaled (LAPACK's getf2).
- ``solver_laswp``: row interchanges k0..k1-1 (forward, or backward for the transposed solve)
  applied to the columns of a matrix, one thread per column (grid y = batch); the columns of the
  panel, ``[skip0, skip0 + skipw)``, are left out.
- ``solver_getrs_small``: the triangular solves of getrs for one matrix per CTA (grid y = batch,
  grid x over blocks of right-hand sides): threads own rows, one barrier per column of L and U.
  Used for n up to the small-matrix limit and batches; larger n solves through oxicuda.blas trsm.
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
    cabs1,
    cdiv,
    cfms,
    check_dtype,
    components,
    conj,
    esize,
    matrix_base,
    real_type,
)

SPACES = ("global", "shared")
#: threads of one getf2 CTA per space (the shared-memory path serves matrices of order <= 64)
GETF2_THREADS = {"global": 256, "shared": 64}
LASWP_THREADS = 128
GETRS_THREADS = 64
#: the largest panel the shared-memory variant takes (rows and columns)
SMALL_MAX = 64


@dataclass(frozen=True)
class Getf2Spec(KernelSpec):
    family: ClassVar[str] = "solver_getf2"
    dtype: str = "float32"
    space: str = "global"
    array: bool = False  # matrices from a device array of pointers (getrfBatched)
    pivot: bool = True   # False: no row interchanges (getrfBatched with a NULL pivot array)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "Getf2Spec")
        if self.space not in SPACES:
            raise ValueError(f"Getf2Spec: space={self.space!r}; allowed {SPACES}")

    @property
    def threads(self) -> int:
        return GETF2_THREADS[self.space]


def generate_getf2(spec: Getf2Spec) -> str:
    """Params: m, w, a, lda, stride_a, ipiv, stride_ipiv, info, offset. Grid x: the batch. With
    ``array``, ``a`` is a device array of matrix pointers (stride_a unused)."""
    rt, es, T = real_type(spec.dtype), esize(spec.dtype), spec.threads
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    m, w = kb.param("m", "u32"), kb.param("w", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    ipiv, stride_ipiv = kb.param_ptr("ipiv"), kb.param("stride_ipiv", "u64")
    info, offset = kb.param_ptr("info"), kb.param("offset", "u32")
    red_v = kb.shared("red_v", rt, T)
    red_i = kb.shared("red_i", "u32", T)
    tid, bat = kb.tid(), kb.ctaid()
    a = matrix_base(kb, a, bat, stride_a, es, spec.array)
    ipiv = batch_base(kb, ipiv, bat, stride_ipiv, 4)
    info = kb.addr(info, bat, 4)
    g = Matrix(kb, "global", a, lda, spec.dtype)
    if spec.space == "shared":
        panel = kb.dynamic_shared("panel", SMALL_MAX * SMALL_MAX * es)
        s = Matrix(kb, "shared", kb.shared_addr(panel), m, spec.dtype)
        _copy_panel(kb, g, s, m, w, tid, T)
        kb.bar_sync()
        A = s
    else:
        A = g
    kmax = kb.min(m, w)
    vaddr = kb.mad(tid, 4 if rt == "f32" else 8, kb.shared_addr(red_v))
    iaddr = kb.mad(tid, 4, kb.shared_addr(red_i))
    with kb.loop(0, kmax, 1, type_="u32") as j:
        if spec.pivot:
            _pivot_search(kb, A, j, m, tid, T, rt, vaddr, iaddr)
        else:
            with kb.if_(kb.setp("eq", tid, 0)):
                kb.st("shared", kb.shared_addr(red_v), cabs1(kb, A.load(j, j)))
                kb.st("shared", kb.shared_addr(red_i), j)
            kb.bar_sync()
        p = kb.ld("shared", "u32", kb.shared_addr(red_i))
        pv = kb.ld("shared", rt, kb.shared_addr(red_v))
        with kb.if_(kb.setp("eq", tid, 0)):
            if spec.pivot:
                kb.st("global", kb.addr(ipiv, j, 4), kb.add(kb.add(p, offset), 1))
            with kb.if_(kb.setp("eq", pv, 0.0)), kb.if_(kb.setp("eq", kb.ld("global", "s32", info), 0)):
                kb.st("global", info, kb.cvt(kb.add(kb.add(j, offset), 1), "s32"))
        if spec.pivot:
            with kb.if_(kb.setp("ne", p, j)), kb.loop(tid, w, T) as c:
                x, y = A.load(j, c), A.load(p, c)
                A.store(j, c, y)
                A.store(p, c, x)
            kb.bar_sync()
        piv = A.load(j, j)
        nonzero = kb.setp("ne", pv, 0.0)
        with kb.if_(nonzero), kb.loop(kb.add(kb.add(j, 1), tid), m, T) as i:
            A.store(i, j, cdiv(kb, A.load(i, j), piv))
        kb.bar_sync()
        with kb.loop(kb.add(kb.add(j, 1), tid), m, T) as i:
            lij = A.load(i, j)
            with kb.loop(kb.add(j, 1), w, 1, type_="u32") as c:
                acc = A.load(i, c)
                cfms(kb, acc, lij, A.load(j, c))
                A.store(i, c, acc)
        kb.bar_sync()
    if spec.space == "shared":
        _copy_panel(kb, A, g, m, w, tid, T)
    return kb.ptx()


def _pivot_search(kb, A, j, m, tid, T, rt, vaddr, iaddr) -> None:
    """The row of the largest |re| + |im| at or below j in column j, reduced into red_v[0]/red_i[0]."""
    best, bi = kb.mov(-1.0, rt), kb.mov(j, "u32")
    with kb.loop(kb.add(j, tid), m, T) as i:
        v = cabs1(kb, A.load(i, j))
        better = kb.setp("gt", v, best)
        kb.selp(v, best, better, out=best)
        kb.selp(i, bi, better, out=bi)
    kb.st("shared", vaddr, best)
    kb.st("shared", iaddr, bi)
    kb.bar_sync()
    half = T // 2
    while half >= 1:
        with kb.if_(kb.setp("lt", tid, half)):
            ov = kb.ld("shared", rt, vaddr, offset=half * (4 if rt == "f32" else 8))
            oi = kb.ld("shared", "u32", iaddr, offset=half * 4)
            mv, mi = kb.ld("shared", rt, vaddr), kb.ld("shared", "u32", iaddr)
            take = kb.or_(kb.setp("gt", ov, mv), kb.and_(kb.setp("eq", ov, mv), kb.setp("lt", oi, mi)))
            with kb.if_(take):
                kb.st("shared", vaddr, ov)
                kb.st("shared", iaddr, oi)
        kb.bar_sync()
        half //= 2


def _copy_panel(kb: KernelBuilder, src: Matrix, dst: Matrix, m: Value, w: Value, tid: Value, T: int) -> None:
    """dst = src over m x w, the threads striding the column-major elements."""
    total = kb.mul(m, w)
    with kb.loop(tid, total, T) as e:
        j = kb.div(e, m)
        i = kb.sub(e, kb.mul(j, m))
        dst.store(i, j, src.load(i, j))


@dataclass(frozen=True)
class LaswpSpec(KernelSpec):
    family: ClassVar[str] = "solver_laswp"
    dtype: str = "float32"
    reverse: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "LaswpSpec")


def generate_laswp(spec: LaswpSpec) -> str:
    """Params: ncols, a, lda, stride_a, ipiv, stride_ipiv, k0, k1, skip0, skipw. Grid x over the
    ncols - skipw columns kept, grid y = batch. ipiv entries are 1-based rows of this matrix."""
    es = esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(LASWP_THREADS)
    ncols = kb.param("ncols", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    ipiv, stride_ipiv = kb.param_ptr("ipiv"), kb.param("stride_ipiv", "u64")
    k0, k1 = kb.param("k0", "u32"), kb.param("k1", "u32")
    skip0, skipw = kb.param("skip0", "u32"), kb.param("skipw", "u32")
    bat = kb.ctaid("y")
    a = batch_base(kb, a, bat, stride_a, es)
    ipiv = batch_base(kb, ipiv, bat, stride_ipiv, 4)
    c = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", c, kb.sub(ncols, skipw)))
    c = kb.add(c, kb.selp(skipw, 0, kb.setp("ge", c, skip0), type_="u32"))
    A = Matrix(kb, "global", a, lda, spec.dtype)
    with kb.loop(0, kb.sub(k1, k0), 1, type_="u32") as t:
        k = kb.sub(kb.sub(k1, 1), t) if spec.reverse else kb.add(k0, t)
        p = kb.sub(kb.ld("global", "u32", kb.addr(ipiv, k, 4)), 1)
        with kb.if_(kb.setp("ne", p, k)):
            x, y = A.load(k, c), A.load(p, c)
            A.store(k, c, y)
            A.store(p, c, x)
    return kb.ptx()


@dataclass(frozen=True)
class GetrsSmallSpec(KernelSpec):
    family: ClassVar[str] = "solver_getrs_small"
    dtype: str = "float32"
    trans: str = "N"
    array: bool = False  # A and B from device arrays of pointers (getrsBatched/getriBatched)
    eye: bool = False    # B is set to the identity first (getriBatched: B receives the inverse)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "GetrsSmallSpec")
        allowed = ("N", "T", "C") if self.dtype.startswith("complex") else ("N", "T")
        if self.trans not in allowed:
            raise ValueError(f"GetrsSmallSpec: trans={self.trans!r}; allowed {allowed}")


def generate_getrs_small(spec: GetrsSmallSpec) -> str:
    """Params: n, nrhs, a, lda, stride_a, ipiv, stride_ipiv, b, ldb, stride_b, info. Grid x over blocks
    of GETRS_THREADS right-hand sides (each CTA owns its columns), grid y = batch. Solves
    op(A) X = B in place of B with A = P L U as getf2 left it. ``array``: a and b are device
    arrays of matrix pointers; ipiv 0 (NULL) means no interchanges. ``eye`` (getriBatched):
    B starts as the identity, and ``info[z]`` gets the first i + 1 with U(i, i) == 0 (else 0)."""
    es, T = esize(spec.dtype), GETRS_THREADS
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(T)
    n, nrhs = kb.param("n", "u32"), kb.param("nrhs", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    ipiv, stride_ipiv = kb.param_ptr("ipiv"), kb.param("stride_ipiv", "u64")
    b, ldb, stride_b = kb.param_ptr("b"), kb.param("ldb", "u32"), kb.param("stride_b", "u64")
    info = kb.param_ptr("info")
    tid, bat = kb.tid(), kb.ctaid("y")
    has_piv = kb.setp("ne", ipiv, 0)
    a = matrix_base(kb, a, bat, stride_a, es, spec.array)
    ipiv = batch_base(kb, ipiv, bat, stride_ipiv, 4)
    c0 = kb.mul(kb.ctaid(), T)
    b = kb.addr(matrix_base(kb, b, bat, stride_b, es, spec.array), kb.mul(c0, ldb, mode="wide"), es)
    cols = kb.min(kb.sub(nrhs, c0), T)
    A = Matrix(kb, "global", a, lda, spec.dtype)
    B = Matrix(kb, "global", b, ldb, spec.dtype)
    if spec.eye:
        rt = real_type(spec.dtype)
        with kb.loop(tid, cols, T) as c, kb.loop(0, n, 1, type_="u32") as i:
            one = kb.selp(1.0, 0.0, kb.setp("eq", i, kb.add(c0, c)), type_=rt)
            B.store(i, c, [one] + [kb.mov(0.0, rt) for _ in range(components(spec.dtype) - 1)])
        with kb.if_(kb.and_(kb.setp("eq", tid, 0), kb.setp("eq", kb.ctaid(), 0))):
            code = kb.mov(0, "s32")
            with kb.loop(0, n, 1, type_="u32") as t:
                k = kb.sub(kb.sub(n, 1), t)
                d = A.load(k, k)
                zero = kb.setp("eq", d[0], 0.0)
                if len(d) == 2:
                    zero = kb.and_(zero, kb.setp("eq", d[1], 0.0))
                kb.selp(kb.cvt(kb.add(k, 1), "s32"), code, zero, out=code)
            kb.st("global", kb.addr(info, bat, 4), code)
        kb.bar_sync()
    trans, cj = spec.trans != "N", spec.trans == "C"

    def op(i: Value, k: Value) -> list[Value]:
        """op(A)[i, k] of the factor (L and U share A's storage)."""
        v = A.load(k, i) if trans else A.load(i, k)
        return conj(kb, v) if cj else v

    def swaps(reverse: bool) -> None:
        with kb.if_(has_piv), kb.loop(tid, cols, T) as c, kb.loop(0, n, 1, type_="u32") as t:
            k = kb.sub(kb.sub(n, 1), t) if reverse else t
            p = kb.sub(kb.ld("global", "u32", kb.addr(ipiv, k, 4)), 1)
            with kb.if_(kb.setp("ne", p, k)):
                x, y = B.load(k, c), B.load(p, c)
                B.store(k, c, y)
                B.store(p, c, x)
        kb.bar_sync()

    def sweep(forward: bool, unit: bool) -> None:
        """Column-oriented substitution with op(A)'s lower (forward) or upper triangle."""
        with kb.loop(0, n, 1, type_="u32") as t:
            k = t if forward else kb.sub(kb.sub(n, 1), t)
            if not unit:
                d = op(k, k)
                with kb.loop(tid, cols, T) as c:
                    B.store(k, c, cdiv(kb, B.load(k, c), d))
                kb.bar_sync()
            lo, hi = (kb.add(k, 1), n) if forward else (kb.mov(0, "u32"), k)
            with kb.loop(kb.add(lo, tid), hi, T) as i:
                lik = op(i, k)
                with kb.loop(0, cols, 1, type_="u32") as c:
                    acc = B.load(i, c)
                    cfms(kb, acc, lik, B.load(k, c))
                    B.store(i, c, acc)
            kb.bar_sync()

    if not trans:
        swaps(False)
        sweep(True, True)    # L, unit
        sweep(False, False)  # U
    else:
        sweep(True, False)   # U^T (lower)
        sweep(False, True)   # L^T (upper, unit)
        swaps(True)
    return kb.ptx()


def _ops(d: str) -> tuple[str, ...]:
    return ("N", "T", "C") if d.startswith("complex") else ("N", "T")


registry.register_family("solver_getf2", Getf2Spec, generate_getf2,
                         lambda arch: [Getf2Spec(arch=arch, dtype=d, space=s, array=ar, pivot=pv) for d in DTYPES
                                       for s in SPACES for ar in (False, True) for pv in (True, False)
                                       if ar or pv])
registry.register_family("solver_laswp", LaswpSpec, generate_laswp,
                         lambda arch: [LaswpSpec(arch=arch, dtype=d, reverse=r) for d in DTYPES
                                       for r in (False, True)])
registry.register_family("solver_getrs_small", GetrsSmallSpec, generate_getrs_small,
                         lambda arch: [GetrsSmallSpec(arch=arch, dtype=d, trans=t, array=ar, eye=e) for d in DTYPES
                                       for t in _ops(d) for ar in (False, True) for e in (False, True)
                                       if not e or (ar and t == "N")])
