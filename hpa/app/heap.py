"""The cyclic garbage collector around a controller's first full pass.

CPython's cyclic collector runs a full collection each time the objects that survived younger
collections grew by a quarter, and every full collection walks every tracked object. A
controller's first full pass grows the heap from nothing: the informers' caches (100,000 pods,
10,000 HPAs) and then each HPA's state after its first reconcile. The collector walked that
growing heap again and again, and after the pass it walked the caches at every full collection
although they live as long as the process: at 10,000 HPAs of 10 pods about a third of the
controller's CPU seconds up to the end of its first pass went to the collector
(``bench/controller.py --cold-start``), while it found almost no garbage (a few thousand
objects).

:func:`pause_then_freeze` pauses the collector until the first pass is done (bounded in time: a
pass that does not end, for instance while another replica holds the Lease or an API server
refuses the list, keeps it paused for at most ``pause_seconds``), then moves every object alive
to the permanent generation (``gc.freeze``), which later collections do not walk, before the
collector is back (everything allocated during the pause sits in the youngest generation, so
the collector's first young collection would walk the whole heap), and runs one full collection
over what is not frozen (nearly nothing). Without that collection the collector
would keep measuring the oldest generation against the heap it saw before the freeze and run its
next full collection only after a quarter of that heap had been promoted again, leaving older
cyclic garbage (ended connections, watches, exceptions with their tracebacks) in memory for
hours.

The heap is not collected before the freeze. That collection would walk the whole heap once
more (about a second at 10,000 HPAs of 10 pods, on the event loop, just as the first pass ends)
to reclaim the cyclic garbage the pass made while the collector was paused: a few thousand
one-time objects (ended list requests, exceptions with their tracebacks). They are frozen with
the live objects instead, once; that amount does not grow with time. Reference counting still
frees every object as usual; only objects in reference cycles that are alive or already garbage
at the freeze are never reclaimed (the informers' records and the controller's per-HPA state are
not cyclic).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Iterable

import structlog

log = structlog.get_logger("hpa.app.heap")

__all__ = ["DEFAULT_PAUSE_SECONDS", "FirstPass", "pause_then_freeze"]

DEFAULT_PAUSE_SECONDS = 120.0
"""The longest the collector stays paused waiting for the first pass."""


async def pause_then_freeze(
    done: Callable[[], Awaitable[object]], *, pause_seconds: float = DEFAULT_PAUSE_SECONDS
) -> None:
    """Await ``done()`` with the cyclic collector paused for at most ``pause_seconds``, then
    (still awaiting ``done()`` if it took longer) freeze the heap (logged as
    ``first_pass_heap_frozen``) and collect what is not frozen. The collector's previous
    state (enabled or not) is restored before the pause ends, whatever ends it (cancellation
    included)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            async with asyncio.timeout(pause_seconds):
                await done()
        except TimeoutError:
            pass  # the collector comes back during the pass; the freeze waits for its end
        else:
            # before the collector is back: every object allocated during the pause is in its
            # youngest generation, so its first collection would walk the whole heap
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
    await done()
    gc.freeze()
    # The collector starts a full collection only once the objects promoted to the oldest
    # generation since the last one exceed a quarter of those that survived it; that last one
    # saw the whole heap, frozen now. A collection of the (empty) oldest generation resets that
    # count to the unfrozen survivors, or cyclic garbage old enough to reach the oldest
    # generation (a connection or a watch that ended after minutes) would wait for promotions
    # of a quarter of the frozen heap: hours.
    gc.collect()
    log.info("first_pass_heap_frozen", frozen=gc.get_freeze_count())


class FirstPass:
    """The first full pass of a work queue: done once every key known when it started has been
    processed (or was already gone) at least once."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self._pending: set[str] | None = None

    def start(self, keys: Iterable[str]) -> None:
        """The pass covers ``keys`` (the informer's keys when its cache synced)."""
        self._pending = set(keys)
        if not self._pending:
            self.done.set()

    def processed(self, key: str) -> None:
        pending = self._pending
        if pending is None or self.done.is_set():
            return
        pending.discard(key)
        if not pending:
            self._pending = None
            self.done.set()
