"""SpMM launch: checks, the vector width from the operands' alignment, one launch."""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, asarray, empty

from . import device_ops as D
from .kernels.spmm import THREADS, VECS, WARPS, SpmmSpec
from .spmv import scalars


def _dense(x, shape, dtype, what: str, writable: bool = False) -> DeviceArray:
    xa = x if isinstance(x, DeviceArray) else asarray(np.asarray(x))
    if tuple(xa.shape) != tuple(shape):
        raise ValueError(f"matmul: {what} has shape {xa.shape}; it must be {tuple(shape)}")
    if xa.dtype != dtype:
        raise TypeError(f"matmul: {what} has dtype {xa.dtype} and A {dtype}; they must match (astype one)")
    if not xa.is_c_contiguous:
        if writable:
            raise ValueError(f"matmul: {what} is not C-contiguous (strides {xa.strides}); the kernel writes rows")
        xa = xa.copy()
    return xa


def spmm(A, x, y, alpha, beta) -> DeviceArray:
    m, n = A.shape
    xa = x if isinstance(x, DeviceArray) else asarray(np.asarray(x))
    if xa.ndim != 2 or xa.shape[0] != n:
        raise ValueError(f"matmul: A has shape {A.shape} and X {xa.shape}; X must be ({n}, k)")
    k = xa.shape[1]
    xa = _dense(xa, (n, k), A.dtype, "X")
    if y is None:
        if beta != 0:
            raise ValueError("spmm: beta != 0 needs Y")
        y = empty((m, k), A.dtype, stream=A.stream)
    else:
        y = _dense(y, (m, k), A.dtype, "Y", writable=True)
    if m == 0 or k == 0:
        return y
    vec = 1
    for v in reversed(VECS[A.dtype.name]):
        if k % v == 0 and xa.ptr % (v * A.dtype.itemsize) == 0 and y.ptr % (v * A.dtype.itemsize) == 0:
            vec = v
            break
    spec = SpmmSpec(arch=D.arch(), dtype=A.dtype.name, vec=vec)
    grid = (D.blocks(m, WARPS), D.blocks(k // vec, 32))
    D.run1(spec, grid, (A.indptr.ptr, A.indices.ptr, A.data.ptr, xa.ptr, y.ptr, m, k,
                        *scalars(A.dtype, alpha), *scalars(A.dtype, beta), 0 if beta == 0 else 1),
           A.stream, block=THREADS)
    return y
