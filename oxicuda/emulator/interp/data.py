"""Data movement within registers: mov (incl. packing {a,b}), cvt, cvta."""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Vec
from . import floatmath as fm
from .alu import Unsupported_, ptype_of
from .memory import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW
from .registry import Op, register_handler
from .types import DTYPES, UNSIGNED, f32_to_bf16_bits, width


def _decode_mov_b128(instr):
    """mov.b128 d, {lo, hi} / mov.b128 {lo, hi}, a (two .b64 halves) / mov.b128 d, a."""
    dst, src = instr.operands
    if isinstance(src, Vec) and len(src.items) == 2:
        def bind(cta):
            lo, hi = (cta.reader(x, "b64") for x in src.items)
            put = cta.writer(dst, "b128")
            n = cta.nthreads

            def step(m):
                v = np.empty((n, 2), np.uint64)
                v[:, 0], v[:, 1] = lo(), hi()
                put(v, m)
            return step
        return Op(bind)
    if isinstance(dst, Vec) and len(dst.items) == 2:
        def bind(cta):
            r = cta.reader(src, "b128")
            puts = [cta.writer(x, "b64") for x in dst.items]

            def step(m):
                v = r()
                puts[0](v[:, 0], m)
                puts[1](v[:, 1], m)
            return step
        return Op(bind)
    if isinstance(src, Vec) or isinstance(dst, Vec):
        raise Unsupported_(instr, "mov.b128 packs or unpacks exactly two .b64 halves")

    def bind(cta):
        r = cta.reader(src, "b128")
        put = cta.writer(dst, "b128")
        return lambda m: put(r(), m)
    return Op(bind)


def _decode_mov(instr, kc):
    if "b128" in instr.mods:
        return _decode_mov_b128(instr)
    t = ptype_of(instr)
    dst, src = instr.operands
    if isinstance(src, Vec) or isinstance(dst, Vec):
        return _pack_unpack(instr, t, dst, src)

    def bind(cta):
        r = cta.reader(src, t)
        put = cta.writer(dst, t)
        return lambda m: put(r(), m)
    return Op(bind)


def _pack_unpack(instr, t, dst, src):
    total = width(t)
    vec = src if isinstance(src, Vec) else dst
    k = len(vec.items)
    part = total // k
    pt = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[part]
    wide = UNSIGNED[total]
    sh = [wide.type(8 * part * i) for i in range(k)]
    mask = wide.type((1 << 8 * part) - 1)

    if isinstance(src, Vec):  # pack: d = {a, b}
        def bind(cta):
            rs = [cta.reader(x, pt) for x in src.items]
            put = cta.writer(dst, f"b{8 * total}")

            def step(m):
                acc = np.asarray(rs[0]()).astype(wide)
                for r, s in zip(rs[1:], sh[1:]):
                    acc = acc | (np.asarray(r()).astype(wide) << s)
                put(acc, m)
            return step
        return Op(bind)

    def bind(cta):  # unpack: {a, b} = d
        r = cta.reader(src, f"b{8 * total}")
        puts = [cta.writer(x, pt) for x in dst.items]

        def step(m):
            v = np.asarray(r()).astype(wide)
            for put, s in zip(puts, sh):
                put(((v >> s) & mask).astype(UNSIGNED[part]), m)
        return step
    return Op(bind)


def _types2(instr):
    ts = [m for m in instr.mods if m in DTYPES]
    if len(ts) != 2:
        raise Unsupported_(instr, "cvt needs a destination and a source type")
    return ts[0], ts[1]


def _float_to_int(x, dt, mode):
    x = np.asarray(x, np.float64)
    if mode in ("rni", "rn"):
        r = np.rint(x)
    elif mode in ("rmi", "rm"):
        r = np.floor(x)
    elif mode in ("rpi", "rp"):
        r = np.ceil(x)
    else:
        r = np.trunc(x)
    info = np.iinfo(dt)
    r = np.where(np.isnan(r), 0, np.clip(r, float(info.min), float(info.max)))
    # float(info.max) of 64-bit types rounds up to 2^63 / 2^64: clamp in integers afterwards
    out = np.empty(r.shape, dtype=dt)
    big = r >= float(info.max)
    out[...] = np.where(big, 0, r).astype(dt)
    if np.any(big):
        out = np.where(big, info.max, out).astype(dt)
    return out


