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


def _per_lane(values, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(values).astype(np.int64), (n,))


def _check_warp_uniform(vals: np.ndarray, arriving: np.ndarray, what: str) -> None:
    lanes = np.flatnonzero(arriving)
    v = vals[lanes]
    warps = lanes // 32
    first = np.full(int(warps.max()) + 1, -1, np.int64)
    first[warps[::-1]] = v[::-1]  # the value of each warp's first arriving lane
    bad = v != first[warps]
    if bad.any():
        k = int(np.argmax(bad))
        raise Fault(LAUNCH_FAILED, f"bar: the barrier {what} differs within warp {int(warps[k])} "
                    f"({int(first[warps[k]])} and {int(v[k])})", int(lanes[k]))


def arrive(cta, named, arriving: np.ndarray, live: np.ndarray) -> np.ndarray | None:
    """Threads ``arriving`` (bool mask) reach the barrier ``named`` = (id reader, count reader or
    None, is_arrive); the id (and count) must be the same within a warp, warps may name
    different barriers. Returns the bool mask of the threads released (the waiters, and the
    arriving threads of a ``bar.sync``) by the barriers this arrival completes, else None."""
    rid, rcount, is_arrive = named[:3]
    if not arriving.any():
        return None
    n = cta.nthreads
    ids = _per_lane(rid(), n)
    counts = _per_lane(rcount(), n) if rcount is not None else None
    _check_warp_uniform(ids, arriving, "id")
    if counts is not None:
        _check_warp_uniform(counts, arriving, "thread count")
    released = None
    for bid in np.unique(ids[arriving]).tolist():
        group = arriving & (ids == bid)
        lane0 = int(np.flatnonzero(group)[0])
        if not 0 <= bid < MAX_BARRIERS:
            raise Fault(LAUNCH_FAILED, f"barrier id {bid}; allowed ids are 0..{MAX_BARRIERS - 1}",
                        lane0)
        count = int(counts[lane0]) if counts is not None else None
        if count is not None and (count <= 0 or count % 32):
            raise Fault(LAUNCH_FAILED, f"barrier {bid} with a thread count of {count}; the count "
                        "must be a positive multiple of 32", lane0)
        done = _arrive_one(cta, bid, count, group, live, is_arrive)
        if done is not None:
            released = done if released is None else (released | done)
    return released


def _arrive_one(cta, bid: int, count: int | None, group: np.ndarray, live: np.ndarray,
                is_arrive: bool) -> np.ndarray | None:
    barriers = cta.barriers
    st = barriers.get(bid)
    if st is None:
        st = barriers[bid] = BarrierState(cta.nthreads, count)
    elif st.count != count:
        raise Fault(LAUNCH_FAILED, f"barrier {bid} used with thread counts {st.count} and {count} "
                    "in the same phase", int(np.flatnonzero(group)[0]))
    st.arrived |= group
    if not is_arrive:
        st.waiting |= group
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
