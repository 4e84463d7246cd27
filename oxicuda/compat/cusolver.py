"""A CuPy-shaped cuSOLVER dense module: ``from oxicuda.cuda import cusolver`` works like
``from cupy_backends.cuda.libs import cusolver`` (and ``cupy.cuda.cusolver``).

Handles are ints from ``create()``; matrices, pivots, tau, workspaces and ``devInfo`` are device
pointers (ints), column-major. Work runs on the handle's stream (``setStream``) and nothing here
synchronizes: ``devInfo`` is written on the device (0; i > 0 for a zero pivot U(i, i) or a
leading minor of order i that is not positive definite). A bad argument raises
``CUSOLVERError(CUSOLVER_STATUS_INVALID_VALUE)`` before anything runs; an unknown or destroyed
handle ``CUSOLVER_STATUS_NOT_INITIALIZED``; a workspace smaller than ``*_bufferSize`` said
INVALID_VALUE. oxicuda's factorizations take their scratch from its workspace cache, so
``*_bufferSize`` returns 1 element (the workspace passed in is checked, never needed).

Implemented for s/d/c/z: getrf(_bufferSize), getrs, potrf(_bufferSize), potrs, potrfBatched,
potrsBatched, geqrf(_bufferSize), orgqr/ungqr(_bufferSize), ormqr/unmqr(_bufferSize),
getrfBatched, getrsBatched (cuBLAS's meaning: pivots n * batch, host info for argument errors).
Not implemented yet (absent, not stubbed): syevd/heevd, syevj/heevj, gesvd, gesvdj.
"""

from __future__ import annotations

from ..blas import handle as _h
from ..blas import operands as _op
from ..blas.handle import InvalidHandle as _InvalidHandle
from ..driver.errors import CudaError as _CudaError
from ..solver import batched as _b
from ..solver import geqrf as _qr
from ..solver import lu as _lu
from ..solver import potrf as _po

CUSOLVER_STATUS_SUCCESS, CUSOLVER_STATUS_NOT_INITIALIZED, CUSOLVER_STATUS_ALLOC_FAILED = 0, 1, 2
CUSOLVER_STATUS_INVALID_VALUE, CUSOLVER_STATUS_ARCH_MISMATCH, CUSOLVER_STATUS_MAPPING_ERROR = 3, 4, 5
CUSOLVER_STATUS_EXECUTION_FAILED, CUSOLVER_STATUS_INTERNAL_ERROR = 6, 7
CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED, CUSOLVER_STATUS_NOT_SUPPORTED = 8, 9
CUSOLVER_STATUS_ZERO_PIVOT, CUSOLVER_STATUS_INVALID_LICENSE = 10, 11
CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER = 0, 1
CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT = 0, 1
CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C = 0, 1, 2
CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR = 0, 1
CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_TYPE_2, CUSOLVER_EIG_TYPE_3 = 1, 2, 3

STATUS_NAMES = {v: k for k, v in globals().items() if k.startswith("CUSOLVER_STATUS_")}
_FILL = {0: "L", 1: "U"}
_SIDE = {0: "L", 1: "R"}
_OP = {0: "N", 1: "T", 2: "C"}
_DT = {"s": "float32", "d": "float64", "c": "complex64", "z": "complex128"}


class CUSOLVERError(RuntimeError):
    """A cuSOLVER failure: ``status`` is the cusolverStatus_t code."""

    def __init__(self, status: int, detail: str = "") -> None:
        self.status = status
        self.detail = detail
        name = STATUS_NAMES.get(status, f"CUSOLVER_STATUS_{status}")
        super().__init__(f"{name}: {detail}" if detail else name)

    def __reduce__(self):
        # rebuilt from the constructor's arguments (the default would pass the message as status)
        return (type(self), (self.status, self.detail))


def check_status(status: int) -> None:
    if status != CUSOLVER_STATUS_SUCCESS:
        raise CUSOLVERError(status)


