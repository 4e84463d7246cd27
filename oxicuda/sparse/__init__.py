"""oxicuda.sparse: the cuSPARSE counterpart, shaped like scipy.sparse / cupyx.scipy.sparse.

``csr_matrix``, ``csc_matrix``, ``coo_matrix`` (arrays on the device, operations there),
``identity``, ``eye``, ``diags``, ``random``, ``isspmatrix*``; ``oxicuda.sparse.linalg`` holds
the solvers. Names load on first use; ``KERNEL_MODULES`` lists the generator modules.
"""

from __future__ import annotations

import importlib

_LAZY = {
    **{name: "matrix" for name in ("coo_matrix", "csc_matrix", "csr_matrix", "issparse", "isspmatrix", "isspmatrix_coo",
                                    "isspmatrix_csc", "isspmatrix_csr", "spmatrix")},
    **{name: "construct" for name in ("diags", "eye", "identity", "random")},
    "linalg": None,
}

KERNEL_MODULES = tuple(f"{__name__}.kernels.{m}" for m in ("spmv", "spmm", "convert", "sptrsv", "spgemm"))

__all__ = [*sorted(_LAZY), "KERNEL_MODULES"]  # noqa: PLE0604 - built from the lazy table


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'oxicuda.sparse' has no attribute {name!r}")
    module = _LAZY[name]
    if module is None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
