"""cuBLAS's batched LU and cuSOLVER's batched Cholesky over device arrays of matrix pointers,
with their argument meaning (column-major, 1-based pivots, int32 info per matrix), for the
cuBLAS/cuSOLVER-shaped surfaces to call:

- ``getrf_batched_ptr(n, a_array, lda, ipiv, info, batch)``: cublas<t>getrfBatched. ``a_array``:
  device array of ``batch`` pointers to n x n matrices (factored in place); ``ipiv``: n * batch
  int32 (matrix z's pivots at ipiv + 4 n z), or 0 for no pivoting; ``info``: batch int32
  (0, or i when U(i, i) is exactly zero).
- ``getrs_batched_ptr(trans, n, nrhs, a_array, lda, ipiv, b_array, ldb, batch)``:
  cublas<t>getrsBatched (B overwritten by X; argument errors raise ValueError, which the
  cuBLAS surface reports through its host info).
- ``getri_batched_ptr(n, a_array, lda, ipiv, c_array, ldc, info, batch)``: cublas<t>getriBatched:
  C = A^-1 from getrf's factor (out of place); info as getrf's.
- ``potrf_batched_ptr(uplo, n, a_array, lda, info, batch)``, ``potrs_batched_ptr(uplo, n, nrhs,
  a_array, lda, b_array, ldb, batch)``: cusolverDn<t>potrfBatched / potrsBatched.

One launch each: one CTA per matrix, the matrix in shared memory for n <= the small-matrix limit
(and in global memory, unblocked, beyond it). Every argument is checked before the launch.
"""

from __future__ import annotations

from ..blas import operands as op
from ..driver.backend import api
from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from . import dispatch
from .kernels.chol_kernels import Potf2Spec, PotrsSmallSpec
from .kernels.common import esize
from .kernels.lu_kernels import GETRS_THREADS, Getf2Spec, GetrsSmallSpec
from .lu import MAX_GRID

PLANS = PlanCache("solver.batched")

__all__ = ["getrf_batched_ptr", "getri_batched_ptr", "getrs_batched_ptr", "potrf_batched_ptr",
           "potrs_batched_ptr"]


def _common(who: str, dtype: object, n: int, lda: int, batch: int) -> tuple[str, int, int, int]:
    dt = op.dtype_name(dtype, who)
    n = op.check_int(n, f"{who}: n", minimum=0)
    lda = op.check_int(lda, f"{who}: lda", minimum=max(1, n))
    batch = op.check_int(batch, f"{who}: batch", minimum=0)
    if batch > MAX_GRID:
        raise ValueError(f"{who}: batch={batch}; at most {MAX_GRID} matrices per call")
    return dt, n, lda, batch


def _array(ptr: object, batch: int, what: str) -> int:
    p = op.check_pointer(ptr, what)
    if batch:
        if p % 8:
            raise ValueError(f"{what}: 0x{p:x} is not 8-byte aligned (an array of device pointers)")
        op.check_span(p, 8 * batch, f"{what} ({batch} pointers)")
    return p


def _vector(ptr: object, count: int, what: str, optional: bool = False) -> int:
    p = op.check_pointer(ptr, what)
    if p == 0 and optional:
        return 0
    op.check_span(p, 4 * count, f"{what} ({count} int32)")
    return p


def _step(key: tuple, spec, grid, block, shared_mem: int = 0) -> KernelStep:
    return PLANS.get_or_build(key, lambda: KernelStep(spec, grid, block, bind=None, shared_mem=shared_mem))


def _space(n: int, dt: str) -> tuple[str, int]:
    facts = device_facts()
    small = dispatch.small_path(n, n, dt, facts.smem_per_block_optin)
    return ("shared", n * n * esize(dt)) if small else ("global", 0)


def getrf_batched_ptr(n: int, a_array: int, lda: int, ipiv: int, info: int, batch: int, *, dtype: object,
                      stream: object = None) -> None:
    """LU with partial pivoting (none when ``ipiv`` is 0) of ``batch`` n x n matrices given by a
    device array of pointers, in place (cublas<t>getrfBatched)."""
    dt, n, lda, batch = _common("getrf_batched", dtype, n, lda, batch)
    arr = _array(a_array, batch, "getrf_batched: Aarray")
    piv = _vector(ipiv, n * batch, "getrf_batched: PivotArray", optional=True)
    inf = _vector(info, batch, "getrf_batched: infoArray")
    if batch == 0:
        return
    s = op.stream_of(stream)
    api().memset_d8(inf, 0, 4 * batch, s or None)
    if n == 0:
        return
    facts = device_facts()
    space, smem = _space(n, dt)
    spec = Getf2Spec(arch=facts.arch, dtype=dt, space=space, array=True, pivot=bool(piv))
    step = _step(("getrf", spec, n, batch, facts.ordinal), spec, (batch,), (spec.threads,), smem)
    step.launch((n, n, arr, lda, 0, piv, n, inf, 0), s)


