"""``trace()``: record every kernel launch made while it is active.

Tests use it to prove which kernel (and which spec) a public call ran. When no trace is active
the launch path pays one module-level truth test (``if ACTIVE:``) and nothing else.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

#: The traces currently open, from every thread. The launch path reads it without the lock:
#: a list's truth value and iteration are safe enough for a diagnostic record. It is mutated
#: in place, never rebound, because the launch path imports it by name.
ACTIVE: list[Trace] = []
_lock = threading.Lock()


@dataclass(frozen=True)
class LaunchRecord:
    """One kernel launch: entry name, the spec it was generated from (or None), its geometry."""

    kernel: str
    spec: object
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    stream: int


@dataclass
class Trace:
    """What ``trace()`` yields: ``launches`` in launch order (all threads)."""

    launches: list[LaunchRecord] = field(default_factory=list)

    def kernels(self) -> list[str]:
        """The kernel names launched, in order."""
        return [r.kernel for r in self.launches]

    def specs(self) -> list[object]:
        """The specs of the launched kernels, in order (None for raw modules)."""
        return [r.spec for r in self.launches]


def record(record_: LaunchRecord) -> None:
    """Append a launch to every open trace (called by the launch path only when ACTIVE)."""
    with _lock:
        for t in ACTIVE:
            t.launches.append(record_)


@contextlib.contextmanager
def trace() -> Iterator[Trace]:
    """Record the kernel launches made inside the ``with`` block.

    Example::

        with oxicuda.trace() as t:
            oxicuda.blas.gemm(a, b)
        assert t.launches[0].kernel.startswith("oxi_")

    Nested traces each record every launch made while they are open.
    """
    t = Trace()
    with _lock:
        ACTIVE.append(t)
    try:
        yield t
    finally:
        with _lock:
            for i in range(len(ACTIVE) - 1, -1, -1):
                if ACTIVE[i] is t:
                    del ACTIVE[i]
                    break
