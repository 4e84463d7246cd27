"""BLAS level 2 beyond gemv (which lives in ``oxicuda.blas.gemv``): ger/geru/gerc, symv/hemv,
trsv, at the pointer level with cuBLAS semantics (column-major, leading dimensions and
increments in elements, scalars as values or device pointers), plus thin Pythonic wrappers.

trsv runs in one block (column-oriented substitution, two barriers per column): correct for
every size, but its speed is bound by n sequential steps (about 2 us each on a GPU).
"""

from __future__ import annotations

import numpy as np

from ..driver.facts import device_facts
from ..memory.array import DeviceArray
from ..ptx.launch_plan import PlanCache
from . import operands as op
from .flags import trans_op
from .level1_kernels import BLOCK
from .level2_kernels import GerSpec, SymvSpec, TrsvSpec

MAX_GRID_Y = 65535
#: launch plans of ger, symv and trsv, by call signature
PLANS = PlanCache("blas2")

__all__ = ["PLANS", "ger", "ger_ptr", "symv", "symv_ptr", "trsv", "trsv_ptr"]


def _uplo(value: object, what: str) -> str:
    u = value.upper() if isinstance(value, str) else value
    if u not in ("L", "U"):
        raise ValueError(f"{what}: uplo={value!r}; allowed 'L' or 'U'")
    return u


def _diag(value: object, what: str) -> bool:
    d = value.upper() if isinstance(value, str) else value
    if d not in ("N", "U"):
        raise ValueError(f"{what}: diag={value!r}; allowed 'N' (non-unit) or 'U' (unit)")
    return d == "U"


def _nonzero_inc(value: object, what: str) -> int:
    v = op.check_int(value, what)
    if v == 0:
        raise ValueError(f"{what}=0; the increment must be nonzero")
    return v


