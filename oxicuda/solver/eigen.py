"""The Hermitian eigensolver on the device (cuSOLVER's syevj/syevd semantics, column-major).

- ``syevj_ptr`` runs the ``solver_syevj`` Jacobi kernel, one CTA per matrix of a batch, with A
  and V in shared memory when they fit the device's opt-in limit (orders up to 64) and in a
  global scratch otherwise (any order, but one CTA per matrix: slow for large orders).
- ``syevd_ptr`` is the tridiagonal path for large orders:
  1. ``sytrd_ptr``: Householder tridiagonalization (sytd2/hetd2: per column a geqrf reflector,
     hemv, ``solver_sytrd_x``, the lower-triangle her2 ``solver_sytrd_r2``), the reflectors kept below the sub-diagonal and their
     tau per matrix (LAPACK's UPLO='L' storage);
  2. the eigenvalues by bisection (``solver_stebz``, one thread per eigenvalue);
  3. the tridiagonal's eigenvectors by inverse iteration (``solver_stein``, LAPACK's stein
     without its cluster loop: one thread per eigenvalue, partial-pivoting LU of T - lambda I,
     a few solves from a pseudo-random start; the complex sub-diagonal of hetrd is made real
     by a diagonal unitary scaling inside the kernel);
  4. reorthogonalization: a blocked Householder QR of the whole n x n Y in ascending
     eigenvalue order (geqrf + orgqr, compact WY through oxicuda.blas GEMMs). Stein runs
     modified Gram-Schmidt against the earlier vectors of a cluster (gap < 1e-3 ||T||); for
     large random matrices the average gap is below that, so the whole spectrum chains into
     one cluster and stein's MGS becomes n^3 sequential work. Gram-Schmidt in the same order
     over all vectors does what stein's does inside clusters (a vector's components along
     vectors of well-separated eigenvalues are eps ||T|| / gap already, so removing them
     moves its residual by O(eps ||T||)), runs at GEMM speed, and is orthogonal to working
     precision by construction (Householder). Vectors of a repeated eigenvalue come from
     independent start vectors and so span its eigenspace; the QR makes them orthonormal.
     Its price is 8/3 n^3 flops through geqrf's one-CTA panels (geqrf float64 n = 8192
     measured 0.79 TFLOP/s, about 0.9 s, on the H200 in session 6): likely the largest term of
     this path until geqrf's panel is faster; reorthogonalizing only clusters (a kernel per
     cluster, found on the device) would avoid it for well-separated spectra;
  5. back-transformation Z = Q Y (ormtr: ormqr on rows 1..n-1, blocked compact WY).
  Chosen over divide and conquer (stedc) for what it needs: two small kernels and the blocked
  QR the solver already has, against a secular-equation solver, deflation and a merge tree.
"""

from __future__ import annotations

import numpy as np

from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from . import dispatch
from .kernels.common import esize
from .kernels.jacobi_kernels import (
    JACOBI_THREADS,
    SMALL_MAX,
    SyevjSpec,
    scratch_elements,
    shared_bytes,
)
from .lu import _check_batch

PLANS = PlanCache("solver.eigen")
#: syevj's defaults (cuSOLVER: tolerance machine epsilon, 100 sweeps); Jacobi converges
#: quadratically, so well-scaled matrices take 6-10 sweeps
MAX_SWEEPS = 100


def default_tol(dtype: str) -> float:
    return float(np.finfo(dtype).eps)


def syevj_ptr(uplo: str, n: int, a: int, lda: int, w: int, v: int, ldv: int, info: int, *, dtype: str,
              batch: int = 1, stride_a: int = 0, stride_w: int = 0, stride_v: int = 0, vectors: bool = True,
              tol: float | None = None, max_sweeps: int = MAX_SWEEPS, stream: int = 0) -> None:
    """Eigenvalues (ascending, into ``w``, real dtype) and, with ``vectors``, orthonormal
    eigenvectors (columns of ``v``) of ``batch`` Hermitian n x n matrices whose ``uplo`` triangle
    is stored at ``a`` (not modified). ``info``: per matrix 0, or max_sweeps + 1 when the sweeps
    ran out. Checked arguments only."""
    if n == 0 or batch == 0:
        return
    _check_batch(batch, "syevj")
    facts = device_facts()
    fits = n <= min(SMALL_MAX, dispatch.DISPATCH["SMALL_MAX"]) and \
        shared_bytes(n, dtype, vectors) <= facts.smem_per_block_optin - 256  # the kernel's static arrays
    space = "shared" if fits else "global"
    key = (dtype, uplo, vectors, space, n, batch, facts.ordinal)
    spec = SyevjSpec(arch=facts.arch, dtype=dtype, uplo=uplo, vectors=vectors, space=space)
    step = PLANS.get_or_build(key, lambda: KernelStep(spec, (batch,), (JACOBI_THREADS,), bind=None,
                                                      shared_mem=shared_bytes(n, dtype, vectors) if fits else 0))
    scratch = dispatch.scratch("jacobi", scratch_elements(n) * esize(dtype) * batch, stream) if not fits else 0
    t = default_tol(dtype) if tol is None else float(tol)
    step.launch((n, a, lda, stride_a, w, stride_w, v, ldv, stride_v, scratch, info, t, max_sweeps), stream)


