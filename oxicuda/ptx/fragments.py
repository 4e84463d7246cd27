"""Tensor-core fragment layouts as data, shared by the builder (register counts) and the emulator
(which computes ``mma``/``ldmatrix``/``wgmma`` from these tables).

Source: PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8 / m16n8k4 / m8n8k4", "ldmatrix",
and "Register Fragments and Shared Memory Matrix Layouts" of wgmma. With
``groupID = lane >> 2`` and ``tig = lane % 4`` (threadID_in_group):

- m16n8k16 .f16/.bf16 A (16x16, 4 regs, 8 halves a0..a7): row = groupID + 8*((i>>1)&1),
  col = 2*tig + (i&1) + 8*(i>>2); B (16x8, 2 regs, b0..b3): row = 2*tig + (i&1) + 8*(i>>1),
  col = groupID; C/D (16x8, c0..c3): row = groupID + 8*(i>>1), col = 2*tig + (i&1).
- m16n8k8 .f16/.bf16 A (16x8, 2 regs, a0..a3): row = groupID + 8*(i>>1), col = 2*tig + (i&1);
  B (8x8, 1 reg, b0, b1): row = 2*tig + i, col = groupID.
- m16n8k8 .tf32 A (16x8, 4 regs): row = groupID + 8*(i&1), col = tig + 4*(i>>1);
  B (8x8, 2 regs): row = tig + 4*i, col = groupID.
- m16n8k4 .tf32 A (16x4, 2 regs): row = groupID + 8*i, col = tig; B (4x8, 1 reg): row = tig,
  col = groupID.
- m8n8k4 .f64 A (8x4, 1 reg): row = groupID, col = tig; B (4x8): row = tig, col = groupID;
  C/D (8x8, 2 regs): row = groupID, col = 2*tig + i.
- m16n8k4 / m16n8k8 / m16n8k16 .f64 (sm_90, PTX 7.8; one f64 element per register): A (16xK,
  K/2 regs): row = groupID + 8*(i&1), col = tig + 4*(i>>1); B (Kx8, K/4 regs): row = tig + 4*i,
  col = groupID; C/D (16x8, 4 regs): row = groupID + 8*(i>>1), col = 2*tig + (i&1) (the tf32
  layouts with f64 elements; CUTLASS's SM90_16x8x{4,8,16}_F64F64F64F64_TN traits agree).

Element ``i`` of a fragment lives in register ``i // per_reg`` (the low half first for packed
16-bit types). Every table is checked at import: each (row, col) is held exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Layout = tuple[tuple[tuple[int, int], ...], ...]  # [lane][element] -> (row, col)
WARP = 32


def _table(
    rows: int,
    cols: int,
    per_lane: int,
    fn: Callable[[int, int, int], tuple[int, int]],
    name: str,
    lanes: int = WARP,
) -> Layout:
    table = tuple(
        tuple(fn(lane >> 2, lane % 4, i) for i in range(per_lane)) for lane in range(lanes)
    )
    seen = sorted(rc for lane in table for rc in lane)
    expected = [(r, c) for r in range(rows) for c in range(cols)]
    if seen != expected:
        raise AssertionError(
            f"fragment table {name} does not cover its {rows}x{cols} matrix exactly once"
        )
    return table


@dataclass(frozen=True)
class Fragment:
    """One operand's layout: matrix shape, registers per lane, elements per register, the table."""

    rows: int
    cols: int
    regs: int
    per_reg: int
    table: Layout

    @property
    def elements(self) -> int:
        return self.regs * self.per_reg


@dataclass(frozen=True)
class MmaShape:
    """An ``mma.sync`` shape/type combination that exists, with its operand fragments."""

    shape: str
    m: int
    n: int
    k: int
    a_type: str
    c_type: str
    a: Fragment
    b: Fragment
    c: Fragment
    min_sm: int
    min_ptx: str

    @property
    def a_regs(self) -> int:
        return self.a.regs

    @property
    def b_regs(self) -> int:
        return self.b.regs

    @property
    def c_regs(self) -> int:
        return self.c.regs

    @property
    def a_reg_type(self) -> str:
        """The builder type of an A/B register (b32 for packed halves and tf32, f64 for f64)."""
        return "f64" if self.a_type == "f64" else "b32"

    @property
    def c_reg_type(self) -> str:
        return {"f32": "f32", "f64": "f64", "f16": "f16x2"}[self.c_type]


