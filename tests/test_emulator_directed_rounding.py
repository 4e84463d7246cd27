"""Directed rounding (.rz/.rm/.rp) of f32 and f64 add, sub, mul, fma, div, rcp and sqrt in the
emulator, bit for bit against exact rational arithmetic (Python fractions) rounded by an
independent integer implementation. Inputs mix random values of spread-out exponents with
cancelling pairs, sums far below an ulp (1 + 2^-100), overflow, subnormal results and signed
zeros. ``DIRECTED_CASES``/``directed_inputs``/``directed_reference`` also feed the GPU test in
test_emulator_fidelity_gpu.py.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from emulator_fidelity_cases import NP, kernel, module
from test_emulator_tensorcore import emulator

from oxicuda.emulator.interp.harness import run_ptx

N_LANES = 192
#: (mantissa bits with the hidden one, min normal exponent, max exponent) per type
FORMAT = {"f64": (53, -1022, 1023), "f32": (24, -126, 127)}
FLOAT = {"f64": np.float64, "f32": np.float32}
ARITY = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "div": 2, "rcp": 1, "sqrt": 1}
DIRECTED_CASES = [(op, t, mode) for t in ("f64", "f32") for op in ARITY for mode in ("rz", "rm", "rp")]


def round_fraction(x: Fraction, t: str, mode: str) -> float:
    """The value of type ``t`` nearest to ``x`` in direction ``mode`` (rn: ties to even);
    overflow gives an infinity or the largest finite value as IEEE 754 says."""
    p, emin, emax = FORMAT[t]
    neg, a = x < 0, abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - p + 1)
    n, rem = divmod(a, quantum)
    n = int(n)
    up = (mode == "rp" and not neg) or (mode == "rm" and neg)
    if mode == "rn":
        n += 1 if rem > quantum / 2 or (rem == quantum / 2 and n % 2) else 0
    elif up and rem:
        n += 1
    big = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    v = n * quantum
    if v > big:
        v = float("inf") if (mode == "rn" or up) else big
    r = float(v)
    return -r if neg else r


def _exact(op: str, v: list[float]) -> Fraction | None:
    q = [Fraction(x) for x in v]
    return {"add": lambda: q[0] + q[1], "sub": lambda: q[0] - q[1], "mul": lambda: q[0] * q[1],
            "fma": lambda: q[0] * q[1] + q[2], "div": lambda: q[0] / q[1] if q[1] else None,
            "rcp": lambda: 1 / q[0] if q[0] else None, "sqrt": lambda: None}[op]()


def _sqrt_reference(a: float, t: str, mode: str) -> float:
    """sqrt(a) rounded: the candidates around the float sqrt, the exact comparison of squares."""
    if a == 0:
        return a
    f = FLOAT[t]
    r = f(np.sqrt(a))
    lo, hi = np.nextafter(r, f(0)), np.nextafter(r, f(np.inf))
    cands = sorted({float(lo), float(r), float(hi)})
    sq = Fraction(a)
    if mode == "rp":
        return min(c for c in cands if Fraction(c) ** 2 >= sq)
    return max(c for c in cands if Fraction(c) ** 2 <= sq)


def directed_reference(op: str, t: str, mode: str, ins: list[np.ndarray]) -> np.ndarray:
    """Expected result bits, lane by lane."""
    f = FLOAT[t]
    vals = [np.asarray(x).view(f) for x in ins]
    out = np.zeros(len(vals[0]), f)
    for k in range(len(out)):
        v = [float(x[k]) for x in vals]
        if op == "sqrt":
            out[k] = _sqrt_reference(v[0], t, mode)
            continue
        x = _exact(op, v)
        if x is None:
            raise AssertionError(f"inputs {v} of {op} have no finite result; the generator avoids them")
        if x != 0:
            out[k] = round_fraction(x, t, mode)
            continue
        # an exact zero: products keep the xor of the signs; sums are -0 in .rm unless both
        # addends are +0, else +0 or the zeros' common sign
        if op in ("mul", "div"):
            out[k] = -0.0 if np.signbit(v[0]) != np.signbit(v[1]) else 0.0
            continue
        addends = (v[0] * v[1], v[2]) if op == "fma" else (v[0], -v[1] if op == "sub" else v[1])
        zeros = all(z == 0 for z in addends)
        negs = [bool(np.signbit(z)) for z in addends]
        if zeros:
            out[k] = -0.0 if (any(negs) if mode == "rm" else all(negs)) else 0.0
        else:
            out[k] = -0.0 if mode == "rm" else 0.0
    return out.view(NP[t])


def directed_inputs(op: str, t: str, rng) -> list[np.ndarray]:
    """Finite inputs (bit patterns) with no division by zero and no negative sqrt argument."""
    f = FLOAT[t]
    p, emin, emax = FORMAT[t]
    n = N_LANES
    spread = lambda: (rng.standard_normal(n) * np.exp2(rng.integers(-30, 31, n))).astype(f)
    ins = [spread() for _ in range(ARITY[op])]
    a = ins[0]
    if ARITY[op] >= 2:
        b = ins[1]
        # cancellation, a tiny second operand, exact halves, signed zeros, overflow
        b[0:16] = -a[0:16] if op != "sub" else a[0:16]
        b[16:32] = a[16:32] * f(2.0 ** -(p + 20))
        a[32:36] = [1.0, -1.0, 0.0, -0.0]
        b[32:36] = [f(2.0 ** -100), f(2.0 ** -100), -0.0, -0.0]
        big = f(np.exp2(emax))
        a[36:40] = [big, -big, big * f(1.5), -big * f(1.5)]
        b[36:40] = [big, -big, f(3.0), f(3.0)] if op in ("add", "sub", "fma", "mul") else [f(0.25)] * 4
        tiny = f(np.exp2(emin - p + 2))
        a[40:44] = [tiny, -tiny, f(np.exp2(emin)), -f(np.exp2(emin))]
        b[40:44] = [f(0.75), f(0.75), f(0.3), f(0.3)]
        if op == "sub":
            b[36:38] = [-big, big]
    if op == "fma":
        c = ins[2]
        c[0:16] = -(a[0:16].astype(np.float64) * ins[1][0:16].astype(np.float64)).astype(f)
        c[32:36] = [f(2.0 ** -100), 0.0, 0.0, -0.0]
    if op in ("div",):
        ins[1][ins[1] == 0] = f(3.0)
    if op in ("rcp",):
        a[a == 0] = f(7.0)
        a[:4] = [f(3.0), f(-3.0), f(np.exp2(emax)), f(np.exp2(emin - p + 3))]
    if op == "sqrt":
        a[:] = np.abs(a)
        a[:6] = [0.0, -0.0, 2.0, f(np.exp2(emin - p + 1)), f(np.finfo(f).max), 4.0]
    return [np.ascontiguousarray(x).view(NP[t]) for x in ins]


def directed_kernel(op: str, t: str, mode: str) -> tuple[str, str]:
    """(entry name, .entry text) of the one-instruction kernel for ``op``.``mode``.``t``."""
    body = {"fma": f"fma.{mode}.{t} %o, %a0, %a1, %a2;", "rcp": f"rcp.{mode}.{t} %o, %a0;",
            "sqrt": f"sqrt.{mode}.{t} %o, %a0;"}.get(op, f"{op}.{mode}.{t} %o, %a0, %a1;")
    name = f"k_{op}_{mode}_{t}"
    return name, kernel(name, body, [t] * ARITY[op], t)


def run_directed(api, op: str, t: str, mode: str, ins) -> np.ndarray:
    name, entry = directed_kernel(op, t, mode)
    ptx = module([entry])
    out = np.full(len(ins[0]), np.iinfo(NP[t]).max, NP[t])  # NaN bits: poisoned
    return run_ptx(api, ptx, name, (1, 1, 1), (len(out), 1, 1), [*ins, out])[-1]


@pytest.fixture(scope="module")
def emu():
    return emulator("sm_90")


@pytest.mark.parametrize("op,t,mode", DIRECTED_CASES, ids=lambda v: str(v))
def test_directed_rounding_matches_exact_arithmetic_bit_for_bit(emu, rng, op, t, mode):
    ins = directed_inputs(op, t, rng)
    got = run_directed(emu, op, t, mode, ins)
    want = directed_reference(op, t, mode, ins)
    bad = np.flatnonzero(got != want)
    assert not len(bad), (f"{op}.{mode}.{t}: {len(bad)} lanes differ; lane {bad[0]}: inputs "
                          f"{[hex(int(x[bad[0]])) for x in ins]}, emulator {hex(int(got[bad[0]]))}, "
                          f"exact {hex(int(want[bad[0]]))}")


def test_round_fraction_agrees_with_numpy_round_to_nearest(rng):
    """The reference's own check: in rn mode it reproduces numpy's f64 -> f32 conversion."""
    x = rng.standard_normal(500) * np.exp2(rng.integers(-140, 120, 500))
    want = x.astype(np.float32)
    got = np.array([round_fraction(Fraction(float(v)), "f32", "rn") for v in x], np.float32)
    assert (got.view(np.uint32) == want.view(np.uint32)).all()


def test_f32_add_rp_steps_past_one_for_a_tiny_addend(emu):
    """RN64(1 + 2^-100) is 1 exactly, an f32 value: the sticky bits decide (the emulator used to
    return 1)."""
    ins = [np.array([1.0, -1.0], np.float32).view(np.uint32), np.array([2.0 ** -100] * 2, np.float32).view(np.uint32)]
    got = run_directed(emu, "add", "f32", "rp", ins).view(np.float32)
    assert got[0] == np.nextafter(np.float32(1), np.float32(2))
    assert got[1] == np.nextafter(np.float32(-1), np.float32(0))  # -1 + 2^-100, rounded up


def test_every_directed_rounding_kernel_assembles_for_sm_90():
    from oxicuda.ptx.validate import PtxasNotFound, assemble

    try:
        rep = assemble(module([directed_kernel(*c)[1] for c in DIRECTED_CASES]), "sm_90")
    except PtxasNotFound:
        pytest.skip("no ptxas")
    assert rep.ok, rep.message
