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


PHILOX_SUBSEQUENCES = 65536


def philox_words(seed: int, start: int, count: int) -> np.ndarray:
    """Words start..start+count-1 of cuRAND's Philox host stream: block q is Philox4x32-10 of
    ctr = (q div 65536, q mod 65536 in word 2) (65536 subsequences, four words at a time)."""
    if count == 0:
        return np.zeros(0, np.uint32)
    b0, b1 = start // 4, (start + count - 1) // 4
    blocks = np.arange(b0, b1 + 1, dtype=np.uint64)
    hi = blocks // np.uint64(PHILOX_SUBSEQUENCES)
    ctr = np.zeros((blocks.size, 4), np.uint32)
    ctr[:, 0] = (hi & MASK32).astype(np.uint32)
    ctr[:, 1] = (hi >> np.uint64(32)).astype(np.uint32)
    ctr[:, 2] = (blocks % np.uint64(PHILOX_SUBSEQUENCES)).astype(np.uint32)
    key = np.array([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF], np.uint32)
    words = philox4x32_10(ctr, np.broadcast_to(key, (blocks.size, 2))).reshape(-1)
    lead = start - 4 * b0
    return words[lead:lead + count]


def philox_subsequence_words(seed: int, start: int, count: int, subsequence: int = 0) -> np.ndarray:
    """Words start.. of curand_init(seed, subsequence, 0)'s device stream."""
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
    block = p // np.uint64(4)
    ctr = np.stack([(block & MASK32), block >> np.uint64(32), t & MASK32, t >> np.uint64(32)],
                   axis=-1).astype(np.uint32)
    key = np.array([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF], np.uint32)
    words = philox4x32_10(ctr, np.broadcast_to(key, (count, 2)))
    return words[np.arange(count), (p % np.uint64(4)).astype(np.int64)]


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


