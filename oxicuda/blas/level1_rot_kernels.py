"""PTX generators for the level-1 rotations beyond rot: the modified rotation rotm (element-wise)
and the constructions rotg and rotmg (one thread: they compute a handful of scalars, on the
device so that device pointer mode never synchronizes and host mode is the same code).

- ``blas1_rotm``: x' = h11 x + h12 y, y' = h21 x + h22 y with H from param = (flag, h11, h21,
  h12, h22) as BLAS defines it (flag -1: full H; 0: unit diagonal; 1: h12 = 1, h21 = -1; -2:
  identity, nothing is written);
- ``blas1_rotg``: reference BLAS's rotg (real: r and z into a and b; complex: r into a);
- ``blas1_rotmg``: reference BLAS's rotmg, with its rescaling by gam = 4096.
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
    _element_address,
    _load_vec,
    _store_vec,
    components,
    real_type,
)

REAL_DTYPES = ("float32", "float64")
GAM = 4096.0


@dataclass(frozen=True)
class RotmSpec(KernelSpec):
    family: ClassVar[str] = "blas1_rotm"
    dtype: str = "float32"


def generate_rotm(spec: RotmSpec) -> str:
    """Params: n, x, incx, y, incy, flag, h11, h21, h12, h22, param (device pointer: when
    nonzero the five values are read from it)."""
    rt = real_type(spec.dtype)
    size = 4 if rt == "f32" else 8
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(BLOCK)
    n = kb.param("n", "u32")
    x, incx = kb.param_ptr("x"), kb.param("incx", "s64")
    y, incy = kb.param_ptr("y"), kb.param("incy", "s64")
    vals = [kb.param(name, rt) for name in ("flag", "h11", "h21", "h12", "h22")]
    param = kb.param_ptr("param")
    with kb.if_(kb.setp("ne", param, 0)):
        for q, v in enumerate(vals):
            kb.assign(v, kb.ld("global", rt, param, offset=q * size))
    flag, h11, h21, h12, h22 = vals
    one, minus_one = kb.mov(1.0, rt), kb.mov(-1.0, rt)
    unit_diag, fixed_off = kb.setp("eq", flag, 0.0), kb.setp("eq", flag, 1.0)
    h11 = kb.selp(one, h11, unit_diag)
    h22 = kb.selp(one, h22, unit_diag)
    h12 = kb.selp(one, h12, fixed_off)
    h21 = kb.selp(minus_one, h21, fixed_off)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.and_(kb.setp("lt", i, n), kb.setp("ne", flag, -2.0))):
        i64 = kb.cvt(i, "s64")
        xa, ya = _element_address(kb, x, i64, incx, size), _element_address(kb, y, i64, incy, size)
        xv, yv = kb.ld("global", rt, xa), kb.ld("global", rt, ya)
        kb.st("global", xa, kb.fma(h11, xv, kb.mul(h12, yv)))
        kb.st("global", ya, kb.fma(h21, xv, kb.mul(h22, yv)))
    return kb.ptx()


@dataclass(frozen=True)
class RotgSpec(KernelSpec):
    family: ClassVar[str] = "blas1_rotg"
    dtype: str = "float32"


def generate_rotg(spec: RotgSpec) -> str:
    """Params: a, b, c, s (device pointers; c is real). One thread."""
    rt, nc = real_type(spec.dtype), components(spec.dtype)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(32)
    pa, pb, pc, ps = (kb.param_ptr(name) for name in ("a", "b", "c", "s"))
    with kb.if_(kb.setp("eq", kb.tid(), 0)):
        a, b = _load_vec(kb, pa, rt, nc), _load_vec(kb, pb, rt, nc)
        zero, one = kb.mov(0.0, rt), kb.mov(1.0, rt)
        if nc == 1:
            aa, ab = kb.abs(a[0]), kb.abs(b[0])
            a_big = kb.setp("gt", aa, ab)
            roe = kb.selp(a[0], b[0], a_big)
            scale = kb.add(aa, ab)
            sa, sb = kb.div(a[0], scale), kb.div(b[0], scale)
            r = kb.mul(scale, kb.sqrt(kb.fma(sa, sa, kb.mul(sb, sb))))
            r = kb.selp(r, kb.neg(r), kb.setp("ge", roe, 0.0))
            c, s = kb.div(a[0], r), kb.div(b[0], r)
            z = kb.selp(s, one, a_big)
            z = kb.selp(kb.div(one, c), z, kb.and_(kb.setp("ge", ab, aa), kb.setp("ne", c, 0.0)))
            degenerate = kb.setp("eq", scale, 0.0)
            c, s = kb.selp(one, c, degenerate), kb.selp(zero, s, degenerate)
            r, z = kb.selp(zero, r, degenerate), kb.selp(zero, z, degenerate)
            _store_vec(kb, pa, [r], rt)
            _store_vec(kb, pb, [z], rt)
            _store_vec(kb, pc, [c], rt)
            _store_vec(kb, ps, [s], rt)
        else:
            abs_a = kb.sqrt(kb.fma(a[0], a[0], kb.mul(a[1], a[1])))
            abs_b = kb.sqrt(kb.fma(b[0], b[0], kb.mul(b[1], b[1])))
            scale = kb.add(abs_a, abs_b)
            qa, qb = kb.div(abs_a, scale), kb.div(abs_b, scale)
            norm = kb.mul(scale, kb.sqrt(kb.fma(qa, qa, kb.mul(qb, qb))))
            al = [kb.div(a[0], abs_a), kb.div(a[1], abs_a)]  # a / |a|
            c = kb.div(abs_a, norm)
            # s = alpha conj(b) / norm
            s_re = kb.div(kb.fma(al[0], b[0], kb.mul(al[1], b[1])), norm)
            s_im = kb.div(kb.sub(kb.mul(al[1], b[0]), kb.mul(al[0], b[1])), norm)
            r = [kb.mul(al[0], norm), kb.mul(al[1], norm)]
            a_zero = kb.setp("eq", abs_a, 0.0)
            c = kb.selp(zero, c, a_zero)
            s_re, s_im = kb.selp(one, s_re, a_zero), kb.selp(zero, s_im, a_zero)
            r = [kb.selp(b[0], r[0], a_zero), kb.selp(b[1], r[1], a_zero)]
            _store_vec(kb, pa, r, rt)
            _store_vec(kb, pc, [c], rt)
            _store_vec(kb, ps, [s_re, s_im], rt)
    return kb.ptx()


@dataclass(frozen=True)
class RotmgSpec(KernelSpec):
    family: ClassVar[str] = "blas1_rotmg"
    dtype: str = "float32"


def generate_rotmg(spec: RotmgSpec) -> str:
    """Params: d1, d2, x1, y1, param (device pointers). One thread; reference BLAS rotmg."""
    rt = real_type(spec.dtype)
    size = 4 if rt == "f32" else 8
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(32)
    pd1, pd2, px1, py1, pp = (kb.param_ptr(name) for name in ("d1", "d2", "x1", "y1", "param"))
    gamsq, rgamsq = GAM * GAM, 1.0 / (GAM * GAM)
    with kb.if_(kb.setp("eq", kb.tid(), 0)):
        d1, d2 = kb.ld("global", rt, pd1), kb.ld("global", rt, pd2)
        x1, y1 = kb.ld("global", rt, px1), kb.ld("global", rt, py1)
        flag, h11, h21, h12, h22 = (kb.mov(0.0, rt) for _ in range(5))
        p2 = kb.mul(d2, y1)
        done = kb._new_label("rotmg_done")
        quick = kb.and_(kb.setp("ge", d1, 0.0), kb.setp("eq", p2, 0.0))
        with kb.if_(quick):
            kb.st("global", pp, kb.mov(-2.0, rt))
        kb.bra(done, quick)

        def zero_all() -> None:
            for v in (h11, h21, h12, h22, d1, d2, x1):
                kb.assign(v, 0.0)
            kb.assign(flag, -1.0)

        with kb.if_(kb.setp("lt", d1, 0.0)):
            zero_all()
        with kb.else_():
            p1 = kb.mul(d1, x1)
            q2, q1 = kb.mul(p2, y1), kb.mul(p1, x1)
            with kb.if_(kb.setp("gt", kb.abs(q1), kb.abs(q2))):
                kb.assign(h21, kb.div(kb.neg(y1), x1))
                kb.assign(h12, kb.div(p2, p1))
                u = kb.sub(kb.mov(1.0, rt), kb.mul(h12, h21))
                with kb.if_(kb.setp("gt", u, 0.0)):
                    kb.assign(flag, 0.0)
                    kb.assign(d1, kb.div(d1, u))
                    kb.assign(d2, kb.div(d2, u))
                    kb.assign(x1, kb.mul(x1, u))
                with kb.else_():
                    zero_all()
            with kb.else_():
                with kb.if_(kb.setp("lt", q2, 0.0)):
                    zero_all()
                with kb.else_():
                    kb.assign(flag, 1.0)
                    kb.assign(h11, kb.div(p1, p2))
                    kb.assign(h22, kb.div(x1, y1))
                    u = kb.fma(h11, h22, kb.mov(1.0, rt))
                    t = kb.div(d2, u)
                    kb.assign(d2, kb.div(d1, u))
                    kb.assign(d1, t)
                    kb.assign(x1, kb.mul(y1, u))
            _rescale(kb, rt, d1, flag, h11, h12, h21, h22, x1, gamsq, rgamsq, first=True)
            _rescale(kb, rt, d2, flag, h11, h12, h21, h22, x1, gamsq, rgamsq, first=False)
        # as reference BLAS: flag -1 writes all of H, flag 0 only h21 and h12, flag 1 only h11 and h22
        kb.st("global", pp, flag)
        with kb.if_(kb.setp("ne", flag, 0.0)):
            kb.st("global", pp, h11, offset=size)
            kb.st("global", pp, h22, offset=4 * size)
        with kb.if_(kb.setp("ne", flag, 1.0)):
            kb.st("global", pp, h21, offset=2 * size)
            kb.st("global", pp, h12, offset=3 * size)
        kb.st("global", pd1, d1)
        kb.st("global", pd2, d2)
        kb.st("global", px1, x1)
        kb.label(done)
    return kb.ptx()


def _rescale(kb: KernelBuilder, rt: str, d: Value, flag, h11, h12, h21, h22, x1, gamsq: float, rgamsq: float,
             first: bool) -> None:
    """rotmg's loop: while d (|d| for d2) is outside [1/gam^2, gam^2], make H full and rescale."""
    top, end = kb._new_label("rotmg_scale"), kb._new_label("rotmg_scaled")
    kb.bra(end, kb.setp("eq", d, 0.0))
    kb.label(top)
    mag = d if first else kb.abs(d)
    inside = kb.and_(kb.setp("gt", mag, rgamsq), kb.setp("lt", mag, gamsq))
    kb.bra(end, inside)
    with kb.if_(kb.setp("eq", flag, 0.0)):
        kb.assign(h11, 1.0)
        kb.assign(h22, 1.0)
    with kb.else_():
        kb.assign(h21, -1.0)
        kb.assign(h12, 1.0)
    kb.assign(flag, -1.0)
    small = kb.setp("le", mag, rgamsq)
    scale_d = kb.selp(kb.mov(gamsq, rt), kb.mov(rgamsq, rt), small)
    scale_h = kb.selp(kb.mov(1.0 / GAM, rt), kb.mov(GAM, rt), small)
    kb.assign(d, kb.mul(d, scale_d))
    if first:
        kb.assign(x1, kb.mul(x1, scale_h))
        kb.assign(h11, kb.mul(h11, scale_h))
        kb.assign(h12, kb.mul(h12, scale_h))
    else:
        kb.assign(h21, kb.mul(h21, scale_h))
        kb.assign(h22, kb.mul(h22, scale_h))
    kb.bra(top)
    kb.label(end)


registry.register_family("blas1_rotm", RotmSpec, generate_rotm,
                         lambda arch: [RotmSpec(arch=arch, dtype=d) for d in REAL_DTYPES])
registry.register_family("blas1_rotg", RotgSpec, generate_rotg,
                         lambda arch: [RotgSpec(arch=arch, dtype=d) for d in DTYPES])
registry.register_family("blas1_rotmg", RotmgSpec, generate_rotmg,
                         lambda arch: [RotmgSpec(arch=arch, dtype=d) for d in REAL_DTYPES])
