"""XORWOW skip-ahead tables, computed on the host once per process (setup, seed-independent)
and uploaded once per device.

XORWOW's xorshift part is linear over GF(2): one step is a 160 x 160 bit matrix A on the five
state words (the Weyl counter d is additive: ``d += 362437`` per step). A jump of ``e`` steps is
the product of ``A^(2^k)`` over the set bits of e. cuRAND's ``curand_init(seed, t, p)`` is the
seeded state jumped by ``t * 2^67 + p``; the tables hold the 64 matrices ``A^(2^k)``, k < 64
(positions), then the 12 matrices ``A^(2^(67+j))``, j < 12 (the 4096 subsequences of the host
generator). Each matrix is stored for a 4-bit-window product: for each of the 40 nibbles of the
160-bit state and each of the 16 nibble values, the XOR of the selected rows (5 words), so that
a matrix-vector product on the device is 40 lookups of 5 words.

Layout: ``u32[matrix][nibble (40)][value (16)][word (5)]``, ``TABLE_WORDS`` per matrix.
"""

from __future__ import annotations

import threading

import numpy as np

POSITION_MATRICES = 64
SUBSEQUENCE_LOG2 = 67
SUBSEQUENCE_MATRICES = 12              # 4096 subsequences
MATRICES = POSITION_MATRICES + SUBSEQUENCE_MATRICES
NIBBLES = 40
TABLE_WORDS = NIBBLES * 16 * 5

_lock = threading.Lock()
_host: np.ndarray | None = None
_device: dict[int, object] = {}


def step_matrix() -> np.ndarray:
    """A as a (160, 160) uint8 matrix over GF(2): row i is the image of state bit i (bit i % 32
    of word i // 32) after one xorwow step."""
    rows = np.zeros((160, 160), np.uint8)
    mask = (1 << 32) - 1
    for i in range(160):
        v = [0] * 5
        v[i // 32] = 1 << (i % 32)
        t = v[0] ^ (v[0] >> 2)
        new = [v[1], v[2], v[3], v[4], ((v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1))) & mask]
        for j, w in enumerate(new):
            rows[i, 32 * j:32 * j + 32] = [(w >> b) & 1 for b in range(32)]
    return rows


def _square(m: np.ndarray) -> np.ndarray:
    # float32 products are exact: each sum has at most 160 ones
    return (m.astype(np.float32) @ m.astype(np.float32)).astype(np.int64).astype(np.uint8) & 1


def _window_table(m: np.ndarray) -> np.ndarray:
    """The 4-bit-window form of matrix m: (40, 16, 5) uint32."""
    row_words = np.zeros((160, 5), np.uint64)
    weights = np.uint64(1) << np.arange(32, dtype=np.uint64)
    for j in range(5):
        row_words[:, j] = (m[:, 32 * j:32 * j + 32].astype(np.uint64) * weights).sum(axis=1)
    out = np.zeros((NIBBLES, 16, 5), np.uint64)
    for g in range(NIBBLES):
        for value in range(16):
            acc = np.zeros(5, np.uint64)
            for b in range(4):
                if value >> b & 1:
                    acc ^= row_words[4 * g + b]
            out[g, value] = acc
    return out.astype(np.uint32)


def host_tables() -> np.ndarray:
    """(MATRICES, TABLE_WORDS) uint32, computed once."""
    global _host
    with _lock:
        if _host is None:
            m = step_matrix()
            powers = [m]
            for _ in range(SUBSEQUENCE_LOG2 + SUBSEQUENCE_MATRICES):
                powers.append(_square(powers[-1]))
            chosen = powers[:POSITION_MATRICES] + powers[SUBSEQUENCE_LOG2:SUBSEQUENCE_LOG2 + SUBSEQUENCE_MATRICES]
            _host = np.stack([_window_table(p).reshape(-1) for p in chosen])
    return _host


def device_tables(ordinal: int):
    """The tables on device ``ordinal`` (uploaded at the first call there)."""
    arr = _device.get(ordinal)
    if arr is None:
        import oxicuda

        with _lock:
            arr = _device.get(ordinal)
        if arr is None:
            arr = oxicuda.asarray(host_tables())
            with _lock:
                arr = _device.setdefault(ordinal, arr)
    return arr
