"""From 32-bit words to cuRAND's distributions, as PTX (every function records instructions on a
``KernelBuilder`` and returns Values).

cuRAND's device header defines the conversions (curand_uniform.h, curand_normal.h); what is
reproduced here, operation for operation, since a different rounding anywhere changes bits:

- uniform float: ``x * 2^-32 + 2^-33`` on ``(float)x`` (contracted into one fma; the product by
  a power of two is exact, so mul+add gives the same bits): in (0, 1];
- uniform double from one word: ``x * 2^-32 + 2^-33`` in double (exact); from two words (the
  "hq" form): ``z = x ^ (y << 21)`` (53 bits), ``z * 2^-53 + 2^-54`` (exact);
- normal float, Box-Muller on a pair (x, y): ``u`` as uniform float, ``v = y * (2^-32 * 2pi_f) +
  (2^-33 * 2pi_f)`` (one fma), ``s = sqrt(-2 logf(u))``, ``(s sin v, s cos v)`` with ``__sincosf``
  (``sin.approx``/``cos.approx``) and libdevice's ``logf`` (``logf_nv``: the instruction sequence
  nvcc emits for ``logf``);
- log-normal float: ``expf(mean + stddev * z)`` with libdevice's ``expf`` (``expf_nv``);
- normal double, Box-Muller on four words: ``u`` from (x0, x1) and ``v`` from (y0, y1) in the hq
  form (``v = zy * 2^-52 + 2^-53``), ``s = sqrt(-2 log u)``, ``sincospi(v)``. libdevice's ``log``
  and ``sincospi`` are not reproduced: ``log_f64``/``sincospi_f64`` here are accurate to about
  one ulp, so double normals agree with cuRAND's to a few ulp, not bit for bit (the GPU test
  reports the fraction that matches exactly).
"""

from __future__ import annotations

import math

from oxicuda.ptx.builder import KernelBuilder, Value

TWO_POW_M32 = 2.0 ** -32
TWO_POW_M33 = 2.0 ** -33
#: CURAND_2POW32_INV_2PI = 2.3283064e-10f * 6.2831855f: both floats, the product exact
TWO_PI_F32 = 6.2831854820251465              # float32(2 pi)
TWO_POW_M32_2PI = TWO_PI_F32 * TWO_POW_M32
TWO_POW_M33_2PI = TWO_PI_F32 * TWO_POW_M33
TWO_POW_M53 = 2.0 ** -53
LN2_HI_F64 = 6.93147180369123816490e-01      # fdlibm's split of ln 2
LN2_LO_F64 = 1.90821492927058770002e-10
PI_HI_F64 = 3.141592653589793116             # float64(pi)
PI_LO_F64 = 1.2246467991473532e-16           # pi - PI_HI_F64


def _bits_f32(value: int) -> float:
    import struct

    return struct.unpack("<f", struct.pack("<I", value))[0]


# libdevice logf / expf constants (the nvcc-emitted sequences, hex float literals)
_LOGF_POLY = tuple(_bits_f32(b) for b in (0xBE055027, 0x3E1039F6, 0xBDF8CDCC, 0x3E0F2955, 0xBE2AD8B9,
                                          0x3E4CED0B, 0xBE7FFF22, 0x3EAAAA78, 0xBF000000))
_LOGF_LN2 = _bits_f32(0x3F317218)
_EXPF = {"k": _bits_f32(0x3BBB989D), "scale": _bits_f32(0x437C0000), "magic": _bits_f32(0x4B400001),
         "unbias": _bits_f32(0xCB40007F), "log2e_hi": _bits_f32(0x3FB8AA3B),
         "log2e_lo": _bits_f32(0x32A57060)}


def u32_to_f32(kb: KernelBuilder, x: Value) -> Value:
    return kb.cvt(x, "f32", type_="u32")


def uniform_f32(kb: KernelBuilder, x: Value) -> Value:
    """cuRAND's ``_curand_uniform``: (0, 1] from one word."""
    return kb.fma(u32_to_f32(kb, x), TWO_POW_M32, TWO_POW_M33, type_="f32")


def uniform_f64(kb: KernelBuilder, x: Value) -> Value:
    """cuRAND's ``_curand_uniform_double``: (0, 1] from one word (32 bits of resolution)."""
    return kb.fma(kb.cvt(x, "f64", type_="u32"), TWO_POW_M32, TWO_POW_M33, type_="f64")


def hq53(kb: KernelBuilder, x: Value, y: Value) -> Value:
    """``x ^ (y << 21)`` as u64: the 53-bit integer of cuRAND's two-word doubles."""
    return kb.xor(kb.cvt(x, "u64"), kb.shl(kb.cvt(y, "u64"), 21))


