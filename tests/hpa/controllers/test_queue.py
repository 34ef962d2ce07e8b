"""The work queue: de-duplication, reprocessing after done, backoff, resync spread, concurrency."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter

import pytest
import structlog
from prometheus_client import CollectorRegistry

from hpa.controllers.queue import (
    ItemExponentialFailureRateLimiter,
    QueueMetrics,
    QueueShutDownError,
    WorkQueue,
)
from tests.fakes.clock import FakeClock


def make_queue(clock: FakeClock, **kwargs: object) -> WorkQueue:
    return WorkQueue("hpa", clock=clock, rng=random.Random(7), **kwargs)  # type: ignore[arg-type]


async def test_a_key_added_twice_is_queued_once() -> None:
    queue = make_queue(FakeClock())
    queue.add("ns/a")
    queue.add("ns/a")
    queue.add("ns/b")
    assert len(queue) == 2
    assert await queue.get() == "ns/a"
    assert await queue.get() == "ns/b"


async def test_a_key_readded_while_processed_runs_again_after_done_only() -> None:
    queue = make_queue(FakeClock())
    queue.add("ns/a")
    key = await queue.get()
    queue.add("ns/a")
    queue.add("ns/a")
    assert len(queue) == 0, "a key in processing is never handed out twice"
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "ns/a"
    queue.done("ns/a")
    assert len(queue) == 0


async def test_get_waits_for_an_add() -> None:
    queue = make_queue(FakeClock())
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("ns/late")
    assert await asyncio.wait_for(getter, timeout=1) == "ns/late"


def test_exponential_failure_backoff_doubles_from_5ms_to_the_1000s_cap() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("ns/a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0
    assert all(later >= earlier for earlier, later in itertools.pairwise(delays))
    assert limiter.num_requeues("ns/a") == 20
    assert limiter.when("ns/b") == 0.005, "backoff is per key"
    limiter.forget("ns/a")
    assert limiter.when("ns/a") == 0.005


async def test_a_failing_key_is_retried_with_growing_backoff_and_forgotten_on_success() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    attempts: list[float] = []

    async def reconcile(key: str) -> None:
        attempts.append(clock.monotonic())
        if len(attempts) <= 3:
            raise RuntimeError("metrics backend down")

    runner = asyncio.create_task(queue.run(reconcile, max_in_flight=2))
    queue.add("ns/a")
    await clock.advance(1.0)
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(attempts)]
    assert gaps == [0.005, 0.01, 0.02]
    assert queue.num_requeues("ns/a") == 0, "a success resets the backoff"
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner


async def test_one_failing_key_does_not_stop_the_others() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    done: list[str] = []

    async def reconcile(key: str) -> None:
        if key == "ns/bad":
            raise ValueError("broken HPA")
        done.append(key)

    runner = asyncio.create_task(queue.run(reconcile, max_in_flight=1))
    for key in ("ns/bad", "ns/a", "ns/b"):
        queue.add(key)
    await clock.advance(0.001)
    assert done == ["ns/a", "ns/b"]
    queue.shut_down()
    await asyncio.wait_for(runner, timeout=1)


async def test_in_flight_reconciles_never_exceed_the_bound() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    release = asyncio.Event()
    running = 0
    peak = 0
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        finished.append(key)

    runner = asyncio.create_task(queue.run(reconcile, max_in_flight=3))
    for index in range(10):
        queue.add(f"ns/hpa-{index}")
    await clock.settle()
    assert (running, peak, len(queue)) == (3, 3, 7)
    release.set()
    await clock.settle(100)
    assert sorted(finished) == sorted(f"ns/hpa-{index}" for index in range(10))
    assert peak == 3
    queue.shut_down()
    await asyncio.wait_for(runner, timeout=1)


async def test_a_slow_key_does_not_block_others() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    finished: list[str] = []
    never = asyncio.Event()

    async def reconcile(key: str) -> None:
        if key == "ns/slow":
            await never.wait()
        finished.append(key)

    runner = asyncio.create_task(queue.run(reconcile, max_in_flight=2))
    queue.add("ns/slow")
    for index in range(5):
        queue.add(f"ns/fast-{index}")
    await clock.settle(50)
    assert finished == [f"ns/fast-{index}" for index in range(5)]
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner


async def test_resyncs_are_spread_across_the_period_and_repeat_every_period() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    period = 15.0
    keys = [f"ns/hpa-{index}" for index in range(600)]
    start = clock.monotonic()
    for key in keys:
        queue.track(key, sync_period_seconds=period)
    seen: dict[str, list[float]] = {key: [] for key in keys}
    timers = asyncio.create_task(queue.run_timers())
    step = 0.25
    for _ in range(int(2 * period / step)):
        await clock.advance(step)
        while len(queue):
            key = await queue.get()
            seen[key].append(clock.monotonic() - start)
            queue.done(key)
    timers.cancel()
    with pytest.raises(asyncio.CancelledError):
        await timers
    assert all(len(times) == 2 for times in seen.values()), "each key once per period"
    first = [times[0] for times in seen.values()]
    assert all(0 < offset <= period + step for offset in first)
    deciles = Counter(min(9, int(offset / period * 10)) for offset in first)
    assert all(30 <= deciles[decile] <= 90 for decile in range(10)), deciles
    assert all(abs(times[1] - times[0] - period) <= step for times in seen.values())


async def test_untracked_keys_stop_resyncing() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.track("ns/a", sync_period_seconds=10)
    queue.track("ns/a", sync_period_seconds=10)
    queue.untrack("ns/a")
    timers = asyncio.create_task(queue.run_timers())
    await clock.advance(30)
    assert len(queue) == 0
    assert queue.tracked == frozenset()
    timers.cancel()
    with pytest.raises(asyncio.CancelledError):
        await timers


async def test_add_after_waits_on_the_clock() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    timers = asyncio.create_task(queue.run_timers())
    queue.add_after("ns/a", 5.0)
    queue.add_after("ns/b", 1.0)
    await clock.advance(0.9)
    assert len(queue) == 0
    await clock.advance(0.2)
    assert await queue.get() == "ns/b"
    await clock.advance(4.0)
    assert await queue.get() == "ns/a"
    timers.cancel()
    with pytest.raises(asyncio.CancelledError):
        await timers


async def test_a_timer_due_sooner_than_the_one_slept_on_fires_on_time() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    timers = asyncio.create_task(queue.run_timers())
    queue.add_after("ns/late", 60.0)
    await clock.advance(1.0)  # the loop now sleeps until the 60 s timer
    queue.add_after("ns/soon", 2.0)
    queue.track("ns/tracked", sync_period_seconds=0.5)  # phase within [0, 0.5)
    await clock.advance(0.5)
    assert len(queue) == 1, "the loop woke for the earlier resync"
    assert await queue.get() == "ns/tracked"
    await clock.advance(1.6)
    assert len(queue) == 1
    assert await queue.get() == "ns/soon"
    await clock.advance(30.0)
    assert "ns/late" not in [await queue.get() for _ in range(len(queue))]
    await clock.advance(30.0)
    assert "ns/late" in [await queue.get() for _ in range(len(queue))]
    queue.shut_down()
    await asyncio.wait_for(timers, timeout=1)  # shutdown ends the timer loop


async def test_shut_down_wakes_waiting_getters() -> None:
    queue = make_queue(FakeClock())
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shut_down()
    with pytest.raises(QueueShutDownError):
        await asyncio.wait_for(getter, timeout=1)


async def test_depth_is_reported_to_the_hook_and_the_injected_registry() -> None:
    registry = CollectorRegistry()
    depths: list[int] = []
    queue = make_queue(FakeClock(), metrics=QueueMetrics(registry), on_depth=depths.append)
    queue.add("ns/a")
    queue.add("ns/b")
    assert registry.get_sample_value("workqueue_depth", {"name": "hpa"}) == 2
    assert registry.get_sample_value("workqueue_adds_total", {"name": "hpa"}) == 2
    await queue.get()
    assert depths == [1, 2, 1]


async def test_each_reconcile_logs_with_its_key_bound() -> None:
    clock = FakeClock()
    queue = WorkQueue("hpa", clock=clock, log_key="hpa")
    seen: dict[str, object] = {}

    async def reconcile(key: str) -> None:
        seen[key] = structlog.contextvars.get_contextvars().get("hpa")

    runner = asyncio.create_task(queue.run(reconcile, max_in_flight=2))
    queue.add("ns/a")
    queue.add("ns/b")
    await clock.settle()
    assert seen == {"ns/a": "ns/a", "ns/b": "ns/b"}
    assert "hpa" not in structlog.contextvars.get_contextvars(), "the caller's context is untouched"
    queue.shut_down()
    await asyncio.wait_for(runner, timeout=1)
