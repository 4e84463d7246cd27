"""Test oracle for oxicuda.rand: numpy reimplementations of cuRAND's generators and conversions,
written from the published algorithms (Random123's Philox4x32-10; cuRAND's device header for the
seeding and the float conversions). Used by the tests and by benches/probe_curand.py to check
ordering hypotheses against the real cuRAND; never by the library.
"""

from __future__ import annotations

import numpy as np

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(ctr: np.ndarray, key: np.ndarray, rounds: int = 10) -> np.ndarray:
    """Philox4x32-``rounds`` of counters ``ctr`` (..., 4) uint32 and keys ``key`` (..., 2)."""
    c = [np.asarray(ctr[..., i], np.uint64) for i in range(4)]
    k0 = np.asarray(key[..., 0], np.uint64)
    k1 = np.asarray(key[..., 1], np.uint64)
    for r in range(rounds):
        if r:
            k0 = (k0 + W0) & MASK32
            k1 = (k1 + W1) & MASK32
        p0 = c[0] * np.uint64(M0)
        p1 = c[2] * np.uint64(M1)
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & MASK32, p1 & MASK32,
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & MASK32, p0 & MASK32]
    return np.stack(c, axis=-1).astype(np.uint32)


def philox_words(seed: int, start: int, count: int, subsequence: int = 0) -> np.ndarray:
    """Words ``start .. start+count-1`` of the Philox stream of ``seed`` (curand_init(seed,
    subsequence, start) followed by ``count`` curand() calls)."""
    if count == 0:
        return np.zeros(0, np.uint32)
    b0, b1 = start // 4, (start + count - 1) // 4
    blocks = np.arange(b0, b1 + 1, dtype=np.uint64)
    ctr = np.zeros((blocks.size, 4), np.uint32)
    ctr[:, 0] = (blocks & MASK32).astype(np.uint32)
    ctr[:, 1] = (blocks >> np.uint64(32)).astype(np.uint32)
    ctr[:, 2] = subsequence & 0xFFFFFFFF
    ctr[:, 3] = subsequence >> 32
    key = np.array([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF], np.uint32)
    words = philox4x32_10(ctr, np.broadcast_to(key, (blocks.size, 2))).reshape(-1)
    lead = start - 4 * b0
    return words[lead:lead + count]


def philox_interleaved(seed: int, start: int, count: int, threads: int = 4096) -> np.ndarray:
    """The hypothesis of ``threads`` subsequences interleaved: word n of the output is word
    n // threads of subsequence n % threads."""
    n = np.arange(start, start + count, dtype=np.uint64)
    t, p = n % np.uint64(threads), n // np.uint64(threads)
    out = np.empty(count, np.uint32)
    for ti in np.unique(t):
        sel = t == ti
        ps = p[sel]
        words = philox_words(seed, int(ps.min()), int(ps.max() - ps.min() + 1), int(ti))
        out[sel] = words[(ps - ps.min()).astype(np.int64)]
    return out


# -- conversions (cuRAND's, in numpy) --------------------------------------------------------------
def uniform_f32(w: np.ndarray) -> np.ndarray:
    return (w.astype(np.float32) * np.float32(2.0 ** -32) + np.float32(2.0 ** -33)).astype(np.float32)


def uniform_f64(w: np.ndarray) -> np.ndarray:
    return w.astype(np.float64) * 2.0 ** -32 + 2.0 ** -33


def uniform_f64_hq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    z = x.astype(np.uint64) ^ (y.astype(np.uint64) << np.uint64(21))
    return z.astype(np.float64) * 2.0 ** -53 + 2.0 ** -54


def box_muller_f64_from_f32_words(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float Box-Muller pair of words (x, y) computed in float64 from cuRAND's float32 u and
    v (the exact function the float kernel approximates)."""
    u = uniform_f32(x).astype(np.float64)
    two_pi_f32 = float(np.float32(2 * np.pi))
    v = (y.astype(np.float32).astype(np.float64) * (two_pi_f32 * 2.0 ** -32)
         + two_pi_f32 * 2.0 ** -33).astype(np.float32).astype(np.float64)
    s = np.sqrt(-2.0 * np.log(u))
    return s * np.sin(v), s * np.cos(v)


def box_muller_f64(x0, x1, y0, y1) -> tuple[np.ndarray, np.ndarray]:
    u = uniform_f64_hq(x0, x1)
    zy = y0.astype(np.uint64) ^ (y1.astype(np.uint64) << np.uint64(21))
    v = zy.astype(np.float64) * 2.0 ** -52 + 2.0 ** -53
    s = np.sqrt(-2.0 * np.log(u))
    return s * np.sin(np.pi * v), s * np.cos(np.pi * v)


def philox_distribution(dist: str, seed: int, offset: int, n: int, a: float = 0.0,
                        b: float = 1.0) -> np.ndarray:
    """What ``rand_philox`` computes for ``dist`` (float64 for the normal families: the exact
    function, to compare within a tolerance)."""
    wpo = {"raw32": 1, "raw64": 2, "uniform_f32": 1, "uniform_f64": 1, "uniform_f64_hq": 2,
           "normal_f32": 1, "normal_f64": 2, "lognormal_f32": 1, "lognormal_f64": 2}[dist]
    pad = {"normal_f32": 2, "lognormal_f32": 2, "normal_f64": 4, "lognormal_f64": 4}.get(dist, wpo)
    count = -(-n * wpo // pad) * pad
    w = philox_words(seed, offset, count)
    if dist == "raw32":
        return w[:n]
    if dist == "raw64":
        return (w[0::2].astype(np.uint64) | (w[1::2].astype(np.uint64) << np.uint64(32)))[:n]
    if dist == "uniform_f32":
        return (np.float32(a) + np.float32(b) * uniform_f32(w))[:n] if (a, b) != (0.0, 1.0) else uniform_f32(w)[:n]
    if dist == "uniform_f64":
        return (a + b * uniform_f64(w))[:n]
    if dist == "uniform_f64_hq":
        return (a + b * uniform_f64_hq(w[0::2], w[1::2]))[:n]
    if dist in ("normal_f32", "lognormal_f32"):
        s, c = box_muller_f64_from_f32_words(w[0::2], w[1::2])
    else:
        s, c = box_muller_f64(w[0::4], w[1::4], w[2::4], w[3::4])
    z = np.empty(s.size * 2)
    z[0::2], z[1::2] = s, c
    z = a + b * z[:n]
    return np.exp(z) if dist.startswith("lognormal") else z


#: ordering hypotheses benches/probe_curand.py checks on the raw words of each generator:
#: name -> fn(seed, offset, count) -> uint32 words
ORDERING_HYPOTHESES = {
    "philox": {
        "sequential": lambda seed, off, n: philox_words(seed, off, n),
        "interleaved4096": lambda seed, off, n: philox_interleaved(seed, off, n, 4096),
    },
}
