"""PTX generators that move matrices between the caller's layout and the solver's workspaces,
and reduce a factor's diagonal:

- ``solver_copy``: dst = src (``"conj"``: its conjugate, for the SVD of a wide matrix through
  its conjugate transpose) element by element, each side addressed by
  element strides of (row, column, batch) (signed 64-bit: C order, Fortran order, views); the
  solver's column-major workspaces are one such layout. Grid x over rows, y strides columns,
  z strides the batch. ``fill="eye"`` ignores src and writes the identity; ``"lower"``/``"upper"``
  copy one triangle and write zeros elsewhere (the factor a numpy-shaped call returns);
  ``"unit_lower"`` writes the Householder vectors of a QR panel explicitly (below the diagonal
  as stored, ones on it, zeros above).
- ``solver_diag``: one thread per matrix of a batch over an LU (or Cholesky) factor's diagonal:
  ``det`` (product times the pivots' sign), ``slogdet`` (sign or phase, and sum of log|d|), or
  ``logdet_chol`` (2 * sum of log d for Cholesky).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...ptx import registry
from ...ptx.builder import KernelBuilder
from ...ptx.spec import KernelSpec
from .common import DTYPES, cabs, check_dtype, cmul, components, esize, log_f64, real_type

COPY_THREADS = 128
FILLS = ("copy", "conj", "eye", "lower", "upper", "unit_lower")
DIAG_MODES = ("det", "slogdet")
DIAG_THREADS = 64


@dataclass(frozen=True)
class CopySpec(KernelSpec):
    family: ClassVar[str] = "solver_copy"
    dtype: str = "float32"
    fill: str = "copy"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "CopySpec")
        if self.fill not in FILLS:
            raise ValueError(f"CopySpec: fill={self.fill!r}; allowed {FILLS}")


def generate_copy(spec: CopySpec) -> str:
    """Params: rows, cols, batch, src, s_row, s_col, s_batch, dst, d_row, d_col, d_batch (strides
    in elements, s64)."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype)
    size = es // nc
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(COPY_THREADS)
    rows, cols, batch = kb.param("rows", "u32"), kb.param("cols", "u32"), kb.param("batch", "u32")
    src = kb.param_ptr("src")
    s_row, s_col, s_bat = (kb.param(n, "s64") for n in ("s_row", "s_col", "s_batch"))
    dst = kb.param_ptr("dst")
    d_row, d_col, d_bat = (kb.param(n, "s64") for n in ("d_row", "d_col", "d_batch"))
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", i, rows))
    i64 = kb.cvt(i, "s64")
    with kb.loop(kb.ctaid("z"), batch, 1, type_="u32") as z:
        z64 = kb.cvt(z, "s64")
        with kb.loop(kb.ctaid("y"), cols, 1, type_="u32") as j:
            j64 = kb.cvt(j, "s64")
            doff = kb.mad(z64, d_bat, kb.mad(j64, d_col, kb.mul(i64, d_row)))
            da = kb.addr(dst, doff, es)
            vals = [kb.mov(0.0, rt) for _ in range(nc)]
            if spec.fill == "eye":
                kb.assign(vals[0], kb.selp(1.0, 0.0, kb.setp("eq", i, j), type_=rt))
            elif spec.fill == "unit_lower":
                soff = kb.mad(z64, s_bat, kb.mad(j64, s_col, kb.mul(i64, s_row)))
                with kb.if_(kb.setp("gt", i, j)):
                    for c in range(nc):
                        kb.assign(vals[c], kb.ld("global", rt, kb.addr(src, soff, es), offset=c * size))
                kb.assign(vals[0], kb.selp(1.0, vals[0], kb.setp("eq", i, j), type_=rt))
            else:
                keep = {"lower": kb.setp("ge", i, j), "upper": kb.setp("le", i, j)}.get(spec.fill)
                soff = kb.mad(z64, s_bat, kb.mad(j64, s_col, kb.mul(i64, s_row)))
                sa = kb.addr(src, soff, es)
                with (kb.if_(keep) if keep is not None else _always()):
                    for c in range(nc):
                        kb.assign(vals[c], kb.ld("global", rt, sa, offset=c * size))
            if spec.fill == "conj" and nc == 2:
                kb.neg(vals[1], out=vals[1])
            for c in range(nc):
                kb.st("global", da, vals[c], offset=c * size)
            # the loops stride by the grid: advance past the other CTAs' indices
            kb.add(j, kb.sub(kb.nctaid("y"), 1), out=j)
        kb.add(z, kb.sub(kb.nctaid("z"), 1), out=z)
    return kb.ptx()


