"""What a long-running role sets up in its own process: its event loop, the asyncio task gauge,
the C allocator's treatment of large blocks, and a full collection of the cyclic garbage at least
every two minutes.

:func:`run` runs a role's main coroutine on the event loop its ``--event-loop`` flag names:
``uvloop`` (libuv's loop, written in Cython, with its own TLS) or ``asyncio`` (the standard
library's). Both run the same code: only the loop's own machinery (polling, callbacks, transports
and TLS) differs. On uvloop, ``hpa adapter`` spends 0.91 x the instructions per request of
asyncio's loop, and 0.93 x its CPU in paired full-size runs (docs/performance.md, "Fleet scale").

``hpa_asyncio_tasks`` is a gauge read at each scrape of ``/metrics``: the tasks of the process's
event loop that are not done yet (``asyncio.all_tasks``). A role's task count is set by what it
watches and serves (one task per informer, per open request, per background loop), so over a
long run it stays flat; a count that keeps rising is a task leak. ``bench/soak.py`` scrapes it.

:func:`map_large_blocks` fixes glibc's mmap threshold at 128 KiB (``mallopt(M_MMAP_THRESHOLD)``,
what ``MALLOC_MMAP_THRESHOLD_=131072`` does). glibc starts there but raises the threshold to the
size of each mmap-backed block freed, up to 32 MiB; after the first TLS connection closes, every
later connection's 256 KiB read buffer (``asyncio.sslproto.SSLProtocol``) and every large response
body come from the heap instead, and small long-lived objects allocated between them pin the
freed space: the resident set rises with each new high-water mark of connections and never
returns. With the threshold fixed, blocks of 128 KiB and more are mapped on allocation and
returned to the system when freed (docs/reliability.md has the soak's figures). A threshold the
operator set through ``MALLOC_MMAP_THRESHOLD_`` is left alone; on a C library without
``mallopt`` (musl) nothing changes.

:func:`collect_periodically` runs a full cyclic collection every
:data:`FULL_COLLECTION_SECONDS` (two minutes, Go's ``runtime.forcegcperiod``: kube-controller-
manager's runtime collects at least that often). CPython starts a full collection on its own only
once the objects promoted to the oldest generation since the last one exceed a quarter of those
that survived it. A role freezes its start-up heap (``gc.freeze``) and then promotes little, so
cyclic garbage that lived long enough to reach the oldest generation (an ended connection or
watch, an exception with its traceback) waited for hours: a 30-minute soak saw no full
collection at all, and one collection at its end freed four fifths of what the controller's
Python heap had grown by. A full collection walks only the objects that are not frozen.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import os
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, TypeVar

import uvloop
from prometheus_client import CollectorRegistry, Gauge

__all__ = [
    "EVENT_LOOPS",
    "FULL_COLLECTION_SECONDS",
    "MMAP_THRESHOLD_BYTES",
    "TASKS_METRIC",
    "collect_periodically",
    "map_large_blocks",
    "register_task_gauge",
    "run",
]

EventLoop = Literal["uvloop", "asyncio"]
EVENT_LOOPS: tuple[EventLoop, ...] = ("uvloop", "asyncio")
"""The values of ``--event-loop``; the first is the default."""

_T = TypeVar("_T")


def run(main: Coroutine[Any, Any, _T], *, event_loop: EventLoop = "uvloop") -> _T:
    """``asyncio.run(main)`` on a new loop of the kind ``event_loop`` names (``asyncio``: exactly
    ``asyncio.run``)."""
    factory = uvloop.new_event_loop if event_loop == "uvloop" else None
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


TASKS_METRIC = "hpa_asyncio_tasks"
MMAP_THRESHOLD_BYTES = 128 * 1024
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def register_task_gauge(
    registry: CollectorRegistry, loop: asyncio.AbstractEventLoop | None = None
) -> Gauge:
    """Register ``hpa_asyncio_tasks`` on ``registry``, counting the tasks of ``loop`` (default:
    the running loop) at each collection."""
    counted = loop if loop is not None else asyncio.get_running_loop()
    gauge = Gauge(
        TASKS_METRIC,
        "asyncio tasks of the process's event loop that are not done yet.",
        registry=registry,
    )
    gauge.set_function(lambda: len(asyncio.all_tasks(counted)))
    return gauge


def map_large_blocks(threshold_bytes: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix the C allocator's mmap threshold at ``threshold_bytes``; whether it was set."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold_bytes))


FULL_COLLECTION_SECONDS = 120.0
"""The longest a role goes without a full cyclic collection (Go's ``forcegcperiod``)."""


async def collect_periodically(
    every_seconds: float = FULL_COLLECTION_SECONDS,
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """A full cyclic collection every ``every_seconds``, until cancelled."""
    while True:
        await sleep(every_seconds)
        gc.collect()
