"""Cholesky on the device, at the pointer level (LAPACK/cuSOLVER semantics: column-major,
``uplo`` 'L' (A = L L^H) or 'U' (A = U^H U), only that triangle read and written; ``info`` 0, or
i > 0 when the leading minor of order i is not positive definite).

- ``potrf_ptr``: small matrices factor in one CTA each in shared memory (``solver_potf2`` space
  "shared", one launch per batch); larger ones run the blocked right-looking algorithm: per
  block of ``POTRF_NB`` columns ``solver_potf2`` on the diagonal block, oxicuda.blas
  ``trsm_ptr`` for the panel below (or right of) it, then the trailing update A22 -= L21 L21^H
  as one oxicuda.blas ``gemm_colmajor`` into the solver's scratch and ``solver_herk_tri`` on the
  stored triangle. (blas ``syrk_ptr`` does the same, but asks the workspace cache for a new
  rest x rest block at every step: at n = 8192 that cycles the 1 GiB cache, whose evictions
  synchronize; and blas has no herk for complex dtypes.)
- ``potrs_ptr``: A X = B with the factor: ``solver_potrs_small`` for small n, else two trsm.
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
from .kernels.chol_kernels import HERK_THREADS, HerkTriSpec, Potf2Spec, PotrsSmallSpec
from .kernels.common import esize
from .kernels.lu_kernels import GETRS_THREADS
from .lu import MAX_GRID, _check_batch

PLANS = PlanCache("solver.cholesky")


class PotrfProblem(NamedTuple):
    n: int
    batch: int
    dtype: str
    uplo: str
    small: bool
    nb: int
    device: int


class PotrfPlan:
    def __init__(self, p: PotrfProblem, facts) -> None:
        self.p = p
        space = "shared" if p.small else "global"
        spec = Potf2Spec(arch=facts.arch, dtype=p.dtype, uplo=p.uplo, space=space)
        self.panel = KernelStep(spec, (p.batch,), (spec.threads,), bind=None,
                                shared_mem=p.n * p.n * esize(p.dtype) if p.small else 0)
        self.herk = {}
        if not p.small:
            for w in range(p.nb, p.n, p.nb):  # trailing orders n - j0 - nb, one step per size
                rest = p.n - w
                self.herk[rest] = KernelStep(HerkTriSpec(arch=facts.arch, dtype=p.dtype, uplo=p.uplo),
                                             ((rest + HERK_THREADS - 1) // HERK_THREADS, rest), (HERK_THREADS,),
                                             bind=None)

    def run(self, a: int, lda: int, stride_a: int, info: int, stream: int) -> None:
        p = self.p
        api().memset_d8(info, 0, 4 * p.batch, stream or None)
        if p.small:
            self.panel.launch((p.n, a, lda, stride_a, info, 0), stream)
            return
        es, lower = esize(p.dtype), p.uplo == "L"
        ws = dispatch.scratch("potrf_herk", (p.n - p.nb) ** 2 * es, stream) if p.n > p.nb else 0
        for j0 in range(0, p.n, p.nb):
            w = min(p.nb, p.n - j0)
            ajj = a + (j0 + j0 * lda) * es
            self.panel.launch((w, ajj, lda, stride_a, info, j0), stream)
            rest = p.n - j0 - w
            if rest == 0:
                break
            # the panel: L21 (rows below the block, lower) or U12 (columns right of it, upper)
            panel = ajj + (w if lower else w * lda) * es
            a22 = ajj + (w + w * lda) * es
            for z in range(p.batch):
                off = z * stride_a * es
                if lower:
                    level3.trsm_ptr("R", "L", "C", "N", rest, w, 1.0, ajj + off, lda, panel + off, lda,
                                    dtype=p.dtype, stream=stream)
                else:
                    level3.trsm_ptr("L", "U", "C", "N", w, rest, 1.0, ajj + off, lda, panel + off, lda,
                                    dtype=p.dtype, stream=stream)
                ta, tb = ("N", "C") if lower else ("C", "N")
                gemm_colmajor(ta, tb, rest, rest, w, 1.0, panel + off, lda, panel + off, lda, 0.0, ws, rest,
                              dtype=p.dtype, stream=stream, _owned=True)
                self.herk[rest].launch((rest, a22 + off, lda, ws, rest), stream)


def potrf_plan(n: int, batch: int, dtype: str, uplo: str) -> PotrfPlan:
    facts = device_facts()
    small = dispatch.small_path(n, n, dtype, facts.smem_per_block_optin)
    nb = 0 if small else dispatch.block_size("POTRF_NB")
    if not small and n > MAX_GRID:
        raise ValueError(f"potrf: n={n}; the blocked path takes n <= {MAX_GRID}")
    key = PotrfProblem(n, batch, dtype, uplo, small, nb, facts.ordinal)
    return PLANS.get_or_build(key, lambda: PotrfPlan(key, facts))


def potrf_ptr(uplo: str, n: int, a: int, lda: int, info: int, *, dtype: str, batch: int = 1, stride_a: int = 0,
              stream: object = None) -> None:
    """Cholesky of ``batch`` column-major n x n matrices at ``a`` (``stride_a`` elements apart),
    in place on the ``uplo`` triangle; ``info``: one int32 per matrix. Checked arguments only."""
    if n == 0 or batch == 0:
        if batch and info:
            api().memset_d8(info, 0, 4 * batch, op.stream_of(stream) or None)
        return
    _check_batch(batch, "potrf")
    potrf_plan(n, batch, dtype, uplo).run(a, lda, stride_a, info, op.stream_of(stream))


class PotrsProblem(NamedTuple):
    n: int
    nrhs: int
    batch: int
    dtype: str
    uplo: str
    device: int


def potrs_ptr(uplo: str, n: int, nrhs: int, a: int, lda: int, b: int, ldb: int, *, dtype: str, batch: int = 1,
              stride_a: int = 0, stride_b: int = 0, stream: object = None) -> None:
    """Solve A X = B in place of B (n x nrhs, ldb) with potrf's factor in the ``uplo`` triangle."""
    if n == 0 or nrhs == 0 or batch == 0:
        return
    _check_batch(batch, "potrs")
    s = op.stream_of(stream)
    if dispatch.getrs_small(n):
        facts = device_facts()
        key = PotrsProblem(n, nrhs, batch, dtype, uplo, facts.ordinal)
        step = PLANS.get_or_build(key, lambda: KernelStep(
            PotrsSmallSpec(arch=facts.arch, dtype=dtype, uplo=uplo),
            ((nrhs + GETRS_THREADS - 1) // GETRS_THREADS, batch), (GETRS_THREADS,), bind=None))
        step.launch((n, nrhs, a, lda, stride_a, b, ldb, stride_b), s)
        return
    es = esize(dtype)
    first, second = ("N", "C") if uplo == "L" else ("C", "N")
    for z in range(batch):
        az, bz = a + z * stride_a * es, b + z * stride_b * es
        level3.trsm_ptr("L", uplo, first, "N", n, nrhs, 1.0, az, lda, bz, ldb, dtype=dtype, stream=s)
        level3.trsm_ptr("L", uplo, second, "N", n, nrhs, 1.0, az, lda, bz, ldb, dtype=dtype, stream=s)
