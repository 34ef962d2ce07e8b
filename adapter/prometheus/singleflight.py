"""Coalescing of concurrent identical calls, with reference-counted cancellation.

Upstream counterpart: ``golang.org/x/sync/singleflight.Group.Do`` (not used by
prometheus-adapter, which sends every query; coalescing is this adapter's addition).

Deliberate deviations from Go's ``Group``: a caller that is cancelled stops waiting at once, and
the shared call itself is cancelled only when its last waiter has gone, so one impatient caller
never fails the others, and an abandoned call never keeps running (or holding a connection).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class _Call(Generic[V]):
    task: asyncio.Task[V]
    waiters: int = 0


class SingleFlight(Generic[K, V]):
    """One in-flight call per key; later callers with the same key share its result."""

    def __init__(self) -> None:
        self._calls: dict[K, _Call[V]] = {}

    def in_flight(self) -> int:
        return len(self._calls)

    async def do(
        self, key: K, call: Callable[[], Awaitable[V]], *, name: str = ""
    ) -> tuple[V, bool]:
        """Run ``call()`` unless a call for ``key`` is running; returns (value, shared).

        ``shared`` is true for callers that joined a call started by someone else.
        """
        entry = self._calls.get(key)
        shared = entry is not None
        if entry is None:
            entry = _Call(asyncio.ensure_future(call()))
            if name:
                entry.task.set_name(name)
            self._calls[key] = entry
            entry.task.add_done_callback(self._forget(key, entry))
        entry.waiters += 1
        try:
            value = await asyncio.shield(entry.task)
        except asyncio.CancelledError:
            self._leave(key, entry)
            raise
        except BaseException:
            entry.waiters -= 1
            raise
        entry.waiters -= 1
        return value, shared

    def _leave(self, key: K, entry: _Call[V]) -> None:
        entry.waiters -= 1
        if entry.waiters <= 0 and not entry.task.done():
            entry.task.cancel()
            if self._calls.get(key) is entry:
                del self._calls[key]

    def _forget(self, key: K, entry: _Call[V]) -> Callable[[asyncio.Task[V]], None]:
        def done(task: asyncio.Task[V]) -> None:
            if self._calls.get(key) is entry:
                del self._calls[key]
            # Mark the outcome as seen: waiters that left early must not cause
            # "exception was never retrieved" warnings.
            if not task.cancelled():
                task.exception()

        return done
