"""PTX generators for cuBLAS's BLAS-like extensions that are element-wise over a matrix:

- ``blas_geam``: C = alpha op(A) + beta op(B) (transposes, conjugates, or adds two matrices;
  a zero scalar never reads its matrix);
- ``blas_dgmm``: C = A diag(x) (side 'R') or diag(x) A (side 'L');
- ``blas_pack``: a triangle between full storage and packed storage (``tr2tp``: trttp, ``tp2tr``:
  tpttr); only the ``uplo`` triangle is read and written.

Grid x covers rows (one thread per row), grid y strides the columns (as ``blas3_expand``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ptx import registry
from ..ptx.builder import KernelBuilder
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
from .level2_kernels import beta_is_zero, matrix_address
from .level2_packed_kernels import stored_address


def _esize(dtype: str) -> int:
    return (4 if real_type(dtype) == "f32" else 8) * components(dtype)


def _ops(dtype: str) -> tuple[str, ...]:
    return ("N", "T", "C") if dtype.startswith("complex") else ("N", "T")


@dataclass(frozen=True)
class GeamSpec(KernelSpec):
    """C = alpha op_a(A) + beta op_b(B)."""

    family: ClassVar[str] = "blas_geam"
    dtype: str = "float32"
    transa: str = "N"
    transb: str = "N"


def generate_geam(spec: GeamSpec) -> str:
    """Params: m, n, a, lda, b, ldb, c, ldc, alpha, beta."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    m, n = kb.param("m", "u32"), kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    b, ldb = kb.param_ptr("b"), kb.param("ldb", "u32")
    c, ldc = kb.param_ptr("c"), kb.param("ldc", "u32")
    alpha, beta = _scalar(kb, "alpha", rt, nc), _scalar(kb, "beta", rt, nc)
    a_zero, b_zero = beta_is_zero(kb, alpha), beta_is_zero(kb, beta)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, m)):
        for j in _grid_stride(kb, kb.ctaid("y"), n, kb.nctaid("y")):
            res = [kb.mov(0.0, rt) for _ in range(nc)]
            for mat, ld, t, scal, zero in ((a, lda, spec.transa, alpha, a_zero), (b, ldb, spec.transb, beta, b_zero)):
                with kb.if_(zero, negate=True):
                    r, cc = (i, j) if t == "N" else (j, i)
                    v = _load_vec(kb, matrix_address(kb, mat, r, cc, ld, es), rt, nc)
                    if t == "C" and nc == 2:
                        v = [v[0], kb.neg(v[1])]
                    for q, w in enumerate(_cadd(kb, res, _cmul(kb, scal, v))):
                        kb.assign(res[q], w)
            _store_vec(kb, matrix_address(kb, c, i, j, ldc, es), res, rt)
    return kb.ptx()


@dataclass(frozen=True)
class DgmmSpec(KernelSpec):
    """C = diag(x) A (side 'L') or A diag(x) (side 'R')."""

    family: ClassVar[str] = "blas_dgmm"
    dtype: str = "float32"
    side: str = "L"


def generate_dgmm(spec: DgmmSpec) -> str:
    """Params: m, n, a, lda, x, incx, c, ldc."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    m, n = kb.param("m", "u32"), kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    c, ldc = kb.param_ptr("c"), kb.param("ldc", "u32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, m)):
        xi = _load_vec(kb, _element_address(kb, x, kb.cvt(i, "s64"), incx, es), rt, nc) if spec.side == "L" else None
        for j in _grid_stride(kb, kb.ctaid("y"), n, kb.nctaid("y")):
            d = xi if xi is not None else _load_vec(kb, _element_address(kb, x, kb.cvt(j, "s64"), incx, es), rt, nc)
            v = _load_vec(kb, matrix_address(kb, a, i, j, lda, es), rt, nc)
            _store_vec(kb, matrix_address(kb, c, i, j, ldc, es), _cmul(kb, d, v), rt)
    return kb.ptx()


@dataclass(frozen=True)
class PackSpec(KernelSpec):
    """The ``uplo`` triangle copied between full storage and packed storage."""

    family: ClassVar[str] = "blas_pack"
    dtype: str = "float32"
    uplo: str = "L"
    direction: str = "tr2tp"


def generate_pack(spec: PackSpec) -> str:
    """Params: n, a, lda, ap."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    n = kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    ap = kb.param_ptr("ap")
    zero = kb.mov(0, "u32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        for j in _grid_stride(kb, kb.ctaid("y"), n, kb.nctaid("y")):
            with kb.if_(kb.setp("ge" if spec.uplo == "L" else "le", i, j)):
                full = matrix_address(kb, a, i, j, lda, es)
                packed = stored_address(kb, "packed", spec.uplo, ap, lda, zero, n, i, j, es)
                src, dst = (full, packed) if spec.direction == "tr2tp" else (packed, full)
                _store_vec(kb, dst, _load_vec(kb, src, rt, nc), rt)
    return kb.ptx()


def _configs(arch: str):
    geam = [GeamSpec(arch=arch, dtype=d, transa=ta, transb=tb) for d in DTYPES for ta in _ops(d) for tb in _ops(d)]
    dgmm = [DgmmSpec(arch=arch, dtype=d, side=s) for d in DTYPES for s in ("L", "R")]
    pack = [PackSpec(arch=arch, dtype=d, uplo=u, direction=r) for d in DTYPES for u in ("L", "U")
            for r in ("tr2tp", "tp2tr")]
    return geam, dgmm, pack


registry.register_family("blas_geam", GeamSpec, generate_geam, lambda arch: _configs(arch)[0])
registry.register_family("blas_dgmm", DgmmSpec, generate_dgmm, lambda arch: _configs(arch)[1])
registry.register_family("blas_pack", PackSpec, generate_pack, lambda arch: _configs(arch)[2])
