"""BLAS level 3 rank updates beyond syrk, and batched trsm, at the pointer level (cuBLAS
semantics, column-major):

- ``herk_ptr``: C = alpha op(A) op(A)^H + beta C (alpha, beta real; the diagonal stays real);
- ``syr2k_ptr``: C = alpha (op(A) op(B)^T + op(B) op(A)^T) + beta C;
- ``her2k_ptr``: C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C (beta real);
- ``trsm_batched_ptr``: trsm over device arrays of matrix pointers.

Each update is one GEMM (``gemm_colmajor``) into a workspace W, then one ``blas3_axpby`` launch
(through a cached launch plan) that combines W, its transpose where the form needs it, and C on
the ``uplo`` triangle only: the other triangle is never written. Scalars are values or device
pointers; in device mode only the combining kernel reads them, so nothing synchronizes.
"""

from __future__ import annotations

import numpy as np

from ..driver.backend import api
from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from . import operands as op
from .flags import trans_op
from .level1_kernels import BLOCK
from .level2 import _uplo
from .level3 import _TAG_PRODUCT, _gemm, _scratch, _side, trsm_ptr
from .level3_kernels import AxpbySpec

MAX_GRID_Y = 65535
PLANS = PlanCache("blas3_rank")

__all__ = ["PLANS", "her2k_ptr", "herk_ptr", "syr2k_ptr", "trsm_batched_ptr"]


