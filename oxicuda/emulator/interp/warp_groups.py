"""What the tensor-core and asynchronous instructions share: whole-warp / whole-warpgroup checks,
the arch gate, and the conversions between packed registers and float64 element values.

Numerics of the tensor-core model (``mma.sync``, ``wgmma``): f16 and bf16 inputs convert to
float64 exactly; tf32 inputs are f32 registers whose low 13 mantissa bits the hardware ignores,
modelled as truncation toward zero of the mantissa (``bits & 0xFFFFE000``); products and sums are
formed in float64 and rounded once to the accumulator type. The hardware's accumulation order is
unspecified, so results agree with a GPU to within the rounding of the accumulator type, not
bit for bit.
"""

from __future__ import annotations

import numpy as np

from .faults import LAUNCH_FAILED, Fault, Unsupported
from .types import bf16_bits_to_f32

WARP = 32
WARPGROUP = 128


def arch_number(arch: str) -> int:
    """``"sm_90a"`` -> 90 (0 when the text is not an sm_ target)."""
    digits = "".join(ch for ch in arch.split("_")[-1] if ch.isdigit())
    return int(digits) if arch.startswith("sm_") and digits else 0


def require_arch(instr, kc, min_sm: int, what: str, arch_a: bool = False) -> None:
    """Raise Unsupported when the module's ``.target`` (as ptxas would) or the emulated device
    (when the program records it) is older than ``min_sm``; ``arch_a``: needs ``sm_90a``."""
    target = str(getattr(kc, "arch", "") or "")
    have = arch_number(target)
    if have and have < min_sm:
        raise Unsupported(f"{instr.full_opcode}: {what} needs .target sm_{min_sm}"
                          f"{'a' if arch_a else ''} or newer; the module targets {target}")
    if arch_a and have and have >= 90 and not target.endswith("a"):
        raise Unsupported(f"{instr.full_opcode}: {what} needs .target sm_{min_sm}a "
                          f"(arch-specific features); the module targets {target}")
    device = getattr(getattr(getattr(kc, "kernel", None), "program", None), "device", None)
    cc = getattr(device, "cc", None)
    if cc is not None and cc[0] * 10 + cc[1] < min_sm:
        raise Unsupported(f"{instr.full_opcode}: {what} needs an sm_{min_sm} device; the emulated "
                          f"device is sm_{cc[0]}{cc[1]} (set OXICUDA_EMULATOR_ARCH=sm_90 or build "
                          "EmulatorAPI(device=EMULATED_DEVICES['sm_90']))")


def active_groups(cta, m, size: int, what: str) -> np.ndarray:
    """Indices of the groups of ``size`` consecutive threads (32: warps, 128: warpgroups) that
    execute this instruction; each must be complete and wholly active, else a Fault names the
    first missing thread."""
    n = cta.nthreads
    if m is None:
        if n % size == 0:
            return np.arange(n // size)
        groups = np.arange((n + size - 1) // size)
        active = np.ones(n, bool)
    else:
        active = m
        groups = np.unique(np.flatnonzero(active) // size)
    for g in groups:
        lo, hi = int(g) * size, int(g) * size + size
        if hi > n or not active[lo:hi].all():
            missing = next(t for t in range(lo, hi) if t >= n or not active[t])
            unit = "warp" if size == WARP else "warpgroup"
            if missing >= n:
                why = (f"the block has {n} threads, so {unit} {int(g)} (threads {lo}..{hi - 1}) is "
                       "incomplete")
            else:
                why = f"thread {missing} of {unit} {int(g)} (threads {lo}..{hi - 1}) is not at this instruction"
            extra = (" (a warpgroup is 4 consecutive warps starting at a warp index that is a "
                     "multiple of 4)") if size == WARPGROUP else " (divergent or exited threads)"
            first = int(np.flatnonzero(active[lo:min(hi, n)])[0]) + lo
            raise Fault(LAUNCH_FAILED, f"{what} needs every thread of the {unit}: {why}{extra}", first)
    return groups


# -- element conversions ----------------------------------------------------------------------
def halves_to_f64(words: np.ndarray, elem: str) -> np.ndarray:
    """Packed b32 words (any shape) -> float64 of shape (..., 2): low half first."""
    w = np.asarray(words, dtype=np.uint32)
    lo = (w & np.uint32(0xFFFF)).astype(np.uint16)
    hi = (w >> np.uint32(16)).astype(np.uint16)
    pair = np.stack([lo, hi], axis=-1)
    return bits16_to_f64(pair, elem)


def bits16_to_f64(bits: np.ndarray, elem: str) -> np.ndarray:
    """f16 or bf16 bit patterns (uint16) -> float64, exactly."""
    b = np.asarray(bits, dtype=np.uint16)
    if elem == "f16":
        return b.view(np.float16).astype(np.float64)
    if elem == "bf16":
        return bf16_bits_to_f32(b).astype(np.float64)
    raise ValueError(f"16-bit element type {elem!r}; allowed f16, bf16")


def tf32_to_f64(words: np.ndarray) -> np.ndarray:
    """f32 register bits read as tf32: the low 13 mantissa bits dropped (truncation)."""
    w = np.asarray(words, dtype=np.uint32) & np.uint32(0xFFFFE000)
    return w.view(np.float32).astype(np.float64)


def f64_to_f16_bits(values: np.ndarray) -> np.ndarray:
    """float64 -> f16 bits (uint16), rounded once to nearest even (numpy rounds f64 -> f16
    directly, without an f32 step)."""
    return np.asarray(values, dtype=np.float64).astype(np.float16).view(np.uint16)


def pack_halves(lo_bits: np.ndarray, hi_bits: np.ndarray) -> np.ndarray:
    """Two uint16 bit arrays -> b32 words (low half first)."""
    return (np.asarray(lo_bits, np.uint32) | (np.asarray(hi_bits, np.uint32) << np.uint32(16))).astype(np.uint32)


__all__ = [
    "LAUNCH_FAILED",
    "WARP",
    "WARPGROUP",
    "active_groups",
    "arch_number",
    "bits16_to_f64",
    "f64_to_f16_bits",
    "halves_to_f64",
    "pack_halves",
    "require_arch",
    "tf32_to_f64",
]