def _frag(rows: int, cols: int, regs: int, per_reg: int, fn, name: str) -> Fragment:
    return Fragment(rows, cols, regs, per_reg, _table(rows, cols, regs * per_reg, fn, name))


# -- per-shape layouts ----------------------------------------------------------------------------
_C16x8_F32 = _frag(16, 8, 4, 1, lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), "C m16n8 f32")
_C16x8_F16 = _frag(16, 8, 2, 2, lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), "C m16n8 f16")
_A16x16_H = _frag(
    16,
    16,
    4,
    2,
    lambda g, t, i: (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)),
    "A m16n8k16",
)
_B16x8_H = _frag(16, 8, 2, 2, lambda g, t, i: (2 * t + (i & 1) + 8 * (i >> 1), g), "B m16n8k16")
_A16x8_H = _frag(16, 8, 2, 2, lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), "A m16n8k8 f16")
_B8x8_H = _frag(8, 8, 1, 2, lambda g, t, i: (2 * t + i, g), "B m16n8k8 f16")
_A16x8_TF32 = _frag(
    16, 8, 4, 1, lambda g, t, i: (g + 8 * (i & 1), t + 4 * (i >> 1)), "A m16n8k8 tf32"
)
_B8x8_TF32 = _frag(8, 8, 2, 1, lambda g, t, i: (t + 4 * i, g), "B m16n8k8 tf32")
_A16x4_TF32 = _frag(16, 4, 2, 1, lambda g, t, i: (g + 8 * i, t), "A m16n8k4 tf32")
_B4x8_TF32 = _frag(4, 8, 1, 1, lambda g, t, i: (t, g), "B m16n8k4 tf32")
_A8x4_F64 = _frag(8, 4, 1, 1, lambda g, t, i: (g, t), "A m8n8k4 f64")
_B4x8_F64 = _frag(4, 8, 1, 1, lambda g, t, i: (t, g), "B m8n8k4 f64")
_C8x8_F64 = _frag(8, 8, 2, 1, lambda g, t, i: (g, 2 * t + i), "C m8n8k4 f64")
_C16x8_F64 = _frag(16, 8, 4, 1, lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), "C m16n8 f64")
_A16xK_F64 = {k: _frag(16, k, k // 2, 1, lambda g, t, i: (g + 8 * (i & 1), t + 4 * (i >> 1)), f"A m16n8k{k} f64")
              for k in (4, 8, 16)}
_BKx8_F64 = {k: _frag(k, 8, k // 4, 1, lambda g, t, i: (t + 4 * i, g), f"B m16n8k{k} f64") for k in (4, 8, 16)}


def _mma(
    shape: str, a_type: str, c_type: str, a: Fragment, b: Fragment, c: Fragment, sm: int, ptx: str
) -> MmaShape:
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return MmaShape(shape, int(m), int(n), int(k), a_type, c_type, a, b, c, sm, ptx)


#: (shape, a/b type, accumulator type) -> MmaShape, for the combinations PTX defines.
MMA_SHAPES: dict[tuple[str, str, str], MmaShape] = {
    (s.shape, s.a_type, s.c_type): s
    for s in (
        _mma("m16n8k16", "f16", "f32", _A16x16_H, _B16x8_H, _C16x8_F32, 80, "7.0"),
        _mma("m16n8k16", "f16", "f16", _A16x16_H, _B16x8_H, _C16x8_F16, 80, "7.0"),
        _mma("m16n8k16", "bf16", "f32", _A16x16_H, _B16x8_H, _C16x8_F32, 80, "7.0"),
        _mma("m16n8k8", "f16", "f32", _A16x8_H, _B8x8_H, _C16x8_F32, 75, "6.5"),
        _mma("m16n8k8", "f16", "f16", _A16x8_H, _B8x8_H, _C16x8_F16, 75, "6.5"),
        _mma("m16n8k8", "bf16", "f32", _A16x8_H, _B8x8_H, _C16x8_F32, 80, "7.0"),
        _mma("m16n8k8", "tf32", "f32", _A16x8_TF32, _B8x8_TF32, _C16x8_F32, 80, "7.0"),
        _mma("m16n8k4", "tf32", "f32", _A16x4_TF32, _B4x8_TF32, _C16x8_F32, 80, "7.0"),
        _mma("m8n8k4", "f64", "f64", _A8x4_F64, _B4x8_F64, _C8x8_F64, 80, "7.0"),
        *(_mma(f"m16n8k{k}", "f64", "f64", _A16xK_F64[k], _BKx8_F64[k], _C16x8_F64, 90, "7.8") for k in (4, 8, 16)),
    )
}


def mma_shape(shape: str, a_type: str, c_type: str) -> MmaShape:
    """The MmaShape for a combination, or ValueError listing those that exist."""
    try:
        return MMA_SHAPES[(shape, a_type, c_type)]
    except KeyError:
        raise ValueError(
            f"mma {shape} {a_type}->{c_type} does not exist; known: {sorted(MMA_SHAPES)}"
        ) from None


# -- ldmatrix -------------------------------------------------------------------------------------
def ldmatrix_row_provider(lane: int) -> tuple[int, int]:
    """Which (matrix, row) of an ``ldmatrix .x4`` this lane supplies the shared address of
    (lanes 8i..8i+7 give rows 0..7 of matrix i; .x1/.x2 use only the first 8/16 lanes)."""
    return lane // 8, lane % 8


def ldmatrix_elements(lane: int, trans: bool = False) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (row, col) of the two b16 elements (low half, high half) this lane receives from each
    8x8 matrix: row = lane>>2, col = 2*(lane%4)+j; with ``.trans`` row and col swap."""
    g, t = lane >> 2, lane % 4
    pairs = ((g, 2 * t), (g, 2 * t + 1))
    return tuple((c, r) for r, c in pairs) if trans else pairs  # type: ignore[return-value]


LDMATRIX_TABLE: Layout = _table(8, 8, 2, lambda g, t, i: (g, 2 * t + i), "ldmatrix m8n8")


# -- wgmma ----------------------------------------------------------------------------------------
WARPGROUP = 128


def wgmma_accumulator_regs(n: int) -> int:
    """f32 accumulator registers per thread of ``wgmma m64nNk*``: 64*N / 128 = N/2."""
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"wgmma N={n}; a multiple of 8 in 8..256")
    return n // 2


def wgmma_accumulator_layout(n: int) -> Layout:
    """[thread 0..127][register i] -> (row, col) of the m64nN f32 accumulator: warp w of the
    warpgroup holds rows 16w..16w+15; row = 16w + groupID + 8*((i>>1)&1),
    col = 8*(i>>2) + 2*tig + (i&1)."""
    regs = wgmma_accumulator_regs(n)

    def at(thread: int, i: int) -> tuple[int, int]:
        w, lane = thread // 32, thread % 32
        g, t = lane >> 2, lane % 4
        return 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)

    table = tuple(tuple(at(th, i) for i in range(regs)) for th in range(WARPGROUP))
    seen = sorted(rc for row in table for rc in row)
    if seen != [(r, c) for r in range(64) for c in range(n)]:
        raise AssertionError(
            f"wgmma accumulator layout m64n{n} does not cover the tile exactly once"
        )
    return table


def wgmma_smem_offset_interleaved(row: int, kbyte: int, lbo: int, sbo: int) -> int:
    """Byte offset of (row, byte kbyte along K) of a K-major operand in the no-swizzle layout:
    8-row x 16-byte core matrices stored as 128 contiguous bytes; ``lbo`` is the distance between
    core matrices adjacent in K, ``sbo`` between those adjacent in M/N."""
    return (row // 8) * sbo + (kbyte // 16) * lbo + (row % 8) * 16 + kbyte % 16


def swizzle_128b(offset: int) -> int:
    """The 128-byte swizzle of a byte offset within a 1024-byte atom (8 rows of 128 bytes):
    the 16-byte chunk index (bits 4-6) is XORed with the row index (bits 7-9)."""
    return offset ^ (((offset >> 7) & 7) << 4)


def wgmma_smem_offset_128b(row: int, kbyte: int, sbo: int = 1024) -> int:
    """Byte offset of (row, kbyte) of a K-major operand with 128B swizzle: rows of 128 bytes
    (64 halves) of K, 8-row atoms ``sbo`` bytes apart, the swizzle applied within each atom."""
    if not 0 <= kbyte < 128:
        raise ValueError(f"kbyte={kbyte}: a 128B-swizzled row holds 128 bytes of K")
    return (row // 8) * sbo + swizzle_128b((row % 8) * 128 + kbyte)
