"""Fragment tables: a warp-level matmul computed through them equals numpy; ldmatrix feeds mma."""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.ptx import fragments as fr


def _scatter(matrix: np.ndarray, frag: fr.Fragment) -> np.ndarray:
    """Per-lane registers of a matrix: [lane, element] values."""
    return np.array([[matrix[r, c] for (r, c) in lane] for lane in frag.table])


def _gather(values: np.ndarray, frag: fr.Fragment) -> np.ndarray:
    out = np.full((frag.rows, frag.cols), np.nan)
    for lane, elems in enumerate(frag.table):
        for e, (r, c) in enumerate(elems):
            assert np.isnan(out[r, c]), f"({r}, {c}) held twice"
            out[r, c] = values[lane, e]
    return out


def _warp_mma(shape: fr.MmaShape, a_regs, b_regs, c_regs) -> np.ndarray:
    """What the hardware does with the lanes' registers: D[lane, e] for D's layout."""
    a, b, c = _gather(a_regs, shape.a), _gather(b_regs, shape.b), _gather(c_regs, shape.c)
    d = a @ b + c
    return _scatter(d, shape.c)


@pytest.mark.parametrize("key", sorted(fr.MMA_SHAPES))
def test_matmul_through_fragment_tables_matches_numpy(key, rng):
    shape = fr.MMA_SHAPES[key]
    assert (shape.a.rows, shape.a.cols) == (shape.m, shape.k)
    assert (shape.b.rows, shape.b.cols) == (shape.k, shape.n)
    assert (shape.c.rows, shape.c.cols) == (shape.m, shape.n)
    a = rng.standard_normal((shape.m, shape.k))
    b = rng.standard_normal((shape.k, shape.n))
    c = rng.standard_normal((shape.m, shape.n))
    d_regs = _warp_mma(shape, _scatter(a, shape.a), _scatter(b, shape.b), _scatter(c, shape.c))
    assert d_regs.shape == (32, shape.c.elements)
    np.testing.assert_allclose(_gather(d_regs, shape.c), a @ b + c, rtol=1e-12)


def test_register_counts_match_the_ptx_isa():
    counts = {k: (s.a_regs, s.b_regs, s.c_regs) for k, s in fr.MMA_SHAPES.items()}
    assert counts[("m16n8k16", "f16", "f32")] == (4, 2, 4)
    assert counts[("m16n8k16", "f16", "f16")] == (4, 2, 2)
    assert counts[("m16n8k8", "bf16", "f32")] == (2, 1, 4)
    assert counts[("m16n8k8", "tf32", "f32")] == (4, 2, 4)
    assert counts[("m16n8k4", "tf32", "f32")] == (2, 1, 4)
    assert counts[("m8n8k4", "f64", "f64")] == (1, 1, 2)
    with pytest.raises(ValueError, match="does not exist"):
        fr.mma_shape("m16n8k16", "tf32", "f32")


def test_known_positions_from_the_ptx_isa_figures():
    a = fr.MMA_SHAPES[("m16n8k16", "f16", "f32")].a.table
    assert a[0][:8] == ((0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9))
    assert a[5][0] == (1, 2)  # lane 5: groupID 1, threadID_in_group 1
    tf32 = fr.MMA_SHAPES[("m16n8k8", "tf32", "f32")].a.table
    assert tf32[6] == ((1, 2), (9, 2), (1, 6), (9, 6))
    c = fr.MMA_SHAPES[("m16n8k16", "bf16", "f32")].c.table
    assert c[31] == ((7, 6), (7, 7), (15, 6), (15, 7))


def _ldmatrix(smem: np.ndarray, row_of_lane, num: int, trans: bool) -> np.ndarray:
    """Simulate ldmatrix.x{num}: lane l supplies a row address (as a (row, col0) of smem) for
    matrix l//8 row l%8; returns [lane, register, half] of the received elements."""
    mats = []
    for i in range(num):
        rows = [row_of_lane(8 * i + r) for r in range(8)]
        mats.append(np.array([[smem[r0, c0 + j] for j in range(8)] for (r0, c0) in rows]))
    out = np.empty((32, num, 2))
    for lane in range(32):
        for i in range(num):
            for h, (r, c) in enumerate(fr.ldmatrix_elements(lane, trans)):
                out[lane, i, h] = mats[i][r, c]
    return out


def test_ldmatrix_x4_of_a_row_major_tile_gives_the_mma_a_fragment(rng):
    a = rng.standard_normal((16, 16))
    regs = _ldmatrix(a, lambda lane: (lane % 16, 8 * (lane // 16)), 4, trans=False)
    frag = fr.MMA_SHAPES[("m16n8k16", "f16", "f32")].a
    np.testing.assert_array_equal(regs.reshape(32, 8), _scatter(a, frag))
    assert fr.ldmatrix_row_provider(13) == (1, 5)


def test_ldmatrix_x2_trans_of_a_row_major_k_by_n_tile_gives_the_mma_b_fragment(rng):
    b = rng.standard_normal((16, 8))  # K x N, row-major in shared memory
    regs = _ldmatrix(b, lambda lane: (lane % 16, 0), 2, trans=True)
    frag = fr.MMA_SHAPES[("m16n8k16", "f16", "f32")].b
    np.testing.assert_array_equal(regs.reshape(32, 4), _scatter(b, frag))


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_accumulator_layout_computes_a_64xn_product(n, rng):
    table = fr.wgmma_accumulator_layout(n)
    assert len(table) == 128 and len(table[0]) == fr.wgmma_accumulator_regs(n) == n // 2
    a, b = rng.standard_normal((64, 16)), rng.standard_normal((16, n))
    full = a @ b
    regs = np.array([[full[r, c] for (r, c) in th] for th in table])
    back = np.full((64, n), np.nan)
    for th, elems in enumerate(table):
        for i, (r, c) in enumerate(elems):
            back[r, c] = regs[th, i]
    np.testing.assert_array_equal(back, full)
    assert table[37][0] == (16 + 1, 2)  # warp 1, lane 5


def test_wgmma_shared_layouts_are_bijections_with_16_byte_chunks():
    offsets = {
        fr.wgmma_smem_offset_interleaved(r, kb, lbo=128, sbo=256)
        for r in range(64)
        for kb in range(32)
    }
    assert offsets == set(range(64 * 32))
    assert fr.wgmma_smem_offset_interleaved(9, 17, lbo=128, sbo=256) == 256 + 128 + 16 + 1
    swz = [fr.wgmma_smem_offset_128b(r, kb) for r in range(16) for kb in range(128)]
    assert sorted(swz) == list(range(16 * 128))
    for r in range(8):
        for chunk in range(8):
            base = fr.wgmma_smem_offset_128b(r, 16 * chunk)
            assert base % 16 == 0 and base // 16 % 8 == chunk ^ r
            assert [fr.wgmma_smem_offset_128b(r, 16 * chunk + j) for j in range(16)] == list(
                range(base, base + 16)
            )
    with pytest.raises(ValueError, match="128 bytes"):
        fr.wgmma_smem_offset_128b(0, 128)


def test_tables_reject_a_layout_that_misses_or_repeats_an_element():
    with pytest.raises(AssertionError, match="exactly once"):
        fr._table(16, 8, 4, lambda g, t, i: (g, 2 * t + (i & 1)), "broken")