def uniform_f64_hq(kb: KernelBuilder, x: Value, y: Value) -> Value:
    """cuRAND's ``_curand_uniform_double_hq``: (0, 1] from two words (53 bits)."""
    return kb.fma(kb.cvt(hq53(kb, x, y), "f64"), TWO_POW_M53, TWO_POW_M53 / 2, type_="f64")


def logf_nv(kb: KernelBuilder, x: Value) -> Value:
    """libdevice ``__nv_logf`` (non-ftz) as nvcc emits it, for x > 0 finite (the only arguments
    Box-Muller gives it: u in (0, 1])."""
    tiny = kb.setp("lt", x, 1.1754943508222875e-38)
    m = kb.selp(kb.mul(x, 8388608.0), x, tiny)
    e0 = kb.selp(-23.0, 0.0, tiny, type_="f32")
    bits = kb.bitcast(m, "s32")
    ex = kb.and_(kb.add(bits, -1059760811), -8388608)
    f = kb.sub(kb.bitcast(kb.sub(bits, ex), "f32"), 1.0)
    e = kb.fma(kb.cvt(ex, "f32", type_="s32"), 1.1920928955078125e-07, e0)
    p = kb.fma(_LOGF_POLY[0], f, _LOGF_POLY[1], type_="f32")
    for c in _LOGF_POLY[2:]:
        p = kb.fma(p, f, c)
    p = kb.fma(kb.mul(f, p), f, f)
    return kb.fma(e, _LOGF_LN2, p)


def _fma_rm_f32(kb: KernelBuilder, a: Value, b: float, c: float) -> Value:
    d = kb._dst("f32", None, "fma")
    kb.instr("fma", ("rm", "f32"), (d.reg, kb._src(a, "f32", "fma"), kb._src(b, "f32", "fma"),
                                     kb._src(c, "f32", "fma")))
    return d


def expf_nv(kb: KernelBuilder, x: Value) -> Value:
    """libdevice ``__nv_expf`` as nvcc emits it (ex2.approx.ftz of the reduced argument times an
    exact power of two)."""
    t = kb.fma(x, _EXPF["k"], 0.5)
    t = kb.min(kb.max(t, 0.0), 1.0)                 # cvt.sat.f32.f32 for finite t
    j = _fma_rm_f32(kb, t, _EXPF["scale"], _EXPF["magic"])
    k = kb.neg(kb.add(j, _EXPF["unbias"]))
    q = kb.fma(x, _EXPF["log2e_hi"], k)
    q = kb.fma(x, _EXPF["log2e_lo"], q)
    scale = kb.bitcast(kb.shl(kb.bitcast(j, "u32"), 23), "f32")
    e = kb._dst("f32", None, "ex2")
    kb.instr("ex2", ("approx", "ftz", "f32"), (e.reg, q.reg))
    return kb.mul(e, scale)


def box_muller_f32(kb: KernelBuilder, x: Value, y: Value) -> tuple[Value, Value]:
    """cuRAND's ``_curand_box_muller``: two standard normals from two words."""
    u = uniform_f32(kb, x)
    v = kb.fma(u32_to_f32(kb, y), TWO_POW_M32_2PI, TWO_POW_M33_2PI, type_="f32")
    return box_muller_f32_uv(kb, u, v)


def box_muller_f32_uv(kb: KernelBuilder, u: Value, v: Value) -> tuple[Value, Value]:
    """``s = sqrtf(-2 logf(u))``, ``__sincosf(v)``: ``(s sin v, s cos v)`` for a float uniform u
    in (0, 1] and an angle v (cuRAND's float Box-Muller after its two uniforms; MRG32k3a's
    ``curand_box_muller_mrg`` takes v = uniform * 2pi_f)."""
    s = kb.sqrt(kb.mul(logf_nv(kb, u), -2.0))
    return kb.mul(kb.sin(v), s), kb.mul(kb.cos(v), s)


# -- double precision (accurate, not libdevice's bits) -----------------------------------------
def _horner(kb: KernelBuilder, x: Value, coefficients) -> Value:
    acc = kb.mov(float(coefficients[0]), x.type)
    for c in coefficients[1:]:
        acc = kb.fma(acc, x, float(c))
    return acc


_ATANH_SERIES = tuple(2.0 / (2 * k + 1) for k in range(11, 0, -1))   # 2/23 ... 2/3
_EXP_SERIES = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))
_SIN_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(11, -1, -1))
_COS_SERIES = tuple((-1) ** k / math.factorial(2 * k) for k in range(11, -1, -1))


