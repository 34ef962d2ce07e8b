"""What a long-running role sets up in its own process: the asyncio task gauge, and the C
allocator's treatment of large blocks.

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
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os

from prometheus_client import CollectorRegistry, Gauge

__all__ = ["MMAP_THRESHOLD_BYTES", "TASKS_METRIC", "map_large_blocks", "register_task_gauge"]

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
