"""norm of a sparse matrix (scipy.sparse.linalg.norm / cupyx's), on the device.

The reductions are oxicuda.solver's transform-and-reduce kernel (``solver_norm``) over the CSR
rows or CSC columns of the canonical matrix (segments given by indptr): abs sums, squares, powers,
nonzero counts, maxima and minima per row or column, then the max or min over those for the
matrix 1- and inf-norms. Results are device arrays: 0-d for a matrix norm, (n,) or (m,) for
``axis`` vector norms, in the matrix's real dtype.
"""

from __future__ import annotations

import operator

import numpy as np

from oxicuda.memory.array import DeviceArray

from ..matrix import spmatrix

_REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}


def _reduce(*args, **kw):
    from oxicuda.solver.norms import reduce_rows

    return reduce_rows(*args, **kw)


def _segments(x: spmatrix, along_rows: bool):
    """The canonical CSR (per-row segments) or CSC (per-column segments) of x."""
    c = x.tocsr() if along_rows else x.tocsc()
    return c.canonical()


def _per_line(x: spmatrix, along_rows: bool, fn: str, op: str, fin: str = "none", p: float = 0.0,
              out_dtype: str | None = None) -> DeviceArray:
    """One reduction per row (along_rows) or per column of x's stored entries; max/min fold in
    the implicit zeros of a line with fewer entries than its length."""
    c = _segments(x, along_rows)
    m, n = x.shape
    lines, length = (m, n) if along_rows else (n, m)
    full = length if op != "sum" else 0
    return _reduce(c.data, lines, fn, op, fin, p=p, offsets=c.indptr, full=full, out_dtype=out_dtype,
                   stream=x.stream or 0)


def _frobenius(x: spmatrix) -> DeviceArray:
    c = x.tocsr().canonical()
    return _reduce(c.data, 1, "sq", "sum", "sqrt", stream=x.stream or 0).reshape(())


def _vector_ord(ord: object) -> tuple[str, str, str, float]:
    if isinstance(ord, str):
        raise ValueError(f"norm: ord={ord!r}; invalid norm order for vectors")  # noqa: TRY004 (numpy's type)
    if ord is None or ord == 2:
        return "sq", "sum", "sqrt", 2.0
    try:
        o = float(ord)
    except (TypeError, ValueError):
        raise ValueError(f"norm: ord={ord!r}; invalid norm order for vectors") from None
    if np.isnan(o):
        raise ValueError(f"norm: ord={ord!r}; invalid norm order for vectors")
    table = {np.inf: ("abs", "max", "none"), -np.inf: ("abs", "min", "none"), 0.0: ("nonzero", "sum", "none"),
             1.0: ("abs", "sum", "none")}
    return (*table.get(o, ("pow", "sum", "root")), o)


def norm(x, ord=None, axis=None) -> DeviceArray:
    """The norm of a sparse matrix, as scipy.sparse.linalg.norm.

    Matrix norms (``axis`` None or a pair): None/'fro' (Frobenius), 1 and -1 (max/min over
    ``axis[1]`` of the abs sums along ``axis[0]``: column sums for axis (0, 1)), inf and -inf
    (max/min of the abs sums along ``axis[1]``); a 0-d device array. Vector norms (``axis`` an
    int: 1 per row, 0 per column): inf, -inf (implicit zeros count), 0 (stored nonzeros), 1,
    None/2, and any other number p, (sum of |a_ij|^p over the stored entries)^(1/p) as scipy's
    (implicit zeros skipped); an (m,) or (n,) device array. Duplicates are summed first (the
    norm of the matrix the entries denote). ord 2 and -2 of a matrix raise NotImplementedError
    (as cupyx; oxicuda.solver.norm(A.toarray(), 2) gives them through the dense SVD); an invalid
    ord or axis raises ValueError, a non-sparse x TypeError, all before any launch."""
    if not isinstance(x, spmatrix):
        raise TypeError(f"norm: x is {type(x).__name__}; a sparse matrix is required (oxicuda.solver.norm takes "
                        "dense arrays)")
    if axis is None and ord in (None, "fro", "f"):
        return _frobenius(x)
    if axis is None:
        axes = (0, 1)
    elif isinstance(axis, tuple):
        try:
            axes = tuple(operator.index(a) for a in axis)
        except TypeError:
            raise TypeError(f"norm: axis={axis!r}; 'axis' must be None, an integer or a tuple of integers") from None
    else:
        try:
            axes = (operator.index(axis),)
        except TypeError:
            raise TypeError(f"norm: axis={axis!r}; 'axis' must be None, an integer or a tuple of integers") from None
    for a in axes:
        if not -2 <= a < 2:
            raise ValueError(f"norm: axis={axis!r} is invalid for a sparse matrix of shape {x.shape}")
    axes = tuple(a % 2 for a in axes)
    real = _REAL[x.dtype.name]
    if len(axes) == 2:
        r, c = axes
        if r == c:
            raise ValueError(f"norm: axis={axis!r}; duplicate axes given")
        if ord in (2, -2) and not isinstance(ord, str):
            raise NotImplementedError(f"norm: ord={ord} of a sparse matrix is not implemented (cupyx neither); "
                                      "use oxicuda.solver.norm(A.toarray(), 2) (the dense SVD)")
        if ord in (None, "fro", "f"):
            return _frobenius(x)
        if isinstance(ord, str) or ord not in (1, -1, np.inf, -np.inf):
            raise ValueError(f"norm: ord={ord!r}; invalid norm order for matrices (allowed None, 'fro', 1, -1, "
                             "inf, -inf)")
        summed = r if ord in (1, -1) else c  # the axis the abs sums run along
        along_rows = summed == 1
        lines = x.shape[0] if along_rows else x.shape[1]
        op = "max" if ord > 0 else "min"
        if lines == 0:
            raise ValueError(f"norm: ord={ord!r} of a {x.shape} matrix reduces an empty axis with {op}; zero-size "
                             "array to reduction operation which has no identity")
        sums = _per_line(x, along_rows, "abs", "sum", out_dtype="float64")
        return _reduce(sums, 1, "id", op, out_dtype=real, stream=x.stream or 0).reshape(())
    if len(axes) == 1:
        fn, op, fin, p = _vector_ord(ord)
        along_rows = axes[0] == 1
        length = x.shape[1] if along_rows else x.shape[0]
        if length == 0 and op != "sum":
            raise ValueError(f"norm: ord={ord!r} along an axis of length 0; zero-size array to reduction operation "
                             "which has no identity")
        return _per_line(x, along_rows, fn, op, fin, p)
    raise ValueError(f"norm: axis={axis!r}; improper number of dimensions to norm")
