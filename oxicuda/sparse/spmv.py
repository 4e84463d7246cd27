"""SpMV dispatch and launch: ``y = alpha op(A) x + beta y`` for a CSR matrix.

The kernel is chosen from row-length statistics measured once per matrix on the device (the
maximum row length, by a row-length kernel and the primitives' max reduce; the mean is nnz/rows)
and cached on the matrix: rows far longer than the mean go to the merge-path kernel, the rest
to the vector kernel with a lane group near the mean row length.
"""

from __future__ import annotations

import numpy as np

from oxicuda import primitives as prim
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.memory.workspace import workspace

from . import device_ops as D
from .kernels.spmv import THREADS, SpmvSpec

#: PROVISIONAL (reasoned, not measured on the H200): merge path when the longest row is at least
#: MERGE_MIN_MAX long and MERGE_RATIO times the mean; MERGE_ITEMS merge steps per thread.
DISPATCH = {"MERGE_MIN_MAX": 64, "MERGE_RATIO": 8.0, "MERGE_ITEMS": 8}


def max_row_length(indptr: DeviceArray, stream: object) -> int:
    """The longest row (a size, read back once per matrix)."""
    if indptr.size <= 1:
        return 0
    return int(prim.reduce(D.row_lengths(indptr, stream), "max", stream=stream).get())


def choose_kernel(nrows: int, nnz: int, max_len: int) -> tuple[str, int]:
    """("merge", items) or ("vector", lane-group width): a pure function of the statistics."""
    mean = nnz / max(nrows, 1)
    if max_len >= DISPATCH["MERGE_MIN_MAX"] and max_len >= DISPATCH["MERGE_RATIO"] * max(mean, 1.0):
        return "merge", DISPATCH["MERGE_ITEMS"]
    width = 2
    while width < 32 and width < mean:
        width *= 2
    return "vector", width


def scalars(dtype: np.dtype, value: complex) -> tuple:
    real = np.float32 if dtype in (np.float32, np.complex64) else np.float64
    if np.dtype(dtype).kind == "c":
        return real(np.real(value)), real(np.imag(value))
    if np.imag(value) != 0:
        raise TypeError(f"spmv: a complex scalar {value!r} with a real {np.dtype(dtype)} matrix")
    return (real(np.real(value)),)


def spmv(indptr: DeviceArray, indices: DeviceArray, data: DeviceArray, shape: tuple[int, int],
         choice: tuple[str, int], x: DeviceArray, y: DeviceArray, alpha: complex, beta: complex,
         stream: object) -> None:
    """y = alpha A x + beta y (A m x n CSR, x length n, y length m)."""
    m, _ = shape
    nnz = data.size
    if m == 0:
        return
    dt = data.dtype.name
    a, b = scalars(data.dtype, alpha), scalars(data.dtype, beta)
    read_y = 0 if beta == 0 else 1
    arch = D.arch()
    variant, param = choice
    if variant == "vector":
        spec = SpmvSpec(arch=arch, dtype=dt, variant="vector", width=param)
        D.run1(spec, D.blocks(m, THREADS // param),
               (indptr.ptr, indices.ptr, data.ptr, x.ptr, y.ptr, m, *a, *b, read_y), stream)
        return
    items = param
    threads = -(-(m + nnz) // items)
    carry_row = workspace((np.int32, threads), stream)
    carry_val = workspace((data.dtype, threads), stream)
    D.run1(SpmvSpec(arch=arch, dtype=dt, variant="merge"), D.blocks(threads),
           (indptr.ptr, indices.ptr, data.ptr, x.ptr, y.ptr, m, nnz, *a, *b, read_y, items, threads,
            carry_row.ptr, carry_val.ptr), stream)
    D.run1(SpmvSpec(arch=arch, dtype=dt, variant="fixup"), D.blocks(threads),
           (carry_row.ptr, carry_val.ptr, y.ptr, threads, m, *a), stream)


def spmv_transposed(indptr: DeviceArray, indices: DeviceArray, data: DeviceArray,
                    shape: tuple[int, int], x: DeviceArray, y: DeviceArray, alpha: complex,
                    beta: complex, conj: bool, stream: object) -> None:
    """y = alpha A^T x + beta y (A^H with ``conj``), A m x n CSR: x length m, y length n."""
    m, n = shape
    dt = data.dtype.name
    arch = D.arch()
    if n:
        D.run1(SpmvSpec(arch=arch, dtype=dt, variant="scale"), D.blocks(n),
               (y.ptr, y.ptr, n, *scalars(data.dtype, beta), 0 if beta == 0 else 1), stream)
    if m and data.size:
        spec = SpmvSpec(arch=arch, dtype=dt, variant="transpose", conj=bool(conj) and data.dtype.kind == "c")
        D.run1(spec, D.blocks(m, THREADS // 32),
               (indptr.ptr, indices.ptr, data.ptr, x.ptr, y.ptr, m, *scalars(data.dtype, alpha)), stream)


def scale(x: DeviceArray, alpha: complex, stream: object) -> DeviceArray:
    """alpha * x as a new array (x float/complex)."""
    out = empty(x.shape, x.dtype, stream=stream)
    if x.size:
        D.run1(SpmvSpec(arch=D.arch(), dtype=x.dtype.name, variant="scale"), D.blocks(x.size),
               (x.ptr, out.ptr, x.size, *scalars(x.dtype, alpha), 1), stream)
    return out
