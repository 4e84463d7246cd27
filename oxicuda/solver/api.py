"""numpy.linalg- and scipy.linalg-shaped functions over the device factorizations.

Every function: argument checks (checks.py, before any launch), the caller's matrices copied into
column-major workspaces by a kernel, the factorization and solves on the device (lu.py,
cholesky.py), the results copied out by a kernel into new arrays of the caller's shapes. Stacks
of matrices (leading dimensions) run as one batch. Inputs are DeviceArrays (host arrays are
copied to the device first); results are DeviceArrays. The only host synchronizations are
reading ``info`` where numpy raises LinAlgError (solve, inv, cholesky, eigh, svd,
solve_triangular's zero diagonal), scipy's ``check_finite=True`` flag (lu_factor, lu_solve,
cho_factor, cho_solve, solve_triangular; pass False to skip it) and lstsq's rank; det, slogdet,
pinv, matrix_rank and lu_factor(check_finite=False) do not synchronize.
"""

from __future__ import annotations

import numpy as np

from ..memory.array import DeviceArray
from . import dispatch, eigen, layout, lu, svals
from . import geqrf as qrm
from . import gesvdj as svdm
from . import potrf as chol
from .checks import operand, rhs, same_dtype, square, trans_code
from .errors import LinAlgError

__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "lstsq",
    "lu_factor",
    "lu_solve",
    "matrix_rank",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
]

_STREAM = 0
_REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}


def _name(a: DeviceArray) -> str:
    return a.dtype.name


class _Factor:
    """getrf of a stack (..., n, n): the column-major factor F (batch, n, n), 1-based pivots and
    info on the device."""

    def __init__(self, a: DeviceArray, who: str) -> None:
        self.n = n = square(a, who)
        self.dtype = dt = _name(a)
        self.bshape = a.shape[:-2]
        a, src = layout.strided(a)
        self.batch = src.batch
        self.f, self.fs = layout.colmajor(self.batch, n, n, dt)
        self.ipiv = DeviceArray((self.batch, n), np.int32)
        self.info = DeviceArray((self.batch,), np.int32)
        layout.copy(dt, src, self.fs, _STREAM)
        lu.getrf_ptr(n, n, self.f.ptr, n, self.ipiv.ptr, self.info.ptr, dtype=dt, batch=self.batch,
                     stride_a=n * n, stride_ipiv=n, stream=_STREAM)

    def raise_if_singular(self, who: str) -> None:
        raise_for_info(self.info, self.bshape, who, "Singular matrix", "U[{i},{i}] is exactly zero")

    def solve_into(self, b: DeviceArray, trans: str, who: str) -> DeviceArray:
        """X with op(A) X = b for b of numpy's solve shapes (b checked against A here)."""
        same_dtype(self.f, b, who)
        return _solve_with(self.f.ptr, self.ipiv.ptr, self.n, self.batch, self.bshape, b, trans, who, self.dtype)


def raise_for_info(info: DeviceArray, bshape: tuple[int, ...], who: str, headline: str, detail: str) -> None:
    """Read ``info`` (one int32 per matrix; this synchronizes) and raise LinAlgError for the first
    matrix whose info is positive."""
    if info.size == 0:
        return
    values = info.get()
    bad = np.flatnonzero(values)
    if bad.size == 0:
        return
    z = int(bad[0])
    code = int(values[z])
    index = tuple(int(v) for v in np.unravel_index(z, bshape)) if bshape else ()
    where = f" (matrix {index})" if bshape else ""
    raise LinAlgError(f"{headline}: {who}: {detail.format(i=code - 1, info=code)}{where}; info={code}", index=index,
                      info=code)


def _solve_with(f: int, ipiv: int, n: int, batch: int, bshape: tuple[int, ...], b: DeviceArray, trans: str,
                who: str, dt: str) -> DeviceArray:
    vector, _, k = rhs(_Shape(bshape, n), b, n, who)
    out = DeviceArray(b.shape, dt)
    if b.size == 0:
        return out
    b2 = b.reshape(n, 1) if vector else b
    _, src = layout.strided(b2)
    _, dst = layout.strided(out.reshape(n, 1) if vector else out)
    if batch == 1 and src.batch > 1:
        # one matrix for every system of b: all right-hand sides side by side, n x (batch_b * k)
        x, _ = layout.colmajor(1, n, src.batch * k, dt)
        xs = layout.Strided(x.ptr, n, k, src.batch, 1, n, n * k)
        nrhs, xbatch = src.batch * k, 1
    else:
        x, xs = layout.colmajor(src.batch, n, k, dt)
        nrhs, xbatch = k, src.batch
    layout.copy(dt, src, xs, _STREAM)
    lu.getrs_ptr(trans, n, nrhs, f, n, ipiv, x.ptr, n, dtype=dt, batch=xbatch, stride_a=n * n, stride_ipiv=n,
                 stride_b=n * nrhs, stream=_STREAM)
    layout.copy(dt, xs, dst, _STREAM)
    return out


class _Shape:
    """Just enough of an array for checks.rhs (the factor's logical shape)."""

    def __init__(self, bshape: tuple[int, ...], n: int) -> None:
        self.shape = (*bshape, n, n)


