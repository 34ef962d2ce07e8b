"""Heap snapshots of a Python process the soak starts (``bench/soak.py --tracemalloc``).

Python imports ``sitecustomize`` at start-up from ``sys.path``; the soak puts this directory on
``PYTHONPATH`` of the process it wants traced only, with ``HPA_TRACEMALLOC_DIR`` set. The process
then, from ``HPA_TRACEMALLOC_START`` seconds on (start-up under tracing is twenty times slower,
and only what grows later matters), traces its allocations (``tracemalloc``,
``HPA_TRACEMALLOC_FRAMES`` frames per traceback), and a daemon thread writes a snapshot to
``DIR/PID-SECONDS.snapshot`` (seconds since the process started) every
``HPA_TRACEMALLOC_SECONDS``. Without ``HPA_TRACEMALLOC_DIR`` this module does nothing.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path


def _dump_every(directory: Path, *, start: float, seconds: float, frames: int) -> None:
    began = time.monotonic()
    pid = os.getpid()
    time.sleep(start)
    tracemalloc.start(frames)
    while True:
        time.sleep(seconds)
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__),)
        )
        name = f"{pid}-{time.monotonic() - began:06.0f}"
        snapshot.dump(str(directory / f"{name}.part"))
        (directory / f"{name}.part").rename(directory / f"{name}.snapshot")


def _start() -> None:
    directory = os.environ.get("HPA_TRACEMALLOC_DIR")
    if not directory:
        return
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
