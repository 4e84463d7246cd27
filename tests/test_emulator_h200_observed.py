"""The emulator against bits an H200 returned (issue #4).

Every row below is a lane of the 2026-11-29 H200 run of tests/test_emulator_fidelity_gpu.py
(commit 146a34d; pytest output in that session's test-results.log): the instruction, its input
bits and the GPU's result bits, copied from the failure messages of that run (which list the
inputs and the GPU bits of the first differing lanes). They pin down what the ISA leaves open:

- f64 NaN propagation (add, mul, min, max): the second operand's NaN wins, quieted, sign and
  payload kept; neg.f64 quiets a NaN without touching its sign; fma.rn.f64 a, b, a with both
  NaN gives b's NaN (the later H200 run of the same test: 30 lanes, every pair of distinct NaNs);
- cvt.rn.f32.f64 of a NaN keeps the sign and the top 22 payload bits, quieted;
- cvt.rn.relu.bf16x2.f32 gives +0 for -0;
- fma.rn.f64 gives the sign of IEEE zeros and rounds once near underflow and overflow;
- sin.approx.f32 gives signed zeros at (and just below) a half turn;
- div.approx.f32 keeps a NaN dividend when |b| > 2^126.

The rows run on the emulator only; the GPU test remains the check on new hardware.
"""

from __future__ import annotations

import numpy as np
import pytest
from emulator_fidelity_cases import NP, kernel, module, sm90_emulator

from oxicuda.emulator.interp.harness import run_ptx

QNAN, QNAN_NEG, QNAN_1234 = 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000001234
SNAN, SNAN_NEG, QNAN_ALL = 0x7FF0000000000001, 0xFFF4000000000001, 0x7FFFFFFFFFFFFFFF

#: (a, b) -> GPU result, the same for add.f64, mul.f64, min.f64 and max.f64 (lanes 1, 2, 3, 4,
#: 13 and 16 of each case)
F64_NAN_PAIRS = [
    ((QNAN, QNAN_NEG), QNAN_NEG),
    ((QNAN, QNAN_1234), QNAN_1234),
    ((QNAN, SNAN), 0x7FF8000000000001),
    ((QNAN, SNAN_NEG), 0xFFFC000000000001),
    ((QNAN, QNAN_ALL), QNAN_ALL),
    ((QNAN_NEG, QNAN), QNAN),
]

#: (PTX body, input types, output type, input bits, GPU result bits)
OBSERVED = [
    *[(f"{op}.f64 %o, %a0, %a1;", ("f64", "f64"), "f64", ins, want)
      for op in ("add", "mul", "min", "max") for ins, want in F64_NAN_PAIRS],
    ("neg.f64 %o, %a0;", ("f64",), "f64", (SNAN,), 0x7FF8000000000001),
    ("neg.f64 %o, %a0;", ("f64",), "f64", (QNAN,), QNAN),
    # fma.rn.f64 a*b + a, lanes 135, 137, 138, 142, 172 and 188
    *[("fma.rn.f64 %o, %a0, %a1, %a0;", ("f64", "f64"), "f64", ins, want) for ins, want in [
        ((0x8000000000000000, 0x0000000000000000), 0x8000000000000000),
        ((0x8000000000000000, 0x3FF0000000000000), 0x8000000000000000),
        ((0x8000000000000000, 0x0000000000000001), 0x8000000000000000),
        ((0x8000000000000000, 0x4000000000000000), 0x8000000000000000),
        ((0x0000000000000001, 0xBFF8000000000000), 0x8000000000000000),
        ((0x7FEFFFFFFFFFFFFF, 0xBFF8000000000000), 0xFFDFFFFFFFFFFFFF),
    ]],
    # fma.rn.f64 a*b + a with a and b NaN: b's NaN (lane 1 of the 2026-11-29 evening run, which
    # failed with the c-last rule on all 30 lanes pairing two different NaNs)
    ("fma.rn.f64 %o, %a0, %a1, %a0;", ("f64", "f64"), "f64", (QNAN, QNAN_NEG), QNAN_NEG),
    # cvt.rn.f32.f64 of NaNs, lanes 0-3
    *[("cvt.rn.f32.f64 %o, %a0;", ("f64",), "f32", (a,), want) for a, want in [
        (QNAN, 0x7FC00000), (0xFFF8000000000001, 0xFFC00000), (SNAN, 0x7FC00000),
        (0x7FF4000000001234, 0x7FE00000),
    ]],
    # cvt.rn.relu.bf16x2.f32 d, a, b (a to the upper half), lanes 1, 16-20
    *[("cvt.rn.relu.bf16x2.f32 %o, %a0, %a1;", ("f32", "f32"), "bf16x2", ins, want)
      for ins, want in [
        ((0x00000000, 0x80000000), 0x00000000),
        ((0x80000000, 0x00000000), 0x00000000),
        ((0x80000000, 0x80000000), 0x00000000),
        ((0x80000000, 0x7F800000), 0x00007F80),
        ((0x80000000, 0xFF800000), 0x00000000),
        ((0x80000000, 0x7FFFFFFF), 0x00007FFF),
    ]],
    # sin.approx: 8388609.0 is 1335088.5 turns; +-f32(pi) is 0.5 - 2^-25 turns
    *[(f"sin.approx{ftz}.f32 %o, %a0;", ("f32",), "f32", (a,), want)
      for ftz in ("", ".ftz") for a, want in [
        (0x4B000001, 0x80000000), (0x40490FDB, 0x00000000), (0xC0490FDB, 0x80000000),
    ]],
    # div.approx: a NaN dividend over the largest finite divisor
    *[("div.approx.f32 %o, %a0, %a1;", ("f32", "f32"), "f32", (a, 0x7F7FFFFF), 0x7FFFFFFF)
      for a in (0x7FFFFFFF, 0x7FC01234, 0xFFC00001, 0x7F800001, 0xFFA5A5A5)],
]


