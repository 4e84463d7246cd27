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
getrfBatched, getrsBatched (cuBLAS's meaning: pivots n * batch, host info for argument errors);
syevd/heevd, syevj/heevj, syevjBatched/heevjBatched (with createSyevjInfo and its setters),
gesvd and gesvdj (with createGesvdjInfo) (+ their bufferSize calls). The SVD calls and syevj run
oxicuda's Jacobi kernels (solver_syevj, solver_gesvdj); syevd runs Jacobi up to the dispatch
threshold SYEVD_VECTORS_MIN and the tridiagonal path above it (sytrd, bisection, inverse
iteration, Householder reorthogonalization, ormtr: oxicuda.solver.eigen.syevd_ptr; devInfo 1
there for a NaN or an infinity in A); eigenvalues always ascending (a valid answer for sort_eig
= 0); devInfo > 0 (max_sweeps + 1) when the Jacobi sweeps ran out. ``x*GetResidual``/``x*GetSweeps`` raise
CUSOLVER_STATUS_NOT_SUPPORTED (the kernels do not report them).
"""

from __future__ import annotations

from ..blas import handle as _h
from ..blas import operands as _op
from ..blas.handle import InvalidHandle as _InvalidHandle
from ..driver.errors import CudaError as _CudaError
from ..solver import batched as _b
from ..solver import dispatch as _dispatch
from ..solver import eigen as _eig
from ..solver import geqrf as _qr
from ..solver import gesvdj as _svd
from ..solver import lu as _lu
from ..solver import potrf as _po
from .cublas_common import FILL as _FILL
from .cublas_common import OPS as _OP
from .cublas_common import PREFIX_DTYPE as _DT
from .cublas_common import SIDE as _SIDE

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


# -- symmetric/Hermitian eigen (syevd/heevd, syevj/heevj) -------------------------------------------
class _JacobiInfo:
    """syevjInfo_t / gesvdjInfo_t: tolerance (0 = machine epsilon), max_sweeps, sort_eig."""

    def __init__(self) -> None:
        self.tol, self.max_sweeps, self.sort = 0.0, _eig.MAX_SWEEPS, 1


_INFOS: dict[int, _JacobiInfo] = {}
_next_info = [1]


def _new_info() -> int:
    key = _next_info[0]
    _next_info[0] += 1
    _INFOS[key] = _JacobiInfo()
    return key


def _info(params: object, index: int = 0) -> _JacobiInfo:
    obj = _INFOS.get(params) if isinstance(params, int) and not isinstance(params, bool) else None
    if obj is None:
        raise CUSOLVERError(CUSOLVER_STATUS_INVALID_VALUE, f"params={params!r} is not a live syevjInfo/gesvdjInfo "
                            "(createSyevjInfo/createGesvdjInfo)")
    return obj


def createSyevjInfo() -> int:
    return _new_info()


def destroySyevjInfo(info: int) -> None:
    _info(info)
    del _INFOS[info]


def xsyevjSetTolerance(info: int, tolerance: float) -> None:
    t = float(tolerance)
    if not t >= 0:
        raise CUSOLVERError(CUSOLVER_STATUS_INVALID_VALUE, f"tolerance={tolerance!r}; must be >= 0")
    _info(info).tol = t


def xsyevjSetMaxSweeps(info: int, max_sweeps: int) -> None:
    try:
        v = _op.check_int(max_sweeps, "max_sweeps", minimum=1)
    except (TypeError, ValueError) as exc:
        raise CUSOLVERError(CUSOLVER_STATUS_INVALID_VALUE, str(exc)) from None
    _info(info).max_sweeps = v


def xsyevjSetSortEig(info: int, sort_eig: int) -> None:
    _info(info).sort = int(sort_eig)


def _not_reported(what: str):
    def call(handle: int, info: int):
        _run(lambda: _stream(handle))
        _info(info)
        raise CUSOLVERError(CUSOLVER_STATUS_NOT_SUPPORTED, f"{what}: oxicuda's Jacobi kernels do not report it")
    call.__name__ = what
    return call


xsyevjGetResidual, xsyevjGetSweeps = _not_reported("xsyevjGetResidual"), _not_reported("xsyevjGetSweeps")
createGesvdjInfo, destroyGesvdjInfo = createSyevjInfo, destroySyevjInfo
xgesvdjSetTolerance, xgesvdjSetMaxSweeps, xgesvdjSetSortEig = xsyevjSetTolerance, xsyevjSetMaxSweeps, xsyevjSetSortEig
xgesvdjGetResidual, xgesvdjGetSweeps = _not_reported("xgesvdjGetResidual"), _not_reported("xgesvdjGetSweeps")

_JOBZ = {0: False, 1: True}


def _real_es(dt: str) -> int:
    return 4 if dt in ("float32", "complex64") else 8


def _eig_args(dt, jobz, uplo, n, A, lda, W, batch=1):
    vec = _enum(_JOBZ, jobz, 1, "jobz")
    u = _enum(_FILL, uplo, 2, "uplo")
    nn = _int(n, 3, "n")
    ld = _ld(lda, nn, 5, "lda")
    es = _op.itemsize(dt)
    a = _matrix(A, nn, nn * batch if batch > 1 else nn, ld, es, 4, "A") if batch == 1 else \
        _vec(A, max(1, ld * nn * batch) * es, 4, "A")
    w = _vec(W, max(1, nn * batch) * _real_es(dt), 6, "W")
    return vec, u, nn, ld, a, w


def _syevd_bufferSize(dt, handle, jobz, uplo, n, A, lda, W, params=None):
    def call():
        _stream(handle)
        _eig_args(dt, jobz, uplo, n, A, lda, W)
        if params is not None:
            _info(params)
        return WORK
    return _run(call)


def _syev_run(dt, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params, batch=1, jacobi=True):
    def call():
        s = _stream(handle)
        vec, u, nn, ld, a, w = _eig_args(dt, jobz, uplo, n, A, lda, W, batch)
        _lwork(lwork, 8, WORK)
        _vec(work, WORK * _op.itemsize(dt), 7, "work")
        p = _vec(info, 4 * batch, 9, "devInfo")
        opts = _info(params) if params is not None else _JacobiInfo()
        if nn == 0:
            from ..driver.backend import api

            api().memset_d8(p, 0, 4 * batch, s or None)
            return
        if not jacobi and _dispatch.tridiagonal_vectors(nn, batch):
            # syevd of a large order: the tridiagonal path (A copied first, then overwritten by V)
            _eig.syevd_ptr(u, nn, a, ld, w, a, ld, p, dtype=dt, batch=batch, stride_a=ld * nn, stride_w=nn,
                           stride_v=ld * nn, vectors=vec, stream=s)
            return
        # the eigenvectors overwrite A (the kernel reads A whole before it writes V)
        _eig.syevj_ptr(u, nn, a, ld, w, a if vec else 0, ld, p, dtype=dt, batch=batch, stride_a=ld * nn,
                       stride_w=nn, stride_v=ld * nn, vectors=vec, tol=opts.tol or None,
                       max_sweeps=opts.max_sweeps, stream=s)
    _run(call, info)


def _syevd(dt, handle, jobz, uplo, n, A, lda, W, work, lwork, info):
    _syev_run(dt, handle, jobz, uplo, n, A, lda, W, work, lwork, info, None, jacobi=False)


def _syevj(dt, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params):
    _syev_run(dt, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params)


def _syevjBatched_bufferSize(dt, handle, jobz, uplo, n, A, lda, W, params, batchSize):
    def call():
        _stream(handle)
        _int(batchSize, 10, "batchSize", minimum=1)
        _eig_args(dt, jobz, uplo, n, A, lda, W, _int(batchSize, 10, "batchSize", minimum=1))
        _info(params)
        return WORK
    return _run(call)


def _syevjBatched(dt, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params, batchSize):
    def call():
        return _int(batchSize, 12, "batchSize", minimum=1)
    batch = _run(call, info)
    _syev_run(dt, handle, jobz, uplo, n, A, lda, W, work, lwork, info, params, batch)


# -- SVD (gesvd, gesvdj) -------------------------------------------------------------------------------
_JOB = {"A": "A", "S": "S", "O": "O", "N": "N"}


def _job(value: object, index: int, what: str) -> str:
    v = value
    if isinstance(v, (bytes, bytearray)) and len(v) == 1:
        v = chr(v[0])
    elif isinstance(v, int) and not isinstance(v, bool) and 0 < v < 256:
        v = chr(v)
    if not isinstance(v, str) or v.upper() not in _JOB:
        raise _BadArg(index, f"{what}={value!r}; allowed 'A', 'S', 'O', 'N' (or their ord())")
    return v.upper()


def _gesvd_bufferSize(dt, handle, m, n):
    def call():
        _stream(handle)
        mm, nn = _int(m, 1, "m"), _int(n, 2, "n")
        if mm < nn:
            raise _BadArg(1, f"m={mm} < n={nn}; cuSOLVER's gesvd needs m >= n")
        return WORK
    return _run(call)


def _complete_into(dt, q0: int, rows: int, cols: int, dst: int, ld: int, stream: int) -> None:
    """dst (rows x rows, ld) = a unitary whose first cols columns are q0's (rows x cols, ld rows):
    QR of q0 (geqrf), Q formed complete (orgqr), q0 copied in front."""
    from ..memory.array import DeviceArray
    from ..solver import layout

    es = _op.itemsize(dt)
    work, ws = layout.colmajor(1, rows, cols, dt)
    layout.copy(dt, layout.Strided(q0, rows, cols, 1, 1, rows, rows * cols), ws, stream)
    tau = DeviceArray((max(cols, 1),), dt)
    _qr.geqrf_ptr(rows, cols, work.ptr, rows, tau.ptr, dtype=dt, stream=stream)
    _qr.orgqr_ptr(rows, rows, cols, work.ptr, rows, tau.ptr, dst, ld, dtype=dt, stream=stream)
    layout.copy(dt, layout.Strided(q0, rows, cols, 1, 1, rows, rows * cols),
                layout.Strided(dst, rows, cols, 1, 1, ld, ld * rows), stream)
    del es


def _thin_svd(dt, mm, nn, a, ld, s_ptr, vec, info, opts, stream):
    """gesvdj of the m x n (m >= n) matrix at a: returns the thin U (m x n) and V^H (n x n) as new
    column-major DeviceArrays (None without vectors)."""
    from ..memory.array import DeviceArray

    u = DeviceArray((nn, mm), dt) if vec else None
    vt = DeviceArray((nn, nn), dt) if vec else None
    _svd.gesvdj_ptr(mm, nn, a, ld, s_ptr, u.ptr if vec else 0, mm, vt.ptr if vec else 0, nn, info, dtype=dt,
                    vectors=vec, tol=opts.tol or None, max_sweeps=opts.max_sweeps, stream=stream)
    return u, vt


def _copy(dt, src, rows, cols, s_row, s_col, dst, ld, stream, conj=False):
    from ..solver import layout

    layout.copy(dt, layout.Strided(src, rows, cols, 1, s_row, s_col, rows * cols),
                layout.Strided(dst, rows, cols, 1, 1, ld, ld * cols), stream,
                fill="conj" if conj and dt.startswith("complex") else "copy")


def _gesvd(dt, handle, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, Work, lwork, rwork, devInfo):
    def call():
        st = _stream(handle)
        ju, jv = _job(jobu, 1, "jobu"), _job(jobvt, 2, "jobvt")
        if ju == "O" and jv == "O":
            raise _BadArg(2, "jobu and jobvt are both 'O'; at most one may overwrite A")
        mm, nn = _int(m, 3, "m"), _int(n, 4, "n")
        if mm < nn:
            raise _BadArg(3, f"m={mm} < n={nn}; cuSOLVER's gesvd needs m >= n")
        ld = _ld(lda, mm, 6, "lda")
        es = _op.itemsize(dt)
        a = _matrix(A, mm, nn, ld, es, 5, "A")
        sp = _vec(S, max(1, nn) * _real_es(dt), 7, "S")
        ucols = {"A": mm, "S": nn}.get(ju, 0)
        lu_ = _ld(ldu, mm if ucols else 1, 9, "ldu")
        u = _matrix(U, mm, ucols, lu_, es, 8, "U") if ucols else 0
        vrows = nn if jv in ("A", "S") else 0
        lv = _ld(ldvt, vrows or 1, 11, "ldvt")
        vt = _matrix(VT, nn, nn, lv, es, 10, "VT") if vrows else 0
        _lwork(lwork, 13, WORK)
        _vec(Work, WORK * es, 12, "Work")
        info = _vec(devInfo, 4, 15, "devInfo")
        if nn == 0:
            from ..driver.backend import api

            api().memset_d8(info, 0, 4, st or None)
            return
        vec = ju != "N" or jv != "N"
        tu, tvt = _thin_svd(dt, mm, nn, a, ld, sp, vec, info, _JacobiInfo(), st)
        if not vec:
            return
        if ju == "S" or (ju == "A" and mm == nn):
            _copy(dt, tu.ptr, mm, nn, 1, mm, u, lu_, st)
        elif ju == "A":
            _complete_into(dt, tu.ptr, mm, nn, u, lu_, st)
        elif ju == "O":
            _copy(dt, tu.ptr, mm, nn, 1, mm, a, ld, st)
        if jv in ("A", "S"):
            _copy(dt, tvt.ptr, nn, nn, 1, nn, vt, lv, st)
        elif jv == "O":
            _copy(dt, tvt.ptr, nn, nn, 1, nn, a, ld, st)
    _run(call, devInfo)


def _gesvdj_args(dt, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv):
    vec = _enum(_JOBZ, jobz, 1, "jobz")
    ec = _enum({0: False, 1: True}, econ, 2, "econ")
    mm, nn = _int(m, 3, "m"), _int(n, 4, "n")
    k = min(mm, nn)
    ld = _ld(lda, mm, 6, "lda")
    es = _op.itemsize(dt)
    a = _matrix(A, mm, nn, ld, es, 5, "A")
    sp = _vec(S, max(1, k) * _real_es(dt), 7, "S")
    ucols, vcols = (k, k) if ec else (mm, nn)
    lu_, lv = _ld(ldu, mm, 9, "ldu"), _ld(ldv, nn, 11, "ldv")
    u = _matrix(U, mm, ucols, lu_, es, 8, "U") if vec else 0
    v = _matrix(V, nn, vcols, lv, es, 10, "V") if vec else 0
    return vec, ec, mm, nn, k, ld, a, sp, lu_, u, lv, v


def _gesvdj_bufferSize(dt, handle, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, params):
    def call():
        _stream(handle)
        _gesvdj_args(dt, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv)
        _info(params)
        return WORK
    return _run(call)


def _gesvdj(dt, handle, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv, work, lwork, info, params):
    def call():
        from ..memory.array import DeviceArray

        st = _stream(handle)
        vec, ec, mm, nn, k, ld, a, sp, lu_, u, lv, v = _gesvdj_args(dt, jobz, econ, m, n, A, lda, S, U, ldu, V, ldv)
        _lwork(lwork, 13, WORK)
        _vec(work, WORK * _op.itemsize(dt), 12, "work")
        p = _vec(info, 4, 14, "devInfo")
        opts = _info(params)
        if k == 0:
            from ..driver.backend import api

            api().memset_d8(p, 0, 4, st or None)
            return
        wide = mm < nn
        if wide:  # A^H = U' S V'^H, so A = V' S U'^H: U = V', V = U'
            ah = DeviceArray((mm, nn), dt)  # column-major n x m
            _copy(dt, a, nn, mm, ld, 1, ah.ptr, nn, st, conj=True)
            tu, tvt = _thin_svd(dt, nn, mm, ah.ptr, nn, sp, vec, p, opts, st)
        else:
            tu, tvt = _thin_svd(dt, mm, nn, a, ld, sp, vec, p, opts, st)
        if not vec:
            return
        M, N = (nn, mm) if wide else (mm, nn)  # the thin factors: tu M x N, tvt N x N
        # left factor of the solved matrix (M x N, full M x M unless econ) and V = (V^H)^H (N x N)
        left, right = (v, u) if wide else (u, v)
        lleft, lright = (lv, lu_) if wide else (lu_, lv)
        if ec or M == N:
            _copy(dt, tu.ptr, M, N, 1, M, left, lleft, st)
        else:
            _complete_into(dt, tu.ptr, M, N, left, lleft, st)
        _copy(dt, tvt.ptr, N, N, N, 1, right, lright, st, conj=True)
    _run(call, info)


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
                       ("getrfBatched", _getrfBatched), ("getrsBatched", _getrsBatched),
                       (f"{'sy' if _real else 'he'}evd_bufferSize", _syevd_bufferSize),
                       (f"{'sy' if _real else 'he'}evd", _syevd),
                       (f"{'sy' if _real else 'he'}evj_bufferSize", _syevd_bufferSize),
                       (f"{'sy' if _real else 'he'}evj", _syevj),
                       (f"{'sy' if _real else 'he'}evjBatched_bufferSize", _syevjBatched_bufferSize),
                       (f"{'sy' if _real else 'he'}evjBatched", _syevjBatched),
                       ("gesvd_bufferSize", _gesvd_bufferSize), ("gesvd", _gesvd),
                       ("gesvdj_bufferSize", _gesvdj_bufferSize), ("gesvdj", _gesvdj)):
        globals()[f"{_l}{_name}"] = _bind(_fn, _d)
del _l, _d, _real, _q, _name, _fn
