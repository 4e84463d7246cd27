"""Which conv2d algorithm runs: a pure function of the problem and one table of thresholds.

PROVISIONAL: the thresholds below are first guesses, not measurements; they are to be replaced by
figures measured on the H200 (``python -m oxicuda bench conv``). This module is their one owner.
"""

from __future__ import annotations

from dataclasses import dataclass

ALGOS = ("implicit_gemm", "winograd", "winograd_2x2", "winograd_4x4", "im2col")

#: provisional dispatch thresholds (see the module docstring)
THRESHOLDS = {
    # Winograd for 3x3/stride-1/dilation-1 float32 when both channel counts per group reach this
    "winograd_min_channels": 64,
    # F(4x4,3x3) instead of F(2x2,3x3) when the output is at least this many pixels high and wide
    "winograd_4x4_min_output": 8,
    # im2col + GEMM when the reduction (C/groups * R * S) is at least this long ...
    "im2col_min_reduction": 4608,
    # ... and its column matrix fits in this many bytes of workspace
    "im2col_max_workspace_bytes": 256 << 20,
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


def choose_algo(problem: ConvProblem, thresholds: dict[str, int] | None = None) -> str:
    """The algorithm dispatch picks for ``problem``: one of implicit_gemm, winograd_2x2,
    winograd_4x4, im2col (``thresholds`` defaults to ``THRESHOLDS``)."""
    t = THRESHOLDS if thresholds is None else thresholds
    cg, kg = problem.c // problem.groups, problem.k // problem.groups
    if (problem.winograd_eligible and problem.dtype == "f32"
            and min(cg, kg) >= t["winograd_min_channels"]):
        big = min(problem.oh, problem.ow) >= t["winograd_4x4_min_output"]
        return "winograd_4x4" if big else "winograd_2x2"
    if problem.reduction >= t["im2col_min_reduction"] and problem.im2col_bytes <= t["im2col_max_workspace_bytes"]:
        return "im2col"
    return "implicit_gemm"
