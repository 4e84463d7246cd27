"""Device-event timing: warm-up, then the median of many repeats, through oxicuda's own driver."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int
    method: str  # "cuda-events" or "host-clock (emulator: not a GPU figure)"


def time_device(fn: Callable[[int], object], repeats: int = 20, warmup: int = 3) -> Timing:
    """Time ``fn(i)`` with CUDA events on the legacy default stream (where PyTorch, CuPy and
    oxicuda enqueue by default), one event pair per repeat."""
    from oxicuda.driver.backend import api
    from oxicuda.driver.stream import Event

    for i in range(warmup):
        fn(i)
    drv = api()
    drv.ctx_synchronize()
    if drv.name != "cuda":
        samples = []
        for i in range(repeats):
            t0 = time.perf_counter()
            fn(i)
            drv.ctx_synchronize()
            samples.append((time.perf_counter() - t0) * 1e3)
        return Timing(statistics.median(samples), min(samples), max(samples), repeats,
                      "host-clock (emulator: not a GPU figure)")
    pairs = [(Event(), Event()) for _ in range(repeats)]
    for i, (start, end) in enumerate(pairs):
        start.record(0)
        fn(i)
        end.record(0)
    pairs[-1][1].synchronize()
    samples = [start.elapsed_time(end) for start, end in pairs]
    return Timing(statistics.median(samples), min(samples), max(samples), repeats, "cuda-events")


def time_host(fn: Callable[[int], object], loops: int = 10_000, warmup: int = 100) -> float:
    """Host microseconds per call of ``fn`` (launch-cost style measurements), synchronized after."""
    from oxicuda.driver.backend import api

    for i in range(warmup):
        fn(i)
    api().ctx_synchronize()
    t0 = time.perf_counter()
    for i in range(loops):
        fn(i)
    t1 = time.perf_counter()
    api().ctx_synchronize()
    return (t1 - t0) / loops * 1e6
