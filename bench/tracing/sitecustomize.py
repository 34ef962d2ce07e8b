"""Heap snapshots of a Python process the soak starts (``bench/soak.py --tracemalloc``).

Python imports ``sitecustomize`` at start-up from ``sys.path``; the soak puts this directory on
``PYTHONPATH`` of the process it wants traced only, with ``HPA_TRACEMALLOC_DIR`` set. The process
then traces its allocations (``tracemalloc``, ``HPA_TRACEMALLOC_FRAMES`` frames per traceback)
and a daemon thread writes a snapshot to ``DIR/PID-N.snapshot`` every
``HPA_TRACEMALLOC_SECONDS``. Without ``HPA_TRACEMALLOC_DIR`` this module does nothing.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path


def _dump_every(directory: Path, seconds: float) -> None:
    pid = os.getpid()
    number = 0
    while True:
        time.sleep(seconds)
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__),)
        )
        part = directory / f"{pid}-{number:03d}.part"
        snapshot.dump(str(part))
        part.rename(directory / f"{pid}-{number:03d}.snapshot")
        number += 1


def _start() -> None:
    directory = os.environ.get("HPA_TRACEMALLOC_DIR")
    if not directory:
        return
    tracemalloc.start(int(os.environ.get("HPA_TRACEMALLOC_FRAMES", "8")))
    seconds = float(os.environ.get("HPA_TRACEMALLOC_SECONDS", "300"))
    Path(directory).mkdir(parents=True, exist_ok=True)
    threading.Thread(
        target=_dump_every, args=(Path(directory), seconds), name="tracemalloc", daemon=True
    ).start()


_start()
