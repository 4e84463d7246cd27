"""The Hermitian eigensolver on the device (cuSOLVER's syevj/heevj semantics, column-major):
``syevj_ptr`` runs the ``solver_syevj`` Jacobi kernel, one CTA per matrix of a batch, with A
and V in shared memory when they fit the device's opt-in limit (orders up to 64) and in a global
scratch otherwise (any order: one CTA still, so large orders are slow: syevd, tridiagonalization
plus a tridiagonal solver, is not written yet)."""

from __future__ import annotations

import numpy as np

from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from . import dispatch
from .kernels.common import esize
from .kernels.jacobi_kernels import JACOBI_THREADS, SMALL_MAX, SyevjSpec, scratch_elements, shared_bytes
from .lu import _check_batch

PLANS = PlanCache("solver.eigen")
#: syevj's defaults (cuSOLVER: tolerance machine epsilon, 100 sweeps); Jacobi converges
#: quadratically, so well-scaled matrices take 6-10 sweeps
MAX_SWEEPS = 100


def default_tol(dtype: str) -> float:
    return float(np.finfo(dtype).eps)


def syevj_ptr(uplo: str, n: int, a: int, lda: int, w: int, v: int, ldv: int, info: int, *, dtype: str,
              batch: int = 1, stride_a: int = 0, stride_w: int = 0, stride_v: int = 0, vectors: bool = True,
              tol: float | None = None, max_sweeps: int = MAX_SWEEPS, stream: int = 0) -> None:
    """Eigenvalues (ascending, into ``w``, real dtype) and, with ``vectors``, orthonormal
    eigenvectors (columns of ``v``) of ``batch`` Hermitian n x n matrices whose ``uplo`` triangle
    is stored at ``a`` (not modified). ``info``: per matrix 0, or max_sweeps + 1 when the sweeps
    ran out. Checked arguments only."""
    if n == 0 or batch == 0:
        return
    _check_batch(batch, "syevj")
    facts = device_facts()
    fits = n <= min(SMALL_MAX, dispatch.DISPATCH["SMALL_MAX"]) and \
        shared_bytes(n, dtype, vectors) <= facts.smem_per_block_optin - 256  # the kernel's static arrays
    space = "shared" if fits else "global"
    key = (dtype, uplo, vectors, space, n, batch, facts.ordinal)
    spec = SyevjSpec(arch=facts.arch, dtype=dtype, uplo=uplo, vectors=vectors, space=space)
    step = PLANS.get_or_build(key, lambda: KernelStep(spec, (batch,), (JACOBI_THREADS,), bind=None,
                                                      shared_mem=shared_bytes(n, dtype, vectors) if fits else 0))
    scratch = dispatch.scratch("jacobi", scratch_elements(n) * esize(dtype) * batch, stream) if not fits else 0
    t = default_tol(dtype) if tol is None else float(tol)
    step.launch((n, a, lda, stride_a, w, stride_w, v, ldv, stride_v, scratch, info, t, max_sweeps), stream)