class _BadArg(ValueError):
    """Argument ``index`` (1-based, not counting the handle) is wrong: devInfo = -index."""

    def __init__(self, index: int, detail: str) -> None:
        super().__init__(detail)
        self.index = index

    def __reduce__(self):
        # rebuilt from the constructor's arguments (the default would pass only the message)
        return (type(self), (self.index, self.args[0]))


def _run(call, dev_info: object = 0):
    try:
        return call()
    except _InvalidHandle as exc:
        raise CUSOLVERError(CUSOLVER_STATUS_NOT_INITIALIZED, str(exc)) from exc
    except _BadArg as exc:
        _set_info(dev_info, -exc.index)
        raise CUSOLVERError(CUSOLVER_STATUS_INVALID_VALUE, str(exc)) from exc
    except (ValueError, TypeError, OverflowError) as exc:
        raise CUSOLVERError(CUSOLVER_STATUS_INVALID_VALUE, str(exc)) from exc
    except _CudaError as exc:
        raise CUSOLVERError(CUSOLVER_STATUS_EXECUTION_FAILED, str(exc)) from exc


def _set_info(dev_info: object, value: int) -> None:
    """devInfo = value when devInfo is a usable device pointer (argument errors only)."""
    try:
        p = _op.check_pointer(dev_info, "devInfo")
        if p:
            _op.check_span(p, 4, "devInfo")
            from ..driver.backend import api

            api().memset_d32(p, value & 0xFFFFFFFF, 1)
    except (ValueError, TypeError, _CudaError):
        pass


# -- handles -------------------------------------------------------------------------------------
def create() -> int:
    """A new handle (an int)."""
    return _h.create_handle().id


def destroy(handle: int) -> None:
    _run(lambda: _h.destroy_handle(handle))


def setStream(handle: int, stream: int) -> None:
    _run(lambda: _h.lookup_handle(handle).set_stream(stream))


def getStream(handle: int) -> int:
    return _run(lambda: _h.lookup_handle(handle).stream)


def _stream(handle: int) -> int:
    return _h.lookup_handle(handle).stream


# -- argument checks (index = position after the handle, cuSOLVER's devInfo = -index) ---------------
def _int(value: object, index: int, what: str, minimum: int = 0) -> int:
    try:
        return _op.check_int(value, what, minimum=minimum)
    except (TypeError, ValueError) as exc:
        raise _BadArg(index, str(exc)) from None


def _enum(table: dict, value: object, index: int, what: str) -> str:
    if isinstance(value, bool) or value not in table:
        raise _BadArg(index, f"{what}={value!r}; allowed {sorted(table)}")
    return table[value]


def _matrix(ptr: object, rows: int, cols: int, ld: int, es: int, index: int, what: str) -> int:
    try:
        p = _op.check_pointer(ptr, what)
        _op.check_span(p, _op.matrix_span(rows, cols, ld, es), f"{what} ({rows}x{cols}, ld={ld})")
    except (TypeError, ValueError) as exc:
        raise _BadArg(index, str(exc)) from None
    return p


def _vec(ptr: object, nbytes: int, index: int, what: str) -> int:
    try:
        p = _op.check_pointer(ptr, what)
        _op.check_span(p, nbytes, what)
    except (TypeError, ValueError) as exc:
        raise _BadArg(index, str(exc)) from None
    return p


def _ld(value: object, rows: int, index: int, what: str) -> int:
    return _int(value, index, what, minimum=max(1, rows))


def _lwork(lwork: object, index: int, needed: int) -> int:
    lw = _int(lwork, index, "Lwork")
    if lw < needed:
        raise _BadArg(index, f"Lwork={lw} is smaller than the {needed} elements *_bufferSize returned")
    return lw


WORK = 1  # elements every *_bufferSize returns: oxicuda's scratch comes from its workspace cache