def sytrd_ptr(n: int, a: int, lda: int, tau: int, *, dtype: str, batch: int = 1, stride_a: int = 0,
              stride_tau: int = 0, stream: int = 0) -> None:
    """Householder tridiagonalization in place of ``batch`` Hermitian n x n matrices whose LOWER
    triangle is at ``a`` (LAPACK's sytd2/hetd2, UPLO='L'; the strict upper triangle is neither
    read nor written): afterwards the diagonal and
    sub-diagonal of ``a`` hold T (the sub-diagonal real for the reflectors geqrf makes, any
    phase is handled downstream), reflector k (v(k + 1) = 1 implicit) sits in a(k + 2:n, k)
    and its tau at tau[k] (n - 1 per matrix, ``stride_tau`` elements apart); Q = H_0 ... H_{n-2}
    with A = Q T Q^H. Checked arguments only."""
    from ..blas import level2
    from ..memory.array import DeviceArray
    from . import geqrf as qrm
    from . import layout
    from .kernels.tridiag_kernels import R2_THREADS, X_THREADS, SytrdR2Spec, SytrdXSpec

    if n == 0 or batch == 0:
        return
    _check_batch(batch, "sytrd")
    facts = device_facts()
    es = esize(dtype)
    xstep = PLANS.get_or_build(("sytrd_x", dtype, facts.ordinal), lambda: KernelStep(
        SytrdXSpec(arch=facts.arch, dtype=dtype), (1,), (X_THREADS,), bind=None))
    bufs = DeviceArray((3, max(n, 1)), dtype)
    vbuf, pbuf, xbuf = (bufs.ptr + i * max(n, 1) * es for i in range(3))
    for z in range(batch):
        az = a + z * stride_a * es
        for k in range(n - 1):
            m2 = n - k - 1
            col = az + (k + 1 + k * lda) * es
            a22 = az + (k + 1 + (k + 1) * lda) * es
            tk = tau + (z * stride_tau + k) * es
            qrm.geqrf_ptr(m2, 1, col, lda, tk, dtype=dtype, stream=stream)
            layout.copy(dtype, layout.Strided(col, m2, 1, 1, 1, lda, m2), layout.Strided(vbuf, m2, 1, 1, 1, m2, m2),
                        stream, fill="unit_lower")
            level2.symv_ptr("L", m2, 1.0, a22, lda, vbuf, 1, 0.0, pbuf, 1, dtype=dtype, hermitian=True,
                            stream=stream)
            xstep.launch((m2, vbuf, pbuf, tk, xbuf), stream)
            r2 = PLANS.get_or_build(("sytrd_r2", dtype, m2, facts.ordinal), lambda m2=m2: KernelStep(
                SytrdR2Spec(arch=facts.arch, dtype=dtype), ((m2 + R2_THREADS - 1) // R2_THREADS, m2), (R2_THREADS,),
                bind=None))
            r2.launch((m2, xbuf, vbuf, a22, lda), stream)


def _stebz(n: int, a: int, lda: int, w: int, *, dtype: str, batch: int, stride_a: int, stride_w: int,
           stream: int) -> None:
    from .kernels.tridiag_kernels import STEBZ_THREADS, StebzSpec

    if batch > 65535:
        raise ValueError(f"tridiag_values: batch={batch}; at most 65535")
    facts = device_facts()
    grid = ((n + STEBZ_THREADS - 1) // STEBZ_THREADS, batch)
    bstep = PLANS.get_or_build(("stebz", dtype, grid, facts.ordinal), lambda: KernelStep(
        StebzSpec(arch=facts.arch, dtype=dtype), grid, (STEBZ_THREADS,), bind=None))
    bstep.launch((n, a, lda, stride_a, w, stride_w), stream)


def tridiag_values_ptr(n: int, a: int, lda: int, w: int, *, dtype: str, batch: int = 1, stride_a: int = 0,
                       stride_w: int = 0, stream: int = 0) -> None:
    """Eigenvalues (ascending, real dtype, into ``w``) of ``batch`` Hermitian n x n matrices whose
    LOWER triangle is at ``a``, which is overwritten: ``sytrd_ptr``, then bisection on the Sturm
    count (``solver_stebz``, one thread per eigenvalue). Checked arguments only."""
    from ..memory.array import DeviceArray

    if n == 0 or batch == 0:
        return
    _check_batch(batch, "tridiag_values")
    tau = DeviceArray((batch, max(n, 1)), dtype)
    sytrd_ptr(n, a, lda, tau.ptr, dtype=dtype, batch=batch, stride_a=stride_a, stride_tau=max(n, 1), stream=stream)
    _stebz(n, a, lda, w, dtype=dtype, batch=batch, stride_a=stride_a, stride_w=stride_w, stream=stream)


#: the most bytes of per-thread stein scratch one launch takes (eigenvalues run in chunks)
STEIN_SCRATCH_MAX = 1 << 30


def stein_ptr(n: int, t: int, ldt: int, w: int, y: int, ldy: int, info: int, *, dtype: str, stream: int = 0) -> None:
    """Eigenvectors (columns of ``y``, unit 2-norm, not yet orthogonalized within clusters) of
    the Hermitian tridiagonal matrix whose diagonal and sub-diagonal are those of the column-major
    ``t`` (one matrix), for its n ascending eigenvalues at ``w``, by inverse iteration
    (``solver_stein``); ``info`` (int32) set to 1 if T is not finite. Checked arguments only."""
    from .kernels.stein_kernels import STEIN_ARRAYS, STEIN_THREADS, SteinSpec

    if n == 0:
        return
    facts = device_facts()
    rs = esize(dtype) // (2 if dtype.startswith("complex") else 1)
    chunk = max(1, min(n, STEIN_SCRATCH_MAX // (STEIN_ARRAYS * n * rs)))
    ws = dispatch.scratch("stein", STEIN_ARRAYS * n * chunk * rs, stream)
    for j0 in range(0, n, chunk):
        cnt = min(chunk, n - j0)
        grid = ((cnt + STEIN_THREADS - 1) // STEIN_THREADS,)
        step = PLANS.get_or_build(("stein", dtype, grid, facts.ordinal), lambda g=grid: KernelStep(
            SteinSpec(arch=facts.arch, dtype=dtype), g, (STEIN_THREADS,), bind=None))
        step.launch((n, t, ldt, w, j0, cnt, ws, y, ldy, info), stream)


def syevd_ptr(uplo: str, n: int, a: int, lda: int, w: int, v: int, ldv: int, info: int, *, dtype: str,
              batch: int = 1, stride_a: int = 0, stride_w: int = 0, stride_v: int = 0, vectors: bool = True,
              stream: int = 0) -> None:
    """Eigenvalues (ascending, real dtype, into ``w``) and, with ``vectors``, orthonormal
    eigenvectors (columns of ``v``, which may be ``a``) of ``batch`` Hermitian n x n matrices
    whose ``uplo`` triangle is stored at ``a`` (read, not modified unless ``v`` is ``a``), by the
    tridiagonal path of the module docstring. ``info``: per matrix 0, or 1 when the matrix holds
    a NaN or an infinity (only with ``vectors``; it is written either way). Checked arguments
    only."""
    from ..driver.backend import api
    from ..memory.array import DeviceArray
    from . import geqrf as qrm
    from . import layout

    if batch == 0:
        return
    api().memset_d8(info, 0, 4 * batch, stream or None)
    if n == 0:
        return
    _check_batch(batch, "syevd")
    es = esize(dtype)
    nn = n * n
    f = DeviceArray((batch, n, n), dtype)
    # the lower triangle of A, or of A^T = conj(A) for UPLO='U' (same eigenvalues, conj vectors)
    src = layout.Strided(a, n, n, batch, 1, lda, stride_a) if uplo == "L" else \
        layout.Strided(a, n, n, batch, lda, 1, stride_a)
    layout.copy(dtype, src, layout.Strided(f.ptr, n, n, batch, 1, n, nn), stream)
    tau = DeviceArray((batch, n), dtype)
    sytrd_ptr(n, f.ptr, n, tau.ptr, dtype=dtype, batch=batch, stride_a=nn, stride_tau=n, stream=stream)
    _stebz(n, f.ptr, n, w, dtype=dtype, batch=batch, stride_a=nn, stride_w=stride_w, stream=stream)
    if not vectors:
        return
    rs = es // (2 if dtype.startswith("complex") else 1)
    yb = DeviceArray((batch, n, n), dtype)
    zb = DeviceArray((batch, n, n), dtype)
    tauy = DeviceArray((batch, n), dtype)
    for z in range(batch):
        fz, yz = f.ptr + z * nn * es, yb.ptr + z * nn * es
        stein_ptr(n, fz, n, w + z * stride_w * rs, yz, n, info + 4 * z, dtype=dtype, stream=stream)
    qrm.geqrf_ptr(n, n, yb.ptr, n, tauy.ptr, dtype=dtype, batch=batch, stride_a=nn, stride_tau=n, stream=stream)
    for z in range(batch):
        fz, yz, zz = f.ptr + z * nn * es, yb.ptr + z * nn * es, zb.ptr + z * nn * es
        qrm.orgqr_ptr(n, n, n, yz, n, tauy.ptr + z * n * es, zz, n, dtype=dtype, stream=stream)
        # ormtr (UPLO='L'): Q = diag(1, Q') with Q' the n - 1 reflectors stored from a(1, 0)
        qrm.ormqr_ptr("L", "N", n - 1, n, n - 1, fz + es, n, tau.ptr + z * n * es, zz + es, n, dtype=dtype,
                      stream=stream)
    fill = "conj" if uplo == "U" and dtype.startswith("complex") else "copy"
    layout.copy(dtype, layout.Strided(zb.ptr, n, n, batch, 1, n, nn), layout.Strided(v, n, n, batch, 1, ldv, stride_v),
                stream, fill=fill)
