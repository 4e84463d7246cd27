"""Sobol direction vectors from Joe and Kuo's primitive polynomials and initial direction
numbers (the new-joe-kuo-6.21201 set that cuRAND's CURAND_DIRECTION_VECTORS_{32,64}_JOEKUO6
come from), built on the host by the standard recurrence and uploaded once per device.

``joe_kuo_6.txt.gz`` beside this module holds lines 2..20000 of that published table (cuRAND's
limit is 20000 dimensions), one dimension a line in the file's own format: ``d s a m_1 .. m_s``
(s the degree of the primitive polynomial, a its interior coefficients as bits, m the initial
direction numbers). It was written from the copy of the table that SciPy ships
(``scipy/stats/_sobol_direction_numbers.npz``, which stores ``(1 << s) | (a << 1) | 1`` and the
m's); tests/test_rand_sobol.py compares the two when SciPy is importable.

Dimension 1 is the van der Corput sequence (every m_k = 1); dimension d > 1 takes line d:
``v_k = m_k << (B - k)`` for k <= s, then ``v_k = v_{k-s} ^ (v_{k-s} >> s) ^ XOR_{j<s} a_j v_{k-j}``
(B = 32 or 64 bits, k = 1..B; a_j is bit s - 1 - j of a). The recurrence runs for all
dimensions at once (one numpy operation per (k, j)), in a few milliseconds.
"""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import numpy as np

MAX_DIMENSIONS = 20000
TABLE = Path(__file__).with_name("joe_kuo_6.txt.gz")
MAX_DEGREE = 18

_lock = threading.Lock()
_params: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
_host: dict[int, np.ndarray] = {}
_device: dict[tuple[int, int], object] = {}


def joe_kuo_parameters() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(s, a, m) of dimensions 1..MAX_DIMENSIONS: degrees (int64), coefficient bits (int64), and
    the initial direction numbers (MAX_DIMENSIONS, 18) int64, zero past each degree. Dimension 1
    (row 0) has s = 0."""
    global _params
    with _lock:
        if _params is None:
            text = gzip.decompress(TABLE.read_bytes()).decode("ascii")
            s = np.zeros(MAX_DIMENSIONS, np.int64)
            a = np.zeros(MAX_DIMENSIONS, np.int64)
            m = np.zeros((MAX_DIMENSIONS, MAX_DEGREE), np.int64)
            for line in text.splitlines()[1:]:
                f = line.split()
                d, deg = int(f[0]), int(f[1])
                s[d - 1], a[d - 1] = deg, int(f[2])
                m[d - 1, :deg] = [int(x) for x in f[3:3 + deg]]
            if not np.all(s[1:] > 0):
                raise RuntimeError(f"rand: {TABLE.name} lacks some of dimensions 2..{MAX_DIMENSIONS}")
            _params = (s, a, m)
    return _params


def _all_vectors(bits: int) -> np.ndarray:
    """(MAX_DIMENSIONS, bits) uint64: v_1..v_bits of every dimension."""
    s, a, m = joe_kuo_parameters()
    dims = s.size
    v = np.zeros((dims, bits + 1), np.uint64)        # column k holds v_k (column 0 unused)
    rows = np.arange(dims)
    for k in range(1, bits + 1):
        init = k <= s
        if k <= MAX_DEGREE:
            v[init, k] = m[init, k - 1].astype(np.uint64) << np.uint64(bits - k)
        rec = ~init
        rec[0] = False
        r, sr = rows[rec], s[rec]
        back = v[r, k - sr]
        x = back ^ (back >> sr.astype(np.uint64))
        for j in range(1, MAX_DEGREE):
            take = (j < sr) & (((a[rec] >> np.maximum(sr - 1 - j, 0)) & 1) == 1)
            x[take] ^= v[r[take], k - j]
        v[r, k] = x
    v[0, 1:] = [1 << (bits - k) for k in range(1, bits + 1)]
    mask = np.uint64((1 << bits) - 1)
    return v[:, 1:] & mask


def direction_vectors(bits: int, dims: int = MAX_DIMENSIONS) -> np.ndarray:
    """(dims, bits) direction vectors v_1..v_bits of dimensions 1..dims (uint32 for 32 bits,
    uint64 for 64). Raises ValueError for other bit counts or dims outside 1..20000."""
    if bits not in (32, 64):
        raise ValueError(f"direction_vectors: bits={bits}; 32 or 64")
    if not isinstance(dims, (int, np.integer)) or not 1 <= dims <= MAX_DIMENSIONS:
        raise ValueError(f"direction_vectors: dims={dims!r}; cuRAND's Sobol generators have 1..{MAX_DIMENSIONS}")
    with _lock:
        host = _host.get(bits)
    if host is None:
        host = _all_vectors(bits).astype(np.uint32 if bits == 32 else np.uint64)
        with _lock:
            host = _host.setdefault(bits, host)
    return host[:dims]


def device_vectors(ordinal: int, bits: int):
    """All dimensions' vectors on device ``ordinal`` (uploaded at the first call: 2.5 MB for
    32 bits, 5 MB for 64)."""
    key = (ordinal, bits)
    arr = _device.get(key)
    if arr is None:
        import oxicuda

        arr = oxicuda.asarray(direction_vectors(bits))
        with _lock:
            arr = _device.setdefault(key, arr)
    return arr
