"""Host side of the layout kernels: a caller's array (any strides, leading batch dimensions) to
and from the solver's column-major workspaces, identities, pivot shifts and diagonal reductions.
Each launch is a cached KernelStep per signature; nothing here computes on the host."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..driver.facts import device_facts
from ..memory import layout as mlayout
from ..memory.array import DeviceArray
from ..ptx.launch_plan import KernelStep, PlanCache
from .kernels.layout_kernels import COPY_THREADS, DIAG_THREADS, CopySpec, DiagSpec, PivotShiftSpec

PLANS = PlanCache("solver.layout")
MAX_GRID_YZ = 65535


class Strided(NamedTuple):
    """A batch of matrices: ``batch`` rows x cols, element strides (row, col, batch)."""

    ptr: int
    rows: int
    cols: int
    batch: int
    s_row: int
    s_col: int
    s_batch: int


def strided(a: DeviceArray) -> tuple[DeviceArray, Strided]:
    """``a`` (..., rows, cols) as one strided batch; a view whose batch dimensions do not merge
    into one stride is copied first (the returned array keeps the memory alive)."""
    *bshape, rows, cols = a.shape
    batch = int(np.prod(bshape, dtype=np.int64)) if bshape else 1
    strides = mlayout.reshape_strides(a.shape, a.strides, (batch, rows, cols), "C")
    if strides is None:
        a = a.copy()
        strides = mlayout.reshape_strides(a.shape, a.strides, (batch, rows, cols), "C")
    es = a.itemsize
    sb, sr, sc = (s // es for s in strides)
    return a, Strided(a.ptr, rows, cols, batch, sr, sc, sb)


def colmajor(batch: int, rows: int, cols: int, dtype: str) -> tuple[DeviceArray, Strided]:
    """A new batch of column-major rows x cols matrices (ld = rows), stored as (batch, cols, rows)."""
    arr = DeviceArray((batch, cols, rows), dtype)
    return arr, Strided(arr.ptr, rows, cols, batch, 1, rows, rows * cols)


def _copy_step(dtype: str, fill: str, rows: int, cols: int, batch: int) -> KernelStep:
    facts = device_facts()
    key = ("copy", dtype, fill, rows, cols, batch, facts.ordinal)
    grid = ((rows + COPY_THREADS - 1) // COPY_THREADS, min(cols, MAX_GRID_YZ), min(batch, MAX_GRID_YZ))
    return PLANS.get_or_build(key, lambda: KernelStep(CopySpec(arch=facts.arch, dtype=dtype, fill=fill),
                                                      grid, (COPY_THREADS,), bind=None))


def copy(dtype: str, src: Strided, dst: Strided, stream: int, fill: str = "copy") -> None:
    """dst = src (fill "copy", "conj" (complex only), "lower", "upper", "unit_lower") or the identity (fill "eye"; src unused)."""
    if src.rows == 0 or src.cols == 0 or src.batch == 0:
        return
    step = _copy_step(dtype, fill, src.rows, src.cols, src.batch)
    step.launch((src.rows, src.cols, src.batch, src.ptr, src.s_row, src.s_col, src.s_batch,
                 dst.ptr, dst.s_row, dst.s_col, dst.s_batch), stream)


def eye(dtype: str, dst: Strided, stream: int) -> None:
    copy(dtype, dst, dst, stream, fill="eye")


def shift_pivots(count: int, src: int, dst: int, delta: int, stream: int) -> None:
    if count == 0:
        return
    facts = device_facts()
    key = ("pivots", count, facts.ordinal)
    step = PLANS.get_or_build(key, lambda: KernelStep(PivotShiftSpec(arch=facts.arch),
                                                      ((count + COPY_THREADS - 1) // COPY_THREADS,),
                                                      (COPY_THREADS,), bind=None))
    step.launch((count, src, dst, delta), stream)


def diag(dtype: str, mode: str, n: int, batch: int, a: int, lda: int, stride_a: int, ipiv: int,
         stride_ipiv: int, out: int, out2: int, stream: int) -> None:
    """det / slogdet of each factor's diagonal (``solver_diag``)."""
    facts = device_facts()
    key = ("diag", dtype, mode, batch, facts.ordinal)
    step = PLANS.get_or_build(key, lambda: KernelStep(DiagSpec(arch=facts.arch, dtype=dtype, mode=mode),
                                                      ((batch + DIAG_THREADS - 1) // DIAG_THREADS,),
                                                      (DIAG_THREADS,), bind=None))
    step.launch((n, batch, a, lda, stride_a, ipiv, stride_ipiv, out, out2), stream)
