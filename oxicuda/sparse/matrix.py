"""csr_matrix, csc_matrix and coo_matrix: scipy.sparse-shaped matrices whose arrays live on the
device and whose operations run there (format conversions through oxicuda.primitives, products
through the sparse kernels). int32 indices; float32, float64, complex64, complex128 values.

A csc_matrix is stored as the CSR arrays of its transpose (scipy's layout), and computes
through that view.
"""

from __future__ import annotations

import numpy as np

from oxicuda import primitives as prim
from oxicuda.memory.array import DeviceArray, asarray, empty, zeros

from . import device_ops as D
from . import spmv as S
from .validate import check_compressed, check_coo, matrix_dtype, shape_of, vector_operand

__all__ = ["coo_matrix", "csc_matrix", "csr_matrix", "issparse", "isspmatrix", "isspmatrix_coo",
           "isspmatrix_csc", "isspmatrix_csr", "spmatrix"]


def _is_scipy_sparse(obj: object) -> bool:
    return type(obj).__module__.startswith("scipy.sparse")


def _dev(a: object, dtype: object, stream: object) -> DeviceArray:
    """A value array on the device in ``dtype`` (float/complex conversions on the device; host
    data of other kinds is converted as it is copied up)."""
    arr = asarray(a, dtype=dtype, stream=stream) if not isinstance(a, DeviceArray) else a
    if arr.dtype != np.dtype(dtype):
        if arr.dtype.kind not in "fc":
            raise TypeError(f"sparse matrix data on the device has dtype {arr.dtype}; convert it to "
                            f"{np.dtype(dtype)} first (float and complex data convert here)")
        arr = D.cast(arr, np.dtype(dtype), stream)
    return arr if arr.is_c_contiguous else arr.copy()


def _index(a: object, what: str, stream: object) -> DeviceArray:
    """An index array as contiguous int32 on the device. int64 input (host or device) is checked
    on the device against the int32 range, then narrowed by a kernel; smaller integer types widen
    as they are copied up."""
    if not isinstance(a, DeviceArray):
        h = np.asarray(a)
        if h.dtype.kind not in "iu":
            raise TypeError(f"{what} has dtype {h.dtype}; index arrays must be integers")
        a = asarray(h if h.dtype in (np.int32, np.int64) else h.astype(np.int64), stream=stream)
    if a.dtype == np.int32:
        return a if a.is_c_contiguous else a.copy()
    if a.dtype != np.int64:
        raise TypeError(f"{what} on the device has dtype {a.dtype}; int32 or int64 index arrays are accepted")
    a = a if a.is_c_contiguous else a.copy()
    if a.ndim != 1:
        raise ValueError(f"{what} has shape {a.shape}; it must be 1-D")
    out = empty(a.shape, np.int32, stream=stream)
    if a.size:
        lo = int(prim.reduce(a, "min", stream=stream).get())
        hi = int(prim.reduce(a, "max", stream=stream).get())
        if lo < -(1 << 31) or hi > D.MAX_INDEX:
            raise ValueError(f"{what} holds {hi if hi > D.MAX_INDEX else lo}; the sparse kernels index with "
                             f"int32 (at most {D.MAX_INDEX}); int64 matrices are not supported yet")
        from .kernels.convert import ConvertSpec

        D.run1(ConvertSpec(arch=D.arch(), variant="narrow_index"), D.blocks(a.size), (a.ptr, out.ptr, a.size), stream)
    return out


