"""Pieces shared by the solver's kernel generators: dtype tables, element access of a matrix in
global or shared memory, complex arithmetic on (re[, im]) lists, and float64 natural log and exp.

Matrices are column-major: element (i, j) of a matrix at ``base`` is ``base + (i + j*ld) * es``.
Global addresses are 64-bit (``mul.wide``); shared addresses are u32 offsets into the window.
"""

from __future__ import annotations

import math

from ...ptx.builder import KernelBuilder, Value

DTYPES = ("float32", "float64", "complex64", "complex128")
#: LAPACK's letters for the dtypes (sgetrf, dgetrf, cgetrf, zgetrf)
LETTER = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def real_type(dtype: str) -> str:
    """PTX type of one component: f32 for float32/complex64, f64 otherwise."""
    return "f32" if dtype in ("float32", "complex64") else "f64"


def components(dtype: str) -> int:
    return 2 if dtype.startswith("complex") else 1


def esize(dtype: str) -> int:
    return (4 if real_type(dtype) == "f32" else 8) * components(dtype)


def check_dtype(dtype: str, who: str) -> None:
    if dtype not in DTYPES:
        raise ValueError(f"{who}: dtype={dtype!r}; allowed {DTYPES}")


class Matrix:
    """Column-major access to one matrix: ``addr(i, j)`` (u32 indices) in ``space`` ("global":
    ``base`` a u64 pointer; "shared": ``base`` a u32 shared address), ``load``/``store`` of the
    element as a (re[, im]) list."""

    def __init__(self, kb: KernelBuilder, space: str, base: Value, ld: Value, dtype: str) -> None:
        self.kb, self.space, self.base, self.ld = kb, space, base, ld
        self.rt, self.nc, self.es = real_type(dtype), components(dtype), esize(dtype)

    def addr(self, i: Value, j: Value) -> Value:
        kb = self.kb
        if self.space == "shared":
            return kb.mad(kb.mad(j, self.ld, i), self.es, self.base)
        off = kb.add(kb.mul(j, self.ld, mode="wide"), kb.cvt(i, "u64"))
        return kb.addr(self.base, off, self.es)

    def load_at(self, a: Value) -> list[Value]:
        size = self.es // self.nc
        return [self.kb.ld(self.space, self.rt, a, offset=c * size) for c in range(self.nc)]

    def store_at(self, a: Value, vals: list[Value]) -> None:
        size = self.es // self.nc
        for c, v in enumerate(vals):
            self.kb.st(self.space, a, v, offset=c * size)

    def load(self, i: Value, j: Value) -> list[Value]:
        return self.load_at(self.addr(i, j))

    def store(self, i: Value, j: Value, vals: list[Value]) -> None:
        self.store_at(self.addr(i, j), vals)


def batch_base(kb: KernelBuilder, ptr: Value, index: Value, stride: Value, es: int) -> Value:
    """``ptr + index * stride * es`` (stride a u64 element count)."""
    return kb.addr(ptr, kb.mul(kb.cvt(index, "u64"), stride), es)


def matrix_base(kb: KernelBuilder, ptr: Value, index: Value, stride: Value, es: int, array: bool) -> Value:
    """The base of matrix ``index`` of a batch: ``ptr + index * stride * es`` (strided), or the
    ``index``-th u64 of the device pointer array at ``ptr`` (cuBLAS's *Batched forms)."""
    if array:
        return kb.ld("global", "u64", kb.addr(ptr, index, 8))
    return batch_base(kb, ptr, index, stride, es)


def cmul(kb: KernelBuilder, a: list[Value], b: list[Value]) -> list[Value]:
    if len(a) == 1:
        return [kb.mul(a[0], b[0])]
    re = kb.fma(a[0], b[0], kb.neg(kb.mul(a[1], b[1])))
    im = kb.fma(a[0], b[1], kb.mul(a[1], b[0]))
    return [re, im]


def conj(kb: KernelBuilder, a: list[Value]) -> list[Value]:
    return a if len(a) == 1 else [a[0], kb.neg(a[1])]


def cfms(kb: KernelBuilder, acc: list[Value], a: list[Value], b: list[Value]) -> None:
    """acc -= a * b in place."""
    if len(a) == 1:
        kb.fma(kb.neg(a[0]), b[0], acc[0], out=acc[0])
        return
    kb.fma(kb.neg(a[0]), b[0], acc[0], out=acc[0])
    kb.fma(a[1], b[1], acc[0], out=acc[0])
    kb.fma(kb.neg(a[0]), b[1], acc[1], out=acc[1])
    kb.fma(kb.neg(a[1]), b[0], acc[1], out=acc[1])


def cdiv(kb: KernelBuilder, x: list[Value], d: list[Value]) -> list[Value]:
    """x / d; complex division scaled by the larger component of d (Smith's method), so that
    |d|^2 neither overflows nor underflows."""
    if len(x) == 1:
        return [kb.div(x[0], d[0])]
    big = kb.setp("ge", kb.abs(d[0]), kb.abs(d[1]))
    # big: r = d1/d0, den = d0 + d1 r, re = (x0 + x1 r)/den, im = (x1 - x0 r)/den
    # else: r = d0/d1, den = d0 r + d1, re = (x0 r + x1)/den, im = (x1 r - x0)/den
    p, q = kb.selp(d[0], d[1], big), kb.selp(d[1], d[0], big)
    r = kb.div(q, p)
    den = kb.fma(q, r, p)
    re_b = kb.fma(x[1], r, x[0])
    im_b = kb.fma(kb.neg(x[0]), r, x[1])
    re_s = kb.fma(x[0], r, x[1])
    im_s = kb.fma(x[1], r, kb.neg(x[0]))
    re = kb.selp(re_b, re_s, big)
    im = kb.selp(im_b, im_s, big)
    return [kb.div(re, den), kb.div(im, den)]


