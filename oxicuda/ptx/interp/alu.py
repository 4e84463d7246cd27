"""Arithmetic, logic, comparison and selection instructions."""

from __future__ import annotations

import numpy as np

from . import approx, directed
from . import floatmath as fm
from .registry import Op, register_handler
from .types import DTYPES, SIGNED, UNSIGNED

_ROUND = ("rn", "rz", "rm", "rp")
_TYPES = set(DTYPES) - {"b128"}


def ptype_of(instr, default: str | None = None) -> str:
    """The last type modifier of an instruction (``add.s32`` -> ``s32``)."""
    for m in reversed(instr.mods):
        if m in _TYPES:
            return m
    if default is None:
        raise Unsupported_(instr, "no type modifier")
    return default


def Unsupported_(instr, why):  # noqa: N802 - reads like the exception it builds
    from .faults import Unsupported
    return Unsupported(f"{instr.full_opcode}: {why}")


def rounding(instr) -> str:
    for m in instr.mods:
        if m in _ROUND or m in ("rni", "rzi", "rmi", "rpi"):
            return m
    return "rn"


def _simple(n_src: int, make):
    """Decoder for ``op.type d, a[, b[, c]]`` where ``make(instr, t)`` gives f(*values)."""
    def decode(instr, kc):
        t = ptype_of(instr)
        f = make(instr, t)
        if f is None:
            raise Unsupported_(instr, f"type .{t} or modifiers {instr.mods} not supported")
        dst, *srcs = instr.operands
        if len(srcs) != n_src:
            raise Unsupported_(instr, f"expected {n_src} sources, got {len(srcs)}")
        out_t = getattr(f, "out_type", t)
        in_t = getattr(f, "in_type", t)

        def bind(cta):
            rs = [cta.reader(s, in_t) for s in srcs]
            put = cta.writer(dst, out_t)
            if n_src == 1:
                r0, = rs
                return lambda m: put(f(r0()), m)
            if n_src == 2:
                r0, r1 = rs
                return lambda m: put(f(r0(), r1()), m)
            r0, r1, r2 = rs
            return lambda m: put(f(r0(), r1(), r2()), m)
        return Op(bind)
    return decode


def _float_wrap(instr, t, f32op, f64op=None, n=2):
    """A float op honouring .ftz/.sat/rounding; half types go through float32 lanes."""
    mode = rounding(instr)
    use_ftz = "ftz" in instr.mods
    sat = "sat" in instr.mods
    if t in fm.HALF_TYPES:
        def half(*vals):
            lanes = [fm.unpack(t, v) for v in vals]
            res = [f64op(*(x.astype(np.float64) for x in parts)) if f64op else f32op(*parts)
                   for parts in zip(*lanes)]
            if sat:
                res = [np.where(np.isnan(r), 0, np.clip(r, 0, 1)).astype(r.dtype) for r in res]
            return fm.pack(t, res)
        return half
    if t == "f32":
        if mode != "rn" and f64op is not None:
            base = lambda *v: fm.round_f64(f64op(*(np.asarray(x, np.float64) for x in v)), "f32", mode)  # noqa: E731
        else:
            base = f32op
        if use_ftz:
            inner = base
            base = lambda *v: fm.ftz(inner(*(fm.ftz(x) for x in v)))  # noqa: E731
    elif t == "f64":
        core64 = f64op or f32op

        def base(*v):
            return fm.propagate_nan_f64(core64(*v), *v)
    else:
        return None
    if sat:
        core = base
        base = lambda *v: np.where(np.isnan(r := core(*v)), 0, np.clip(r, 0, 1)).astype(r.dtype)  # noqa: E731
    elif t == "f32":
        core = base
        base = lambda *v: fm.canon(core(*v))
    return base


def _mul_int(instr, t):
    dt = DTYPES[t]
    w = dt.itemsize
    if "wide" in instr.mods:
        wide = (SIGNED if t.startswith("s") else UNSIGNED)[2 * w] if w < 8 else None
        if wide is None:
            return None
        f = lambda a, b: a.astype(wide) * np.asarray(b).astype(wide)  # noqa: E731
        f.out_type = ("s" if t.startswith("s") else "u") + str(16 * w)
        return f
    if "hi" in instr.mods:
        return _mulhi(t)
    return lambda a, b: a * b


