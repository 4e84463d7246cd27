"""The singular value decomposition on the device (cuSOLVER gesvdj semantics, column-major,
m >= n): ``gesvdj_ptr`` runs the one-sided Jacobi kernel ``solver_gesvdj``, one CTA per matrix
of a batch, W and V in shared memory when they fit (orders up to 64), else in a global scratch
(one CTA still: large matrices are slow; the bidiagonalization-based gesvd is not written yet)."""

from __future__ import annotations

import numpy as np

from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from . import dispatch
from .kernels.common import esize
from .kernels.svd_kernels import SMALL_MAX, SVD_THREADS, GesvdjSpec, scratch_elements, shared_bytes
from .lu import _check_batch

PLANS = PlanCache("solver.svd")
MAX_SWEEPS = 100


def gesvdj_ptr(m: int, n: int, a: int, lda: int, s: int, u: int, ldu: int, vt: int, ldvt: int, info: int, *,
               dtype: str, batch: int = 1, stride_a: int = 0, stride_s: int = 0, stride_u: int = 0,
               stride_vt: int = 0, vectors: bool = True, tol: float | None = None, max_sweeps: int = MAX_SWEEPS,
               stream: int = 0) -> None:
    """Thin SVD of ``batch`` m x n matrices (m >= n) at ``a`` (not modified): singular values
    descending into ``s`` (real dtype, n each), with ``vectors`` U (m x n, ldu) and V^H (n x n,
    ldvt). ``info`` per matrix: 0, or max_sweeps + 1 when the sweeps ran out."""
    if n == 0 or batch == 0:
        return
    if m < n:
        raise ValueError(f"gesvdj_ptr: m={m} < n={n}; pass the conjugate transpose (m >= n)")
    _check_batch(batch, "gesvdj")
    facts = device_facts()
    fits = n <= min(SMALL_MAX, dispatch.DISPATCH["SMALL_MAX"]) and m <= SMALL_MAX and \
        shared_bytes(m, n, dtype) <= facts.smem_per_block_optin - 1024
    space = "shared" if fits else "global"
    spec = GesvdjSpec(arch=facts.arch, dtype=dtype, vectors=vectors, space=space)
    key = (spec, m, n, batch, facts.ordinal)
    step = PLANS.get_or_build(key, lambda: KernelStep(spec, (batch,), (SVD_THREADS,), bind=None,
                                                      shared_mem=shared_bytes(m, n, dtype) if fits else 0))
    scratch = 0 if fits else dispatch.scratch("svd", scratch_elements(m, n) * esize(dtype) * batch, stream)
    t = float(np.finfo(dtype).eps) if tol is None else float(tol)
    step.launch((m, n, a, lda, stride_a, s, stride_s, u, ldu, stride_u, vt, ldvt, stride_vt, scratch, info, t,
                 max_sweeps), stream)
