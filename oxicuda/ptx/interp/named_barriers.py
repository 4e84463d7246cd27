"""Named and partial-CTA barriers: ``bar.sync id, count``, ``bar.arrive id, count`` (and their
``barrier.*`` spellings), for ids 0..15.

``bar.sync 0`` without a count keeps the run loop's whole-CTA rule (every live thread at the same
instruction). Every other form goes through ``arrive``: the threads of the step add themselves to
barrier ``id`` (counted by warps, as the hardware does: a warp with any arriving thread counts as
32 threads); ``bar.sync`` threads then wait until ``count`` threads (all live threads when no
count is given) have arrived, ``bar.arrive`` threads go on at once. When the count is reached
the barrier's waiting threads are released and the barrier resets for its next use.
"""

from __future__ import annotations

import numpy as np

from .faults import LAUNCH_FAILED, Fault

MAX_BARRIERS = 16


class BarrierState:
    """One in-flight barrier of a CTA: who arrived, who waits, the expected thread count."""

    __slots__ = ("arrived", "count", "waiting")

    def __init__(self, n: int, count: int | None) -> None:
        self.arrived = np.zeros(n, dtype=bool)
        self.waiting = np.zeros(n, dtype=bool)
        self.count = count


def _uniform(values, sel: np.ndarray, what: str, instr_text: str) -> int:
    v = np.asarray(values)
    if v.ndim == 0:
        return int(v)
    v = v[sel]
    if len(v) and (v != v[0]).any():
        lane = int(np.flatnonzero(sel)[int(np.argmax(v != v[0]))])
        raise Fault(LAUNCH_FAILED, f"{instr_text}: the barrier {what} differs between threads "
                    f"({int(v[0])} and {int(v[v != v[0]][0])})", lane)
    return int(v[0]) if len(v) else 0


def arrive(cta, named, arriving: np.ndarray, live: np.ndarray) -> np.ndarray | None:
    """Threads ``arriving`` (bool mask) reach the barrier ``named`` = (id reader, count reader or
    None, is_arrive). Returns the bool mask of the threads released (the waiters, and the
    arriving threads of a ``bar.sync``) when the barrier completes, else None."""
    rid, rcount, is_arrive = named
    if not arriving.any():
        return None
    bid = _uniform(rid(), arriving, "id", "bar")
    if not 0 <= bid < MAX_BARRIERS:
        raise Fault(LAUNCH_FAILED, f"barrier id {bid}; allowed ids are 0..{MAX_BARRIERS - 1}",
                    int(np.flatnonzero(arriving)[0]))
    count = _uniform(rcount(), arriving, "thread count", "bar") if rcount is not None else None
    if count is not None and (count <= 0 or count % 32):
        raise Fault(LAUNCH_FAILED, f"barrier {bid} with a thread count of {count}; the count must "
                    "be a positive multiple of 32", int(np.flatnonzero(arriving)[0]))
    barriers = cta.barriers
    st = barriers.get(bid)
    if st is None:
        st = barriers[bid] = BarrierState(cta.nthreads, count)
    elif st.count != count:
        raise Fault(LAUNCH_FAILED, f"barrier {bid} used with thread counts {st.count} and {count} "
                    "in the same phase", int(np.flatnonzero(arriving)[0]))
    st.arrived |= arriving
    if not is_arrive:
        st.waiting |= arriving
    if count is None:
        done = not (live & ~st.arrived).any()
    else:
        warps = np.unique(np.flatnonzero(st.arrived) // 32)
        done = 32 * len(warps) >= min(count, 32 * ((cta.nthreads + 31) // 32))
    if not done:
        return None
    del barriers[bid]
    return st.waiting


def reset(cta) -> None:
    """A new CTA: no barrier is in flight."""
    cta.barriers = {}
