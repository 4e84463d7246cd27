"""The cuBLAS operations behind both compatibility surfaces, on raw pointers.

Each function takes the handle's state snapshot, the dtype, the cuBLAS arguments, scalars as
``Scalar`` (a host value, or a device pointer in device pointer mode) and results as
``Result`` (a host address or a device pointer), and calls the oxicuda BLAS entry points. No
logic of its own beyond that mapping; argument checks live in the BLAS modules.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ..blas import geam_dgmm as geam_ops
from ..blas import level1, level1_rot, level2, level2_packed, level3, level3_rank
from ..blas.gemm_core import gemm_colmajor
from ..blas.handle import HandleState
from ..blas.operands import host_scalar
from .cublas_common import pointer_arg as P

#: Readers of real host scalars (host pointer mode), looked up once rather than per call.
_HOST_REAL_READERS = {"float32": ctypes.c_float.from_address, "float64": ctypes.c_double.from_address}
#: host addresses below this are never a scalar (the null page): reading one would crash
_LOWEST_HOST_ADDRESS = 1 << 16


@dataclass(frozen=True)
class Scalar:
    """A cuBLAS scalar argument: ``value`` (host) or ``ptr`` (device pointer, nonzero)."""

    value: complex | float = 0.0
    ptr: int = 0


@dataclass(frozen=True)
class Result:
    """Where a reduction result goes: a host address (``on_host``) or a device pointer."""

    address: int
    on_host: bool


def scalar_from_pointer(state: HandleState, address: object, dtype: str, what: str) -> Scalar:
    """cuBLAS's alpha/beta pointer: read on the host in host mode, passed through in device mode.
    A non-pointer (a Python float, a numpy array) raises TypeError before anything is read."""
    address = P(address, what)
    if state.device_pointers:
        if not address:
            raise ValueError(f"{what}: the device scalar pointer is NULL")
        return Scalar(0.0, address)
    if address < _LOWEST_HOST_ADDRESS:
        if address == 0:
            raise ValueError(f"{what}: the host scalar pointer is NULL")
        raise ValueError(f"{what}=0x{address:x} is not a host address (host pointer mode reads the scalar there)")
    read = _HOST_REAL_READERS.get(dtype)
    if read is not None:
        return Scalar(read(address).value, 0)
    return Scalar(host_scalar(address, dtype, what), 0)


def result_at(state: HandleState, address: object, what: str = "result") -> Result:
    """Where a reduction writes: a host address (host mode) or a device pointer."""
    address = P(address, what)
    if not state.device_pointers and 0 < address < _LOWEST_HOST_ADDRESS:
        raise ValueError(f"{what}=0x{address:x} is not a host address (host pointer mode writes the result there)")
    return Result(address, not state.device_pointers)


def _gemv():
    from ..blas.gemv import gemv_colmajor

    return gemv_colmajor


# -- level 1 ------------------------------------------------------------------------------------
def axpy(st: HandleState, dt: str, n, alpha: Scalar, x, incx, y, incy) -> None:
    x, y = P(x, "x"), P(y, "y")
    level1.axpy_ptr(n, alpha.value, x, incx, y, incy, dtype=dt, stream=st.stream, alpha_ptr=alpha.ptr)


def scal(st: HandleState, dt: str, n, alpha: Scalar, x, incx, alpha_real: bool = False) -> None:
    x = P(x, "x")
    level1.scal_ptr(n, alpha.value, x, incx, dtype=dt, stream=st.stream, alpha_ptr=alpha.ptr,
                    alpha_real=alpha_real)


def copy(st: HandleState, dt: str, n, x, incx, y, incy) -> None:
    x, y = P(x, "x"), P(y, "y")
    level1.copy_ptr(n, x, incx, y, incy, dtype=dt, stream=st.stream)


def swap(st: HandleState, dt: str, n, x, incx, y, incy) -> None:
    x, y = P(x, "x"), P(y, "y")
    level1.swap_ptr(n, x, incx, y, incy, dtype=dt, stream=st.stream)


def rot(st: HandleState, dt: str, n, x, incx, y, incy, c: Scalar, s: Scalar, s_real: bool) -> None:
    x, y = P(x, "x"), P(y, "y")
    level1.rot_ptr(n, x, incx, y, incy, float(c.value.real if isinstance(c.value, complex) else c.value),
                   s.value, dtype=dt, stream=st.stream, c_ptr=c.ptr, s_ptr=s.ptr, s_real=s_real)


def dot(st: HandleState, dt: str, n, x, incx, y, incy, result: Result, conj: bool = False) -> None:
    x, y = P(x, "x"), P(y, "y")
    level1.dot_ptr(n, x, incx, y, incy, result.address, dtype=dt, conj=conj, stream=st.stream,
                   result_on_host=result.on_host)


def reduce(kind: str, st: HandleState, dt: str, n, x, incx, result: Result) -> None:
    x = P(x, "x")
    fn = {"nrm2": level1.nrm2_ptr, "asum": level1.asum_ptr, "iamax": level1.iamax_ptr,
          "iamin": level1.iamin_ptr}[kind]
    fn(n, x, incx, result.address, dtype=dt, stream=st.stream, result_on_host=result.on_host)


# -- level 2 ------------------------------------------------------------------------------------
def gemv(st: HandleState, dt: str, trans: str, m, n, alpha: Scalar, a, lda, x, incx, beta: Scalar,
         y, incy) -> None:
    if bool(alpha.ptr) != bool(beta.ptr):
        raise ValueError("gemv: alpha and beta must both be host values or both device pointers")
    a, x, y = P(a, "A"), P(x, "x"), P(y, "y")
    _gemv()(trans, m, n, alpha.value, a, lda, x, incx, beta.value, y, incy, dtype=dt, stream=st.stream,
            alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def ger(st: HandleState, dt: str, m, n, alpha: Scalar, x, incx, y, incy, a, lda, conj: bool) -> None:
    x, y, a = P(x, "x"), P(y, "y"), P(a, "A")
    level2.ger_ptr(m, n, alpha.value, x, incx, y, incy, a, lda, dtype=dt, conj=conj, stream=st.stream,
                   alpha_ptr=alpha.ptr)


def symv(st: HandleState, dt: str, uplo: str, n, alpha: Scalar, a, lda, x, incx, beta: Scalar, y, incy,
         hermitian: bool) -> None:
    a, x, y = P(a, "A"), P(x, "x"), P(y, "y")
    level2.symv_ptr(uplo, n, alpha.value, a, lda, x, incx, beta.value, y, incy, dtype=dt,
                    hermitian=hermitian, stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def trsv(st: HandleState, dt: str, uplo: str, trans: str, diag: str, n, a, lda, x, incx) -> None:
    a, x = P(a, "A"), P(x, "x")
    level2.trsv_ptr(uplo, trans, diag, n, a, lda, x, incx, dtype=dt, stream=st.stream)


# -- level 3 ------------------------------------------------------------------------------------
def gemm(st: HandleState, dt: str, transa: str, transb: str, m, n, k, alpha: Scalar, a, lda, b, ldb,
         beta: Scalar, c, ldc, *, batch=1, stride_a=0, stride_b=0, stride_c=0, arrays=False,
         compute=None, c_dtype=None) -> None:
    if bool(alpha.ptr) != bool(beta.ptr):
        raise ValueError("gemm: alpha and beta must both be host values or both device pointers")
    if compute is None and dt == "float32" and st.allows_tf32:
        compute = "tf32"
    a, b, c = P(a, "A"), P(b, "B"), P(c, "C")
    if arrays:
        gemm_colmajor(transa, transb, m, n, k, alpha.value, 0, lda, 0, ldb, beta.value, 0, ldc, dtype=dt,
                      compute=compute, batch=batch, stride_a=stride_a, stride_b=stride_b, stride_c=stride_c,
                      a_array_ptr=a, b_array_ptr=b, c_array_ptr=c, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr,
                      stream=st.stream, c_dtype=c_dtype)
        return
    gemm_colmajor(transa, transb, m, n, k, alpha.value, a, lda, b, ldb, beta.value, c, ldc, dtype=dt,
                  compute=compute, batch=batch, stride_a=stride_a, stride_b=stride_b, stride_c=stride_c,
                  alpha_ptr=alpha.ptr, beta_ptr=beta.ptr, stream=st.stream, c_dtype=c_dtype)


def trsm(st: HandleState, dt: str, side: str, uplo: str, trans: str, diag: str, m, n, alpha: Scalar,
         a, lda, b, ldb) -> None:
    a, b = P(a, "A"), P(b, "B")
    level3.trsm_ptr(side, uplo, trans, diag, m, n, alpha.value, a, lda, b, ldb, dtype=dt, stream=st.stream,
                    alpha_ptr=alpha.ptr)


def syrk(st: HandleState, dt: str, uplo: str, trans: str, n, k, alpha: Scalar, a, lda, beta: Scalar,
         c, ldc) -> None:
    a, c = P(a, "A"), P(c, "C")
    level3.syrk_ptr(uplo, trans, n, k, alpha.value, a, lda, beta.value, c, ldc, dtype=dt, stream=st.stream,
                    alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def symm(st: HandleState, dt: str, side: str, uplo: str, m, n, alpha: Scalar, a, lda, b, ldb,
         beta: Scalar, c, ldc) -> None:
    a, b, c = P(a, "A"), P(b, "B"), P(c, "C")
    level3.symm_ptr(side, uplo, m, n, alpha.value, a, lda, b, ldb, beta.value, c, ldc, dtype=dt,
                    stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def trmm(st: HandleState, dt: str, side: str, uplo: str, trans: str, diag: str, m, n, alpha: Scalar,
         a, lda, b, ldb, c, ldc) -> None:
    a, b, c = P(a, "A"), P(b, "B"), P(c, "C")
    level3.trmm_ptr(side, uplo, trans, diag, m, n, alpha.value, a, lda, b, ldb, c, ldc, dtype=dt,
                    stream=st.stream, alpha_ptr=alpha.ptr)


def hemm(st: HandleState, dt: str, side: str, uplo: str, m, n, alpha: Scalar, a, lda, b, ldb,
         beta: Scalar, c, ldc) -> None:
    a, b, c = P(a, "A"), P(b, "B"), P(c, "C")
    level3.symm_ptr(side, uplo, m, n, alpha.value, a, lda, b, ldb, beta.value, c, ldc, dtype=dt, hermitian=True,
                    stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


# -- banded, packed and triangular level 2 ------------------------------------------------------
def gbmv(st: HandleState, dt: str, trans: str, m, n, kl, ku, alpha: Scalar, a, lda, x, incx, beta: Scalar, y,
         incy) -> None:
    a, x, y = P(a, "A"), P(x, "x"), P(y, "y")
    level2_packed.gbmv_ptr(trans, m, n, kl, ku, alpha.value, a, lda, x, incx, beta.value, y, incy, dtype=dt,
                           stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def sbmv(st: HandleState, dt: str, uplo: str, n, k, alpha: Scalar, a, lda, x, incx, beta: Scalar, y, incy,
         hermitian: bool) -> None:
    a, x, y = P(a, "A"), P(x, "x"), P(y, "y")
    level2_packed.sbmv_ptr(uplo, n, k, alpha.value, a, lda, x, incx, beta.value, y, incy, dtype=dt,
                           hermitian=hermitian, stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def spmv(st: HandleState, dt: str, uplo: str, n, alpha: Scalar, ap, x, incx, beta: Scalar, y, incy,
         hermitian: bool) -> None:
    ap, x, y = P(ap, "AP"), P(x, "x"), P(y, "y")
    level2_packed.spmv_ptr(uplo, n, alpha.value, ap, x, incx, beta.value, y, incy, dtype=dt, hermitian=hermitian,
                           stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def triangular_mv(kind: str, st: HandleState, dt: str, uplo: str, trans: str, diag: str, n, *args) -> None:
    """trmv/tbmv/tpmv/tbsv/tpsv: ``args`` are the cuBLAS arguments after n (k, A, lda, x, incx
    as the routine takes them)."""
    fn = {"trmv": level2_packed.trmv_ptr, "tbmv": level2_packed.tbmv_ptr, "tpmv": level2_packed.tpmv_ptr,
          "tbsv": level2_packed.tbsv_ptr, "tpsv": level2_packed.tpsv_ptr}[kind]
    names = {"trmv": ("A", None, "x", None), "tbmv": (None, "A", None, "x", None), "tpmv": ("AP", "x", None),
             "tbsv": (None, "A", None, "x", None), "tpsv": ("AP", "x", None)}[kind]
    args = [P(v, w) if w else v for v, w in zip(args, names)]
    fn(uplo, trans, diag, n, *args, dtype=dt, stream=st.stream)


def rank_update(kind: str, st: HandleState, dt: str, uplo: str, n, alpha: Scalar, *args, hermitian: bool) -> None:
    """syr/syr2/spr/spr2 (``hermitian``: her/her2/hpr/hpr2): ``args`` after alpha as cuBLAS
    orders them (x, incx[, y, incy], A, lda | AP)."""
    names = {"syr": ("x", None, "A", None), "syr2": ("x", None, "y", None, "A", None), "spr": ("x", None, "AP"),
             "spr2": ("x", None, "y", None, "AP")}[kind]
    args = [P(v, w) if w else v for v, w in zip(args, names)]
    fn = {"syr": level2_packed.syr_ptr, "syr2": level2_packed.syr2_ptr, "spr": level2_packed.spr_ptr,
          "spr2": level2_packed.spr2_ptr}[kind]
    fn(uplo, n, alpha.value, *args, dtype=dt, hermitian=hermitian, stream=st.stream, alpha_ptr=alpha.ptr)


# -- level 3 rank updates, batched trsm ---------------------------------------------------------
def rank_k(kind: str, st: HandleState, dt: str, uplo: str, trans: str, n, k, alpha: Scalar, a, lda, *rest) -> None:
    """herk (rest: beta, C, ldc) and syr2k/her2k (rest: B, ldb, beta, C, ldc)."""
    a = P(a, "A")
    if kind == "herk":
        beta, c, ldc = rest
        level3_rank.herk_ptr(uplo, trans, n, k, alpha.value, a, lda, beta.value, P(c, "C"), ldc, dtype=dt,
                             stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)
        return
    b, ldb, beta, c, ldc = rest
    fn = level3_rank.syr2k_ptr if kind == "syr2k" else level3_rank.her2k_ptr
    fn(uplo, trans, n, k, alpha.value, a, lda, P(b, "B"), ldb, beta.value, P(c, "C"), ldc, dtype=dt,
       stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def trsm_batched(st: HandleState, dt: str, side: str, uplo: str, trans: str, diag: str, m, n, alpha: Scalar,
                 a_array, lda, b_array, ldb, batch) -> None:
    a_array, b_array = P(a_array, "Aarray"), P(b_array, "Barray")
    level3_rank.trsm_batched_ptr(side, uplo, trans, diag, m, n, alpha.value, a_array, lda, b_array, ldb, batch,
                                 dtype=dt, stream=st.stream, alpha_ptr=alpha.ptr)


# -- extensions ---------------------------------------------------------------------------------
def geam(st: HandleState, dt: str, transa: str, transb: str, m, n, alpha: Scalar, a, lda, beta: Scalar, b, ldb,
         c, ldc) -> None:
    a, b, c = P(a, "A"), P(b, "B"), P(c, "C")
    geam_ops.geam_ptr(transa, transb, m, n, alpha.value, a, lda, beta.value, b, ldb, c, ldc, dtype=dt,
                      stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def dgmm(st: HandleState, dt: str, side: str, m, n, a, lda, x, incx, c, ldc) -> None:
    a, x, c = P(a, "A"), P(x, "x"), P(c, "C")
    geam_ops.dgmm_ptr(side, m, n, a, lda, x, incx, c, ldc, dtype=dt, stream=st.stream)


def pack(direction: str, st: HandleState, dt: str, uplo: str, n, *args) -> None:
    """trttp (args: A, lda, AP) or tpttr (args: AP, A, lda)."""
    if direction == "trttp":
        a, lda, ap = args
        geam_ops.trttp_ptr(uplo, n, P(a, "A"), lda, P(ap, "AP"), dtype=dt, stream=st.stream)
    else:
        ap, a, lda = args
        geam_ops.tpttr_ptr(uplo, n, P(ap, "AP"), P(a, "A"), lda, dtype=dt, stream=st.stream)


# -- rotations ----------------------------------------------------------------------------------
def rotm(st: HandleState, dt: str, n, x, incx, y, incy, param: int) -> None:
    x, y = P(x, "x"), P(y, "y")
    level1_rot.rotm_ptr(n, x, incx, y, incy, P(param, "param"), dtype=dt, stream=st.stream,
                        param_on_host=not st.device_pointers)


def rotg(st: HandleState, dt: str, a, b, c, s) -> None:
    level1_rot.rotg_ptr(P(a, "a"), P(b, "b"), P(c, "c"), P(s, "s"), dtype=dt, stream=st.stream,
                        on_host=not st.device_pointers)


def rotmg(st: HandleState, dt: str, d1, d2, x1, y1, param) -> None:
    level1_rot.rotmg_ptr(P(d1, "d1"), P(d2, "d2"), P(x1, "x1"), P(y1, "y1"), P(param, "param"), dtype=dt,
                         stream=st.stream, on_host=not st.device_pointers)


# -- batched LU (through oxicuda.solver's one-CTA-per-matrix kernels) ----------------------------
def getrf_batched(st: HandleState, dt: str, n, a_array, lda, ipiv, info, batch) -> None:
    """cublas<t>getrfBatched: in-place LU of ``batch`` n x n matrices (pivoting unless ipiv is 0);
    ``info`` a device array of ``batch`` ints."""
    from ..solver import batched

    batched.getrf_batched_ptr(n, P(a_array, "Aarray"), lda, P(ipiv, "PivotArray"),
                              P(info, "infoArray"), batch, dtype=dt, stream=st.stream)


def getrs_batched(st: HandleState, dt: str, trans: str, n, nrhs, a_array, lda, ipiv, b_array, ldb,
                  info, batch) -> None:
    """cublas<t>getrsBatched: ``info`` is a host int (0, or -i for a bad i-th argument)."""
    from ..solver import batched

    a_array, b_array = P(a_array, "Aarray"), P(b_array, "Barray")
    ipiv, info = P(ipiv, "devIpiv"), P(info, "info")
    out = ctypes.c_int.from_address(info) if info else None
    try:
        batched.getrs_batched_ptr(trans, n, nrhs, a_array, lda, ipiv, b_array, ldb, batch, dtype=dt,
                                  stream=st.stream)
    except ValueError:
        if out is not None:
            out.value = -1
        raise
    if out is not None:
        out.value = 0


def getri_batched(st: HandleState, dt: str, n, a_array, lda, ipiv, c_array, ldc, info, batch) -> None:
    """cublas<t>getriBatched: C_z = inverse of A_z from getrf's factors, out of place."""
    from ..solver import batched

    batched.getri_batched_ptr(n, P(a_array, "Aarray"), lda, P(ipiv, "PivotArray"),
                              P(c_array, "Carray"), ldc, P(info, "infoArray"), batch, dtype=dt,
                              stream=st.stream)


