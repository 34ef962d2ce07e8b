"""``hpa_asyncio_tasks`` on ``/metrics`` counts the event loop's tasks that are not done, large
blocks a process frees go back to the system, and cyclic garbage is collected at least every two
minutes. ``run`` runs a role on the event loop ``--event-loop`` names."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
import uvloop
from prometheus_client import CollectorRegistry, generate_latest

from hpa.kube.runtime import (
    EVENT_LOOPS,
    FULL_COLLECTION_SECONDS,
    TASKS_METRIC,
    EventLoop,
    collect_periodically,
    register_task_gauge,
    run,
)

REPO = Path(__file__).resolve().parents[3]


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


# A fresh process (the allocator's state is per process): after one 256 KiB block is freed, glibc
# would serve the next ones from its heap; 200 of them (a TLS read buffer each) are allocated
# between small objects that stay, then freed, and the resident set is compared with before.
_BUFFERS = """
import sys
from hpa.kube.runtime import map_large_blocks

def rss_mb():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024

print(map_large_blocks())
first = bytearray(256 * 1024)
del first
before = rss_mb()
buffers, kept = [], []
for i in range(200):
    buffers.append(bytearray(256 * 1024))
    kept.append([i] * 40)
del buffers
print(rss_mb() - before)
"""


def _run_buffers(env: dict[str, str]) -> tuple[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _BUFFERS],
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    was_set, left = done.stdout.split()
    return was_set, float(left)


def test_freed_tls_sized_buffers_go_back_to_the_system() -> None:
    was_set, left_mb = _run_buffers({})
    assert was_set == "True"
    assert left_mb < 5  # 50 MB allocated and freed


def test_a_threshold_the_operator_set_is_left_alone() -> None:
    was_set, left_mb = _run_buffers({"MALLOC_MMAP_THRESHOLD_": str(4 * 1024 * 1024)})
    assert was_set == "False"
    assert left_mb > 25  # glibc keeps the 256 KiB buffers in its heap, behind the kept objects


class Cycle:
    def __init__(self) -> None:
        self.me = self


async def test_cyclic_garbage_is_collected_at_each_period_while_the_collector_waits() -> None:
    """Garbage in a reference cycle, which reference counting never frees, is gone after one
    period although CPython's own collector (off here, as it would be for hours in a role whose
    heap is frozen) did not run."""
    periods: list[float] = []
    alive: list[bool] = []
    garbage = Cycle()
    ref = weakref.ref(garbage)
    del garbage

    async def sleep(seconds: float) -> None:
        periods.append(seconds)
        alive.append(ref() is not None)
        if len(periods) == 2:
            raise asyncio.CancelledError

    enabled = gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(asyncio.CancelledError):
            await collect_periodically(sleep=sleep)
    finally:
        if enabled:
            gc.enable()
    assert periods == [FULL_COLLECTION_SECONDS, FULL_COLLECTION_SECONDS] == [120.0, 120.0]
    assert alive == [True, False]


@pytest.mark.parametrize(
    ("kind", "loop_type"), [("uvloop", uvloop.Loop), ("asyncio", asyncio.BaseEventLoop)]
)
def test_run_runs_the_role_on_the_loop_named_and_returns_its_result(
    kind: EventLoop, loop_type: type
) -> None:
    async def role() -> tuple[asyncio.AbstractEventLoop, int]:
        await asyncio.sleep(0)
        return asyncio.get_running_loop(), 7

    loop, result = run(role(), event_loop=kind)

    assert isinstance(loop, loop_type)
    assert result == 7
    assert loop.is_closed()
    assert EVENT_LOOPS[0] == "uvloop"
