"""PTX generators for the level-3 routines built around GEMM:

- ``blas3_trsm_panel``: solve op(A_kk) X = B_k (left) or X op(A_kk) = B_k (right) for one
  diagonal block, one thread per right-hand side (sequential substitution in registers-free
  global memory; the block is small, the updates between blocks are GEMMs);
- ``blas3_expand``: a stored triangle of A written out as a full square matrix (symmetric,
  Hermitian, or triangular with zeros and an optional unit diagonal), so symm/trmm run as GEMM;
- ``blas3_axpby``: C = alpha * W + beta * C on one triangle or the whole matrix (syrk's update
  of the stored triangle, and trsm's alpha scaling); beta == 0 never reads C.
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
    _grid_stride,
    _load_vec,
    _scalar,
    _store_vec,
    components,
    real_type,
)
from .level2_kernels import beta_is_zero, cdiv, matrix_address

EXPAND_MODES = ("sym", "herm", "tri", "tri_unit")
REGIONS = ("L", "U", "full")


def _esize(dtype: str) -> int:
    return (4 if real_type(dtype) == "f32" else 8) * components(dtype)


@dataclass(frozen=True)
class TrsmPanelSpec(KernelSpec):
    """One diagonal-block solve of trsm."""

    family: ClassVar[str] = "blas3_trsm_panel"
    dtype: str = "float32"
    side: str = "L"
    uplo: str = "L"
    trans: str = "N"
    unit: bool = False


def generate_trsm_panel(spec: TrsmPanelSpec) -> str:
    """Params: nb (block order), count (right-hand sides), a (A_kk), lda, b (B_k), ldb. Thread t
    solves right-hand side t: column t of B_k (left) or row t (right)."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    right = spec.side == "R"
    swap = (spec.trans != "N") != right
    forward = (spec.uplo == "L") != swap
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    nb, count = kb.param("nb", "u32"), kb.param("count", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    b, ldb = kb.param_ptr("b"), kb.param("ldb", "u32")
    t = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())

    def e(i: Value, l: Value) -> list[Value]:
        v = _load_vec(kb, matrix_address(kb, a, l if swap else i, i if swap else l, lda, es), rt, nc)
        return [v[0], kb.neg(v[1])] if (spec.trans == "C" and nc == 2) else v

    def x_addr(i: Value) -> Value:
        return matrix_address(kb, b, t if right else i, i if right else t, ldb, es)

    with kb.if_(kb.setp("lt", t, count)), kb.loop(0, nb, 1, type_="u32") as k:
        i = k if forward else kb.sub(kb.sub(nb, 1), k)
        xi = x_addr(i)
        v = _load_vec(kb, xi, rt, nc)
        lo, hi = (kb.mov(0, "u32"), i) if forward else (kb.add(i, 1), nb)
        with kb.loop(lo, hi, 1, type_="u32") as l:
            prod = _cmul(kb, e(i, l), _load_vec(kb, x_addr(l), rt, nc))
            for c in range(nc):
                kb.sub(v[c], prod[c], out=v[c])
        if not spec.unit:
            v = cdiv(kb, v, e(i, i))
        _store_vec(kb, xi, v, rt)
    return kb.ptx()


@dataclass(frozen=True)
class ExpandSpec(KernelSpec):
    """W (n x n, ld n) from the ``uplo`` triangle of A."""

    family: ClassVar[str] = "blas3_expand"
    dtype: str = "float32"
    uplo: str = "L"
    mode: str = "sym"