def _mulhi(t):
    dt = DTYPES[t]
    w = dt.itemsize
    if w < 8:
        wide = (SIGNED if t.startswith("s") else UNSIGNED)[2 * w]
        sh = wide.type(8 * w)
        return lambda a, b: ((np.asarray(a).astype(wide) * np.asarray(b).astype(wide)) >> sh).astype(dt)

    def hi64(a, b):
        a = np.atleast_1d(np.asarray(a))
        b = np.broadcast_to(np.asarray(b), a.shape)
        out = [(int(x) * int(y)) >> 64 for x, y in zip(a.tolist(), b.tolist())]
        return np.array([v & 0xFFFFFFFFFFFFFFFF for v in out], dtype=np.uint64).view(dt)
    return hi64


def _mad_int(instr, t):
    mul = _mul_int(instr, t)
    if mul is None:
        return None
    out_t = getattr(mul, "out_type", t)
    f = lambda a, b, c: mul(a, b) + np.asarray(c).astype(DTYPES[out_t])  # noqa: E731
    f.out_type = out_t
    f.in_type = t
    if out_t != t:
        # the addend of mad.wide has the wide type: read it at that type
        def decode_wide(a, b, c):
            return mul(a, b) + c
        decode_wide.out_type = out_t
        decode_wide.in_type = t
        decode_wide.addend_type = out_t
        return decode_wide
    return f


