"""Triangular solves with a CSR matrix: the level analysis, made once per (matrix, triangle) on
the device and cached on the matrix, then one sync-free solve launch per right-hand side."""

from __future__ import annotations

import numpy as np

from oxicuda import primitives as prim
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.primitives.plan import P, W, align, bind, fill_step
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan

from . import device_ops as D
from .kernels.sptrsv import THREADS, SptrsvSpec


def _plan(spec: SptrsvSpec, n: int) -> LaunchPlan:
    """levels: pointers (indptr, indices, level); solve: (indptr, indices, data, b, x, order).
    The workspace holds the ticket counter and a flag per row, zeroed first."""
    a = spec.arch
    if spec.variant == "levels":
        args = bind(P(0), P(1), P(2), W(4), W(0), n)
    else:
        args = bind(P(0), P(1), P(2), P(3), P(4), W(4), W(0), P(5), n)
    steps = [fill_step(a, W(0), n + 1), KernelStep(spec, n, THREADS, args)]
    return LaunchPlan(f"sptrsv {spec.variant}", steps, align(4 * (n + 1)))


def _cached_plan(spec: SptrsvSpec, n: int) -> LaunchPlan:
    return D.PLANS.get_or_build((D.device_facts().ordinal, spec, n), lambda: _plan(spec, n))


def analysis(A, lower: bool, unit: bool, stream: object) -> DeviceArray:
    """The row order of the solve (rows sorted by level), cached on ``A``; raises for a zero or
    missing diagonal entry (``unit`` False) before anything is solved."""
    cache = A.__dict__.setdefault("_sptrsv", {})
    key = (lower, unit)
    if key in cache:
        return cache[key]
    n = A.shape[0]
    if not unit:
        d = A.diagonal()
        flags = empty((n,), np.uint32, stream=stream)
        from .kernels.convert import ConvertSpec

        D.run1(ConvertSpec(arch=D.arch(), variant="nonzero_flag", dtype=d.dtype.name, to=d.dtype.name),
               D.blocks(n), (d.ptr, flags.ptr, n), stream)
        first_zero = int(prim.argmin(flags, stream=stream).get())
        if int(flags[first_zero:first_zero + 1].get()[0]) == 0:
            raise ValueError(f"spsolve_triangular: A is singular: its diagonal entry in row {first_zero} is "
                             "zero (or missing); a non-unit triangular solve needs every a_ii != 0")
    level = empty((n,), np.int32, stream=stream)
    _cached_plan(SptrsvSpec(arch=D.arch(), variant="levels", lower=lower), n).run(
        (A.indptr.ptr, A.indices.ptr, level.ptr), (), stream)
    order = prim.argsort(level, stream=stream)
    cache[key] = order
    return order


def solve(A, b: DeviceArray, x: DeviceArray, lower: bool, unit: bool, stream: object) -> None:
    """x = A^-1 b for one right-hand side (contiguous vectors of A's dtype)."""
    n = A.shape[0]
    if n == 0:
        return
    order = analysis(A, lower, unit, stream)
    spec = SptrsvSpec(arch=D.arch(), variant="solve", dtype=A.dtype.name, lower=lower, unit=unit)
    _cached_plan(spec, n).run((A.indptr.ptr, A.indices.ptr, A.data.ptr, b.ptr, x.ptr, order.ptr), (), stream)
