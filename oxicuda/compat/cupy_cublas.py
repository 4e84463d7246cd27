"""A CuPy-shaped cuBLAS module: ``from oxicuda.cuda import cublas`` works like
``from cupy.cuda import cublas`` (CuPy >= 9, pointer-based scalars).

Handles are ints from ``create()``; scalars (alpha, beta, c, s) and results are POINTERS: host
addresses in host pointer mode (e.g. ``numpy_scalar_array.ctypes.data``), device pointers in
device pointer mode (``setPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE)``). Matrices are
column-major device pointers (ints). Work runs on the handle's stream (``setStream``).
Failures raise ``CUBLASError`` with the cuBLAS status: bad arguments INVALID_VALUE (7), before
anything is written; an unknown or destroyed handle NOT_INITIALIZED (1); combinations oxicuda
does not implement NOT_SUPPORTED (15).
"""

from __future__ import annotations

from ..blas import handle as _h
from ..blas.gemm_core import scalar_dtype
from . import cublas_calls as _c
from .cublas_common import (  # noqa: F401  (re-exported constants)
    COMPUTE_16F,
    COMPUTE_16F_PEDANTIC,
    COMPUTE_32F,
    COMPUTE_32F_FAST_16BF,
    COMPUTE_32F_FAST_16F,
    COMPUTE_32F_FAST_TF32,
    COMPUTE_32F_PEDANTIC,
    COMPUTE_32I,
    COMPUTE_32I_PEDANTIC,
    COMPUTE_64F,
    COMPUTE_64F_PEDANTIC,
    CUDA_C_8I,
    CUDA_C_16BF,
    CUDA_C_16F,
    CUDA_C_32F,
    CUDA_C_32I,
    CUDA_C_64F,
    CUDA_R_8I,
    CUDA_R_16BF,
    CUDA_R_16F,
    CUDA_R_32F,
    CUDA_R_32I,
    CUDA_R_64F,
    DATA_TYPES,
    DIAG,
    FILL,
    OPS,
    SIDE,
    STATUS_NAMES,
    UnsupportedByOxicuda,
    enum_arg,
    pointer_arg,
    run,
)
from .cublas_common import PREFIX_DTYPE as _PREFIX
from .cublas_common import PREFIX_REAL as _REAL
from .cublas_common import REDUCTION_PREFIX as _RED_PREFIX

CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C = 0, 1, 2
CUBLAS_POINTER_MODE_HOST, CUBLAS_POINTER_MODE_DEVICE = 0, 1
CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT = 0, 1
CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER = 0, 1
CUBLAS_DIAG_NON_UNIT, CUBLAS_DIAG_UNIT = 0, 1
CUBLAS_DEFAULT_MATH, CUBLAS_TENSOR_OP_MATH, CUBLAS_PEDANTIC_MATH, CUBLAS_TF32_TENSOR_OP_MATH = 0, 1, 2, 3
CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16
CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP = -1, 99
CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_64F, CUBLAS_COMPUTE_32I = (
    COMPUTE_16F, COMPUTE_32F, COMPUTE_64F, COMPUTE_32I)
CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_64F_PEDANTIC = COMPUTE_32F_PEDANTIC, COMPUTE_64F_PEDANTIC
CUBLAS_COMPUTE_32F_FAST_16F, CUBLAS_COMPUTE_32F_FAST_16BF = COMPUTE_32F_FAST_16F, COMPUTE_32F_FAST_16BF
CUBLAS_COMPUTE_32F_FAST_TF32 = COMPUTE_32F_FAST_TF32
CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_ALLOC_FAILED = 0, 1, 3
CUBLAS_STATUS_INVALID_VALUE, CUBLAS_STATUS_ARCH_MISMATCH, CUBLAS_STATUS_MAPPING_ERROR = 7, 8, 11
CUBLAS_STATUS_EXECUTION_FAILED, CUBLAS_STATUS_INTERNAL_ERROR = 13, 14
CUBLAS_STATUS_NOT_SUPPORTED, CUBLAS_STATUS_LICENSE_ERROR = 15, 16