# -- least squares (scikit-cuda's gelsBatched) --------------------------------------------------
def gels_batched(st: HandleState, dt: str, trans: str, m, n, nrhs, a_array, lda, c_array, ldc, info,
                 dev_info, batch) -> None:
    """cublas<t>gelsBatched: for each z, the least-squares solution of A_z X = C_z (A_z m x n,
    m >= n, full rank; only trans 'N', as cuBLAS). On exit A_z holds its QR factorization
    (Householder reflectors below R) and the first n rows of C_z hold X_z. ``info`` (host int):
    0, or -i when the i-th argument is invalid (then nothing is touched and the call raises).
    ``devInfoArray[z]`` (device int32): 0, or j > 0 when R_z's j-th diagonal element is zero
    (A_z is rank deficient; its C_z is then not a solution).

    Each matrix runs our geqrf (blocked Householder QR), ormqr (Q^H C) and trsm (R X = (Q^H C)
    [:n]); the zero-diagonal test is iamin over R's diagonal on the device, whose index and
    element come back to decide devInfo."""
    import numpy as np

    from ..blas import operands as op
    from ..driver.backend import api
    from ..memory.workspace import workspace_ptr
    from ..solver import geqrf

    a_array, c_array = P(a_array, "Aarray"), P(c_array, "Carray")
    info, dev_info = P(info, "info"), P(dev_info, "devInfoArray")
    out = ctypes.c_int.from_address(info) if info else None

    def bad(position: int, why: str):
        if out is not None:
            out.value = -position
        raise ValueError(f"gelsBatched: {why}")

    if trans != "N":
        bad(2, f"trans={trans!r}; cuBLAS's gelsBatched solves only the non-transposed problem")
    for position, name, value in ((3, "m", m), (4, "n", n), (5, "nrhs", nrhs), (12, "batchSize", batch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            bad(position, f"{name}={value!r}; a non-negative int is required")
    m, n, nrhs, batch = int(m), int(n), int(nrhs), int(batch)
    if m < n:
        bad(3, f"m={m} < n={n}; gelsBatched solves overdetermined or square systems (m >= n)")
    if isinstance(lda, bool) or not isinstance(lda, (int, np.integer)) or lda < max(1, m):
        bad(7, f"lda={lda!r}; at least max(1, m) = {max(1, m)}")
    if isinstance(ldc, bool) or not isinstance(ldc, (int, np.integer)) or ldc < max(1, m):
        bad(9, f"ldc={ldc!r}; at least max(1, m) = {max(1, m)}")
    lda, ldc = int(lda), int(ldc)
    if batch and (not a_array or not c_array or not dev_info):
        bad(6 if not a_array else 8 if not c_array else 11, "a NULL pointer array or devInfoArray")
    es = op.itemsize(dt)
    if batch:
        for p, what in ((a_array, "Aarray"), (c_array, "Carray")):
            if p % 8:
                bad(6 if what == "Aarray" else 8, f"{what}: 0x{p:x} is not 8-byte aligned")
            op.check_span(p, 8 * batch, f"gelsBatched: {what} ({batch} pointers)")
        op.check_span(dev_info, 4 * batch, f"gelsBatched: devInfoArray ({batch} int32)")
    drv, stream = api(), st.stream
    s = stream or None

    def wait():
        if s is None:
            drv.ctx_synchronize()
        else:
            drv.stream_synchronize(s)

    ptrs = np.zeros((2, max(batch, 1)), np.uint64)
    if batch:  # the pointer arrays in the handle's stream order
        drv.memcpy_dtoh(ptrs[0].ctypes.data, a_array, 8 * batch, s)
        drv.memcpy_dtoh(ptrs[1].ctypes.data, c_array, 8 * batch, s)
        wait()
    for z in range(batch):  # every matrix checked before any is touched
        op.check_span(int(ptrs[0, z]), op.matrix_span(m, n, lda, es), f"gelsBatched: A[{z}] ({m}x{n}, lda={lda})")
        op.check_span(int(ptrs[1, z]), op.matrix_span(m, nrhs, ldc, es), f"gelsBatched: C[{z}] ({m}x{nrhs}, ldc={ldc})")
    if out is not None:
        out.value = 0
    if batch == 0:
        return
    flags = np.zeros(batch, np.int32)
    if n:
        tau = workspace_ptr((np.dtype(dt), n), stream)
        where = np.zeros(1, np.int32)
        element = np.zeros(1, np.dtype(dt))
        for z in range(batch):
            a, c = int(ptrs[0, z]), int(ptrs[1, z])
            geqrf.geqrf_ptr(m, n, a, lda, tau, dtype=dt, stream=stream)
            if nrhs:
                geqrf.ormqr_ptr("L", "C", m, nrhs, n, a, lda, tau, c, ldc, dtype=dt, stream=stream)
            level1.iamin_ptr(n, a, lda + 1, where.ctypes.data, dtype=dt, stream=stream, result_on_host=True)
            j = int(where[0])
            drv.memcpy_dtoh(element.ctypes.data, a + (j - 1) * (lda + 1) * es, es, s)
            wait()
            if element[0] == 0:
                flags[z] = j
            if nrhs:
                level3.trsm_ptr("L", "U", "N", "N", n, nrhs, 1.0, a, lda, c, ldc, dtype=dt, stream=stream)
    drv.memcpy_htod(dev_info, flags.ctypes.data, 4 * batch, s)
    wait()  # flags is a local host buffer
