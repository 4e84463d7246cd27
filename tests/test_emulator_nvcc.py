"""nvcc-generated PTX (tests/data/nvcc, .cu beside each .ptx) run in the emulator and checked
element by element against numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oxicuda.driver.emulator import EmulatorAPI
from oxicuda.ptx.interp.harness import run_ptx

DATA = Path(__file__).parent / "data" / "nvcc"


@pytest.fixture(scope="module")
def emu():
    return EmulatorAPI()


def ptx(name: str) -> str:
    return (DATA / f"{name}.ptx").read_text()


def test_vector_add_matches_numpy_and_leaves_tail_untouched(emu, rng):
    n = 1000
    a = rng.standard_normal(n + 24).astype(np.float32)
    b = rng.standard_normal(n + 24).astype(np.float32)
    c = np.full(n + 24, np.nan, np.float32)
    _, _, c, _ = run_ptx(emu, ptx("vector_add"), "vector_add", (4, 1, 1), (256, 1, 1), [a, b, c, n])
    np.testing.assert_array_equal(c[:n], a[:n] + b[:n])
    assert np.isnan(c[n:]).all()


def test_reduce_sum_with_syncthreads_and_shfl_down(emu, rng):
    n = 3000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(1, np.float32)
    _, out, _ = run_ptx(emu, ptx("reduce_sum"), "reduce_sum", (12, 1, 1), (256, 1, 1), [x, out, n])
    assert abs(float(out[0]) - x.astype(np.float64).sum()) < 1e-3 * np.abs(x).sum() / 100 + 1e-3


def test_histogram_with_shared_and_global_atomics(emu, rng):
    n = 5000
    data = rng.integers(0, 256, n).astype(np.uint8)
    bins = np.zeros(64, np.uint32)
    _, bins, _ = run_ptx(emu, ptx("histogram"), "histogram", (3, 1, 1), (128, 1, 1), [data, bins, n])
    np.testing.assert_array_equal(bins, np.bincount(data & 63, minlength=64))


def test_half_and_bfloat16_conversions_round_to_nearest_even(emu, rng):
    n = 1000
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    x[:6] = [np.nan, np.inf, -0.0, 1e-30, 65520.0, 1.00390625]
    h = np.zeros(n, np.uint16)
    bf = np.zeros(n, np.uint16)
    back = np.full(n, np.nan, np.float32)
    _, h, bf, back, _ = run_ptx(emu, ptx("half_convert"), "half_convert", (4, 1, 1), (256, 1, 1),
                                [x, h, bf, back, n])
    with np.errstate(over="ignore"):
        hv = x.astype(np.float16)
    np.testing.assert_array_equal(h[1:], hv.view(np.uint16)[1:])
    assert np.isnan(hv[0]) and (h[0] & 0x7C00) == 0x7C00 and (h[0] & 0x3FF) != 0
    # independent bf16 reference: round half to even on the upper 16 bits
    bits = x.view(np.uint32).astype(np.uint64)
    ref = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(bf[1:], ref[1:])
    # __hfma(h, h, h) rounded once to f16, plus the bf16 value
    h64 = hv.astype(np.float64)
    fma_ref = (h64 * h64 + h64).astype(np.float16).astype(np.float32)
    bf32 = (bf.astype(np.uint32) << 16).view(np.float32)
    ok = np.isfinite(fma_ref)
    np.testing.assert_array_equal(back[ok], (fma_ref + bf32)[ok])


def test_index64_uses_64_bit_addresses(emu, rng):
    n, stride = 100, 3
    x = rng.standard_normal(n * stride)
    y = np.full(n * stride, np.nan)
    _, y, _, _ = run_ptx(emu, ptx("index64"), "index64", (2, 1, 1), (64, 1, 1), [x, y, n, stride])
    i = np.arange(n)
    np.testing.assert_array_equal(y[i * stride], 2 * x[i * stride] + i)
    rest = np.ones(n * stride, bool)
    rest[i * stride] = False
    assert np.isnan(y[rest]).all()


@pytest.mark.parametrize("m,n,k", [(40, 33, 17), (64, 48, 80)])
def test_tiled_sgemm_with_ragged_sizes(emu, rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    grid = ((n + 15) // 16, (m + 15) // 16, 1)
    _, _, c, *_ = run_ptx(emu, ptx("sgemm_tiled"), "sgemm_tiled", grid, (16, 16, 1), [a, b, c, m, n, k])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.abs(a).max() * np.abs(b).max() * k)


def test_int_intrinsics_dp4a_dp2a_mul24_int128_and_named_barrier(emu, rng):
    n, block = 200, 128
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    c = rng.integers(0, 2**64, 2 * n, dtype=np.uint64)
    c[:4] = [2**64 - 1, 2**64 - 1, 0, 2**64 - 1]
    outs = [np.full(n, -7, np.int32), np.full(n, -7, np.int32), np.full(n, -7, np.int32),
            np.zeros(n, np.uint32), np.zeros(4 * n, np.uint64), np.full(n, -7, np.int32)]
    grid = ((n + block - 1) // block, 1, 1)
    res = run_ptx(emu, ptx("int_intrinsics"), "int_intrinsics", grid, (block, 1, 1), [a, b, c, *outs, n])
    dot4, dot2, m24, um24, s128, swapped = res[3:9]
    i = np.arange(n, dtype=np.int64)
    ab, bb = a.view(np.int8).reshape(n, 4).astype(np.int64), b.view(np.int8).reshape(n, 4).astype(np.int64)
    wrap = lambda v: ((np.asarray(v) + 2**31) % 2**32 - 2**31).astype(np.int32)  # noqa: E731
    np.testing.assert_array_equal(dot4, wrap((ab * bb).sum(1) + i))
    ah = a.view(np.int16).reshape(n, 2).astype(np.int64)
    np.testing.assert_array_equal(dot2, wrap((ah * bb[:, 2:4]).sum(1) - i))
    s24 = lambda v: ((v.astype(np.int64) & 0xFFFFFF) ^ 0x800000) - 0x800000  # noqa: E731
    np.testing.assert_array_equal(m24, wrap(s24(a) * s24(b)))
    u24 = lambda v: v.astype(np.int64) & 0xFFFFFF  # noqa: E731
    np.testing.assert_array_equal(um24, ((u24(a) * u24(b)) & 0xFFFFFFFF).astype(np.uint32))
    ref = []
    for k in range(n):
        x = (int(c[2 * k + 1]) << 64) | int(c[2 * k])
        y = (int(c[2 * k]) << 64) | int(c[2 * k + 1])
        z, w = (x + y) % 2**128, (x - y) % 2**128
        ref += [z & (2**64 - 1), z >> 64, w & (2**64 - 1), w >> 64]
    np.testing.assert_array_equal(s128, np.array(ref, np.uint64))
    half = block // 2
    t = i % block
    base = (t // half) * half
    src = i - t + base + half - 1 - (t - base)
    np.testing.assert_array_equal(swapped, src.astype(np.int32))
