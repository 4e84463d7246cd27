"""oxicuda.blas: cuBLAS-like GEMM and friends on generated PTX.

Public names load on first use (``import oxicuda.blas`` stays light): ``gemm``, ``matmul``
(``gemm_api``), ``gemm_colmajor`` (``gemm_core``: the pointer-level entry every surface calls),
``gemv_colmajor`` (``gemv``), ``gemm_strided_batched``/``gemm_batched`` (``gemm_batched``),
``transpose`` (``transpose_kernels``: out-of-place, batched, pointer-level).
``KERNEL_MODULES`` lists the generator modules so that the kernel registry can enumerate them.
"""

from __future__ import annotations

import importlib
import importlib.util

_LAZY = {
    "gemm": "gemm_api",
    "matmul": "gemm_api",
    "gemm_colmajor": "gemm_core",
    "scalar_dtype": "gemm_core",
    "gemv_colmajor": "gemv",
    "gemm_strided_batched": "gemm_batched",
    "gemm_batched": "gemm_batched",
    "choose_algo": "gemm_dispatch",
    "GemmProblem": "gemm_dispatch",
    "THRESHOLDS": "gemm_dispatch",
    **{name: "level1" for name in (
        "axpy", "scal", "copy", "swap", "rot", "dot", "dotu", "dotc", "nrm2", "asum", "iamax",
        "iamin", "axpy_ptr", "scal_ptr", "copy_ptr", "swap_ptr", "rot_ptr", "dot_ptr", "nrm2_ptr",
        "asum_ptr", "iamax_ptr", "iamin_ptr")},
    **{name: "level2" for name in ("ger", "symv", "trsv", "ger_ptr", "symv_ptr", "trsv_ptr")},
    **{name: "level3" for name in ("trsm_ptr", "syrk_ptr", "symm_ptr", "trmm_ptr")},
    **{name: "level3_api" for name in ("trsm", "syrk", "symm", "trmm")},
    **{name: "level3_rank" for name in ("herk_ptr", "syr2k_ptr", "her2k_ptr", "trsm_batched_ptr")},
    **{name: "geam_dgmm" for name in ("geam", "dgmm", "geam_ptr", "dgmm_ptr", "trttp_ptr", "tpttr_ptr")},
    **{name: "level1_rot" for name in ("rotm_ptr", "rotg_ptr", "rotmg_ptr")},
    **{name: "level2_packed" for name in (
        "gbmv_ptr", "sbmv_ptr", "spmv_ptr", "trmv_ptr", "tbmv_ptr", "tpmv_ptr", "tbsv_ptr", "tpsv_ptr", "syr_ptr",
        "syr2_ptr", "spr_ptr", "spr2_ptr")},
    "transpose": "transpose_kernels",
    "Handle": "handle",
    "create_handle": "handle",
}

_GENERATORS = (
    "gemm_naive", "gemm_tiled", "gemm_splitk", "gemv", "gemm_tensorcore", "gemm_wgmma", "gemm_dmma",
    "level1_kernels", "level2_kernels", "level3_kernels", "transpose_kernels", "level2_packed_kernels",
    "geam_kernels", "level1_rot_kernels",
)
KERNEL_MODULES = tuple(m for m in _GENERATORS if importlib.util.find_spec(f"{__name__}.{m}") is not None)

__all__ = [*sorted(_LAZY), "KERNEL_MODULES"]  # noqa: PLE0604 - built from the lazy table


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oxicuda.blas' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # the lazy names are listed before their first access, so that tab completion and help()
    # show them; module attributes (dunders) stay listed as for any module
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
