"""Dispatch for one transformed axis: a pure function of (length, dtype, device facts) that says
how the plan computes it.

- ``("single",)``: a 7-smooth length that fits one CTA's shared memory: one Stockham pass;
- ``("four_step", n1, n2)``: a 7-smooth length above that, as an n1 x n2 matrix: n2 strided
  column transforms of length n1 with the twiddle fused into their stores, then n1 row
  transforms of length n2 stored transposed; ``n1`` and ``n2`` as close to sqrt(n) as the
  lengths allow;
- ``("bluestein", m, inner)``: any other length: the chirp-z transform through power-of-two
  transforms of length ``m >= 2n - 1`` computed as ``inner`` (single or four-step).

Source of the thresholds: the shared-memory limit is the device's (``smem_per_block_optin``),
up to 128 KB per transform (complex64 16384 points on sm_80/sm_90, 8192 on sm_86); the split
prefers balanced factors because both passes then read and write coalesced rows of similar
length. Not yet tuned by measurement on the H200.
"""

from __future__ import annotations

from .kernels.stockham import is_smooth, max_single

__all__ = ["axis_strategy", "max_length", "single_limit"]


def single_limit(dtype: str, smem_per_block_optin: int) -> int:
    """The longest single-pass length for ``dtype`` on a device with that opt-in limit."""
    return max_single(dtype, smem_per_block_optin)


def _split(n: int, top: int) -> tuple[int, int] | None:
    best = None
    for n1 in range(1, top + 1):
        if n % n1 == 0 and n // n1 <= top:
            n2 = n // n1
            if best is None or abs(n1 - n2) < abs(best[0] - best[1]):
                best = (n1, n2)
    return best


def max_length(dtype: str, smem_per_block_optin: int) -> int:
    """The longest axis any strategy handles (the square of the single-pass limit)."""
    top = single_limit(dtype, smem_per_block_optin)
    return top * top


def axis_strategy(n: int, dtype: str, smem_per_block_optin: int) -> tuple:
    """The strategy for an axis of length ``n`` (see the module docstring); ValueError when
    ``n`` is beyond ``max_length``."""
    top = single_limit(dtype, smem_per_block_optin)
    if is_smooth(n):
        if n <= top:
            return ("single",)
        split = _split(n, top)
        if split is not None:
            return ("four_step",) + split
    m = 1
    while m < 2 * n - 1:
        m *= 2
    if m <= top:
        return ("bluestein", m, ("single",))
    split = _split(m, top)
    if split is None:
        raise ValueError(f"fft: an axis of length {n} is too long; {dtype} transforms support lengths "
                         f"up to {top * top} (7-smooth) or {top * top // 4} (any)")
    return ("bluestein", m, ("four_step",) + split)
