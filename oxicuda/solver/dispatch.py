"""Dispatch of the solver: pure functions from a problem's sizes and the device facts to the
path and block sizes. Every threshold lives in ``DISPATCH`` (one owner; tests lower them to reach
the blocked paths on small matrices, as users who tune them at run time do).

PROVISIONAL (chosen by reasoning, not yet measured on the H200):
- ``SMALL_MAX``: matrices of order <= SMALL_MAX factor in one CTA each in shared memory (the
  batched path); larger ones run the blocked algorithms with oxicuda.blas trailing updates;
- ``GETRF_NB`` / ``POTRF_NB`` / ``QR_NB``: panel widths of the blocked getrf / potrf / geqrf
  (QR_NB at most the larft limit, 64);
- ``GETRS_SMALL_MAX``: getrs/potrs for n <= this solve in one CTA per matrix, larger through
  oxicuda.blas trsm;
- ``SYEVD_MIN``: eigvalsh (no vectors) of order > SYEVD_MIN goes through the Householder
  tridiagonalization and bisection (eigen.tridiag_values_ptr) instead of one-CTA Jacobi, when
  the batch is at most ``SYEVD_BATCH_MAX`` or the order above ``SYEVD_BATCH_ORDER`` (the
  tridiagonalization runs matrix after matrix, about six launches per column, while Jacobi runs
  one CTA per matrix of a batch side by side);
- ``SYEVD_VECTORS_MIN``: eigh (with vectors) of order > SYEVD_VECTORS_MIN takes the
  tridiagonal path with vectors (sytrd, stebz, stein, a Householder QR of the vectors and the
  back-transformation, eigen.syevd_ptr) under the same batch rule; at n = 8192 the one-CTA
  Jacobi measured 0.04-0.13x cuSOLVER on the H200, the new path is not measured yet.
"""

from __future__ import annotations

from .kernels.common import esize
from .kernels.lu_kernels import SMALL_MAX as _KERNEL_SMALL_MAX

DISPATCH = {"SMALL_MAX": 64, "GETRF_NB": 64, "POTRF_NB": 64, "GETRS_SMALL_MAX": 64, "QR_NB": 32, "SYEVD_MIN": 64,
            "SYEVD_BATCH_MAX": 8, "SYEVD_BATCH_ORDER": 512, "SYEVD_VECTORS_MIN": 64}


def tridiagonal_values(n: int, batch: int) -> bool:
    """Whether eigvalsh of ``batch`` matrices of order n takes the tridiagonal path."""
    return n > DISPATCH["SYEVD_MIN"] and (batch <= DISPATCH["SYEVD_BATCH_MAX"] or n > DISPATCH["SYEVD_BATCH_ORDER"])


def tridiagonal_vectors(n: int, batch: int) -> bool:
    """Whether eigh (with vectors) of ``batch`` matrices of order n takes the tridiagonal path."""
    return n > DISPATCH["SYEVD_VECTORS_MIN"] and \
        (batch <= DISPATCH["SYEVD_BATCH_MAX"] or n > DISPATCH["SYEVD_BATCH_ORDER"])


def small_path(m: int, n: int, dtype: str, smem_optin: int) -> bool:
    """Whether an m x n factorization runs in one CTA with the matrix in shared memory."""
    limit = min(DISPATCH["SMALL_MAX"], _KERNEL_SMALL_MAX)
    return max(m, n) <= limit and m * n * esize(dtype) <= smem_optin


def block_size(name: str) -> int:
    nb = int(DISPATCH[name])
    if nb < 1:
        raise ValueError(f"solver dispatch: {name}={nb}; must be >= 1")
    return nb


def getrs_small(n: int) -> bool:
    return n <= DISPATCH["GETRS_SMALL_MAX"]


#: The solver's scratch is keyed by dtypes no other library uses for workspaces (the workspace
#: cache hands one block to one (stream, dtype, count) key): GEMM's split-K partials (float
#: keys) and blas level-3 scratch (uint8 keys) inside a solver call never alias it.
SCRATCH_KEYS = {"qr_block": "int16", "qr_q": "uint16", "potrf_herk": "int64", "jacobi": "uint64", "svd": "uint32",
               "stein": "int8"}


def scratch(name: str, nbytes: int, stream: int) -> int:
    """A cached scratch block of at least ``nbytes`` for the solver's ``name`` use."""
    import numpy as np

    from ..memory.workspace import workspace_ptr

    dt = np.dtype(SCRATCH_KEYS[name])
    return workspace_ptr((dt, max(1, -(-nbytes // dt.itemsize))), stream)
