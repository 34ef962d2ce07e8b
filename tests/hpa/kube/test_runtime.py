"""``hpa_asyncio_tasks`` on ``/metrics`` counts the event loop's tasks that are not done, and
large blocks a process frees go back to the system."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from hpa.kube.runtime import TASKS_METRIC, register_task_gauge

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
