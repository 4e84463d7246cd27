"""The row frame the backward row kernels share: which row a thread works on, which elements of
it, and the all-reduce over the threads of a row (a warp per row for short rows, a CTA per row
for long ones), plus the checks the backward calls share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxicuda.memory.array import DeviceArray
from oxicuda.ptx.builder import KernelBuilder, Value

from . import _common as C

#: provisional thresholds (reasoned, not yet measured on the H200): rows up to WARP_MAX_COLS
#: elements go one per warp, longer ones one per CTA
DISPATCH = {"WARP_MAX_COLS": 1024, "WARP_THREADS": 128, "BLOCK_THREADS": 512}
VARIANTS = ("warp", "block")


@dataclass
class RowFrame:
    """The per-thread view of one row: ``row`` index, ``start``/``step`` of its element loop
    (``vec`` elements per access), and ``reduce`` (all-reduce of f32 values over the row's threads)."""

    kb: KernelBuilder
    variant: str
    threads: int
    vec: int
    row: Value = None
    member: Value = None
    start: Value = None
    step: int = 0
    _warp: Value = None
    _lane: Value = None
    _scratch: object = None

    def __post_init__(self) -> None:
        kb = self.kb
        tid = kb.tid()
        self._lane, self._warp = kb.and_(tid, 31), kb.shr(tid, 5)
        warps = self.threads // 32
        if self.variant == "warp":
            self.row, self.member, group = kb.mad(kb.ctaid(), warps, self._warp), self._lane, 32
        else:
            self.row, self.member, group = kb.ctaid(), tid, self.threads
            self._scratch = kb.shared("scratch", "f32", 2 * warps)
        self.start = kb.mul(self.member, self.vec) if self.vec > 1 else self.member
        self.step = group * self.vec

    def reduce(self, values: tuple[Value, ...]) -> tuple[Value, ...]:
        """Every thread of the row gets the sums of ``values`` over the row's threads (at most 2)."""
        if self.variant == "warp":
            return C.warp_allreduce(self.kb, values, C.combine_sum)
        return C.block_allreduce(self.kb, values, C.combine_sum, self._scratch, self.threads // 32,
                                 self._warp, self._lane)


def row_geometry(variant: str, rows: int) -> tuple[int, int]:
    """(grid, threads) of a row kernel of ``variant`` over ``rows`` rows."""
    if variant == "warp":
        threads = DISPATCH["WARP_THREADS"]
        return -(-rows // (threads // 32)), threads
    return rows, DISPATCH["BLOCK_THREADS"]


def choose_variant(cols: int, algo: str | None, op: str) -> str:
    """``algo`` when given (checked), else warp rows up to ``WARP_MAX_COLS`` and CTA rows beyond."""
    if algo is not None:
        if algo not in VARIANTS:
            raise ValueError(f"{op}: algo={algo!r}; allowed None, 'warp', 'block'")
        return algo
    return "warp" if cols <= DISPATCH["WARP_MAX_COLS"] else "block"


def row_vectors(elem: str) -> tuple[int, ...]:
    """The vector widths the row kernels use: 16-byte accesses (f32 x4, halves x4 = 8 bytes,
    x2) where the row length and pointers allow."""
    return (4,) if elem == "f32" else (4, 2)


def check_pair(a: object, b: object, op: str, names: tuple[str, str]) -> tuple[DeviceArray, DeviceArray]:
    """Two float arrays of one shape and dtype (``a`` sets the dtype), C-contiguous; TypeError or
    ValueError naming both otherwise."""
    aa = C.as_float_array(a, op, names[0])
    ba = C.as_float_array(b, op, names[1])
    if aa.dtype != ba.dtype:
        raise TypeError(f"{op}: {names[0]} has dtype {C.dtype_name_of(aa)} but {names[1]} has "
                        f"{C.dtype_name_of(ba)}; they must match")
    if tuple(aa.shape) != tuple(ba.shape):
        raise ValueError(f"{op}: {names[0]} has shape {tuple(aa.shape)} but {names[1]} has "
                         f"{tuple(ba.shape)}; they must match")
    return C.contiguous(aa), C.contiguous(ba)


def u32(*values: int) -> tuple[np.uint32, ...]:
    return tuple(np.uint32(v) for v in values)
