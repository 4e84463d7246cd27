"""MRG32k3a constants (L'Ecuyer 1999, as in cuRAND's curand_kernel.h) and its skip-ahead
matrices, computed on the host once per process in exact integer arithmetic and uploaded once
per device.

One step of each component is a 3 x 3 matrix on its state (s[0], s[1], s[2]) -> (s[1], s[2],
a s + a' s'): ``A1 = [[0, 1, 0], [0, 0, 1], [-a13n, a12, 0]] mod m1`` and ``A2 = [[0, 1, 0],
[0, 0, 1], [-a23n, 0, a21]] mod m2``. The table holds ``A^(2^k)`` for k < 64 (positions) and
``A^(2^(76 + j))`` for j < 12 (the 4096 subsequences), each as A1 then A2, row-major u32:
``u32[matrix][18]``.
"""

from __future__ import annotations

import threading

import numpy as np

M1, M2 = 4294967087, 4294944443
A12, A13N, A21, A23N = 1403580, 810728, 527612, 1370589
POSITION_MATRICES = 64
SUBSEQUENCE_LOG2 = 76
SUBSEQUENCE_MATRICES = 12
MATRICES = POSITION_MATRICES + SUBSEQUENCE_MATRICES
STEP = (((0, 1, 0), (0, 0, 1), (M1 - A13N, A12, 0)), ((0, 1, 0), (0, 0, 1), (M2 - A23N, 0, A21)))

_lock = threading.Lock()
_host: np.ndarray | None = None
_device: dict[int, object] = {}


def _mul(a, b, m):
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)) for i in range(3))


def host_tables() -> np.ndarray:
    """(MATRICES, 18) uint32, computed once."""
    global _host
    with _lock:
        if _host is None:
            powers = [STEP]
            for _ in range(SUBSEQUENCE_LOG2 + SUBSEQUENCE_MATRICES):
                a1, a2 = powers[-1]
                powers.append((_mul(a1, a1, M1), _mul(a2, a2, M2)))
            chosen = powers[:POSITION_MATRICES] + powers[SUBSEQUENCE_LOG2:SUBSEQUENCE_LOG2 + SUBSEQUENCE_MATRICES]
            _host = np.array([[v for mat in pair for row in mat for v in row] for pair in chosen], np.uint32)
    return _host


def device_tables(ordinal: int):
    """The tables on device ``ordinal`` (uploaded at the first call there)."""
    arr = _device.get(ordinal)
    if arr is None:
        import oxicuda

        arr = oxicuda.asarray(host_tables())
        with _lock:
            arr = _device.setdefault(ordinal, arr)
    return arr