def philox_unit_words(seed: int, units: np.ndarray, blocks: int, unit0: int = 0) -> np.ndarray:
    """(len(units), 4 * blocks) words of cuRAND's Philox host units in a call whose offset lies
    in unit ``unit0``: unit G is the r = G div 65536-th unit of subsequence t = G mod 65536; the
    offset skips r0 = ceil((unit0 - t) / 65536) blocks of t (0 when unit0 <= t), one per earlier
    unit, and then each unit takes ``blocks`` blocks: ctr.x = r0 + blocks (r - r0) + u."""
    units = units.astype(np.uint64)
    t = units % np.uint64(PHILOX_SUBSEQUENCES)
    r = units // np.uint64(PHILOX_SUBSEQUENCES)
    ti = t.astype(np.int64)
    r0 = np.where(unit0 > ti, (unit0 - ti + PHILOX_SUBSEQUENCES - 1) // PHILOX_SUBSEQUENCES, 0).astype(np.uint64)
    key = np.array([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF], np.uint32)
    parts = []
    for u in range(blocks):
        hi = r0 + (r - r0) * np.uint64(blocks) + np.uint64(u)
        ctr = np.stack([hi & MASK32, hi >> np.uint64(32), t, np.zeros_like(t)], axis=-1).astype(np.uint32)
        parts.append(philox4x32_10(ctr, np.broadcast_to(key, (units.size, 2))))
    return np.concatenate(parts, axis=1)


def philox_distribution(dist: str, seed: int, offset: int, n: int, a: float = 0.0,
                        b: float = 1.0) -> np.ndarray:
    """What ``rand_philox`` computes for ``dist``: values offset..offset+n-1 of cuRAND's Philox
    host stream (float64 for the normal families: the exact function, to compare within a
    tolerance)."""
    wpo = {"raw32": 1, "raw64": 2, "uniform_f32": 1, "uniform_f64": 1, "uniform_f64_hq": 2,
           "normal_f32": 1, "normal_f64": 2, "lognormal_f32": 1, "lognormal_f64": 2}[dist]
    if n == 0:
        return np.zeros(0)
    units = np.arange(offset // 4, (offset + n - 1) // 4 + 1)
    w = philox_unit_words(seed, units, wpo, offset // 4)     # (units, 4 * wpo)
    blocks = w.reshape(units.size * wpo, 4)                  # each block's 4 words
    lead = offset - 4 * int(units[0])
    x, y, z, v = (blocks[:, i] for i in range(4))
    if dist == "raw32":
        vals = blocks.reshape(-1)
    elif dist == "raw64":
        vals = np.stack([x.astype(np.uint64) | (y.astype(np.uint64) << np.uint64(32)),
                         z.astype(np.uint64) | (v.astype(np.uint64) << np.uint64(32))], axis=1).reshape(-1)
    elif dist == "uniform_f32":
        u = uniform_f32(blocks.reshape(-1))
        vals = u if (a, b) == (0.0, 1.0) else np.float32(a) + np.float32(b) * u
    elif dist == "uniform_f64":
        vals = a + b * uniform_f64(blocks.reshape(-1))
    elif dist == "uniform_f64_hq":
        vals = a + b * np.stack([uniform_f64_hq(x, y), uniform_f64_hq(z, v)], axis=1).reshape(-1)
    else:
        if dist in ("normal_f32", "lognormal_f32"):
            s1, c1 = box_muller_f64_from_f32_words(x, y)
            s2, c2 = box_muller_f64_from_f32_words(z, v)
            zs = np.stack([s1, c1, s2, c2], axis=1).reshape(-1)
        else:
            s1, c1 = box_muller_f64(x, y, z, v)
            zs = np.stack([s1, c1], axis=1).reshape(-1)
        vals = a + b * zs
        if dist.startswith("lognormal"):
            vals = np.exp(vals)
    return vals[lead:lead + n]


#: ordering hypotheses benches/probe_curand.py checks on the raw words of each generator:
#: name -> fn(seed, offset, count) -> uint32 words
ORDERING_HYPOTHESES = {
    "philox": {
        "blocks65536": lambda seed, off, n: philox_words(seed, off, n),
        "sequential": lambda seed, off, n: philox_subsequence_words(seed, off, n),
        "interleaved4096": lambda seed, off, n: philox_interleaved(seed, off, n, 4096),
    },
}


# -- XORWOW (cuRAND's seeding, Marsaglia's xorwow step) -------------------------------------------
XORWOW_SUBSEQUENCE_LOG2 = 67
XORWOW_THREADS = 4096


def xorwow_seed_state(seed: int) -> tuple[np.ndarray, int]:
    """cuRAND's curand_init(seed, 0, 0) state: (v[5] as uint32, d)."""
    s0 = (seed & 0xFFFFFFFF) ^ 0xAAD26B49
    s1 = ((seed >> 32) & 0xFFFFFFFF) ^ 0xF7DCEFDD
    t0 = (1099087573 * s0) & 0xFFFFFFFF
    t1 = (2591861531 * s1) & 0xFFFFFFFF
    v = np.array([(123456789 + t0), 362436069 ^ t0, (521288629 + t1), 88675123 ^ t1, (5783321 + t0)],
                 np.uint64) & MASK32
    return v.astype(np.uint32), (6615241 + t1 + t0) & 0xFFFFFFFF


def xorwow_step_matrix() -> np.ndarray:
    """The GF(2) matrix (160 x 160, bool) of one xorwow step on v: row i = image of bit i."""
    rows = np.zeros((160, 160), bool)
    for i in range(160):
        v = np.zeros(5, np.uint64)
        v[i // 32] = np.uint64(1) << np.uint64(i % 32)
        t = v[0] ^ (v[0] >> np.uint64(2))
        new4 = (v[4] ^ ((v[4] << np.uint64(4)) & MASK32)) ^ (t ^ ((t << np.uint64(1)) & MASK32))
        w = np.array([v[1], v[2], v[3], v[4], new4], np.uint64)
        for j in range(5):
            rows[i, 32 * j:32 * j + 32] = (w[j] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)
    return rows


_XORWOW_POWERS: list[np.ndarray] = []


def xorwow_power(k: int) -> np.ndarray:
    """A^(2^k) as a bool matrix (cached squarings)."""
    if not _XORWOW_POWERS:
        _XORWOW_POWERS.append(xorwow_step_matrix())
    while len(_XORWOW_POWERS) <= k:
        m = _XORWOW_POWERS[-1].astype(np.int64)
        _XORWOW_POWERS.append(((m @ m) & 1).astype(bool))
    return _XORWOW_POWERS[k]


def _bits(v: np.ndarray) -> np.ndarray:
    return ((v.astype(np.uint64)[..., :, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).reshape(
        *v.shape[:-1], 160).astype(np.int64)


def _words(b: np.ndarray) -> np.ndarray:
    b = b.reshape(*b.shape[:-1], 5, 32).astype(np.uint64)
    return (b << np.arange(32, dtype=np.uint64)).sum(axis=-1).astype(np.uint32)


def xorwow_jump(v: np.ndarray, steps: int, base_log2: int = 0) -> np.ndarray:
    """v (..., 5) advanced by ``steps * 2^base_log2`` xorwow steps."""
    b = _bits(v)
    k = 0
    while steps:
        if steps & 1:
            b = (b @ xorwow_power(base_log2 + k).astype(np.int64)) & 1
        steps >>= 1
        k += 1
    return _words(b)


def xorwow_subsequence_words(seed: int, subsequence: int, start: int, count: int) -> np.ndarray:
    """Words start..start+count-1 of curand_init(seed, subsequence, 0)'s stream."""
    v, d = xorwow_seed_state(seed)
    v = xorwow_jump(v, subsequence, XORWOW_SUBSEQUENCE_LOG2)
    v = xorwow_jump(v, start).astype(np.uint64)
    d = (d + 362437 * start) & 0xFFFFFFFF
    out = np.empty(count, np.uint32)
    v = [int(x) for x in v]
    for i in range(count):
        t = v[0] ^ (v[0] >> 2)
        v = v[1:] + [((v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1))) & 0xFFFFFFFF]
        d = (d + 362437) & 0xFFFFFFFF
        out[i] = (v[4] + d) & 0xFFFFFFFF
    return out


def xorwow_states(seed: int, subsequences: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (v (k, 5), d (k,)) states of curand_init(seed, subsequences[i], positions[i])."""
    v0, d0 = xorwow_seed_state(seed)
    b = np.broadcast_to(_bits(v0[None, :]), (subsequences.size, 160)).copy()
    for exps, base in ((subsequences, XORWOW_SUBSEQUENCE_LOG2), (positions, 0)):
        e = exps.astype(np.uint64).copy()
        k = 0
        while np.any(e):
            sel = (e & np.uint64(1)).astype(bool)
            if sel.any():
                # float32 BLAS is exact here (sums of at most 160 ones)
                prod = b[sel].astype(np.float32) @ xorwow_power(base + k).astype(np.float32)
                b[sel] = prod.astype(np.int64) & 1
            e >>= np.uint64(1)
            k += 1
    d = (np.uint64(d0) + np.uint64(362437) * positions.astype(np.uint64)) & MASK32
    return _words(b), d


def xorwow_step_all(v: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One curand() of every state: (new v, new d, the words)."""
    v = v.astype(np.uint64)
    t = v[:, 0] ^ (v[:, 0] >> np.uint64(2))
    new4 = (v[:, 4] ^ ((v[:, 4] << np.uint64(4)) & MASK32)) ^ (t ^ ((t << np.uint64(1)) & MASK32))
    v = np.concatenate([v[:, 1:], new4[:, None]], axis=1)
    d = (d + np.uint64(362437)) & MASK32
    return v, d, ((v[:, 4] + d) & MASK32).astype(np.uint32)


def xorwow_interleaved(seed: int, offset: int, count: int, threads: int = XORWOW_THREADS) -> np.ndarray:
    """cuRAND's documented legacy XORWOW ordering: output word n (of the stream after
    ``offset``) is word n div threads of subsequence n mod threads."""
    if count == 0:
        return np.zeros(0, np.uint32)
    t = np.arange(threads, dtype=np.int64)
    p0 = (np.maximum(offset - t, 0) + threads - 1) // threads
    v, d = xorwow_states(seed, t, p0)
    steps = (offset + count - 1) // threads - int(p0.min()) + 1
    out = np.empty(count, np.uint32)
    for s in range(steps):
        v, d, w = xorwow_step_all(v, d)
        n = (p0 + s) * threads + t - offset
        ok = (n >= 0) & (n < count)
        out[n[ok]] = w[ok]
    return out


ORDERING_HYPOTHESES["xorwow"] = {
    "interleaved4096": lambda seed, off, n: xorwow_interleaved(seed, off, n),
}


# -- MRG32k3a (L'Ecuyer 1999; cuRAND's seeding) ---------------------------------------------------
MRG_M1, MRG_M2 = 4294967087, 4294944443
MRG_A12, MRG_A13N, MRG_A21, MRG_A23N = 1403580, 810728, 527612, 1370589
MRG_NORM = 2.3283065498378288e-10
MRG_BITS_NORM = 1.000000048662
MRG_SUBSEQUENCE_LOG2 = 76
MRG_A1 = ((0, 1, 0), (0, 0, 1), (MRG_M1 - MRG_A13N, MRG_A12, 0))
MRG_A2 = ((0, 1, 0), (0, 0, 1), (MRG_M2 - MRG_A23N, 0, MRG_A21))


def mrg_seed_state(seed: int) -> tuple[list[int], list[int]]:
    s1, s2 = [12345] * 3, [12345] * 3
    if seed:
        x1 = (seed & 0xFFFFFFFF) ^ 0x55555555
        x2 = ((seed >> 32) & 0xFFFFFFFF) ^ 0xAAAAAAAA
        s1 = [x1 * 12345 % MRG_M1, x2 * 12345 % MRG_M1, x1 * 12345 % MRG_M1]
        s2 = [x2 * 12345 % MRG_M2, x1 * 12345 % MRG_M2, x2 * 12345 % MRG_M2]
    return s1, s2


def _matmul3(a, b, m):
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)) for i in range(3))


def mrg_matrix_power(a, e: int, m: int):
    r = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    while e:
        if e & 1:
            r = _matmul3(r, a, m)
        a = _matmul3(a, a, m)
        e >>= 1
    return r


def mrg_jump(s1, s2, steps: int):
    m1 = mrg_matrix_power(MRG_A1, steps, MRG_M1)
    m2 = mrg_matrix_power(MRG_A2, steps, MRG_M2)
    return ([sum(m1[i][k] * s1[k] for k in range(3)) % MRG_M1 for i in range(3)],
            [sum(m2[i][k] * s2[k] for k in range(3)) % MRG_M2 for i in range(3)])


def mrg_values(seed: int, subsequence: int, start: int, count: int) -> np.ndarray:
    """curand_MRG32k3a's doubles r in [1, m1] (integers): positions start.. of curand_init(seed,
    subsequence, 0)."""
    s1, s2 = mrg_seed_state(seed)
    s1, s2 = mrg_jump(s1, s2, (subsequence << MRG_SUBSEQUENCE_LOG2) + start)
    out = np.empty(count, np.float64)
    for i in range(count):
        p1 = (MRG_A12 * s1[1] - MRG_A13N * s1[0]) % MRG_M1
        p2 = (MRG_A21 * s2[2] - MRG_A23N * s2[0]) % MRG_M2
        s1, s2 = [s1[1], s1[2], p1], [s2[1], s2[2], p2]
        out[i] = p1 - p2 + (MRG_M1 if p1 <= p2 else 0)
    return out


_MRG_POWERS: dict[int, tuple] = {}


def _mrg_power2(k: int):
    """(A1^(2^k) mod m1, A2^(2^k) mod m2), cached."""
    if k not in _MRG_POWERS:
        if k == 0:
            _MRG_POWERS[0] = (MRG_A1, MRG_A2)
        else:
            a1, a2 = _mrg_power2(k - 1)
            _MRG_POWERS[k] = (_matmul3(a1, a1, MRG_M1), _matmul3(a2, a2, MRG_M2))
    return _MRG_POWERS[k]


def mrg_interleaved(seed: int, offset: int, count: int, threads: int = 4096) -> np.ndarray:
    """The documented MRG32k3a host ordering: value n is position n div 4096 of subsequence
    n mod 4096 (subsequences 2^76 apart)."""
    if count == 0:
        return np.zeros(0, np.float64)
    t = np.arange(threads, dtype=np.int64)
    p0 = (np.maximum(offset - t, 0) + threads - 1) // threads
    s1, s2 = mrg_states_at(seed, t, p0)  # curand_init(seed, t, 0) skipped ahead p0(t)
    out = np.empty(count, np.float64)
    steps = (offset + count - 1) // threads - int(p0.min()) + 1
    m1, m2 = np.uint64(MRG_M1), np.uint64(MRG_M2)
    for step in range(steps):
        p1 = (np.uint64(MRG_A12) * s1[:, 1] + np.uint64(MRG_A13N) * (m1 - s1[:, 0])) % m1
        p2 = (np.uint64(MRG_A21) * s2[:, 2] + np.uint64(MRG_A23N) * (m2 - s2[:, 0])) % m2
        s1 = np.stack([s1[:, 1], s1[:, 2], p1], axis=1)
        s2 = np.stack([s2[:, 1], s2[:, 2], p2], axis=1)
        r = p1.astype(np.float64) - p2.astype(np.float64)
        r = np.where(p1 <= p2, r + MRG_M1, r)
        n = (p0 + step) * threads + t - offset
        ok = (n >= 0) & (n < count)
        out[n[ok]] = r[ok]
    return out


def mrg_raw(r: np.ndarray) -> np.ndarray:
    """cuRAND's curand() of MRG32k3a: (unsigned int)(r * MRG32K3A_BITS_NORM)."""
    return np.trunc(r * MRG_BITS_NORM).astype(np.uint32)


def mrg_uniform_f32(r: np.ndarray) -> np.ndarray:
    return (r * MRG_NORM).astype(np.float32)


def mrg_uniform_f64(r: np.ndarray) -> np.ndarray:
    return r * MRG_NORM


ORDERING_HYPOTHESES["mrg32k3a"] = {
    "interleaved4096": lambda seed, off, n: mrg_raw(mrg_interleaved(seed, off, n)),
}


# -- Sobol (the Gray-code construction; direction vectors from oxicuda's Joe-Kuo table) -----------
def sobol_points(vectors: np.ndarray, offset: int, count: int) -> np.ndarray:
    """(dims, count) points offset..offset+count-1 of each dimension: the XOR of the direction
    vectors over the set bits of the Gray code of the index (point 0 is 0)."""
    dt = vectors.dtype
    i = np.arange(offset, offset + count, dtype=np.uint64)
    gray = i ^ (i >> np.uint64(1))
    out = np.zeros((vectors.shape[0], count), dt)
    for k in range(vectors.shape[1]):
        sel = ((gray >> np.uint64(k)) & np.uint64(1)).astype(bool)
        out[:, sel] ^= vectors[:, k:k + 1]
    return out


def xorwow_hq_doubles(seed: int, offset: int, count: int, threads: int = XORWOW_THREADS) -> np.ndarray:
    """cuRAND's XORWOW generateUniformDouble (measured on the H200): value i of a call belongs to
    subsequence t = (offset + i) mod 4096 at value position p = (offset + i) div 4096; the offset
    skips p0(t) words of subsequence t (one per earlier value: the k < offset with k mod 4096 =
    t), and each value then takes two words: hq(word w, word w + 1), w = p0 + 2 (p - p0)."""
    if count == 0:
        return np.zeros(0)
    j = np.arange(offset, offset + count, dtype=np.int64)
    t, p = j % threads, j // threads
    tt = np.arange(threads, dtype=np.int64)
    p0 = np.where(offset > tt, (offset - tt + threads - 1) // threads, 0)
    v, d = xorwow_states(seed, tt, p0)
    w = p0[t] + 2 * (p - p0[t]) - p0[t]                   # words past each subsequence's start
    steps = int(w.max()) + 2
    words = np.empty((steps, threads), np.uint32)
    for s in range(steps):
        v, d, words[s] = xorwow_step_all(v, d)
    return uniform_f64_hq(words[w, t], words[w + 1, t])


# -- XORWOW and MRG32k3a normals -------------------------------------------------------------------
def values_before(offset: int, t: np.ndarray, threads: int = 4096) -> np.ndarray:
    """p0(t): the values k < offset of subsequence t (k mod 4096 = t)."""
    return np.where(offset > t, (offset - t + threads - 1) // threads, 0)


def subsequence_pair_layout(offset: int, count: int, words_per_pair: int, start_words=None,
                            threads: int = 4096):
    """cuRAND's host layout of XORWOW/MRG32k3a normals (H200, s7c4: every fraction of
    .diag/rand_normals_layout.sh reproduced): for values i of a call, (t, first word of its
    Box-Muller pair, component 0 sin / 1 cos). Values 2i2, 2i2 + 1 are one pair (curand_normal2
    stored whole); pair i2 is the q = i2 div 4096-th pair of the call of subsequence t = (i2 mod
    4096 + offset) mod 4096 (the rotation of the single values); its words start at W(t) +
    words_per_pair q, W(t) the word subsequence t stands at when the call starts (``start_words``;
    default p0(t), one word per value before the offset: a fresh seed or offset)."""
    i = np.arange(count, dtype=np.int64)
    i2 = i // 2
    t = (i2 % threads + offset) % threads
    if start_words is None:
        start_words = values_before(offset, np.arange(threads, dtype=np.int64), threads)
    return t, np.asarray(start_words, np.int64)[t] + words_per_pair * (i2 // threads), i % 2


class SubsequenceHost:
    """cuRAND's XORWOW / MRG32k3a host generator as a model: 4096 subsequences standing at word
    ``words[t]`` (set up at p0(t) of the offset when the seed or offset is set) carried from call
    to call; ``offset`` counts values. Each call returns the float64 values of the exact function
    and moves the words on by what the call took: one (XORWOW hq double: two) per value of the
    value's subsequence; a normal pair's 2 (XORWOW double: 4) by the pair's subsequence."""

    def __init__(self, generator: str, seed: int, offset: int = 0) -> None:
        self.generator, self.seed, self.offset = generator, seed, offset
        self.words = values_before(offset, np.arange(4096, dtype=np.int64))

    def normals(self, count: int, double: bool, a: float = 0.0, b: float = 1.0) -> np.ndarray:
        xorwow = self.generator == "xorwow"
        wpp = 4 if (xorwow and double) else 2
        t, start, comp = subsequence_pair_layout(self.offset, count, wpp, self.words)
        at = xorwow_normals_at if xorwow else mrg_normals_at
        vals = a + b * at(self.seed, t, start, comp, double)
        pair_t = t[::2]
        self.words = self.words + wpp * np.bincount(pair_t, minlength=4096)
        self.offset += count
        return vals

    def xorwow_hq_doubles(self, count: int) -> np.ndarray:
        """generateUniformDouble: two words a value, hq(w, w + 1)."""
        a, b = self._xorwow_words(count, 2)
        return uniform_f64_hq(a, b)

    def xorwow_raw(self, count: int) -> np.ndarray:
        """generate: one word a value."""
        return self._xorwow_words(count, 1)[0]

    def _xorwow_words(self, count: int, wpv: int):
        assert self.generator == "xorwow"
        g = np.arange(self.offset, self.offset + count, dtype=np.int64)
        t = g % 4096
        rel = wpv * (g // 4096 - values_before(self.offset, t))     # words past words[t]
        uniq = np.unique(t)
        v, d = xorwow_states(self.seed, uniq, self.words[uniq])
        table = np.empty((int(rel.max()) + wpv, uniq.size), np.uint32)
        for k in range(table.shape[0]):
            v, d, table[k] = xorwow_step_all(v, d)
        col = np.searchsorted(uniq, t)
        self.words = self.words + wpv * np.bincount(t, minlength=4096)
        self.offset += count
        return tuple(table[rel + k, col] for k in range(wpv))


def subsequence_pair_starts(offset: int, count: int, per_value: int, threads: int = 4096):
    """Layout "B" (rejected by the H200, s7c4; kept for .diag/rand_normals_layout.sh): value i
    at position p = (offset + i) div 4096 of subsequence t = (offset + i) mod 4096, the thread's
    s-th value (s = p - p0) component s mod 2 of the pair whose draws start at p0 + per_value
    (s - s mod 2), as a kernel calling curand_normal once per value would give."""
    j = np.arange(offset, offset + count, dtype=np.int64)
    t, p = j % threads, j // threads
    p0 = np.where(offset > t, (offset - t + threads - 1) // threads, 0)
    s = p - p0
    return t, p0 + per_value * (s - s % 2), s % 2


def xorwow_normals(seed: int, offset: int, count: int, double: bool, a: float = 0.0,
                   b: float = 1.0) -> np.ndarray:
    """What rand_xorwow's normal_f32 / normal_f64 compute in one call at a fresh offset (float64:
    the exact function)."""
    t, start, comp = subsequence_pair_layout(offset, count, 4 if double else 2)
    return a + b * xorwow_normals_at(seed, t, start, comp, double)


def xorwow_normals_at(seed: int, t: np.ndarray, start: np.ndarray, comp: np.ndarray, double: bool) -> np.ndarray:
    """Component ``comp`` of the Box-Muller pair made from words ``start``.. of subsequence
    ``t`` (float64: the exact function), element by element."""
    keys, inv = np.unique(np.stack([t, start]), axis=1, return_inverse=True)
    v, d = xorwow_states(seed, keys[0], keys[1])
    words = []
    for _ in range(4 if double else 2):
        v, d, w = xorwow_step_all(v, d)
        words.append(w)
    pair = box_muller_f64(*words) if double else box_muller_f64_from_f32_words(*words)
    return np.where(comp == 0, pair[0][inv.reshape(-1)], pair[1][inv.reshape(-1)])


def mrg_states_at(seed: int, subsequences: np.ndarray, positions: np.ndarray):
    """(s1, s2) (k, 3) uint64 states of curand_init(seed, t, 0) advanced by ``positions``."""
    s1, s2 = mrg_seed_state(seed)
    st1 = np.array([s1] * subsequences.size, dtype=object).reshape(-1, 3)
    st2 = np.array([s2] * subsequences.size, dtype=object).reshape(-1, 3)
    for exps, base in ((subsequences.astype(np.int64), MRG_SUBSEQUENCE_LOG2), (positions.astype(np.int64), 0)):
        e = exps.copy()
        k = 0
        while np.any(e):
            sel = (e & 1).astype(bool)
            if sel.any():
                a1, a2 = _mrg_power2(base + k)
                st1[sel] = (st1[sel] @ np.array(a1, dtype=object).T) % MRG_M1
                st2[sel] = (st2[sel] @ np.array(a2, dtype=object).T) % MRG_M2
            e >>= 1
            k += 1
    return st1.astype(np.uint64), st2.astype(np.uint64)


def mrg_draw_all(s1: np.ndarray, s2: np.ndarray):
    """One curand_MRG32k3a of every state: (s1, s2, r in [1, m1] as float64)."""
    m1, m2 = np.uint64(MRG_M1), np.uint64(MRG_M2)
    p1 = (np.uint64(MRG_A12) * s1[:, 1] + np.uint64(MRG_A13N) * (m1 - s1[:, 0])) % m1
    p2 = (np.uint64(MRG_A21) * s2[:, 2] + np.uint64(MRG_A23N) * (m2 - s2[:, 0])) % m2
    s1 = np.stack([s1[:, 1], s1[:, 2], p1], axis=1)
    s2 = np.stack([s2[:, 1], s2[:, 2], p2], axis=1)
    r = p1.astype(np.float64) - p2.astype(np.float64)
    return s1, s2, np.where(p1 <= p2, r + MRG_M1, r)


def mrg_normals(seed: int, offset: int, count: int, double: bool, a: float = 0.0,
                b: float = 1.0) -> np.ndarray:
    """What rand_mrg32k3a's normal_f32 / normal_f64 compute (float64: the exact function of
    curand_box_muller_mrg(_double) after its rounded uniforms) in one call at a fresh offset."""
    t, start, comp = subsequence_pair_layout(offset, count, 2)
    return a + b * mrg_normals_at(seed, t, start, comp, double)


def mrg_normals_at(seed: int, t: np.ndarray, start: np.ndarray, comp: np.ndarray, double: bool) -> np.ndarray:
    """Component ``comp`` of the Box-Muller pair made from draws ``start``, ``start + 1`` of
    subsequence ``t`` (float64: the exact function), element by element."""
    keys, inv = np.unique(np.stack([t, start]), axis=1, return_inverse=True)
    s1, s2 = mrg_states_at(seed, keys[0], keys[1])
    s1, s2, r1 = mrg_draw_all(s1, s2)
    s1, s2, r2 = mrg_draw_all(s1, s2)
    if double:
        u, v = r1 * MRG_NORM, r2 * MRG_NORM * 2.0
        s = np.sqrt(-2.0 * np.log(u))
        pair = (s * np.sin(np.pi * v), s * np.cos(np.pi * v))
    else:
        u = (r1 * MRG_NORM).astype(np.float32).astype(np.float64)
        v = ((r2 * MRG_NORM).astype(np.float32) * np.float32(2 * np.pi)).astype(np.float64)
        s = np.sqrt(-2.0 * np.log(u))
        pair = (s * np.sin(v), s * np.cos(v))
    return np.where(comp == 0, pair[0][inv.reshape(-1)], pair[1][inv.reshape(-1)])
