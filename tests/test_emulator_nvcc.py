"""nvcc-generated PTX (tests/data/nvcc, .cu beside each .ptx) run in the emulator and checked
element by element against numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp.harness import run_ptx

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
    wrap = lambda v: ((np.asarray(v) + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(dot4, wrap((ab * bb).sum(1) + i))
    ah = a.view(np.int16).reshape(n, 2).astype(np.int64)
    np.testing.assert_array_equal(dot2, wrap((ah * bb[:, 2:4]).sum(1) - i))
    s24 = lambda v: ((v.astype(np.int64) & 0xFFFFFF) ^ 0x800000) - 0x800000
    np.testing.assert_array_equal(m24, wrap(s24(a) * s24(b)))
    u24 = lambda v: v.astype(np.int64) & 0xFFFFFF
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


def bit_half_case(rng, n: int = 200):
    """Inputs of the bit_half_intrinsics kernel (NaN, inf and f16-overflowing values among x, y)
    and the float64/integer references of everything it writes."""
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    c = rng.integers(0, 2**64, n, dtype=np.uint64)
    c[:3] = [0, 1, 2**63]
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    y = (rng.standard_normal(n) * 3).astype(np.float32)
    x[:4] = [np.nan, np.inf, 70000.0, -0.0]
    y[4:7] = [np.nan, -np.inf, 1e-6]
    return [a, b, c, x, y]


def bit_half_reference(a, b, c, x, y, block: int):
    n = len(a)
    bits = np.zeros((n, 8), np.uint32)
    for i in range(n):
        lo, hi, s = int(a[i]), int(b[i]), int(b[i])
        v = (hi << 32) | lo
        bits[i, 0] = ((v << (s & 63 & 31)) >> 32) & 0xFFFFFFFF
        bits[i, 1] = (v >> min(s & 63, 32)) & 0xFFFFFFFF
        src = v.to_bytes(8, "little")
        bits[i, 2] = sum(src[(s >> (4 * k)) & 7] << (8 * k) for k in range(4))
        cv = int(c[i])
        bits[i, 3] = 64 - cv.bit_length()
        bits[i, 4] = cv.bit_count()
        r = int(f"{cv:064b}"[::-1], 2)
        bits[i, 5], bits[i, 6] = r & 0xFFFFFFFF, r >> 32
        bits[i, 7] = (v >> (s & 31)) & 0xFFFFFFFF
    with np.errstate(all="ignore"):
        def f16(v):
            h = np.asarray(v, np.float64).astype(np.float16)
            return np.where(np.isnan(h), np.uint16(0x7FFF), h.view(np.uint16)).astype(np.uint32)

        def bf16(v):
            v = np.asarray(v, np.float64)
            e = np.floor(np.log2(np.where(np.isfinite(v) & (v != 0), np.abs(v), 1.0)))
            q = np.where(np.isfinite(v) & (v != 0), np.rint(v / 2.0 ** (e - 7)) * 2.0 ** (e - 7), v)
            bits16 = (q.astype(np.float32).view(np.uint32) >> 16).astype(np.uint32)
            return np.where(np.isnan(v), np.uint32(0x7FFF), bits16)

        def f16v(bits16):
            return np.asarray(bits16, np.uint16).view(np.float16).astype(np.float64)

        def bf16v(bits16):
            return (np.asarray(bits16, np.uint32) << 16).view(np.float32).astype(np.float64)

        hx, hy = f16(x), f16(y)
        h = hx | (hy << 16)
        h2 = [f16(f16v(p) * f16v(p) + f16v(q)) for p, q in ((hx, hy), (hy, hx))]
        dbl = [f16(2 * f16v(p)) for p in (hx, hy)]
        mx = []
        for u, w in zip(h2, dbl):
            uv, wv = f16v(u), f16v(w)
            m = np.where(np.isnan(uv), w, np.where(np.isnan(wv), u, np.where(uv >= wv, u, w)))
            mx.append(np.where(np.isnan(uv) & np.isnan(wv), np.uint32(0x7FFF), m))
        h3 = mx[0] | (mx[1] << 16)
        gx, gy = bf16(x), bf16(y)
        g = gx | (gy << 16)
        g2 = [bf16(bf16v(p) * bf16v(p) + bf16v(q)) for p, q in ((gx, gy), (gy, gx))]
        halves = np.stack([h, h3, g, g2[0] | (g2[1] << 16)], axis=1).astype(np.uint32)
    grid = (n + block - 1) // block
    av = np.zeros(grid * block, np.uint32)
    av[:n] = a
    pred = (av & 1).astype(bool)
    pred[n:] = False
    votes = np.zeros(n, np.int32)
    ring = np.zeros(n, np.uint32)
    for blk in range(grid):
        sl = slice(blk * block, (blk + 1) * block)
        cnt = int(pred[sl].sum())
        v = cnt * 4 + 2 * int(cnt == block) + int(cnt > 0)
        for i in range(blk * block, min(n, (blk + 1) * block)):
            votes[i] = v
            w0 = i - i % 32
            ring[i] = av[w0 + (i + 6) % 32] + 1
    return bits, halves, votes, ring


def test_bit_and_half_intrinsics_shf_prmt_packed_halves_syncwarp_and_syncthreads_count(emu, rng):
    n, block = 200, 128
    ins = bit_half_case(rng, n)
    outs = [np.zeros((n, 8), np.uint32), np.zeros((n, 4), np.uint32), np.full(n, -1, np.int32),
            np.zeros(n, np.uint32)]
    res = run_ptx(emu, ptx("bit_half_intrinsics"), "bit_half_intrinsics", ((n + block - 1) // block, 1, 1),
                  (block, 1, 1), [*ins, *outs, n])
    bits, halves, votes, ring = bit_half_reference(*ins, block)
    np.testing.assert_array_equal(res[5], bits)
    np.testing.assert_array_equal(res[6], halves)
    np.testing.assert_array_equal(res[7], votes)
    np.testing.assert_array_equal(res[8], ring)