def cabs1(kb: KernelBuilder, a: list[Value]) -> Value:
    """|re| + |im| (LAPACK's pivot measure for complex matrices)."""
    v = kb.abs(a[0])
    return v if len(a) == 1 else kb.add(v, kb.abs(a[1]))


def cabs(kb: KernelBuilder, a: list[Value]) -> Value:
    """|a| without overflow: max * sqrt(1 + (min/max)^2) (0 for 0)."""
    if len(a) == 1:
        return kb.abs(a[0])
    x, y = kb.abs(a[0]), kb.abs(a[1])
    hi, lo = kb.max(x, y), kb.min(x, y)
    zero = kb.setp("eq", hi, 0.0)
    r = kb.div(lo, kb.selp(1.0, hi, zero))
    return kb.mul(hi, kb.sqrt(kb.fma(r, r, 1.0)))


_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10


def log_f64(kb: KernelBuilder, x: Value) -> Value:
    """Natural log of an f64 ``x`` >= 0 to about 1 ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
    log m = 2 atanh(s), s = (m - 1)/(m + 1), by its series to s^25 (|s| < 0.172). log 0 = -inf,
    log inf = inf, log NaN = NaN. Subnormals are scaled by 2^54 first."""
    sub = kb.setp("lt", x, 2.2250738585072014e-308)
    xs = kb.selp(kb.mul(x, float(2**54)), x, sub)
    bits = kb.bitcast(xs, "u64")
    e = kb.sub(kb.cvt(kb.shr(bits, 52), "s32"), kb.selp(1023 + 54, 1023, sub, type_="s32"))
    mbits = kb.or_(kb.and_(bits, 0x000FFFFFFFFFFFFF), 0x3FF0000000000000)
    m = kb.bitcast(mbits, "f64")
    high = kb.setp("gt", m, math.sqrt(2.0))
    m = kb.selp(kb.mul(m, 0.5), m, high)
    e = kb.add(e, kb.selp(1, 0, high, type_="s32"))
    s = kb.div(kb.sub(m, 1.0), kb.add(m, 1.0))
    s2 = kb.mul(s, s)
    poly = kb.mov(1.0 / 25.0, "f64")
    for k in range(11, -1, -1):
        poly = kb.fma(poly, s2, 1.0 / (2 * k + 1))
    logm = kb.mul(kb.mul(s, 2.0), poly)
    ef = kb.cvt(e, "f64")
    res = kb.fma(ef, _LN2_HI, kb.fma(ef, _LN2_LO, logm))
    res = kb.selp(float("-inf"), res, kb.setp("eq", x, 0.0))
    return kb.selp(res, x, kb.setp("lt", x, float("inf")))


_EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))


def exp_f64(kb: KernelBuilder, x: Value) -> Value:
    """e^x in float64 to a few ulp: x = n ln 2 + r (Cody-Waite, |r| <= ln 2 / 2), Taylor to r^13,
    2^n applied in two exact steps; 0 below -745.2, inf above 709.8 (NaN: not handled here)."""
    xc = kb.min(kb.max(x, -745.5), 709.9)
    n = kb.cvt(kb.mul(xc, 1.4426950408889634), "f64", rnd="rni")
    r = kb.fma(n, -_LN2_HI, xc)
    r = kb.fma(n, -_LN2_LO, r)
    poly = kb.mov(_EXP_TAYLOR[0], "f64")
    for c in _EXP_TAYLOR[1:]:
        poly = kb.fma(poly, r, c)
    ni = kb.cvt(n, "s64")
    n1 = kb.shr(ni, 1)
    n2 = kb.sub(ni, n1)
    s1 = kb.bitcast(kb.shl(kb.add(n1, 1023), 52), "f64")
    s2 = kb.bitcast(kb.shl(kb.add(n2, 1023), 52), "f64")
    res = kb.mul(kb.mul(poly, s1), s2)
    return kb.selp(float("inf"), res, kb.setp("gt", x, 709.9))


def warp_sum(kb: KernelBuilder, v: Value) -> Value:
    """The sum of ``v`` over the 32 lanes of the warp, in every lane (butterfly shuffles; f64
    values move as two 32-bit halves). The whole warp must reach it."""
    acc = v
    for delta in (16, 8, 4, 2, 1):
        if acc.type == "f32":
            other = kb.shfl_sync("bfly", acc, delta)
        else:
            bits = kb.bitcast(acc, "u64")
            lo = kb.shfl_sync("bfly", kb.cvt(bits, "u32"), delta)
            hi = kb.shfl_sync("bfly", kb.cvt(kb.shr(bits, 32), "u32"), delta)
            other = kb.bitcast(kb.or_(kb.shl(kb.cvt(hi, "u64"), 32), kb.cvt(lo, "u64")), "f64")
        acc = kb.add(acc, other)
    return acc
