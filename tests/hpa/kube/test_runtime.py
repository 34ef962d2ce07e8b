"""``hpa_asyncio_tasks`` on ``/metrics`` counts the event loop's tasks that are not done."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, generate_latest

from hpa.kube.runtime import TASKS_METRIC, register_task_gauge


def scraped(registry: CollectorRegistry) -> float:
    """The gauge's value as ``/metrics`` shows it."""
    for line in generate_latest(registry).decode().splitlines():
        if line.startswith(f"{TASKS_METRIC} "):
            return float(line.split()[1])
    raise AssertionError(f"{TASKS_METRIC} is not exported")


async def test_the_gauge_follows_the_tasks_started_and_finished() -> None:
    registry = CollectorRegistry()
    register_task_gauge(registry)
    before = scraped(registry)
    assert before >= 1  # this test's own task
    release = asyncio.Event()
    tasks = [asyncio.create_task(release.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert scraped(registry) == before + 3
    release.set()
    await asyncio.gather(*tasks)
    assert scraped(registry) == before


async def test_a_cancelled_task_is_no_longer_counted() -> None:
    registry = CollectorRegistry()
    register_task_gauge(registry)
    before = scraped(registry)
    task = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)
    assert scraped(registry) == before + 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert scraped(registry) == before