def generate_expand(spec: ExpandSpec) -> str:
    """Params: n, a, lda, w. Grid x covers rows, grid y strides columns."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    n = kb.param("n", "u32")
    a, lda = kb.param_ptr("a"), kb.param("lda", "u32")
    w = kb.param_ptr("w")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        for j in _grid_stride(kb, kb.ctaid("y"), n, kb.nctaid("y")):
            stored = kb.setp("ge" if spec.uplo == "L" else "le", i, j)
            out = [kb.mov(0.0, rt) for _ in range(nc)]
            if spec.mode in ("sym", "herm"):
                row, col = kb.selp(i, j, stored), kb.selp(j, i, stored)
                v = _load_vec(kb, matrix_address(kb, a, row, col, lda, es), rt, nc)
                if spec.mode == "herm" and nc == 2:
                    im = kb.selp(v[1], kb.neg(v[1]), stored)
                    v = [v[0], kb.selp(kb.mov(0.0, rt), im, kb.setp("eq", i, j))]
                for c in range(nc):
                    kb.assign(out[c], v[c])
            else:
                with kb.if_(stored):
                    v = _load_vec(kb, matrix_address(kb, a, i, j, lda, es), rt, nc)
                    for c in range(nc):
                        kb.assign(out[c], v[c])
                if spec.mode == "tri_unit":
                    with kb.if_(kb.setp("eq", i, j)):
                        kb.assign(out[0], 1.0)
                        for c in range(1, nc):
                            kb.assign(out[c], 0.0)
            _store_vec(kb, matrix_address(kb, w, i, j, n, es), out, rt)
    return kb.ptx()


#: how W enters C in ``blas3_axpby``: alpha W (syrk, trsm scaling); alpha W with real scalars
#: and a real diagonal (herk); alpha (W + W^T) (syr2k); alpha W + conj(alpha) W^H with a real
#: beta and a real diagonal (her2k)
AXPBY_FORMS = ("w", "herm", "sym2", "herm2")


@dataclass(frozen=True)
class AxpbySpec(KernelSpec):
    """C = alpha * W + beta * C over ``region`` (a triangle, or the full m x n matrix); ``form``
    (``AXPBY_FORMS``) adds the transposed W of the rank-2k updates and the Hermitian rules."""

    family: ClassVar[str] = "blas3_axpby"
    dtype: str = "float32"
    region: str = "L"
    form: str = "w"


def generate_axpby(spec: AxpbySpec) -> str:
    """Params: m, n, w, ldw, c, ldc, alpha, beta."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), _esize(spec.dtype)
    herm = spec.form in ("herm", "herm2") and nc == 2
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    m, n = kb.param("m", "u32"), kb.param("n", "u32")
    w, ldw = kb.param_ptr("w"), kb.param("ldw", "u32")
    c, ldc = kb.param_ptr("c"), kb.param("ldc", "u32")
    alpha = _scalar(kb, "alpha", rt, 1 if spec.form == "herm" else nc)
    beta = _scalar(kb, "beta", rt, 1 if herm else nc)
    bzero = beta_is_zero(kb, beta)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, m)):
        for j in _grid_stride(kb, kb.ctaid("y"), n, kb.nctaid("y")):
            inside = kb.setp("ge" if spec.region == "L" else "le", i, j) if spec.region != "full" else None
            with (kb.if_(inside) if inside is not None else _nothing()):
                ca = matrix_address(kb, c, i, j, ldc, es)
                wv = _load_vec(kb, matrix_address(kb, w, i, j, ldw, es), rt, nc)
                res = _cmul(kb, alpha, wv)
                if spec.form in ("sym2", "herm2"):
                    wt = _load_vec(kb, matrix_address(kb, w, j, i, ldw, es), rt, nc)
                    a2 = alpha
                    if herm:
                        wt, a2 = [wt[0], kb.neg(wt[1])], [alpha[0], kb.neg(alpha[1])]
                    res = _cadd(kb, res, _cmul(kb, a2, wt))
                with kb.if_(bzero, negate=True):
                    for k, v in enumerate(_cadd(kb, res, _cmul(kb, beta, _load_vec(kb, ca, rt, nc)))):
                        kb.assign(res[k], v)
                if herm:
                    kb.selp(kb.mov(0.0, rt), res[1], kb.setp("eq", i, j), out=res[1])
                _store_vec(kb, ca, res, rt)
    return kb.ptx()


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _configs(arch: str):
    ops = lambda d: ("N", "T", "C") if d.startswith("complex") else ("N", "T")
    panel = [TrsmPanelSpec(arch=arch, dtype=d, side=s, uplo=u, trans=t, unit=un) for d in DTYPES
             for s in ("L", "R") for u in ("L", "U") for t in ops(d) for un in (False, True)]
    expand = [ExpandSpec(arch=arch, dtype=d, uplo=u, mode=m) for d in DTYPES for u in ("L", "U")
              for m in EXPAND_MODES if m != "herm" or d.startswith("complex")]
    axpby = [AxpbySpec(arch=arch, dtype=d, region=r) for d in DTYPES for r in REGIONS]
    axpby += [AxpbySpec(arch=arch, dtype=d, region=r, form=f) for d in DTYPES for r in ("L", "U")
              for f in AXPBY_FORMS[1:] if f == "sym2" or d.startswith("complex")]
    return panel, expand, axpby


registry.register_family("blas3_trsm_panel", TrsmPanelSpec, generate_trsm_panel, lambda a: _configs(a)[0])
registry.register_family("blas3_expand", ExpandSpec, generate_expand, lambda a: _configs(a)[1])
registry.register_family("blas3_axpby", AxpbySpec, generate_axpby, lambda a: _configs(a)[2])
