"""The cyclic garbage collector around a controller's first list of the cluster.

CPython's cyclic collector runs a full collection each time the objects that survived younger
collections grow by a quarter; every full collection walks every tracked object. Loading
100,000 pods into the informers' caches grows the heap from nothing to millions of objects, so
the collector walked it again and again, and after the load every full collection walked the
caches once more although they live until the process ends: at 5,000 HPAs of 10 pods, two
fifths of the controller's CPU seconds up to its first full reconcile pass went to the
collector (``bench/controller.py --cold-start``).

:func:`load_then_freeze` pauses the collector while the caches fill (bounded in time: a sync
that does not finish, for instance an API server that refuses the list, leaves it paused no
longer than ``pause_seconds``), then moves every object alive at that moment to the
permanent generation (``gc.freeze``), which later collections do not walk. Reference counting
still frees every object as usual; only objects in reference cycles that were alive at the
freeze and become garbage later are not reclaimed (the informer records are not cyclic).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable

__all__ = ["DEFAULT_PAUSE_SECONDS", "load_then_freeze"]

DEFAULT_PAUSE_SECONDS = 120.0
"""The longest the collector stays paused while the first lists load."""


async def load_then_freeze(
    synced: Callable[[], Awaitable[None]], *, pause_seconds: float = DEFAULT_PAUSE_SECONDS
) -> None:
    """Await ``synced()`` with the cyclic collector paused for at most ``pause_seconds``, then
    (still awaiting ``synced()`` if it took longer) freeze the heap. The collector's previous
    state (enabled or not) is restored before this returns or raises."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(pause_seconds):
                await synced()
    finally:
        if enabled:
            gc.enable()
    await synced()
    gc.freeze()
