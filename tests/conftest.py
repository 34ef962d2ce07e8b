"""The session-scoped `lab` fixture for the tests that need the local lab (tests/e2e, tests/faults),
and the logging configuration every test starts from.

One lab per test session: starting it costs tens of seconds, so tests share it and each works
in its own namespace. When a test that used the lab fails, its report gets the tail of every
component's log.

A test that runs a command's ``main`` in-process configures logging as the command does
(structlog and the root logger's handler); each test's configuration is undone after it, so the
next test's captured output holds only its own lines. Such a command also tunes the process's
cyclic garbage collector once it serves (thresholds, a frozen heap, the collector switched off
for a pass); each test's settings are undone after it too, so no test runs under another's.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest
import structlog

from tests.lab.controlplane import WRITES_AUDIT_POLICY, ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig

E2E_NODE_COUNT = 3


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**config)


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    thresholds, enabled, frozen = gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if frozen == 0 and gc.get_freeze_count() > 0:
            gc.unfreeze()
        if enabled:
            gc.enable()
        else:
            gc.disable()


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    config = LabConfig(
        control_plane=ControlPlaneConfig(
            node_count=E2E_NODE_COUNT, audit_policy=WRITES_AUDIT_POLICY
        )  # the audit log tells the controller replicas' writes apart (test_controller_failover)
    )
    with Lab(config) as running:
        yield running


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    running = getattr(item, "funcargs", {}).get("lab")
    if report.failed and isinstance(running, Lab):
        report.sections.append(("lab component logs (tails)", running.report_logs()))
