"""The plan cache, shaped like ``cupy.fft.config``: ``get_plan_cache()`` returns this thread's
bounded, lock-protected cache that every oxicuda.fft call plans through (``size`` plans and ``memsize`` bytes of
workspace and device tables at most, oldest evicted first; ``clear()``, ``show_info()``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from oxicuda.ptx.launch_plan import PlanCache

__all__ = ["FftPlanCache", "get_plan_cache", "set_cufft_gpus", "show_plan_cache_info"]


def _plan_bytes(plan: object) -> int:
    tables = sum(getattr(t, "nbytes", 0) for t in getattr(plan, "keep", ()))
    return int(getattr(plan, "workspace_bytes", 0)) + tables


class FftPlanCache(PlanCache):
    """A PlanCache with cupy's PlanCache controls: a plan count limit (``size``, -1 none) and a
    memory limit (``memsize`` bytes, -1 none) over the plans' workspace and table bytes."""

    def __init__(self, size: int = 16, memsize: int = -1) -> None:
        super().__init__("fft", maxsize=max(size, 1))
        self._size = size
        self._memsize = memsize
        self._bytes: dict[Hashable, int] = {}

    def get_or_build(self, key: Hashable, build: Callable[[], object]) -> object:
        plan = self._plans.get(key)
        if plan is not None:
            self.hits += 1
            return plan
        if self._size == 0:
            self.misses += 1
            return build()
        plan = super().get_or_build(key, build)
        with self._lock:
            self._bytes[key] = _plan_bytes(plan)
            self._evict()
        return plan

    def _evict(self) -> None:
        for k in [k for k in self._bytes if k not in self._plans]:
            del self._bytes[k]
        while self._plans and (
                (self._size >= 0 and len(self._plans) > self._size)
                or (self._memsize >= 0 and sum(self._bytes.values()) > self._memsize and len(self._plans) > 1)):
            k, _ = self._plans.popitem(last=False)
            self._bytes.pop(k, None)

    # cupy.fft.config.PlanCache's spelling
    def get_size(self) -> int:
        return self._size

    def set_size(self, size: int) -> None:
        """The most plans kept (-1: no limit; 0 disables caching)."""
        if not isinstance(size, int) or size < -1:
            raise ValueError(f"plan cache: size={size!r}; an int >= -1")
        with self._lock:
            self._size = size
            self.maxsize = size if size > 0 else 1 << 30
            if size == 0:
                self._plans.clear()
            self._evict()

    def get_memsize(self) -> int:
        return self._memsize

    def set_memsize(self, memsize: int) -> None:
        """The most bytes (workspace + tables) kept (-1: no limit)."""
        if not isinstance(memsize, int) or memsize < -1:
            raise ValueError(f"plan cache: memsize={memsize!r}; an int >= -1")
        with self._lock:
            self._memsize = memsize
            self._evict()

    def get_curr_size(self) -> int:
        return len(self._plans)

    def get_curr_memsize(self) -> int:
        return sum(self._bytes.get(k, 0) for k in self._plans)

    size = property(get_size, set_size)
    memsize = property(get_memsize, set_memsize)

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self._bytes.clear()
            self.hits = self.misses = 0

    def show_info(self) -> None:
        """Print the cache's limits, contents and counters."""
        print(f"oxicuda.fft plan cache: {self.get_curr_size()} / {self._size} plans, "
              f"{self.get_curr_memsize()} / {self._memsize} bytes, hits {self.hits}, misses {self.misses}")
        for key, plan in list(self._plans.items()):
            print(f"  {plan!r}: {_plan_bytes(plan)} B")


_local = threading.local()


def get_plan_cache() -> FftPlanCache:
    """This thread's plan cache (one per thread, as cupy's: plans own their workspace, so two
    threads never share one; keys hold the device ordinal)."""
    cache = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = FftPlanCache()
    return cache


def show_plan_cache_info() -> None:
    get_plan_cache().show_info()


def set_cufft_gpus(gpus: object) -> None:
    """cupy's multi-GPU switch: oxicuda.fft plans run on one device; only a single GPU is accepted."""
    if isinstance(gpus, int) and gpus == 1 or (isinstance(gpus, (list, tuple)) and len(gpus) == 1):
        return
    raise NotImplementedError(f"set_cufft_gpus({gpus!r}): multi-GPU transforms are not supported")
