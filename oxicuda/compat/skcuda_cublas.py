"""A scikit-cuda-shaped cuBLAS module: ``from oxicuda.skcuda import cublas`` works like
``from skcuda import cublas``.

As in scikit-cuda: scalars are host VALUES; transpose/fill/side/diag arguments take scikit-cuda's
letters ('n', 'T', 'c', 'l', 'U', 'r', ...) or the integer codes; pointers are ints or objects
with ``__int__`` (``gpuarray.gpudata``, an oxicuda DeviceArray); dot/nrm2/asum RETURN the value;
``cublasIsamax``/``cublasIsamin`` return a 0-BASED index (scikit-cuda subtracts 1 from cuBLAS's
result; -1 for an empty vector). Failures raise the ``cublasError`` subclass of the status
(``cublasInvalidValue`` for bad arguments, ``cublasNotInitialized`` for a bad handle, ...).
"""

from __future__ import annotations

import numpy as np

from ..blas import handle as _h
from . import cublas_calls as _c
from .cublas_common import DIAG, FILL, OPS, SIDE, enum_arg, run


class cublasError(Exception):
    """CUBLAS error."""


class cublasNotInitialized(cublasError):
    """CUBLAS library not initialized (or an unknown/destroyed handle)."""


class cublasAllocFailed(cublasError):
    """Resource allocation failed."""


class cublasInvalidValue(cublasError):
    """Unsupported numerical value was passed to function."""


class cublasArchMismatch(cublasError):
    """Function requires an architectural feature absent from the device."""


class cublasMappingError(cublasError):
    """Access to GPU memory space failed."""


class cublasExecutionFailed(cublasError):
    """GPU program failed to execute."""


class cublasInternalError(cublasError):
    """An internal CUBLAS operation failed."""


class cublasNotSupported(cublasError):
    """Not supported."""


class cublasLicenseError(cublasError):
    """License error."""


cublasExceptions = {
    1: cublasNotInitialized, 3: cublasAllocFailed, 7: cublasInvalidValue, 8: cublasArchMismatch,
    11: cublasMappingError, 13: cublasExecutionFailed, 14: cublasInternalError, 15: cublasNotSupported,
    16: cublasLicenseError,
}


def _error(status: int, detail: str) -> cublasError:
    return cublasExceptions.get(status, cublasError)(detail)


def cublasCheckStatus(status: int) -> None:
    """Raise the exception of a nonzero cuBLAS status."""
    if status != 0:
        raise cublasExceptions.get(status, cublasError)(f"cuBLAS status {status}")


def _do(fn):
    return run(_error, fn)


def _host(handle) -> _h.HandleState:
    """scikit-cuda passes host values: the state with host pointer mode semantics."""
    st = _h.lookup_handle(handle).snapshot()
    return _h.HandleState(st.stream, _h.POINTER_MODE_HOST, st.math_mode)


def _v(value, what: str) -> _c.Scalar:
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, (int, float, complex, np.number)):
        raise TypeError(f"{what}={value!r}; a number is required")
    return _c.Scalar(value, 0)


def _op(x, what="trans"):
    return enum_arg(OPS, x, what, chars=True)


def cublasCreate() -> int:
    """A new handle (an int)."""
    return _h.create_handle().id


def cublasDestroy(handle) -> None:
    _do(lambda: _h.destroy_handle(handle))


def cublasGetVersion(handle) -> int:
    _do(lambda: _h.lookup_handle(handle))
    return 12000


def cublasSetStream(handle, id) -> None:
    _do(lambda: _h.lookup_handle(handle).set_stream(int(id) if id is not None else 0))


def cublasGetStream(handle) -> int:
    return _do(lambda: _h.lookup_handle(handle).stream)


_PREFIX = {"S": "float32", "D": "float64", "C": "complex64", "Z": "complex128"}
_REAL = {"S": "float32", "D": "float64", "C": "float32", "Z": "float64"}


def _define(name: str, fn, doc: str) -> None:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    globals()[name] = fn


def _reduce_value(kind: str, st, dt: str, rdt: str, n, x, incx):
    out = np.zeros(1, np.int32 if kind in ("iamax", "iamin") else rdt)
    _c.reduce(kind, st, dt, n, x, incx, _c.Result(out.ctypes.data, True))
    return int(out[0]) - 1 if kind in ("iamax", "iamin") else out[0].item()


