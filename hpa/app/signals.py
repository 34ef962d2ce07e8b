"""Stopping a role cleanly on SIGTERM or SIGINT.

The signal cancels the role's main task, so its ``TaskGroup`` unwinds every task; ``requested``
tells a cancellation asked for by a signal (a clean stop, exit 0) from any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal


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
