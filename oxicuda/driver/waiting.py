"""Waiting for device work from asyncio without blocking the event loop.

``wait_event`` polls ``cuEventQuery`` (a host-side check that never blocks) and sleeps on the
event loop between polls, the sleep growing from ``FIRST_POLL_S`` to ``LAST_POLL_S``: a short
wait costs one or two polls, a long one a poll every ``LAST_POLL_S``. Other coroutines run
during the sleeps, so any number of waits proceed concurrently on one loop.
"""

from __future__ import annotations

import asyncio

from .backend import api

FIRST_POLL_S = 20e-6
LAST_POLL_S = 1e-3


async def wait_event(handle: int) -> None:
    """Return once the event ``handle`` has completed; raises the driver's error (for example
    CUDA_ERROR_CAPTURED_EVENT for an event recorded in a stream capture)."""
    drv = api()
    delay = 0.0
    while not drv.event_query(handle):
        await asyncio.sleep(delay)
        delay = min(LAST_POLL_S, max(FIRST_POLL_S, 2 * delay))