def _int64_directed(values, mode, to_odd):
    """64-bit integers to float64, exactly: rounded toward zero / -inf / +inf (for an f64 result),
    or to odd (``to_odd``: an inexact value gets its lowest bit set, so that a later directed
    rounding to a narrower float rounds once, as the hardware does)."""
    out = np.empty(values.shape, np.float64)
    flat = out.reshape(-1)
    for i, x in enumerate(np.asarray(values).reshape(-1).tolist()):  # exact Python ints
        d = float(x)  # nearest; |x| < 2**64 stays finite
        t = d if abs(int(d)) <= abs(x) else float(np.nextafter(d, 0.0))  # toward zero
        if int(t) == x:
            flat[i] = t
        elif to_odd:
            flat[i] = np.array(int(np.array(t).view(np.uint64)) | 1, np.uint64).view(np.float64)
        elif mode == "rm" and x < 0:
            flat[i] = np.nextafter(t, -np.inf)
        elif mode == "rp" and x > 0:
            flat[i] = np.nextafter(t, np.inf)
        else:
            flat[i] = t
    return out


def _to_float(values, src_t, dst_t, mode):
    """Convert any value to float type dst_t with rounding mode (rn|rz|rm|rp)."""
    if src_t in ("f16", "bf16"):
        v = fm.unpack(src_t, values)[0].astype(np.float64)
    elif src_t in ("f32", "f64"):
        v = np.asarray(values, np.float64)
    else:
        v = np.asarray(values)
        if dst_t == "f64" or width(src_t) <= 2 or mode != "rn":
            if width(src_t) == 8 and mode != "rn":
                v = _int64_directed(v, mode, to_odd=dst_t != "f64")
            else:
                v = v.astype(np.float64)
        else:
            return v.astype(DTYPES[dst_t]) if dst_t != "bf16" else f32_to_bf16_bits(v.astype(np.float32))
    if dst_t == "bf16":
        if mode != "rn":
            f32 = fm.round_f64(v, "f32", mode)
            bits = f32.view(np.uint32)
            if mode == "rz":
                return (bits >> np.uint32(16)).astype(np.uint16)
            up = (bits & np.uint32(0xFFFF)) != 0
            neg = (bits >> np.uint32(31)) == 1
            hi = (bits >> np.uint32(16)).astype(np.uint16)
            bump = up & (neg if mode == "rm" else ~neg)
            return (hi + bump.astype(np.uint16)).astype(np.uint16)
        return fm.half_bits("bf16", v if src_t != "f32" else v.astype(np.float32))
    return fm.round_f64(v, dst_t, mode) if dst_t != "f64" else v


def _decode_cvt_packed(instr, elem: str):
    """cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b: a goes to the upper half."""
    mods = set(instr.mods)
    if len(instr.operands) != 3:
        raise Unsupported_(instr, "expected d, a, b")
    mode = next((m for m in ("rn", "rz") if m in mods), None)
    if mode is None:
        raise Unsupported_(instr, "needs .rn or .rz")
    unknown = mods - {"rn", "rz", "relu", "satfinite", "f16x2", "bf16x2", "f32"}
    if unknown:
        raise Unsupported_(instr, f"modifiers {sorted(unknown)}")
    relu, satfinite = "relu" in mods, "satfinite" in mods
    half = elem[:-2]
    big = 65504.0 if half == "f16" else float(np.float32(3.3895313892515355e38))
    dst, a, b = instr.operands

    def one(x):
        x = np.asarray(x, np.float32)
        if relu:  # -0 too becomes +0 (H200: cvt.rn.relu.bf16x2.f32 of -0 is 0x0000)
            x = np.where(x <= 0, np.float32(0), x)
        if satfinite:
            x = np.where(np.isinf(x), np.copysign(np.float32(big), x), x)
        if half == "f16":
            v = fm.round_f64(x.astype(np.float64), "f16", mode)
            if satfinite:
                v = np.where(np.isinf(v) & ~np.isinf(x), np.copysign(np.float16(65504), v), v)
            return fm.canon(v.astype(np.float16)).view(np.uint16)
        v = _to_float(x, "f32", "bf16", mode)
        if satfinite:
            inf = (v & np.uint16(0x7FFF)) == np.uint16(0x7F80)
            v = np.where(inf, (v & np.uint16(0x8000)) | np.uint16(0x7F7F), v).astype(np.uint16)
        return v

    def f(x, y):
        return (one(x).astype(np.uint32) << np.uint32(16)) | one(y).astype(np.uint32)

    def bind(cta):
        ra, rb = cta.reader(a, "f32"), cta.reader(b, "f32")
        put = cta.writer(dst, "b32")
        return lambda m: put(f(ra(), rb()), m)
    return Op(bind)