def ger_ptr(m: int, n: int, alpha, x_ptr: int, incx: int, y_ptr: int, incy: int, a_ptr: int, lda: int, *,
            dtype: object, conj: bool = False, stream: object = None, alpha_ptr: int = 0) -> None:
    """A += alpha * x * y^T (``conj``: y^H, gerc) with A column-major m x n."""
    dt = op.dtype_name(dtype, "ger")
    m, n = op.check_int(m, "ger: m", minimum=0), op.check_int(n, "ger: n", minimum=0)
    incx, incy = _nonzero_inc(incx, "ger: incx"), _nonzero_inc(incy, "ger: incy")
    lda = op.check_int(lda, "ger: lda", minimum=max(1, m))
    x, y, a = (op.check_pointer(p, f"ger: {w}") for p, w in ((x_ptr, "x"), (y_ptr, "y"), (a_ptr, "A")))
    re, im = op.scalar_parts(alpha, "ger: alpha")
    ap = op.check_pointer(alpha_ptr, "ger: alpha pointer")
    if m == 0 or n == 0:
        return
    es = op.itemsize(dt)
    op.check_span(x, op.vector_span(m, incx, es), f"ger: x (m={m}, incx={incx})")
    op.check_span(y, op.vector_span(n, incy, es), f"ger: y (n={n}, incy={incy})")
    op.check_span(a, op.matrix_span(m, n, lda, es), f"ger: A ({m}x{n}, lda={lda})")
    facts = device_facts()
    cj = bool(conj) and dt.startswith("complex")
    plan = PLANS.single(("ger", facts.ordinal, dt, cj, m, n),
                        lambda: GerSpec(arch=facts.arch, dtype=dt, conj=cj),
                        ((m + BLOCK - 1) // BLOCK, min(n, MAX_GRID_Y)), BLOCK)
    plan.run((), (m, n, op.vector_start(x, m, incx, es), incx, op.vector_start(y, n, incy, es), incy,
                  a, lda, re, im, ap), op.stream_of(stream))


def symv_ptr(uplo: str, n: int, alpha, a_ptr: int, lda: int, x_ptr: int, incx: int, beta, y_ptr: int,
             incy: int, *, dtype: object, hermitian: bool = False, stream: object = None, alpha_ptr: int = 0,
             beta_ptr: int = 0) -> None:
    """y = alpha * A * x + beta * y, A n x n symmetric (``hermitian``: Hermitian, hemv) stored in
    the ``uplo`` triangle. beta == 0 never reads y."""
    dt = op.dtype_name(dtype, "symv")
    u = _uplo(uplo, "symv")
    n = op.check_int(n, "symv: n", minimum=0)
    lda = op.check_int(lda, "symv: lda", minimum=max(1, n))
    incx, incy = _nonzero_inc(incx, "symv: incx"), _nonzero_inc(incy, "symv: incy")
    a, x, y = (op.check_pointer(p, f"symv: {w}") for p, w in ((a_ptr, "A"), (x_ptr, "x"), (y_ptr, "y")))
    ar, ai = op.scalar_parts(alpha, "symv: alpha")
    br, bi = op.scalar_parts(beta, "symv: beta")
    ap, bp = op.check_pointer(alpha_ptr, "symv: alpha pointer"), op.check_pointer(beta_ptr, "symv: beta pointer")
    if n == 0:
        return
    es = op.itemsize(dt)
    op.check_span(a, op.matrix_span(n, n, lda, es), f"symv: A ({n}x{n}, lda={lda})")
    op.check_span(x, op.vector_span(n, incx, es), f"symv: x (n={n}, incx={incx})")
    op.check_span(y, op.vector_span(n, incy, es), f"symv: y (n={n}, incy={incy})")
    facts = device_facts()
    herm = bool(hermitian) and dt.startswith("complex")
    plan = PLANS.single(("symv", facts.ordinal, dt, u, herm, n),
                        lambda: SymvSpec(arch=facts.arch, dtype=dt, uplo=u, hermitian=herm),
                        (n + BLOCK - 1) // BLOCK, BLOCK)
    plan.run((), (n, a, lda, op.vector_start(x, n, incx, es), incx, op.vector_start(y, n, incy, es), incy,
                  ar, ai, ap, br, bi, bp), op.stream_of(stream))


def trsv_ptr(uplo: str, trans: str, diag: str, n: int, a_ptr: int, lda: int, x_ptr: int, incx: int, *,
             dtype: object, stream: object = None) -> None:
    """Solve op(A) x = b in place (x holds b on entry), A n x n triangular (``uplo``), op in
    N/T/C, ``diag`` 'U' assumes a unit diagonal (not read). No singularity check (like cuBLAS)."""
    dt = op.dtype_name(dtype, "trsv")
    u, t, unit = _uplo(uplo, "trsv"), trans_op(trans, "trsv"), _diag(diag, "trsv")
    t = "T" if (t == "C" and not dt.startswith("complex")) else t
    n = op.check_int(n, "trsv: n", minimum=0)
    lda = op.check_int(lda, "trsv: lda", minimum=max(1, n))
    incx = _nonzero_inc(incx, "trsv: incx")
    a, x = op.check_pointer(a_ptr, "trsv: A"), op.check_pointer(x_ptr, "trsv: x")
    if n == 0:
        return
    es = op.itemsize(dt)
    op.check_span(a, op.matrix_span(n, n, lda, es), f"trsv: A ({n}x{n}, lda={lda})")
    op.check_span(x, op.vector_span(n, incx, es), f"trsv: x (n={n}, incx={incx})")
    facts = device_facts()
    plan = PLANS.single(("trsv", facts.ordinal, dt, u, t, unit),
                        lambda: TrsvSpec(arch=facts.arch, dtype=dt, uplo=u, trans=t, unit=unit), 1, BLOCK)
    plan.run((), (n, a, lda, op.vector_start(x, n, incx, es), incx), op.stream_of(stream))


# -- Pythonic -----------------------------------------------------------------------------------
def _fmatrix(a: object, what: str) -> DeviceArray:
    from ..memory.array import asarray

    arr = a if isinstance(a, DeviceArray) else asarray(a)
    if arr.ndim != 2 or not arr.is_f_contiguous:
        raise ValueError(f"{what}: shape {arr.shape}, strides {arr.strides}; a 2-D Fortran-ordered "
                         "(column-major) device array is required (use order='F')")
    return arr


def _vec(v: object, what: str) -> tuple[DeviceArray, int, int]:
    from .level1 import _vector

    return _vector(v, what)


def ger(alpha, x: object, y: object, a: object, conj: bool = False) -> object:
    """a += alpha * outer(x, y) (``conj``: outer(x, conj(y))) in place; ``a`` column-major."""
    am = _fmatrix(a, "ger: a")
    (xa, incx, xb), (ya, incy, yb) = _vec(x, "ger: x"), _vec(y, "ger: y")
    if am.shape != (xa.shape[0], ya.shape[0]) or not (xa.dtype == ya.dtype == am.dtype):
        raise ValueError(f"ger: a {am.shape} {am.dtype}, x {xa.shape} {xa.dtype}, y {ya.shape} {ya.dtype}; "
                         "a must be (len(x), len(y)) and all dtypes equal")
    ger_ptr(am.shape[0], am.shape[1], alpha, xb, incx, yb, incy, am.ptr, max(1, am.shape[0]), dtype=am.dtype,
            conj=conj, stream=am.stream)
    return a


def symv(a: object, x: object, y: object, *, alpha=1.0, beta=0.0, uplo: str = "L",
         hermitian: bool = False) -> object:
    """y = alpha * A x + beta * y with A symmetric (Hermitian) read from its ``uplo`` triangle."""
    am = _fmatrix(a, "symv: a")
    (xa, incx, xb), (ya, incy, yb) = _vec(x, "symv: x"), _vec(y, "symv: y")
    n = am.shape[0]
    if am.shape != (n, n) or xa.shape != (n,) or ya.shape != (n,) or not (xa.dtype == ya.dtype == am.dtype):
        raise ValueError(f"symv: a {am.shape}, x {xa.shape}, y {ya.shape}; a must be square n x n with "
                         "x, y of length n and one dtype")
    symv_ptr(uplo, n, alpha, am.ptr, max(1, n), xb, incx, beta, yb, incy, dtype=am.dtype,
             hermitian=hermitian, stream=ya.stream)
    return y


def trsv(a: object, x: object, *, uplo: str = "L", trans: str = "N", diag: str = "N") -> object:
    """Solve op(A) x = b in place (x holds b); A column-major triangular."""
    am = _fmatrix(a, "trsv: a")
    xa, incx, xb = _vec(x, "trsv: x")
    n = am.shape[0]
    if am.shape != (n, n) or xa.shape != (n,) or xa.dtype != am.dtype:
        raise ValueError(f"trsv: a {am.shape} {am.dtype}, x {xa.shape} {xa.dtype}; a must be n x n, x of length n")
    trsv_ptr(uplo, trans, diag, n, am.ptr, max(1, n), xb, incx, dtype=np.dtype(am.dtype), stream=xa.stream)
    return x
