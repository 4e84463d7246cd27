"""LU with partial pivoting on the device, at the pointer level (LAPACK/cuSOLVER semantics,
column-major, 1-based pivots, ``info``: 0, or i > 0 when U(i, i) is exactly zero).

- ``getrf_ptr``: small matrices (dispatch.small_path) factor in one CTA each with the matrix in
  shared memory (``solver_getf2`` space "shared", one launch for a whole batch); larger ones run
  the blocked right-looking algorithm: per panel of ``GETRF_NB`` columns the ``solver_getf2``
  panel kernel (pivot search on the device), ``solver_laswp`` on the columns outside the panel,
  then oxicuda.blas ``trsm_ptr`` (U12 = L11^-1 A12) and ``gemm_colmajor`` (A22 -= L21 U12,
  strided-batched over the batch).
- ``getrs_ptr``: op(A) X = B with the factor: ``solver_getrs_small`` (one CTA per matrix) for
  small n, else ``solver_laswp`` and two oxicuda.blas trsm calls.

Plans (kernel steps with fixed geometry) are cached per call signature, device included.
"""

from __future__ import annotations

from typing import NamedTuple

from ..blas import level3
from ..blas import operands as op
from ..blas.gemm_core import gemm_colmajor
from ..driver.backend import api
from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from . import dispatch
from .kernels.common import esize
from .kernels.lu_kernels import (
    GETRS_THREADS,
    LASWP_THREADS,
    Getf2Spec,
    GetrsSmallSpec,
    LaswpSpec,
)

PLANS = PlanCache("solver.lu")
MAX_GRID = 65535


def _cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


class GetrfProblem(NamedTuple):
    m: int
    n: int
    batch: int
    dtype: str
    small: bool
    nb: int
    device: int


class GetrfPlan:
    """Kernel steps of one getrf signature; ``run`` launches the whole factorization."""

    def __init__(self, p: GetrfProblem, facts) -> None:
        self.p = p
        arch = facts.arch
        if p.small:
            self.panel = KernelStep(Getf2Spec(arch=arch, dtype=p.dtype, space="shared"), (p.batch,),
                                    (Getf2Spec(dtype=p.dtype, space="shared").threads,), bind=None,
                                    shared_mem=p.m * p.n * esize(p.dtype))
        else:
            spec = Getf2Spec(arch=arch, dtype=p.dtype, space="global")
            self.panel = KernelStep(spec, (p.batch,), (spec.threads,), bind=None)
            self.swap = KernelStep(LaswpSpec(arch=arch, dtype=p.dtype), (max(1, _cdiv(p.n, LASWP_THREADS)), p.batch),
                                   (LASWP_THREADS,), bind=None)

    @property
    def kernels(self) -> tuple[str, ...]:
        steps = (self.panel,) if self.p.small else (self.panel, self.swap)
        return tuple(s.function.name for s in steps)

    def run(self, a: int, lda: int, stride_a: int, ipiv: int, stride_ipiv: int, info: int, stream: int) -> None:
        p = self.p
        api().memset_d8(info, 0, 4 * p.batch, stream or None)
        if p.small:
            self.panel.launch((p.m, p.n, a, lda, stride_a, ipiv, stride_ipiv, info, 0), stream)
            return
        es, kmax = esize(p.dtype), min(p.m, p.n)
        for j0 in range(0, kmax, p.nb):
            w = min(p.nb, kmax - j0)
            ajj = a + (j0 + j0 * lda) * es
            self.panel.launch((p.m - j0, w, ajj, lda, stride_a, ipiv + 4 * j0, stride_ipiv, info, j0), stream)
            if p.n > w:
                self.swap.launch((p.n, a, lda, stride_a, ipiv, stride_ipiv, j0, j0 + w, j0, w), stream)
            rest = p.n - j0 - w
            if rest <= 0:
                continue
            a12 = a + (j0 + (j0 + w) * lda) * es
            below = p.m - j0 - w
            # per matrix: gemm's overlap check is exact for disjoint blocks of one matrix only
            for z in range(p.batch):
                off = z * stride_a * es
                level3.trsm_ptr("L", "L", "N", "U", w, rest, 1.0, ajj + off, lda, a12 + off, lda,
                                dtype=p.dtype, stream=stream)
                if below > 0:
                    gemm_colmajor("N", "N", below, rest, w, -1.0, ajj + w * es + off, lda, a12 + off, lda, 1.0,
                                  a12 + w * es + off, lda, dtype=p.dtype, stream=stream, _owned=True)


def getrf_plan(m: int, n: int, batch: int, dtype: str) -> GetrfPlan:
    facts = device_facts()
    small = dispatch.small_path(m, n, dtype, facts.smem_per_block_optin)
    nb = 0 if small else dispatch.block_size("GETRF_NB")
    key = GetrfProblem(m, n, batch, dtype, small, nb, facts.ordinal)
    return PLANS.get_or_build(key, lambda: GetrfPlan(key, facts))


