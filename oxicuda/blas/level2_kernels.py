"""PTX generators for BLAS level 2 beyond gemv: ger (rank-1 update), symv/hemv, trsv.

Matrices are column-major: element (r, c) at ``a + (r + c * lda) * elem_size`` (64-bit
arithmetic). Vectors use the level-1 addressing (host-adjusted base, signed 64-bit increments).
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

UPLOS = ("L", "U")
OPS = ("N", "T", "C")


def matrix_address(kb: KernelBuilder, a: Value, row: Value, col: Value, ld: Value, esize: int) -> Value:
    """Address of column-major element (row, col): u32 row/col/ld, 64-bit offset."""
    off = kb.add(kb.mul(col, ld, mode="wide"), kb.cvt(row, "u64"))
    return kb.addr(a, off, esize)


def cdiv(kb: KernelBuilder, x: list[Value], d: list[Value]) -> list[Value]:
    """x / d for real (1 entry) or complex (2 entries) values."""
    if len(x) == 1:
        return [kb.div(x[0], d[0])]
    den = kb.fma(d[0], d[0], kb.mul(d[1], d[1]))
    re = kb.fma(x[0], d[0], kb.mul(x[1], d[1]))
    im = kb.sub(kb.mul(x[1], d[0]), kb.mul(x[0], d[1]))
    return [kb.div(re, den), kb.div(im, den)]


def beta_is_zero(kb: KernelBuilder, beta: list[Value]) -> Value:
    z = kb.setp("eq", beta[0], 0.0)
    for v in beta[1:]:
        z = kb.and_(z, kb.setp("eq", v, 0.0))
    return z


def _esize(dtype: str) -> int:
    return (4 if real_type(dtype) == "f32" else 8) * components(dtype)


@dataclass(frozen=True)
class GerSpec(KernelSpec):
    """A += alpha * x * y^T (``conj``: y^H)."""

    family: ClassVar[str] = "blas2_ger"
    dtype: str = "float32"
    conj: bool = False


def generate_ger(spec: GerSpec) -> str:
    """Params: m, n, x, incx, y, incy, a, lda, alpha. Grid x covers rows; grid y strides columns."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    m, n = kb.param("m", "u32"), kb.param("n", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    alpha = _scalar(kb, "alpha", rt, nc)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, m)):
        ax = _cmul(kb, alpha, _load_vec(kb, _element_address(kb, x, kb.cvt(i, "s64"), incx, es), rt, nc))
        for j in _grid_stride(kb, kb.ctaid("y"), n, kb.nctaid("y")):
            yv = _load_vec(kb, _element_address(kb, y, kb.cvt(j, "s64"), incy, es), rt, nc)
            if spec.conj and nc == 2:
                yv = [yv[0], kb.neg(yv[1])]
            addr = matrix_address(kb, a, i, j, lda, es)
            _store_vec(kb, addr, _cadd(kb, _cmul(kb, ax, yv), _load_vec(kb, addr, rt, nc)), rt)
    return kb.ptx()


@dataclass(frozen=True)
class SymvSpec(KernelSpec):
    """y = alpha * A * x + beta * y, A symmetric (or Hermitian) stored in the ``uplo`` triangle."""

    family: ClassVar[str] = "blas2_symv"
    dtype: str = "float32"
    uplo: str = "L"
    hermitian: bool = False


