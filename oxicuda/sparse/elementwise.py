"""Element-wise and diagonal operations of the sparse matrices: |A|, A +/- dense, A * dense
(broadcast), diagonal(k) and setdiag. Each runs the sparse kernels (``sparse_convert``) on the
device; the methods of matrix.py call these. Host work: shapes, dtypes and, for setdiag, the
diagonal's index pattern from its size (an input, like a user's COO triplets).
"""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, asarray, empty

from . import device_ops as D
from . import spmv as S
from .kernels.convert import ConvertSpec
from .matrix import _dev, concat, coo_matrix, csr_matrix
from .validate import matrix_dtype

__all__ = ["absolute", "add_dense", "diagonal", "multiply_dense", "setdiag"]


def absolute(A):
    """|A| element-wise, duplicates summed first (|a + b|, not |a| + |b|); complex matrices
    give real ones."""
    c = A.tocsr().canonical()
    real = np.dtype(c.dtype.char.lower()) if c.dtype.kind == "c" else c.dtype
    out = empty((c.nnz,), real, stream=A.stream)
    if c.nnz:
        D.run1(ConvertSpec(arch=D.arch(), variant="abs", dtype=c.dtype.name, to=real.name), D.blocks(c.nnz),
               (c.data.ptr, out.ptr, c.nnz), A.stream)
    r = csr_matrix._from_parts(out, c.indices, c.indptr, A.shape, c.has_canonical_format, A.stream)
    return r.asformat(A.format)


def add_dense(A, other, sign: int, what: str, reverse: bool = False) -> DeviceArray:
    """A + D, A - D or D - A (``reverse``) for a dense D of A's shape (a host array may
    broadcast to it): a new dense C-ordered device array (as scipy and cupyx return dense),
    D copied (negated for A - D) and A's entries scatter-added into it."""
    d = other if isinstance(other, DeviceArray) else None
    if d is None:
        h = np.asarray(other)
        if h.dtype == object:
            raise TypeError(f"sparse {what}: {type(other).__name__} is not a sparse matrix or a dense array")
        try:
            h = np.broadcast_to(h, A.shape)
        except ValueError:
            raise ValueError(f"inconsistent shapes: {A.shape} {what} {h.shape}; a dense operand must "
                             "broadcast to the matrix's shape") from None
        d = asarray(np.ascontiguousarray(h), stream=A.stream)
    if tuple(d.shape) != A.shape:
        raise ValueError(f"inconsistent shapes: {A.shape} {what} {d.shape}; they must be equal")
    dt = np.result_type(A.dtype, d.dtype)
    dt = matrix_dtype(dt, A.format)
    out = empty(A.shape, dt, stream=A.stream)
    out[...] = d  # the strided copy kernel (a cast where the dtypes differ)
    a = A if A.dtype == dt else A.astype(dt)
    if sign < 0 and not reverse:
        flat = out.reshape(out.size)
        if flat.size:
            negated = S.scale(flat, -1, A.stream)
            out = negated.reshape(A.shape)
    elif reverse:
        a = a * -1
    c = a.tocsr()
    m, n = A.shape
    if c.nnz and m:
            D.run1(ConvertSpec(arch=D.arch(), variant="toarray", dtype=dt.name, to=dt.name),
               D.blocks(m, 8), (c.indptr.ptr, c.indices.ptr, c.data.ptr, out.ptr, m, n), A.stream)
    return out


def diagonal(A, k: int = 0) -> DeviceArray:
    """Diagonal ``k`` (0 the main one, > 0 above it, < 0 below), duplicates summed: a new
    device vector of max(0, min(m + min(k, 0), n - max(k, 0))) entries."""
    k = _diagonal_index(k, "diagonal")
    m, n = A.shape
    if A.format == "csc":  # the stored CSR is A^T, whose diagonal -k this is
        indptr, indices, data, k, (m, n) = A.indptr, A.indices, A.data, -k, (n, m)
    else:
        c = A.tocsr()
        indptr, indices, data = c.indptr, c.indices, c.data
    row0 = max(0, -k)
    count = max(0, min(m - row0, n - row0 - k))
    out = empty((count,), A.dtype, stream=A.stream)
    if count:
            D.run1(ConvertSpec(arch=D.arch(), variant="diagonal", dtype=A.dtype.name, to=A.dtype.name),
               D.blocks(count), (indptr.ptr, indices.ptr, data.ptr, out.ptr, count, row0, k), A.stream)
    return out