def solve(a: object, b: object) -> DeviceArray:
    """x with a @ x = b (numpy.linalg.solve): a (..., n, n); b (n,) or (..., n, k) (numpy 2's rule:
    a 1-D b is one vector, anything else a stack of n x k matrices). LU with partial pivoting on
    the device (getrf, getrs). Raises LinAlgError for a singular a (U(i, i) exactly zero; the
    error's ``index`` names the matrix), TypeError for integer dtypes or mixed dtypes, ValueError
    for mismatched shapes."""
    a, b = operand(a, "solve"), operand(b, "solve", "b")
    n = square(a, "solve")
    same_dtype(a, b, "solve")
    rhs(a, b, n, "solve")
    if a.size == 0:
        return DeviceArray(b.shape, a.dtype)
    fac = _Factor(a, "solve")
    fac.raise_if_singular("solve")
    return fac.solve_into(b, "N", "solve")


def inv(a: object) -> DeviceArray:
    """The inverse of each matrix of a (..., n, n) (numpy.linalg.inv): getrf, then getrs against
    the identity, on the device. Raises LinAlgError for a singular matrix."""
    a = operand(a, "inv")
    n = square(a, "inv")
    dt = _name(a)
    out = DeviceArray(a.shape, dt)
    if a.size == 0:
        return out
    fac = _Factor(a, "inv")
    fac.raise_if_singular("inv")
    x, xs = layout.colmajor(fac.batch, n, n, dt)
    layout.eye(dt, xs, _STREAM)
    lu.getrs_ptr("N", n, n, fac.f.ptr, n, fac.ipiv.ptr, x.ptr, n, dtype=dt, batch=fac.batch, stride_a=n * n,
                 stride_ipiv=n, stride_b=n * n, stream=_STREAM)
    _, dst = layout.strided(out)
    layout.copy(dt, xs, dst, _STREAM)
    return out


def _ones(arr: DeviceArray, dt: str) -> None:
    if arr.size:
        layout.eye(dt, layout.Strided(arr.ptr, 1, 1, arr.size, 1, 1, 1), _STREAM)


def det(a: object) -> DeviceArray:
    """The determinant of each matrix of a (..., n, n) (numpy.linalg.det), shape a.shape[:-2]:
    the product of U's diagonal and the pivots' sign after getrf, on the device. A singular
    matrix gives 0 (no error, as numpy)."""
    a = operand(a, "det")
    n = square(a, "det")
    dt = _name(a)
    out = DeviceArray(a.shape[:-2], dt)
    if n == 0:
        _ones(out, dt)
        return out
    if out.size == 0:
        return out
    fac = _Factor(a, "det")
    layout.diag(dt, "det", n, fac.batch, fac.f.ptr, n, n * n, fac.ipiv.ptr, n, out.ptr, 0, _STREAM)
    return out


def slogdet(a: object) -> tuple[DeviceArray, DeviceArray]:
    """(sign, logabsdet) of each matrix of a (..., n, n) (numpy.linalg.slogdet): sign is 0, +-1
    (or a complex phase of modulus 1), logabsdet the real log|det| (-inf for a singular matrix)."""
    a = operand(a, "slogdet")
    n = square(a, "slogdet")
    dt = _name(a)
    sign = DeviceArray(a.shape[:-2], dt)
    logabs = DeviceArray(a.shape[:-2], _REAL[dt])
    if n == 0:
        _ones(sign, dt)
        if logabs.size:
            logabs.fill(0.0)
        return sign, logabs
    if sign.size == 0:
        return sign, logabs
    fac = _Factor(a, "slogdet")
    layout.diag(dt, "slogdet", n, fac.batch, fac.f.ptr, n, n * n, fac.ipiv.ptr, n, sign.ptr, logabs.ptr, _STREAM)
    return sign, logabs


def lu_factor(a: object, overwrite_a: bool = False, check_finite: bool = True) -> tuple[DeviceArray, DeviceArray]:
    """(lu, piv) as scipy.linalg.lu_factor: lu (..., n, n) holds U and the unit-lower L's
    multipliers, piv (..., n) int32 the 0-based row interchanges (row i swapped with piv[i]).
    A singular matrix factors without error (its U has a zero on the diagonal), as scipy warns
    only. ``overwrite_a`` is accepted and ignored (a new array is returned); ``check_finite``
    (scipy's default True) raises ValueError for a NaN or an infinity in a (a device check that
    reads one flag back)."""
    a = operand(a, "lu_factor")
    n = square(a, "lu_factor")
    if check_finite:
        _finite(a, "lu_factor")
    fac = _Factor(a, "lu_factor")
    piv = DeviceArray((*fac.bshape, n), np.int32)
    layout.shift_pivots(fac.batch * n, fac.ipiv.ptr, piv.ptr, -1, _STREAM)
    # the column-major factor seen with (row, column) axes: a view, no copy
    lu_view = fac.f.transpose(0, 2, 1).reshape(*fac.bshape, n, n)
    return lu_view, piv


