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

import ctypes  # noqa: F401  (scikit-cuda's module exposes ctypes; its tests use cublas.ctypes)

import numpy as np

from ..blas import handle as _h
from . import cublas_calls as _c
from .cublas_common import DIAG, FILL, OPS, SIDE, enum_arg, run
from .cublas_common import PREFIX_DTYPE as _PREFIX_DTYPE
from .cublas_common import PREFIX_REAL as _PREFIX_REAL
from .cublas_common import REDUCTION_PREFIX as _RED_PREFIX


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


_PREFIX = {p.upper(): dt for p, dt in _PREFIX_DTYPE.items()}
_REAL = {p.upper(): dt for p, dt in _PREFIX_REAL.items()}


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
    rp = _RED_PREFIX[p.lower()].capitalize()
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


def _make_more(p: str) -> None:
    dt, rdt = _PREFIX[p], _REAL[p]
    cplx = p in "CZ"

    def uplo_(u):
        return enum_arg(FILL, u, "uplo", True)

    def diag_(d):
        return enum_arg(DIAG, d, "diag", True)

    def gbmv(handle, trans, m, n, kl, ku, alpha, A, lda, x, incx, beta, y, incy):
        _do(lambda: _c.gbmv(_host(handle), dt, _op(trans), m, n, kl, ku, _v(alpha, "alpha"), A, lda, x, incx,
                            _v(beta, "beta"), y, incy))

    def sbmver(herm):
        def fn(handle, uplo, n, k, alpha, A, lda, x, incx, beta, y, incy):
            _do(lambda: _c.sbmv(_host(handle), dt, uplo_(uplo), n, k, _v(alpha, "alpha"), A, lda, x, incx,
                                _v(beta, "beta"), y, incy, herm))
        return fn

    def spmver(herm):
        def fn(handle, uplo, n, alpha, AP, x, incx, beta, y, incy):
            _do(lambda: _c.spmv(_host(handle), dt, uplo_(uplo), n, _v(alpha, "alpha"), AP, x, incx,
                                _v(beta, "beta"), y, incy, herm))
        return fn

    def tri(kind):
        if kind in ("tbmv", "tbsv"):
            def fn(handle, uplo, trans, diag, n, k, A, lda, x, incx):
                _do(lambda: _c.triangular_mv(kind, _host(handle), dt, uplo_(uplo), _op(trans), diag_(diag), n, k, A,
                                             lda, x, incx))
        elif kind in ("tpmv", "tpsv"):
            def fn(handle, uplo, trans, diag, n, AP, x, incx):
                _do(lambda: _c.triangular_mv(kind, _host(handle), dt, uplo_(uplo), _op(trans), diag_(diag), n, AP, x,
                                             incx))
        else:
            def fn(handle, uplo, trans, diag, n, A, lda, x, incx):
                _do(lambda: _c.triangular_mv(kind, _host(handle), dt, uplo_(uplo), _op(trans), diag_(diag), n, A,
                                             lda, x, incx))
        return fn

    def ranker(kind, herm):
        if kind == "syr":
            def fn(handle, uplo, n, alpha, x, incx, A, lda):
                _do(lambda: _c.rank_update(kind, _host(handle), dt, uplo_(uplo), n, _v(alpha, "alpha"), x, incx, A, lda,
                                           hermitian=herm))
        elif kind == "syr2":
            def fn(handle, uplo, n, alpha, x, incx, y, incy, A, lda):
                _do(lambda: _c.rank_update(kind, _host(handle), dt, uplo_(uplo), n, _v(alpha, "alpha"), x, incx, y,
                                           incy, A, lda, hermitian=herm))
        elif kind == "spr":
            def fn(handle, uplo, n, alpha, x, incx, AP):
                _do(lambda: _c.rank_update(kind, _host(handle), dt, uplo_(uplo), n, _v(alpha, "alpha"), x, incx, AP,
                                           hermitian=herm))
        else:
            def fn(handle, uplo, n, alpha, x, incx, y, incy, AP):
                _do(lambda: _c.rank_update(kind, _host(handle), dt, uplo_(uplo), n, _v(alpha, "alpha"), x, incx, y,
                                           incy, AP, hermitian=herm))
        return fn

    def syr2k(handle, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        _do(lambda: _c.rank_k("syr2k", _host(handle), dt, uplo_(uplo), _op(trans), n, k, _v(alpha, "alpha"), A, lda,
                              B, ldb, _v(beta, "beta"), C, ldc))

    def herk(handle, uplo, trans, n, k, alpha, A, lda, beta, C, ldc):
        _do(lambda: _c.rank_k("herk", _host(handle), dt, uplo_(uplo), _op(trans), n, k, _v(alpha, "alpha"), A, lda,
                              _v(beta, "beta"), C, ldc))

    def her2k(handle, uplo, trans, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
        _do(lambda: _c.rank_k("her2k", _host(handle), dt, uplo_(uplo), _op(trans), n, k, _v(alpha, "alpha"), A, lda,
                              B, ldb, _v(beta, "beta"), C, ldc))

    def hemm(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc):
        _do(lambda: _c.hemm(_host(handle), dt, enum_arg(SIDE, side, "side", True), uplo_(uplo), m, n,
                            _v(alpha, "alpha"), A, lda, B, ldb, _v(beta, "beta"), C, ldc))

    def geam(handle, transa, transb, m, n, alpha, A, lda, beta, B, ldb, C, ldc):
        _do(lambda: _c.geam(_host(handle), dt, _op(transa, "transa"), _op(transb, "transb"), m, n,
                            _v(alpha, "alpha"), A, lda, _v(beta, "beta"), B, ldb, C, ldc))

    def dgmm(handle, side, m, n, A, lda, x, incx, C, ldc):
        _do(lambda: _c.dgmm(_host(handle), dt, enum_arg(SIDE, side, "side", True), m, n, A, lda, x, incx, C, ldc))

    def trsm_batched(handle, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb, batchCount):
        _do(lambda: _c.trsm_batched(_host(handle), dt, enum_arg(SIDE, side, "side", True), uplo_(uplo), _op(trans),
                                    diag_(diag), m, n, _v(alpha, "alpha"), A, lda, B, ldb, batchCount))

    def getrf_batched(handle, n, A, lda, P, info, batchSize):
        def go():
            a, piv, inf = _c.P(A, "A"), _c.P(P, "P"), _c.P(info, "info")  # named as scikit-cuda names them
            _c.getrf_batched(_host(handle), dt, n, a, lda, piv, inf, batchSize)
        _do(go)

    def getrs_batched(handle, trans, n, nrhs, A, lda, P, B, ldb, info, batchSize):
        def go():
            a, piv, b, inf = _c.P(A, "A"), _c.P(P, "P"), _c.P(B, "B"), _c.P(info, "info")
            _c.getrs_batched(_host(handle), dt, _op(trans), n, nrhs, a, lda, piv, b, ldb, inf, batchSize)
        _do(go)

    def getri_batched(handle, n, A, lda, P, C, ldc, info, batchSize):
        def go():
            a, piv, c, inf = _c.P(A, "A"), _c.P(P, "P"), _c.P(C, "C"), _c.P(info, "info")
            _c.getri_batched(_host(handle), dt, n, a, lda, piv, c, ldc, inf, batchSize)
        _do(go)

    def gels_batched(handle, trans, m, n, nrhs, Aarray, lda, Carray, ldc, info, devInfoArray, batchSize):
        def go():
            a, c = _c.P(Aarray, "Aarray"), _c.P(Carray, "Carray")
            inf, dinf = _c.P(info, "info"), _c.P(devInfoArray, "devInfoArray")
            _c.gels_batched(_host(handle), dt, _op(trans), m, n, nrhs, a, lda, c, ldc, inf, dinf, batchSize)
        _do(go)

    def rotg(handle, a, b):
        def go():
            va, vb = _v(a, "a").value, _v(b, "b").value
            ab = np.array([va, vb], dt)
            cs = np.zeros(1, rdt)
            s = np.zeros(1, dt)
            _c.rotg(_host(handle), dt, ab.ctypes.data, ab.ctypes.data + ab.itemsize, cs.ctypes.data, s.ctypes.data)
            return ab[0], cs[0], s[0]
        return _do(go)

    for kind in ("gbmv",):
        _define(f"cublas{p}gbmv", gbmv, f"y = alpha op(A) x + beta y, A general banded ({dt}).")
    for kind in ("trmv", "tbmv", "tpmv", "tbsv", "tpsv"):
        what = {"trmv": "x = op(A) x, A triangular", "tbmv": "x = op(A) x, A triangular banded",
                "tpmv": "x = op(A) x, A triangular packed", "tbsv": "solve op(A) x = b, A triangular banded",
                "tpsv": "solve op(A) x = b, A triangular packed"}[kind]
        _define(f"cublas{p}{kind}", tri(kind), f"{what} ({dt}).")
    _define(f"cublas{p}syr", ranker("syr", False), f"A += alpha x x^T on one triangle ({dt}).")
    _define(f"cublas{p}syr2", ranker("syr2", False), f"A += alpha (x y^T + y x^T) on one triangle ({dt}).")
    _define(f"cublas{p}syr2k", syr2k, f"C = alpha (op(A) op(B)^T + op(B) op(A)^T) + beta C ({dt}).")
    _define(f"cublas{p}geam", geam, f"C = alpha op(A) + beta op(B) ({dt}).")
    _define(f"cublas{p}dgmm", dgmm, f"C = diag(x) A or A diag(x) ({dt}).")
    _define(f"cublas{p}trsmBatched", trsm_batched, f"trsm over device arrays of matrix pointers ({dt}).")
    _define(f"cublas{p}getrfBatched", getrf_batched, f"LU with partial pivoting, pointer array ({dt}).")
    _define(f"cublas{p}getrsBatched", getrs_batched, f"solve with getrfBatched's factors ({dt}).")
    _define(f"cublas{p}getriBatched", getri_batched, f"inverses from getrfBatched's factors ({dt}).")
    _define(f"cublas{p}gelsBatched", gels_batched,
            f"least squares min ||A_z X - C_z|| (m >= n, trans 'N'), QR on the device; info host int*, "
            f"devInfoArray device int* ({dt}).")
    _define(f"cublas{p}rotg", rotg, f"returns (r, c, s) of the Givens rotation zeroing b ({dt}).")
    if not cplx:
        _define(f"cublas{p}sbmv", sbmver(False), f"y = alpha A x + beta y, A symmetric banded ({dt}).")
        _define(f"cublas{p}spmv", spmver(False), f"y = alpha A x + beta y, A symmetric packed ({dt}).")
        _define(f"cublas{p}spr", ranker("spr", False), f"AP += alpha x x^T, packed ({dt}).")
        _define(f"cublas{p}spr2", ranker("spr2", False), f"AP += alpha (x y^T + y x^T), packed ({dt}).")

        def rotm(handle, n, x, incx, y, incy, sparam):
            def go():
                xp, yp = _c.P(x, "x"), _c.P(y, "y")  # pointers are typed first, as everywhere
                param = _param_array(sparam, dt)
                _c.rotm(_host(handle), dt, n, xp, incx, yp, incy, param.ctypes.data)
            _do(go)

        def rotmg(handle, d1, d2, x1, y1):
            def go():
                v = np.array([_v(d1, "d1").value, _v(d2, "d2").value, _v(x1, "x1").value, _v(y1, "y1").value], dt)
                sparam = np.zeros(5, dt)
                e = v.itemsize
                _c.rotmg(_host(handle), dt, v.ctypes.data, v.ctypes.data + e, v.ctypes.data + 2 * e,
                         v.ctypes.data + 3 * e, sparam.ctypes.data)
                return sparam
            return _do(go)
        _define(f"cublas{p}rotm", rotm, f"apply the modified Givens rotation of sparam (numpy, 5 values) ({dt}).")
        _define(f"cublas{p}rotmg", rotmg, f"returns sparam of the modified Givens rotation ({dt}).")
    else:
        _define(f"cublas{p}hbmv", sbmver(True), f"y = alpha A x + beta y, A Hermitian banded ({dt}).")
        _define(f"cublas{p}hpmv", spmver(True), f"y = alpha A x + beta y, A Hermitian packed ({dt}).")
        _define(f"cublas{p}her", ranker("syr", True), f"A += alpha x x^H, alpha real ({dt}).")
        _define(f"cublas{p}her2", ranker("syr2", True), f"A += alpha x y^H + conj(alpha) y x^H ({dt}).")
        _define(f"cublas{p}hpr", ranker("spr", True), f"AP += alpha x x^H, packed ({dt}).")
        _define(f"cublas{p}hpr2", ranker("spr2", True), f"AP += alpha x y^H + conj(alpha) y x^H, packed ({dt}).")
        _define(f"cublas{p}herk", herk, f"C = alpha op(A) op(A)^H + beta C, alpha/beta real ({dt}).")
        _define(f"cublas{p}her2k", her2k, f"C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C ({dt}).")
        _define(f"cublas{p}hemm", hemm, f"C = alpha A B + beta C (or B A), A Hermitian ({dt}).")


def _param_array(sparam: object, dt: str) -> np.ndarray:
    """scikit-cuda's sparam: a numpy array of 5 values of the routine's dtype (host memory)."""
    if not isinstance(sparam, np.ndarray):
        raise TypeError(f"sparam={sparam!r} ({type(sparam).__name__}); a numpy array of 5 {dt} values is required")
    if sparam.dtype != np.dtype(dt) or sparam.size < 5 or not sparam.flags.c_contiguous:
        raise ValueError(f"sparam has dtype {sparam.dtype} and shape {sparam.shape}; a contiguous array of 5 {dt} "
                         "values is required")
    return sparam


for _p in "SDCZ":
    _make(_p)
    _make_more(_p)


def cublasSetPointerMode(handle, mode) -> None:
    """Set the handle's pointer mode (CUBLAS_POINTER_MODE_HOST 0 / DEVICE 1). As in scikit-cuda,
    this module's routines take and return scalar VALUES in either mode (device mode matters to
    code that shares the handle with pointer-based calls, e.g. ``oxicuda.cuda.cublas``)."""
    _do(lambda: _h.lookup_handle(handle).set_pointer_mode(mode))


def cublasGetPointerMode(handle) -> int:
    """The handle's pointer mode (0 host, 1 device)."""
    return _do(lambda: _h.lookup_handle(handle).pointer_mode)


CUBLAS_POINTER_MODE_HOST, CUBLAS_POINTER_MODE_DEVICE = 0, 1
__all__: list[str] = []
__all__.extend(sorted(name for name, value in list(globals().items())
                 if not name.startswith("_") and name not in ("annotations", "np", "run", "enum_arg", "OPS", "FILL",
                                                               "SIDE", "DIAG")
                 and not isinstance(value, type(np))))
