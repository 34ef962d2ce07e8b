"""A progress bar for long simulations, on stderr, only when asked or when stderr is a terminal.

Upstream counterpart: none. The bar shows virtual time done out of the trace's duration and is
redrawn at most ten times a second of wall time (wall time is read here, in the command line's
shell, never by the simulation).

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ["ProgressBar"]

_WIDTH = 30


class ProgressBar:
    """``update(t)`` as virtual time advances; ``close()`` ends the line."""

    def __init__(self, total_seconds: float, *, stream: TextIO, enabled: bool) -> None:
        self.total_seconds = max(total_seconds, 1e-9)
        self.stream = stream
        self.enabled = enabled
        self._last_draw = -1.0
        self.draws = 0

    def update(self, t_seconds: float, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < 0.1:
            return
        self._last_draw = now
        share = min(1.0, max(0.0, t_seconds / self.total_seconds))
        filled = round(share * _WIDTH)
        bar = "#" * filled + "." * (_WIDTH - filled)
        self.stream.write(f"\rsimulating [{bar}] {100 * share:5.1f}% of virtual time")
        self.stream.flush()
        self.draws += 1

    def close(self) -> None:
        if not self.enabled:
            return
        self.update(self.total_seconds, force=True)
        self.stream.write("\n")
        self.stream.flush()
