"""Which conv2d algorithm (and implicit-GEMM tile) runs: pure functions of the problem, the SM
count and two tables this module owns.

``THRESHOLDS`` holds the rules; ``MEASURED`` holds per-shape winners measured on the H200 by
``benches/sweep_conv.py`` (which prints the entries to paste here). A shape listed in
``MEASURED`` gets its measured algorithm; every other shape goes through the rules.

PROVISIONAL: the rule thresholds are first guesses until the sweep's figures replace them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .conv_implicit_gemm_f32 import TILES

ALGOS = ("implicit_gemm", "winograd", "winograd_2x2", "winograd_4x4", "im2col")

#: dispatch thresholds (see the module docstring); PROVISIONAL
THRESHOLDS = {
    # Winograd for 3x3/stride-1/dilation-1 float32 when both channel counts per group reach this;
    # off in the rules (2^30) until the Winograd kernels beat the implicit GEMM on the H200
    # (benches/sweep_conv.py); a MEASURED entry can still pick them per shape
    "winograd_min_channels": 1 << 30,
    # F(4x4,3x3) instead of F(2x2,3x3) when the output is at least this many pixels high and wide
    "winograd_4x4_min_output": 8,
    # im2col + GEMM when the reduction (C/groups * R * S) is at least this long (off in the
    # rules, 2^30: its NCHW GEMM runs per image, M = OH*OW, which small images starve; the split-K
    # implicit GEMM covers long reductions; a MEASURED entry can still pick it) ...
    "im2col_min_reduction": 1 << 30,
    # ... and its column matrix fits in this many bytes of workspace
    "im2col_max_workspace_bytes": 256 << 20,
    # float32 implicit GEMM split-K: each split reduces at least this many terms, at most this
    # many splits, and each split beyond the first costs this fraction of the kernel's time
    # (partial slabs written and read back, one more launch)
    "split_k_min_reduction": 256,
    "split_k_max": 16,
    "split_k_cost": 0.05,
}
#: float32 implicit-GEMM tiles the rules consider (names of conv_implicit_gemm_f32.TILES), each
#: with the CTAs one SM holds (from its registers: ~140-160, ~80-100, ~64 at 256 threads) and its
#: throughput relative to 128x128 (the per-thread block's FMA per shared load). PROVISIONAL.
IGEMM_TILE_MODEL: dict[str, tuple[int, float]] = {
    "128x128": (1, 1.0),
    "128x64": (2, 0.85),
    "64x128": (2, 0.85),
    "64x64": (4, 0.6),
}
IGEMM_TILES = tuple(IGEMM_TILE_MODEL)

#: measured winners: shape key (see ``shape_key``) -> (algo, tile or None, splits or None).
#: From `python3 benches/sweep_conv.py` on the H200 (132 SMs; MEASURED_SOURCE[0]): the fastest
#: correct variant per shape.
#: the committed measurements MEASURED was read from (tests check they exist)
MEASURED_SOURCE = ("benches/results/2026-11-29-h200-session2/sweep-conv.json",
                   "benches/results/2026-11-30-h200-session5/call7-bench-conv.json")
MEASURED: dict[tuple, tuple[str, str | None, int | None]] = {
    ('f32', 32, 64, 56, 56, 64, 3, 3, (1, 1), (1, 1), (1, 1), 1): ('winograd_4x4', None, None),
    # with call plans the host is out of these two: bench-conv (MEASURED_SOURCE[1]) measured
    # F(4x4) at 69.7 TFLOP/s against F(2x2) 44.9 here, and F(2x2) at 27.8 against the implicit
    # GEMM 19.6 below
    ('f32', 32, 128, 28, 28, 128, 3, 3, (1, 1), (1, 1), (1, 1), 1): ('winograd_4x4', None, None),
    ('f32', 32, 256, 14, 14, 256, 3, 3, (1, 1), (1, 1), (1, 1), 1): ('winograd_4x4', None, None),
    ('f32', 8, 512, 7, 7, 512, 3, 3, (1, 1), (1, 1), (1, 1), 1): ('winograd_2x2', None, None),
    ('f32', 32, 256, 14, 14, 1024, 1, 1, (1, 1), (0, 0), (1, 1), 1): ('implicit_gemm', '64x128', 1),
    ('f32', 32, 64, 56, 56, 256, 1, 1, (1, 1), (0, 0), (1, 1), 1): ('implicit_gemm', '64x128', 1),
    ('f32', 32, 128, 56, 56, 128, 3, 3, (2, 2), (1, 1), (1, 1), 1): ('implicit_gemm', '128x64', 1),
    ('f32', 32, 3, 224, 224, 64, 7, 7, (2, 2), (3, 3), (1, 1), 1): ('implicit_gemm', '128x64', 1),
    ('f32', 1, 64, 56, 56, 64, 3, 3, (1, 1), (1, 1), (1, 1), 1): ('implicit_gemm', '64x128', 1),
    ('f32', 1, 512, 7, 7, 512, 3, 3, (1, 1), (1, 1), (1, 1), 1): ('implicit_gemm', '128x64', 8),
}


@dataclass(frozen=True)
class ConvProblem:
    """One conv2d forward problem (the sizes dispatch looks at)."""

    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    oh: int
    ow: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    dtype: str  # "f32", "f16", "bf16"

    @property
    def winograd_eligible(self) -> bool:
        """3x3 filter, stride 1, dilation 1 (what F(m x m, 3x3) computes)."""
        return (self.r, self.s) == (3, 3) and self.stride == (1, 1) and self.dilation == (1, 1)

    @property
    def reduction(self) -> int:
        return self.c // self.groups * self.r * self.s

    @property
    def im2col_bytes(self) -> int:
        """Bytes of the f32 column matrix (N*OH*OW x C*R*S) im2col builds."""
        return self.n * self.oh * self.ow * self.c * self.r * self.s * 4


def shape_key(problem: ConvProblem) -> tuple:
    """The key of ``MEASURED``: (dtype, n, c, h, w, k, r, s, stride, padding, dilation, groups);
    the layout is not part of it (the sweep measures NCHW and NHWC and keeps the NCHW winner)."""
    p = problem
    return (p.dtype, p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride, p.padding, p.dilation, p.groups)


def choose_algo(problem: ConvProblem, thresholds: dict[str, int] | None = None) -> str:
    """The algorithm dispatch picks for ``problem``: one of implicit_gemm, winograd_2x2,
    winograd_4x4, im2col (``thresholds`` defaults to ``THRESHOLDS``, and then a ``MEASURED``
    entry for the shape wins over the rules)."""
    if thresholds is None:
        hit = MEASURED.get(shape_key(problem))
        if hit is not None:
            return hit[0]
    t = THRESHOLDS if thresholds is None else thresholds
    cg, kg = problem.c // problem.groups, problem.k // problem.groups
    if (problem.winograd_eligible and problem.dtype == "f32"
            and min(cg, kg) >= t["winograd_min_channels"]):
        big = min(problem.oh, problem.ow) >= t["winograd_4x4_min_output"]
        return "winograd_4x4" if big else "winograd_2x2"
    if problem.reduction >= t["im2col_min_reduction"] and problem.im2col_bytes <= t["im2col_max_workspace_bytes"]:
        return "im2col"
    return "implicit_gemm"


def igemm_ctas(problem: ConvProblem, tile: str) -> int:
    """CTAs of the float32 implicit-GEMM grid for ``tile`` (without split-K)."""
    cfg = TILES[tile]
    gm, kg = problem.n * problem.oh * problem.ow, problem.k // problem.groups
    return math.ceil(gm / cfg.bm) * math.ceil(kg / cfg.bn) * problem.groups


def choose_igemm_tile(problem: ConvProblem, sm_count: int, thresholds: dict | None = None) -> tuple[str, int]:
    """(tile name, split-K factor) of the float32 implicit-GEMM kernel for ``problem`` on a
    device of ``sm_count`` SMs: a ``MEASURED`` entry with a tile, else the (tile, splits) of
    ``IGEMM_TILE_MODEL`` with the best modelled throughput (wave fill x tile speed, less the
    split-K cost); ties go to fewer splits and the bigger tile."""
    if thresholds is None:
        hit = MEASURED.get(shape_key(problem))
        if hit is not None and hit[0] == "implicit_gemm" and hit[1] is not None:
            return hit[1], hit[2] or 1
    t = THRESHOLDS if thresholds is None else thresholds
    kg, gm = problem.k // problem.groups, problem.n * problem.oh * problem.ow
    # a tile wider than the group's output channels or taller than the pixels (past the
    # smallest, 64) wastes its columns or rows
    tiles = [name for name in IGEMM_TILES if TILES[name].bn <= max(64, kg) and TILES[name].bm <= max(64, gm)]
    tiles = tiles or [IGEMM_TILES[-1]]
    most = max(1, min(t["split_k_max"], problem.reduction // t["split_k_min_reduction"]))
    best, best_score = (tiles[0], 1), -1.0
    for name in tiles:
        per_sm, speed = IGEMM_TILE_MODEL[name]
        slots, ctas = per_sm * sm_count, igemm_ctas(problem, name)
        for splits in range(1, most + 1):
            # the fraction of the last wave's slots that hold work (wave quantization)
            total = ctas * splits
            fill = total / (math.ceil(total / slots) * slots)
            score = fill * speed / (1.0 + t["split_k_cost"] * (splits - 1))
            if score > best_score + 1e-9:
                best, best_score = (name, splits), score
    return best
