"""LinearOperator and aslinearoperator, shaped like cupyx.scipy.sparse.linalg's.

An operator is what its ``matvec`` computes; ``rmatvec`` (the adjoint product), ``matmat`` and
``rmatmat`` are given or derived (``matmat`` column by column through ``matvec``). Sums,
products, scalings and adjoints of operators compose lazily, as scipy's do; their arithmetic on
vectors is oxicuda.blas level 1 (copy, axpy, scal). A sparse matrix's operator runs the SpMV
kernels, its adjoint the transposed SpMV (no transpose is formed); a dense matrix's runs
oxicuda.blas gemv.
"""

from __future__ import annotations

import numbers

import numpy as np

from oxicuda import blas
from oxicuda.memory.array import DeviceArray, asarray, empty

from ..matrix import spmatrix

__all__ = ["LinearOperator", "aslinearoperator"]


def _device(x: object, dtype: np.dtype | None = None) -> DeviceArray:
    if isinstance(x, DeviceArray):
        return x
    h = np.asarray(x)
    return asarray(h if dtype is None or h.dtype == dtype else h.astype(dtype))


def _conj(x: DeviceArray) -> DeviceArray:
    from .. import device_ops as D

    return D.conj(x if x.is_c_contiguous else x.copy(), None)


class LinearOperator:
    """``LinearOperator(shape, matvec, rmatvec=None, matmat=None, dtype=None, rmatmat=None)``:
    an M x N operator. ``matvec(x)`` maps a device vector of N entries to one of M; ``rmatvec``
    is the adjoint (A^H x); ``matmat``/``rmatmat`` the products with (N, K)/(M, K) arrays
    (column by column through matvec/rmatvec when not given). ``dtype`` defaults to float64.

    ``A.matvec(x)``, ``A @ x``, ``A * x``, ``A.dot(x)``, ``A(x)``: x of shape (N,) or (N, 1)
    gives (M,) or (M, 1); a 2-D x goes to matmat. ``A.H``/``A.adjoint()``, ``A.T``/
    ``A.transpose()``, ``A + B``, ``A - B``, ``-A``, ``alpha * A``, ``A * B`` and ``A ** p``
    build operators. A shape that does not match raises ValueError before any launch; an
    operator without the product asked for raises NotImplementedError."""

    ndim = 2

    def __init__(self, shape, matvec=None, rmatvec=None, matmat=None, dtype=None, rmatmat=None) -> None:
        try:
            m, n = (int(v) for v in shape)
        except (TypeError, ValueError):
            raise ValueError(f"LinearOperator: shape={shape!r}; a pair of ints (M, N) is required") from None
        if m < 0 or n < 0:
            raise ValueError(f"LinearOperator: shape=({m}, {n}); dimensions must be >= 0")
        self.shape = (m, n)
        self._matvec_fn, self._rmatvec_fn = matvec, rmatvec
        self._matmat_fn, self._rmatmat_fn = matmat, rmatmat
        self.dtype = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)

    def __repr__(self) -> str:
        return f"<{self.shape[0]}x{self.shape[1]} {type(self).__name__} with dtype={self.dtype}>"

    # -- the products subclasses (or the given callables) provide ------------------------------
    def _matvec(self, x: DeviceArray) -> DeviceArray:
        if self._matvec_fn is None:
            if self._matmat_fn is not None:
                return self._matmat_fn(x.reshape(x.size, 1)).reshape(self.shape[0])
            raise NotImplementedError(f"{type(self).__name__}: no matvec was given")
        return self._matvec_fn(x)

    def _rmatvec(self, x: DeviceArray) -> DeviceArray:
        if self._rmatvec_fn is None:
            if self._rmatmat_fn is not None:
                return self._rmatmat_fn(x.reshape(x.size, 1)).reshape(self.shape[1])
            raise NotImplementedError(f"{type(self).__name__}: rmatvec was not given to this LinearOperator "
                                      "(pass rmatvec= or rmatmat=, or use aslinearoperator of a matrix)")
        return self._rmatvec_fn(x)

    def _matmat(self, X: DeviceArray) -> DeviceArray:
        if self._matmat_fn is not None:
            return self._matmat_fn(X)
        return _by_columns(self._matvec, X, self.shape[0], self.dtype)

    def _rmatmat(self, X: DeviceArray) -> DeviceArray:
        if self._rmatmat_fn is not None:
            return self._rmatmat_fn(X)
        return _by_columns(self._rmatvec, X, self.shape[1], self.dtype)

    # -- the public products ---------------------------------------------------------------------
    def matvec(self, x) -> DeviceArray:
        """A x for x of shape (N,) or (N, 1) (the result has the same number of dimensions)."""
        return self._vector_product(x, self.shape[1], self.shape[0], self._matvec, "matvec")

    def rmatvec(self, x) -> DeviceArray:
        """A^H x for x of shape (M,) or (M, 1)."""
        return self._vector_product(x, self.shape[0], self.shape[1], self._rmatvec, "rmatvec")

    def matmat(self, X) -> DeviceArray:
        """A X for a 2-D X of shape (N, K)."""
        return self._matrix_product(X, self.shape[1], self._matmat, "matmat")

    def rmatmat(self, X) -> DeviceArray:
        """A^H X for a 2-D X of shape (M, K)."""
        return self._matrix_product(X, self.shape[0], self._rmatmat, "rmatmat")

    def _vector_product(self, x, n_in: int, n_out: int, fn, what: str) -> DeviceArray:
        xa = _device(x)
        if xa.shape not in ((n_in,), (n_in, 1)):
            raise ValueError(f"{what}: x has shape {xa.shape}; the {self.shape[0]}x{self.shape[1]} operator needs "
                             f"({n_in},) or ({n_in}, 1)")
        y = fn(xa.reshape(n_in) if xa.ndim == 2 else xa)
        return y.reshape(n_out, 1) if xa.ndim == 2 else y.reshape(n_out)

    def _matrix_product(self, X, n_in: int, fn, what: str) -> DeviceArray:
        Xa = _device(X)
        if Xa.ndim != 2 or Xa.shape[0] != n_in:
            raise ValueError(f"{what}: X has shape {Xa.shape}; the {self.shape[0]}x{self.shape[1]} operator needs "
                             f"({n_in}, K)")
        return fn(Xa)

    def dot(self, x):
        """A product: an operator for an operator or a scalar, A x for a vector, A X for a 2-D
        array."""
        if isinstance(x, LinearOperator):
            return _ProductLinearOperator(self, x)
        if isinstance(x, numbers.Number) or np.isscalar(x):
            return _ScaledLinearOperator(self, x)
        xa = _device(x)
        if xa.ndim == 1 or (xa.ndim == 2 and xa.shape[1] == 1):
            return self.matvec(xa)
        if xa.ndim == 2:
            return self.matmat(xa)
        raise ValueError(f"dot: operand of shape {xa.shape}; a vector or a 2-D array is required")

    __mul__ = dot
    __matmul__ = dot

    def __call__(self, x):
        return self.dot(x)

    def __rmul__(self, x):
        if isinstance(x, numbers.Number) or np.isscalar(x):
            return _ScaledLinearOperator(self, x)
        return NotImplemented

    def __pow__(self, p: int):
        if not isinstance(p, numbers.Integral) or p < 0:
            return NotImplemented
        return _PowerLinearOperator(self, int(p))

    def __add__(self, other):
        if not isinstance(other, LinearOperator):
            return NotImplemented
        return _SumLinearOperator(self, other)

    def __neg__(self):
        return _ScaledLinearOperator(self, -1)

    def __sub__(self, other):
        if not isinstance(other, LinearOperator):
            return NotImplemented
        return _SumLinearOperator(self, -other)

    def adjoint(self):
        """The Hermitian adjoint A^H (matvec and rmatvec swapped)."""
        return _AdjointLinearOperator(self)

    def transpose(self):
        """The transpose A^T: x -> conj(A^H conj(x))."""
        return _TransposedLinearOperator(self)

    H = property(adjoint)
    T = property(transpose)


