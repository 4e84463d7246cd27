"""oxicuda.sparse.linalg: iterative solvers on the sparse SpMV and oxicuda.blas level 1, the
norm, a LinearOperator and spsolve_triangular (SpTRSV) (scipy.sparse.linalg-shaped)."""

from __future__ import annotations

from .interface import LinearOperator, aslinearoperator
from .norms import norm
from .solvers import cg, gmres, spsolve_triangular

__all__ = ["LinearOperator", "aslinearoperator", "cg", "gmres", "norm", "spsolve_triangular"]