def generate_symv(spec: SymvSpec) -> str:
    """Params: n, a, lda, x, incx, y, incy, alpha, beta. One thread per row of y."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    n = kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    alpha, beta = _scalar(kb, "alpha", rt, nc), _scalar(kb, "beta", rt, nc)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        acc = [kb.mov(0.0, rt) for _ in range(nc)]
        with kb.loop(0, n, 1, type_="u32") as j:
            direct = kb.setp("ge" if spec.uplo == "L" else "le", i, j)  # (i, j) lies in the stored triangle
            row, col = kb.selp(i, j, direct), kb.selp(j, i, direct)
            av = _load_vec(kb, matrix_address(kb, a, row, col, lda, es), rt, nc)
            if spec.hermitian and nc == 2:
                im = kb.selp(av[1], kb.neg(av[1]), direct)
                av = [av[0], kb.selp(kb.mov(0.0, rt), im, kb.setp("eq", i, j))]
            xv = _load_vec(kb, _element_address(kb, x, kb.cvt(j, "s64"), incx, es), rt, nc)
            for c, v in enumerate(_cadd(kb, _cmul(kb, av, xv), acc)):
                kb.assign(acc[c], v)
        ya = _element_address(kb, y, kb.cvt(i, "s64"), incy, es)
        res = _cmul(kb, alpha, acc)
        with kb.if_(beta_is_zero(kb, beta), negate=True):
            for c, v in enumerate(_cadd(kb, res, _cmul(kb, beta, _load_vec(kb, ya, rt, nc)))):
                kb.assign(res[c], v)
        _store_vec(kb, ya, res, rt)
    return kb.ptx()


@dataclass(frozen=True)
class TrsvSpec(KernelSpec):
    """Solve op(A) x = b in place (one block: column-oriented substitution)."""

    family: ClassVar[str] = "blas2_trsv"
    dtype: str = "float32"
    uplo: str = "L"
    trans: str = "N"
    unit: bool = False


def generate_trsv(spec: TrsvSpec) -> str:
    """Params: n, a, lda, x, incx. Step k solves x_j (thread 0), then every thread updates the
    rows that depend on it; bar.sync orders the global writes within the block."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    swap = spec.trans != "N"
    forward = (spec.uplo == "L") != swap
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(BLOCK)
    n = kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    tid = kb.tid()

    def elem(r: Value, c: Value) -> list[Value]:
        v = _load_vec(kb, matrix_address(kb, a, c if swap else r, r if swap else c, lda, es), rt, nc)
        return [v[0], kb.neg(v[1])] if (spec.trans == "C" and nc == 2) else v

    with kb.loop(0, n, 1, type_="u32") as k:
        j = k if forward else kb.sub(kb.sub(n, 1), k)
        xj_addr = _element_address(kb, x, kb.cvt(j, "s64"), incx, es)
        if not spec.unit:
            with kb.if_(kb.setp("eq", tid, 0)):
                _store_vec(kb, xj_addr, cdiv(kb, _load_vec(kb, xj_addr, rt, nc), elem(j, j)), rt)
            kb.bar_sync()
        xj = _load_vec(kb, xj_addr, rt, nc)
        start, stop = (kb.add(kb.add(j, 1), tid), n) if forward else (tid, j)
        for i in _grid_stride(kb, start, stop, kb.mov(BLOCK, "u32")):
            xi_addr = _element_address(kb, x, kb.cvt(i, "s64"), incx, es)
            t = _cmul(kb, elem(i, j), xj)
            _store_vec(kb, xi_addr, [kb.sub(p, q) for p, q in zip(_load_vec(kb, xi_addr, rt, nc), t)], rt)
        kb.bar_sync()
    return kb.ptx()


def _configs(arch: str):
    ger = [GerSpec(arch=arch, dtype=d, conj=c) for d in DTYPES for c in ((False, True) if d.startswith("complex") else (False,))]
    symv = [SymvSpec(arch=arch, dtype=d, uplo=u, hermitian=h) for d in DTYPES for u in UPLOS
            for h in ((False, True) if d.startswith("complex") else (False,))]
    trsv = [TrsvSpec(arch=arch, dtype=d, uplo=u, trans=t, unit=un) for d in DTYPES for u in UPLOS
            for t in (OPS if d.startswith("complex") else ("N", "T")) for un in (False, True)]
    return ger, symv, trsv


registry.register_family("blas2_ger", GerSpec, generate_ger, lambda arch: _configs(arch)[0])
registry.register_family("blas2_symv", SymvSpec, generate_symv, lambda arch: _configs(arch)[1])
registry.register_family("blas2_trsv", TrsvSpec, generate_trsv, lambda arch: _configs(arch)[2])