class CUBLASError(RuntimeError):
    """A cuBLAS failure: ``status`` is the cublasStatus_t code; the message names it and says
    what was wrong."""

    def __init__(self, status: int, detail: str = "") -> None:
        self.status = status
        self.detail = detail
        name = STATUS_NAMES.get(status, f"CUBLAS_STATUS_{status}")
        super().__init__(f"{name}: {detail}" if detail else name)

    def __reduce__(self):
        # as CuPy's CUBLASError: rebuilt from its status (and detail), not from its message
        return type(self), (self.status, self.detail)


def check_status(status: int) -> None:
    """Raise CUBLASError for a nonzero status (as CuPy's helper does)."""
    if status != 0:
        raise CUBLASError(status)


def _state(handle: int) -> _h.HandleState:
    return _h.lookup_handle(handle).snapshot()


def _do(fn):
    return run(CUBLASError, fn)


# -- context, stream, modes ---------------------------------------------------------------------
def create() -> int:
    """A new handle (an int)."""
    return _h.create_handle().id


def destroy(handle: int) -> None:
    """Release the handle; using it afterwards raises CUBLASError(NOT_INITIALIZED)."""
    _do(lambda: _h.destroy_handle(handle))


def getVersion(handle: int) -> int:
    """The cuBLAS version this module mirrors (12.0 API)."""
    _do(lambda: _h.lookup_handle(handle))
    return 120000


def setStream(handle: int, stream: int) -> None:
    """Order the handle's later work on ``stream`` (a driver stream handle; 0 is the default)."""
    _do(lambda: _h.lookup_handle(handle).set_stream(pointer_arg(stream, "stream")))  # size_t, as CuPy types it


def getStream(handle: int) -> int:
    return _do(lambda: _h.lookup_handle(handle).stream)


def setPointerMode(handle: int, mode: int) -> None:
    _do(lambda: _h.lookup_handle(handle).set_pointer_mode(mode))


def getPointerMode(handle: int) -> int:
    return _do(lambda: _h.lookup_handle(handle).pointer_mode)


def setMathMode(handle: int, mode: int) -> None:
    _do(lambda: _h.lookup_handle(handle).set_math_mode(mode))


def getMathMode(handle: int) -> int:
    return _do(lambda: _h.lookup_handle(handle).math_mode)


# -- generated per-dtype functions --------------------------------------------------------------


def _define(name: str, fn, doc: str) -> None:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    globals()[name] = fn


