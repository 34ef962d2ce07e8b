"""An asyncio event loop in a daemon thread, so synchronous tests can drive asynchronous helpers
(the fault proxy, the Prometheus front, the informer mirror)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["LoopThread"]


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], *, timeout: float = 30) -> T:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def stop(self, closing: Coroutine[Any, Any, None]) -> None:
        """Run ``closing`` on the loop, then stop the loop and its thread (once)."""
        if not self._thread.is_alive():
            closing.close()
            return
        self.run(closing)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