def _by_columns(fn, X: DeviceArray, rows: int, dtype: np.dtype) -> DeviceArray:
    k = X.shape[1]
    out = None
    for j in range(k):
        y = fn(X[:, j].copy())
        if out is None:
            out = empty((rows, k), y.dtype)
        out[:, j] = y
    return out if out is not None else empty((rows, 0), dtype)


def _axpy_into(acc: DeviceArray, alpha, x: DeviceArray) -> None:
    """acc += alpha x (1-D, or 2-D column by column through a flat view of C-ordered arrays)."""
    a = acc if acc.ndim == 1 else acc.reshape(acc.size)
    b = x if x.ndim == 1 else (x if x.is_c_contiguous else x.copy()).reshape(x.size)
    blas.axpy(alpha, b, a)


class _SumLinearOperator(LinearOperator):
    def __init__(self, A: LinearOperator, B: LinearOperator) -> None:
        if A.shape != B.shape:
            raise ValueError(f"LinearOperator +: shapes {A.shape} and {B.shape} differ; they must be equal")
        super().__init__(A.shape, dtype=np.result_type(A.dtype, B.dtype))
        self.args = (A, B)

    def _combine(self, fa, fb, x):
        y = fa(x).astype(self.dtype)  # a copy, in the sum's dtype
        other = fb(x)
        _axpy_into(y, 1.0, other if other.dtype == self.dtype else other.astype(self.dtype))
        return y

    def _matvec(self, x):
        return self._combine(self.args[0]._matvec, self.args[1]._matvec, x)

    def _rmatvec(self, x):
        return self._combine(self.args[0]._rmatvec, self.args[1]._rmatvec, x)

    def _matmat(self, X):
        return self._combine(self.args[0]._matmat, self.args[1]._matmat, X)

    def _rmatmat(self, X):
        return self._combine(self.args[0]._rmatmat, self.args[1]._rmatmat, X)


