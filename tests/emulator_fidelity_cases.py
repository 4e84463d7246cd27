"""Element-wise instruction cases for the emulator-fidelity tests: one small kernel per case
(thread i loads in_k[i], runs the instruction, stores out[i]), inputs that mix random values
with NaN (canonical, quiet with payloads, signalling, negative), infinities, subnormals, -0 and
the largest finite values, and independent float64 references.

Used by test_emulator_fidelity.py (emulator against the references) and by
test_emulator_fidelity_gpu.py (the same kernels on the GPU against the emulator, bitwise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

N = 256  # threads per case: one CTA

#: PTX register type and numpy storage dtype of each operand type
REG = {"f32": ".f32", "f64": ".f64", "f16": ".b16", "bf16": ".b16", "f16x2": ".b32",
       "bf16x2": ".b32", "b32": ".b32", "u32": ".b32", "s32": ".b32", "b64": ".b64",
       "u64": ".b64", "b128": ".b128"}
NP = {"f32": np.uint32, "f64": np.uint64, "f16": np.uint16, "bf16": np.uint16, "f16x2": np.uint32,
      "bf16x2": np.uint32, "b32": np.uint32, "u32": np.uint32, "s32": np.uint32, "b64": np.uint64,
      "u64": np.uint64}
LD = {"f32": "b32", "f64": "b64", "f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32",
      "b32": "b32", "u32": "b32", "s32": "b32", "b64": "b64", "u64": "b64"}

CANON_F32, CANON_HALF = 0x7FFFFFFF, 0x7FFF

F32_SPECIAL = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FFFFFFF, 0x7FC01234,
                        0xFFC00001, 0x7F800001, 0xFFA5A5A5, 0x00000001, 0x806CE3EE, 0x00800000,
                        0x7F7FFFFF, 0x3F800000, 0xBFC00000, 0x4B000001], np.uint32)
F16_SPECIAL = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7FFF, 0x7E12, 0xFE01, 0x7C01, 0x0001,
                        0x83FF, 0x0400, 0x7BFF, 0x3C00, 0xBE00, 0x3555, 0xC901], np.uint16)
BF16_SPECIAL = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FFF, 0x7FC1, 0xFFC0, 0x7F81, 0x0001,
                         0x807F, 0x0080, 0x7F7F, 0x3F80, 0xBFC0, 0x3EAB, 0xC123], np.uint16)


def f32_inputs(rng, n_in: int) -> list[np.ndarray]:
    """``n_in`` arrays of N f32 bit patterns: every pair (triple: pair plus random) of specials
    for the first 256 (2 inputs) lanes, random normals elsewhere."""
    s = F32_SPECIAL
    out = [(rng.standard_normal(N) * 4).astype(np.float32).view(np.uint32) for _ in range(n_in)]
    if n_in == 1:
        out[0][:len(s)] = s
    else:
        out[0][:] = np.repeat(s, len(s))[:N]
        out[1][:] = np.tile(s, len(s))[:N]
        if n_in == 3:
            out[2][::3] = np.resize(s, len(out[2][::3]))
    return out


def f64_inputs(rng) -> np.ndarray:
    """f64 bit patterns: NaNs with payloads, infinities, values that round to f32 subnormals,
    overflow f32, or sit halfway between f32 neighbours; random values elsewhere."""
    special = np.array([0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001,
                        0x7FF4000000001234, 0x7FF0000000000000, 0xFFF0000000000000,
                        0x8000000000000000, 0x0000000000000001, 0x3690000000000000,
                        0x47EFFFFFF0000000, 0x47EFFFFFE0000000, 0x3FF0000010000000,
                        0x3FF0000030000000, 0xC7F0000000000000, 0x36A0000000000000,
                        0x3FF0000010000001], np.uint64)
    v = (rng.standard_normal(N) * 1e3).view(np.uint64)
    v[:len(special)] = special
    return v


def half_inputs(rng, elem: str, packed: bool, n_in: int) -> list[np.ndarray]:
    """Bit patterns of f16/bf16 (packed: two per u32) mixing every pair of specials with
    random values."""
    s = F16_SPECIAL if elem == "f16" else BF16_SPECIAL

    def rand(k):
        v = (rng.standard_normal(k) * 4).astype(np.float32)
        return v.astype(np.float16).view(np.uint16) if elem == "f16" else \
            (v.view(np.uint32) >> 16).astype(np.uint16)
    outs = []
    for i in range(n_in):
        lo, hi = rand(N), rand(N)
        pick = np.repeat(s, len(s))[:N] if i == 0 else np.tile(s, len(s))[:N]
        if i == 2:
            pick = np.resize(s[::-1], N)
        lo[:] = pick
        hi[: N // 2] = pick[::-1][: N // 2]
        outs.append((lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)) if packed else lo)
    return outs


def sm90_emulator():
    """An initialized emulated sm_90 driver with its primary context current in this thread."""
    from oxicuda.emulator.api import EmulatorAPI
    from oxicuda.emulator.devices import EMULATED_DEVICES

    api = EmulatorAPI(device=EMULATED_DEVICES["sm_90"])
    api.init()
    api.ctx_set_current(api.device_primary_ctx_retain(0))
    return api


def kernel(name: str, body: str, in_types: list[str], out_type: str) -> str:
    """The .entry ``name``: thread i loads in_k[i] into %a<k> (by bits), runs ``body``, stores
    %o to out[i]. Scratch registers: %p<4> (pred), %t<4> (b32), %w<4> (b64), %q<2> (b128)."""
    params = ", ".join([f".param .u64 in{k}" for k in range(len(in_types))] + [".param .u64 out"])
    lines = [f".visible .entry {name}({params})", "{", "\t.reg .b32 %i;", "\t.reg .b64 %ad<2>;",
             "\t.reg .pred %p<4>;", "\t.reg .b32 %t<4>;", "\t.reg .b64 %w<4>;"]
    if "%q" in body:
        lines.append("\t.reg .b128 %q<2>;")
    lines.append(f"\t.reg {REG[out_type]} %o;")
    lines += [f"\t.reg {REG[t]} %a{k};" for k, t in enumerate(in_types)]
    lines.append("\tmov.u32 %i, %tid.x;")
    for k, t in enumerate(in_types):
        size = np.dtype(NP[t]).itemsize
        lines += [f"\tld.param.u64 %ad0, [in{k}];", f"\tmul.wide.u32 %ad1, %i, {size};",
                  "\tadd.s64 %ad0, %ad0, %ad1;", f"\tld.global.{LD[t]} %a{k}, [%ad0];"]
    lines += ["\t" + ln.strip() for ln in body.strip().splitlines()]
    size = np.dtype(NP[out_type]).itemsize
    lines += ["\tld.param.u64 %ad0, [out];", f"\tmul.wide.u32 %ad1, %i, {size};",
              "\tadd.s64 %ad0, %ad0, %ad1;", f"\tst.global.{LD[out_type]} [%ad0], %o;", "\tret;", "}"]
    return "\n".join(lines)


def module(entries: list[str], target: str = "sm_90") -> str:
    return "\n".join([".version 8.3", f".target {target}", ".address_size 64", ""] + entries) + "\n"


# -- independent references --------------------------------------------------------------------
def f32v(bits) -> np.ndarray:
    return np.asarray(bits, np.uint32).view(np.float32).astype(np.float64)


def round_grid(x, mant: int, emin: int, emax: int, mode: str = "rn") -> np.ndarray:
    """float64 values rounded to a binary format with ``mant`` fraction bits, normal exponents
    emin..emax and subnormals below (RN ties-to-even or RZ); overflow to +-inf (RZ: largest
    finite). Exact when ``x`` is."""
    x = np.asarray(x, np.float64)
    fin = np.isfinite(x) & (x != 0)
    e = np.where(fin, np.floor(np.log2(np.where(fin, np.abs(x), 1.0))), 0)
    e = np.maximum(e, emin)
    q = np.where(fin, x / np.exp2(e - mant), 0.0)
    q = np.rint(q) if mode == "rn" else np.trunc(q)
    r = np.where(fin, q * np.exp2(e - mant), x)
    big = (2.0 - 2.0 ** -mant) * 2.0 ** emax
    over = (np.abs(r) > big) & np.isfinite(x)
    r = np.where(over, np.copysign(np.inf if mode == "rn" else big, r), r)
    return r


def to_f32_bits(x) -> np.ndarray:
    """float64 values (exactly representable as f32 or NaN) -> f32 bits, NaN canonical."""
    x = np.asarray(x, np.float64)
    bits = x.astype(np.float32).view(np.uint32)
    return np.where(np.isnan(x), np.uint32(CANON_F32), bits).astype(np.uint32)


def ftz_f64(x) -> np.ndarray:
    """float64 values with magnitudes below the f32 normal range flushed to signed zero."""
    x = np.asarray(x, np.float64)
    return np.where(np.abs(x) < 2.0 ** -126, np.copysign(0.0, x), x)


def f32_rn(x) -> np.ndarray:
    return to_f32_bits(round_grid(x, 23, -126, 127))


def half_bits_of(x, elem: str, mode: str = "rn") -> np.ndarray:
    """float64 -> f16/bf16 bits (rounded by ``round_grid``), NaN canonical."""
    x = np.asarray(x, np.float64)
    if elem == "f16":
        r = round_grid(x, 10, -14, 15, mode)
        bits = r.astype(np.float16).view(np.uint16)
    else:
        r = round_grid(x, 7, -126, 127, mode)
        bits = (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(CANON_HALF), bits).astype(np.uint16)


def half_vals(bits, elem: str) -> np.ndarray:
    b = np.asarray(bits, np.uint16)
    if elem == "f16":
        return b.view(np.float16).astype(np.float64)
    return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def lanes(bits, packed: bool):
    b = np.asarray(bits)
    if not packed:
        return [b.astype(np.uint16)]
    return [(b & 0xFFFF).astype(np.uint16), (b >> 16).astype(np.uint16)]


def join(parts) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    return parts[0].astype(np.uint32) | (parts[1].astype(np.uint32) << 16)


def minmax_ref(a, b, is_max: bool, nan_wins: bool = False, xorsign_abs: bool = False):
    """PTX min/max on float64 values: NaN loses (``.NaN``: wins, as NaN), -0 < +0; with
    .xorsign.abs: min/max of magnitudes with the xor of the signs."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    sign = np.signbit(a) ^ np.signbit(b)
    if xorsign_abs:
        a, b = np.abs(a), np.abs(b)
    take_a = (a > b) if is_max else (a < b)
    eqz = (a == 0) & (b == 0)
    take_a = np.where(eqz, np.signbit(b) if is_max else np.signbit(a), take_a)
    r = np.where(take_a, a, b)
    na, nb = np.isnan(a), np.isnan(b)
    r = np.where(na & ~nb, b, np.where(nb & ~na, a, r))
    r = np.where(na & nb, np.nan, r)
    if nan_wins:
        r = np.where(na | nb, np.nan, r)
    if xorsign_abs:
        r = np.where(np.isnan(r), r, np.where(sign, -np.abs(r), np.abs(r)))
    return r