class spmatrix:
    """What every sparse matrix offers (scipy.sparse's spmatrix interface)."""

    format = ""
    ndim = 2
    stream = None
    __array_ufunc__ = None  # numpy defers: ndarray + A, ndarray - A and ndarray * A reach A's reflected operators

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    @property
    def size(self) -> int:
        return self.nnz

    def __repr__(self) -> str:
        return f"<{self.shape[0]}x{self.shape[1]} oxicuda {self.format} matrix of {self.dtype} with {self.nnz} stored elements>"

    def get(self):
        """The matrix as a scipy.sparse matrix of the same format (ImportError without scipy)."""
        import scipy.sparse as sp

        if self.format == "coo":
            return sp.coo_matrix((self.data.get(), (self.row.get(), self.col.get())), shape=self.shape)
        cls = sp.csr_matrix if self.format == "csr" else sp.csc_matrix
        return cls((self.data.get(), self.indices.get(), self.indptr.get()), shape=self.shape)

    def getH(self) -> spmatrix:
        return self.transpose().conj()

    @property
    def H(self):
        return self.getH()

    def get_shape(self) -> tuple[int, int]:
        return self.shape

    def getformat(self) -> str:
        return self.format

    def count_nonzero(self) -> int:
        """The number of stored entries that are nonzero once duplicates are summed (a count
        read back, like nnz)."""
        c = self.tocsr().canonical()
        return int(D.nonzero_positions(c.data, self.stream).size)

    def __abs__(self):
        """|A| element-wise, duplicates summed first (|a + b|, not |a| + |b|); complex matrices
        give real ones."""
        from .elementwise import absolute

        return absolute(self)

    def trace(self, offset: int = 0) -> DeviceArray:
        """The sum of diagonal ``offset`` (a 0-d device array)."""
        d = self.diagonal(offset)
        off = asarray(np.array([0, d.size], np.int32), stream=self.stream)
        return prim.segmented_reduce(d, off, "sum", stream=self.stream).reshape(())

    def mean(self, axis: int | None = None):
        """The mean of all entries (implicit zeros included; a 0-d device array), or along
        ``axis`` as a (1, n) or (m, 1) one, as scipy's."""
        m, n = self.shape
        s = self.sum(axis)
        count = m * n if axis is None else (m if axis in (0, -2) else n)
        flat = s.reshape(s.size)
        return S.scale(flat, 1.0 / max(count, 1), self.stream).reshape(s.shape)

    def asformat(self, format: str | None, copy: bool = False) -> spmatrix:
        """This matrix in ``format`` ('csr', 'csc', 'coo'; None: unchanged)."""
        if format is None or format == self.format:
            return self.copy() if copy else self
        if format not in ("csr", "csc", "coo"):
            raise ValueError(f"asformat: format={format!r}; allowed 'csr', 'csc', 'coo' or None")
        return getattr(self, f"to{format}")()

    def todense(self, order: str = "C") -> DeviceArray:
        return self.toarray(order)

    def conjugate(self, copy: bool = True) -> spmatrix:
        return self.conj(copy)

    def getnnz(self) -> int:
        return self.nnz

    def __mul__(self, other):
        if np.isscalar(other):
            return self._with_data(S.scale(self.data, other, self.stream))
        return self.__matmul__(other)

    def __rmul__(self, other):
        if np.isscalar(other):
            return self.__mul__(other)
        return NotImplemented

    def __truediv__(self, other):
        if np.isscalar(other):
            return self.__mul__(1.0 / other)
        return NotImplemented

    def __neg__(self):
        return self.__mul__(-1)

    def multiply(self, other):
        """Element-wise product: with a scalar, a matrix of this format; with a sparse matrix of
        the same shape and dtype, a CSR matrix (zeros of the product dropped, as scipy does); with
        a dense array of shape (m, n), (1, n), (n,) or (m, 1) (broadcast, as scipy; dtypes
        promoted), a CSR matrix with A's pattern (cupyx returns CSR, scipy COO)."""
        if np.isscalar(other):
            return self.__mul__(other)
        return self.tocsr()._multiply(other)

    def __add__(self, other):
        return self._add(other, 1, "+")

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        return self._add(other, -1, "-")

    def __rsub__(self, other):
        if isinstance(other, spmatrix) or np.isscalar(other):
            return (-self)._add(other, 1, "-")
        return self._add_dense(other, -1, "-", reverse=True)

    def _add(self, other, sign: int, what: str):
        if not isinstance(other, spmatrix):
            if _is_scipy_sparse(other):
                return self._add(csr_matrix(other, stream=self.stream), sign, what)
            if np.isscalar(other):
                if other == 0:
                    return self.copy()
                raise NotImplementedError(f"sparse {what} scalar: adding a nonzero scalar ({other!r}) to a sparse "
                                          "matrix is not supported (scipy neither); add it to A.toarray()")
            return self._add_dense(other, sign, what)
        if other.shape != self.shape:
            raise ValueError(f"inconsistent shapes: {self.shape} {what} {other.shape}; they must be equal")
        if other.dtype != self.dtype:
            raise TypeError(f"sparse {what}: dtypes {self.dtype} and {other.dtype} differ; astype one first")
        a, b = self.tocoo(), other.tocoo()
        if sign < 0:
            b = b * -1
        st = self.stream
        row = concat(a.row, b.row, st)
        col = concat(a.col, b.col, st)
        data = concat(a.data, b.data, st)
        d, ind, ptr = D.compress(row, col, data, self.shape[0], self.shape[1], True, st)
        return csr_matrix._from_parts(d, ind, ptr, self.shape, canonical=True)

    def _add_dense(self, other, sign: int, what: str, reverse: bool = False) -> DeviceArray:
        from .elementwise import add_dense

        return add_dense(self, other, sign, what, reverse)

    def dot(self, other):
        return self.__matmul__(other)

    def __matmul__(self, other):
        return self._matmul(other)

    def _matmul(self, other):
        return self.tocsr()._matmul(other)

    def sum(self, axis: int | None = None):
        """Sum of all entries (a 0-d device array), or along ``axis`` 0/1 as a (1, n)/(m, 1) one."""
        if axis is None:
            off = asarray(np.array([0, self.nnz], np.int32), stream=self.stream)
            return prim.segmented_reduce(self.data, off, "sum", stream=self.stream).reshape(())
        if axis not in (0, 1, -1, -2):
            raise ValueError(f"sum: axis={axis!r}; allowed None, 0, 1")
        m, n = self.shape
        if axis in (1, -1):
            c = self.tocsr()
            return prim.segmented_reduce(c.data, c.indptr, "sum", stream=self.stream).reshape(m, 1)
        c = self.tocsc()
        return prim.segmented_reduce(c.data, c.indptr, "sum", stream=self.stream).reshape(1, n)

    def diagonal(self, k: int = 0) -> DeviceArray:
        """Diagonal ``k`` (0 the main one, > 0 above it, < 0 below), duplicates summed: a new
        device vector of max(0, min(m + min(k, 0), n - max(k, 0))) entries."""
        from .elementwise import diagonal

        return diagonal(self, k)

    def setdiag(self, values, k: int = 0) -> None:
        """Set diagonal ``k`` to ``values`` in place (scipy's setdiag): a scalar fills the whole
        diagonal, a 1-D array its first len(values) entries (longer arrays are cut). Entries the
        matrix lacks are inserted; the result is canonical (sorted, duplicates summed)."""
        from .elementwise import setdiag

        setdiag(self, values, k)