@pytest.fixture(scope="module")
def emu():
    return sm90_emulator()


def _run(api, body: str, in_types, out_type: str, inputs) -> int:
    ptx = module([kernel("k_observed", body, list(in_types), out_type)])
    args = [np.array([v], NP[t]) for v, t in zip(inputs, in_types)] + [np.zeros(1, NP[out_type])]
    return int(run_ptx(api, ptx, "k_observed", (1, 1, 1), (1, 1, 1), args)[-1][0])


def _row_id(row) -> str:
    return row[0].split()[0] + "-" + "-".join(hex(v) for v in row[3])


@pytest.mark.parametrize("body,in_types,out_type,inputs,want", OBSERVED,
                         ids=[_row_id(r) for r in OBSERVED])
def test_emulator_returns_the_bits_the_h200_returned(emu, body, in_types, out_type, inputs, want):
    got = _run(emu, body, in_types, out_type, inputs)
    assert got == want, f"{body} {[hex(v) for v in inputs]}: emulator {hex(got)}, H200 {hex(want)}"


def test_the_last_nan_operand_in_ptx_order_wins_in_f64_add_and_mul(emu):
    """The H200 pairs above fix the rule for two operands: the second operand's NaN, whatever
    the first is, so swapping two NaN operands swaps the result. sub.f64 is modelled on the
    same order (inferred, not observed)."""
    for a, b in [(QNAN_1234, QNAN_NEG), (SNAN_NEG, QNAN_ALL)]:
        for op in ("add", "sub", "mul"):
            body = f"{op}.f64 %o, %a0, %a1;"
            assert _run(emu, body, ("f64", "f64"), "f64", (a, b)) == b | (1 << 51)
            assert _run(emu, body, ("f64", "f64"), "f64", (b, a)) == a | (1 << 51)


@pytest.mark.parametrize("a,b,c,want", [
    (QNAN_NEG, QNAN_1234, SNAN, QNAN_1234),            # b's NaN before c's and a's
    (QNAN_NEG, 0, SNAN, 0x7FF8000000000001),           # c's before a's, quieted
    (SNAN_NEG, 0, QNAN_1234, QNAN_1234),
    (SNAN_NEG, 0, 0, 0xFFFC000000000001),              # a's alone, quieted, sign kept
    (0, 0x3FF0000000000000, SNAN, 0x7FF8000000000001),  # c's alone, quieted
    (0x3FF0000000000000, SNAN_NEG, QNAN_ALL, 0xFFFC000000000001),  # b's before c's
])
def test_fma_f64_takes_b_then_c_then_a_nan(emu, a, b, c, want):
    """fma.rn.f64 NaN priority b > c > a, as the H200 returned for every pairing of NaN operand
    positions (benches/probe_fidelity.py on the GPU, 2026-11-29 session 3; e.g. a = qNaN payload 1,
    b = 1.5, c = -qNaN payload 2 gave 0xfff8000000000002)."""
    fma = "fma.rn.f64 %o, %a0, %a1, %a2;"
    got = _run(emu, fma, ("f64",) * 3, "f64", (a, b, c))
    assert got == want, f"fma({hex(a)}, {hex(b)}, {hex(c)}): {hex(got)}, want {hex(want)}"
