"""Simulator tests: the controller's per-reconcile logs are silenced (and restored afterwards)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog

from hpa.sim.commands import quiet_controller_logs


@pytest.fixture(autouse=True)
def _quiet_controller_logs() -> Iterator[None]:
    saved = structlog.get_config()
    quiet_controller_logs()
    yield
    structlog.configure(**saved)