def concat(a: DeviceArray, b: DeviceArray, stream: object) -> DeviceArray:
    out = empty((a.size + b.size,), a.dtype, stream=stream)
    if a.size:
        out[: a.size] = a
    if b.size:
        out[a.size:] = b
    return out


class _compressed(spmatrix):
    """CSR, or CSC as the CSR of the transpose: ``data``, ``indices``, ``indptr``."""

    _major_axis = 0

    def __init__(self, arg1, shape=None, dtype=None, copy: bool = False, *, check: bool = True,
                 stream: object = None) -> None:
        self.stream = stream
        if isinstance(arg1, spmatrix):
            other = arg1.tocsr() if self.format == "csr" else arg1.tocsc()
            self._set(other.data, other.indices, other.indptr, other.shape, other.has_canonical_format)
            if dtype is not None:
                self._set(self.astype(dtype).data, self.indices, self.indptr, self.shape, self.has_canonical_format)
            return
        canonical = False
        if _is_scipy_sparse(arg1):
            arg1 = arg1.tocsr() if self.format == "csr" else arg1.tocsc()
            shape = arg1.shape if shape is None else shape
            canonical = bool(arg1.has_canonical_format)  # scipy's flag of the host object it was given
            arg1 = (arg1.data, arg1.indices, arg1.indptr)
        if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
            coo = coo_matrix(arg1, shape=shape, dtype=dtype, check=check, stream=stream)
            other = coo.tocsr() if self.format == "csr" else coo.tocsc()
            self._set(other.data, other.indices, other.indptr, other.shape, True)
            return
        if isinstance(arg1, tuple) and len(arg1) == 2 and all(np.isscalar(v) for v in arg1):
            m, n = shape_of(arg1, self.format)
            dt = matrix_dtype(dtype or np.float64, self.format)
            nmaj = m if self.format == "csr" else n
            self._set(empty((0,), dt, stream=stream), empty((0,), np.int32, stream=stream),
                      zeros((nmaj + 1,), np.int32, stream=stream), (m, n), True)
            return
        if isinstance(arg1, tuple) and len(arg1) == 3:
            data, indices, indptr = arg1
            dt = matrix_dtype(dtype or getattr(data, "dtype", None) or np.asarray(data).dtype, self.format)
            d = _dev(data, dt, stream)
            ind = _index(indices, f"{self.format}_matrix: indices", stream)
            ptr = _index(indptr, f"{self.format}_matrix: indptr", stream)
            if shape is None:
                raise ValueError(f"{self.format}_matrix((data, indices, indptr)): shape is required here "
                                 "(inferring it would read the indices back)")
            m, n = shape_of(shape, self.format)
            nmaj, nmin = (m, n) if self.format == "csr" else (n, m)
            check_compressed(d, ind, ptr, nmaj, nmin, self.format, check, stream)
            self._set(d.copy() if copy else d, ind.copy() if copy else ind, ptr.copy() if copy else ptr,
                      (m, n), canonical)
            return
        dense = arg1 if isinstance(arg1, DeviceArray) else np.asarray(arg1)
        if dense.ndim != 2:
            raise ValueError(f"{self.format}_matrix: a dense input must be 2-D; got shape {dense.shape}")
        dt = matrix_dtype(dtype or dense.dtype, self.format)
        dd = _dev(dense, dt, stream)
        other = _from_dense(dd, stream)
        if self.format == "csc":
            other = other.tocsc()
        self._set(other.data, other.indices, other.indptr, other.shape, True)

    def _set(self, data, indices, indptr, shape, canonical) -> None:
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = (int(shape[0]), int(shape[1]))
        self.has_canonical_format = bool(canonical)
        self._spmv_choice = None
        self.__dict__.pop("_sptrsv", None)
        self.__dict__.pop("_canonical", None)

    def canonical(self):
        """This matrix with sorted, merged indices: itself when it already is, else a canonical
        copy made once and kept (the solvers' analyses are cached on it)."""
        if self.has_canonical_format:
            return self
        c = self.__dict__.get("_canonical")
        if c is None:
            c = self.copy()
            c.sum_duplicates()
            self.__dict__["_canonical"] = c
        return c

    @classmethod
    def _from_parts(cls, data, indices, indptr, shape, canonical=False, stream=None):
        self = cls.__new__(cls)
        self.stream = stream
        self._set(data, indices, indptr, shape, canonical)
        return self

    def _with_data(self, data):
        return type(self)._from_parts(data, self.indices, self.indptr, self.shape, self.has_canonical_format, self.stream)

    @property
    def _csr_shape(self) -> tuple[int, int]:
        """The shape of the CSR these arrays are (the transpose's for CSC)."""
        return self.shape if self.format == "csr" else (self.shape[1], self.shape[0])

    @property
    def has_sorted_indices(self) -> bool:
        return self.has_canonical_format

    def copy(self):
        return type(self)._from_parts(self.data.copy(), self.indices.copy(), self.indptr.copy(), self.shape,
                                      self.has_canonical_format, self.stream)

    def astype(self, dtype, copy: bool = True):
        dt = matrix_dtype(dtype, self.format)
        if dt == self.dtype:
            return self.copy() if copy else self
        return self._with_data(D.cast(self.data, dt, self.stream))

    def conj(self, copy: bool = True):
        return self._with_data(D.conj(self.data, self.stream))

    def _rows(self) -> DeviceArray:
        return D.expand_rows(self.indptr, self.nnz, self.stream)

    def _recompress(self, sum_duplicates: bool):
        nmaj, nmin = self._csr_shape
        d, ind, ptr = D.compress(self._rows(), self.indices, self.data, nmaj, nmin, sum_duplicates, self.stream)
        return d, ind, ptr

    def sum_duplicates(self) -> None:
        """Sort the indices of every row and merge duplicates, in place (scipy's method)."""
        if self.has_canonical_format:
            return
        d, ind, ptr = self._recompress(True)
        self._set(d, ind, ptr, self.shape, True)

    def sort_indices(self) -> None:
        """Sort the indices of every row in place (duplicates kept)."""
        d, ind, ptr = self._recompress(False)
        self._set(d, ind, ptr, self.shape, self.has_canonical_format)

    def sorted_indices(self):
        """A copy with the indices of every row sorted."""
        c = self.copy()
        c.sort_indices()
        return c

    def eliminate_zeros(self) -> None:
        """Drop the stored zeros, in place."""
        keep = D.nonzero_positions(self.data, self.stream)
        if keep.size == self.nnz:
            return
        rows = prim.gather(self._rows(), keep, stream=self.stream)
        nmaj, _ = self._csr_shape
        ptr = D.indptr_from_sorted(rows, nmaj, self.stream)
        self._set(prim.gather(self.data, keep, stream=self.stream),
                  prim.gather(self.indices, keep, stream=self.stream), ptr, self.shape, self.has_canonical_format)

    def transpose(self, axes=None, copy: bool = False):
        if axes is not None:
            raise ValueError("transpose: axes is not supported (sparse matrices have two axes)")
        other = csc_matrix if self.format == "csr" else csr_matrix
        return other._from_parts(self.data, self.indices, self.indptr, (self.shape[1], self.shape[0]),
                                 self.has_canonical_format, self.stream)

    @property
    def T(self):
        return self.transpose()

    def _as_coo_parts(self):
        """(row, col) of the entries in the matrix's own coordinates."""
        major = self._rows()
        return (major, self.indices) if self.format == "csr" else (self.indices, major)

    def tocoo(self, copy: bool = False):
        row, col = self._as_coo_parts()
        return coo_matrix._from_parts(self.data, row, col, self.shape, self.stream)

    def toarray(self, order: str = "C") -> DeviceArray:
        """The dense (m, n) array (C order), duplicates summed."""
        c = self.tocsr()
        m, n = self.shape
        dense = zeros((m, n), self.dtype, stream=self.stream)
        if c.nnz and m:
            from .kernels.convert import ConvertSpec

            D.run1(ConvertSpec(arch=D.arch(), variant="toarray", dtype=self.dtype.name, to=self.dtype.name),
                   D.blocks(m, 8), (c.indptr.ptr, c.indices.ptr, c.data.ptr, dense.ptr, m, n), self.stream)
        return dense if order == "C" else dense.copy(order)


