"""Stopping a role cleanly on SIGTERM or SIGINT.

The signal cancels the role's main task, so its ``TaskGroup`` unwinds every task; ``requested``
tells a cancellation asked for by a signal (a clean stop, exit 0) from any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger("hpa.app")


class StopSignals:
    """Install on the running loop from the task to cancel (the role's main task)."""

    def __init__(self) -> None:
        self.requested = False
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, self._stop)

    def _stop(self) -> None:
        self.requested = True
        if self._task is not None:
            self._task.cancel()


class LeaseLostError(Exception):
    """The role lost its Lease; the process ends so a standby takes over (as
    kube-controller-manager and upstream's VPA do)."""


async def run_until_stopped(
    run: Callable[[], Awaitable[None]],
    *,
    role: str,
    close: Callable[[], Awaitable[None]],
) -> int:
    """Run the role's main coroutine in this task: 0 after a SIGTERM/SIGINT stop, 1 when it lost
    its Lease (``LeaseLostError`` from its ``TaskGroup``); ``close`` runs either way."""
    signals = StopSignals()
    lost_lease = False
    try:
        try:
            await run()
        except* LeaseLostError as group:
            lost_lease = True
            log.error("lost_lease", role=role, error=str(group.exceptions[0]))
    except asyncio.CancelledError:
        if not signals.requested:
            raise
        log.info("stopped", role=role)
    finally:
        await close()
    return 1 if lost_lease else 0
