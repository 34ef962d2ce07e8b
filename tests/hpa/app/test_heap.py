"""The cyclic collector around the controller's first full pass (``hpa.app.heap``)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from hpa.app.heap import FirstPass, pause_then_freeze


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    """Each test starts with the collector enabled, CPython's default thresholds and nothing
    frozen, and leaves the collector as it found it."""
    enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    gc.unfreeze()
    gc.enable()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


async def test_the_collector_is_paused_until_the_pass_is_done_then_the_heap_is_frozen() -> None:
    done = asyncio.Event()
    task = asyncio.create_task(pause_then_freeze(done.wait))
    await asyncio.sleep(0)
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0
    done.set()
    await task
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


async def test_a_pass_that_does_not_end_pauses_the_collector_no_longer_than_the_bound() -> None:
    done = asyncio.Event()
    task = asyncio.create_task(pause_then_freeze(done.wait, pause_seconds=0.0))
    for _ in range(5):  # the bound of 0 s expires on the next turns of the loop
        await asyncio.sleep(0)
    assert gc.isenabled()
    assert not task.done()
    assert gc.get_freeze_count() == 0  # nothing is frozen before the pass ends
    done.set()
    await task
    assert gc.get_freeze_count() > 0


async def test_cancelling_restores_the_collector_and_freezes_nothing() -> None:
    task = asyncio.create_task(pause_then_freeze(asyncio.Event().wait))
    await asyncio.sleep(0)
    assert not gc.isenabled()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


async def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    done = asyncio.Event()
    done.set()
    await pause_then_freeze(done.wait)
    assert not gc.isenabled()


def test_the_first_pass_ends_when_every_key_known_at_its_start_was_processed() -> None:
    first = FirstPass()
    first.processed("ns/a")  # before the caches synced: not part of the pass yet
    first.start(["ns/a", "ns/b"])
    first.processed("ns/a")
    first.processed("ns/a")
    first.processed("ns/other")
    assert not first.done.is_set()
    first.processed("ns/b")
    assert first.done.is_set()


def test_a_first_pass_over_no_keys_is_done_at_once() -> None:
    first = FirstPass()
    first.start([])
    assert first.done.is_set()


class _Node:
    """An object in a reference cycle (only the cyclic collector frees it)."""

    def __init__(self) -> None:
        self.me = self


async def test_the_pass_ends_without_a_walk_of_the_whole_heap() -> None:
    """No collection after the pass walks what the pass built: the heap is frozen before the
    collector is back (every object allocated during the pause sits in its youngest generation,
    so its first collection would walk them all), and the one full collection after the pass
    runs over what is not frozen. The cyclic garbage the pass left while the collector was
    paused is frozen with the heap, once."""
    collections: list[tuple[int, int]] = []

    def started(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append((info["generation"], gc.get_freeze_count()))

    done = asyncio.Event()
    task = asyncio.create_task(pause_then_freeze(done.wait))
    await asyncio.sleep(0)
    heap = [_Node() for _ in range(20_000)]  # what the pass built, while the collector is paused
    garbage = weakref.ref(_Node())  # cyclic garbage made while the collector was paused
    gc.callbacks.append(started)
    try:
        done.set()
        await task
        heap.append(_Node())  # the collector's first allocations after the pass
    finally:
        gc.callbacks.remove(started)
    assert collections, "the collector ran after the pass"
    assert all(frozen >= len(heap) - 1 for _, frozen in collections), collections
    assert [generation for generation, _ in collections].count(2) == 1
    assert garbage() is not None  # frozen with the heap, once
    del heap


class _Old:
    """An object in a reference cycle that lives long enough to reach the oldest generation."""

    def __init__(self) -> None:
        self.me = self


def _churn(allocations: int) -> None:
    """Short-lived tracked objects: the collector's own trigger, as a running process makes."""
    for _ in range(allocations // 800):
        batch: list[list[int]] = [
            [] for _ in range(800)
        ]  # the collector counts allocations net of frees
        del batch


async def test_old_cyclic_garbage_after_the_freeze_is_collected_by_the_collector_itself() -> None:
    heap: list[list[dict[str, int]]] = [
        [{} for _ in range(10)] for _ in range(40_000)
    ]  # a large live heap, frozen below
    done = asyncio.Event()
    done.set()
    await pause_then_freeze(done.wait)
    old = [_Old() for _ in range(2_000)]
    _churn(30_000)  # kept through several young collections: promoted to the oldest generation
    refs = [weakref.ref(item) for item in old]
    del old
    _churn(300_000)  # ten young collections per full one
    assert sum(ref() is not None for ref in refs) == 0
    del heap
