"""The cuBLAS operations behind both compatibility surfaces, on raw pointers.

Each function takes the handle's state snapshot, the dtype, the cuBLAS arguments, scalars as
``Scalar`` (a host value, or a device pointer in device pointer mode) and results as
``Result`` (a host address or a device pointer), and calls the oxicuda BLAS entry points. No
logic of its own beyond that mapping; argument checks live in the BLAS modules.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ..blas import level1, level2, level3
from ..blas.gemm_core import gemm_colmajor
from ..blas.handle import HandleState
from ..blas.operands import check_pointer, host_scalar

#: Readers of real host scalars (host pointer mode), looked up once rather than per call.
_HOST_REAL_READERS = {"float32": ctypes.c_float.from_address, "float64": ctypes.c_double.from_address}
_ADDRESS_LIMIT = 1 << 64


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


def scalar_from_pointer(state: HandleState, address: int, dtype: str, what: str) -> Scalar:
    """cuBLAS's alpha/beta pointer: read on the host in host mode, passed through in device mode."""
    if state.device_pointers:
        ptr = check_pointer(address, what)  # an array's pointer, never int(array), its value
        if not ptr:
            raise ValueError(f"{what}: the device scalar pointer is NULL")
        return Scalar(0.0, ptr)
    read = _HOST_REAL_READERS.get(dtype)
    if read is not None and type(address) is int and address > 0:
        return Scalar(read(address).value, 0)
    return Scalar(host_scalar(int(address), dtype, what), 0)


def result_at(state: HandleState, address: int) -> Result:
    return Result(check_pointer(address, "result"), not state.device_pointers)


def _gemv():
    from ..blas.gemv import gemv_colmajor

    return gemv_colmajor


# -- level 1 ------------------------------------------------------------------------------------
def axpy(st: HandleState, dt: str, n, alpha: Scalar, x, incx, y, incy) -> None:
    level1.axpy_ptr(n, alpha.value, x, incx, y, incy, dtype=dt, stream=st.stream, alpha_ptr=alpha.ptr)


def scal(st: HandleState, dt: str, n, alpha: Scalar, x, incx, alpha_real: bool = False) -> None:
    level1.scal_ptr(n, alpha.value, x, incx, dtype=dt, stream=st.stream, alpha_ptr=alpha.ptr,
                    alpha_real=alpha_real)


def copy(st: HandleState, dt: str, n, x, incx, y, incy) -> None:
    level1.copy_ptr(n, x, incx, y, incy, dtype=dt, stream=st.stream)


def swap(st: HandleState, dt: str, n, x, incx, y, incy) -> None:
    level1.swap_ptr(n, x, incx, y, incy, dtype=dt, stream=st.stream)


def rot(st: HandleState, dt: str, n, x, incx, y, incy, c: Scalar, s: Scalar, s_real: bool) -> None:
    level1.rot_ptr(n, x, incx, y, incy, float(c.value.real if isinstance(c.value, complex) else c.value),
                   s.value, dtype=dt, stream=st.stream, c_ptr=c.ptr, s_ptr=s.ptr, s_real=s_real)


def dot(st: HandleState, dt: str, n, x, incx, y, incy, result: Result, conj: bool = False) -> None:
    level1.dot_ptr(n, x, incx, y, incy, result.address, dtype=dt, conj=conj, stream=st.stream,
                   result_on_host=result.on_host)


def reduce(kind: str, st: HandleState, dt: str, n, x, incx, result: Result) -> None:
    fn = {"nrm2": level1.nrm2_ptr, "asum": level1.asum_ptr, "iamax": level1.iamax_ptr,
          "iamin": level1.iamin_ptr}[kind]
    fn(n, x, incx, result.address, dtype=dt, stream=st.stream, result_on_host=result.on_host)