class _ProductLinearOperator(LinearOperator):
    def __init__(self, A: LinearOperator, B: LinearOperator) -> None:
        if A.shape[1] != B.shape[0]:
            raise ValueError(f"LinearOperator *: shapes {A.shape} and {B.shape}; A's columns must equal B's rows")
        super().__init__((A.shape[0], B.shape[1]), dtype=np.result_type(A.dtype, B.dtype))
        self.args = (A, B)

    def _matvec(self, x):
        return self.args[0]._matvec(self.args[1]._matvec(x))

    def _rmatvec(self, x):
        return self.args[1]._rmatvec(self.args[0]._rmatvec(x))

    def _matmat(self, X):
        return self.args[0]._matmat(self.args[1]._matmat(X))

    def _rmatmat(self, X):
        return self.args[1]._rmatmat(self.args[0]._rmatmat(X))


class _ScaledLinearOperator(LinearOperator):
    def __init__(self, A: LinearOperator, alpha) -> None:
        super().__init__(A.shape, dtype=np.result_type(A.dtype, np.complex64) if np.iscomplexobj(alpha) else A.dtype)
        self.args = (A, alpha)

    def _scaled(self, y: DeviceArray, alpha) -> DeviceArray:
        y = y.astype(np.result_type(y.dtype, self.dtype))  # a copy; complex when alpha is
        blas.scal(alpha if y.dtype.kind == "c" else float(np.real(alpha)), y.reshape(y.size))
        return y

    def _matvec(self, x):
        return self._scaled(self.args[0]._matvec(x), self.args[1])

    def _rmatvec(self, x):
        return self._scaled(self.args[0]._rmatvec(x), np.conj(self.args[1]))

    def _matmat(self, X):
        return self._scaled(self.args[0]._matmat(X), self.args[1])

    def _rmatmat(self, X):
        return self._scaled(self.args[0]._rmatmat(X), np.conj(self.args[1]))


class _PowerLinearOperator(LinearOperator):
    def __init__(self, A: LinearOperator, p: int) -> None:
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"LinearOperator **: shape {A.shape}; a square operator is required")
        super().__init__(A.shape, dtype=A.dtype)
        self.args = (A, p)

    def _repeat(self, fn, x):
        y = x.copy()
        for _ in range(self.args[1]):
            y = fn(y)
        return y

    def _matvec(self, x):
        return self._repeat(self.args[0]._matvec, x)

    def _rmatvec(self, x):
        return self._repeat(self.args[0]._rmatvec, x)

    def _matmat(self, X):
        return self._repeat(self.args[0]._matmat, X)

    def _rmatmat(self, X):
        return self._repeat(self.args[0]._rmatmat, X)


class _AdjointLinearOperator(LinearOperator):
    def __init__(self, A: LinearOperator) -> None:
        super().__init__((A.shape[1], A.shape[0]), dtype=A.dtype)
        self.args = (A,)

    def _matvec(self, x):
        return self.args[0]._rmatvec(x)

    def _rmatvec(self, x):
        return self.args[0]._matvec(x)

    def _matmat(self, X):
        return self.args[0]._rmatmat(X)

    def _rmatmat(self, X):
        return self.args[0]._matmat(X)


