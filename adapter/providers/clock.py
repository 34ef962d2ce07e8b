"""The real clock for the providers: ``time.monotonic``, UTC wall time, ``asyncio.sleep``.

Upstream counterpart: ``k8s.io/utils/clock.RealClock``. Tests inject ``tests.fakes.clock``.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()  # the event loop's clock, readable from any thread

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))