# -- level 2 ------------------------------------------------------------------------------------
def gemv(st: HandleState, dt: str, trans: str, m, n, alpha: Scalar, a, lda, x, incx, beta: Scalar,
         y, incy) -> None:
    if bool(alpha.ptr) != bool(beta.ptr):
        raise ValueError("gemv: alpha and beta must both be host values or both device pointers")
    a, x, y = check_pointer(a, "gemv: A"), check_pointer(x, "gemv: x"), check_pointer(y, "gemv: y")
    _gemv()(trans, m, n, alpha.value, a, lda, x, incx, beta.value, y, incy, dtype=dt, stream=st.stream,
            alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def ger(st: HandleState, dt: str, m, n, alpha: Scalar, x, incx, y, incy, a, lda, conj: bool) -> None:
    level2.ger_ptr(m, n, alpha.value, x, incx, y, incy, a, lda, dtype=dt, conj=conj, stream=st.stream,
                   alpha_ptr=alpha.ptr)


def symv(st: HandleState, dt: str, uplo: str, n, alpha: Scalar, a, lda, x, incx, beta: Scalar, y, incy,
         hermitian: bool) -> None:
    level2.symv_ptr(uplo, n, alpha.value, a, lda, x, incx, beta.value, y, incy, dtype=dt,
                    hermitian=hermitian, stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def trsv(st: HandleState, dt: str, uplo: str, trans: str, diag: str, n, a, lda, x, incx) -> None:
    level2.trsv_ptr(uplo, trans, diag, n, a, lda, x, incx, dtype=dt, stream=st.stream)


# -- level 3 ------------------------------------------------------------------------------------
def gemm(st: HandleState, dt: str, transa: str, transb: str, m, n, k, alpha: Scalar, a, lda, b, ldb,
         beta: Scalar, c, ldc, *, batch=1, stride_a=0, stride_b=0, stride_c=0, arrays=False,
         compute=None, c_dtype=None) -> None:
    if bool(alpha.ptr) != bool(beta.ptr):
        raise ValueError("gemm: alpha and beta must both be host values or both device pointers")
    if compute is None and dt == "float32" and st.allows_tf32:
        compute = "tf32"
    # plain int addresses (the common case) skip check_pointer's general conversions
    if not (type(a) is int and 0 <= a < _ADDRESS_LIMIT):
        a = check_pointer(a, "gemm: A")
    if not (type(b) is int and 0 <= b < _ADDRESS_LIMIT):
        b = check_pointer(b, "gemm: B")
    if not (type(c) is int and 0 <= c < _ADDRESS_LIMIT):
        c = check_pointer(c, "gemm: C")
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
    level3.trsm_ptr(side, uplo, trans, diag, m, n, alpha.value, a, lda, b, ldb, dtype=dt, stream=st.stream,
                    alpha_ptr=alpha.ptr)


def syrk(st: HandleState, dt: str, uplo: str, trans: str, n, k, alpha: Scalar, a, lda, beta: Scalar,
         c, ldc) -> None:
    level3.syrk_ptr(uplo, trans, n, k, alpha.value, a, lda, beta.value, c, ldc, dtype=dt, stream=st.stream,
                    alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def symm(st: HandleState, dt: str, side: str, uplo: str, m, n, alpha: Scalar, a, lda, b, ldb,
         beta: Scalar, c, ldc) -> None:
    level3.symm_ptr(side, uplo, m, n, alpha.value, a, lda, b, ldb, beta.value, c, ldc, dtype=dt,
                    stream=st.stream, alpha_ptr=alpha.ptr, beta_ptr=beta.ptr)


def trmm(st: HandleState, dt: str, side: str, uplo: str, trans: str, diag: str, m, n, alpha: Scalar,
         a, lda, b, ldb, c, ldc) -> None:
    level3.trmm_ptr(side, uplo, trans, diag, m, n, alpha.value, a, lda, b, ldb, c, ldc, dtype=dt,
                    stream=st.stream, alpha_ptr=alpha.ptr)
