"""The compat modules offer every routine of their models, under the same names: CuPy's low-level
cuBLAS module and scikit-cuda's cuBLAS module (lists hard-coded from their sources, below), and
only public names in ``__all__``."""

from __future__ import annotations

import inspect

from oxicuda.cuda import cublas as cupy_like
from oxicuda.skcuda import cublas as skcuda_like

#: cupy/cupy, cupy_backends/cuda/libs/cublas.pxd (the cpdef functions of cublas.pyx), current main
CUPY_ROUTINES = (
    "create", "destroy", "getVersion", "getPointerMode", "setPointerMode", "setStream", "getStream",
    "setMathMode", "getMathMode", "isamax", "idamax", "icamax", "izamax", "isamin", "idamin",
    "icamin", "izamin", "sasum", "dasum", "scasum", "dzasum", "saxpy", "daxpy", "caxpy", "zaxpy",
    "sdot", "ddot", "cdotu", "cdotc", "zdotu", "zdotc", "snrm2", "dnrm2", "scnrm2", "dznrm2",
    "sscal", "dscal", "cscal", "csscal", "zscal", "zdscal", "sgemv", "dgemv", "cgemv", "zgemv",
    "sger", "dger", "cgeru", "cgerc", "zgeru", "zgerc", "ssbmv", "dsbmv", "sgemm", "dgemm", "cgemm",
    "zgemm", "sgemmBatched", "dgemmBatched", "cgemmBatched", "zgemmBatched", "sgemmStridedBatched",
    "dgemmStridedBatched", "cgemmStridedBatched", "zgemmStridedBatched", "strsm", "dtrsm", "ctrsm",
    "ztrsm", "strsmBatched", "dtrsmBatched", "ctrsmBatched", "ztrsmBatched", "ssyrk", "dsyrk",
    "csyrk", "zsyrk", "sgeam", "dgeam", "cgeam", "zgeam", "sdgmm", "ddgmm", "cdgmm", "zdgmm",
    "sgemmEx", "sgetrfBatched", "dgetrfBatched", "cgetrfBatched", "zgetrfBatched", "sgetrsBatched",
    "dgetrsBatched", "cgetrsBatched", "zgetrsBatched", "sgetriBatched", "dgetriBatched",
    "cgetriBatched", "zgetriBatched", "gemmEx", "gemmStridedBatchedEx", "stpttr", "dtpttr",
    "strttp", "dtrttp",
)
#: lebedov/scikit-cuda, skcuda/cublas.py (every def cublas*), current master: 198 functions
SKCUDA_ROUTINES = (
    "cublasCheckStatus", "cublasCreate", "cublasDestroy", "cublasGetVersion", "cublasSetStream",
    "cublasGetStream", "cublasGetPointerMode", "cublasSetPointerMode", "cublasIsamax",
    "cublasIdamax", "cublasIcamax", "cublasIzamax", "cublasIsamin", "cublasIdamin", "cublasIcamin",
    "cublasIzamin", "cublasSasum", "cublasDasum", "cublasScasum", "cublasDzasum", "cublasSaxpy",
    "cublasDaxpy", "cublasCaxpy", "cublasZaxpy", "cublasScopy", "cublasDcopy", "cublasCcopy",
    "cublasZcopy", "cublasSdot", "cublasDdot", "cublasCdotu", "cublasCdotc", "cublasZdotu",
    "cublasZdotc", "cublasSnrm2", "cublasDnrm2", "cublasScnrm2", "cublasDznrm2", "cublasSrot",
    "cublasDrot", "cublasCrot", "cublasCsrot", "cublasZrot", "cublasZdrot", "cublasSrotg",
    "cublasDrotg", "cublasCrotg", "cublasZrotg", "cublasSrotm", "cublasDrotm", "cublasSrotmg",
    "cublasDrotmg", "cublasSscal", "cublasDscal", "cublasCscal", "cublasCsscal", "cublasZscal",
    "cublasZdscal", "cublasSswap", "cublasDswap", "cublasCswap", "cublasZswap", "cublasSgbmv",
    "cublasDgbmv", "cublasCgbmv", "cublasZgbmv", "cublasSgemv", "cublasDgemv", "cublasCgemv",
    "cublasZgemv", "cublasSger", "cublasDger", "cublasCgerc", "cublasCgeru", "cublasZgerc",
    "cublasZgeru", "cublasSsbmv", "cublasDsbmv", "cublasSspmv", "cublasDspmv", "cublasSspr",
    "cublasDspr", "cublasSspr2", "cublasDspr2", "cublasSsymv", "cublasDsymv", "cublasCsymv",
    "cublasZsymv", "cublasSsyr", "cublasDsyr", "cublasCsyr", "cublasZsyr", "cublasSsyr2",
    "cublasDsyr2", "cublasCsyr2", "cublasZsyr2", "cublasStbmv", "cublasDtbmv", "cublasCtbmv",
    "cublasZtbmv", "cublasStbsv", "cublasDtbsv", "cublasCtbsv", "cublasZtbsv", "cublasStpmv",
    "cublasDtpmv", "cublasCtpmv", "cublasZtpmv", "cublasStpsv", "cublasDtpsv", "cublasCtpsv",
    "cublasZtpsv", "cublasStrmv", "cublasDtrmv", "cublasCtrmv", "cublasZtrmv", "cublasStrsv",
    "cublasDtrsv", "cublasCtrsv", "cublasZtrsv", "cublasChemv", "cublasZhemv", "cublasChbmv",
    "cublasZhbmv", "cublasChpmv", "cublasZhpmv", "cublasCher", "cublasZher", "cublasCher2",
    "cublasZher2", "cublasChpr", "cublasZhpr", "cublasChpr2", "cublasZhpr2", "cublasSgemm",
    "cublasDgemm", "cublasCgemm", "cublasZgemm", "cublasSsymm", "cublasDsymm", "cublasCsymm",
    "cublasZsymm", "cublasSsyrk", "cublasDsyrk", "cublasCsyrk", "cublasZsyrk", "cublasSsyr2k",
    "cublasDsyr2k", "cublasCsyr2k", "cublasZsyr2k", "cublasStrmm", "cublasDtrmm", "cublasCtrmm",
    "cublasZtrmm", "cublasStrsm", "cublasDtrsm", "cublasCtrsm", "cublasZtrsm", "cublasChemm",
    "cublasZhemm", "cublasCherk", "cublasZherk", "cublasCher2k", "cublasZher2k", "cublasSgeam",
    "cublasDgeam", "cublasCgeam", "cublasZgeam", "cublasSgemmBatched", "cublasDgemmBatched",
    "cublasCgemmBatched", "cublasZgemmBatched", "cublasStrsmBatched", "cublasDtrsmBatched",
    "cublasSgetrfBatched", "cublasDgetrfBatched", "cublasCgetrfBatched", "cublasZgetrfBatched",
    "cublasSgetrsBatched", "cublasDgetrsBatched", "cublasCgetrsBatched", "cublasZgetrsBatched",
    "cublasSgetriBatched", "cublasDgetriBatched", "cublasCgetriBatched", "cublasZgetriBatched",
    "cublasSgelsBatched", "cublasDgelsBatched", "cublasCgelsBatched", "cublasZgelsBatched",
    "cublasSdgmm", "cublasDdgmm", "cublasCdgmm", "cublasZdgmm", "cublasSgemmStridedBatched",
    "cublasDgemmStridedBatched", "cublasCgemmStridedBatched", "cublasZgemmStridedBatched",
)
#: routines of the models not offered (none since gelsBatched)
SOLVER_BACKED: frozenset[str] = frozenset()


