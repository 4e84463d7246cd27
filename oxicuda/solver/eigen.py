"""The Hermitian eigensolver on the device (cuSOLVER's syevj/heevj semantics, column-major):
``syevj_ptr`` runs the ``solver_syevj`` Jacobi kernel, one CTA per matrix of a batch, with A
and V in shared memory when they fit the device's opt-in limit (orders up to 64) and in a global
scratch otherwise (any order: one CTA still, so large orders are slow: syevd, tridiagonalization
plus a tridiagonal solver, exists for eigenvalues only: ``tridiag_values_ptr``)."""

from __future__ import annotations

import numpy as np

from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from . import dispatch
from .kernels.common import esize
from .kernels.jacobi_kernels import (
    JACOBI_THREADS,
    SMALL_MAX,
    SyevjSpec,
    scratch_elements,
    shared_bytes,
)
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


def tridiag_values_ptr(n: int, a: int, lda: int, w: int, *, dtype: str, batch: int = 1, stride_a: int = 0,
                       stride_w: int = 0, stream: int = 0) -> None:
    """Eigenvalues (ascending, real dtype, into ``w``) of ``batch`` Hermitian n x n matrices whose
    LOWER triangle is at ``a``, which is overwritten: the Householder tridiagonalization
    (LAPACK's sytd2/hetd2: per column a geqrf reflector, hemv, ``solver_sytrd_x``, two gerc rank-1
    updates of the trailing block), then bisection on the Sturm count (``solver_stebz``, one
    thread per eigenvalue). No eigenvectors (the back-transformation and a tridiagonal vector
    solver are not written yet). Checked arguments only."""
    from ..blas import level2
    from ..memory.array import DeviceArray
    from . import geqrf as qrm
    from . import layout
    from .kernels.tridiag_kernels import STEBZ_THREADS, X_THREADS, StebzSpec, SytrdXSpec

    if n == 0 or batch == 0:
        return
    _check_batch(batch, "tridiag_values")
    facts = device_facts()
    es = esize(dtype)
    xstep = PLANS.get_or_build(("sytrd_x", dtype, facts.ordinal), lambda: KernelStep(
        SytrdXSpec(arch=facts.arch, dtype=dtype), (1,), (X_THREADS,), bind=None))
    grid = ((n + STEBZ_THREADS - 1) // STEBZ_THREADS, min(batch, 65535))
    if batch > 65535:
        raise ValueError(f"tridiag_values: batch={batch}; at most 65535")
    bstep = PLANS.get_or_build(("stebz", dtype, grid, facts.ordinal), lambda: KernelStep(
        StebzSpec(arch=facts.arch, dtype=dtype), grid, (STEBZ_THREADS,), bind=None))
    bufs = DeviceArray((3, max(n, 1)), dtype)
    vbuf, pbuf, xbuf = (bufs.ptr + i * max(n, 1) * es for i in range(3))
    tau = DeviceArray((max(n, 1),), dtype)
    for z in range(batch):
        az = a + z * stride_a * es
        for k in range(n - 1):
            m2 = n - k - 1
            col = az + (k + 1 + k * lda) * es
            a22 = az + (k + 1 + (k + 1) * lda) * es
            tk = tau.ptr + k * es
            qrm.geqrf_ptr(m2, 1, col, lda, tk, dtype=dtype, stream=stream)
            layout.copy(dtype, layout.Strided(col, m2, 1, 1, 1, lda, m2), layout.Strided(vbuf, m2, 1, 1, 1, m2, m2),
                        stream, fill="unit_lower")
            level2.symv_ptr("L", m2, 1.0, a22, lda, vbuf, 1, 0.0, pbuf, 1, dtype=dtype, hermitian=True,
                            stream=stream)
            xstep.launch((m2, vbuf, pbuf, tk, xbuf), stream)
            level2.ger_ptr(m2, m2, -1.0, xbuf, 1, vbuf, 1, a22, lda, dtype=dtype, conj=True, stream=stream)
            level2.ger_ptr(m2, m2, -1.0, vbuf, 1, xbuf, 1, a22, lda, dtype=dtype, conj=True, stream=stream)
    bstep.launch((n, a, lda, stride_a, w, stride_w), stream)
