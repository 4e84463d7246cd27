"""PTX generators for BLAS level 2 on banded, packed and triangular storage (the routines gemv,
symv and trsv do not cover):

- ``blas2_mv``: y = alpha op(A) x + beta y for general banded (gbmv), symmetric/Hermitian banded
  or packed (sbmv/hbmv, spmv/hpmv) A, and x = op(A) x for triangular full/banded/packed A
  (trmv/tbmv/tpmv, which run on a copy of x, so one thread per row never races);
- ``blas2_sv``: solve op(A) x = b in place for triangular banded or packed A (tbsv/tpsv), one
  block, column-oriented substitution as trsv;
- ``blas2_rank``: the rank-1 and rank-2 updates syr/syr2/her/her2 on full storage and
  spr/spr2/hpr/hpr2 on packed storage, on the ``uplo`` triangle only.

Storage, as BLAS defines it (column-major, element (r, c) of the stored triangle or band):
full ``a[r + c*lda]``; general band ``a[(ku + r - c) + c*lda]``; lower band ``a[(r - c) +
c*lda]``; upper band ``a[(k + r - c) + c*lda]``; upper packed ``ap[r + c*(c+1)/2]``; lower
packed ``ap[r + c*(2n-c-1)/2]``. Loops run over the band of op(A) only (``lo_w`` below and
``hi_w`` above the diagonal, set by the host), so every element read lies in the storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ptx import registry
from ..ptx.builder import KernelBuilder, Value
from ..ptx.spec import KernelSpec
from .level1_kernels import (
    BLOCK,
    DTYPES,
    _cadd,
    _cmul,
    _element_address,
    _grid_stride,
    _load_vec,
    _scalar,
    _store_vec,
    components,
    real_type,
)
from .level2_kernels import beta_is_zero, cdiv, matrix_address

MV_KINDS = ("gb", "sy", "he", "tr")
STORAGES = ("full", "band", "packed")


def _esize(dtype: str) -> int:
    return (4 if real_type(dtype) == "f32" else 8) * components(dtype)


def stored_address(kb: KernelBuilder, storage: str, uplo: str, a: Value, lda: Value, k: Value,
                   order: Value, r: Value, c: Value, es: int) -> Value:
    """Address of element (r, c) (u32) of A in ``storage`` ('G' uplo: the general band)."""
    if storage == "full":
        return matrix_address(kb, a, r, c, lda, es)
    if storage == "band":
        row = kb.sub(r, c) if uplo == "L" else kb.sub(kb.add(k, r), c)
        return matrix_address(kb, a, row, c, lda, es)
    r64, c64 = kb.cvt(r, "u64"), kb.cvt(c, "u64")
    if uplo == "U":
        col_start = kb.shr(kb.mul(c64, kb.add(c64, 1)), 1)
    else:
        col_start = kb.shr(kb.mul(c64, kb.sub(kb.sub(kb.mul(kb.cvt(order, "u64"), 2), c64), 1)), 1)
    return kb.addr(a, kb.add(col_start, r64), es)


def _conj(kb: KernelBuilder, v: list[Value]) -> list[Value]:
    return [v[0], kb.neg(v[1])] if len(v) == 2 else v


@dataclass(frozen=True)
class MvSpec(KernelSpec):
    """One matrix-vector kernel: ``kind`` gb (general band), sy/he (symmetric/Hermitian, band or
    packed), tr (triangular, full/band/packed); ``unit``: unit diagonal (tr only)."""

    family: ClassVar[str] = "blas2_mv"
    dtype: str = "float32"
    kind: str = "gb"
    storage: str = "band"
    uplo: str = "L"
    trans: str = "N"
    unit: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES or self.kind not in MV_KINDS or self.storage not in STORAGES:
            raise ValueError(f"MvSpec: dtype={self.dtype!r}, kind={self.kind!r}, storage={self.storage!r}; "
                             f"allowed {DTYPES}, {MV_KINDS}, {STORAGES}")


def generate_mv(spec: MvSpec) -> str:
    """Params: m (rows of op(A)), ncols, a, lda, k (ku or band width), order (packed n), lo_w,
    hi_w (band of op(A)), x, incx, y, incy, alpha, beta. One thread per row of y; beta == 0
    never reads y."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    m, ncols = kb.param("m", "u32"), kb.param("ncols", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    k, order = kb.param("k", "u32"), kb.param("order", "u32")
    lo_w, hi_w = kb.param("lo_w", "u32"), kb.param("hi_w", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    alpha, beta = _scalar(kb, "alpha", rt, nc), _scalar(kb, "beta", rt, nc)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    uplo = "G" if spec.kind == "gb" else spec.uplo
    with kb.if_(kb.setp("lt", i, m)):
        lo = kb.selp(kb.sub(i, lo_w), kb.mov(0, "u32"), kb.setp("gt", i, lo_w))
        hi = kb.min(ncols, kb.add(kb.add(i, hi_w), 1))
        acc = [kb.mov(0.0, rt) for _ in range(nc)]
        with kb.loop(lo, hi, 1, type_="u32") as j:
            r, c = (i, j) if spec.trans == "N" else (j, i)
            if spec.kind in ("sy", "he"):
                stored = kb.setp("ge" if spec.uplo == "L" else "le", r, c)
                rr, cc = kb.selp(r, c, stored), kb.selp(c, r, stored)
                av = _load_vec(kb, stored_address(kb, spec.storage, uplo, a, lda, k, order, rr, cc, es), rt, nc)
                if spec.kind == "he" and nc == 2:
                    im = kb.selp(av[1], kb.neg(av[1]), stored)
                    av = [av[0], kb.selp(kb.mov(0.0, rt), im, kb.setp("eq", r, c))]
            elif spec.unit:
                av = [kb.mov(1.0, rt)] + [kb.mov(0.0, rt) for _ in range(nc - 1)]
                with kb.if_(kb.setp("ne", r, c)):
                    got = _load_vec(kb, stored_address(kb, spec.storage, uplo, a, lda, k, order, r, c, es), rt, nc)
                    for q in range(nc):
                        kb.assign(av[q], got[q])
            else:
                av = _load_vec(kb, stored_address(kb, spec.storage, uplo, a, lda, k, order, r, c, es), rt, nc)
            if spec.trans == "C":
                av = _conj(kb, av)
            xv = _load_vec(kb, _element_address(kb, x, kb.cvt(j, "s64"), incx, es), rt, nc)
            for q, v in enumerate(_cadd(kb, _cmul(kb, av, xv), acc)):
                kb.assign(acc[q], v)
        ya = _element_address(kb, y, kb.cvt(i, "s64"), incy, es)
        res = _cmul(kb, alpha, acc)
        with kb.if_(beta_is_zero(kb, beta), negate=True):
            for q, v in enumerate(_cadd(kb, res, _cmul(kb, beta, _load_vec(kb, ya, rt, nc)))):
                kb.assign(res[q], v)
        _store_vec(kb, ya, res, rt)
    return kb.ptx()


@dataclass(frozen=True)
class SvSpec(KernelSpec):
    """Triangular banded/packed solve op(A) x = b, in place, one block."""

    family: ClassVar[str] = "blas2_sv"
    dtype: str = "float32"
    storage: str = "band"
    uplo: str = "L"
    trans: str = "N"
    unit: bool = False


def generate_sv(spec: SvSpec) -> str:
    """Params: n, a, lda, k (band width; n for packed), x, incx. Step j solves x_j (thread 0),
    then the block updates the rows within the band that depend on it."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    forward = (spec.uplo == "L") == (spec.trans == "N")
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(BLOCK)
    n = kb.param("n", "u32")
    a, lda, k = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("k", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    tid = kb.tid()

    def elem(i: Value, j: Value) -> list[Value]:
        r, c = (i, j) if spec.trans == "N" else (j, i)
        v = _load_vec(kb, stored_address(kb, spec.storage, spec.uplo, a, lda, k, n, r, c, es), rt, nc)
        return _conj(kb, v) if spec.trans == "C" else v

    with kb.loop(0, n, 1, type_="u32") as step:
        j = step if forward else kb.sub(kb.sub(n, 1), step)
        xj_addr = _element_address(kb, x, kb.cvt(j, "s64"), incx, es)
        if not spec.unit:
            with kb.if_(kb.setp("eq", tid, 0)):
                _store_vec(kb, xj_addr, cdiv(kb, _load_vec(kb, xj_addr, rt, nc), elem(j, j)), rt)
            kb.bar_sync()
        xj = _load_vec(kb, xj_addr, rt, nc)
        if forward:
            start, stop = kb.add(kb.add(j, 1), tid), kb.min(n, kb.add(kb.add(j, k), 1))
        else:
            first = kb.selp(kb.sub(j, k), kb.mov(0, "u32"), kb.setp("gt", j, k))
            start, stop = kb.add(first, tid), j
        for i in _grid_stride(kb, start, stop, kb.mov(BLOCK, "u32")):
            xi_addr = _element_address(kb, x, kb.cvt(i, "s64"), incx, es)
            t = _cmul(kb, elem(i, j), xj)
            _store_vec(kb, xi_addr, [kb.sub(p, q) for p, q in zip(_load_vec(kb, xi_addr, rt, nc), t)], rt)
        kb.bar_sync()
    return kb.ptx()


@dataclass(frozen=True)
class RankSpec(KernelSpec):
    """A rank-1/rank-2 update of the ``uplo`` triangle of a symmetric (syr, syr2) or Hermitian
    (her, her2) matrix in full or packed storage."""

    family: ClassVar[str] = "blas2_rank"
    dtype: str = "float32"
    op: str = "syr"
    storage: str = "full"
    uplo: str = "L"


def generate_rank(spec: RankSpec) -> str:
    """Params: n, x, incx, y, incy, a, lda, alpha. Grid x covers rows, grid y strides columns;
    only (i, j) in the stored triangle is touched. her/her2 keep the diagonal real."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    herm = spec.op in ("her", "her2") and nc == 2
    two = spec.op in ("syr2", "her2")
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    n = kb.param("n", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    alpha = _scalar(kb, "alpha", rt, 1 if spec.op == "her" else nc)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    zero = kb.mov(0, "u32")
    with kb.if_(kb.setp("lt", i, n)):
        xi = _load_vec(kb, _element_address(kb, x, kb.cvt(i, "s64"), incx, es), rt, nc)
        yi = _load_vec(kb, _element_address(kb, y, kb.cvt(i, "s64"), incy, es), rt, nc) if two else None
        for j in _grid_stride(kb, kb.ctaid("y"), n, kb.nctaid("y")):
            with kb.if_(kb.setp("ge" if spec.uplo == "L" else "le", i, j)):
                xj = _load_vec(kb, _element_address(kb, x, kb.cvt(j, "s64"), incx, es), rt, nc)
                if herm:
                    xj = _conj(kb, xj)
                if two:
                    yj = _load_vec(kb, _element_address(kb, y, kb.cvt(j, "s64"), incy, es), rt, nc)
                    if herm:
                        yj = _conj(kb, yj)
                    upd = _cmul(kb, alpha, _cmul(kb, xi, yj))
                    alpha2 = _conj(kb, alpha) if herm else alpha
                    upd = _cadd(kb, upd, _cmul(kb, alpha2, _cmul(kb, yi, xj)))
                else:
                    upd = _cmul(kb, alpha, _cmul(kb, xi, xj))
                addr = stored_address(kb, spec.storage, spec.uplo, a, lda, zero, n, i, j, es)
                new = _cadd(kb, _load_vec(kb, addr, rt, nc), upd)
                if herm:
                    kb.selp(kb.mov(0.0, rt), new[1], kb.setp("eq", i, j), out=new[1])
                _store_vec(kb, addr, new, rt)
    return kb.ptx()


def _ops(dtype: str) -> tuple[str, ...]:
    return ("N", "T", "C") if dtype.startswith("complex") else ("N", "T")


def mv_configurations(arch: str) -> list[MvSpec]:
    specs = []
    for d in DTYPES:
        specs += [MvSpec(arch=arch, dtype=d, kind="gb", storage="band", uplo="L", trans=t) for t in _ops(d)]
        sym = "he" if d.startswith("complex") else "sy"
        specs += [MvSpec(arch=arch, dtype=d, kind=sym, storage=s, uplo=u) for s in ("band", "packed")
                  for u in ("L", "U")]
        specs += [MvSpec(arch=arch, dtype=d, kind="tr", storage=s, uplo=u, trans=t, unit=un)
                  for s in STORAGES for u in ("L", "U") for t in _ops(d) for un in (False, True)]
    return specs


def sv_configurations(arch: str) -> list[SvSpec]:
    return [SvSpec(arch=arch, dtype=d, storage=s, uplo=u, trans=t, unit=un) for d in DTYPES
            for s in ("band", "packed") for u in ("L", "U") for t in _ops(d) for un in (False, True)]


def rank_configurations(arch: str) -> list[RankSpec]:
    specs = []
    for d in DTYPES:
        cplx = d.startswith("complex")
        ops = ("syr", "syr2", "her", "her2") if cplx else ("syr", "syr2")
        for o in ops:
            storages = ("full", "packed") if (o.startswith("her") or not cplx) else ("full",)
            specs += [RankSpec(arch=arch, dtype=d, op=o, storage=s, uplo=u) for s in storages for u in ("L", "U")]
    return specs


registry.register_family("blas2_mv", MvSpec, generate_mv, mv_configurations)
registry.register_family("blas2_sv", SvSpec, generate_sv, sv_configurations)
registry.register_family("blas2_rank", RankSpec, generate_rank, rank_configurations)