class csr_matrix(_compressed):
    """Compressed sparse rows: ``csr_matrix(D)``, ``csr_matrix(S)`` (scipy or oxicuda sparse),
    ``csr_matrix((M, N))``, ``csr_matrix((data, (row, col)), shape)``,
    ``csr_matrix((data, indices, indptr), shape)``; ``check=False`` skips the device-side
    validation of given index arrays (as scipy's check)."""

    format = "csr"

    def tocsr(self, copy: bool = False):
        return self.copy() if copy else self

    def tocsc(self, copy: bool = False):
        m, n = self.shape
        d, ind, ptr = D.compress(self.indices, self._rows(), self.data, n, m, False, self.stream)
        return csc_matrix._from_parts(d, ind, ptr, self.shape, self.has_canonical_format, self.stream)

    def _multiply(self, other):
        from .kernels.convert import ConvertSpec

        if isinstance(other, spmatrix) or _is_scipy_sparse(other):
            b = other if isinstance(other, spmatrix) else csr_matrix(other)
            if b.shape != self.shape:
                raise ValueError(f"multiply: shapes {self.shape} and {b.shape} differ; they must be equal")
            if b.dtype != self.dtype:
                raise TypeError(f"multiply: dtypes {self.dtype} and {b.dtype} differ; astype one first")
            a, b = self.canonical(), b.tocsr().canonical()
            out = empty((a.nnz,), self.dtype, stream=self.stream)
            if a.nnz:
                rows = a._rows()  # kept alive until the launch that reads it is enqueued
                D.run1(ConvertSpec(arch=D.arch(), variant="mul_sparse", dtype=self.dtype.name, to=self.dtype.name),
                       D.blocks(a.nnz), (rows.ptr, a.indices.ptr, a.data.ptr, b.indptr.ptr, b.indices.ptr,
                                         b.data.ptr, out.ptr, a.nnz), self.stream)
            c = csr_matrix._from_parts(out, a.indices, a.indptr, self.shape, True, self.stream)
            c.eliminate_zeros()
            return c
        from .elementwise import multiply_dense

        return multiply_dense(self, other)

    def spmv_kernel(self) -> tuple[str, int]:
        """The SpMV kernel this matrix gets: ("vector", width) or ("merge", items); measured on
        the device on first use and cached."""
        if self._spmv_choice is None:
            self._spmv_choice = S.choose_kernel(self.shape[0], self.nnz, S.max_row_length(self.indptr, self.stream))
        return self._spmv_choice

    def _matmul(self, other):
        if isinstance(other, spmatrix):
            from .spgemm import check_operands, spgemm

            check_operands(self, other)
            return spgemm(self, other.tocsr())
        if np.isscalar(other):
            return self * other
        x = other if isinstance(other, DeviceArray) else asarray(np.asarray(other), stream=self.stream)
        if x.ndim == 1:
            return self.spmv(x)
        if x.ndim == 2:
            return self.spmm(x)
        raise ValueError(f"matmul: operand of shape {x.shape}; a vector or a 2-D array is required")

    def spmv(self, x, y=None, alpha: complex = 1.0, beta: complex = 0.0, transpose: bool = False,
             conj: bool = False) -> DeviceArray:
        """``y = alpha op(A) x + beta y`` (op: A, A^T with ``transpose``, A^H with both); y is
        new (zeros when beta would read it) unless given."""
        m, n = self.shape
        xin, yout = (m, n) if transpose else (n, m)
        xa = vector_operand(x, xin, self.dtype, "spmv: x")
        if y is None:
            y = empty((yout,), self.dtype, stream=self.stream)
            if beta != 0:
                raise ValueError("spmv: beta != 0 needs y")
        else:
            y = vector_operand(y, yout, self.dtype, "spmv: y", writable=True)
            if y.ptr < xa.ptr + xa.nbytes and xa.ptr < y.ptr + y.nbytes:
                raise ValueError("spmv: y overlaps x; the product reads all of x while writing y, so they must "
                                 "be separate arrays")
        if transpose:
            S.spmv_transposed(self.indptr, self.indices, self.data, self.shape, xa, y, alpha, beta, conj, self.stream)
        else:
            S.spmv(self.indptr, self.indices, self.data, self.shape, self.spmv_kernel(), xa, y, alpha, beta,
                   self.stream)
        return y

    def spmm(self, x, y=None, alpha: complex = 1.0, beta: complex = 0.0) -> DeviceArray:
        """``Y = alpha A X + beta Y`` for a dense (n, k) X (C-contiguous; Y (m, k) new unless given)."""
        from .spmm import spmm

        return spmm(self, x, y, alpha, beta)


