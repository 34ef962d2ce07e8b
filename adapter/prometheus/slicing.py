"""Large answers worked through a slice at a time on the event loop.

No upstream counterpart (Go decodes on its own threads). A batched evaluation's answer holds a
sample per object: at 100,000 pods (and the staleness probe) about 200,000 samples, 20 MB of
JSON. Decoding it in one call, or in a worker thread, stalls the serving loop for as long: a
C call (``orjson.loads``) holds the interpreter lock throughout, and a busy worker thread makes
the loop wait up to the switch interval (5 ms) each time it takes the lock back after a system
call, several times per request. So such answers are decoded (``PrometheusClient``) and indexed
(``adapter.providers.batch``) in slices of about a millisecond on the loop, which serves the
requests waiting between two slices.

The cyclic garbage collector is paused during a slice: the objects a slice allocates are
acyclic and most are freed by the end of the slice, so a collection in the middle of one would
only promote them to the older generations, where they count towards the next full collection
(which walks every object of the process: a pause of hundreds of milliseconds with a large pod
cache).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator

SLICE_BYTES = 64 << 10
"""JSON bytes decoded per slice (about 600 samples)."""
SLICE_SAMPLES = 1000
"""Samples indexed per slice."""


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for one synchronous slice (left as it was found)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


async def between_slices() -> None:
    """Let the event loop run what is ready before the next slice."""
    await asyncio.sleep(0)
