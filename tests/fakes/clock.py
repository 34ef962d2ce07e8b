"""A hand-driven clock for ``hpa.kube.clock.Clock``: time moves only when a test advances it.

``sleep`` parks the caller on a future due at ``monotonic() + seconds``; ``advance`` moves time
forward deadline by deadline, waking each sleeper in order and letting the loop run the woken
tasks before going on, so a test sees the same interleaving the real clock would produce.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """Fake ``Clock``: starts at ``start_seconds`` (monotonic) and ``EPOCH`` + that (wall)."""

    def __init__(self, start_seconds: float = 1000.0, *, auto_advance: bool = False) -> None:
        """With ``auto_advance`` every ``sleep`` moves time forward at once and returns: for
        tests that only check how long the code under test chose to wait."""
        self.auto_advance = auto_advance
        self._now_seconds = start_seconds
        self._start_seconds = start_seconds
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()
        self.sleep_calls: list[float] = []

    def monotonic(self) -> float:
        return self._now_seconds

    def now(self) -> datetime:
        return EPOCH + timedelta(seconds=self._now_seconds - self._start_seconds)

    async def sleep(self, seconds: float) -> None:
        self.sleep_calls.append(seconds)
        if self.auto_advance:
            self._now_seconds += max(0.0, seconds)
            await asyncio.sleep(0)
            return
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now_seconds + seconds, next(self._sequence), future))
        await future

    @property
    def sleeper_count(self) -> int:
        return sum(1 for _, _, future in self._sleepers if not future.done())

    async def settle(self, rounds: int = 20) -> None:
        """Let ready tasks run without moving time."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking sleepers in deadline order."""
        target = self._now_seconds + seconds
        await self.settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            due, _, future = heapq.heappop(self._sleepers)
            self._now_seconds = max(self._now_seconds, due)
            if not future.done():
                future.set_result(None)
            await self.settle()
        self._now_seconds = target
        await self.settle()
