"""Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
SC 2011; the Random123 library) emitted inline into any kernel a ``KernelBuilder`` writes.

``philox4x32_10(kb, ctr, key)`` records the ten rounds on four u32 counter words and two u32 key
words and returns the four output words: the same function cuRAND's ``curand_Philox4x32_10``
computes, so a fused kernel (dropout, initialisation) that feeds it the counter of the host
stream's position gets the host stream's bits. ``stream_counter(kb, word)`` turns a 64-bit word
position of a generator's stream into that counter (block ``word // 4``, subsequence 0, the
cuRAND layout: ``ctr = (lo, hi, subsequence lo, subsequence hi)``, ``key = (seed lo, seed hi)``).

A round: ``(c0, c1, c2, c3) -> (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))``;
between rounds the key is bumped by the Weyl constants (W0, W1).

    kb = KernelBuilder("dropout", arch="sm_90")
    ...
    w0, w1, w2, w3 = philox4x32_10(kb, (c0, c1, zero, zero), (seed_lo, seed_hi))
"""

from __future__ import annotations

from collections.abc import Sequence

from oxicuda.ptx.builder import KernelBuilder, Value

#: multipliers and Weyl key increments of Philox4x32 (Random123 / curand_philox4x32_x.h)
PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
ROUNDS = 10

__all__ = ["PHILOX_M0", "PHILOX_M1", "PHILOX_W0", "PHILOX_W1", "ROUNDS", "philox4x32_10",
           "stream_counter"]


def philox4x32_10(kb: KernelBuilder, ctr: Sequence[Value], key: Sequence[Value],
                  rounds: int = ROUNDS) -> tuple[Value, Value, Value, Value]:
    """The four u32 output words of Philox4x32-``rounds`` for counter ``ctr`` (4 u32 Values,
    word 0 lowest) and key ``key`` (2 u32 Values). The inputs are not modified."""
    if len(ctr) != 4 or len(key) != 2:
        raise ValueError(f"philox4x32_10: ctr needs 4 words and key 2; got {len(ctr)} and {len(key)}")
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0 = kb.add(k0, PHILOX_W0, type_="u32")
            k1 = kb.add(k1, PHILOX_W1, type_="u32")
        hi0 = kb.mul(c0, PHILOX_M0, mode="hi", type_="u32")
        lo0 = kb.mul(c0, PHILOX_M0, type_="u32")
        hi1 = kb.mul(c2, PHILOX_M1, mode="hi", type_="u32")
        lo1 = kb.mul(c2, PHILOX_M1, type_="u32")
        c0, c1, c2, c3 = (kb.xor(kb.xor(hi1, c1), k0), lo1, kb.xor(kb.xor(hi0, c3), k1), lo0)
    return c0, c1, c2, c3


def stream_counter(kb: KernelBuilder, block: Value) -> tuple[Value, Value, Value, Value]:
    """The Philox counter of 64-bit block index ``block`` (u64) of subsequence 0."""
    lo = kb.cvt(block, "u32")
    hi = kb.cvt(kb.shr(block, 32), "u32")
    zero = kb.mov(0, "u32")
    return lo, hi, zero, zero