class _always:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@dataclass(frozen=True)
class DiagSpec(KernelSpec):
    family: ClassVar[str] = "solver_diag"
    dtype: str = "float32"
    mode: str = "det"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "DiagSpec")
        if self.mode not in DIAG_MODES:
            raise ValueError(f"DiagSpec: mode={self.mode!r}; allowed {DIAG_MODES}")


def generate_diag(spec: DiagSpec) -> str:
    """Params: n, batch, a, lda, stride_a, ipiv, stride_ipiv, out, out2. ``det``: out[z] = det
    (dtype). ``slogdet``: out[z] = sign (dtype: 0, +-1, or a unit-modulus phase), out2[z] = log|det|
    (the real dtype; -inf for a zero pivot). ipiv 0 (a null pointer) means no pivots."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype)
    size = es // nc
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(DIAG_THREADS)
    n, batch = kb.param("n", "u32"), kb.param("batch", "u32")
    a, lda, stride_a = kb.param_ptr("a"), kb.param("lda", "u32"), kb.param("stride_a", "u64")
    ipiv, stride_ipiv = kb.param_ptr("ipiv"), kb.param("stride_ipiv", "u64")
    out, out2 = kb.param_ptr("out"), kb.param_ptr("out2")
    z = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", z, batch))
    a = kb.addr(a, kb.mul(kb.cvt(z, "u64"), stride_a), es)
    piv = kb.addr(ipiv, kb.mul(kb.cvt(z, "u64"), stride_ipiv), 4)
    has_piv = kb.setp("ne", ipiv, 0)
    acc = [kb.mov(1.0, rt)] + [kb.mov(0.0, rt) for _ in range(nc - 1)]
    logsum = kb.mov(0.0, "f64")
    step = kb.mul(kb.add(lda, 1), es, mode="wide")
    p = kb.mov(a, "u64")
    with kb.loop(0, n, 1, type_="u32") as i:
        d = [kb.ld("global", rt, p, offset=c * size) for c in range(nc)]
        with kb.if_(has_piv):
            swapped = kb.setp("ne", kb.ld("global", "u32", kb.addr(piv, i, 4)), kb.add(i, 1))
            with kb.if_(swapped):
                for c in range(nc):
                    kb.neg(acc[c], out=acc[c])
        if spec.mode == "det":
            for c, v in enumerate(cmul(kb, acc, d)):
                kb.assign(acc[c], v)
        else:
            mag = cabs(kb, d)
            mag64 = mag if rt == "f64" else kb.cvt(mag, "f64")
            kb.add(logsum, log_f64(kb, mag64), out=logsum)
            zero = kb.setp("eq", mag, 0.0)
            safe = kb.selp(1.0, mag, zero)
            unit = [kb.div(v, safe) for v in d]
            for c, v in enumerate(cmul(kb, acc, unit)):
                kb.assign(acc[c], kb.selp(0.0, v, zero))
        kb.add(p, step, out=p)
    oa = kb.addr(out, z, es)
    for c in range(nc):
        kb.st("global", oa, acc[c], offset=c * size)
    if spec.mode == "slogdet":
        zero_det = kb.setp("eq", acc[0], 0.0)
        if nc == 2:
            zero_det = kb.and_(zero_det, kb.setp("eq", acc[1], 0.0))
        res = logsum if rt == "f64" else kb.cvt(logsum, "f32")
        kb.st("global", kb.addr(out2, z, size), kb.selp(float("-inf"), res, zero_det))
    return kb.ptx()


registry.register_family("solver_copy", CopySpec, generate_copy,
                         lambda arch: [CopySpec(arch=arch, dtype=d, fill=f) for d in DTYPES for f in FILLS
                                       if f != "conj" or d.startswith("complex")])
registry.register_family("solver_diag", DiagSpec, generate_diag,
                         lambda arch: [DiagSpec(arch=arch, dtype=d, mode=m) for d in DTYPES for m in DIAG_MODES])


@dataclass(frozen=True)
class PivotShiftSpec(KernelSpec):
    """out[i] = in[i] + delta over int32 vectors: LAPACK's 1-based pivots to scipy's 0-based ones
    and back."""

    family: ClassVar[str] = "solver_pivot_shift"


def generate_pivot_shift(spec: PivotShiftSpec) -> str:
    """Params: count, src, dst, delta."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(COPY_THREADS)
    count, src, dst, delta = kb.param("count", "u32"), kb.param_ptr("src"), kb.param_ptr("dst"), kb.param("delta", "s32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", i, count))
    kb.st("global", kb.addr(dst, i, 4), kb.add(kb.ld("global", "s32", kb.addr(src, i, 4)), delta))
    return kb.ptx()


registry.register_family("solver_pivot_shift", PivotShiftSpec, generate_pivot_shift,
                         lambda arch: [PivotShiftSpec(arch=arch)])