# -- LU ------------------------------------------------------------------------------------------
def _getrf_bufferSize(dt, handle, m, n, A, lda):
    def call():
        _stream(handle)
        mm = _int(m, 1, "m")
        _int(n, 2, "n")
        _ld(lda, mm, 4, "lda")
        return WORK
    return _run(call)


def _getrf(dt, handle, m, n, A, lda, workspace, devIpiv, devInfo):
    def call():
        s = _stream(handle)
        mm, nn = _int(m, 1, "m"), _int(n, 2, "n")
        ld = _ld(lda, mm, 4, "lda")
        es = _op.itemsize(dt)
        a = _matrix(A, mm, nn, ld, es, 3, "A")
        info = _vec(devInfo, 4, 7, "devInfo")
        piv = _vec(devIpiv, 4 * min(mm, nn), 6, "devIpiv")
        if workspace is None:
            raise _BadArg(5, "workspace is None")
        _lu.getrf_ptr(mm, nn, a, ld, piv, info, dtype=dt, stream=s)
    _run(call, devInfo)


def _getrs(dt, handle, trans, n, nrhs, A, lda, devIpiv, B, ldb, devInfo):
    def call():
        s = _stream(handle)
        t = _enum(_OP, trans, 1, "trans")
        nn, nr = _int(n, 2, "n"), _int(nrhs, 3, "nrhs")
        es = _op.itemsize(dt)
        la, lb = _ld(lda, nn, 5, "lda"), _ld(ldb, nn, 8, "ldb")
        a = _matrix(A, nn, nn, la, es, 4, "A")
        piv = _vec(devIpiv, 4 * nn, 6, "devIpiv")
        b = _matrix(B, nn, nr, lb, es, 7, "B")
        info = _vec(devInfo, 4, 9, "devInfo")
        from ..driver.backend import api

        api().memset_d8(info, 0, 4, s or None)
        _lu.getrs_ptr(t, nn, nr, a, la, piv, b, lb, dtype=dt, stream=s)
    _run(call, devInfo)


# -- Cholesky --------------------------------------------------------------------------------------
def _potrf_bufferSize(dt, handle, uplo, n, A, lda):
    def call():
        _stream(handle)
        _enum(_FILL, uplo, 1, "uplo")
        _ld(lda, _int(n, 2, "n"), 4, "lda")
        return WORK
    return _run(call)


def _potrf(dt, handle, uplo, n, A, lda, workspace, Lwork, devInfo):
    def call():
        s = _stream(handle)
        u = _enum(_FILL, uplo, 1, "uplo")
        nn = _int(n, 2, "n")
        ld = _ld(lda, nn, 4, "lda")
        a = _matrix(A, nn, nn, ld, _op.itemsize(dt), 3, "A")
        _lwork(Lwork, 6, WORK)
        _vec(workspace, WORK * _op.itemsize(dt), 5, "workspace")
        info = _vec(devInfo, 4, 7, "devInfo")
        _po.potrf_ptr(u, nn, a, ld, info, dtype=dt, stream=s)
    _run(call, devInfo)


def _potrs(dt, handle, uplo, n, nrhs, A, lda, B, ldb, devInfo):
    def call():
        s = _stream(handle)
        u = _enum(_FILL, uplo, 1, "uplo")
        nn, nr = _int(n, 2, "n"), _int(nrhs, 3, "nrhs")
        es = _op.itemsize(dt)
        la, lb = _ld(lda, nn, 5, "lda"), _ld(ldb, nn, 7, "ldb")
        a = _matrix(A, nn, nn, la, es, 4, "A")
        b = _matrix(B, nn, nr, lb, es, 6, "B")
        info = _vec(devInfo, 4, 8, "devInfo")
        from ..driver.backend import api

        api().memset_d8(info, 0, 4, s or None)
        _po.potrs_ptr(u, nn, nr, a, la, b, lb, dtype=dt, stream=s)
    _run(call, devInfo)