def lu_solve(lu_and_piv: tuple[object, object], b: object, trans: int | str = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> DeviceArray:
    """x with op(A) x = b from lu_factor's (lu, piv) (scipy.linalg.lu_solve); trans 0 (A), 1 (A^T),
    2 (A^H); b (n,) or (..., n, k)."""
    try:
        lu_arr, piv = lu_and_piv
    except (TypeError, ValueError):
        raise TypeError("lu_solve: lu_and_piv must be the (lu, piv) pair lu_factor returned") from None
    t = trans_code(trans, "lu_solve")
    lu_arr, b = operand(lu_arr, "lu_solve", "lu"), operand(b, "lu_solve", "b")
    piv = _pivots(piv, lu_arr)
    n = square(lu_arr, "lu_solve", "lu")
    same_dtype(lu_arr, b, "lu_solve")
    rhs(lu_arr, b, n, "lu_solve")
    dt = _name(lu_arr)
    if check_finite:
        _finite(lu_arr, "lu_solve", "lu")
        _finite(b, "lu_solve", "b")
    if lu_arr.size == 0 or b.size == 0:
        return DeviceArray(b.shape, dt)
    lu_arr, src = layout.strided(lu_arr)
    f, fs = layout.colmajor(src.batch, n, n, dt)
    layout.copy(dt, src, fs, _STREAM)
    ipiv = DeviceArray((src.batch, n), np.int32)
    layout.shift_pivots(src.batch * n, piv.ptr, ipiv.ptr, 1, _STREAM)
    return _solve_with(f.ptr, ipiv.ptr, n, src.batch, lu_arr.shape[:-2], b, t, "lu_solve", dt)


def _pivots(piv: object, lu_arr: DeviceArray) -> DeviceArray:
    from ..memory.array import asarray

    p = piv if isinstance(piv, DeviceArray) else asarray(np.asarray(piv))
    if p.dtype != np.int32:
        raise TypeError(f"lu_solve: piv has dtype {p.dtype}; lu_factor's int32 pivots are required")
    want = (*lu_arr.shape[:-2], lu_arr.shape[-1])
    if p.shape != want:
        raise ValueError(f"lu_solve: piv has shape {p.shape}; for lu of shape {lu_arr.shape} it must be {want}")
    if not p.is_c_contiguous:
        p = p.copy()
    return p


def solve_triangular(a: object, b: object, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, check_finite: bool = True) -> DeviceArray:
    """x with op(a) x = b for triangular a (scipy.linalg.solve_triangular): only the ``lower`` (or
    upper) triangle of a is read, ``unit_diagonal`` takes its diagonal as ones; trans 0/1/2 (N,
    T, C); a (..., n, n), b (n,) or (..., n, k). oxicuda.blas trsm on the device, per matrix. A
    zero on the diagonal (without ``unit_diagonal``) raises LinAlgError("singular matrix:
    resolution failed at diagonal i") as scipy does (a device scan of the diagonal; this reads
    one int per matrix back); ``check_finite`` (default True) raises ValueError for NaN/inf."""
    from ..blas import level3

    a, b = operand(a, "solve_triangular"), operand(b, "solve_triangular", "b")
    t = trans_code(trans, "solve_triangular")
    n = square(a, "solve_triangular")
    same_dtype(a, b, "solve_triangular")
    vector, _, k = rhs(a, b, n, "solve_triangular")
    dt = _name(a)
    if check_finite:
        _finite(a, "solve_triangular")
        _finite(b, "solve_triangular", "b")
    out = DeviceArray(b.shape, dt)
    if b.size == 0:
        return out
    a, asrc = layout.strided(a)
    f, fs = layout.colmajor(asrc.batch, n, n, dt)
    layout.copy(dt, asrc, fs, _STREAM)
    if not unit_diagonal and n:
        info = DeviceArray((asrc.batch,), np.int32)
        svals.launch(dt, "zero_diag", n, n, asrc.batch, x=f.ptr, out=info.ptr, strides=(1, n, n * n),
                     stream=_STREAM)
        raise_for_info(info, a.shape[:-2], "solve_triangular", "singular matrix",
                       "resolution failed at diagonal {i}")
    _, src = layout.strided(b.reshape(n, 1) if vector else b)
    _, dst = layout.strided(out.reshape(n, 1) if vector else out)
    x, xs = layout.colmajor(src.batch, n, k, dt)
    layout.copy(dt, src, xs, _STREAM)
    es = np.dtype(dt).itemsize
    for z in range(src.batch):
        az = f.ptr + (z if asrc.batch > 1 else 0) * n * n * es
        level3.trsm_ptr("L", "L" if lower else "U", t, "U" if unit_diagonal else "N", n, k, 1.0, az, n,
                        x.ptr + z * n * k * es, n, dtype=dt, stream=_STREAM)
    layout.copy(dt, xs, dst, _STREAM)
    return out



class _Cholesky:
    """potrf of a stack (..., n, n) on one triangle: the column-major copy F (batch, n, n) holds
    the factor in that triangle and a's other triangle unchanged."""

    def __init__(self, a: DeviceArray, uplo: str, who: str) -> None:
        self.n = n = square(a, who)
        self.dtype = dt = _name(a)
        self.bshape = a.shape[:-2]
        self.uplo = uplo
        a, src = layout.strided(a)
        self.batch = src.batch
        self.f, self.fs = layout.colmajor(self.batch, n, n, dt)
        self.info = DeviceArray((self.batch,), np.int32)
        layout.copy(dt, src, self.fs, _STREAM)
        chol.potrf_ptr(uplo, n, self.f.ptr, n, self.info.ptr, dtype=dt, batch=self.batch, stride_a=n * n,
                       stream=_STREAM)
        raise_for_info(self.info, self.bshape, who, "Matrix is not positive definite",
                       "the leading minor of order {info} is not positive definite")

    def view(self) -> DeviceArray:
        return self.f.transpose(0, 2, 1).reshape(*self.bshape, self.n, self.n)


def cholesky(a: object, upper: bool = False) -> DeviceArray:
    """The Cholesky factor of each Hermitian positive-definite matrix of a (..., n, n)
    (numpy.linalg.cholesky): L with a = L L^H (``upper``: U with a = U^H U), zeros in the other
    triangle. Only the lower (``upper``: upper) triangle of a is read. Raises LinAlgError for a
    matrix that is not positive definite (its ``index`` names the matrix, ``info`` the order of
    the failing minor)."""
    a = operand(a, "cholesky")
    square(a, "cholesky")
    dt = _name(a)
    out = DeviceArray(a.shape, dt)
    if a.size == 0:
        return out
    fac = _Cholesky(a, "U" if upper else "L", "cholesky")
    _, dst = layout.strided(out)
    layout.copy(dt, fac.fs, dst, _STREAM, fill="upper" if upper else "lower")
    return out


def cho_factor(a: object, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[DeviceArray, bool]:
    """(c, lower) as scipy.linalg.cho_factor: c (..., n, n) holds the factor in its lower (or
    upper) triangle and a's entries in the other. Raises LinAlgError if a matrix is not positive
    definite. ``overwrite_a`` is accepted and ignored (a new array); ``check_finite`` (default
    True) raises ValueError for a NaN or an infinity (a device check)."""
    a = operand(a, "cho_factor")
    square(a, "cho_factor")
    if check_finite:
        _finite(a, "cho_factor")
    if a.size == 0:
        return DeviceArray(a.shape, a.dtype), bool(lower)
    fac = _Cholesky(a, "L" if lower else "U", "cho_factor")
    return fac.view(), bool(lower)


def cho_solve(c_and_lower: tuple[object, bool], b: object, overwrite_b: bool = False,
              check_finite: bool = True) -> DeviceArray:
    """x with A x = b from cho_factor's (c, lower) (scipy.linalg.cho_solve); b (n,) or (..., n, k)."""
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError("cho_solve: c_and_lower must be the (c, lower) pair cho_factor returned") from None
    c, b = operand(c, "cho_solve", "c"), operand(b, "cho_solve", "b")
    n = square(c, "cho_solve", "c")
    same_dtype(c, b, "cho_solve")
    vector, _, k = rhs(c, b, n, "cho_solve")
    dt = _name(c)
    if check_finite:
        _finite(c, "cho_solve", "c")
        _finite(b, "cho_solve", "b")
    out = DeviceArray(b.shape, dt)
    if c.size == 0 or b.size == 0:
        return out
    c, csrc = layout.strided(c)
    f, fs = layout.colmajor(csrc.batch, n, n, dt)
    layout.copy(dt, csrc, fs, _STREAM)
    _, src = layout.strided(b.reshape(n, 1) if vector else b)
    _, dst = layout.strided(out.reshape(n, 1) if vector else out)
    if csrc.batch == 1 and src.batch > 1:
        x, _ = layout.colmajor(1, n, src.batch * k, dt)
        xs = layout.Strided(x.ptr, n, k, src.batch, 1, n, n * k)
        nrhs, xbatch = src.batch * k, 1
    else:
        x, xs = layout.colmajor(src.batch, n, k, dt)
        nrhs, xbatch = k, src.batch
    layout.copy(dt, src, xs, _STREAM)
    chol.potrs_ptr("L" if lower else "U", n, nrhs, f.ptr, n, x.ptr, n, dtype=dt, batch=xbatch, stride_a=n * n,
                   stride_b=n * nrhs, stream=_STREAM)
    layout.copy(dt, xs, dst, _STREAM)
    return out


def qr(a: object, mode: str = "reduced"):
    """QR of each matrix of a (..., m, n) (numpy.linalg.qr), Householder on the device (geqrf,
    then orgqr for Q). ``mode``: "reduced" (Q (..., m, k), R (..., k, n), k = min(m, n)),
    "complete" (Q (..., m, m), R (..., m, n)), "r" (R only, (..., k, n)), "raw" ((h, tau): h
    (..., n, m) the reflectors and R as LAPACK leaves them, transposed like numpy's, tau
    (..., k)). Returns a QRResult-like tuple (Q, R) for reduced/complete."""
    modes = ("reduced", "complete", "r", "raw")
    if mode not in modes:
        raise ValueError(f"qr: mode={mode!r}; allowed {modes}")
    a = operand(a, "qr")
    if a.ndim < 2:
        raise LinAlgError(f"qr: a is {a.ndim}-dimensional (shape {a.shape}); it must be at least two-dimensional")
    *bshape, m, n = a.shape
    bshape = tuple(bshape)
    k = min(m, n)
    dt = _name(a)
    a, src = layout.strided(a)
    batch = src.batch
    f, fs = layout.colmajor(batch, m, n, dt)
    tau = DeviceArray((*bshape, k), dt)
    if a.size:
        layout.copy(dt, src, fs, _STREAM)
        qrm.geqrf_ptr(m, n, f.ptr, m, tau.ptr, dtype=dt, batch=batch, stride_a=m * n, stride_tau=k, stream=_STREAM)
    if mode == "raw":
        return f.reshape(*bshape, n, m), tau
    rrows = m if mode == "complete" else k
    r = DeviceArray((*bshape, rrows, n), dt)
    if r.size:
        _, rdst = layout.strided(r)
        layout.copy(dt, layout.Strided(f.ptr, rrows, n, batch, 1, m, m * n), rdst, _STREAM, fill="upper")
    if mode == "r":
        return r
    qcols = m if mode == "complete" else k
    q = DeviceArray((*bshape, m, qcols), dt)
    if q.size:
        qbuf, qs = layout.colmajor(batch, m, qcols, dt)
        es = np.dtype(dt).itemsize
        for z in range(batch):
            qrm.orgqr_ptr(m, qcols, k, f.ptr + z * m * n * es, m, tau.ptr + z * k * es, qbuf.ptr + z * m * qcols * es,
                          m, dtype=dt, stream=_STREAM)
        _, qdst = layout.strided(q)
        layout.copy(dt, qs, qdst, _STREAM)
    return QRResult(q, r)


class QRResult(tuple):
    """(Q, R) with ``.Q`` and ``.R`` (numpy's QRResult)."""

    def __new__(cls, q: DeviceArray, r: DeviceArray):
        return super().__new__(cls, (q, r))

    Q = property(lambda self: self[0])
    R = property(lambda self: self[1])


class EighResult(tuple):
    """(eigenvalues, eigenvectors) with numpy's field names."""

    def __new__(cls, w: DeviceArray, v: DeviceArray):
        return super().__new__(cls, (w, v))

    eigenvalues = property(lambda self: self[0])
    eigenvectors = property(lambda self: self[1])


#: eigh's ``algo`` values: None lets dispatch choose (eigen.py's module docstring)
EIGH_ALGOS = (None, "jacobi", "tridiagonal")


def _eig(a: object, uplo: str, vectors: bool, who: str, algo: str | None = None):
    if algo not in EIGH_ALGOS:
        raise ValueError(f"{who}: algo={algo!r}; allowed {EIGH_ALGOS}")
    a = operand(a, who)
    n = square(a, who)
    u = uplo.upper() if isinstance(uplo, str) else uplo
    if u not in ("L", "U"):
        raise ValueError(f"{who}: UPLO={uplo!r}; allowed 'L' or 'U'")
    dt = _name(a)
    bshape = a.shape[:-2]
    w = DeviceArray((*bshape, n), _REAL[dt])
    v = DeviceArray(a.shape, dt) if vectors else None
    if a.size == 0:
        return w, v
    a, src = layout.strided(a)
    f, fs = layout.colmajor(src.batch, n, n, dt)
    layout.copy(dt, src, fs, _STREAM)
    info = DeviceArray((src.batch,), np.int32)
    if algo is None:
        tridiagonal = dispatch.tridiagonal_vectors(n, src.batch) if vectors else \
            dispatch.tridiagonal_values(n, src.batch)
    else:
        tridiagonal = algo == "tridiagonal"
    if not vectors and tridiagonal:
        # tridiagonalization + bisection on the lower triangle: for UPLO="U" work on A^T =
        # conj(A) (same eigenvalues), whose lower triangle is A's upper one
        if u == "U":
            t, ts = layout.colmajor(src.batch, n, n, dt)
            layout.copy(dt, layout.Strided(fs.ptr, n, n, src.batch, n, 1, n * n), ts, _STREAM)
            f = t
        eigen.tridiag_values_ptr(n, f.ptr, n, w.ptr, dtype=dt, batch=src.batch, stride_a=n * n, stride_w=n,
                                 stream=_STREAM)
        return w, v
    vb = None
    if vectors:
        vb, vs = layout.colmajor(src.batch, n, n, dt)
    if tridiagonal:
        eigen.syevd_ptr(u, n, f.ptr, n, w.ptr, vb.ptr, n, info.ptr, dtype=dt, batch=src.batch, stride_a=n * n,
                        stride_w=n, stride_v=n * n, stream=_STREAM)
        raise_for_info(info, bshape, who, "Eigenvalues did not converge", "the matrix holds a NaN or an infinity")
    else:
        eigen.syevj_ptr(u, n, f.ptr, n, w.ptr, vb.ptr if vectors else 0, n, info.ptr, dtype=dt, batch=src.batch,
                        stride_a=n * n, stride_w=n, stride_v=n * n, vectors=vectors, stream=_STREAM)
        raise_for_info(info, bshape, who, "Eigenvalues did not converge",
                       "the Jacobi sweeps ran out ({info} - 1 sweeps)")
    if vectors:
        _, dst = layout.strided(v)
        layout.copy(dt, vs, dst, _STREAM)
    return w, v


def eigh(a: object, UPLO: str = "L", *, algo: str | None = None) -> EighResult:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors (columns) of each Hermitian
    matrix of a (..., n, n) (numpy.linalg.eigh); only the ``UPLO`` triangle is read. Orders up
    to dispatch's SYEVD_VECTORS_MIN (and large batches of moderate orders): Jacobi (syevj), one
    CTA per matrix; larger: tridiagonalization, bisection, inverse iteration, a Householder
    reorthogonalization and the back-transformation (eigen.syevd_ptr). ``algo`` forces one:
    "jacobi" or "tridiagonal". Raises LinAlgError if the sweeps do not converge or (tridiagonal
    path) the matrix holds a NaN or an infinity; ValueError for a bad UPLO or algo."""
    w, v = _eig(a, UPLO, True, "eigh", algo)
    return EighResult(w, v)


def eigvalsh(a: object, UPLO: str = "L") -> DeviceArray:
    """The eigenvalues (ascending, real) of each Hermitian matrix of a (numpy.linalg.eigvalsh)."""
    return _eig(a, UPLO, False, "eigvalsh")[0]


class SVDResult(tuple):
    """(U, S, Vh) with numpy's field names."""

    def __new__(cls, u: DeviceArray, s: DeviceArray, vh: DeviceArray):
        return super().__new__(cls, (u, s, vh))

    U = property(lambda self: self[0])
    S = property(lambda self: self[1])
    Vh = property(lambda self: self[2])


def _complete(dt: str, q0: DeviceArray, rows: int, cols: int, batch: int) -> DeviceArray:
    """A full rows x rows unitary per matrix whose first ``cols`` columns are q0's orthonormal
    columns (column-major (batch, cols, rows)): QR of q0, Q formed complete, q0 copied in front."""
    es = np.dtype(dt).itemsize
    work, ws = layout.colmajor(batch, rows, cols, dt)
    layout.copy(dt, layout.Strided(q0.ptr, rows, cols, batch, 1, rows, rows * cols), ws, _STREAM)
    tau = DeviceArray((batch, cols), dt)
    qrm.geqrf_ptr(rows, cols, work.ptr, rows, tau.ptr, dtype=dt, batch=batch, stride_a=rows * cols,
                  stride_tau=cols, stream=_STREAM)
    full, _ = layout.colmajor(batch, rows, rows, dt)
    for z in range(batch):
        qrm.orgqr_ptr(rows, rows, cols, work.ptr + z * rows * cols * es, rows, tau.ptr + z * cols * es,
                      full.ptr + z * rows * rows * es, rows, dtype=dt, stream=_STREAM)
    layout.copy(dt, layout.Strided(q0.ptr, rows, cols, batch, 1, rows, rows * cols),
                layout.Strided(full.ptr, rows, cols, batch, 1, rows, rows * rows), _STREAM)
    return full


def svd(a: object, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition of each matrix of a (..., m, n) (numpy.linalg.svd): one-sided
    Jacobi (gesvdj) on the device, one CTA per matrix (a wide matrix through its conjugate
    transpose). Returns SVDResult(U, S, Vh) (U (..., m, m or k), S (..., k) real descending,
    Vh (..., n or k, n)), or S alone with ``compute_uv=False``. ``full_matrices`` completes the
    thin factor with the Q of its QR (geqrf, orgqr). ``hermitian`` is accepted and ignored.
    Raises LinAlgError if the sweeps do not converge."""
    a = operand(a, "svd")
    if a.ndim < 2:
        raise LinAlgError(f"svd: a is {a.ndim}-dimensional (shape {a.shape}); it must be at least two-dimensional")
    *bshape, m, n = a.shape
    bshape = tuple(bshape)
    k = min(m, n)
    dt = _name(a)
    cx = dt.startswith("complex")
    wide = m < n
    M, N = (n, m) if wide else (m, n)
    s = DeviceArray((*bshape, k), _REAL[dt])
    ucols, vrows = (m, n) if full_matrices else (k, k)
    u = DeviceArray((*bshape, m, ucols), dt) if compute_uv else None
    vh = DeviceArray((*bshape, vrows, n), dt) if compute_uv else None
    if a.size == 0:
        if compute_uv and full_matrices:
            for arr, order in ((u, m), (vh, n)):
                if arr.size:
                    _, d = layout.strided(arr)
                    layout.eye(dt, d, _STREAM)
        return SVDResult(u, s, vh) if compute_uv else s
    a, src = layout.strided(a)
    batch = src.batch
    f, fs = layout.colmajor(batch, M, N, dt)
    if wide:  # the conjugate transpose: element (i, j) = conj(a[j, i])
        src = layout.Strided(src.ptr, M, N, batch, src.s_col, src.s_row, src.s_batch)
    layout.copy(dt, src, fs, _STREAM, fill="conj" if wide and cx else "copy")
    info = DeviceArray((batch,), np.int32)
    if compute_uv:
        ub, _ = layout.colmajor(batch, M, N, dt)
        vtb, _ = layout.colmajor(batch, N, N, dt)
    svdm.gesvdj_ptr(M, N, f.ptr, M, s.ptr, ub.ptr if compute_uv else 0, M, vtb.ptr if compute_uv else 0, N,
                    info.ptr, dtype=dt, batch=batch, stride_a=M * N, stride_s=N, stride_u=M * N, stride_vt=N * N,
                    vectors=compute_uv, stream=_STREAM)
    raise_for_info(info, bshape, "svd", "SVD did not converge", "the Jacobi sweeps ran out ({info} - 1 sweeps)")
    if not compute_uv:
        return s
    thin_cols = N
    if full_matrices and M > N:
        ub = _complete(dt, ub, M, N, batch)
        thin_cols = M
    _, udst = layout.strided(u)
    _, vdst = layout.strided(vh)
    fill = "conj" if cx else "copy"
    if not wide:
        layout.copy(dt, layout.Strided(ub.ptr, m, ucols, batch, 1, M, M * thin_cols), udst, _STREAM)
        layout.copy(dt, layout.Strided(vtb.ptr, vrows, n, batch, 1, N, N * N), vdst, _STREAM)
    else:  # a = (V')^H^H ...: U = (V'^H)^H, Vh = U'^H
        layout.copy(dt, layout.Strided(vtb.ptr, m, ucols, batch, N, 1, N * N), udst, _STREAM, fill=fill)
        layout.copy(dt, layout.Strided(ub.ptr, vrows, n, batch, M, 1, M * thin_cols), vdst, _STREAM, fill=fill)
    return SVDResult(u, s, vh)


def norm(x: object, ord: object = None, axis: object = None, keepdims: bool = False) -> DeviceArray:
    """numpy.linalg.norm on the device: every vector and matrix ord, ``axis`` an int or a pair,
    ``keepdims`` (oxicuda.solver.norms; the 2-norms and 'nuc' through the device SVD)."""
    from .norms import norm as _norm

    return _norm(x, ord, axis, keepdims)


def _finite(a: DeviceArray, who: str, what: str = "a") -> None:
    """check_finite=True (scipy.linalg): ValueError when ``a`` holds a NaN or an infinity,
    found by the ``solver_svals`` finite kernel on the device (this reads one flag back)."""
    if a.size == 0:
        return
    x = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    x, src = layout.strided(x)
    flag = DeviceArray((1,), np.int32)
    flag.fill(0)
    svals.launch(_name(a), "finite", src.rows, src.cols, src.batch, x=src.ptr, out=flag.ptr,
                 strides=(src.s_row, src.s_col, src.s_batch), stream=_STREAM)
    if int(flag.get()[0]):
        raise ValueError(f"{who}: {what} must not contain infs or NaNs (check_finite=True)")


def _default_rtol(m: int, n: int, dt: str) -> float:
    return max(m, n) * float(np.finfo(_REAL[dt]).eps)


def pinv(a: object, rcond: object = None, hermitian: bool = False, *, rtol: object = None) -> DeviceArray:
    """The Moore-Penrose pseudo-inverse of each matrix of a (..., m, n) (numpy.linalg.pinv), shape
    (..., n, m): V diag(1/s) U^H from the device SVD (gesvdj), singular values at most
    rcond * max(s) treated as zero (``rcond``/``rtol`` a scalar; default max(m, n) * eps, numpy
    2's default). The cutoff and the scaling run in ``solver_svals``, the product in
    oxicuda.blas (batched gemm). ``hermitian`` is accepted and ignored (the SVD serves)."""
    from ..blas.gemm_batched import gemm_strided_batched

    a = operand(a, "pinv")
    if a.ndim < 2:
        raise LinAlgError(f"pinv: a is {a.ndim}-dimensional (shape {a.shape}); it must be at least two-dimensional")
    if rcond is not None and rtol is not None:
        raise ValueError("pinv: pass rcond or rtol, not both")
    cut = rtol if rtol is not None else rcond
    *bshape, m, n = a.shape
    dt = _name(a)
    k = min(m, n)
    tol = _default_rtol(m, n, dt) if cut is None else float(cut)
    out_shape = (*bshape, n, m)
    if a.size == 0:
        out = DeviceArray(out_shape, dt)
        if out.size:
            out.fill(0)
        return out
    u, s, vh = svd(a, full_matrices=False)
    batch = int(np.prod(bshape, dtype=np.int64)) if bshape else 1
    vh3, u3 = vh.reshape(batch, k, n), u.reshape(batch, m, k)
    svals.launch(dt, "pinv_scale", k, n, batch, s=s.ptr, x=vh3.ptr, rtol=tol, stream=_STREAM)
    return gemm_strided_batched(vh3, u3, transa="C", transb="C").reshape(*out_shape)


def matrix_rank(A: object, tol: object = None, hermitian: bool = False, *, rtol: object = None) -> DeviceArray:
    """The rank of each matrix of A (..., m, n) (numpy.linalg.matrix_rank): the number of singular
    values (device SVD, values only) above ``tol`` (absolute), or above rtol * max(s) (default
    rtol max(m, n) * eps). A 1-D A is one 1 x n matrix. Returns an int64 DeviceArray of shape
    A.shape[:-2] (0-d for one matrix), counted on the device (``solver_svals`` rank)."""
    a = operand(A, "matrix_rank", "A")
    if a.ndim == 0:
        raise LinAlgError("matrix_rank: A is 0-dimensional; it must be at least one-dimensional")
    if a.ndim == 1:
        a = a.reshape(1, a.shape[0])
    if tol is not None and rtol is not None:
        raise ValueError("matrix_rank: pass tol or rtol, not both")
    *bshape, m, n = a.shape
    dt = _name(a)
    out = DeviceArray(tuple(bshape), np.int64)
    if out.size == 0:
        return out
    if min(m, n) == 0:
        out.fill(0)
        return out
    s = svd(a, compute_uv=False)
    k = min(m, n)
    if tol is not None:
        r, at = 0.0, float(tol)
    else:
        r, at = (_default_rtol(m, n, dt) if rtol is None else float(rtol)), 0.0
    svals.launch(dt, "rank", k, 1, out.size, s=s.ptr, out=out.ptr, rtol=r, atol=at, stream=_STREAM)
    return out


def lstsq(a: object, b: object, rcond: object = None):
    """The least-squares solution of a x = b (numpy.linalg.lstsq): a (m, n), b (m,) or (m, k).
    Returns (x (n,) or (n, k), residuals, rank, s) as numpy: s the singular values of a (device
    SVD, values only), rank the count above rcond * max(s) (default max(m, n) * eps; this reads
    one int back), residuals the squared 2-norms of b - a x per column when rank == n < m, else
    empty. Full column rank (rank == n, m >= n) solves through QR on the device (geqrf, ormqr
    applying Q^H, trsm with R); otherwise x is the minimum-norm solution pinv(a) @ b (gesvdj,
    cutoff, gemm)."""
    from ..blas import level3
    from ..blas.gemm_api import gemm

    a, b = operand(a, "lstsq"), operand(b, "lstsq", "b")
    if a.ndim != 2:
        raise LinAlgError(f"lstsq: a has shape {a.shape}; it must be two-dimensional (m, n)")
    same_dtype(a, b, "lstsq")
    m, n = a.shape
    if b.ndim not in (1, 2) or b.shape[0] != m:
        raise LinAlgError(f"lstsq: a has shape {a.shape} and b has shape {b.shape}; b must be ({m},) or ({m}, k)")
    vector = b.ndim == 1
    k = 1 if vector else b.shape[1]
    dt = _name(a)
    rt = _REAL[dt]
    tol = _default_rtol(m, n, dt) if rcond is None else float(rcond)
    xshape = (n,) if vector else (n, k)
    if a.size == 0:
        x = DeviceArray(xshape, dt)
        if x.size:
            x.fill(0)
        return x, DeviceArray((0,), rt), 0, DeviceArray((0,), rt)
    s = svd(a, compute_uv=False)
    rank_d = DeviceArray((), np.int64)
    svals.launch(dt, "rank", min(m, n), 1, 1, s=s.ptr, out=rank_d.ptr, rtol=tol, stream=_STREAM)
    rank = int(rank_d.get())
    b2 = b.reshape(m, 1) if vector else b
    if rank == n and m >= n:
        _, asrc = layout.strided(a)
        f, fs = layout.colmajor(1, m, n, dt)
        layout.copy(dt, asrc, fs, _STREAM)
        tau = DeviceArray((n,), dt)
        qrm.geqrf_ptr(m, n, f.ptr, m, tau.ptr, dtype=dt, stream=_STREAM)
        bb, bs = layout.colmajor(1, m, k, dt)
        _, bsrc = layout.strided(b2)
        layout.copy(dt, bsrc, bs, _STREAM)
        if k:
            qrm.ormqr_ptr("L", "C", m, k, n, f.ptr, m, tau.ptr, bb.ptr, m, dtype=dt, stream=_STREAM)
            level3.trsm_ptr("L", "U", "N", "N", n, k, 1.0, f.ptr, m, bb.ptr, m, dtype=dt, stream=_STREAM)
        x = DeviceArray(xshape, dt)
        _, xdst = layout.strided(x.reshape(n, 1) if vector else x)
        layout.copy(dt, layout.Strided(bb.ptr, n, k, 1, 1, m, m * k), xdst, _STREAM)
        if m > n:
            res = DeviceArray((k,), rt)
            es = np.dtype(dt).itemsize
            svals.launch(dt, "colsq", m - n, k, 1, x=bb.ptr + n * es, out=res.ptr, strides=(1, m, m * k),
                         stream=_STREAM)
        else:
            res = DeviceArray((0,), rt)
        return x, res, rank, s
    p = pinv(a, rcond=tol)
    x = gemm(p, b2).reshape(*xshape)
    return x, DeviceArray((0,), rt), rank, s