def _make_level1(p: str) -> None:
    dt, rdt = _PREFIX[p], _REAL[p]
    red_prefix = _RED_PREFIX[p]

    def axpy(handle, n, alpha, x, incx, y, incy):
        def go():
            st = _state(handle)
            _c.axpy(st, dt, n, _c.scalar_from_pointer(st, alpha, dt, "alpha"), x, incx, y, incy)
        _do(go)

    def scal(handle, n, alpha, x, incx):
        def go():
            st = _state(handle)
            _c.scal(st, dt, n, _c.scalar_from_pointer(st, alpha, dt, "alpha"), x, incx)
        _do(go)

    def copy(handle, n, x, incx, y, incy):
        _do(lambda: _c.copy(_state(handle), dt, n, x, incx, y, incy))

    def swap(handle, n, x, incx, y, incy):
        _do(lambda: _c.swap(_state(handle), dt, n, x, incx, y, incy))

    def reducer(kind):
        def fn(handle, n, x, incx, result):
            def go():
                st = _state(handle)
                _c.reduce(kind, st, dt, n, x, incx, _c.result_at(st, result))
            _do(go)
        return fn

    def dotter(conj):
        def fn(handle, n, x, incx, y, incy, result):
            def go():
                st = _state(handle)
                _c.dot(st, dt, n, x, incx, y, incy, _c.result_at(st, result), conj=conj)
            _do(go)
        return fn

    def rotter(s_real):
        def fn(handle, n, x, incx, y, incy, c, s):
            def go():
                st = _state(handle)
                cs = _c.scalar_from_pointer(st, c, rdt, "c")
                ss = _c.scalar_from_pointer(st, s, rdt if s_real else dt, "s")
                _c.rot(st, dt, n, x, incx, y, incy, cs, ss, s_real)
            _do(go)
        return fn

    _define(f"{p}axpy", axpy, f"y += alpha * x ({dt}); alpha is a pointer.")
    _define(f"{p}scal", scal, f"x *= alpha ({dt}); alpha is a pointer.")
    _define(f"{p}copy", copy, f"y = x ({dt}).")
    _define(f"{p}swap", swap, f"exchange x and y ({dt}).")
    _define(f"{red_prefix}nrm2", reducer("nrm2"), f"*result = ||x||_2 ({dt}; result {rdt}).")
    _define(f"{red_prefix}asum", reducer("asum"), f"*result = sum |re|+|im| ({dt}; result {rdt}).")
    _define(f"i{p}amax", reducer("iamax"), f"*result (int32) = 1-based index of max |re|+|im| ({dt}).")
    _define(f"i{p}amin", reducer("iamin"), f"*result (int32) = 1-based index of min |re|+|im| ({dt}).")
    if p in "sd":
        _define(f"{p}dot", dotter(False), f"*result = x . y ({dt}).")
        _define(f"{p}rot", rotter(True), f"plane rotation with real c, s pointers ({dt}).")
    else:
        _define(f"{p}dotu", dotter(False), f"*result = sum x*y ({dt}).")
        _define(f"{p}dotc", dotter(True), f"*result = sum conj(x)*y ({dt}).")
        _define(f"{p}rot", rotter(False), f"plane rotation, real c and complex s ({dt}).")
        _define(f"{p}{'s' if p == 'c' else 'd'}rot", rotter(True), f"plane rotation, real c and s ({dt}).")

        def real_scal(handle, n, alpha, x, incx):
            def go():
                st = _state(handle)
                _c.scal(st, dt, n, _c.scalar_from_pointer(st, alpha, rdt, "alpha"), x, incx, alpha_real=True)
            _do(go)
        _define(f"{p}{'s' if p == 'c' else 'd'}scal", real_scal, f"x *= alpha with a real alpha ({dt}).")


def _make_level2(p: str) -> None:
    dt = _PREFIX[p]

    def gemv(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy):
        def go():
            st = _state(handle)
            _c.gemv(st, dt, enum_arg(OPS, trans, "trans"), m, n, _c.scalar_from_pointer(st, alpha, dt, "alpha"),
                    A, lda, x, incx, _c.scalar_from_pointer(st, beta, dt, "beta"), y, incy)
        _do(go)

    def gerer(conj):
        def fn(handle, m, n, alpha, x, incx, y, incy, A, lda):
            def go():
                st = _state(handle)
                _c.ger(st, dt, m, n, _c.scalar_from_pointer(st, alpha, dt, "alpha"), x, incx, y, incy, A, lda, conj)
            _do(go)
        return fn

    def symver(hermitian):
        def fn(handle, uplo, n, alpha, A, lda, x, incx, beta, y, incy):
            def go():
                st = _state(handle)
                _c.symv(st, dt, enum_arg(FILL, uplo, "uplo"), n, _c.scalar_from_pointer(st, alpha, dt, "alpha"),
                        A, lda, x, incx, _c.scalar_from_pointer(st, beta, dt, "beta"), y, incy, hermitian)
            _do(go)
        return fn

    def trsv(handle, uplo, trans, diag, n, A, lda, x, incx):
        _do(lambda: _c.trsv(_state(handle), dt, enum_arg(FILL, uplo, "uplo"), enum_arg(OPS, trans, "trans"),
                            enum_arg(DIAG, diag, "diag"), n, A, lda, x, incx))

    _define(f"{p}gemv", gemv, f"y = alpha op(A) x + beta y ({dt}).")
    _define(f"{p}symv", symver(False), f"y = alpha A x + beta y, A symmetric ({dt}).")
    _define(f"{p}trsv", trsv, f"solve op(A) x = b in place, A triangular ({dt}).")
    if p in "sd":
        _define(f"{p}ger", gerer(False), f"A += alpha x y^T ({dt}).")
    else:
        _define(f"{p}geru", gerer(False), f"A += alpha x y^T ({dt}).")
        _define(f"{p}gerc", gerer(True), f"A += alpha x y^H ({dt}).")
        _define(f"{p}hemv", symver(True), f"y = alpha A x + beta y, A Hermitian ({dt}).")