class csc_matrix(_compressed):
    """Compressed sparse columns (constructors as csr_matrix's)."""

    format = "csc"

    def tocsc(self, copy: bool = False):
        return self.copy() if copy else self

    def tocsr(self, copy: bool = False):
        return self.transpose().tocsc().transpose()

    def _matmul(self, other):
        if isinstance(other, spmatrix) or np.isscalar(other):
            return self.tocsr()._matmul(other)
        x = other if isinstance(other, DeviceArray) else asarray(np.asarray(other), stream=self.stream)
        if x.ndim == 1:
            return self.spmv(x)  # the stored CSR's transposed product: no CSR of A is formed
        return self.tocsr()._matmul(x)

    def spmv_kernel(self) -> tuple[str, int]:
        """The SpMV kernel of the stored CSR (A^T), used by ``A.T @ x`` style products."""
        if self._spmv_choice is None:
            self._spmv_choice = S.choose_kernel(self.shape[1], self.nnz, S.max_row_length(self.indptr, self.stream))
        return self._spmv_choice

    def spmv(self, x, y=None, alpha: complex = 1.0, beta: complex = 0.0, transpose: bool = False,
             conj: bool = False) -> DeviceArray:
        """``y = alpha op(A) x + beta y`` through the stored CSR of A^T: A x is its transposed
        product (the ``transpose`` kernel), A^T x its plain SpMV, A^H x the plain SpMV of the
        conjugates (x and the result conjugated on the device)."""
        m, n = self.shape
        xin, yout = (m, n) if transpose else (n, m)
        xa = vector_operand(x, xin, self.dtype, "spmv: x")
        if y is None:
            if beta != 0:
                raise ValueError("spmv: beta != 0 needs y")
            y = empty((yout,), self.dtype, stream=self.stream)
        else:
            y = vector_operand(y, yout, self.dtype, "spmv: y", writable=True)
            if y.ptr < xa.ptr + xa.nbytes and xa.ptr < y.ptr + y.nbytes:
                raise ValueError("spmv: y overlaps x; the product reads all of x while writing y, so they must "
                                 "be separate arrays")
        stored = self._csr_shape
        if not transpose:
            S.spmv_transposed(self.indptr, self.indices, self.data, stored, xa, y, alpha, beta, False, self.stream)
        elif not (conj and self.dtype.kind == "c"):
            S.spmv(self.indptr, self.indices, self.data, stored, self.spmv_kernel(), xa, y, alpha, beta, self.stream)
        else:  # A^H x = conj(A^T conj(x)) and A^T is the stored CSR: conjugate in, plain SpMV, conjugate out
            t = D.conj(y, self.stream) if beta != 0 else empty((yout,), self.dtype, stream=self.stream)
            S.spmv(self.indptr, self.indices, self.data, stored, self.spmv_kernel(), D.conj(xa, self.stream), t,
                   np.conj(alpha), np.conj(beta), self.stream)
            y[...] = D.conj(t, self.stream)
        return y