def _potrfBatched(dt, handle, uplo, n, Aarray, lda, infoArray, batchSize):
    _run(lambda: _b.potrf_batched_ptr(_enum(_FILL, uplo, 1, "uplo"), n, Aarray, lda, infoArray, batchSize,
                                      dtype=dt, stream=_stream(handle)))


def _potrsBatched(dt, handle, uplo, n, nrhs, Aarray, lda, Barray, ldb, info, batchSize):
    def call():
        s = _stream(handle)
        u = _enum(_FILL, uplo, 1, "uplo")
        if _int(nrhs, 3, "nrhs") != 1:
            raise _BadArg(3, f"nrhs={nrhs}; cuSOLVER's potrsBatched takes nrhs = 1")
        p = _vec(info, 4, 9, "info")
        from ..driver.backend import api

        api().memset_d8(p, 0, 4, s or None)
        _b.potrs_batched_ptr(u, n, 1, Aarray, lda, Barray, ldb, batchSize, dtype=dt, stream=s)
    _run(call, info)


# -- QR --------------------------------------------------------------------------------------------
def _geqrf_bufferSize(dt, handle, m, n, A, lda):
    def call():
        _stream(handle)
        _ld(lda, _int(m, 1, "m"), 4, "lda")
        _int(n, 2, "n")
        return WORK
    return _run(call)


def _geqrf(dt, handle, m, n, A, lda, TAU, Workspace, Lwork, devInfo):
    def call():
        s = _stream(handle)
        mm, nn = _int(m, 1, "m"), _int(n, 2, "n")
        ld = _ld(lda, mm, 4, "lda")
        es = _op.itemsize(dt)
        a = _matrix(A, mm, nn, ld, es, 3, "A")
        tau = _vec(TAU, es * min(mm, nn), 5, "TAU")
        _lwork(Lwork, 7, WORK)
        _vec(Workspace, WORK * es, 6, "Workspace")
        info = _vec(devInfo, 4, 8, "devInfo")
        from ..driver.backend import api

        api().memset_d8(info, 0, 4, s or None)
        _qr.geqrf_ptr(mm, nn, a, ld, tau, dtype=dt, stream=s)
    _run(call, devInfo)


def _orgqr_bufferSize(dt, handle, m, n, k, A, lda, tau):
    def call():
        _stream(handle)
        _orgqr_sizes(m, n, k, lda)
        return WORK
    return _run(call)


def _orgqr_sizes(m, n, k, lda):
    mm, nn, kk = _int(m, 1, "m"), _int(n, 2, "n"), _int(k, 3, "k")
    if nn > mm:
        raise _BadArg(2, f"n={nn} > m={mm}; orgqr needs m >= n >= k")
    if kk > nn:
        raise _BadArg(3, f"k={kk} > n={nn}; orgqr needs m >= n >= k")
    return mm, nn, kk, _ld(lda, mm, 5, "lda")


def _orgqr(dt, handle, m, n, k, A, lda, tau, work, lwork, info):
    def call():
        s = _stream(handle)
        mm, nn, kk, ld = _orgqr_sizes(m, n, k, lda)
        es = _op.itemsize(dt)
        a = _matrix(A, mm, nn, ld, es, 4, "A")
        t = _vec(tau, es * kk, 6, "tau")
        _lwork(lwork, 8, WORK)
        _vec(work, WORK * es, 7, "work")
        p = _vec(info, 4, 9, "devInfo")
        from ..driver.backend import api

        api().memset_d8(p, 0, 4, s or None)
        _qr.orgqr_ptr(mm, nn, kk, a, ld, t, a, ld, dtype=dt, stream=s)
    _run(call, info)