def _combine(dt: str, uplo: str, form: str, n: int, w: int, c: int, ldc: int, alpha: tuple, beta: tuple,
             stream: int) -> None:
    facts = device_facts()
    spec = AxpbySpec(arch=facts.arch, dtype=dt, region=uplo, form=form)
    grid = ((n + BLOCK - 1) // BLOCK, min(n, MAX_GRID_Y))
    plan = PLANS.get_or_build((facts.ordinal, spec, n), lambda: LaunchPlan(spec.kernel_name(), [KernelStep(
        spec, grid, BLOCK, lambda p, s, ws: (n, n, p[0], n, p[1], s[0], *s[1:]))]))
    plan.run((w, c), (ldc, *alpha, *beta), stream)


def _scalar(value, ptr, what: str, real: bool) -> tuple[float, float, int]:
    re, im = op.scalar_parts(value, what)
    if real and im != 0:
        raise ValueError(f"{what}={value!r}; it must be real")
    return re, im, op.check_pointer(ptr, f"{what} pointer")


def _rank_k(name: str, form: str, uplo, trans, n, k, alpha, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc, dtype,
            stream, alpha_ptr, beta_ptr) -> None:
    dt = op.dtype_name(dtype, name)
    herm = form.startswith("herm")
    if herm and not dt.startswith("complex"):
        raise TypeError(f"{name}: dtype {dt}; the Hermitian update takes complex64/complex128 (use syrk/syr2k)")
    u, t = _uplo(uplo, name), trans_op(trans, name)
    allowed = ("N", "C") if herm else (("N", "T") if dt.startswith("complex") else ("N", "T", "C"))
    if t not in allowed:
        raise ValueError(f"{name}: trans={trans!r}; allowed {allowed} for {dt}")
    t = "T" if (t == "C" and not dt.startswith("complex")) else t
    n, k = op.check_int(n, f"{name}: n", minimum=0), op.check_int(k, f"{name}: k", minimum=0)
    rows = n if t == "N" else k
    two = b_ptr is not None
    lda = op.check_int(lda, f"{name}: lda", minimum=max(1, rows))
    ldb = op.check_int(ldb, f"{name}: ldb", minimum=max(1, rows)) if two else lda
    ldc = op.check_int(ldc, f"{name}: ldc", minimum=max(1, n))
    a = op.check_pointer(a_ptr, f"{name}: A")
    b = op.check_pointer(b_ptr, f"{name}: B") if two else a
    c = op.check_pointer(c_ptr, f"{name}: C")
    alpha_s = _scalar(alpha, alpha_ptr, f"{name}: alpha", real=form == "herm")
    beta_s = _scalar(beta, beta_ptr, f"{name}: beta", real=herm)
    if bool(alpha_s[2]) != bool(beta_s[2]):
        raise ValueError(f"{name}: alpha and beta must both be values or both device pointers")
    if n == 0:
        return
    es = op.itemsize(dt)
    cols = k if t == "N" else n
    if k > 0:
        op.check_span(a, op.matrix_span(rows, cols, lda, es), f"{name}: A ({rows}x{cols}, lda={lda})")
        if two:
            op.check_span(b, op.matrix_span(rows, cols, ldb, es), f"{name}: B ({rows}x{cols}, ldb={ldb})")
    op.check_span(c, op.matrix_span(n, n, ldc, es), f"{name}: C ({n}x{n}, ldc={ldc})")
    s = op.stream_of(stream)
    second = "C" if herm else "T"
    with op.workspace_sequence:  # workspaces are shared per stream: no interleaving
        w = _scratch(n * n * es, _TAG_PRODUCT, s)
        if k > 0:
            ta, tb = ("N", second) if t == "N" else (t, "N")
            _gemm(ta, tb, n, n, k, 1.0, a, lda, b, ldb, 0.0, w, n, dtype=dt, stream=s)
        else:
            api().memset_d8(w, 0, n * n * es, s or None)
        _combine(dt, u, form, n, w, c, ldc, alpha_s, beta_s, s)


def herk_ptr(uplo: str, trans: str, n: int, k: int, alpha: float, a_ptr: int, lda: int, beta: float, c_ptr: int,
             ldc: int, *, dtype: object, stream: object = None, alpha_ptr: int = 0, beta_ptr: int = 0) -> None:
    """C = alpha op(A) op(A)^H + beta C on the ``uplo`` triangle of the Hermitian C (n x n),
    op(A) n x k (trans 'N': A n x k; 'C': A k x n); alpha and beta real; diagonal kept real."""
    _rank_k("herk", "herm", uplo, trans, n, k, alpha, a_ptr, lda, None, 0, beta, c_ptr, ldc, dtype, stream,
            alpha_ptr, beta_ptr)


def syr2k_ptr(uplo: str, trans: str, n: int, k: int, alpha, a_ptr: int, lda: int, b_ptr: int, ldb: int, beta,
              c_ptr: int, ldc: int, *, dtype: object, stream: object = None, alpha_ptr: int = 0,
              beta_ptr: int = 0) -> None:
    """C = alpha (op(A) op(B)^T + op(B) op(A)^T) + beta C on the ``uplo`` triangle (n x n)."""
    _rank_k("syr2k", "sym2", uplo, trans, n, k, alpha, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc, dtype, stream,
            alpha_ptr, beta_ptr)


def her2k_ptr(uplo: str, trans: str, n: int, k: int, alpha, a_ptr: int, lda: int, b_ptr: int, ldb: int,
              beta: float, c_ptr: int, ldc: int, *, dtype: object, stream: object = None, alpha_ptr: int = 0,
              beta_ptr: int = 0) -> None:
    """C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C on the ``uplo`` triangle,
    beta real, diagonal kept real."""
    _rank_k("her2k", "herm2", uplo, trans, n, k, alpha, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc, dtype,
            stream, alpha_ptr, beta_ptr)


def trsm_batched_ptr(side: str, uplo: str, trans: str, diag: str, m: int, n: int, alpha, a_array_ptr: int,
                     lda: int, b_array_ptr: int, ldb: int, batch: int, *, dtype: object, stream: object = None,
                     alpha_ptr: int = 0) -> None:
    """trsm on each (A[i], B[i]) of two device arrays of ``batch`` matrix pointers. The pointer
    arrays are read back to the host once (one small copy) to check every matrix's span before
    any solve; each solve is the blocked trsm of ``trsm_ptr``."""
    dt = op.dtype_name(dtype, "trsmBatched")
    batch = op.check_int(batch, "trsmBatched: batchCount", minimum=0)
    pa = op.check_pointer(a_array_ptr, "trsmBatched: Aarray")
    pb = op.check_pointer(b_array_ptr, "trsmBatched: Barray")
    if batch == 0 or op.check_int(m, "trsmBatched: m", minimum=0) == 0 or op.check_int(n, "trsmBatched: n",
                                                                                        minimum=0) == 0:
        return
    op.check_span(pa, 8 * batch, f"trsmBatched: Aarray ({batch} pointers)")
    op.check_span(pb, 8 * batch, f"trsmBatched: Barray ({batch} pointers)")
    a_list, b_list = np.zeros(batch, np.uint64), np.zeros(batch, np.uint64)
    s = op.stream_of(stream)
    if op._capture.ACTIVE:
        op._capture.check_host_copy(s, "reading the matrix pointer arrays back to the host")
    drv = api()
    drv.memcpy_dtoh(a_list.ctypes.data, pa, 8 * batch, s or None)
    drv.memcpy_dtoh(b_list.ctypes.data, pb, 8 * batch, s or None)
    if s:
        drv.stream_synchronize(s)
    sd = _side(side, "trsmBatched")
    ka = m if sd == "L" else n
    lda = op.check_int(lda, "trsmBatched: lda", minimum=max(1, ka))
    ldb = op.check_int(ldb, "trsmBatched: ldb", minimum=max(1, m))
    es = op.itemsize(dt)
    for i in range(batch):  # every matrix checked before the first solve: nothing half-written
        op.check_span(int(a_list[i]), op.matrix_span(ka, ka, lda, es), f"trsmBatched: A[{i}] ({ka}x{ka})")
        op.check_span(int(b_list[i]), op.matrix_span(m, n, ldb, es), f"trsmBatched: B[{i}] ({m}x{n})")
    for i in range(batch):
        trsm_ptr(side, uplo, trans, diag, m, n, alpha, int(a_list[i]), lda, int(b_list[i]), ldb, dtype=dt,
                 stream=s, alpha_ptr=alpha_ptr)
