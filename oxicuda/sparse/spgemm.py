"""``C = A @ B`` for CSR matrices (SpGEMM): row bounds, symbolic row sizes, numeric products,
all on the device; two sizes come back (the global fallback table size, nnz of C)."""

from __future__ import annotations

import numpy as np

from oxicuda import primitives as prim
from oxicuda.memory.array import empty

from . import device_ops as D
from .kernels.spgemm import THREADS, SpgemmSpec


def check_operands(A, B) -> None:
    """Shapes and dtypes of a sparse product, before any conversion or launch."""
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"matmul: A has shape {A.shape} and B {B.shape}; A.shape[1] must equal B.shape[0]")
    if A.dtype != B.dtype:
        raise TypeError(f"matmul: A has dtype {A.dtype} and B {B.dtype}; they must match (astype one)")


def spgemm(A, B):
    """The canonical CSR product of CSR matrices A (m x k) and B (k x n) of one dtype."""
    from .matrix import csr_matrix

    check_operands(A, B)
    m, _ = A.shape
    n = B.shape[1]
    st = A.stream
    arch = D.arch()
    if m == 0 or A.nnz == 0 or B.nnz == 0:
        return csr_matrix((m, n), dtype=A.dtype)
    nprod = empty((m,), np.int32, stream=st)
    size = empty((m,), np.uint32, stream=st)
    fsize = empty((m,), np.int64, stream=st)
    D.run1(SpgemmSpec(arch=arch, variant="nprod"), D.blocks(m),
           (A.indptr.ptr, A.indices.ptr, B.indptr.ptr, nprod.ptr, size.ptr, fsize.ptr, m), st)
    goff = prim.exclusive_scan(fsize, stream=st)
    tail = int(goff[m - 1:].get()[0]) + int(fsize[m - 1:].get()[0])
    gkeys = empty((max(tail, 1),), np.uint32, stream=st)
    gvals = empty((max(tail, 1),), A.dtype, stream=st)
    rowcount = empty((m,), np.int32, stream=st)
    D.run1(SpgemmSpec(arch=arch, variant="symbolic"), m,
           (A.indptr.ptr, A.indices.ptr, B.indptr.ptr, B.indices.ptr, size.ptr, goff.ptr, gkeys.ptr,
            rowcount.ptr, m), st, block=THREADS)
    indptr = empty((m + 1,), np.int32, stream=st)
    indptr[0:1].fill(0)
    prim.inclusive_scan(rowcount, out=indptr[1:], stream=st)
    nnz = int(indptr[m:].get()[0])
    indices = empty((nnz,), np.int32, stream=st)
    data = empty((nnz,), A.dtype, stream=st)
    D.run1(SpgemmSpec(arch=arch, variant="numeric", dtype=A.dtype.name), m,
           (A.indptr.ptr, A.indices.ptr, B.indptr.ptr, B.indices.ptr, size.ptr, goff.ptr, gkeys.ptr,
            A.data.ptr, B.data.ptr, gvals.ptr, indptr.ptr, indices.ptr, data.ptr, m), st, block=THREADS)
    return csr_matrix._from_parts(data, indices, indptr, (m, n), True, st)