def test_the_model_lists_are_complete_transcriptions():
    assert len(CUPY_ROUTINES) == len(set(CUPY_ROUTINES)) == 104
    assert len(SKCUDA_ROUTINES) == len(set(SKCUDA_ROUTINES)) == 198
    assert len(SOLVER_BACKED) == 0


def test_cupy_shaped_module_has_every_routine_of_cupy_cublas():
    missing = [n for n in CUPY_ROUTINES if n not in SOLVER_BACKED and not callable(getattr(cupy_like, n, None))]
    assert missing == []


def test_skcuda_shaped_module_has_every_routine_of_skcuda_cublas():
    missing = [n for n in SKCUDA_ROUTINES if n not in SOLVER_BACKED and not callable(getattr(skcuda_like, n, None))]
    assert missing == []
    assert skcuda_like.ctypes.c_float is not None  # scikit-cuda's tests use cublas.ctypes


def test_all_lists_only_public_names_that_exist():
    for module in (cupy_like, skcuda_like):
        names = module.__all__
        assert len(names) == len(set(names))
        for private in ("annotations", "np", "run", "OPS", "enum_arg", "ctypes", "FILL", "DIAG"):
            assert private not in names, (module.__name__, private)
        for name in names:
            assert not name.startswith("_") and hasattr(module, name)
            assert not inspect.ismodule(getattr(module, name))
    assert set(CUPY_ROUTINES) - SOLVER_BACKED <= set(cupy_like.__all__)
    assert set(SKCUDA_ROUTINES) - SOLVER_BACKED <= set(skcuda_like.__all__)
    assert "CUBLASError" in cupy_like.__all__ and "cublasInvalidValue" in skcuda_like.__all__


def test_argument_order_matches_the_models_for_new_routines():
    def params(fn):
        return list(inspect.signature(fn).parameters)
    assert params(cupy_like.sgeam) == ["handle", "transa", "transb", "m", "n", "alpha", "A", "lda", "beta", "B",
                                       "ldb", "C", "ldc"]
    assert params(cupy_like.sdgmm) == ["handle", "mode", "m", "n", "A", "lda", "x", "incx", "C", "ldc"]
    assert params(cupy_like.ssbmv) == ["handle", "uplo", "n", "k", "alpha", "A", "lda", "x", "incx", "beta", "y",
                                       "incy"]
    assert params(cupy_like.stpttr) == ["handle", "uplo", "n", "AP", "A", "lda"]
    assert params(cupy_like.strttp) == ["handle", "uplo", "n", "A", "lda", "AP"]
    assert params(cupy_like.gemmStridedBatchedEx)[-5:] == ["ldc", "strideC", "batchCount", "computeType", "algo"]
    assert params(skcuda_like.cublasSgbmv) == ["handle", "trans", "m", "n", "kl", "ku", "alpha", "A", "lda", "x",
                                              "incx", "beta", "y", "incy"]
    assert params(skcuda_like.cublasChpr2)[:3] == ["handle", "uplo", "n"]
    assert params(skcuda_like.cublasSrotmg) == ["handle", "d1", "d2", "x1", "y1"]
    assert params(skcuda_like.cublasStbsv) == ["handle", "uplo", "trans", "diag", "n", "k", "A", "lda", "x", "incx"]
