"""Tensor-core fragment plans: how an ``mma.sync`` operand's fragment maps onto shared-memory
tiles loaded with ``ldmatrix``, derived from (and checked against) the fragment tables of
``oxicuda.ptx.fragments``. Small data read by every mma.sync kernel family (GEMM, conv,
attention) and checked where it is defined.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import fragments
from .builder import KernelBuilder, Value

__all__ = ["MMA_SHAPE_FOR", "OperandPlan", "accumulator_plan", "operand_plan", "quad_select"]

#: mma.sync shape per input type
MMA_SHAPE_FOR = {"f16": "m16n8k16", "bf16": "m16n8k16", "tf32": "m16n8k8"}


def _lane_affine(values: list[int], what: str) -> tuple[int, int]:
    """(cg, ct) such that values[lane] - values[0] == cg * (lane >> 2) + ct * (lane % 4)."""
    cg, ct = values[4] - values[0], values[1] - values[0]
    for lane, v in enumerate(values):
        if v - values[0] != cg * (lane >> 2) + ct * (lane % 4):
            raise AssertionError(f"{what}: the fragment is not affine in (groupID, threadID_in_group)")
    return cg, ct


@dataclass(frozen=True)
class OperandPlan:
    """How one operand's fragment maps onto shared memory, in (mn, k) element coordinates:
    ``origins[r]``: the (mn, k) origin of the 8x8-b16 matrix that ldmatrix loads into register r;
    ``elems[e]``: lane 0's (mn, k) of fragment element e; ``lane_mn``/``lane_k``: (cg, ct) lane
    deltas; ``per_reg`` elements per register."""

    origins: tuple[tuple[int, int], ...]
    elems: tuple[tuple[int, int], ...]
    lane_mn: tuple[int, int]
    lane_k: tuple[int, int]
    per_reg: int


def operand_plan(dtype: str, operand: str) -> OperandPlan:
    """The plan of operand "a" or "b" for mma input type ``dtype``, checked element by element
    against the ldmatrix lane mapping of ``fragments.ldmatrix_elements``."""
    shape = fragments.mma_shape(MMA_SHAPE_FOR[dtype], dtype, "f32")
    frag = shape.a if operand == "a" else shape.b
    es = 4 if dtype == "tf32" else 2
    k_per_matrix = 16 // es

    def mn_k(rc: tuple[int, int]) -> tuple[int, int]:
        return rc if operand == "a" else (rc[1], rc[0])

    coords = [[mn_k(rc) for rc in lane] for lane in frag.table]
    origins = []
    for r in range(frag.regs):
        mn, k = coords[0][r * frag.per_reg]
        origins.append((mn - mn % 8, k - k % k_per_matrix))
    for lane in range(fragments.WARP):
        for e, (mn, k) in enumerate(coords[lane]):
            r, h = divmod(e, frag.per_reg)
            row, col = fragments.ldmatrix_elements(lane)[h]
            got = (origins[r][0] + row, origins[r][1] + (col if es == 2 else col // 2))
            if got != (mn, k):
                raise AssertionError(f"ldmatrix plan for {dtype} {operand}: lane {lane} element {e} "
                                     f"would get {got}, the fragment table says {(mn, k)}")
    lane_mn = _lane_affine([coords[lane][0][0] for lane in range(32)], f"{dtype} {operand} mn")
    lane_k = _lane_affine([coords[lane][0][1] for lane in range(32)], f"{dtype} {operand} k")
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for e in range(frag.elements):
            mn0, k0 = coords[0][e]
            want = (mn0 + lane_mn[0] * g + lane_mn[1] * t, k0 + lane_k[0] * g + lane_k[1] * t)
            if coords[lane][e] != want:
                raise AssertionError(f"{dtype} {operand}: element {e} is not lane-affine")
    return OperandPlan(tuple(origins), tuple(coords[0]), lane_mn, lane_k, frag.per_reg)


def accumulator_plan() -> tuple[tuple[tuple[int, int], ...], tuple[int, int], tuple[int, int]]:
    """m16n8 f32 accumulator: lane 0's (row, col) per register and the (cg, ct) lane deltas."""
    table = fragments.mma_shape("m16n8k16", "f16", "f32").c.table
    rows = _lane_affine([table[lane][0][0] for lane in range(32)], "C row")
    cols = _lane_affine([table[lane][0][1] for lane in range(32)], "C col")
    return table[0], rows, cols


def quad_select(kb: KernelBuilder, j: Value, values: list[int]) -> Value | int:
    """values[j] for a lane quarter j in 0..3 (affine in j's two bits: checked): which of the four
    8x8 matrices of an ``ldmatrix.x4`` a lane's row address points into."""
    v0, d1, d2 = values[0], values[1] - values[0], values[2] - values[0]
    if values[3] != v0 + d1 + d2:
        raise AssertionError(f"ldmatrix origins {values} are not affine in the matrix index bits")
    out = kb.mul(kb.and_(j, 1), d1) if d1 else kb.mov(0, "u32")
    if d2:
        kb.mad(kb.shr(j, 1), d2, out, out=out)
    return kb.add(out, v0) if v0 else out