# -- the cases ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One instruction under test. ``ref(*inputs) -> expected output bits`` (None: the GPU is
    the only judge); ``inputs(rng)`` gives the input arrays."""
    name: str
    body: str
    in_types: tuple[str, ...]
    out_type: str
    inputs: Callable
    ref: Callable | None
    #: for .approx instructions: the key of approx.MAX_ERROR that bounds a result's error
    approx: str | None = None


def _f32_bin(name, op, fn):
    return Case(name, f"{op} %o, %a0, %a1;", ("f32", "f32"), "f32", lambda rng: f32_inputs(rng, 2),
                lambda a, b: f32_rn(fn(f32v(a), f32v(b))))


def _half_bin(name, op, elem, packed, fn):
    t = (elem + "x2") if packed else elem
    return Case(name, f"{op} %o, %a0, %a1;", (t, t), t,
                lambda rng: half_inputs(rng, elem, packed, 2),
                lambda a, b: join([half_bits_of(fn(half_vals(x, elem), half_vals(y, elem)), elem)
                                   for x, y in zip(lanes(a, packed), lanes(b, packed))]))


def _half_fma(name, elem, packed):
    t = (elem + "x2") if packed else elem
    return Case(name, f"fma.rn.{t} %o, %a0, %a1, %a2;", (t, t, t), t,
                lambda rng: half_inputs(rng, elem, packed, 3),
                lambda a, b, c: join([half_bits_of(half_vals(x, elem) * half_vals(y, elem)
                                                   + half_vals(z, elem), elem)
                                      for x, y, z in zip(lanes(a, packed), lanes(b, packed),
                                                         lanes(c, packed))]))


def _nan_canon32(a, r):
    a = np.asarray(a, np.uint32)
    return np.where((a & 0x7FFFFFFF) > 0x7F800000, np.uint32(CANON_F32), r).astype(np.uint32)


def _nan_canon_halves(a, r, inf: int):
    a, r = np.asarray(a, np.uint32), np.asarray(r, np.uint32)
    for sh in (0, 16):
        nan = ((a >> sh) & 0x7FFF) > inf
        r = np.where(nan, (r & ~np.uint32(0xFFFF << sh)) | np.uint32(CANON_HALF << sh), r)
    return r.astype(np.uint32)


def _f64_to_f32_ref(a) -> np.ndarray:
    """cvt.rn.f32.f64 as the H200 does it: values rounded to nearest; a NaN keeps its sign and
    top 22 payload bits, quieted (2026-11-29 H200 run of test_emulator_fidelity_gpu.py)."""
    u = np.asarray(a, np.uint64)
    nan = (u & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)
    narrowed = (((u >> np.uint64(32)) & np.uint64(0x80000000)) | np.uint64(0x7FC00000)
                | ((u >> np.uint64(29)) & np.uint64(0x3FFFFF))).astype(np.uint32)
    return np.where(nan, narrowed, f32_rn(u.view(np.float64))).astype(np.uint32)


def _relu_ref(x) -> np.ndarray:
    """.relu: negatives and -0 become +0, NaN stays NaN."""
    return np.where(x <= 0, 0.0, x)


def _keep(bits):
    return np.asarray(bits)


CASES: list[Case] = [
    _f32_bin("add_f32", "add.f32", np.add),
    _f32_bin("sub_f32", "sub.f32", np.subtract),
    _f32_bin("mul_f32", "mul.f32", np.multiply),
    _f32_bin("div_rn_f32", "div.rn.f32", np.divide),
    _f32_bin("min_f32", "min.f32", lambda a, b: minmax_ref(a, b, False)),
    _f32_bin("max_f32", "max.f32", lambda a, b: minmax_ref(a, b, True)),
    _f32_bin("min_nan_f32", "min.NaN.f32", lambda a, b: minmax_ref(a, b, False, nan_wins=True)),
    _f32_bin("max_nan_f32", "max.NaN.f32", lambda a, b: minmax_ref(a, b, True, nan_wins=True)),
    _f32_bin("min_xorsign_abs_f32", "min.xorsign.abs.f32",
             lambda a, b: minmax_ref(a, b, False, xorsign_abs=True)),
    Case("fma_rn_f32", "fma.rn.f32 %o, %a0, %a1, %a2;", ("f32",) * 3, "f32",
         lambda rng: f32_inputs(rng, 3), None),
    Case("sqrt_rn_f32", "sqrt.rn.f32 %o, %a0;", ("f32",), "f32", lambda rng: f32_inputs(rng, 1),
         lambda a: f32_rn(np.sqrt(f32v(a)))),
    Case("cvt_f32_f64", "cvt.rn.f32.f64 %o, %a0;", ("f64",), "f32", lambda rng: [f64_inputs(rng)],
         _f64_to_f32_ref),
    Case("atom_add_f32", "atom.global.add.f32 %t0, [%ad0], %a0;\nld.global.f32 %o, [%ad0];",
         ("f32", "f32"), "f32", lambda rng: f32_inputs(rng, 2),
         lambda a, b: to_f32_bits(ftz_f64(round_grid(ftz_f64(f32v(a)) + ftz_f64(f32v(b)), 23, -126, 127)))),
    Case("cvt_f32_f16", "cvt.f32.f16 %o, %a0;", ("f16",), "f32",
         lambda rng: half_inputs(rng, "f16", False, 1), lambda a: to_f32_bits(half_vals(a, "f16"))),
    Case("cvt_rn_f16_f32", "cvt.rn.f16.f32 %o, %a0;", ("f32",), "f16",
         lambda rng: f32_inputs(rng, 1), lambda a: half_bits_of(f32v(a), "f16")),
    Case("cvt_rn_bf16_f32", "cvt.rn.bf16.f32 %o, %a0;", ("f32",), "bf16",
         lambda rng: f32_inputs(rng, 1), lambda a: half_bits_of(f32v(a), "bf16")),
    Case("cvt_rn_f16x2_f32", "cvt.rn.f16x2.f32 %o, %a0, %a1;", ("f32", "f32"), "f16x2",
         lambda rng: f32_inputs(rng, 2),
         lambda a, b: join([half_bits_of(f32v(b), "f16"), half_bits_of(f32v(a), "f16")])),
    Case("cvt_rz_f16x2_f32", "cvt.rz.f16x2.f32 %o, %a0, %a1;", ("f32", "f32"), "f16x2",
         lambda rng: f32_inputs(rng, 2),
         lambda a, b: join([half_bits_of(f32v(b), "f16", "rz"), half_bits_of(f32v(a), "f16", "rz")])),
    Case("cvt_rn_relu_bf16x2_f32", "cvt.rn.relu.bf16x2.f32 %o, %a0, %a1;", ("f32", "f32"), "bf16x2",
         lambda rng: f32_inputs(rng, 2),
         lambda a, b: join([half_bits_of(_relu_ref(f32v(b)), "bf16"),
                            half_bits_of(_relu_ref(f32v(a)), "bf16")])),
    Case("cvt_rn_satfinite_f16x2_f32", "cvt.rn.satfinite.f16x2.f32 %o, %a0, %a1;", ("f32", "f32"),
         "f16x2", lambda rng: f32_inputs(rng, 2),
         lambda a, b: join([half_bits_of(np.clip(f32v(b), -65504, 65504), "f16"),
                            half_bits_of(np.clip(f32v(a), -65504, 65504), "f16")])),
    _half_bin("add_f16", "add.f16", "f16", False, np.add),
    _half_bin("add_f16x2", "add.f16x2", "f16", True, np.add),
    _half_bin("mul_f16x2", "mul.f16x2", "f16", True, np.multiply),
    _half_bin("sub_bf16x2", "sub.rn.bf16x2", "bf16", True, np.subtract),
    _half_bin("mul_bf16", "mul.rn.bf16", "bf16", False, np.multiply),
    _half_bin("max_f16x2", "max.f16x2", "f16", True, lambda a, b: minmax_ref(a, b, True)),
    _half_bin("min_bf16x2", "min.bf16x2", "bf16", True, lambda a, b: minmax_ref(a, b, False)),
    _half_bin("max_nan_f16x2", "max.NaN.f16x2", "f16", True,
              lambda a, b: minmax_ref(a, b, True, nan_wins=True)),
    _half_fma("fma_f16x2", "f16", True),
    _half_fma("fma_bf16x2", "bf16", True),
    _half_fma("fma_f16", "f16", False),
    # moves keep payloads; abs/neg (ptxas: an add with operand modifiers) give the add's
    # canonical NaN -- the ISA leaves it unspecified, the GPU test is the judge
    Case("mov_f32", "mov.f32 %o, %a0;", ("f32",), "f32", lambda rng: f32_inputs(rng, 1), _keep),
    Case("selp_f32", "setp.ne.b32 %p0, %a0, 0;\nselp.f32 %o, %a0, %a0, %p0;", ("f32",), "f32",
         lambda rng: f32_inputs(rng, 1), _keep),
    Case("neg_f32", "neg.f32 %o, %a0;", ("f32",), "f32", lambda rng: f32_inputs(rng, 1),
         lambda a: _nan_canon32(a, np.asarray(a, np.uint32) ^ np.uint32(0x80000000))),
    Case("abs_f32", "abs.f32 %o, %a0;", ("f32",), "f32", lambda rng: f32_inputs(rng, 1),
         lambda a: _nan_canon32(a, np.asarray(a, np.uint32) & np.uint32(0x7FFFFFFF))),
    Case("neg_f16x2", "neg.f16x2 %o, %a0;", ("f16x2",), "f16x2",
         lambda rng: half_inputs(rng, "f16", True, 1),
         lambda a: _nan_canon_halves(a, np.asarray(a, np.uint32) ^ np.uint32(0x80008000), 0x7C00)),
    Case("abs_bf16x2", "abs.bf16x2 %o, %a0;", ("bf16x2",), "bf16x2",
         lambda rng: half_inputs(rng, "bf16", True, 1),
         lambda a: _nan_canon_halves(a, np.asarray(a, np.uint32) & np.uint32(0x7FFF7FFF), 0x7F80)),
    Case("copysign_f32", "copysign.f32 %o, %a0, %a1;", ("f32", "f32"), "f32",
         lambda rng: f32_inputs(rng, 2),
         lambda a, b: (np.asarray(b, np.uint32) & np.uint32(0x7FFFFFFF))
         | (np.asarray(a, np.uint32) & np.uint32(0x80000000))),
]


# -- .approx: specials exact, values within the documented bound --------------------------------
def _approx(op, key, t="f32", ftz=False):
    body = f"{op}.approx{'.ftz' if ftz else ''}.{t} %o, %a0;"
    name = f"{op}_approx{'_ftz' if ftz else ''}_{t}"
    if t == "f32":
        gen = lambda rng: [np.concatenate([F32_SPECIAL, np.array(
            [0xC3020000, 0xC3080000, 0x00400000, 0x80000010, 0x7E800000, 0xFE900000, 0x49742400,
             0xC9742400, 0x40490FDB, 0xC0490FDB], np.uint32),
            rng.uniform(-8, 8, N - 26).astype(np.float32).view(np.uint32)])]
    else:
        gen = lambda rng: half_inputs(rng, t.removesuffix("x2"), t.endswith("x2"), 1)
    return Case(name, body, (t,), t, gen, None, key)


APPROX_CASES: list[Case] = [
    _approx("ex2", "ex2"), _approx("ex2", "ex2", ftz=True), _approx("lg2", "lg2"),
    _approx("lg2", "lg2", ftz=True), _approx("sin", "sin"), _approx("cos", "cos"),
    _approx("sin", "sin", ftz=True), _approx("tanh", "tanh"), _approx("rcp", "rcp"),
    _approx("rcp", "rcp", ftz=True), _approx("rsqrt", "rsqrt"), _approx("rsqrt", "rsqrt", ftz=True),
    _approx("sqrt", "sqrt"), _approx("sqrt", "sqrt", ftz=True),
    _approx("ex2", "ex2.f16", "f16"), _approx("ex2", "ex2.f16", "f16x2"),
    _approx("tanh", "tanh.f16", "f16"),
    Case("div_approx_f32", "div.approx.f32 %o, %a0, %a1;", ("f32", "f32"), "f32",
         lambda rng: f32_inputs(rng, 2), None, "div.approx"),
    Case("div_full_f32", "div.full.f32 %o, %a0, %a1;", ("f32", "f32"), "f32",
         lambda rng: f32_inputs(rng, 2), None, "div.full"),
]


# -- integer and bit instructions: bitwise against Python integers ------------------------------
EDGE_U32 = np.array([0, 1, 2, 31, 32, 33, 63, 64, 255, 256, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                     0xDEADBEEF, 0x12345678, 0x0000FFFF], np.uint32)


def u32_inputs(rng, n_in: int, small: tuple[int, ...] = ()) -> list[np.ndarray]:
    """Random u32 with every pair of EDGE_U32 in the first 256 lanes; inputs listed in
    ``small`` are shift/position operands (0..70, edges included)."""
    out = []
    for k in range(n_in):
        if k in small:
            v = rng.integers(0, 71, N).astype(np.uint32)
            v[:16] = [0, 1, 7, 8, 15, 16, 23, 24, 31, 32, 33, 40, 63, 64, 255, 0xFFFFFFFF]
            v[16:32] = np.resize(v[:16], 16)[::-1]
        else:
            v = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
            v[:N] = np.repeat(EDGE_U32, 16)[:N] if k == 0 else v
            if k == 1:
                v[:N] = np.tile(EDGE_U32, 16)[:N]
        out.append(v)
    return out


def _ints(*arrs):
    return [[int(x) for x in a.tolist()] for a in arrs]


def _shf_ref(left, wrap):
    def ref(a, b, c):
        out = []
        for x, y, n in zip(*_ints(a, b, c)):
            n = (n & 31) if wrap else min(n, 32)
            v = (y << 32) | x
            out.append(((v << n) >> 32) & 0xFFFFFFFF if left else (v >> n) & 0xFFFFFFFF)
        return np.array(out, np.uint32)
    return ref


#: PTX ISA prmt mode table: for selector c[1:0] = 0..3, the source byte of d.b0..d.b3
PRMT_TABLE = {
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def _prmt_ref(mode):
    def ref(a, b, c):
        out = []
        for x, y, s in zip(*_ints(a, b, c)):
            src = ((y << 32) | x).to_bytes(8, "little")
            out.append(sum(src[i] << (8 * k) for k, i in enumerate(PRMT_TABLE[mode][s & 3])))
        return np.array(out, np.uint32)
    return ref


def _bmsk_ref(wrap):
    def ref(a, b):
        out = []
        for p, n in zip(*_ints(a, b)):
            p, n = ((p & 31), (n & 31)) if wrap else (min(p, 32), min(n, 32))
            out.append(((1 << min(p + n, 32)) - (1 << min(p, 32))) & 0xFFFFFFFF)
        return np.array(out, np.uint32)
    return ref


def _szext_ref(signed, wrap):
    def ref(a, b):
        out = []
        for x, n in zip(*_ints(a, b)):
            n = (n & 31) if wrap else min(n, 32)
            v = x & ((1 << n) - 1)
            if signed and n and (v >> (n - 1)) & 1:
                v -= 1 << n
            out.append(v & 0xFFFFFFFF)
        return np.array(out, np.uint32)
    return ref


INT_CASES: list[Case] = [
    Case(f"shf_{d}_{m}", f"shf.{d}.{m}.b32 %o, %a0, %a1, %a2;", ("b32",) * 3, "b32",
         lambda rng: u32_inputs(rng, 3, small=(2,)), _shf_ref(d == "l", m == "wrap"))
    for d in ("l", "r") for m in ("wrap", "clamp")
] + [
    Case(f"prmt_{mode}", f"prmt.b32.{mode} %o, %a0, %a1, %a2;", ("b32",) * 3, "b32",
         lambda rng: u32_inputs(rng, 3), _prmt_ref(mode)) for mode in PRMT_TABLE
] + [
    Case(f"bmsk_{m}", f"bmsk.{m}.b32 %o, %a0, %a1;", ("b32", "b32"), "b32",
         lambda rng: u32_inputs(rng, 2, small=(0, 1)), _bmsk_ref(m == "wrap"))
    for m in ("clamp", "wrap")
] + [
    Case(f"szext_{m}_{t}", f"szext.{m}.{t} %o, %a0, %a1;", ("b32", "b32"), "b32",
         lambda rng: u32_inputs(rng, 2, small=(1,)), _szext_ref(t == "s32", m == "wrap"))
    for m in ("clamp", "wrap") for t in ("s32", "u32")
] + [
    Case("clz_b64", "clz.b64 %t0, %a0;\ncvt.u64.u32 %o, %t0;", ("b64",), "b64",
         lambda rng: [_u64_edges(rng)],
         lambda a: np.array([64 - int(x).bit_length() for x in a.tolist()], np.uint64)),
    Case("popc_b64", "popc.b64 %t0, %a0;\ncvt.u64.u32 %o, %t0;", ("b64",), "b64",
         lambda rng: [_u64_edges(rng)],
         lambda a: np.array([int(x).bit_count() for x in a.tolist()], np.uint64)),
    Case("brev_b64", "brev.b64 %o, %a0;", ("b64",), "b64", lambda rng: [_u64_edges(rng)],
         lambda a: np.array([int(f"{int(x):064b}"[::-1], 2) for x in a.tolist()], np.uint64)),
    Case("b128_mov_roundtrip", "mov.b128 %q0, {%a0, %a1};\nmov.b128 %q1, %q0;\n"
         "mov.b128 {%w0, %w1}, %q1;\nxor.b64 %o, %w0, %w1;", ("b64", "b64"), "b64",
         lambda rng: [_u64_edges(rng), _u64_edges(rng)[::-1].copy()],
         lambda a, b: np.asarray(a, np.uint64) ^ np.asarray(b, np.uint64)),
]


def _u64_edges(rng) -> np.ndarray:
    v = rng.integers(0, 2**63, N, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, N, dtype=np.uint64)
    v[:8] = [0, 1, 2**63, 2**64 - 1, 2**32, 2**32 - 1, 0x00F0000000000000, 0x8000000000000001]
    return v