def _decode_cvt(instr, kc):
    packed = next((m for m in instr.mods if m in ("f16x2", "bf16x2")), None)
    if packed is not None and "f32" in instr.mods:
        return _decode_cvt_packed(instr, packed)
    dst_t, src_t = _types2(instr)
    mods = instr.mods
    mode = next((m for m in mods if m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")), None)
    sat = "sat" in mods
    ftz = "ftz" in mods
    dst, src = instr.operands
    ddt = DTYPES[dst_t]
    dst_float = dst_t in ("f16", "bf16", "f32", "f64")
    src_float = src_t in ("f16", "bf16", "f32", "f64")
    if dst_t in ("f16x2", "bf16x2", "tf32") or src_t in ("f16x2", "bf16x2"):
        raise Unsupported_(instr, "packed cvt variants")

    if dst_float and src_float and mode in ("rni", "rzi", "rmi", "rpi"):
        rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode]

        def f(v):
            x = fm.unpack(src_t, v)[0] if src_t in ("f16", "bf16") else v
            r = rnd(x)
            return fm.pack(dst_t, [r]) if dst_t in ("f16", "bf16") else fm.canon(r.astype(ddt))
    elif dst_float:
        fmode = (mode or "rn").rstrip("i")
        # an f64 NaN narrows to f32 with its sign and top payload bits, not the canonical NaN
        nan_keeps_payload = src_t == "f64" and dst_t == "f32"

        def f(v):
            if src_float and ftz and src_t == "f32":
                v = fm.ftz(v)
            r = _to_float(v, src_t, dst_t, fmode)
            if dst_t == "f32" and ftz:
                r = fm.ftz(r)
            if sat and dst_t in ("f32", "f64", "f16"):
                r = np.where(np.isnan(r), 0, np.clip(r, 0, 1)).astype(r.dtype)
            elif nan_keeps_payload:
                return fm.f64_nan_to_f32(v, r)
            return fm.canon(r)
    elif src_float:
        imode = mode or "rzi"

        def f(v):
            x = fm.unpack(src_t, v)[0] if src_t in ("f16", "bf16") else v
            if ftz and src_t == "f32":
                x = fm.ftz(x)
            return _float_to_int(x, ddt, imode)
    else:  # integer -> integer: wrap, or clamp with .sat
        sdt = DTYPES[src_t]

        def f(v):
            v = np.asarray(v)
            if sat:
                lo = max(np.iinfo(ddt).min, np.iinfo(sdt).min)
                hi = min(np.iinfo(ddt).max, np.iinfo(sdt).max)
                return np.clip(v.astype(object) if v.dtype == np.uint64 else v, lo, hi).astype(ddt)
            if ddt.itemsize > sdt.itemsize:
                return v.astype(ddt)  # sign- or zero-extension follows the source type
            return v.astype(UNSIGNED[ddt.itemsize]).view(ddt) if ddt.itemsize <= sdt.itemsize else v

    def bind(cta):
        r = cta.reader(src, src_t)
        put = cta.writer(dst, dst_t)
        return lambda m: put(f(r()), m)
    return Op(bind)


_WINDOWS = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW, "global": 0,
            "const": 0}


def _decode_cvta(instr, kc):
    t = ptype_of(instr)
    to = "to" in instr.mods
    space = next((m.split("::")[0] for m in instr.mods if m.split("::")[0] in _WINDOWS), None)
    if space is None:
        raise Unsupported_(instr, "no state space")
    base = np.uint64(_WINDOWS[space])
    dt = DTYPES[t]
    dst, src = instr.operands

    def bind(cta):
        r = cta.reader(src, t)
        put = cta.writer(dst, t)
        if base == 0:
            return lambda m: put(r(), m)
        if to:
            return lambda m: put((np.asarray(r()).astype(np.uint64) - base).astype(dt), m)
        return lambda m: put((np.asarray(r()).astype(np.uint64) + base).astype(dt), m)
    return Op(bind)


register_handler("mov", _decode_mov)
register_handler("cvt", _decode_cvt)
register_handler("cvta", _decode_cvta)