def getrf_ptr(m: int, n: int, a: int, lda: int, ipiv: int, info: int, *, dtype: str, batch: int = 1,
              stride_a: int = 0, stride_ipiv: int = 0, stream: object = None) -> None:
    """LU with partial pivoting of ``batch`` column-major m x n matrices at ``a`` (``stride_a``
    elements apart), in place: L (unit, below the diagonal) and U. ``ipiv``: min(m, n) int32
    1-based pivots per matrix (``stride_ipiv`` apart); ``info``: one int32 per matrix. Checked
    arguments only (the public layers check shapes, pointers and dtypes)."""
    if m == 0 or n == 0 or batch == 0:
        if batch and info:
            api().memset_d8(info, 0, 4 * batch, op.stream_of(stream) or None)
        return
    _check_batch(batch, "getrf")
    getrf_plan(m, n, batch, dtype).run(a, lda, stride_a, ipiv, stride_ipiv, info, op.stream_of(stream))


def _check_batch(batch: int, who: str) -> None:
    if batch > MAX_GRID:
        raise ValueError(f"{who}: batch={batch}; at most {MAX_GRID} matrices per call")


class GetrsProblem(NamedTuple):
    n: int
    nrhs: int
    batch: int
    dtype: str
    trans: str
    small: bool
    device: int


class GetrsPlan:
    def __init__(self, p: GetrsProblem, facts) -> None:
        self.p = p
        arch = facts.arch
        if p.small:
            self.solve = KernelStep(GetrsSmallSpec(arch=arch, dtype=p.dtype, trans=p.trans),
                                    (_cdiv(p.nrhs, GETRS_THREADS), p.batch), (GETRS_THREADS,), bind=None)
        else:
            self.swap = KernelStep(LaswpSpec(arch=arch, dtype=p.dtype, reverse=p.trans != "N"),
                                   (_cdiv(p.nrhs, LASWP_THREADS), p.batch), (LASWP_THREADS,), bind=None)

    @property
    def kernels(self) -> tuple[str, ...]:
        return (self.solve if self.p.small else self.swap).function.name,

    def run(self, a: int, lda: int, stride_a: int, ipiv: int, stride_ipiv: int, b: int, ldb: int,
            stride_b: int, stream: int) -> None:
        p = self.p
        if p.small:
            self.solve.launch((p.n, p.nrhs, a, lda, stride_a, ipiv, stride_ipiv, b, ldb, stride_b, 0), stream)
            return
        es = esize(p.dtype)
        swap_args = (p.nrhs, b, ldb, stride_b, ipiv, stride_ipiv, 0, p.n, 0, 0)
        if p.trans == "N":
            self.swap.launch(swap_args, stream)
        for z in range(p.batch):
            az, bz = a + z * stride_a * es, b + z * stride_b * es
            if p.trans == "N":
                level3.trsm_ptr("L", "L", "N", "U", p.n, p.nrhs, 1.0, az, lda, bz, ldb, dtype=p.dtype, stream=stream)
                level3.trsm_ptr("L", "U", "N", "N", p.n, p.nrhs, 1.0, az, lda, bz, ldb, dtype=p.dtype, stream=stream)
            else:
                level3.trsm_ptr("L", "U", p.trans, "N", p.n, p.nrhs, 1.0, az, lda, bz, ldb, dtype=p.dtype,
                                stream=stream)
                level3.trsm_ptr("L", "L", p.trans, "U", p.n, p.nrhs, 1.0, az, lda, bz, ldb, dtype=p.dtype,
                                stream=stream)
        if p.trans != "N":
            self.swap.launch(swap_args, stream)


def getrs_plan(n: int, nrhs: int, batch: int, dtype: str, trans: str) -> GetrsPlan:
    facts = device_facts()
    key = GetrsProblem(n, nrhs, batch, dtype, trans, dispatch.getrs_small(n), facts.ordinal)
    return PLANS.get_or_build(key, lambda: GetrsPlan(key, facts))


def getrs_ptr(trans: str, n: int, nrhs: int, a: int, lda: int, ipiv: int, b: int, ldb: int, *, dtype: str,
              batch: int = 1, stride_a: int = 0, stride_ipiv: int = 0, stride_b: int = 0,
              stream: object = None) -> None:
    """Solve op(A) X = B in place of B (n x nrhs, ldb) with getrf's factor and pivots; ``trans``
    'N', 'T' or 'C' (real dtypes: 'C' is 'T'). Checked arguments only."""
    if n == 0 or nrhs == 0 or batch == 0:
        return
    _check_batch(batch, "getrs")
    t = "T" if trans == "C" and not dtype.startswith("complex") else trans
    getrs_plan(n, nrhs, batch, dtype, t).run(a, lda, stride_a, ipiv, stride_ipiv, b, ldb, stride_b,
                                             op.stream_of(stream))
