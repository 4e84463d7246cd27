"""Instruction-level semantics of the PTX interpreter against independent numpy references:
wrap-around, .hi/.wide, shifts, rounding modes, fma single rounding, NaN/inf/denormal/-0 rules,
conversions with saturation, comparisons incl. unordered, selection, f16/bf16."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp.harness import run_ptx

_REG = {"f32": ("f", "f32"), "f64": ("fd", "f64"), "u32": ("r", "b32"), "s32": ("r", "b32"),
        "b32": ("r", "b32"), "u64": ("rd", "b64"), "s64": ("rd", "b64"), "b64": ("rd", "b64"),
        "f16": ("h", "b16"), "bf16": ("h", "b16"), "u16": ("h", "b16"), "s16": ("h", "b16"),
        "pred": ("p", "pred"), "u8": ("r", "b32"), "s8": ("r", "b32")}
_NP = {"f32": np.float32, "f64": np.float64, "u32": np.uint32, "s32": np.int32, "b32": np.uint32,
       "u64": np.uint64, "s64": np.int64, "b64": np.uint64, "f16": np.float16, "bf16": np.uint16,
       "u16": np.uint16, "s16": np.int16, "u8": np.uint8, "s8": np.int8}
_SIZE = {k: np.dtype(v).itemsize for k, v in _NP.items()}


def kernel(body: str, in_types: list[str], out_type: str) -> str:
    """A kernel: thread i loads in_k[i] (k = 0..), runs ``body`` on %a0.., writes %o to out[i]."""
    params = ",\n".join([f"\t.param .u64 in{k}" for k in range(len(in_types))] + ["\t.param .u64 out"])
    lines = [".version 8.0", ".target sm_86", ".address_size 64", "", f".visible .entry t(\n{params}\n)", "{",
             "\t.reg .b32 %i;", "\t.reg .b64 %ad<2>;", "\t.reg .pred %p<4>;"]
    lines.append(f"\t.reg .{_REG[out_type][1]} %o;")
    for k, t in enumerate(in_types):
        lines.append(f"\t.reg .{_REG[t][1]} %a{k};")
    lines.append("\tmov.u32 %i, %tid.x;")
    for k, t in enumerate(in_types):
        lines += [f"\tld.param.u64 %ad0, [in{k}];", f"\tmul.wide.u32 %ad1, %i, {_SIZE[t]};",
                  "\tadd.s64 %ad0, %ad0, %ad1;", f"\tld.global.{_ldt(t)} %a{k}, [%ad0];"]
    lines.append("\t" + body.strip())
    lines += ["\tld.param.u64 %ad0, [out];", f"\tmul.wide.u32 %ad1, %i, {_SIZE[out_type]};",
              "\tadd.s64 %ad0, %ad0, %ad1;", f"\tst.global.{_ldt(out_type)} [%ad0], %o;", "\tret;", "}", ""]
    return "\n".join(lines)


def _ldt(t):
    return {"f16": "b16", "bf16": "b16", "u8": "u8", "s8": "s8"}.get(t, t)


@pytest.fixture(scope="module")
def emu():
    return EmulatorAPI()


def run1(emu, body, ins, in_types, out_type):
    n = len(ins[0])
    out = np.zeros(n, _NP[out_type])
    res = run_ptx(emu, kernel(body, in_types, out_type), "t", (1, 1, 1), (n, 1, 1),
                  [np.asarray(a, _NP[t]) for a, t in zip(ins, in_types)] + [out])
    return res[-1]


def bits(x):
    return np.asarray(x).view(np.uint32 if np.asarray(x).dtype == np.float32 else np.uint64)


SPECIAL_F32 = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 3.4e38,
                        1.17549435e-38, 0.1, 2.0**-126 * 1.5], np.float32)


def test_integer_add_mul_wrap_and_hi_wide(emu, rng):
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    a[:2] = [0xFFFFFFFF, 0x80000000]
    b[:2] = [1, 0x80000000]
    np.testing.assert_array_equal(run1(emu, "add.u32 %o, %a0, %a1;", [a, b], ["u32", "u32"], "u32"), a + b)
    np.testing.assert_array_equal(run1(emu, "mul.lo.u32 %o, %a0, %a1;", [a, b], ["u32", "u32"], "u32"), a * b)
    hi = ((a.astype(np.uint64) * b.astype(np.uint64)) >> 32).astype(np.uint32)
    np.testing.assert_array_equal(run1(emu, "mul.hi.u32 %o, %a0, %a1;", [a, b], ["u32", "u32"], "u32"), hi)
    sa, sb = a.view(np.int32), b.view(np.int32)
    wide = sa.astype(np.int64) * sb.astype(np.int64)
    np.testing.assert_array_equal(run1(emu, "mul.wide.s32 %o, %a0, %a1;", [sa, sb], ["s32", "s32"], "s64"), wide)
    shi = (wide >> 32).astype(np.int32)
    np.testing.assert_array_equal(run1(emu, "mul.hi.s32 %o, %a0, %a1;", [sa, sb], ["s32", "s32"], "s32"), shi)
    c = rng.integers(-2**62, 2**62, 64)
    np.testing.assert_array_equal(run1(emu, "mad.wide.s32 %o, %a0, %a1, %a2;", [sa, sb, c],
                                       ["s32", "s32", "s64"], "s64"), wide + c)


def test_shifts_clamp_and_signed_division_truncates(emu, rng):
    a = rng.integers(-2**31, 2**31, 64).astype(np.int32)
    s = rng.integers(0, 40, 64).astype(np.uint32)
    ref_shl = np.where(s >= 32, 0, (a.view(np.uint32).astype(np.uint64) << np.minimum(s, 31)) & 0xFFFFFFFF).astype(np.uint32)
    np.testing.assert_array_equal(run1(emu, "shl.b32 %o, %a0, %a1;", [a.view(np.uint32), s], ["b32", "u32"], "b32"), ref_shl)
    ref_sra = a >> np.minimum(s, 31).astype(np.int32)
    np.testing.assert_array_equal(run1(emu, "shr.s32 %o, %a0, %a1;", [a, s], ["s32", "u32"], "s32"), ref_sra)
    b = rng.integers(-100, 100, 64).astype(np.int32)
    b[b == 0] = 7
    q = np.array([int(x / y) for x, y in zip(a.tolist(), b.tolist())], np.int32)
    np.testing.assert_array_equal(run1(emu, "div.s32 %o, %a0, %a1;", [a, b], ["s32", "s32"], "s32"), q)
    np.testing.assert_array_equal(run1(emu, "rem.s32 %o, %a0, %a1;", [a, b], ["s32", "s32"], "s32"), a - q * b)


def test_f32_arithmetic_special_values_and_min_max_nan_rule(emu):
    a = np.repeat(SPECIAL_F32, len(SPECIAL_F32))
    b = np.tile(SPECIAL_F32, len(SPECIAL_F32))
    with np.errstate(all="ignore"):
        for op, ref in [("add", a + b), ("sub", a - b), ("mul", a * b), ("div.rn", a / b)]:
            got = run1(emu, f"{op}.f32 %o, %a0, %a1;", [a, b], ["f32", "f32"], "f32")
            np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
            ok = ~np.isnan(ref)
            np.testing.assert_array_equal(bits(got[ok]), bits(ref[ok]))
    got = run1(emu, "min.f32 %o, %a0, %a1;", [a, b], ["f32", "f32"], "f32")
    ref = np.fmin(a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(a) & np.isnan(b))
    np.testing.assert_array_equal(got[~np.isnan(ref)], ref[~np.isnan(ref)])


def test_add_f32_directed_rounding_and_ftz(emu, rng):
    a = rng.standard_normal(200).astype(np.float32)
    b = (rng.standard_normal(200) * 1e-4).astype(np.float32)
    exact = [Fraction(float(x)) + Fraction(float(y)) for x, y in zip(a, b)]
    for mode in ("rz", "rm", "rp", "rn"):
        got = run1(emu, f"add.{mode}.f32 %o, %a0, %a1;", [a, b], ["f32", "f32"], "f32")
        for g, e in zip(got, exact):
            lo, hi = np.nextafter(g, np.float32(-np.inf)), np.nextafter(g, np.float32(np.inf))
            fg = Fraction(float(g))
            if mode == "rz":
                assert abs(fg) <= abs(e) and abs(e) < abs(Fraction(float(np.nextafter(g, np.copysign(np.inf, g))))) or fg == e
            elif mode == "rm":
                assert fg <= e < Fraction(float(hi))
            elif mode == "rp":
                assert Fraction(float(lo)) < e <= fg
            else:
                assert abs(fg - e) <= abs(Fraction(float(lo)) - e) and abs(fg - e) <= abs(Fraction(float(hi)) - e)
    d = np.array([1e-40, -1e-40, 1.0], np.float32)
    got = run1(emu, "add.ftz.f32 %o, %a0, %a1;", [d, np.array([0.0, -0.0, 0.0], np.float32)],
                ["f32", "f32"], "f32")
    assert bits(got).tolist() == [0, 0x80000000, 0x3F800000]


def test_fma_f32_is_rounded_once(emu, rng):
    # a*b + c where double rounding in f64 would differ: a*b = 1 + 2^-24 + 2^-48ish patterns
    a = np.concatenate([rng.standard_normal(120), [1 + 2**-12, 1 + 2**-23]]).astype(np.float32)
    b = np.concatenate([rng.standard_normal(120), [1 + 2**-12, 1 - 2**-24]]).astype(np.float32)
    c = np.concatenate([rng.standard_normal(120), [-1.0, -1.0]]).astype(np.float32)
    got = run1(emu, "fma.rn.f32 %o, %a0, %a1, %a2;", [a, b, c], ["f32", "f32", "f32"], "f32")
    for g, x, y, z in zip(got, a, b, c):
        e = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        lo, hi = np.nextafter(g, np.float32(-np.inf)), np.nextafter(g, np.float32(np.inf))
        d = abs(Fraction(float(g)) - e)
        assert d <= abs(Fraction(float(lo)) - e) and d <= abs(Fraction(float(hi)) - e)


def test_fma_f64_is_rounded_once(emu, rng):
    a = rng.standard_normal(64)
    b = rng.standard_normal(64)
    c = -(a * b) * (1 + rng.standard_normal(64) * 1e-15)
    got = run1(emu, "fma.rn.f64 %o, %a0, %a1, %a2;", [a, b, c], ["f64", "f64", "f64"], "f64")
    for g, x, y, z in zip(got, a, b, c):
        e = Fraction(x) * Fraction(y) + Fraction(z)
        for nb in (np.nextafter(g, -np.inf), np.nextafter(g, np.inf)):
            assert abs(Fraction(g) - e) <= abs(Fraction(nb) - e)


def test_cvt_float_to_int_saturates_and_nan_is_zero(emu):
    x = np.array([1.5, 2.5, -1.5, -2.5, 3e9, -3e9, np.nan, np.inf, -np.inf, 0.49999997], np.float32)
    assert run1(emu, "cvt.rni.s32.f32 %o, %a0;", [x], ["f32"], "s32").tolist() == \
        [2, 2, -2, -2, 2**31 - 1, -2**31, 0, 2**31 - 1, -2**31, 0]
    assert run1(emu, "cvt.rzi.s32.f32 %o, %a0;", [x], ["f32"], "s32").tolist() == \
        [1, 2, -1, -2, 2**31 - 1, -2**31, 0, 2**31 - 1, -2**31, 0]
    assert run1(emu, "cvt.rmi.u32.f32 %o, %a0;", [x], ["f32"], "u32").tolist() == \
        [1, 2, 0, 0, 3000000000, 0, 0, 2**32 - 1, 0, 0]
    assert run1(emu, "cvt.rpi.s64.f32 %o, %a0;", [x], ["f32"], "s64").tolist() == \
        [2, 3, -1, -2, 3000000000, -3000000000, 0, 2**63 - 1, -2**63, 1]


def test_cvt_between_floats_with_rounding_modes(emu, rng):
    x = np.concatenate([rng.standard_normal(100) * 100, [1 + 2**-11, 1 + 3 * 2**-11, 70000.0, -1e-9]])
    f32 = run1(emu, "cvt.rn.f32.f64 %o, %a0;", [x], ["f64"], "f32")
    np.testing.assert_array_equal(f32, x.astype(np.float32))
    rz = run1(emu, "cvt.rz.f32.f64 %o, %a0;", [x], ["f64"], "f32")
    assert (np.abs(rz.astype(np.float64)) <= np.abs(x)).all()
    assert (np.abs(np.nextafter(rz, np.copysign(np.float32(np.inf), rz)).astype(np.float64)) > np.abs(x)).all()
    x32 = x.astype(np.float32)
    h = run1(emu, "cvt.rn.f16.f32 %o, %a0;", [x32], ["f32"], "f16")
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h.view(np.uint16), x32.astype(np.float16).view(np.uint16))
    back = run1(emu, "cvt.f32.f16 %o, %a0;", [h], ["f16"], "f32")
    np.testing.assert_array_equal(back, h.astype(np.float32))
    bf = run1(emu, "cvt.rn.bf16.f32 %o, %a0;", [x32], ["f32"], "bf16")
    u = x32.view(np.uint32).astype(np.uint64)
    np.testing.assert_array_equal(bf, ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16))
    i = np.array([16777217, -16777217, 2**31 - 1, 5], np.int32)
    np.testing.assert_array_equal(run1(emu, "cvt.rn.f32.s32 %o, %a0;", [i], ["s32"], "f32"), i.astype(np.float32))


def test_cvt_integer_narrowing_and_saturation(emu):
    x = np.array([-1, 300, -300, 127, 70000], np.int32)
    assert run1(emu, "cvt.sat.s8.s32 %o, %a0;", [x], ["s32"], "s8").tolist() == [-1, 127, -128, 127, 127]
    assert run1(emu, "cvt.u16.s32 %o, %a0;", [x], ["s32"], "u16").tolist() == [65535, 300, 65236, 127, 4464]
    assert run1(emu, "cvt.s64.s32 %o, %a0;", [x], ["s32"], "s64").tolist() == x.tolist()


@pytest.mark.parametrize("cmp,ref", [
    ("eq", lambda a, b: a == b), ("ne", lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b)),
    ("lt", lambda a, b: a < b), ("geu", lambda a, b: (a >= b) | np.isnan(a) | np.isnan(b)),
    ("neu", lambda a, b: a != b), ("nan", lambda a, b: np.isnan(a) | np.isnan(b)),
    ("num", lambda a, b: ~np.isnan(a) & ~np.isnan(b)), ("ltu", lambda a, b: ~(a >= b)),
])
def test_setp_float_comparisons_ordered_and_unordered(emu, cmp, ref):
    a = np.repeat(SPECIAL_F32[:8], 8)
    b = np.tile(SPECIAL_F32[:8], 8)
    body = f"setp.{cmp}.f32 %p1, %a0, %a1;\n\tselp.u32 %o, 1, 0, %p1;"
    got = run1(emu, body, [a, b], ["f32", "f32"], "u32")
    np.testing.assert_array_equal(got.astype(bool), ref(a, b))


def test_setp_unsigned_and_combining_and_two_destinations(emu, rng):
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    body = ("setp.lo.u32 %p1|%p2, %a0, %a1;\n\tsetp.ne.and.u32 %p3, %a0, 7, %p2;\n\t"
            "selp.u32 %o, 1, 0, %p3;")
    got = run1(emu, body, [a, b], ["u32", "u32"], "u32")
    np.testing.assert_array_equal(got.astype(bool), (a >= b) & (a != 7))


def test_bit_instructions(emu, rng):
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    a[0] = 0
    popc = np.array([int(x).bit_count() for x in a], np.uint32)
    np.testing.assert_array_equal(run1(emu, "popc.b32 %o, %a0;", [a], ["b32"], "u32"), popc)
    clz = np.array([32 - int(x).bit_length() for x in a], np.uint32)
    np.testing.assert_array_equal(run1(emu, "clz.b32 %o, %a0;", [a], ["b32"], "u32"), clz)
    brev = np.array([int(f"{int(x):032b}"[::-1], 2) for x in a], np.uint32)
    np.testing.assert_array_equal(run1(emu, "brev.b32 %o, %a0;", [a], ["b32"], "b32"), brev)


def test_f16_and_bf16_arithmetic_rounds_once(emu, rng):
    a = (rng.standard_normal(64) * 4).astype(np.float16)
    b = (rng.standard_normal(64) * 4).astype(np.float16)
    got = run1(emu, "add.f16 %o, %a0, %a1;", [a, b], ["f16", "f16"], "f16")
    np.testing.assert_array_equal(got, (a.astype(np.float64) + b.astype(np.float64)).astype(np.float16))
    got = run1(emu, "fma.rn.f16 %o, %a0, %a1, %a0;", [a, b], ["f16", "f16"], "f16")
    np.testing.assert_array_equal(got, (a.astype(np.float64) * b + a).astype(np.float16))


def test_transcendentals_within_the_documented_error_bounds(emu, rng):
    """The .approx results against float64, with tolerances no tighter than the hardware's
    documented maximum error (approx.MAX_ERROR): a GPU result must pass the same check."""
    from oxicuda.emulator.interp.approx import MAX_ERROR

    x = rng.uniform(-3, 3, 64).astype(np.float32)
    x64 = x.astype(np.float64)
    for op, ref in [("ex2", np.exp2), ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh)]:
        got = run1(emu, f"{op}.approx.f32 %o, %a0;", [x], ["f32"], "f32").astype(np.float64)
        kind, bound = MAX_ERROR[op]
        r = ref(x64)
        err = np.abs(got - r)
        if kind == "ulp":
            err = err / np.spacing(np.abs(r).astype(np.float32)).astype(np.float64)
        elif kind == "rel":
            err = err / np.abs(r)
        assert err.max() <= bound, (op, err.max(), bound)
    p = np.abs(x) + 0.1
    got = run1(emu, "lg2.approx.f32 %o, %a0;", [p], ["f32"], "f32").astype(np.float64)
    assert np.abs(got - np.log2(p.astype(np.float64))).max() <= MAX_ERROR["lg2"][1]
    np.testing.assert_array_equal(run1(emu, "sqrt.rn.f32 %o, %a0;", [p], ["f32"], "f32"), np.sqrt(p))
    got = run1(emu, "rsqrt.approx.f32 %o, %a0;", [p], ["f32"], "f32").astype(np.float64)
    ref = 1 / np.sqrt(p.astype(np.float64))
    assert (np.abs(got - ref) / ref).max() <= MAX_ERROR["rsqrt"][1]


def test_bfe_bfi_prmt_lop3(emu, rng):
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    pos = rng.integers(0, 32, 64).astype(np.uint32)
    ln = rng.integers(0, 33, 64).astype(np.uint32)
    got = run1(emu, "bfe.u32 %o, %a0, %a1, %a2;", [a, pos, ln], ["u32", "u32", "u32"], "u32")
    ref = [(int(x) >> int(p)) & ((1 << min(int(n), 32)) - 1) for x, p, n in zip(a, pos, ln)]
    assert got.tolist() == ref
    got = run1(emu, "bfe.s32 %o, %a0, %a1, %a2;", [a.view(np.int32), pos, ln], ["s32", "u32", "u32"], "s32")
    ref = []
    for x, p, n in zip(a.tolist(), pos.tolist(), ln.tolist()):
        n = min(n, 32)
        if n == 0:
            ref.append(0)
            continue
        sbit = (x >> min(p + n - 1, 31)) & 1  # PTX ISA: d[i] = a[pos+i] while i < len and pos+i <= 31
        v = sum((((x >> (p + i)) & 1) if (i < n and p + i <= 31) else sbit) << i for i in range(32))
        ref.append(v - (1 << 32) if v >= 1 << 31 else v)
    assert got.tolist() == ref
    got = run1(emu, "bfi.b32 %o, %a0, %a1, %a2, %a3;", [a, b, pos, ln], ["b32", "b32", "u32", "u32"], "b32")
    ref = []
    for x, y, p, n in zip(a.tolist(), b.tolist(), pos.tolist(), ln.tolist()):
        m = ((1 << n) - 1) << p
        ref.append(((y & ~m) | ((x << p) & m)) & 0xFFFFFFFF)
    assert got.tolist() == ref
    sel = rng.integers(0, 2**16, 64).astype(np.uint32)
    got = run1(emu, "prmt.b32 %o, %a0, %a1, %a2;", [a, b, sel], ["b32", "b32", "b32"], "b32")
    ref = []
    for x, y, s in zip(a.tolist(), b.tolist(), sel.tolist()):
        src = (x | (y << 32)).to_bytes(8, "little")
        out = 0
        for k in range(4):
            nib = (s >> 4 * k) & 0xF
            byte = src[nib & 7]
            if nib & 8:
                byte = 0xFF if byte & 0x80 else 0
            out |= byte << 8 * k
        ref.append(out)
    assert got.tolist() == ref
    got = run1(emu, "lop3.b32 %o, %a0, %a1, %a2, 0x96;", [a, b, sel], ["b32", "b32", "b32"], "b32")
    np.testing.assert_array_equal(got, a ^ b ^ sel)


# -- carry chain, mul24, dp4a/dp2a, testp --------------------------------------------------------
def _edge_u64(rng, n):
    x = rng.integers(0, 2**64, n, dtype=np.uint64)
    x[:8] = [0, 1, 0xFFFFFFFF, 0x1_0000_0000, 0xFFFFFFFF_FFFFFFFF, 0xFFFFFFFF_00000000,
             0x7FFFFFFF_FFFFFFFF, 0x00000000_FFFFFFFE]
    return x


def test_add_cc_addc_and_sub_cc_subc_chain_64_bit_arithmetic_from_32_bit_limbs(emu, rng):
    a, b = _edge_u64(rng, 64), _edge_u64(rng, 64)[::-1].copy()
    split = "{ .reg .b32 %x<6>;\n mov.b64 {%x0, %x1}, %a0;\n mov.b64 {%x2, %x3}, %a1;\n"
    add = run1(emu, split + " add.cc.u32 %x4, %x0, %x2;\n addc.u32 %x5, %x1, %x3;\n"
               " mov.b64 %o, {%x4, %x5}; }", [a, b], ["u64", "u64"], "u64")
    sub = run1(emu, split + " sub.cc.u32 %x4, %x0, %x2;\n subc.u32 %x5, %x1, %x3;\n"
               " mov.b64 %o, {%x4, %x5}; }", [a, b], ["u64", "u64"], "u64")
    np.testing.assert_array_equal(add, a + b)
    np.testing.assert_array_equal(sub, a - b)


def test_addc_cc_propagates_the_carry_through_three_limbs(emu, rng):
    # (a, with a 32-bit high limb of b's low word) + b as 96-bit numbers; out = the top limb
    a, b = _edge_u64(rng, 64), _edge_u64(rng, 64)[::-1].copy()
    body = ("{ .reg .b32 %x<8>;\n mov.b64 {%x0, %x1}, %a0;\n mov.b64 {%x2, %x3}, %a1;\n"
            " add.cc.u32 %x4, %x0, %x2;\n addc.cc.u32 %x5, %x1, %x3;\n addc.u32 %x6, %x3, 0;\n"
            " mov.b64 %o, {%x5, %x6}; }")
    out = run1(emu, body, [a, b], ["u64", "u64"], "u64")
    ref = [(((int(x) + int(y) + ((int(y) >> 32) << 64)) >> 32) & (2**64 - 1)) for x, y in zip(a, b)]
    np.testing.assert_array_equal(out, np.array(ref, np.uint64))


def test_mad_cc_madc_hi_give_the_64_bit_multiply_add_of_32_bit_operands(emu, rng):
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    c = _edge_u64(rng, 64)
    a[:4] = 0xFFFFFFFF
    b[:4] = 0xFFFFFFFF
    body = ("{ .reg .b32 %x<4>;\n mov.b64 {%x0, %x1}, %a2;\n mad.lo.cc.u32 %x2, %a0, %a1, %x0;\n"
            " madc.hi.u32 %x3, %a0, %a1, %x1;\n mov.b64 %o, {%x2, %x3}; }")
    out = run1(emu, body, [a, b, c], ["u32", "u32", "u64"], "u64")
    ref = [(int(x) * int(y) + int(z)) & (2**64 - 1) for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(out, np.array(ref, np.uint64))


def test_add_cc_u64_carry_out(emu, rng):
    a, b = _edge_u64(rng, 64), _edge_u64(rng, 64)[::-1].copy()
    body = "{ .reg .b64 %y; add.cc.u64 %y, %a0, %a1;\n addc.u64 %o, 0, 0; }"
    out = run1(emu, body, [a, b], ["u64", "u64"], "u64")
    ref = [(int(x) + int(y)) >> 64 for x, y in zip(a, b)]
    np.testing.assert_array_equal(out, np.array(ref, np.uint64))


@pytest.mark.parametrize("t", ["u32", "s32"])
@pytest.mark.parametrize("form", ["mul24.lo", "mul24.hi", "mad24.lo", "mad24.hi"])
def test_mul24_and_mad24_use_the_low_24_bits(emu, rng, t, form):
    npt = np.uint32 if t == "u32" else np.int32
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(npt)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(npt)
    c = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32).view(npt)
    mad = form.startswith("mad")
    srcs = "%a0, %a1, %a2" if mad else "%a0, %a1"
    out = run1(emu, f"{form}.{t} %o, {srcs};", [a, b, c] if mad else [a, b],
               [t] * (3 if mad else 2), t)

    def low24(v):
        v = int(v) & 0xFFFFFF
        return v - (1 << 24) if t == "s32" and v & 0x800000 else v
    ref = []
    for x, y, z in zip(a, b, c):
        p = low24(x) * low24(y)
        r = (p >> 16) if form.endswith("hi") else p
        r = (r + (int(z) if mad else 0)) & 0xFFFFFFFF
        ref.append(r)
    np.testing.assert_array_equal(out.view(np.uint32), np.array(ref, np.uint32))


@pytest.mark.parametrize("at,bt", [("u32", "u32"), ("s32", "s32"), ("u32", "s32"), ("s32", "u32")])
def test_dp4a_and_dp2a_match_numpy_byte_dot_products(emu, rng, at, bt):
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    c = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    sa, sb = at == "s32", bt == "s32"
    ab = a.view(np.int8 if sa else np.uint8).reshape(64, 4).astype(np.int64)
    bb = b.view(np.int8 if sb else np.uint8).reshape(64, 4).astype(np.int64)
    ah = a.view(np.int16 if sa else np.uint16).reshape(64, 2).astype(np.int64)
    out = run1(emu, f"dp4a.{at}.{bt} %o, %a0, %a1, %a2;", [a, b, c], ["u32"] * 3, "u32")
    np.testing.assert_array_equal(out, (((ab * bb).sum(1) + c) & 0xFFFFFFFF).astype(np.uint32))
    for half, k in (("lo", 0), ("hi", 2)):
        out = run1(emu, f"dp2a.{half}.{at}.{bt} %o, %a0, %a1, %a2;", [a, b, c], ["u32"] * 3, "u32")
        ref = ((ah * bb[:, k:k + 2]).sum(1) + c) & 0xFFFFFFFF
        np.testing.assert_array_equal(out, ref.astype(np.uint32))


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_testp_classifies_like_numpy(emu, rng, t):
    npt = np.float32 if t == "f32" else np.float64
    fi = np.finfo(npt)
    x = rng.standard_normal(64).astype(npt)
    x[:10] = [np.nan, np.inf, -np.inf, 0.0, -0.0, fi.tiny, fi.tiny / 4, -fi.tiny / 2, fi.max, -1.5]
    refs = {"finite": np.isfinite(x), "infinite": np.isinf(x), "number": ~np.isnan(x),
            "notanumber": np.isnan(x), "normal": np.isfinite(x) & (np.abs(x) >= fi.tiny),
            "subnormal": (x != 0) & (np.abs(x) < fi.tiny)}
    for test, ref in refs.items():
        out = run1(emu, f"testp.{test}.{t} %p0, %a0;\n\tselp.u32 %o, 1, 0, %p0;", [x], [t], "u32")
        np.testing.assert_array_equal(out, ref.astype(np.uint32), err_msg=test)


# -- named and partial-CTA barriers ---------------------------------------------------------------
def barrier_kernel(body: str) -> str:
    """128 threads; %r1 = tid, %r2 = warp, %r9 = address of s[tid]; ``body`` ends by leaving the
    value to store in %r7; out[tid] = %r7."""
    return (".version 8.0\n.target sm_86\n.address_size 64\n\n"
            ".visible .entry bk(.param .u64 out)\n{\n"
            "\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<3>;\n\t.reg .pred %p<4>;\n"
            "\t.shared .align 4 .b32 s[128];\n"
            "\tmov.u32 %r1, %tid.x;\n\tshr.u32 %r2, %r1, 5;\n\tmov.u32 %r8, s;\n"
            "\tshl.b32 %r3, %r1, 2;\n\tadd.u32 %r9, %r8, %r3;\n" + body +
            "\tld.param.u64 %rd0, [out];\n\tmul.wide.u32 %rd1, %r1, 4;\n"
            "\tadd.s64 %rd2, %rd0, %rd1;\n\tst.global.u32 [%rd2], %r7;\n\tret;\n}\n")


# warps 0-1 produce s[tid + 64] = 5 * tid after a slow loop and bar.arrive 1, 128; warps 2-3
# bar.sync 1, 128 and read them; then warps 0-1 and 2-3 each swap halves behind their own
# barrier (2 and 3, 64 threads each)
PRODUCER_CONSUMER = (  # the consumer code comes first: the scheduler runs the lowest PC first
    "\tsetp.lt.u32 %p0, %r2, 2;\n\t@%p0 bra $PRODUCER;\n"
    "\tbar.sync 1, 128;\n\tld.shared.u32 %r7, [%r9];\n"
    "\tmov.u32 %r10, 3;\n\tbar.sync %r10, 64;\n\tbra $DONE;\n"
    "$PRODUCER:\n\tmov.u32 %r4, 0;\n$SPIN:\n\tadd.u32 %r4, %r4, 1;\n\tsetp.lt.u32 %p1, %r4, 20;\n"
    "\t@%p1 bra $SPIN;\n"
    "\tmul.lo.u32 %r5, %r1, 5;\n\tst.shared.u32 [%r9+256], %r5;\n\tbar.arrive 1, 128;\n"
    "\txor.b32 %r6, %r1, 32;\n\tst.shared.u32 [%r9], %r1;\n\tbar.sync 2, 64;\n"
    "\tshl.b32 %r6, %r6, 2;\n\tadd.u32 %r6, %r8, %r6;\n\tld.shared.u32 %r7, [%r6];\n"
    "$DONE:\n")


def test_bar_arrive_and_named_partial_barriers_order_producer_and_consumer_warps(emu):
    out = np.full(128, 0xDEADBEEF, np.uint32)
    out = run_ptx(emu, barrier_kernel(PRODUCER_CONSUMER), "bk", (2, 1, 1), (128, 1, 1), [out])[0]
    t = np.arange(128, dtype=np.uint32)
    np.testing.assert_array_equal(out[:64], t[:64] ^ 32)
    np.testing.assert_array_equal(out[64:], (t[64:] - 64) * 5)


def test_named_barrier_that_never_completes_is_a_located_deadlock(emu):
    body = "\tsetp.lt.u32 %p0, %r2, 2;\n\t@%p0 bar.sync 1, 128;\n\tmov.u32 %r7, 0;\n"
    with pytest.raises(Exception, match=r"(?s)deadlock.*barrier 1: 64 thread\(s\) arrived, 128 expected"):
        run_ptx(emu, barrier_kernel(body), "bk", (1, 1, 1), (128, 1, 1), [np.zeros(128, np.uint32)])
    with pytest.raises(Exception, match="positive multiple of 32"):
        run_ptx(emu, barrier_kernel("\tbar.sync 1, 48;\n\tmov.u32 %r7, 0;\n"), "bk", (1, 1, 1),
                (128, 1, 1), [np.zeros(128, np.uint32)])


def test_bar_sync_0_with_the_block_size_as_count_and_barrier_sync_spelling(emu):
    body = ("\tst.shared.u32 [%r9], %r1;\n\tbar.sync 0, 128;\n\txor.b32 %r6, %r1, 127;\n"
            "\tshl.b32 %r6, %r6, 2;\n\tadd.u32 %r6, %r8, %r6;\n\tld.shared.u32 %r7, [%r6];\n"
            "\tbarrier.sync 0;\n")
    out = run_ptx(emu, barrier_kernel(body), "bk", (1, 1, 1), (128, 1, 1),
                  [np.zeros(128, np.uint32)])[0]
    np.testing.assert_array_equal(out, np.arange(128, dtype=np.uint32) ^ 127)


def test_warps_may_sync_on_different_named_barriers_in_one_instruction(emu):
    # warps 0-1 use barrier 1 and warps 2-3 barrier 2 (64 threads each) at the same bar.sync;
    # warp 3 arrives late (its detour sits at higher PCs, which the scheduler runs last), so
    # warp 2 must wait for it while warps 0-1 go on
    body = ("\tshr.u32 %r4, %r2, 1;\n\tadd.u32 %r4, %r4, 1;\n\tsetp.ne.u32 %p0, %r2, 3;\n"
            "\t@!%p0 bra $LATE;\n"
            "$GO:\n\tst.shared.u32 [%r9], %r1;\n\tbar.sync %r4, 64;\n\txor.b32 %r6, %r1, 32;\n"
            "\tshl.b32 %r6, %r6, 2;\n\tadd.u32 %r6, %r8, %r6;\n\tld.shared.u32 %r7, [%r6];\n"
            "\tbra $END;\n"
            "$LATE:\n\tmov.u32 %r5, 0;\n$SPIN:\n\tadd.u32 %r5, %r5, 1;\n"
            "\tsetp.lt.u32 %p1, %r5, 9;\n\t@%p1 bra $SPIN;\n\tbra $GO;\n$END:\n")
    with pytest.raises(Exception, match="differs within warp 0"):
        bad = body.replace("shr.u32 %r4, %r2, 1;", "shr.u32 %r4, %r1, 4;")
        run_ptx(emu, barrier_kernel(bad), "bk", (1, 1, 1), (128, 1, 1), [np.zeros(128, np.uint32)])
    out = run_ptx(emu, barrier_kernel(body), "bk", (1, 1, 1), (128, 1, 1),
                  [np.zeros(128, np.uint32)])[0]
    np.testing.assert_array_equal(out, np.arange(128, dtype=np.uint32) ^ 32)


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
@pytest.mark.parametrize("src, dst", [("s64", "f64"), ("s64", "f32"), ("u64", "f64"), ("u64", "f32"), ("s64", "f16")])
def test_directed_cvt_from_64_bit_integers_rounds_once_and_exactly(mode, src, dst, rng):
    """cvt.{rz,rm,rp}.f.{s64,u64}: the representable neighbour in the mode's direction of the exact
    integer (no double rounding through float64)."""
    from fractions import Fraction

    from oxicuda.emulator.interp import data

    dt = np.int64 if src == "s64" else np.uint64
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, 200, dtype=dt, endpoint=True)
    x[:6] = np.array([0, 1, 2**53 + 1, 2**24 + 3, info.max, info.min], dtype=dt)
    got = np.asarray(data._to_float(x, src, dst, mode))
    ftype = {"f64": np.float64, "f32": np.float32, "f16": np.float16}[dst]
    got = got.astype(ftype) if got.dtype != ftype else got
    for xi, g in zip(x.tolist(), got.tolist()):
        fx, fg = Fraction(xi), Fraction(g) if np.isfinite(g) else None
        if fg is None:  # f16 overflow: rz/rm toward the finite side never give inf, rp may
            assert mode == "rp" and xi > 0 or mode == "rm" and xi < 0, (xi, g)
            continue
        toward_zero_or_down = {"rz": abs(fg) <= abs(fx), "rm": fg <= fx, "rp": fg >= fx}[mode]
        assert toward_zero_or_down, (mode, xi, g)
        if fg != fx:  # the next value past g (toward x) overshoots x: g is the nearest in that direction
            step = ftype(np.nextafter(ftype(g), ftype(np.inf) if fx > fg else ftype(-np.inf)))
            assert not np.isfinite(step) or (Fraction(float(step)) > fx if fx > fg else Fraction(float(step)) < fx), (mode, xi, g)
