"""SIGTERM stops a role cleanly: its main task is cancelled and the stop is known as asked for."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from hpa.app.signals import StopSignals


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_cancels_the_main_task_as_a_requested_stop(signum: int) -> None:
    async def role() -> bool:
        signals = StopSignals()
        try:
            os.kill(os.getpid(), signum)
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return signals.requested
        return False

    try:
        assert await asyncio.create_task(role())
    finally:
        loop = asyncio.get_running_loop()
        loop.remove_signal_handler(signal.SIGTERM)
        loop.remove_signal_handler(signal.SIGINT)


async def test_another_cancellation_is_not_a_requested_stop() -> None:
    started = asyncio.Event()
    seen: list[bool] = []

    async def role() -> None:
        signals = StopSignals()
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append(signals.requested)
            raise

    task = asyncio.create_task(role())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    loop = asyncio.get_running_loop()
    loop.remove_signal_handler(signal.SIGTERM)
    loop.remove_signal_handler(signal.SIGINT)
    assert seen == [False]
