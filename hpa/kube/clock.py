"""Time for the I/O shell: one small port so tests control time without sleeping.

Upstream counterpart: ``k8s.io/utils/clock`` (``clock.Clock``: ``Now``, ``Since``, ``After``),
which client-go's leader election, work queue and reflector take by injection.

Deliberate deviations: one async ``sleep`` replaces Go's timers and channels, and two readings are
offered: ``monotonic`` for deadlines, backoff and rate limits, ``now`` (aware UTC) for the
timestamps we write into objects (Lease ``renewTime``, Event ``lastTimestamp``).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """The time source of every loop in ``hpa.kube`` and ``hpa.controllers``."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (for deadlines and intervals)."""
        ...

    def now(self) -> datetime:
        """The wall-clock time, timezone-aware UTC (for timestamps written to the API)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the caller for ``seconds`` on this clock (0 or less yields once)."""
        ...


class SystemClock:
    """The real clock: the running loop's monotonic time, UTC wall time, ``asyncio.sleep``."""

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def parse_time(text: str | None) -> datetime | None:
    """Parse ``metav1.Time``/``MicroTime`` (RFC 3339); ``None`` or empty gives ``None``."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