class coo_matrix(spmatrix):
    """Coordinate format: ``coo_matrix((data, (row, col)), shape)``, a dense array, a sparse
    matrix, or ``(M, N)``. Duplicates are kept until ``sum_duplicates`` or a conversion."""

    format = "coo"

    def __init__(self, arg1, shape=None, dtype=None, copy: bool = False, *, check: bool = True,
                 stream: object = None) -> None:
        self.stream = stream
        if isinstance(arg1, spmatrix):
            c = arg1.tocoo()
            self._set(c.data, c.row, c.col, c.shape)
        elif _is_scipy_sparse(arg1):
            c = arg1.tocoo()
            dt = matrix_dtype(dtype or c.dtype, "coo")
            self._set(_dev(c.data, dt, stream), _index(c.row, "coo_matrix: row", stream),
                      _index(c.col, "coo_matrix: col", stream), c.shape)
        elif isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
            data, (row, col) = arg1
            dt = matrix_dtype(dtype or getattr(data, "dtype", None) or np.asarray(data).dtype, "coo")
            d, r, c = _dev(data, dt, stream), _index(row, "coo_matrix: row", stream), _index(col, "coo_matrix: col", stream)
            if shape is None:
                raise ValueError("coo_matrix((data, (row, col))): shape is required here (inferring it "
                                 "would read the indices back)")
            m, n = shape_of(shape, "coo")
            check_coo(d, r, c, m, n, check, stream)
            self._set(d, r, c, (m, n))
        elif isinstance(arg1, tuple) and len(arg1) == 2:
            m, n = shape_of(arg1, "coo")
            dt = matrix_dtype(dtype or np.float64, "coo")
            self._set(empty((0,), dt, stream=stream), empty((0,), np.int32, stream=stream),
                      empty((0,), np.int32, stream=stream), (m, n))
        else:
            c = csr_matrix(arg1, dtype=dtype, stream=stream).tocoo()
            self._set(c.data, c.row, c.col, c.shape)
        if dtype is not None and self.data.dtype != matrix_dtype(dtype, "coo"):
            self.data = D.cast(self.data, matrix_dtype(dtype, "coo"), stream)

    def _set(self, data, row, col, shape) -> None:
        self.data, self.row, self.col = data, row, col
        self.shape = (int(shape[0]), int(shape[1]))
        self.has_canonical_format = False

    @classmethod
    def _from_parts(cls, data, row, col, shape, stream=None):
        self = cls.__new__(cls)
        self.stream = stream
        self._set(data, row, col, shape)
        return self

    def _with_data(self, data):
        return coo_matrix._from_parts(data, self.row, self.col, self.shape, self.stream)

    def copy(self):
        return coo_matrix._from_parts(self.data.copy(), self.row.copy(), self.col.copy(), self.shape, self.stream)

    def astype(self, dtype, copy: bool = True):
        dt = matrix_dtype(dtype, "coo")
        return self._with_data(D.cast(self.data, dt, self.stream)) if dt != self.dtype else (self.copy() if copy else self)

    def conj(self, copy: bool = True):
        return self._with_data(D.conj(self.data, self.stream))

    def transpose(self, axes=None, copy: bool = False):
        return coo_matrix._from_parts(self.data, self.col, self.row, (self.shape[1], self.shape[0]), self.stream)

    @property
    def T(self):
        return self.transpose()

    def tocoo(self, copy: bool = False):
        return self.copy() if copy else self

    def tocsr(self, copy: bool = False):
        m, n = self.shape
        d, ind, ptr = D.compress(self.row, self.col, self.data, m, n, True, self.stream, copy)
        return csr_matrix._from_parts(d, ind, ptr, self.shape, True, self.stream)

    def tocsc(self, copy: bool = False):
        m, n = self.shape
        d, ind, ptr = D.compress(self.col, self.row, self.data, n, m, True, self.stream, copy)
        return csc_matrix._from_parts(d, ind, ptr, self.shape, True, self.stream)

    def sum_duplicates(self) -> None:
        c = self.tocsr()
        self._set(c.data, c._rows(), c.indices, self.shape)
        self.has_canonical_format = True

    def eliminate_zeros(self) -> None:
        """Drop the stored zeros, in place."""
        keep = D.nonzero_positions(self.data, self.stream)
        if keep.size == self.nnz:
            return
        st = self.stream
        self._set(prim.gather(self.data, keep, stream=st), prim.gather(self.row, keep, stream=st),
                  prim.gather(self.col, keep, stream=st), self.shape)

    def toarray(self, order: str = "C") -> DeviceArray:
        return self.tocsr().toarray(order)


def _from_dense(dense: DeviceArray, stream: object) -> csr_matrix:
    m, n = dense.shape
    flat = dense.reshape(m * n)
    pos = D.nonzero_positions(flat, stream)
    nnz = pos.size
    data = prim.gather(flat, pos, stream=stream)
    row, col = D.split_positions(pos, n, stream)
    return csr_matrix._from_parts(data, col, D.indptr_from_sorted(row, m, stream), (m, n), True, stream) \
        if nnz else csr_matrix._from_parts(data, empty((0,), np.int32, stream=stream),
                                           zeros((m + 1,), np.int32, stream=stream), (m, n), True, stream)


def isspmatrix(x: object) -> bool:
    return isinstance(x, spmatrix)


def issparse(x: object) -> bool:
    """True for an oxicuda sparse matrix (scipy's and cupyx's issparse)."""
    return isinstance(x, spmatrix)


def isspmatrix_csr(x: object) -> bool:
    return isinstance(x, csr_matrix)


def isspmatrix_csc(x: object) -> bool:
    return isinstance(x, csc_matrix)


def isspmatrix_coo(x: object) -> bool:
    return isinstance(x, coo_matrix)
