"""Correctly rounded float helpers: directed rounding, exact fma, ftz, half formats, and the
f64 NaN rules of the hardware (propagation, quieting, narrowing to f32)."""

from __future__ import annotations

import numpy as np

from .types import bf16_bits_to_f32, f32_to_bf16_bits

F32_MIN_NORMAL = np.float32(1.1754943508222875e-38)
F64_MIN_NORMAL = np.float64(2.2250738585072014e-308)

#: the NaN that NVIDIA hardware writes for any f32 arithmetic result that is NaN (CUDA C++
#: Programming Guide, floating-point standard: "the result ... is a quiet NaN of bit pattern
#: 0x7fffffff"); f16/bf16 results use 0x7FFF. f64 arithmetic is not canonicalised: it
#: propagates an input NaN (``propagate_nan_f64``).
CANONICAL_F32 = np.uint32(0x7FFFFFFF).view(np.float32)
CANONICAL_F16 = np.uint16(0x7FFF).view(np.float16)
CANONICAL_HALF_BITS = np.uint16(0x7FFF)


def canon(r):
    """``r`` with every NaN replaced by the canonical NaN of its float type (f32/f16; f64 and
    other dtypes unchanged). Cheap when there is no NaN: one isnan pass."""
    dt = getattr(r, "dtype", None)
    if dt == np.float32:
        if r.ndim:  # r.r is NaN exactly when some element is (squares never cancel)
            s = r.dot(r)
            if not np.isnan(s):
                return r
        return np.where(np.isnan(r), CANONICAL_F32, r)
    if dt == np.float16:
        nan = np.isnan(r)
        if np.count_nonzero(nan):
            return np.where(nan, CANONICAL_F16, r)
    return r


_F64_QUIET = np.uint64(1 << 51)


def propagate_nan_f64(r, *operands):
    """``r`` (float64) with each NaN that has a NaN operand replaced by the last NaN operand
    passed, quieted, its sign and payload kept. Operands go in rising priority: for DADD/DMUL/
    DMNMX that is PTX order (a, b), the H200's rule (tests/test_emulator_h200_observed.py holds
    the observed bits: add(0x7ff8..0, 0xfff8..0) is 0xfff8..0, add(qNaN, 0x7ff0..01) is
    0x7ff8..01); DFMA passes (a, c, b) (see ``fma_f64``). A NaN without a NaN operand
    (inf - inf, 0 * inf) stays as computed."""
    r = np.asarray(r, np.float64)
    nan = np.isnan(r)
    if not np.count_nonzero(nan):
        return r
    bits = r.view(np.uint64)
    for x in operands:
        x = np.asarray(x, np.float64)
        xnan = np.isnan(x)
        if np.count_nonzero(xnan):
            bits = np.where(nan & xnan, x.view(np.uint64) | _F64_QUIET, bits)
    return bits.view(np.float64)


def quiet_f64(x):
    """f64 bits with every signalling NaN quieted (sign and payload kept)."""
    x = np.asarray(x, np.float64)
    nan = np.isnan(x)
    if not np.count_nonzero(nan):
        return x
    return np.where(nan, x.view(np.uint64) | _F64_QUIET, x.view(np.uint64)).view(np.float64)


def f64_nan_to_f32(x, r):
    """``r`` (float32 results of converting float64 ``x``) with NaN results replaced as the H200
    converts an f64 NaN: sign kept, the top 22 payload bits kept, quieted (0x7ffc0..0 ->
    0x7fe00000, 0xfff8..0 -> 0xffc00000)."""
    x = np.asarray(x, np.float64)
    nan = np.isnan(x)
    if not np.count_nonzero(nan):
        return r
    u = x.view(np.uint64)
    bits = ((u >> np.uint64(32)) & np.uint64(0x80000000)) | np.uint64(0x7FC00000) \
        | ((u >> np.uint64(29)) & np.uint64(0x003FFFFF))
    r_bits = np.asarray(r, np.float32).view(np.uint32)
    return np.where(nan, bits.astype(np.uint32), r_bits).view(np.float32)


def two_sum(a, b):
    """s = RN(a+b) and the exact error e (a + b = s + e)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def round_odd_add(a, b):
    """a + b in float64 rounded to odd (exact then correctly re-roundable to <= 51 bits)."""
    s, e = two_sum(a, b)
    fix = (e != 0) & np.isfinite(s) & ((s.view(np.uint64) & np.uint64(1)) == 0)
    if np.count_nonzero(fix):
        s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s


def _split(a):
    c = a * 134217729.0  # 2^27 + 1 (Veltkamp)
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a, b):
    """p = RN(a*b) and the exact error (Dekker), for float64 arrays."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _fma_f64_exact(a: float, b: float, c: float, zero: float) -> float:
    """a*b + c for finite floats, exact then rounded once (Python's int division rounds
    correctly, subnormals included); overflow gives a signed infinity, an exact zero ``zero``."""
    num_a, den_a = a.as_integer_ratio()
    num_b, den_b = b.as_integer_ratio()
    num_c, den_c = c.as_integer_ratio()
    den = den_a * den_b * den_c
    num = num_a * num_b * den_c + num_c * den_a * den_b
    if num == 0:
        return zero
    try:
        return num / den
    except OverflowError:
        return float("inf") if num > 0 else float("-inf")


#: magnitudes where Dekker's products lose bits: the split overflows above, the error term
#: underflows below
_DEKKER_HI = 2.0 ** 995
_DEKKER_LO = 2.0 ** -960


