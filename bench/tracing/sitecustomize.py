"""In-process probes of a Python process the soak starts (``bench/soak.py``).

Python imports ``sitecustomize`` at start-up from ``sys.path``; the soak puts this directory on
``PYTHONPATH`` of the processes it starts. Without any of the variables below this module does
nothing.

``HPA_PROBE_DIR``: a daemon thread appends a row to ``DIR/PID.probe.csv`` every
``HPA_PROBE_SECONDS`` (seconds since the process started, then the figures of
:data:`PROBE_COLUMNS`): pymalloc's arenas and the bytes in its allocated blocks (parsed from
``sys._debugmallocstats()``, which writes to file descriptor 2: the probe points that descriptor
at a scratch file for the call, so a log line the main thread writes in that instant is lost),
the number of allocated blocks, glibc's heap in use, free and mapped (``mallinfo2``), the objects
the cyclic collector tracks and those it froze, asyncio's ``SSLProtocol`` and ``Task`` objects
among the tracked ones, and the traced heap when tracing. Arenas (or glibc's free bytes) that grow
while allocated bytes stay flat are fragmentation; allocated bytes that grow are objects kept.
Under tracing pymalloc's statistics are not available (NaN). When a file ``DIR/collect-PID``
appears, the next row is taken right after one full collection (``gc.collect()``), whose count
of objects found unreachable is in ``collected``, and the file is removed: objects that a
collection frees were cyclic garbage waiting for one, not objects kept.

``HPA_TRACEMALLOC_DIR``: from ``HPA_TRACEMALLOC_START`` seconds on (start-up under tracing is
twenty times slower, and only what grows later matters), the process traces its allocations
(``tracemalloc``, ``HPA_TRACEMALLOC_FRAMES`` frames per traceback), and a daemon thread writes a
snapshot to ``DIR/PID-SECONDS.snapshot`` every ``HPA_TRACEMALLOC_SECONDS``.
"""

from __future__ import annotations

import ctypes
import gc
import os
import re
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

PROBE_COLUMNS = (
    "arenas",
    "arena_mb",
    "allocated_block_mb",
    "allocated_blocks",
    "malloc_in_use_mb",
    "malloc_free_mb",
    "malloc_mapped_mb",
    "gc_objects",
    "gc_frozen",
    "ssl_protocols",
    "tasks",
    "traced_mb",
    "gc_full_collections",
    "collected",
)

COUNTED_TYPES = {"SSLProtocol": "ssl_protocols", "Task": "tasks"}
"""Objects of these types among those the collector tracks (not frozen), by type name."""


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo() -> tuple[float, float, float]:
    """glibc's ``mallinfo2()``: bytes in use and free in its heaps (``[heap]`` and its arenas for
    threads) and bytes in blocks mapped on their own, in MB (NaN without glibc)."""
    try:
        function = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return float("nan"), float("nan"), float("nan")
    function.restype = _MallInfo2
    info = function()
    return info.uordblks / 2**20, info.fordblks / 2**20, info.hblkhd / 2**20


_BEGAN = time.monotonic()


def _dump_every(directory: Path, *, start: float, seconds: float, frames: int) -> None:
    pid = os.getpid()
    time.sleep(start)
    tracemalloc.start(frames)
    while True:
        time.sleep(seconds)
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__),)
        )
        name = f"{pid}-{time.monotonic() - _BEGAN:06.0f}"
        snapshot.dump(str(directory / f"{name}.part"))
        (directory / f"{name}.part").rename(directory / f"{name}.snapshot")


def _malloc_stats() -> str:
    with tempfile.TemporaryFile("w+") as scratch:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(scratch.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        scratch.seek(0)
        return scratch.read()


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text, re.MULTILINE)
    return float(match.group(1).replace(",", "")) if match else float("nan")


def probe() -> dict[str, float]:
    """The figures of :data:`PROBE_COLUMNS` now."""
    stats = _malloc_stats()
    in_use, free, mapped = _mallinfo()
    objects = gc.get_objects()
    counted = dict.fromkeys(COUNTED_TYPES.values(), 0.0)
    for obj in objects:
        column = COUNTED_TYPES.get(type(obj).__name__)
        if column is not None:
            counted[column] += 1
    arenas = _number(r"^(\d+) arenas \*", stats)
    arena_bytes = _number(r"^\d+ arenas \* (\d+) bytes/arena", stats)
    return {
        "arenas": arenas,
        "arena_mb": arenas * arena_bytes / 2**20,
        "allocated_block_mb": _number(r"^# bytes in allocated blocks\s+=\s+([\d,]+)", stats)
        / 2**20,
        "allocated_blocks": float(sys.getallocatedblocks()),
        "malloc_in_use_mb": in_use,
        "malloc_free_mb": free,
        "malloc_mapped_mb": mapped,
        "gc_objects": float(len(objects)),
        "gc_frozen": float(gc.get_freeze_count()),
        **counted,
        "gc_full_collections": float(gc.get_stats()[2]["collections"]),
        "collected": float("nan"),
        "traced_mb": tracemalloc.get_traced_memory()[0] / 2**20
        if tracemalloc.is_tracing()
        else float("nan"),
    }


def _probe_every(directory: Path, *, seconds: float) -> None:
    path = directory / f"{os.getpid()}.probe.csv"
    with path.open("w", buffering=1) as out:
        out.write(",".join(("seconds", *PROBE_COLUMNS)) + "\n")
        while True:
            request = directory / f"collect-{os.getpid()}"
            collected = float("nan")
            if request.exists():
                collected = float(gc.collect())
                request.unlink()
            figures = probe()
            figures["collected"] = collected
            out.write(
                f"{time.monotonic() - _BEGAN:.1f},"
                + ",".join(f"{figures[column]:.4f}" for column in PROBE_COLUMNS)
                + "\n"
            )
            time.sleep(seconds)


def _in_background(variable: str, target: Callable[..., None], **kwargs: float) -> None:
    """Run ``target(DIR, **kwargs)`` in a daemon thread when ``variable`` names a ``DIR``."""
    directory = os.environ.get(variable)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        threading.Thread(
            target=target, args=(Path(directory),), kwargs=kwargs, name=variable, daemon=True
        ).start()


def _start() -> None:
    _in_background(
        "HPA_PROBE_DIR", _probe_every, seconds=float(os.environ.get("HPA_PROBE_SECONDS", "30"))
    )
    _in_background(
        "HPA_TRACEMALLOC_DIR",
        _dump_every,
        start=float(os.environ.get("HPA_TRACEMALLOC_START", "60")),
        seconds=float(os.environ.get("HPA_TRACEMALLOC_SECONDS", "300")),
        frames=int(os.environ.get("HPA_TRACEMALLOC_FRAMES", "8")),
    )


_start()
