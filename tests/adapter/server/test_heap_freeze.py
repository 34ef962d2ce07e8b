"""The adapter freezes its heap again once the informers' first lists are in
(``freeze_when``), so full collections do not walk the pod cache."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from adapter.server.cli import freeze_when


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    """Each test starts with nothing frozen and the default thresholds, and leaves it so."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class Cached:
    """A stand-in for an informer's record (tracked by the collector)."""


async def test_what_the_first_lists_brought_is_frozen_once_they_are_in() -> None:
    synced = asyncio.Event()
    task = asyncio.create_task(freeze_when(synced.wait()))
    await asyncio.sleep(0)
    cache = [Cached() for _ in range(1000)]  # the list arriving
    assert gc.get_freeze_count() == 0
    synced.set()
    await task
    frozen = gc.get_freeze_count()
    assert frozen >= len(cache)
    assert not any(item is cache[0] for item in gc.get_objects())  # not walked any more