def setdiag(A, values, k: int = 0) -> None:
    """Set diagonal ``k`` to ``values`` in place (scipy's setdiag): a scalar fills the whole
    diagonal, a 1-D array its first len(values) entries (longer arrays are cut). Entries the
    matrix lacks are inserted; the result is canonical (sorted, duplicates summed)."""
    k = _diagonal_index(k, "setdiag")
    m, n = A.shape
    if (k < 0 and -k >= m) or (k > 0 and k >= n):
        raise ValueError(f"setdiag: k={k} exceeds the matrix dimensions {A.shape}")
    row0 = max(0, -k)
    length = max(0, min(m - row0, n - row0 - k))
    if isinstance(values, DeviceArray) or np.ndim(values) > 0:
        v = values if isinstance(values, DeviceArray) else asarray(np.asarray(values))
        if v.ndim != 1:
            raise ValueError(f"setdiag: values has shape {v.shape}; a scalar or a 1-D array is required")
        count = min(length, v.size)
        v = _dev(v[:count], A.dtype, A.stream)
    else:
        count = length
        v = empty((count,), A.dtype, stream=A.stream)
        v.fill(values)
    r = np.arange(row0, row0 + count, dtype=np.int32)  # the diagonal's pattern, from sizes
    rows, cols = asarray(r, stream=A.stream), asarray(r + np.int32(k), stream=A.stream)
    coo = A.tocoo()
    old = coo.data
    kept = empty((old.size,), A.dtype, stream=A.stream)
    if old.size:
            D.run1(ConvertSpec(arch=D.arch(), variant="zero_diagonal", dtype=A.dtype.name, to=A.dtype.name),
               D.blocks(old.size), (coo.row.ptr, coo.col.ptr, old.ptr, kept.ptr, old.size, k, row0 + count), A.stream)
    st = A.stream
    row, col, data = concat(coo.row, rows, st), concat(coo.col, cols, st), concat(kept, v, st)
    if A.format == "coo":
        c = coo_matrix._from_parts(data, row, col, A.shape, st).tocsr()
        A._set(c.data, c._rows(), c.indices, A.shape)
        return
    major, minor, nmaj, nmin = (row, col, m, n) if A.format == "csr" else (col, row, n, m)
    d, ind, ptr = D.compress(major, minor, data, nmaj, nmin, True, st)
    A._set(d, ind, ptr, A.shape, True)


def _diagonal_index(k, who: str) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{who}: k={k!r}; the diagonal number must be an int")
    return int(k)


def multiply_dense(A, other):
    """A * D element-wise for a dense D broadcasting to A's shape: a CSR matrix of A's pattern."""
    d = other if isinstance(other, DeviceArray) else asarray(np.asarray(other), stream=A.stream)
    m, n = A.shape
    if d.ndim == 0:
        return A * d.get().item()
    shape2 = (1, d.shape[0]) if d.ndim == 1 else tuple(d.shape)
    if d.ndim > 2 or any(s not in (1, t) for s, t in zip(shape2, A.shape)):
        raise ValueError(f"multiply: the dense operand has shape {d.shape}; it must broadcast to {A.shape} "
                         f"({A.shape}, (1, {n}), ({n},) or ({m}, 1))")
    dt = matrix_dtype(np.result_type(A.dtype, d.dtype), "multiply")
    a = A if A.dtype == dt else A.astype(dt)
    if d.dtype != dt:
        d = d.astype(dt)
    es = d.itemsize
    strides = (0, d.strides[0] // es) if d.ndim == 1 else tuple(st // es for st in d.strides)
    rs = 0 if shape2[0] == 1 else strides[0]
    cs = 0 if shape2[1] == 1 else strides[1]
    out = empty((a.nnz,), dt, stream=A.stream)
    if a.nnz:
        rows = a._rows()  # kept alive until the launch that reads it is enqueued
        D.run1(ConvertSpec(arch=D.arch(), variant="mul_dense", dtype=dt.name, to=dt.name),
               D.blocks(a.nnz), (rows.ptr, a.indices.ptr, a.data.ptr, d.ptr, out.ptr, a.nnz, rs, cs),
               A.stream)
    return csr_matrix._from_parts(out, a.indices, a.indptr, A.shape, a.has_canonical_format, A.stream)
