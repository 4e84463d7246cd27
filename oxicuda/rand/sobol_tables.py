"""Sobol direction vectors from Joe and Kuo's primitive polynomials and initial direction
numbers (the new-joe-kuo-6.21201 set that cuRAND's CURAND_DIRECTION_VECTORS_*_JOEKUO6 come
from), built on the host by the standard recurrence and uploaded once per device.

Only the first ``MAX_DIMENSIONS`` (10) lines of that table are held here: the full 21201-line
file was not available to this package, so dimensions beyond 10 raise (cuRAND's limit is 20000).
Dimension 1 is the van der Corput sequence (every m_k = 1); dimension d > 1 takes line d:
``v_k = m_k << (B - k)`` for k <= s, then ``v_k = v_{k-s} ^ (v_{k-s} >> s) ^ XOR_{j<s} a_j v_{k-j}``
(B = 32 or 64 bits, k = 1..B).
"""

from __future__ import annotations

import threading

import numpy as np

#: (d, s, a, m_1..m_s) of new-joe-kuo-6.21201, dimensions 2..10
JOE_KUO = (
    (2, 1, 0, (1,)),
    (3, 2, 1, (1, 3)),
    (4, 3, 1, (1, 3, 1)),
    (5, 3, 2, (1, 1, 1)),
    (6, 4, 1, (1, 1, 3, 3)),
    (7, 4, 4, (1, 3, 5, 13)),
    (8, 5, 2, (1, 1, 5, 5, 17)),
    (9, 5, 4, (1, 1, 5, 5, 5)),
    (10, 5, 7, (1, 1, 7, 11, 1)),
)
MAX_DIMENSIONS = 1 + len(JOE_KUO)

_lock = threading.Lock()
_device: dict[tuple[int, int], object] = {}


def direction_vectors(bits: int, dims: int = MAX_DIMENSIONS) -> np.ndarray:
    """(dims, bits) direction vectors v_1..v_bits (uint32 or uint64)."""
    if bits not in (32, 64):
        raise ValueError(f"direction_vectors: bits={bits}; 32 or 64")
    if not 1 <= dims <= MAX_DIMENSIONS:
        raise ValueError(f"direction_vectors: dims={dims}; this package holds 1..{MAX_DIMENSIONS}")
    out = np.zeros((dims, bits), np.uint64 if bits == 64 else np.uint32)
    out[0] = [1 << (bits - k) for k in range(1, bits + 1)]
    for row, (_, s, a, m) in enumerate(JOE_KUO[:dims - 1], start=1):
        v = [0] * (bits + 1)
        for k in range(1, bits + 1):
            if k <= s:
                v[k] = m[k - 1] << (bits - k)
            else:
                x = v[k - s] ^ (v[k - s] >> s)
                for j in range(1, s):
                    if (a >> (s - 1 - j)) & 1:
                        x ^= v[k - j]
                v[k] = x
        out[row] = v[1:]
    return out


def device_vectors(ordinal: int, bits: int):
    """All held dimensions' vectors on device ``ordinal`` (uploaded at the first call)."""
    key = (ordinal, bits)
    arr = _device.get(key)
    if arr is None:
        import oxicuda

        arr = oxicuda.asarray(direction_vectors(bits))
        with _lock:
            arr = _device.setdefault(key, arr)
    return arr
