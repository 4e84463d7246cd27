"""Host side of ``solver_svals`` (kernels/svals_kernels.py): launches for matrix_rank's count,
pinv's cutoff-and-scale, lstsq's residual sums and check_finite. Host work: sizes only."""

from __future__ import annotations

from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from .kernels.svals_kernels import SVALS_THREADS, SvalsSpec

PLANS = PlanCache("solver.svals")


def launch(dtype: str, mode: str, k: int, cols: int, batch: int, *, s: int = 0, x: int = 0, out: int = 0,
           strides: tuple[int, int, int] = (0, 0, 0), rtol: float = 0.0, atol: float = 0.0, stream: int = 0) -> None:
    threads = {"rank": batch, "pinv_scale": batch * k * cols, "colsq": batch * cols,
               "finite": batch * k * cols, "zero_diag": batch}[mode]
    if threads == 0:
        return
    if threads >= 2**32:
        raise ValueError(f"solver_svals {mode}: {threads} elements; at most 2**32 - 1 per launch")
    facts = device_facts()
    grid = ((threads + SVALS_THREADS - 1) // SVALS_THREADS,)
    key = (dtype, mode, grid, facts.ordinal)
    step = PLANS.get_or_build(key, lambda: KernelStep(SvalsSpec(arch=facts.arch, dtype=dtype, mode=mode), grid,
                                                      (SVALS_THREADS,), bind=None))
    step.launch((k, cols, batch, s, x, out, *strides, float(rtol), float(atol)), stream)
