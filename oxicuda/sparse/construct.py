"""identity, eye, diags and random, as scipy.sparse's. The index arrays of these patterns are
made with numpy from the sizes and uploaded (they are inputs, like a user's COO triplets); the
conversion to the requested format runs on the device."""

from __future__ import annotations

import numpy as np

from .matrix import coo_matrix, csc_matrix, csr_matrix
from .validate import matrix_dtype

_FORMATS = {"csr": "tocsr", "csc": "tocsc", "coo": "tocoo", None: "tocsr"}


def _as(m: coo_matrix, format: str | None):
    if format not in _FORMATS:
        raise ValueError(f"format={format!r}; allowed 'csr', 'csc', 'coo' or None")
    return getattr(m, _FORMATS[format])()


def eye(m: int, n: int | None = None, k: int = 0, dtype=np.float64, format: str | None = None):
    """Ones on diagonal ``k`` of an m x n matrix."""
    n = m if n is None else n
    start = max(0, -k)
    count = max(0, min(m - start, n - start - k))
    rows = np.arange(start, start + count, dtype=np.int32)
    dt = matrix_dtype(dtype, "eye")
    return _as(coo_matrix((np.ones(count, dt), (rows, rows + k)), shape=(m, n), check=False), format)


def identity(n: int, dtype=np.float64, format: str | None = None):
    """The n x n identity."""
    return eye(n, n, 0, dtype, format)


def diags(diagonals, offsets=0, shape=None, format: str | None = None, dtype=None):
    """A matrix from diagonals (scipy.sparse.diags): ``diagonals`` a sequence of 1-D arrays (or one
    array), ``offsets`` their diagonal numbers."""
    if np.isscalar(offsets):
        diagonals, offsets = [diagonals], [offsets]
    diagonals = [np.atleast_1d(np.asarray(d)) for d in diagonals]
    if len(diagonals) != len(offsets):
        raise ValueError(f"diags: {len(diagonals)} diagonals but {len(offsets)} offsets; they must match")
    if shape is None:
        size = len(diagonals[0]) + abs(int(offsets[0]))
        shape = (size, size)
    m, n = shape
    rows, cols, vals = [], [], []
    for d, k in zip(diagonals, offsets):
        start = max(0, -k)
        length = max(0, min(m - start, n - start - k))
        if len(d) not in (1, length):
            raise ValueError(f"diags: diagonal {k} has {len(d)} entries; it needs {length} (or 1)")
        r = np.arange(start, start + length, dtype=np.int32)
        rows.append(r)
        cols.append(r + k)
        vals.append(np.broadcast_to(d, (length,)))
    dt = matrix_dtype(dtype or np.result_type(*[v.dtype for v in vals]), "diags")
    coo = coo_matrix((np.concatenate(vals).astype(dt), (np.concatenate(rows), np.concatenate(cols).astype(np.int32))),
                     shape=(m, n), check=False)
    return _as(coo, format)


def _distinct_positions(rng: np.random.Generator, total: int, k: int) -> np.ndarray:
    """``k`` distinct flat positions in [0, total), a uniformly random subset, in O(k) memory.
    numpy's choice without replacement makes an arange of ``total`` once k > total / 50 (and
    RandomState's always: scipy.sparse.random of a 2^18-square matrix took 130 GB): draw with
    replacement, drop repeats, top up, then pick k of the distinct ones."""
    if k == 0:
        return np.zeros(0, np.int64)
    if 2 * k >= total:  # dense: a permutation of the positions costs at most twice the entries
        return rng.permutation(total)[:k]
    got = np.unique(rng.integers(0, total, k + k // 4 + 16))
    while got.size < k:
        short = k - got.size
        got = np.unique(np.concatenate([got, rng.integers(0, total, 2 * short + 16)]))
    return rng.choice(got, size=k, replace=False, shuffle=True) if got.size > k else rng.permutation(got)


def random(m: int, n: int, density: float = 0.01, format: str = "coo", dtype=np.float64,
           random_state=None):
    """A random m x n matrix with ``density * m * n`` distinct entries uniform in [0, 1)
    (positions and values drawn by numpy, as scipy.sparse.random)."""
    if not 0 <= density <= 1:
        raise ValueError(f"random: density={density}; it must lie in [0, 1]")
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    k = round(density * m * n)
    flat = _distinct_positions(rng, m * n, k)
    dt = matrix_dtype(dtype, "random")
    vals = rng.random(k).astype(dt)
    coo = coo_matrix((vals, ((flat // n).astype(np.int32), (flat % n).astype(np.int32))), shape=(m, n), check=False)
    return _as(coo, format)


__all__ = ["csc_matrix", "csr_matrix", "diags", "eye", "identity", "random"]
