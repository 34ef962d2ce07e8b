"""In-process probes of a Python process the soak starts (``bench/soak.py``).

Python imports ``sitecustomize`` at start-up from ``sys.path``; the soak puts this directory on
``PYTHONPATH`` of the processes it starts. Without any of the variables below this module does
nothing.

``HPA_PROBE_DIR``: a daemon thread appends a row to ``DIR/PID.probe.csv`` every
``HPA_PROBE_SECONDS`` (seconds since the process started, then the figures of
:data:`PROBE_COLUMNS`): pymalloc's arenas and the bytes in its allocated blocks (parsed from
``sys._debugmallocstats()``, which writes to file descriptor 2: the probe points that descriptor
at a scratch file for the call, so a log line the main thread writes in that instant is lost),
the number of allocated blocks, the objects the cyclic collector tracks and those it froze, and
the traced heap when tracing. Arenas that grow while allocated bytes stay flat are fragmentation;
allocated bytes that grow are objects kept.

``HPA_TRACEMALLOC_DIR``: from ``HPA_TRACEMALLOC_START`` seconds on (start-up under tracing is
twenty times slower, and only what grows later matters), the process traces its allocations
(``tracemalloc``, ``HPA_TRACEMALLOC_FRAMES`` frames per traceback), and a daemon thread writes a
snapshot to ``DIR/PID-SECONDS.snapshot`` every ``HPA_TRACEMALLOC_SECONDS``.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

PROBE_COLUMNS = (
    "arenas",
    "arena_mb",
    "allocated_block_mb",
    "allocated_blocks",
    "gc_objects",
    "gc_frozen",
    "traced_mb",
)

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
    arenas = _number(r"^(\d+) arenas \*", stats)
    arena_bytes = _number(r"^\d+ arenas \* (\d+) bytes/arena", stats)
    return {
        "arenas": arenas,
        "arena_mb": arenas * arena_bytes / 2**20,
        "allocated_block_mb": _number(r"^# bytes in allocated blocks\s+=\s+([\d,]+)", stats)
        / 2**20,
        "allocated_blocks": float(sys.getallocatedblocks()),
        "gc_objects": float(len(gc.get_objects())),
        "gc_frozen": float(gc.get_freeze_count()),
        "traced_mb": tracemalloc.get_traced_memory()[0] / 2**20
        if tracemalloc.is_tracing()
        else float("nan"),
    }


def _probe_every(directory: Path, *, seconds: float) -> None:
    path = directory / f"{os.getpid()}.probe.csv"
    with path.open("w", buffering=1) as out:
        out.write(",".join(("seconds", *PROBE_COLUMNS)) + "\n")
        while True:
            figures = probe()
            out.write(
                f"{time.monotonic() - _BEGAN:.1f},"
                + ",".join(f"{figures[column]:.4f}" for column in PROBE_COLUMNS)
                + "\n"
            )
            time.sleep(seconds)


def _start() -> None:
    probes = os.environ.get("HPA_PROBE_DIR")
    if probes:
        Path(probes).mkdir(parents=True, exist_ok=True)
        threading.Thread(
            target=_probe_every,
            args=(Path(probes),),
            kwargs={"seconds": float(os.environ.get("HPA_PROBE_SECONDS", "30"))},
            name="probe",
            daemon=True,
        ).start()
    directory = os.environ.get("HPA_TRACEMALLOC_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        threading.Thread(
            target=_dump_every,
            args=(Path(directory),),
            kwargs={
                "start": float(os.environ.get("HPA_TRACEMALLOC_START", "60")),
                "seconds": float(os.environ.get("HPA_TRACEMALLOC_SECONDS", "300")),
                "frames": int(os.environ.get("HPA_TRACEMALLOC_FRAMES", "8")),
            },
            name="tracemalloc",
            daemon=True,
        ).start()


_start()