def _make(p: str) -> None:
    dt, rdt = _PREFIX[p], _REAL[p]
    rp = {"S": "S", "D": "D", "C": "Sc", "Z": "Dz"}[p]
    cplx = p in "CZ"

    def axpy(handle, n, alpha, x, incx, y, incy):
        _do(lambda: _c.axpy(_host(handle), dt, n, _v(alpha, "alpha"), x, incx, y, incy))

    def scal(handle, n, alpha, x, incx):
        _do(lambda: _c.scal(_host(handle), dt, n, _v(alpha, "alpha"), x, incx))

    def copy(handle, n, x, incx, y, incy):
        _do(lambda: _c.copy(_host(handle), dt, n, x, incx, y, incy))

    def swap(handle, n, x, incx, y, incy):
        _do(lambda: _c.swap(_host(handle), dt, n, x, incx, y, incy))

    def reducer(kind):
        return lambda handle, n, x, incx: _do(lambda: _reduce_value(kind, _host(handle), dt, rdt, n, x, incx))

    def dotter(conj):
        def fn(handle, n, x, incx, y, incy):
            def go():
                out = np.zeros(1, dt)
                _c.dot(_host(handle), dt, n, x, incx, y, incy, _c.Result(out.ctypes.data, True), conj=conj)
                return out[0].item()
            return _do(go)
        return fn

    def rotter(s_real):
        def fn(handle, n, x, incx, y, incy, c, s):
            _do(lambda: _c.rot(_host(handle), dt, n, x, incx, y, incy, _v(c, "c"), _v(s, "s"), s_real))
        return fn

    def gemv(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy):
        _do(lambda: _c.gemv(_host(handle), dt, _op(trans), m, n, _v(alpha, "alpha"), A, lda, x, incx,
                            _v(beta, "beta"), y, incy))

    def gerer(conj):
        def fn(handle, m, n, alpha, x, incx, y, incy, A, lda):
            _do(lambda: _c.ger(_host(handle), dt, m, n, _v(alpha, "alpha"), x, incx, y, incy, A, lda, conj))
        return fn

    def symver(herm):
        def fn(handle, uplo, n, alpha, A, lda, x, incx, beta, y, incy):
            _do(lambda: _c.symv(_host(handle), dt, enum_arg(FILL, uplo, "uplo", True), n, _v(alpha, "alpha"), A,
                                lda, x, incx, _v(beta, "beta"), y, incy, herm))
        return fn

    def trsv(handle, uplo, trans, diag, n, A, lda, x, incx):
        _do(lambda: _c.trsv(_host(handle), dt, enum_arg(FILL, uplo, "uplo", True), _op(trans),
                            enum_arg(DIAG, diag, "diag", True), n, A, lda, x, incx))

    def gemm(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        _do(lambda: _c.gemm(_host(handle), dt, _op(transa, "transa"), _op(transb, "transb"), m, n, k,
                            _v(alpha, "alpha"), A, lda, B, ldb, _v(beta, "beta"), C, ldc))

    def gemm_batched(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batchCount):
        _do(lambda: _c.gemm(_host(handle), dt, _op(transa, "transa"), _op(transb, "transb"), m, n, k,
                            _v(alpha, "alpha"), A, lda, B, ldb, _v(beta, "beta"), C, ldc, batch=batchCount,
                            arrays=True))

    def gemm_strided(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
                     strideC, batchCount):
        _do(lambda: _c.gemm(_host(handle), dt, _op(transa, "transa"), _op(transb, "transb"), m, n, k,
                            _v(alpha, "alpha"), A, lda, B, ldb, _v(beta, "beta"), C, ldc, batch=batchCount,
                            stride_a=strideA, stride_b=strideB, stride_c=strideC))

    def trsm(handle, side, uplo, transa, diag, m, n, alpha, A, lda, B, ldb):
        _do(lambda: _c.trsm(_host(handle), dt, enum_arg(SIDE, side, "side", True), enum_arg(FILL, uplo, "uplo", True),
                            _op(transa), enum_arg(DIAG, diag, "diag", True), m, n, _v(alpha, "alpha"), A, lda, B, ldb))

    def syrk(handle, uplo, trans, n, k, alpha, A, lda, beta, C, ldc):
        _do(lambda: _c.syrk(_host(handle), dt, enum_arg(FILL, uplo, "uplo", True), _op(trans), n, k,
                            _v(alpha, "alpha"), A, lda, _v(beta, "beta"), C, ldc))

    def symm(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc):
        _do(lambda: _c.symm(_host(handle), dt, enum_arg(SIDE, side, "side", True), enum_arg(FILL, uplo, "uplo", True),
                            m, n, _v(alpha, "alpha"), A, lda, B, ldb, _v(beta, "beta"), C, ldc))

    def trmm(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, C, ldc):
        _do(lambda: _c.trmm(_host(handle), dt, enum_arg(SIDE, side, "side", True), enum_arg(FILL, uplo, "uplo", True),
                            _op(trans), enum_arg(DIAG, diag, "diag", True), m, n, _v(alpha, "alpha"), A, lda,
                            B, ldb, C, ldc))

    _define(f"cublas{p}axpy", axpy, f"y += alpha x ({dt}).")
    _define(f"cublas{p}scal", scal, f"x *= alpha ({dt}).")
    _define(f"cublas{p}copy", copy, f"y = x ({dt}).")
    _define(f"cublas{p}swap", swap, f"exchange x and y ({dt}).")
    _define(f"cublas{rp}nrm2", reducer("nrm2"), f"returns ||x||_2 ({dt}).")
    _define(f"cublas{rp}asum", reducer("asum"), f"returns sum |re|+|im| ({dt}).")
    _define(f"cublasI{p.lower()}amax", reducer("iamax"), f"returns the 0-based index of max |re|+|im| ({dt}).")
    _define(f"cublasI{p.lower()}amin", reducer("iamin"), f"returns the 0-based index of min |re|+|im| ({dt}).")
    _define(f"cublas{p}gemv", gemv, f"y = alpha op(A) x + beta y ({dt}).")
    _define(f"cublas{p}symv", symver(False), f"y = alpha A x + beta y, A symmetric ({dt}).")
    _define(f"cublas{p}trsv", trsv, f"solve op(A) x = b in place ({dt}).")
    _define(f"cublas{p}gemm", gemm, f"C = alpha op(A) op(B) + beta C ({dt}).")
    _define(f"cublas{p}gemmBatched", gemm_batched, f"batched gemm over device pointer arrays ({dt}).")
    _define(f"cublas{p}gemmStridedBatched", gemm_strided, f"strided batched gemm ({dt}).")
    _define(f"cublas{p}trsm", trsm, f"solve op(A) X = alpha B or X op(A) = alpha B ({dt}).")
    _define(f"cublas{p}syrk", syrk, f"C = alpha op(A) op(A)^T + beta C, one triangle ({dt}).")
    _define(f"cublas{p}symm", symm, f"C = alpha A B + beta C, A symmetric ({dt}).")
    _define(f"cublas{p}trmm", trmm, f"C = alpha op(A) B (or B op(A)), A triangular ({dt}).")
    if not cplx:
        _define(f"cublas{p}dot", dotter(False), f"returns x . y ({dt}).")
        _define(f"cublas{p}rot", rotter(True), f"plane rotation ({dt}).")
        _define(f"cublas{p}ger", gerer(False), f"A += alpha x y^T ({dt}).")
    else:
        _define(f"cublas{p}dotu", dotter(False), f"returns sum x*y ({dt}).")
        _define(f"cublas{p}dotc", dotter(True), f"returns sum conj(x)*y ({dt}).")
        _define(f"cublas{p}rot", rotter(False), f"plane rotation, complex s ({dt}).")
        _define(f"cublas{p}{'s' if p == 'C' else 'd'}rot", rotter(True), f"plane rotation, real s ({dt}).")
        _define(f"cublas{p}geru", gerer(False), f"A += alpha x y^T ({dt}).")
        _define(f"cublas{p}gerc", gerer(True), f"A += alpha x y^H ({dt}).")
        _define(f"cublas{p}hemv", symver(True), f"y = alpha A x + beta y, A Hermitian ({dt}).")

        def real_scal(handle, n, alpha, x, incx):
            _do(lambda: _c.scal(_host(handle), dt, n, _v(alpha, "alpha"), x, incx, alpha_real=True))
        _define(f"cublas{p}{'s' if p == 'C' else 'd'}scal", real_scal, f"x *= real alpha ({dt}).")


for _p in "SDCZ":
    _make(_p)
