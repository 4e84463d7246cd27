"""oxicuda.solver: the cuSOLVER counterpart, shaped like numpy.linalg / cupy.linalg plus
scipy.linalg's LU and Cholesky factor/solve pairs. Every factorization runs oxicuda's own PTX on
the device (blocked algorithms whose trailing updates go through oxicuda.blas, panel and
small-matrix kernels of their own); no host LAPACK on any path.

Public names load on first use: the numpy-shaped functions (``api``), ``LinAlgError``
(``errors``), the pointer-level factorizations (``getrf_ptr``/``getrs_ptr`` in ``lu``), the
batched pointer-array forms cuBLAS's getrfBatched family maps to (``batched``), and ``DISPATCH``
(the thresholds). ``KERNEL_MODULES`` lists the generator modules for the kernel registry.
"""

from __future__ import annotations

import importlib
import importlib.util

_LAZY = {
    **{name: "api" for name in ("solve", "inv", "det", "slogdet", "lu_factor", "lu_solve", "solve_triangular",
                                          "cholesky", "cho_factor", "cho_solve", "qr", "QRResult", "eigh", "eigvalsh", "EighResult", "svd", "SVDResult", "norm", "lstsq", "pinv", "matrix_rank")},
    "LinAlgError": "errors",
    "getrf_ptr": "lu",
    "getrs_ptr": "lu",
    "potrf_ptr": "potrf",
    "potrs_ptr": "potrf",
    "syevj_ptr": "eigen",
    "syevd_ptr": "eigen",
    "gesvdj_ptr": "gesvdj",
    **{name: "geqrf" for name in ("geqrf_ptr", "orgqr_ptr", "ormqr_ptr")},
    "DISPATCH": "dispatch",
    "reduce_rows": "norms",
    **{name: "batched" for name in ("getrf_batched_ptr", "getrs_batched_ptr", "getri_batched_ptr",
                                    "potrf_batched_ptr", "potrs_batched_ptr")},
}

_GENERATORS = ("kernels.lu_kernels", "kernels.layout_kernels", "kernels.chol_kernels", "kernels.qr_kernels",
               "kernels.jacobi_kernels", "kernels.svd_kernels", "kernels.svals_kernels",
               "kernels.tridiag_kernels", "kernels.stein_kernels", "kernels.norm_kernels")
#: full module names (the registry imports a dotted name as it is)
KERNEL_MODULES = tuple(f"{__name__}.{m}" for m in _GENERATORS if importlib.util.find_spec(f"{__name__}.{m}") is not None)

__all__ = [*sorted(_LAZY), "KERNEL_MODULES"]  # noqa: PLE0604


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oxicuda.solver' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