def _div_int(instr, t):
    dt = DTYPES[t]
    if t.startswith("s"):
        def div(a, b):
            a64 = np.asarray(a).astype(np.int64)
            b64 = np.asarray(b).astype(np.int64)
            zero = b64 == 0
            bs = np.where(zero, 1, b64)
            q = _magnitude(a64) // _magnitude(bs)  # unsigned: |INT64_MIN| does not overflow
            q = np.where((a64 < 0) != (bs < 0), ~q + np.uint64(1), q).astype(np.int64)
            return np.where(zero, -1, q).astype(dt)
        return div
    all_ones = np.iinfo(dt).max  # div.u by zero gives all ones on NVIDIA GPUs

    def udiv(a, b):
        zero = np.asarray(b) == 0
        return np.where(zero, all_ones, a // np.where(zero, dt.type(1), b)).astype(dt)
    return udiv


def _magnitude(x: np.ndarray) -> np.ndarray:
    """|x| of int64 values as uint64 (exact for INT64_MIN, where np.abs wraps)."""
    return np.where(x < 0, (~x).astype(np.uint64) + np.uint64(1), x.astype(np.uint64))


def _rem_int(instr, t):
    dt = DTYPES[t]
    if t.startswith("s"):
        def rem(a, b):
            a64 = np.asarray(a).astype(np.int64)
            b64 = np.asarray(b).astype(np.int64)
            bs = np.where(b64 == 0, 1, b64)
            r = _magnitude(a64) % _magnitude(bs)
            return np.where(a64 < 0, ~r + np.uint64(1), r).astype(np.int64).astype(dt)
        return rem
    return lambda a, b: (a % np.where(np.asarray(b) == 0, 1, b)).astype(dt)


def _float_minmax(is_max: bool, nan_wins: bool, xorsign_abs: bool):
    """min/max of two float arrays: a NaN operand loses (``.NaN``: wins); -0 < +0; with
    ``.xorsign.abs`` the magnitude is min/max(|a|, |b|) and the sign is sign(a) xor sign(b).
    NaN results are made canonical by the caller (f32) or by packing (half types)."""
    pick = np.maximum if is_max else np.minimum

    def f(a, b):
        if xorsign_abs:
            sign = np.signbit(a) ^ np.signbit(b)
            a, b = np.abs(a), np.abs(b)
        r = pick(a, b) if nan_wins else (np.fmax(a, b) if is_max else np.fmin(a, b))
        zeros = (a == 0) & (b == 0)
        if np.count_nonzero(zeros):  # -0 < +0, whichever operand came first
            neg = (np.signbit(a) & np.signbit(b)) if is_max else (np.signbit(a) | np.signbit(b))
            r = np.where(zeros, np.where(neg, -np.abs(r), np.abs(r)), r)
        if xorsign_abs:
            r = np.where(np.isnan(r), r, np.where(sign, -np.abs(r), np.abs(r)))
        return r
    return f


def _minmax(is_max):
    def make(instr, t):
        if t in ("f32", "f64") or t in fm.HALF_TYPES:
            xs = "xorsign" in instr.mods
            if xs != ("abs" in instr.mods):
                raise Unsupported_(instr, ".xorsign needs .abs (and .abs needs three operands)")
            return _float_wrap(instr, t, _float_minmax(is_max, "NaN" in instr.mods, xs), None)
        f = np.maximum if is_max else np.minimum
        if "relu" in instr.mods:
            return lambda a, b: np.maximum(f(a, b), 0).astype(np.asarray(a).dtype)
        return f
    return make


def _shift(left):
    def make(instr, t):
        dt = DTYPES[t]
        bits = 8 * dt.itemsize
        if left:
            def shl(a, b):
                b = np.asarray(b).astype(np.uint32)
                r = a << np.minimum(b, bits - 1).astype(dt)
                return np.where(b >= bits, dt.type(0), r).astype(dt)
            return shl

        def shr(a, b):
            b = np.asarray(b).astype(np.uint32)
            r = a >> np.minimum(b, bits - 1).astype(dt)
            if t.startswith("s"):
                return r.astype(dt)  # arithmetic: a clamped shift of bits-1 fills with the sign
            return np.where(b >= bits, dt.type(0), r).astype(dt)
        shl_in = make
        del shl_in
        shr.in_type = t
        return shr
    return make


def _shift_decoder(left):
    make = _shift(left)

    def decode(instr, kc):
        t = ptype_of(instr)
        f = make(instr, t)
        dst, a, b = instr.operands

        def bind(cta):
            ra = cta.reader(a, t)
            rb = cta.reader(b, "u32")
            put = cta.writer(dst, t)
            return lambda m: put(f(ra(), rb()), m)
        return Op(bind)
    return decode


def _logic(fn):
    def make(instr, t):
        return fn
    return make


def _not(instr, t):
    if t == "pred":
        return np.logical_not
    return np.invert


def _popc(instr, t):
    dt = DTYPES[t]

    def popc(a):
        a = np.asarray(a).astype(UNSIGNED[dt.itemsize])
        return np.bitwise_count(a).astype(np.uint32) if hasattr(np, "bitwise_count") else \
            np.array([bin(int(x)).count("1") for x in np.atleast_1d(a)], dtype=np.uint32)
    popc.out_type = "u32"
    return popc


def _clz(instr, t):
    bits = 8 * DTYPES[t].itemsize

    def clz(a):
        a = np.asarray(a).astype(np.uint64)
        n = np.zeros(a.shape, dtype=np.uint32)
        x = a.copy()
        for s in (32, 16, 8, 4, 2, 1):
            if s >= bits:
                continue
            big = x >= (np.uint64(1) << np.uint64(bits - s)) if False else (x >> np.uint64(bits - s)) == 0
            n = np.where(big, n + s, n)
            x = np.where(big, x << np.uint64(s), x) & np.uint64((1 << bits) - 1)
        return np.where(a == 0, bits, n + ((x >> np.uint64(bits - 1)) == 0)).astype(np.uint32)
    clz.out_type = "u32"
    return clz


def _brev(instr, t):
    bits = 8 * DTYPES[t].itemsize
    dt = DTYPES[t]

    def brev(a):
        a = np.asarray(a).astype(np.uint64)
        r = np.zeros_like(a)
        for i in range(bits):
            r |= ((a >> np.uint64(i)) & np.uint64(1)) << np.uint64(bits - 1 - i)
        return r.astype(dt)
    return brev


_SIGN = {"f32": np.uint32(0x80000000), "f64": np.uint64(1 << 63), "f16": np.uint16(0x8000),
         "bf16": np.uint16(0x8000), "f16x2": np.uint32(0x80008000), "bf16x2": np.uint32(0x80008000)}


def _flush_half_bits(t, u):
    """.ftz of f16/f16x2 held as raw bits: subnormal halves become signed zeros."""
    halves = 2 if t == "f16x2" else 1
    for k in range(halves):
        sh = 16 * k
        h = (u >> u.dtype.type(sh)) & u.dtype.type(0xFFFF)
        sub = ((h & u.dtype.type(0x7C00)) == 0) & ((h & u.dtype.type(0x03FF)) != 0)
        u = np.where(sub, u & ~(u.dtype.type(0x03FF) << u.dtype.type(sh)), u).astype(u.dtype)
    return u


#: NaN bits of one element of each float type; the canonical NaN that replaces it
_NAN_TEST = {"f32": (np.uint32(0x7FFFFFFF), np.uint32(0x7F800000), np.uint32(0x7FFFFFFF)),
             "f16": (np.uint16(0x7FFF), np.uint16(0x7C00), np.uint16(0x7FFF)),
             "bf16": (np.uint16(0x7FFF), np.uint16(0x7F80), np.uint16(0x7FFF))}


def _sign_op(instr, t, op):
    """abs/neg of a float: the sign bit cleared or flipped, .ftz flushing subnormals first.

    The PTX ISA leaves the NaN result of abs/neg unspecified. ptxas computes them as an add
    with operand modifiers (FADD/HADD2/DADD), so the NaN rule of the add applies: f32, f16 and
    bf16 give the canonical NaN, f64 passes the NaN through quieted, sign unchanged (the H200
    gives neg.f64(0x7ff0..01) = 0x7ff8..01; tests/test_emulator_h200_observed.py).
    tests/test_emulator_fidelity_gpu.py checks both."""
    sign = _SIGN[t]
    bits = UNSIGNED[DTYPES[t].itemsize]
    ftz = "ftz" in instr.mods
    elem = {"f16x2": "f16", "bf16x2": "bf16"}.get(t, t)
    halves = 2 if t in ("f16x2", "bf16x2") else 1

    def f(a):
        a = np.asarray(a)
        if ftz and t == "f32":
            a = fm.ftz(a)
        u = a.view(bits) if a.dtype == DTYPES[t] else a.astype(DTYPES[t]).view(bits)
        if ftz and t in ("f16", "f16x2"):
            u = _flush_half_bits(t, u)
        r = (u & ~sign) if op == "abs" else (u ^ sign)
        if t == "f64":
            quiet = fm.quiet_f64(u.view(np.float64)).view(bits)
            return np.where(np.isnan(u.view(np.float64)), quiet, r).astype(bits).view(DTYPES[t])
        mag, inf, canon = _NAN_TEST[elem]
        for k in range(halves):
            sh = bits.type(16 * k)
            part = (u >> sh) & bits.type(mag)
            nan = part > bits.type(inf)
            if np.count_nonzero(nan):
                keep = ~(bits.type(0xFFFF) << sh) if halves == 2 else bits.type(0)
                r = np.where(nan, (r & keep) | (bits.type(canon) << sh), r)
        return r.astype(bits).view(DTYPES[t])
    return f


def _abs(instr, t):
    if t in _SIGN:
        return _sign_op(instr, t, "abs")
    return np.abs


def _neg(instr, t):
    if t in _SIGN:
        return _sign_op(instr, t, "neg")
    return lambda a: (-np.asarray(a)).astype(DTYPES[t])


def _fma(instr, t):
    if t == "f32":
        mode = rounding(instr)
        f = fm.fma_f32 if mode == "rn" else directed.f32_fma_directed(mode)
        return _float_wrap(instr, t, f, None)
    if t == "f64":
        mode = rounding(instr)
        return fm.fma_f64 if mode == "rn" else directed.f64_directed("fma", mode)
    if t in fm.HALF_TYPES:
        def half(a, b, c):
            la, lb, lc = fm.unpack(t, a), fm.unpack(t, b), fm.unpack(t, c)
            res = [fm.round_odd_add(x.astype(np.float64) * y.astype(np.float64), z.astype(np.float64))
                   for x, y, z in zip(la, lb, lc)]
            if "relu" in instr.mods:
                res = [np.where(r < 0, 0.0, r) for r in res]
            return fm.pack(t, res)
        return half
    return None


def _mad(instr, t):
    if t in ("f32", "f64"):
        return _fma(instr, t)
    return _mad_int(instr, t)


def _div(instr, t):
    if t == "f32" and ({"approx", "full"} & set(instr.mods)):
        return approx.make("div", instr, t)
    if t == "f32":
        return _float_wrap(instr, t, np.divide, np.divide)
    if t == "f64":
        mode = rounding(instr)
        return np.divide if mode == "rn" else directed.f64_directed("div", mode)
    return _div_int(instr, t)


def _approx_only(op):
    """ex2/lg2/sin/cos/tanh/rsqrt: PTX has only the approximate forms (see approx.py)."""
    def make(instr, t):
        return approx.make(op, instr, t)
    return make


def _sqrt(instr, t):
    if "approx" in instr.mods:
        return approx.make("sqrt", instr, t)
    if t == "f64" and rounding(instr) != "rn":
        return directed.f64_directed("sqrt", rounding(instr))
    return _float_wrap(instr, t, np.sqrt, np.sqrt)


def _rcp(instr, t):
    if "approx" in instr.mods:
        return approx.make("rcp", instr, t)
    if t == "f64":
        mode = rounding(instr)
        return (lambda a: 1.0 / a) if mode == "rn" else directed.f64_directed("rcp", mode)
    return _float_wrap(instr, t, lambda a: np.float32(1) / a, lambda a: 1.0 / a)


def _float_directed(op: str, f32op, f64op):
    """add/sub/mul on floats: the round-to-nearest ops, or for .rz/.rm/.rp the exact directed
    forms of ``directed`` (f32 mul needs none: the product of two f32 values is exact in f64)."""
    def make(instr, t):
        mode = rounding(instr)
        if mode == "rn" or t not in ("f32", "f64"):
            return _float_wrap(instr, t, f32op, f64op)
        if t == "f64":
            return _float_wrap(instr, t, f32op, directed.f64_directed(op, mode))
        if op == "mul":
            return _float_wrap(instr, t, f32op, f64op)
        return _float_wrap(instr, t, directed.f32_sum_directed(mode, negate_b=op == "sub"), None)
    return make


def _float_or_int(int_make, float_make):
    def make(instr, t):
        if t in fm.HALF_TYPES or t in ("f32", "f64"):
            return float_make(instr, t)
        return int_make(instr, t)
    return make


_BIN = {
    "add": _float_or_int(lambda i, t: (lambda a, b: a + b), _float_directed("add", np.add, np.add)),
    "sub": _float_or_int(lambda i, t: (lambda a, b: a - b),
                         _float_directed("sub", np.subtract, np.subtract)),
    "mul": _float_or_int(_mul_int, _float_directed("mul", np.multiply, np.multiply)),
    "div": _div,
    "rem": lambda i, t: _rem_int(i, t),
    "min": _minmax(False),
    "max": _minmax(True),
    "and": _logic(np.bitwise_and),
    "or": _logic(np.bitwise_or),
    "xor": _logic(np.bitwise_xor),
    "copysign": lambda i, t: (lambda a, b: np.copysign(b, a)),
}
_UN = {
    "abs": _abs, "neg": _neg, "not": _not, "popc": _popc, "clz": _clz, "brev": _brev,
    "sqrt": _sqrt, "rsqrt": _approx_only("rsqrt"), "rcp": _rcp,
    "ex2": _approx_only("ex2"), "lg2": _approx_only("lg2"), "sin": _approx_only("sin"),
    "cos": _approx_only("cos"), "tanh": _approx_only("tanh"),
    "cnot": lambda i, t: (lambda a: (a == 0).astype(DTYPES[t])),
}
for _name, _make in _BIN.items():
    register_handler(_name, _simple(2, _make))
for _name, _make in _UN.items():
    register_handler(_name, _simple(1, _make))
register_handler("fma", _simple(3, _fma))
register_handler("shl", _shift_decoder(True))
register_handler("shr", _shift_decoder(False))


def _decode_mad(instr, kc):
    t = ptype_of(instr)
    f = _mad(instr, t)
    if f is None:
        raise Unsupported_(instr, f"type .{t} not supported")
    dst, a, b, c = instr.operands
    out_t = getattr(f, "out_type", t)
    add_t = getattr(f, "addend_type", t)

    def bind(cta):
        ra, rb, rc = cta.reader(a, t), cta.reader(b, t), cta.reader(c, add_t)
        put = cta.writer(dst, out_t)
        return lambda m: put(f(ra(), rb(), rc()), m)
    return Op(bind)


register_handler("mad", _decode_mad)