def _ormqr_sizes(dt, side, trans, m, n, k, lda, ldc):
    sd = _enum(_SIDE, side, 1, "side")
    t = _enum(_OP, trans, 2, "trans")
    if dt.startswith("complex") and t == "T":
        raise _BadArg(2, "trans=CUBLAS_OP_T; unmqr takes CUBLAS_OP_N or CUBLAS_OP_C")
    t = "C" if t == "T" else t
    mm, nn, kk = _int(m, 3, "m"), _int(n, 4, "n"), _int(k, 5, "k")
    nq = mm if sd == "L" else nn
    if kk > nq:
        raise _BadArg(5, f"k={kk}; at most {nq} reflectors for side {'LR'[sd == 'R']}")
    return sd, t, mm, nn, kk, nq, _ld(lda, nq, 7, "lda"), _ld(ldc, mm, 10, "ldc")


def _ormqr_bufferSize(dt, handle, side, trans, m, n, k, A, lda, tau, C, ldc):
    def call():
        _stream(handle)
        _ormqr_sizes(dt, side, trans, m, n, k, lda, ldc)
        return WORK
    return _run(call)


def _ormqr(dt, handle, side, trans, m, n, k, A, lda, tau, C, ldc, work, lwork, devInfo):
    def call():
        s = _stream(handle)
        sd, t, mm, nn, kk, nq, la, lc = _ormqr_sizes(dt, side, trans, m, n, k, lda, ldc)
        es = _op.itemsize(dt)
        a = _matrix(A, nq, kk, la, es, 6, "A")
        tv = _vec(tau, es * kk, 8, "tau")
        c = _matrix(C, mm, nn, lc, es, 9, "C")
        _lwork(lwork, 12, WORK)
        _vec(work, WORK * es, 11, "work")
        p = _vec(devInfo, 4, 13, "devInfo")
        from ..driver.backend import api

        api().memset_d8(p, 0, 4, s or None)
        _qr.ormqr_ptr(sd, t, mm, nn, kk, a, la, tv, c, lc, dtype=dt, stream=s)
    _run(call, devInfo)


# -- batched LU (cuBLAS's getrfBatched/getrsBatched meaning) --------------------------------------
def _getrfBatched(dt, handle, n, Aarray, lda, PivotArray, infoArray, batchSize):
    _run(lambda: _b.getrf_batched_ptr(n, Aarray, lda, PivotArray, infoArray, batchSize, dtype=dt,
                                      stream=_stream(handle)))


def _getrsBatched(dt, handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info, batchSize):
    """``info`` is a HOST int pointer (cuBLAS): 0, or -i for a bad i-th argument."""
    import ctypes

    def call():
        t = _enum(_OP, trans, 1, "trans")
        _b.getrs_batched_ptr(t, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, batchSize, dtype=dt,
                             stream=_stream(handle))
    if info:
        ctypes.c_int.from_address(int(info)).value = 0
    try:
        _run(call)
    except CUSOLVERError:
        if info:
            ctypes.c_int.from_address(int(info)).value = -1
        raise


def _bind(fn, dt):
    def bound(*args):
        return fn(dt, *args)
    bound.__name__ = fn.__name__.lstrip("_")
    bound.__doc__ = (f"cusolverDn {bound.__name__} for {dt} (CuPy's argument order; pointers are ints).")
    return bound


for _l, _d in _DT.items():
    _real = _d.startswith("float")
    _q = "or" if _real else "un"
    for _name, _fn in (("getrf_bufferSize", _getrf_bufferSize), ("getrf", _getrf), ("getrs", _getrs),
                       ("potrf_bufferSize", _potrf_bufferSize), ("potrf", _potrf), ("potrs", _potrs),
                       ("potrfBatched", _potrfBatched), ("potrsBatched", _potrsBatched),
                       ("geqrf_bufferSize", _geqrf_bufferSize), ("geqrf", _geqrf),
                       (f"{_q}gqr_bufferSize", _orgqr_bufferSize), (f"{_q}gqr", _orgqr),
                       (f"{_q}mqr_bufferSize", _ormqr_bufferSize), (f"{_q}mqr", _ormqr),
                       ("getrfBatched", _getrfBatched), ("getrsBatched", _getrsBatched)):
        globals()[f"{_l}{_name}"] = _bind(_fn, _d)
del _l, _d, _real, _q, _name, _fn