def _getrs_step(dt: str, trans: str, n: int, nrhs: int, batch: int, eye: bool) -> KernelStep:
    facts = device_facts()
    spec = GetrsSmallSpec(arch=facts.arch, dtype=dt, trans=trans, array=True, eye=eye)
    grid = ((nrhs + GETRS_THREADS - 1) // GETRS_THREADS, batch)
    return _step(("getrs", spec, n, nrhs, batch, facts.ordinal), spec, grid, (GETRS_THREADS,))


def getrs_batched_ptr(trans: str, n: int, nrhs: int, a_array: int, lda: int, ipiv: int, b_array: int, ldb: int,
                      batch: int, *, dtype: object, stream: object = None) -> None:
    """op(A_z) X_z = B_z for each z with getrf_batched's factors, B overwritten (cublas<t>getrsBatched);
    ``trans`` 'N', 'T', 'C'; ``ipiv`` 0: the factors were computed without pivoting."""
    dt, n, lda, batch = _common("getrs_batched", dtype, n, lda, batch)
    t = trans.upper() if isinstance(trans, str) else trans
    if t not in ("N", "T", "C"):
        raise ValueError(f"getrs_batched: trans={trans!r}; allowed 'N', 'T', 'C'")
    t = "T" if t == "C" and not dt.startswith("complex") else t
    nrhs = op.check_int(nrhs, "getrs_batched: nrhs", minimum=0)
    ldb = op.check_int(ldb, "getrs_batched: ldb", minimum=max(1, n))
    arr = _array(a_array, batch, "getrs_batched: Aarray")
    brr = _array(b_array, batch, "getrs_batched: Barray")
    piv = _vector(ipiv, n * batch, "getrs_batched: devIpiv", optional=True)
    if batch == 0 or n == 0 or nrhs == 0:
        return
    _getrs_step(dt, t, n, nrhs, batch, False).launch((n, nrhs, arr, lda, 0, piv, n, brr, ldb, 0, 0),
                                                     op.stream_of(stream))


def getri_batched_ptr(n: int, a_array: int, lda: int, ipiv: int, c_array: int, ldc: int, info: int, batch: int, *,
                      dtype: object, stream: object = None) -> None:
    """C_z = A_z^-1 from getrf_batched's factors (cublas<t>getriBatched, out of place); ``info``
    per matrix: i when U(i, i) == 0 (C is then not the inverse), else 0."""
    dt, n, lda, batch = _common("getri_batched", dtype, n, lda, batch)
    ldc = op.check_int(ldc, "getri_batched: ldc", minimum=max(1, n))
    arr = _array(a_array, batch, "getri_batched: Aarray")
    crr = _array(c_array, batch, "getri_batched: Carray")
    piv = _vector(ipiv, n * batch, "getri_batched: PivotArray", optional=True)
    inf = _vector(info, batch, "getri_batched: infoArray")
    if batch == 0:
        return
    s = op.stream_of(stream)
    if n == 0:
        api().memset_d8(inf, 0, 4 * batch, s or None)
        return
    _getrs_step(dt, "N", n, n, batch, True).launch((n, n, arr, lda, 0, piv, n, crr, ldc, 0, inf), s)


def potrf_batched_ptr(uplo: str, n: int, a_array: int, lda: int, info: int, batch: int, *, dtype: object,
                      stream: object = None) -> None:
    """Cholesky of ``batch`` n x n matrices given by a device array of pointers, in place on the
    ``uplo`` triangle (cusolverDn<t>potrfBatched); ``info`` per matrix."""
    dt, n, lda, batch = _common("potrf_batched", dtype, n, lda, batch)
    u = _uplo(uplo, "potrf_batched")
    arr = _array(a_array, batch, "potrf_batched: Aarray")
    inf = _vector(info, batch, "potrf_batched: infoArray")
    if batch == 0:
        return
    s = op.stream_of(stream)
    api().memset_d8(inf, 0, 4 * batch, s or None)
    if n == 0:
        return
    facts = device_facts()
    space, smem = _space(n, dt)
    spec = Potf2Spec(arch=facts.arch, dtype=dt, uplo=u, space=space, array=True)
    _step(("potrf", spec, n, batch, facts.ordinal), spec, (batch,), (spec.threads,), smem).launch(
        (n, arr, lda, 0, inf, 0), s)


def potrs_batched_ptr(uplo: str, n: int, nrhs: int, a_array: int, lda: int, b_array: int, ldb: int, batch: int, *,
                      dtype: object, stream: object = None) -> None:
    """A_z X_z = B_z with potrf_batched's factors, B overwritten (cusolverDn<t>potrsBatched)."""
    dt, n, lda, batch = _common("potrs_batched", dtype, n, lda, batch)
    u = _uplo(uplo, "potrs_batched")
    nrhs = op.check_int(nrhs, "potrs_batched: nrhs", minimum=0)
    ldb = op.check_int(ldb, "potrs_batched: ldb", minimum=max(1, n))
    arr = _array(a_array, batch, "potrs_batched: Aarray")
    brr = _array(b_array, batch, "potrs_batched: Barray")
    if batch == 0 or n == 0 or nrhs == 0:
        return
    facts = device_facts()
    spec = PotrsSmallSpec(arch=facts.arch, dtype=dt, uplo=u, array=True)
    grid = ((nrhs + GETRS_THREADS - 1) // GETRS_THREADS, batch)
    _step(("potrs", spec, n, nrhs, batch, facts.ordinal), spec, grid, (GETRS_THREADS,)).launch(
        (n, nrhs, arr, lda, 0, brr, ldb, 0), op.stream_of(stream))


def _uplo(uplo: object, who: str) -> str:
    u = uplo.upper() if isinstance(uplo, str) else uplo
    if u not in ("L", "U"):
        raise ValueError(f"{who}: uplo={uplo!r}; allowed 'L' or 'U'")
    return u