def fma_f64(a, b, c):
    """Correctly rounded a*b + c in float64 (Boldo-Melquiond with rounding to odd, and exact
    rational arithmetic for the lanes near overflow or underflow). A zero result has the sign
    of IEEE a*b + c. A NaN operand's NaN comes out quieted, sign and payload kept, b's before
    c's before a's: what the H200 returned for every pairing of NaN and non-NaN operands of
    fma.rn.f64 (benches/probe_fidelity.py: NaN operands a->a, b->b, c->c,
    ab->b, ac->c, bc->b, abc->b)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        ph, pl = two_prod(a, b)
        uh, ul = two_sum(c, ph)
        t = round_odd_add(ul, pl)
        r = uh + t
        naive = a * b + c
    # naive is exact when the result is zero (an exact product cancels c, or all are zeros)
    r = np.where(np.isfinite(r) & np.isfinite(ph) & (r != 0), r, naive)
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    tiny_product = (np.abs(ph) < _DEKKER_LO) & (a != 0) & (b != 0)
    edge = finite & ((np.abs(a) > _DEKKER_HI) | (np.abs(b) > _DEKKER_HI) | ~np.isfinite(r)
                     | tiny_product | ((np.abs(r) < _DEKKER_LO) & (r != 0)))
    if np.count_nonzero(edge):
        r = np.array(r, np.float64, copy=True, ndmin=1)
        flat_a, flat_b, flat_c = (np.broadcast_to(x, r.shape) for x in (a, b, c))
        for k in zip(*np.nonzero(edge.reshape(r.shape))):
            r[k] = _fma_f64_exact(float(flat_a[k]), float(flat_b[k]), float(flat_c[k]), r[k])
        r = r.reshape(np.shape(naive))
    return propagate_nan_f64(r, a, c, b)


def fma_f32(a, b, c):
    """Correctly rounded a*b + c for float32 inputs: exact product in f64, sum rounded to odd,
    then one rounding to f32."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    s = p + c
    # RN(RN64(x)) differs from RN(x) only when RN64(x) lands exactly halfway between two
    # floats (low 29 mantissa bits 1000...0) or in the f32 subnormal range: fix those only (an
    # f64 sum of zero is exact: p has 48 significant bits and f64 underflows gradually)
    halfway = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
    if np.count_nonzero(halfway) or np.count_nonzero((np.abs(s) < 1.1754943508222875e-38) & (s != 0)):
        s = round_odd_add(p, c)
    return s.astype(np.float32)


def to_f32_odd(x):
    """float64 -> float32 rounded to odd (for a later exact re-rounding to bf16/f16)."""
    r = np.asarray(x, np.float64).astype(np.float32)
    inexact = (r.astype(np.float64) != x) & np.isfinite(r)
    fix = inexact & ((r.view(np.uint32) & np.uint32(1)) == 0)
    if np.count_nonzero(fix):
        r = np.where(fix, np.nextafter(r, np.where(x > r, np.float32(np.inf), np.float32(-np.inf))), r)
    return r


def round_f64(x, ptype: str, mode: str):
    """float64 values rounded to f32/f16/f64 with mode rn|rz|rm|rp (correct for each)."""
    x = np.asarray(x, np.float64)
    if ptype == "f64":
        return x
    dt = np.float32 if ptype == "f32" else np.float16
    r = x.astype(dt)
    if mode == "rn":
        return r
    back = r.astype(np.float64)
    if mode == "rz":
        fix = np.abs(back) > np.abs(x)
        toward = np.zeros_like(r)
    elif mode == "rm":
        fix = back > x
        toward = np.full_like(r, -np.inf)
    else:
        fix = back < x
        toward = np.full_like(r, np.inf)
    fix &= np.isfinite(x)
    if np.count_nonzero(fix):
        r = np.where(fix, np.nextafter(r, toward), r)
    return r


def ftz(x):
    """Flush f32 subnormals to sign-preserving zero."""
    tiny = np.abs(x) < F32_MIN_NORMAL
    if np.count_nonzero(tiny & (x != 0)):
        return np.where(tiny, np.copysign(np.float32(0), x), x).astype(np.float32)
    return x


# -- half formats: unpack to float32 lanes, pack back with round-to-nearest-even ---------------
def unpack(ptype: str, raw):
    """Values of a half type as a list of float32 arrays (one per packed half)."""
    if ptype == "f16":
        return [np.asarray(raw).astype(np.float32)]
    if ptype == "bf16":
        return [bf16_bits_to_f32(raw)]
    raw = np.asarray(raw, np.uint32)
    lo = (raw & np.uint32(0xFFFF)).astype(np.uint16)
    hi = (raw >> np.uint32(16)).astype(np.uint16)
    if ptype == "f16x2":
        return [lo.view(np.float16).astype(np.float32), hi.view(np.float16).astype(np.float32)]
    return [bf16_bits_to_f32(lo), bf16_bits_to_f32(hi)]


def half_bits(elem: str, v):
    """float32 or float64 values -> uint16 bits of f16/bf16 (nearest even, single rounding)."""
    v = np.asarray(v)
    if elem == "f16":
        return canon(v.astype(np.float16)).view(np.uint16)
    if v.dtype == np.float64:
        v = to_f32_odd(v)
    return f32_to_bf16_bits(v)


def pack(ptype: str, parts):
    """Inverse of ``unpack``: float32/float64 lanes rounded (RN) into the raw representation."""
    if ptype == "f16":
        return canon(np.asarray(parts[0]).astype(np.float16))
    if ptype == "bf16":
        return half_bits("bf16", parts[0])
    elem = "f16" if ptype == "f16x2" else "bf16"
    lo = half_bits(elem, parts[0]).astype(np.uint32)
    hi = half_bits(elem, parts[1]).astype(np.uint32)
    return lo | (hi << np.uint32(16))


HALF_TYPES = ("f16", "bf16", "f16x2", "bf16x2")
