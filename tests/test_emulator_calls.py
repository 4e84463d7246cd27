"""``call`` / ``.func`` in the emulator: nvcc's ABI call sequences (``__noinline__`` device
functions, tests/data/nvcc/calls*.cu) and hand-written PTX (predicated and nested calls,
several returns, recursion refused at load), checked element by element against numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oxicuda.driver.errors import CudaError
from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp.harness import run_ptx
from oxicuda.emulator.interp.strict import strict_mode

DATA = Path(__file__).parent / "data" / "nvcc"


@pytest.fixture(scope="module")
def emu():
    return EmulatorAPI()


def poly_ref(x: np.ndarray, a: float, reps: np.ndarray) -> np.ndarray:
    """r = a; r = fma(r, x, a) reps times, in float32 with one rounding per fma."""
    r = np.full(x.shape, a, np.float32)
    for k in range(int(reps.max()) + 1):
        upd = (r.astype(np.float64) * x + a).astype(np.float32)
        r = np.where(k < reps, upd, r)
    return r


@pytest.mark.parametrize("strict", [False, True])
def test_nvcc_noinline_calls_with_return_values_and_void_functions(emu, rng, strict):
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    z = rng.standard_normal(n).astype(np.float32)
    h = np.zeros(n, np.uint64)
    with strict_mode(strict):
        _, y, z2, h, _ = run_ptx(emu, (DATA / "calls.ptx").read_text(), "calls", (3, 1, 1),
                                 (128, 1, 1), [x, y, z, h, n])
    i = np.arange(n)
    np.testing.assert_array_equal(y, poly_ref(x, 0.5, i % 5))
    with np.errstate(over="ignore"):
        k = (i.astype(np.uint64) * np.uint64(1234567))
        ref = (k ^ (k >> np.uint64(17))) * np.uint64(0x9E3779B97F4A7C15) + i.astype(np.uint64)
    np.testing.assert_array_equal(h, ref)
    swapped = z.copy()
    swapped[0::2], swapped[1::2] = z[1::2], z[0::2]
    np.testing.assert_array_equal(z2, swapped)


def test_nvcc_nested_calls_in_a_loop_with_a_by_value_struct(emu, rng):
    n, reps = 200, 5
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n + 8, np.nan, np.float32)
    y = run_ptx(emu, (DATA / "calls_nested.ptx").read_text(), "calls_nested", (2, 1, 1),
                (128, 1, 1), [x, y, n, reps])[1]
    acc = np.zeros(n, np.float32)
    for k in range(reps + 1):
        a, b = np.float32(0.5 + k), np.float32(k & 3)
        # scale(|v|, p) is fma.rn.f32: the float64 product of two float32 is exact
        s = (np.abs(x).astype(np.float64) * a + b).astype(np.float32)
        upd = np.where(x < 0, acc - s, acc + s)
        acc = np.where(k < reps + (np.arange(n) & 1), upd, acc)
    assert np.isnan(y[n:]).all()
    np.testing.assert_array_equal(y[:n], acc)


HEAD = ".version 8.0\n.target sm_86\n.address_size 64\n\n"

CLAMP_FUNC = """
.func (.param .b32 ret) clamp_to(.param .b32 v, .param .b32 hi)
{
	.reg .b32 %r<4>;
	.reg .pred %p<2>;
	ld.param.u32 %r1, [v];
	ld.param.u32 %r2, [hi];
	setp.gt.u32 %p1, %r1, %r2;
	@%p1 bra $BIG;
	st.param.b32 [ret], %r1;
	ret;
$BIG:
	st.param.b32 [ret], %r2;
	ret;
}

.func (.param .b32 ret) twice_clamped(.param .b32 v)
{
	.reg .b32 %r<4>;
	ld.param.u32 %r1, [v];
	shl.b32 %r1, %r1, 1;
	{
	.param .b32 a0;
	.param .b32 a1;
	.param .b32 r0;
	st.param.b32 [a0], %r1;
	st.param.b32 [a1], 100;
	call.uni (r0), clamp_to, (a0, a1);
	ld.param.b32 %r2, [r0];
	}
	st.param.b32 [ret], %r2;
	ret;
}
"""


def test_predicated_nested_calls_with_several_returns(emu):
    ptx = HEAD + CLAMP_FUNC + """
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;
	.reg .pred %p<2>;
	mov.u32 %r1, %tid.x;
	mov.u32 %r3, 7;
	setp.lt.u32 %p1, %r1, 48;
	{
	.param .b32 p0;
	.param .b32 q0;
	st.param.b32 [p0], %r1;
	@%p1 call.uni (q0), twice_clamped, (p0);
	@%p1 ld.param.b32 %r3, [q0];
	}
	ld.param.u64 %rd1, [out];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	ret;
}
"""
    out = run_ptx(emu, ptx, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)])[0]
    t = np.arange(64)
    np.testing.assert_array_equal(out, np.where(t < 48, np.minimum(2 * t, 100), 7))


def test_recursive_and_undefined_calls_fail_to_load_naming_the_function(emu):
    rec = HEAD + """
.func (.param .b32 ret) f(.param .b32 v)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [v];
	{
	.param .b32 a;
	.param .b32 b;
	st.param.b32 [a], %r1;
	call.uni (b), f, (a);
	ld.param.b32 %r2, [b];
	}
	st.param.b32 [ret], %r2;
	ret;
}
.visible .entry k()
{
	.reg .b32 %r<2>;
	{
	.param .b32 a;
	.param .b32 b;
	st.param.b32 [a], 1;
	call.uni (b), f, (a);
	}
	ret;
}
"""
    with pytest.raises(CudaError, match=r"recursive call of f \(call chain k -> f -> f\)"):
        emu.module_load_data(rec.encode())
    undefined = HEAD + ".visible .entry k()\n{\n\tcall.uni g;\n\tret;\n}\n"
    with pytest.raises(CudaError, match="g has no .func body"):
        emu.module_load_data(undefined.encode())
