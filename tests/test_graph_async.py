"""asyncio waits: ``await oxicuda.Event``, ``await stream.synchronize_async()``,
``await a.get_async()``; many at once on one loop, the loop never blocked; Event.elapsed_time."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import oxicuda
from oxicuda.driver.backend import api


def test_concurrent_waits_return_the_right_results(rng):
    streams = [oxicuda.Stream(non_blocking=True) for _ in range(4)]
    hosts = [rng.standard_normal(64).astype(np.float32) for _ in streams]
    arrays = [oxicuda.asarray(h, stream=s) for h, s in zip(hosts, streams)]

    async def one(i: int) -> np.ndarray:
        y = oxicuda.dnn.relu(arrays[i])
        done = oxicuda.Event(timing=False).record(streams[i])
        assert await done is done
        await streams[i].synchronize_async()
        return await y.get_async()

    async def main():
        return await asyncio.gather(*(one(i) for i in range(len(streams))))

    for got, h in zip(asyncio.run(main()), hosts):
        np.testing.assert_array_equal(got, np.maximum(h, 0))


def test_a_pending_event_is_polled_without_blocking_the_loop(monkeypatch):
    drv = api()
    pending = {"polls": 0}
    real = drv.event_query

    def slow_query(handle):
        if pending["polls"] < 5:
            pending["polls"] += 1
            return False
        return real(handle)

    monkeypatch.setattr(drv, "event_query", slow_query)
    event = oxicuda.Event(timing=False).record(oxicuda.Stream(non_blocking=True))
    ticks = []

    async def ticker():
        while pending["polls"] < 5:
            ticks.append(pending["polls"])
            await asyncio.sleep(0)

    async def main():
        await asyncio.gather(event.wait_async(), ticker())

    asyncio.run(main())
    assert pending["polls"] == 5
    assert len(ticks) >= 5  # the ticker ran between the polls


def test_awaiting_an_event_recorded_in_a_capture_raises_the_drivers_error():
    s = oxicuda.Stream(non_blocking=True)
    ev = oxicuda.Event(timing=False)
    x = oxicuda.zeros(8, np.float32, stream=s)
    oxicuda.dnn.relu(x)
    with oxicuda.graph(stream=s):
        oxicuda.dnn.relu(x)
        ev.record(s)
    with pytest.raises(oxicuda.CudaError, match="CUDA_ERROR_CAPTURED_EVENT"):
        asyncio.run(ev.wait_async())
    ev.record(s)  # recorded outside a capture again: awaitable
    asyncio.run(ev.wait_async())


def test_elapsed_time_between_events():
    s = oxicuda.Stream(non_blocking=True)
    x = oxicuda.zeros(1024, np.float32, stream=s)
    start = oxicuda.Event().record(s)
    oxicuda.dnn.relu(x)
    end = oxicuda.Event().record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0.0
    with pytest.raises(ValueError, match="timing=False"):
        start.elapsed_time(oxicuda.Event(timing=False).record(s))