def log_f64(kb: KernelBuilder, x: Value) -> Value:
    """Natural log for normal positive finite doubles: exponent split around sqrt(2), the
    atanh series ``log m = 2 atanh(f / (2 + f))``, ``e ln 2`` in two parts."""
    bits = kb.bitcast(x, "s64")
    e = kb.sub(kb.shr(bits, 52), 1023)
    mbits = kb.or_(kb.and_(bits, 0x000FFFFFFFFFFFFF), 0x3FF0000000000000)
    m = kb.bitcast(mbits, "f64")
    big = kb.setp("gt", m, 1.4142135623730951)
    m = kb.selp(kb.mul(m, 0.5), m, big)
    e = kb.add(e, kb.selp(1, 0, big, type_="s64"))
    f = kb.sub(m, 1.0)
    s = kb.div(f, kb.add(f, 2.0))
    z = kb.mul(s, s)
    series = _horner(kb, z, _ATANH_SERIES[:-1])           # 2/23 ... 2/5
    series = kb.fma(series, z, _ATANH_SERIES[-1])          # + 2/3
    # log m = 2s + s z series' where series' = sum 2 z^k/(2k+1), k >= 1
    log_m = kb.fma(kb.mul(s, z), series, kb.add(s, s))
    ef = kb.cvt(e, "f64", type_="s64")
    return kb.fma(ef, LN2_HI_F64, kb.fma(ef, LN2_LO_F64, log_m))


def exp_f64(kb: KernelBuilder, x: Value) -> Value:
    """``e ** x`` in double: ``x = n ln2 + r`` (Cody-Waite), Taylor to r^13 on |r| <= ln2/2,
    ``2^n`` applied in two exact steps; x clamped to [-745, 710] (0 and inf beyond)."""
    xc = kb.min(kb.max(x, -745.5), 709.9)
    n = kb.cvt(kb.mul(xc, 1.4426950408889634), "f64", rnd="rni")
    r = kb.fma(n, -LN2_HI_F64, xc)
    r = kb.fma(n, -LN2_LO_F64, r)
    p = _horner(kb, r, _EXP_SERIES)
    ni = kb.cvt(n, "s64")
    n1 = kb.shr(ni, 1)
    n2 = kb.sub(ni, n1)
    s1 = kb.bitcast(kb.shl(kb.add(n1, 1023), 52), "f64")
    s2 = kb.bitcast(kb.shl(kb.add(n2, 1023), 52), "f64")
    res = kb.mul(kb.mul(p, s1), s2)
    return kb.selp(float("inf"), res, kb.setp("gt", x, 709.9))


def sincospi_f64(kb: KernelBuilder, v: Value) -> tuple[Value, Value]:
    """``(sin(pi v), cos(pi v))`` for finite v: v = k/2 + r with |r| <= 1/4 (exact), x = pi r
    in two parts, Taylor series, then the quadrant k mod 4."""
    k = kb.cvt(kb.add(v, v), "f64", rnd="rni")
    r = kb.fma(k, -0.5, v)
    xh = kb.mul(r, PI_HI_F64)
    x = kb.fma(r, PI_LO_F64, kb.fma(r, PI_HI_F64, kb.neg(xh)))
    x = kb.add(xh, x)
    x2 = kb.mul(x, x)
    s = kb.mul(_horner(kb, x2, _SIN_SERIES), x)
    c = _horner(kb, x2, _COS_SERIES)
    q = kb.and_(kb.cvt(k, "s64"), 3)
    odd = kb.setp("ne", kb.and_(q, 1), 0)
    neg_s = kb.setp("ge", q, 2)                             # q = 2, 3: sin negated
    neg_c = kb.setp("ne", kb.and_(kb.add(q, 1), 2), 0)      # q = 1, 2: cos negated
    sin_v = kb.selp(c, s, odd)
    cos_v = kb.selp(s, c, odd)
    sin_v = kb.selp(kb.neg(sin_v), sin_v, neg_s)
    cos_v = kb.selp(kb.neg(cos_v), cos_v, neg_c)
    return sin_v, cos_v


def box_muller_f64(kb: KernelBuilder, x0: Value, x1: Value, y0: Value, y1: Value) -> tuple[Value, Value]:
    """cuRAND's ``_curand_box_muller_double``: two standard normals from four words."""
    u = uniform_f64_hq(kb, x0, x1)
    v = kb.fma(kb.cvt(hq53(kb, y0, y1), "f64"), 2.0 * TWO_POW_M53, TWO_POW_M53, type_="f64")
    return box_muller_f64_uv(kb, u, v)


def box_muller_f64_uv(kb: KernelBuilder, u: Value, v: Value) -> tuple[Value, Value]:
    """``s = sqrt(-2 log u)``, ``sincospi(v)``: ``(s sin(pi v), s cos(pi v))`` (MRG32k3a's
    ``curand_box_muller_mrg_double`` takes u = uniform, v = 2 * uniform)."""
    s = kb.sqrt(kb.mul(log_f64(kb, u), -2.0))
    sin_v, cos_v = sincospi_f64(kb, v)
    return kb.mul(sin_v, s), kb.mul(cos_v, s)
