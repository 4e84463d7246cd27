"""PTX generator of the post-processing of singular values and small reductions that pinv,
matrix_rank, lstsq and the finiteness checks need (``solver_svals``), so none of them reads a
value back to the host to decide anything but the result's rank:

- ``rank``: one thread per matrix, out[z] (int64) = #{i : s[z, i] > atol + rtol * s[z, 0]}
  (s descending, as gesvdj writes it; strict ``>`` as numpy's matrix_rank);
- ``pinv_scale``: one thread per element of a C-ordered (batch, k, cols) array X (the rows of
  V^H), X[z, i, :] *= 1 / s[z, i] where s[z, i] > atol + rtol * s[z, 0], else 0 (numpy's pinv
  cutoff), in place;
- ``colsq``: one thread per column of a column-major (batch, rows x cols, ld) block, out[z, j]
  (real dtype) = sum_i |X[z, i, j]|^2 (lstsq's residuals);
- ``finite``: one thread per element of a strided (batch, rows, cols) array, out[0] (int32) set
  to 1 when some element is NaN or infinite (check_finite; out must start at 0);
- ``zero_diag``: one thread per matrix of a strided (batch, k, k) array, out[z] (int32) = 1 + the
  first i with X[z, i, i] == 0, else 0 (solve_triangular's singular check, LAPACK trtrs's info).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...ptx import registry
from ...ptx.builder import KernelBuilder
from ...ptx.spec import KernelSpec
from .common import DTYPES, check_dtype, components, esize, real_type

MODES = ("rank", "pinv_scale", "colsq", "finite", "zero_diag")
SVALS_THREADS = 128


@dataclass(frozen=True)
class SvalsSpec(KernelSpec):
    family: ClassVar[str] = "solver_svals"
    dtype: str = "float32"
    mode: str = "rank"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_dtype(self.dtype, "SvalsSpec")
        if self.mode not in MODES:
            raise ValueError(f"SvalsSpec: mode={self.mode!r}; allowed {MODES}")


def generate_svals(spec: SvalsSpec) -> str:
    """Params: k, cols, batch (u32), s, x, out (pointers), s_row, s_col, s_batch (s64 element
    strides of x), rtol, atol (the real type). Unused parameters are ignored per mode: ``rank``
    reads s (k per matrix, contiguous) and writes out; ``pinv_scale`` reads s and scales x
    (C order, k x cols per matrix); ``colsq`` reads x (k rows x cols, strides) and writes out
    (cols reals per matrix); ``finite`` reads x (k rows x cols, strides) and writes out[0]."""
    rt, nc, es = real_type(spec.dtype), components(spec.dtype), esize(spec.dtype)
    rs = es // nc
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(SVALS_THREADS)
    k, cols, batch = kb.param("k", "u32"), kb.param("cols", "u32"), kb.param("batch", "u32")
    s, x, out = kb.param_ptr("s"), kb.param_ptr("x"), kb.param_ptr("out")
    s_row, s_col, s_bat = (kb.param(n, "s64") for n in ("s_row", "s_col", "s_batch"))
    rtol, atol = kb.param("rtol", rt), kb.param("atol", rt)
    g = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())

    def cut(z):
        s0 = kb.ld("global", rt, kb.addr(s, kb.mul(z, k), rs))
        return kb.fma(rtol, s0, atol)

    if spec.mode == "rank":
        kb.ret(kb.setp("ge", g, batch))
        c = cut(g)
        count = kb.mov(0, "u64")
        with kb.loop(0, k, 1, type_="u32") as i:
            si = kb.ld("global", rt, kb.addr(s, kb.mad(g, k, i), rs))
            kb.add(count, kb.selp(1, 0, kb.setp("gt", si, c), type_="u64"), out=count)
        kb.st("global", kb.addr(out, g, 8), count)
    elif spec.mode == "pinv_scale":
        per = kb.mul(k, cols)
        kb.ret(kb.setp("ge", g, kb.mul(per, batch)))
        z = kb.div(g, per)
        i = kb.div(kb.sub(g, kb.mul(z, per)), cols)
        c = cut(z)
        si = kb.ld("global", rt, kb.addr(s, kb.mad(z, k, i), rs))
        keep = kb.setp("gt", si, c)
        inv = kb.selp(kb.div(1.0, kb.selp(si, 1.0, keep), type_=rt), kb.mov(0.0, rt), keep)
        xa = kb.addr(x, g, es)
        for comp in range(nc):
            v = kb.ld("global", rt, xa, offset=comp * rs)
            kb.st("global", xa, kb.mul(v, inv), offset=comp * rs)
    elif spec.mode == "colsq":
        kb.ret(kb.setp("ge", g, kb.mul(cols, batch)))
        z = kb.div(g, cols)
        j = kb.sub(g, kb.mul(z, cols))
        base = kb.mad(kb.cvt(z, "s64"), s_bat, kb.mul(kb.cvt(j, "s64"), s_col))
        acc = kb.mov(0.0, rt)
        with kb.loop(0, k, 1, type_="u32") as i:
            xa = kb.addr(x, kb.mad(kb.cvt(i, "s64"), s_row, base), es)
            for comp in range(nc):
                v = kb.ld("global", rt, xa, offset=comp * rs)
                kb.fma(v, v, acc, out=acc)
        kb.st("global", kb.addr(out, g, rs), acc)
    elif spec.mode == "zero_diag":
        kb.ret(kb.setp("ge", g, batch))
        step = kb.add(s_row, s_col)
        off = kb.mul(kb.cvt(g, "s64"), s_bat)
        first = kb.mov(0, "u32")
        with kb.loop(0, k, 1, type_="u32") as i:
            xa = kb.addr(x, off, es)
            zero = None
            for comp in range(nc):
                z0 = kb.setp("eq", kb.ld("global", rt, xa, offset=comp * rs), 0.0)
                zero = z0 if zero is None else kb.and_(zero, z0)
            hit = kb.and_(zero, kb.setp("eq", first, 0))
            kb.assign(first, kb.selp(kb.add(i, 1), first, hit))
            kb.add(off, step, out=off)
        kb.st("global", kb.addr(out, g, 4), first)
    else:  # finite
        per = kb.mul(k, cols)
        kb.ret(kb.setp("ge", g, kb.mul(per, batch)))
        z = kb.div(g, per)
        rem = kb.sub(g, kb.mul(z, per))
        i = kb.div(rem, cols)
        j = kb.sub(rem, kb.mul(i, cols))
        off = kb.mad(kb.cvt(z, "s64"), s_bat, kb.mad(kb.cvt(i, "s64"), s_row, kb.mul(kb.cvt(j, "s64"), s_col)))
        xa = kb.addr(x, off, es)
        bad = None
        for comp in range(nc):
            v = kb.ld("global", rt, xa, offset=comp * rs)
            d = kb.sub(v, v)  # 0 for a finite v, NaN for NaN or +-inf
            b = kb.setp("nan", d, d)
            bad = b if bad is None else kb.or_(bad, b)
        with kb.if_(bad):
            kb.st("global", out, kb.mov(1, "u32"))
    return kb.ptx()


registry.register_family("solver_svals", SvalsSpec, generate_svals,
                         lambda arch: [SvalsSpec(arch=arch, dtype=d, mode=m) for d in DTYPES for m in MODES])