class _TransposedLinearOperator(LinearOperator):
    def __init__(self, A: LinearOperator) -> None:
        super().__init__((A.shape[1], A.shape[0]), dtype=A.dtype)
        self.args = (A,)

    def _through(self, fn, x):
        if x.dtype.kind != "c":
            return fn(x)
        return _conj(fn(_conj(x)))

    def _matvec(self, x):
        return self._through(self.args[0]._rmatvec, x)

    def _rmatvec(self, x):
        return self._through(self.args[0]._matvec, x)

    def _matmat(self, X):
        return self._through(self.args[0]._rmatmat, X)

    def _rmatmat(self, X):
        return self._through(self.args[0]._matmat, X)


class MatrixLinearOperator(LinearOperator):
    """The operator of a sparse matrix (SpMV, transposed SpMV for the adjoint, SpMM) or of a
    dense 2-D array (oxicuda.blas gemv, matmul)."""

    def __init__(self, A) -> None:
        super().__init__(A.shape, dtype=A.dtype)
        self.A = A
        self._sparse = isinstance(A, spmatrix)
        if self._sparse and A.format == "coo":
            self.A = A.tocsr()

    def _checked(self, x: DeviceArray) -> DeviceArray:
        if x.dtype != self.dtype:
            raise TypeError(f"{type(self).__name__}: x has dtype {x.dtype} and the matrix {self.dtype}; they must "
                            "match (astype one)")
        return x

    def _matvec(self, x):
        x = self._checked(x)
        if self._sparse:
            return self.A.spmv(x)
        return _gemv(self.A, x, adjoint=False)

    def _rmatvec(self, x):
        x = self._checked(x)
        if self._sparse:
            return self.A.spmv(x, transpose=True, conj=True)
        return _gemv(self.A, x, adjoint=True)

    def _matmat(self, X):
        X = self._checked(X)
        if self._sparse:
            return self.A @ X
        return blas.matmul(self.A, X)

    def _rmatmat(self, X):
        return _by_columns(self._rmatvec, self._checked(X), self.shape[1], self.dtype)


def _gemv(A: DeviceArray, x: DeviceArray, adjoint: bool) -> DeviceArray:
    """A x or A^H x for a C-ordered (m, n) A: the column-major (n, m) matrix A^T, "T" or conj."""
    from oxicuda.blas.gemv import gemv_colmajor

    m, n = A.shape
    x = x if x.is_c_contiguous else x.copy()
    y = empty((n if adjoint else m,), A.dtype)
    if adjoint:
        gemv_colmajor("N", n, m, 1.0, A.ptr, max(1, n), x.ptr, 1, 0.0, y.ptr, 1, dtype=A.dtype, conj_a=True)
    else:
        gemv_colmajor("T", n, m, 1.0, A.ptr, max(1, n), x.ptr, 1, 0.0, y.ptr, 1, dtype=A.dtype)
    return y


def aslinearoperator(A) -> LinearOperator:
    """A as a LinearOperator: itself for an operator; the SpMV-backed operator of a sparse
    matrix; the gemv-backed operator of a 2-D DeviceArray or numpy array (copied to the
    device); an object with ``shape`` and ``matvec`` (and optionally ``rmatvec``, ``matmat``,
    ``dtype``) wrapped. TypeError otherwise."""
    if isinstance(A, LinearOperator):
        return A
    if isinstance(A, spmatrix):
        return MatrixLinearOperator(A)
    if isinstance(A, (DeviceArray, np.ndarray)):
        a = A if isinstance(A, DeviceArray) else asarray(A)
        if a.ndim != 2:
            raise ValueError(f"aslinearoperator: a dense operand of shape {a.shape}; it must be 2-D")
        if a.dtype.name not in ("float32", "float64", "complex64", "complex128"):
            raise TypeError(f"aslinearoperator: dtype {a.dtype}; float32, float64, complex64 or complex128 is needed")
        return MatrixLinearOperator(a if a.is_c_contiguous else a.copy())
    if hasattr(A, "shape") and hasattr(A, "matvec"):
        return LinearOperator(A.shape, A.matvec, getattr(A, "rmatvec", None), getattr(A, "matmat", None),
                              getattr(A, "dtype", None), getattr(A, "rmatmat", None))
    raise TypeError(f"aslinearoperator: {type(A).__name__} is not a sparse matrix, a 2-D array or a LinearOperator")