def _make_level3(p: str) -> None:
    dt = _PREFIX[p]

    def gemm(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        def go():
            st = _state(handle)
            _c.gemm(st, dt, enum_arg(OPS, transa, "transa"), enum_arg(OPS, transb, "transb"), m, n, k,
                    _c.scalar_from_pointer(st, alpha, dt, "alpha"), A, lda, B, ldb,
                    _c.scalar_from_pointer(st, beta, dt, "beta"), C, ldc)
        _do(go)

    def gemm_batched(handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,
                     batchCount):
        def go():
            st = _state(handle)
            _c.gemm(st, dt, enum_arg(OPS, transa, "transa"), enum_arg(OPS, transb, "transb"), m, n, k,
                    _c.scalar_from_pointer(st, alpha, dt, "alpha"), Aarray, lda, Barray, ldb,
                    _c.scalar_from_pointer(st, beta, dt, "beta"), Carray, ldc, batch=batchCount, arrays=True)
        _do(go)

    def gemm_strided(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
                     strideC, batchCount):
        def go():
            st = _state(handle)
            _c.gemm(st, dt, enum_arg(OPS, transa, "transa"), enum_arg(OPS, transb, "transb"), m, n, k,
                    _c.scalar_from_pointer(st, alpha, dt, "alpha"), A, lda, B, ldb,
                    _c.scalar_from_pointer(st, beta, dt, "beta"), C, ldc, batch=batchCount,
                    stride_a=strideA, stride_b=strideB, stride_c=strideC)
        _do(go)

    def trsm(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb):
        def go():
            st = _state(handle)
            _c.trsm(st, dt, enum_arg(SIDE, side, "side"), enum_arg(FILL, uplo, "uplo"), enum_arg(OPS, trans, "trans"),
                    enum_arg(DIAG, diag, "diag"), m, n, _c.scalar_from_pointer(st, alpha, dt, "alpha"), A, lda, B, ldb)
        _do(go)

    def syrk(handle, uplo, trans, n, k, alpha, A, lda, beta, C, ldc):
        def go():
            st = _state(handle)
            _c.syrk(st, dt, enum_arg(FILL, uplo, "uplo"), enum_arg(OPS, trans, "trans"), n, k,
                    _c.scalar_from_pointer(st, alpha, dt, "alpha"), A, lda,
                    _c.scalar_from_pointer(st, beta, dt, "beta"), C, ldc)
        _do(go)

    def symm(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc):
        def go():
            st = _state(handle)
            _c.symm(st, dt, enum_arg(SIDE, side, "side"), enum_arg(FILL, uplo, "uplo"), m, n,
                    _c.scalar_from_pointer(st, alpha, dt, "alpha"), A, lda, B, ldb,
                    _c.scalar_from_pointer(st, beta, dt, "beta"), C, ldc)
        _do(go)

    def trmm(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc):
        def go():
            st = _state(handle)
            _c.trmm(st, dt, enum_arg(SIDE, side, "side"), enum_arg(FILL, uplo, "uplo"), enum_arg(OPS, trans, "trans"),
                    enum_arg(DIAG, diag, "diag"), m, n, _c.scalar_from_pointer(st, alpha, dt, "alpha"),
                    A, lda, B, ldb, C, ldc)
        _do(go)

    _define(f"{p}gemm", gemm, f"C = alpha op(A) op(B) + beta C ({dt}); alpha/beta are pointers.")
    _define(f"{p}gemmBatched", gemm_batched, f"batched gemm over device arrays of pointers ({dt}).")
    _define(f"{p}gemmStridedBatched", gemm_strided, f"strided batched gemm ({dt}).")
    _define(f"{p}trsm", trsm, f"solve op(A) X = alpha B or X op(A) = alpha B in place ({dt}).")
    _define(f"{p}syrk", syrk, f"C = alpha op(A) op(A)^T + beta C on one triangle ({dt}).")
    _define(f"{p}symm", symm, f"C = alpha A B + beta C (or B A), A symmetric ({dt}).")
    _define(f"{p}trmm", trmm, f"C = alpha op(A) B (or B op(A)), A triangular ({dt}).")


def _make_extensions(p: str) -> None:
    dt, rdt = _PREFIX[p], _REAL[p]

    def sbmv(handle, uplo, n, k, alpha, A, lda, x, incx, beta, y, incy):
        def go():
            st = _state(handle)
            _c.sbmv(st, dt, enum_arg(FILL, uplo, "uplo"), n, k, _c.scalar_from_pointer(st, alpha, dt, "alpha"), A,
                    lda, x, incx, _c.scalar_from_pointer(st, beta, dt, "beta"), y, incy, False)
        _do(go)

    def trsm_batched(handle, side, uplo, trans, diag, m, n, alpha, Aarray, lda, Barray, ldb, batchCount):
        def go():
            st = _state(handle)
            _c.trsm_batched(st, dt, enum_arg(SIDE, side, "side"), enum_arg(FILL, uplo, "uplo"),
                            enum_arg(OPS, trans, "trans"), enum_arg(DIAG, diag, "diag"), m, n,
                            _c.scalar_from_pointer(st, alpha, dt, "alpha"), Aarray, lda, Barray, ldb, batchCount)
        _do(go)

    def geam(handle, transa, transb, m, n, alpha, A, lda, beta, B, ldb, C, ldc):
        def go():
            st = _state(handle)
            _c.geam(st, dt, enum_arg(OPS, transa, "transa"), enum_arg(OPS, transb, "transb"), m, n,
                    _c.scalar_from_pointer(st, alpha, dt, "alpha"), A, lda,
                    _c.scalar_from_pointer(st, beta, dt, "beta"), B, ldb, C, ldc)
        _do(go)

    def dgmm(handle, mode, m, n, A, lda, x, incx, C, ldc):
        _do(lambda: _c.dgmm(_state(handle), dt, enum_arg(SIDE, mode, "mode"), m, n, A, lda, x, incx, C, ldc))

    def tpttr(handle, uplo, n, AP, A, lda):
        _do(lambda: _c.pack("tpttr", _state(handle), dt, enum_arg(FILL, uplo, "uplo"), n, AP, A, lda))

    def trttp(handle, uplo, n, A, lda, AP):
        _do(lambda: _c.pack("trttp", _state(handle), dt, enum_arg(FILL, uplo, "uplo"), n, A, lda, AP))

    def getrf_batched(handle, n, Aarray, lda, PivotArray, infoArray, batchSize):
        _do(lambda: _c.getrf_batched(_state(handle), dt, n, Aarray, lda, PivotArray, infoArray, batchSize))

    def getrs_batched(handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info, batchSize):
        _do(lambda: _c.getrs_batched(_state(handle), dt, enum_arg(OPS, trans, "trans"), n, nrhs, Aarray, lda,
                                     devIpiv, Barray, ldb, info, batchSize))

    def getri_batched(handle, n, Aarray, lda, PivotArray, Carray, ldc, infoArray, batchSize):
        _do(lambda: _c.getri_batched(_state(handle), dt, n, Aarray, lda, PivotArray, Carray, ldc, infoArray,
                                     batchSize))

    _define(f"{p}getrfBatched", getrf_batched, f"LU with partial pivoting of each matrix of a pointer array ({dt}).")
    _define(f"{p}getrsBatched", getrs_batched, f"solve with getrfBatched's factors; info is a host int* ({dt}).")
    _define(f"{p}getriBatched", getri_batched, f"inverses from getrfBatched's factors, out of place ({dt}).")
    _define(f"{p}trsmBatched", trsm_batched, f"trsm over device arrays of matrix pointers ({dt}).")
    _define(f"{p}geam", geam, f"C = alpha op(A) + beta op(B) ({dt}); alpha/beta are pointers.")
    _define(f"{p}dgmm", dgmm, f"C = diag(x) A (mode LEFT) or A diag(x) (mode RIGHT) ({dt}).")
    if p in "sd":
        _define(f"{p}sbmv", sbmv, f"y = alpha A x + beta y, A symmetric banded ({dt}).")
        _define(f"{p}tpttr", tpttr, f"the uplo triangle of A from packed AP ({dt}).")
        _define(f"{p}trttp", trttp, f"packed AP from the uplo triangle of A ({dt}).")
    del rdt


for _p in "sdcz":
    _make_level1(_p)
    _make_level2(_p)
    _make_level3(_p)
    _make_extensions(_p)


#: cublasGemmEx's type table (cuBLAS documentation of cublasGemmEx): computeType -> {(Atype = Btype,
#: Ctype): (A/B dtype, C dtype, oxicuda compute)}. The FAST_16F/FAST_16BF compute types *allow*
#: cuBLAS to round inputs to 16 bits; oxicuda computes them in full float32, which cuBLAS's
#: definition permits. FAST_TF32 runs TF32 tensor cores for real float32 data (complex: full f32).
_EX_32F = {(CUDA_R_16BF, CUDA_R_16BF): ("bfloat16", "bfloat16", None),
           (CUDA_R_16F, CUDA_R_16F): ("float16", "float16", None),
           (CUDA_R_16BF, CUDA_R_32F): ("bfloat16", "float32", None),
           (CUDA_R_16F, CUDA_R_32F): ("float16", "float32", None),
           (CUDA_R_32F, CUDA_R_32F): ("float32", "float32", None),
           (CUDA_C_32F, CUDA_C_32F): ("complex64", "complex64", None)}
_EX_FAST = {(CUDA_R_32F, CUDA_R_32F): ("float32", "float32", None),
            (CUDA_C_32F, CUDA_C_32F): ("complex64", "complex64", None)}
_EX_64F = {(CUDA_R_64F, CUDA_R_64F): ("float64", "float64", None),
           (CUDA_C_64F, CUDA_C_64F): ("complex128", "complex128", None)}
GEMM_EX_TYPES: dict[int, dict[tuple[int, int], tuple[str, str, str | None]]] = {
    COMPUTE_32F: _EX_32F, COMPUTE_32F_PEDANTIC: _EX_32F,
    COMPUTE_32F_FAST_16F: _EX_FAST, COMPUTE_32F_FAST_16BF: _EX_FAST,
    COMPUTE_32F_FAST_TF32: {(CUDA_R_32F, CUDA_R_32F): ("float32", "float32", "tf32"),
                            (CUDA_C_32F, CUDA_C_32F): ("complex64", "complex64", None)},
    COMPUTE_64F: _EX_64F, COMPUTE_64F_PEDANTIC: _EX_64F,
}
#: computeType values of the pre-11 API (a cudaDataType), read as the compute type they named
_LEGACY_COMPUTE = {CUDA_R_32F: COMPUTE_32F, CUDA_C_32F: COMPUTE_32F, CUDA_R_64F: COMPUTE_64F,
                   CUDA_C_64F: COMPUTE_64F, CUDA_R_16F: COMPUTE_16F}
#: combinations cuBLAS defines that oxicuda does not implement (NOT_SUPPORTED, said as such)
_EX_NOT_IMPLEMENTED = {(COMPUTE_16F, CUDA_R_16F, CUDA_R_16F), (COMPUTE_16F_PEDANTIC, CUDA_R_16F, CUDA_R_16F),
                       (COMPUTE_32I, CUDA_R_8I, CUDA_R_32I), (COMPUTE_32I_PEDANTIC, CUDA_R_8I, CUDA_R_32I),
                       (COMPUTE_32F, CUDA_R_8I, CUDA_R_32F), (COMPUTE_32F_PEDANTIC, CUDA_R_8I, CUDA_R_32F),
                       (COMPUTE_32F, CUDA_C_8I, CUDA_C_32F), (COMPUTE_32F_PEDANTIC, CUDA_C_8I, CUDA_C_32F)}
_TYPE_NAMES = {CUDA_R_16F: "CUDA_R_16F", CUDA_C_16F: "CUDA_C_16F", CUDA_R_16BF: "CUDA_R_16BF",
               CUDA_C_16BF: "CUDA_C_16BF", CUDA_R_32F: "CUDA_R_32F", CUDA_C_32F: "CUDA_C_32F",
               CUDA_R_64F: "CUDA_R_64F", CUDA_C_64F: "CUDA_C_64F", CUDA_R_8I: "CUDA_R_8I", CUDA_C_8I: "CUDA_C_8I",
               CUDA_R_32I: "CUDA_R_32I", CUDA_C_32I: "CUDA_C_32I"}
_COMPUTE_NAMES = {COMPUTE_16F: "CUBLAS_COMPUTE_16F", COMPUTE_16F_PEDANTIC: "CUBLAS_COMPUTE_16F_PEDANTIC",
                  COMPUTE_32F: "CUBLAS_COMPUTE_32F", COMPUTE_32F_PEDANTIC: "CUBLAS_COMPUTE_32F_PEDANTIC",
                  COMPUTE_32F_FAST_16F: "CUBLAS_COMPUTE_32F_FAST_16F",
                  COMPUTE_32F_FAST_16BF: "CUBLAS_COMPUTE_32F_FAST_16BF",
                  COMPUTE_32F_FAST_TF32: "CUBLAS_COMPUTE_32F_FAST_TF32", COMPUTE_64F: "CUBLAS_COMPUTE_64F",
                  COMPUTE_64F_PEDANTIC: "CUBLAS_COMPUTE_64F_PEDANTIC", COMPUTE_32I: "CUBLAS_COMPUTE_32I",
                  COMPUTE_32I_PEDANTIC: "CUBLAS_COMPUTE_32I_PEDANTIC"}


def _type_name(t: object) -> str:
    return _TYPE_NAMES.get(t, repr(t))  # type: ignore[arg-type]


def gemm_ex_types(Atype: int, Btype: int, Ctype: int, computeType: int) -> tuple[str, str, str | None]:
    """(A/B dtype, C dtype, compute) of a cublasGemmEx type combination; UnsupportedByOxicuda
    (NOT_SUPPORTED) naming the types for any combination outside the table."""
    compute = _LEGACY_COMPUTE.get(computeType, computeType)
    cname = _COMPUTE_NAMES.get(compute, repr(computeType))
    names = f"Atype={_type_name(Atype)}, Btype={_type_name(Btype)}, Ctype={_type_name(Ctype)}, computeType={cname}"
    if Atype != Btype:
        raise UnsupportedByOxicuda(f"gemmEx: {names}: cuBLAS has no combination with Atype != Btype")
    if (compute, Atype, Ctype) in _EX_NOT_IMPLEMENTED:
        raise UnsupportedByOxicuda(f"gemmEx: {names}: a cuBLAS combination oxicuda does not implement")
    table = GEMM_EX_TYPES.get(compute)
    if table is None:
        raise UnsupportedByOxicuda(f"gemmEx: {names}: computeType is not one cublasGemmEx takes with these types")
    got = table.get((Atype, Ctype))
    if got is None:
        allowed = ", ".join(f"{_type_name(a)}->{_type_name(c)}" for a, c in table)
        raise UnsupportedByOxicuda(f"gemmEx: {names}: not a supported combination; with {cname} A/B->C may be "
                                   f"{allowed}")
    return got


def _typed_pointers(**pointers: object) -> None:
    """Type every pointer argument first, as CuPy's typed signature does on entry."""
    for name, value in pointers.items():
        pointer_arg(value, name)


def gemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
           computeType, algo):
    """cublasGemmEx: C = alpha op(A) op(B) + beta C over the type combinations of
    ``GEMM_EX_TYPES`` (cuBLAS's table: 16F/16BF data with 16F/16BF or 32F C under COMPUTE_32F,
    32F under COMPUTE_32F and its FAST variants (FAST_TF32: TF32 tensor cores), complex 32F,
    64F and complex 64F). alpha/beta are pointers of the scale type: float for 32F compute (also
    over 16-bit data), double for 64F, cuComplex/cuDoubleComplex for complex. ``algo`` is accepted
    and ignored (dispatch picks). Any other combination raises CUBLASError(NOT_SUPPORTED) naming
    the types."""
    def go():
        st = _state(handle)
        _typed_pointers(alpha=alpha, A=A, B=B, beta=beta, C=C)
        dt, c_dt, compute = gemm_ex_types(Atype, Btype, Ctype, computeType)
        if compute is None and dt == "float32" and computeType == COMPUTE_32F_PEDANTIC:
            compute = "f32"  # PEDANTIC: no TF32 even in CUBLAS_TF32_TENSOR_OP_MATH mode
        sdt = scalar_dtype(dt)
        _c.gemm(st, dt, enum_arg(OPS, transa, "transa"), enum_arg(OPS, transb, "transb"), m, n, k,
                _c.scalar_from_pointer(st, alpha, sdt, "alpha"), A, lda, B, ldb,
                _c.scalar_from_pointer(st, beta, sdt, "beta"), C, ldc, compute=compute,
                c_dtype=None if c_dt == dt else c_dt)
    _do(go)


def sgemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc):
    """cublasSgemmEx: gemmEx with float alpha/beta and float accumulation (COMPUTE_32F) over the
    A/B/C types of ``GEMM_EX_TYPES[CUBLAS_COMPUTE_32F]`` (16F, 16BF, 32F data; C 16-bit or 32F).
    8-bit integer inputs, which cuBLAS also takes here, raise CUBLASError(NOT_SUPPORTED)."""
    gemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
           COMPUTE_32F, CUBLAS_GEMM_DEFAULT)


def gemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,
                         beta, C, Ctype, ldc, strideC, batchCount, computeType, algo):
    """cublasGemmStridedBatchedEx: gemmEx over ``batchCount`` matrices at element strides
    strideA/strideB/strideC, with gemmEx's type table and scalar rules."""
    def go():
        st = _state(handle)
        _typed_pointers(alpha=alpha, A=A, B=B, beta=beta, C=C)
        dt, c_dt, compute = gemm_ex_types(Atype, Btype, Ctype, computeType)
        if compute is None and dt == "float32" and computeType == COMPUTE_32F_PEDANTIC:
            compute = "f32"
        sdt = scalar_dtype(dt)
        _c.gemm(st, dt, enum_arg(OPS, transa, "transa"), enum_arg(OPS, transb, "transb"), m, n, k,
                _c.scalar_from_pointer(st, alpha, sdt, "alpha"), A, lda, B, ldb,
                _c.scalar_from_pointer(st, beta, sdt, "beta"), C, ldc, compute=compute,
                c_dtype=None if c_dt == dt else c_dt, batch=batchCount, stride_a=strideA, stride_b=strideB,
                stride_c=strideC)
    _do(go)


#: helpers shared with the scikit-cuda module, kept out of ``from ... import *``
_INTERNAL = frozenset({"annotations", "run", "enum_arg", "pointer_arg", "OPS", "FILL", "SIDE", "DIAG", "DATA_TYPES", "STATUS_NAMES",
                       "UnsupportedByOxicuda", "scalar_dtype", "gemm_ex_types"})
__all__: list[str] = []
__all__.extend(sorted(name for name, value in list(globals().items())
                 if not name.startswith(("_", "COMPUTE_")) and name not in _INTERNAL
                 and not isinstance(value, type(_c))))
