"""SingleFlight: one call per key, results shared, cancellation reference-counted."""

from __future__ import annotations

import asyncio

import pytest

from adapter.prometheus.singleflight import SingleFlight


async def test_joiners_share_the_first_call() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    release = asyncio.Event()
    calls = 0

    async def work() -> int:
        nonlocal calls
        calls += 1
        await release.wait()
        return 7

    tasks = [asyncio.create_task(flights.do("k", work)) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*tasks)
    assert calls == 1
    assert [value for value, _ in results] == [7, 7, 7]
    assert [shared for _, shared in results] == [False, True, True]
    assert flights.in_flight() == 0


async def test_errors_reach_every_waiter_and_the_key_is_freed() -> None:
    flights: SingleFlight[str, int] = SingleFlight()

    async def broken() -> int:
        await asyncio.sleep(0)
        raise RuntimeError("boom")

    tasks = [asyncio.create_task(flights.do("k", broken)) for _ in range(2)]
    for task in tasks:
        with pytest.raises(RuntimeError, match="boom"):
            await task

    async def fine() -> int:
        return 1

    assert await flights.do("k", fine) == (1, False)


async def test_the_call_is_cancelled_only_when_its_last_waiter_leaves() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def work() -> int:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 0

    first = asyncio.create_task(flights.do("k", work))
    second = asyncio.create_task(flights.do("k", work))
    await started.wait()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.sleep(0)
    assert not cancelled.is_set()
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    await asyncio.wait_for(cancelled.wait(), 1)
    assert flights.in_flight() == 0
