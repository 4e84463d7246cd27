"""Checks of what users hand the sparse matrices, before anything is written: shapes, dtypes,
and (``check=True``, the default, as scipy's) the index arrays, verified on the device by
reductions whose results (a handful of numbers) come back to the host."""

from __future__ import annotations

import numpy as np

from oxicuda import primitives as prim
from oxicuda.memory.array import DeviceArray, asarray

from . import device_ops as D

DTYPES = ("float32", "float64", "complex64", "complex128")


def matrix_dtype(dtype: object, what: str) -> np.dtype:
    """The value dtype of a sparse matrix: one of DTYPES; integers and bools become float64 (the
    kernels compute in floating point)."""
    dt = np.dtype(dtype)
    if dt.kind in "iub":
        return np.dtype(np.float64)
    if dt.name not in DTYPES:
        raise TypeError(f"{what}_matrix: dtype {dt}; allowed {', '.join(DTYPES)}")
    return dt


def shape_of(shape: object, what: str) -> tuple[int, int]:
    try:
        m, n = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise ValueError(f"{what}_matrix: shape={shape!r}; a pair of ints (M, N) is required") from None
    if m < 0 or n < 0:
        raise ValueError(f"{what}_matrix: shape=({m}, {n}); dimensions must be >= 0")
    if m > D.MAX_INDEX or n > D.MAX_INDEX:
        raise ValueError(f"{what}_matrix: shape=({m}, {n}); int32 indices allow at most {D.MAX_INDEX}")
    return m, n


def _one_d(a: DeviceArray, what: str, name: str) -> None:
    if a.ndim != 1:
        raise ValueError(f"{what}_matrix: {name} has shape {a.shape}; it must be 1-D")


def _range(a: DeviceArray, stream: object) -> tuple[int, int]:
    return int(prim.reduce(a, "min", stream=stream).get()), int(prim.reduce(a, "max", stream=stream).get())


def check_compressed(data: DeviceArray, indices: DeviceArray, indptr: DeviceArray, n_major: int,
                     n_minor: int, what: str, check: bool, stream: object) -> None:
    """indptr of length n_major + 1, starting at 0, non-decreasing, ending at nnz; data and
    indices of length nnz; indices in [0, n_minor)."""
    for a, name in ((data, "data"), (indices, "indices"), (indptr, "indptr")):
        _one_d(a, what, name)
    if indptr.size != n_major + 1:
        raise ValueError(f"{what}_matrix: indptr has {indptr.size} entries; a matrix with {n_major} "
                         f"{'rows' if what == 'csr' else 'columns'} needs {n_major + 1}")
    if data.size != indices.size:
        raise ValueError(f"{what}_matrix: data has {data.size} entries and indices {indices.size}; they must match")
    if data.size > D.MAX_INDEX:
        raise ValueError(f"{what}_matrix: nnz={data.size}; int32 indices allow at most {D.MAX_INDEX}")
    if not check:
        return
    ends = indptr.get() if indptr.size <= 2 else None
    first = int(ends[0]) if ends is not None else int(indptr[0:1].get()[0])
    last = int(ends[-1]) if ends is not None else int(indptr[indptr.size - 1:].get()[0])
    if first != 0:
        raise ValueError(f"{what}_matrix: indptr[0] = {first}; it must be 0")
    if last != data.size:
        raise ValueError(f"{what}_matrix: indptr[-1] = {last} but there are {data.size} entries; they must match")
    if n_major:
        shortest = int(prim.reduce(D.row_lengths(indptr, stream), "min", stream=stream).get())
        if shortest < 0:
            raise ValueError(f"{what}_matrix: indptr is not monotone (a row has length {shortest}); "
                             "indptr must be non-decreasing")
    if indices.size:
        lo, hi = _range(indices, stream)
        if lo < 0 or hi >= n_minor:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{what}_matrix: an index is {bad}; indices must lie in [0, {n_minor})")


def check_coo(data: DeviceArray, row: DeviceArray, col: DeviceArray, m: int, n: int, check: bool,
              stream: object) -> None:
    for a, name in ((data, "data"), (row, "row"), (col, "col")):
        _one_d(a, "coo", name)
    if not data.size == row.size == col.size:
        raise ValueError(f"coo_matrix: data, row and col have {data.size}, {row.size}, {col.size} entries; "
                         "they must match")
    if data.size > D.MAX_INDEX:
        raise ValueError(f"coo_matrix: nnz={data.size}; int32 indices allow at most {D.MAX_INDEX}")
    if check and data.size:
        for a, name, limit in ((row, "row", m), (col, "column", n)):
            lo, hi = _range(a, stream)
            if lo < 0 or hi >= limit:
                raise ValueError(f"coo_matrix: a {name} index is {lo if lo < 0 else hi}; {name} indices must "
                                 f"lie in [0, {limit})")


def vector_operand(x: object, length: int, dtype: np.dtype, what: str, writable: bool = False) -> DeviceArray:
    """A contiguous 1-D device vector of ``length`` elements of ``dtype``."""
    xa = x if isinstance(x, DeviceArray) else asarray(np.asarray(x))
    if xa.ndim != 1 or xa.size != length:
        raise ValueError(f"{what} has shape {xa.shape}; the matrix needs a vector of length {length}")
    if xa.dtype != dtype:
        raise TypeError(f"{what} has dtype {xa.dtype} and the matrix {dtype}; they must match (astype one)")
    if not xa.is_c_contiguous:
        if writable:
            raise ValueError(f"{what} is not contiguous (strides {xa.strides}); the kernel writes a contiguous vector")
        xa = xa.copy()
    return xa
