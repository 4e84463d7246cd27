"""The emulator-fidelity kernels (emulator_fidelity_cases.py, test_emulator_fidelity.py) on the
real GPU and on an in-process emulator, with the same inputs (NaN payloads, signalling NaNs,
infinities, subnormals, -0, largest finite values, random values):

- exact instructions (arithmetic, conversions, min/max, moves, bit operations, .b128, bar.red,
  bar.warp.sync) must agree bit for bit, NaN encodings included;
- .approx instructions must give the same special values (NaN, infinities, zeros with their
  signs, .ftz flushes) and agree within approx.MAX_ERROR elsewhere; sin/cos also for large
  arguments, where the emulator models the hardware's f32 argument reduction.

f64 NaN encodings are not canonicalised by the emulator (numpy's payload propagation);
``test_f64_nan_encodings_match_the_gpu`` is the check of that choice.

Run on a GPU machine: ``OXICUDA_BACKEND=cuda python3 -m pytest -q tests/test_emulator_fidelity_gpu.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from emulator_fidelity_cases import (
    APPROX_CASES,
    CASES,
    INT_CASES,
    Case,
    N,
    f32_inputs,
    sm90_emulator,
)
from test_emulator_directed_rounding import (
    DIRECTED_CASES,
    directed_inputs,
    directed_reference,
    run_directed,
)
from test_emulator_fidelity import MMA_NAN, block_cases, mma_nan_case, run_case
from test_emulator_nvcc import bit_half_case, bit_half_reference
from test_emulator_nvcc import ptx as nvcc_ptx

from oxicuda.emulator.interp.approx import MAX_ERROR
from oxicuda.emulator.interp.harness import run_ptx

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def both():
    from oxicuda.driver.backend import api
    from oxicuda.driver.context import ensure_context

    ensure_context()
    gpu = api()  # the real driver's primary context is current in this thread
    return gpu, sm90_emulator()


def _first_diff(case: Case, inputs, g, e, bad) -> str:
    k = int(bad[0])
    return (f"{case.name}: {len(bad)} of {len(g)} lanes differ; lane {k}: inputs "
            f"{[hex(int(a[k])) for a in inputs]}, GPU {hex(int(g[k]))}, emulator {hex(int(e[k]))}; "
            f"first lanes: {[(hex(int(g[j])), hex(int(e[j]))) for j in bad[:6]]}")


F64_CASES = [
    Case(f"{op.split('.')[0]}_f64", f"{op}.f64 %o, %a0, %a1;", ("f64", "f64"), "f64",
         lambda rng: [_f64_nan_mix(rng, 0), _f64_nan_mix(rng, 1)], None)
    for op in ("add", "mul", "min", "max", "div.rn")
] + [Case("fma_f64", "fma.rn.f64 %o, %a0, %a1, %a0;", ("f64", "f64"), "f64",
          lambda rng: [_f64_nan_mix(rng, 0), _f64_nan_mix(rng, 1)], None),
     Case("cvt_f64_f32", "cvt.f64.f32 %o, %a0;", ("f32",), "f64",
          lambda rng: f32_inputs(rng, 1), None),
     Case("neg_f64", "neg.f64 %o, %a0;", ("f64",), "f64", lambda rng: [_f64_nan_mix(rng, 0)], None)]


def _f64_nan_mix(rng, which: int) -> np.ndarray:
    special = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000001234,
                        0x7FF0000000000001, 0xFFF4000000000001, 0x7FF0000000000000,
                        0xFFF0000000000000, 0x0000000000000000, 0x8000000000000000,
                        0x3FF0000000000000, 0x0000000000000001, 0x7FEFFFFFFFFFFFFF,
                        0xBFF8000000000000, 0x7FFFFFFFFFFFFFFF, 0x4000000000000000,
                        0xC000000000000000], np.uint64)
    v = rng.standard_normal(N).view(np.uint64)
    v[:256] = np.repeat(special, 16)[:256] if which == 0 else np.tile(special, 16)[:256]
    return v


@pytest.mark.parametrize("case", CASES + INT_CASES, ids=lambda c: c.name)
def test_exact_instructions_agree_bit_for_bit_with_the_gpu(both, case, rng):
    inputs = case.inputs(rng)
    g = run_case(both[0], case, inputs)
    e = run_case(both[1], case, inputs)
    bad = np.flatnonzero(g != e)
    assert not len(bad), _first_diff(case, inputs, g, e, bad)


@pytest.mark.parametrize("case", F64_CASES, ids=lambda c: c.name)
def test_f64_nan_encodings_match_the_gpu(both, case, rng):
    inputs = case.inputs(rng)
    g = run_case(both[0], case, inputs)
    e = run_case(both[1], case, inputs)
    gv, ev = g.view(np.float64), e.view(np.float64)
    values_bad = np.flatnonzero((g != e) & ~(np.isnan(gv) & np.isnan(ev)))
    assert not len(values_bad), "values differ: " + _first_diff(case, inputs, g, e, values_bad)
    bad = np.flatnonzero(g != e)
    assert not len(bad), "NaN encodings differ: " + _first_diff(case, inputs, g, e, bad)


@pytest.mark.parametrize("op,t,mode", DIRECTED_CASES, ids=lambda v: str(v))
def test_directed_rounding_agrees_bit_for_bit_with_the_gpu(both, rng, op, t, mode):
    """.rz/.rm/.rp f32/f64 arithmetic: the GPU against exact arithmetic, the emulator against the GPU."""
    ins = directed_inputs(op, t, rng)
    g = run_directed(both[0], op, t, mode, ins)
    e = run_directed(both[1], op, t, mode, ins)
    want = directed_reference(op, t, mode, ins)
    for name, got, ref in (("GPU vs exact", g, want), ("emulator vs GPU", e, g)):
        bad = np.flatnonzero(got != ref)
        assert not len(bad), (f"{op}.{mode}.{t} {name}: {len(bad)} lanes differ; lane {bad[0]}: inputs "
                              f"{[hex(int(x[bad[0]])) for x in ins]}, {hex(int(got[bad[0]]))} vs "
                              f"{hex(int(ref[bad[0]]))}")


def _lane_bits(bits, t: str) -> np.ndarray:
    """Per-value bits: f32/f16 as they are; f16x2 as the low halves, then the high halves."""
    if t != "f16x2":
        return np.asarray(bits)
    b = np.asarray(bits, np.uint32)
    return np.concatenate([(b & 0xFFFF), (b >> 16)]).astype(np.uint16)


def _as_float(b, t: str) -> np.ndarray:
    """Values of per-value bits (from ``_lane_bits``)."""
    if t == "f32":
        with np.errstate(invalid="ignore"):
            return b.view(np.float32).astype(np.float64)
    return b.astype(np.uint16).view(np.float16).astype(np.float64)


@pytest.mark.parametrize("case", APPROX_CASES, ids=lambda c: c.name)
def test_approx_instructions_agree_with_the_gpu_within_the_documented_bound(both, case, rng):
    inputs = case.inputs(rng)
    t = case.out_type
    g = _lane_bits(run_case(both[0], case, inputs), t)
    e = _lane_bits(run_case(both[1], case, inputs), t)
    gv, ev = _as_float(g, t), _as_float(e, t)
    x = _as_float(_lane_bits(inputs[0], case.in_types[0]), case.in_types[0])
    special = ~np.isfinite(gv) | ~np.isfinite(ev) | (gv == 0) | (ev == 0) | ~np.isfinite(x) | (x == 0)
    judged = np.ones(len(g), bool)
    if case.name.startswith("div_"):
        b = _as_float(np.asarray(inputs[1]), "f32")
        special |= ~np.isfinite(b)
        if case.name.startswith("div_approx"):
            # the ISA bounds div.approx for 2^-126 <= |b| <= 2^126 and gives 0 (NaN for an
            # infinite a) above; below (subnormal b) it says nothing
            judged = np.abs(b) >= 2.0 ** -126
            special |= np.isfinite(b) & (np.abs(b) > 2.0 ** 126)
    # the sign of a zero result is specified for zero inputs only (e.g. sin(-0) = -0)
    same = (g == e) | ((gv == 0) & (ev == 0) & (x != 0))
    sb = np.flatnonzero(judged & special & ~same)
    assert not len(sb), "special values differ: " + _first_diff(case, inputs, g, e, sb)
    check = judged & ~special
    kind, bound = MAX_ERROR[case.approx]
    ref = ev[check]
    diff = np.abs(gv[check] - ref)
    with np.errstate(over="ignore"):
        one_ulp = np.spacing(np.abs(ref).astype(np.float16 if t.startswith("f16") else np.float32)
                             ).astype(np.float64)
    if kind == "ulp":
        err, lim = diff / one_ulp, bound + 1.0
    elif kind == "rel":  # plus the emulator's own rounding (half an ulp of the output type)
        tiny = 2.0 ** -14 if t.startswith("f16") else 2.0 ** -126
        err = diff / np.maximum(np.abs(ref), tiny)
        lim = bound + (2.0 ** -11 if t.startswith("f16") else 2.0 ** -24)
    else:
        err, lim = diff - one_ulp, bound
    worst = int(np.argmax(err)) if err.size else 0
    assert err.size == 0 or err.max() <= lim, \
        (case.name, float(err.max()), lim, float(x[check][worst]), float(gv[check][worst]), float(ref[worst]))


@pytest.mark.gpu_isolated  # a faulting kernel would leave a sticky error for later tests
@pytest.mark.parametrize("which", ["bar_red", "warp_sync", "b128"])
def test_block_level_instructions_agree_with_the_gpu(both, rng, which):
    name, ptx, x, want = next(c for c in block_cases(rng) if c[0] == which)
    outs = []
    for api in both:
        out = np.full(len(x), 0xDEADBEEF, np.uint32)
        outs.append(run_ptx(api, ptx, "bk", (1, 1, 1), (len(x), 1, 1), [out, x])[0])
    np.testing.assert_array_equal(outs[0], want, err_msg=f"{name}: GPU vs reference")
    np.testing.assert_array_equal(outs[1], outs[0], err_msg=f"{name}: emulator vs GPU")


@pytest.mark.gpu_isolated  # a faulting kernel would leave a sticky error for later tests
def test_mma_sync_nan_results_agree_with_the_gpu(both):
    a, want = mma_nan_case()
    outs = [run_ptx(api, MMA_NAN, "mma_nan", (1, 1, 1), (32, 1, 1), [np.zeros((32, 4), np.uint32), a])[0]
            for api in both]
    np.testing.assert_array_equal(outs[0], outs[1], err_msg="GPU vs emulator")
    np.testing.assert_array_equal(outs[0], want, err_msg="GPU vs expectation")


@pytest.mark.gpu_isolated  # a faulting kernel would leave a sticky error for later tests
def test_nvcc_bit_and_half_intrinsics_agree_with_the_gpu(both, rng):
    """tests/data/nvcc/bit_half_intrinsics.cu (shf, prmt, 64-bit bit counts, packed half
    conversions and fma, __syncthreads_count/and/or, __syncwarp) on both backends."""
    n, block = 200, 128
    ins = bit_half_case(rng, n)
    res = []
    for api in both:
        outs = [np.zeros((n, 8), np.uint32), np.zeros((n, 4), np.uint32), np.full(n, -1, np.int32),
                np.zeros(n, np.uint32)]
        res.append(run_ptx(api, nvcc_ptx("bit_half_intrinsics"), "bit_half_intrinsics",
                           ((n + block - 1) // block, 1, 1), (block, 1, 1), [*ins, *outs, n])[5:9])
    want = bit_half_reference(*ins, block)
    for k, name in enumerate(("bits", "halves", "votes", "ring")):
        np.testing.assert_array_equal(res[0][k], want[k], err_msg=f"{name}: GPU vs reference")
        np.testing.assert_array_equal(res[1][k], res[0][k], err_msg=f"{name}: emulator vs GPU")
