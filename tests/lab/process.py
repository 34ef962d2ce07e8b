"""The lab's supervised processes: one process group, log files, readiness, teardown.

Upstream counterpart: `hack/local-up-cluster.sh` and the integration framework's
`test/integration/framework/etcd.go`, which start each component as a child process with its own
log and kill them all on exit. Deviations: every component joins ONE process group (the first
component started leads it), so a single `killpg` ends them all; each child also gets
`PR_SET_PDEATHSIG=SIGKILL`, so even a `kill -9` of the Python process leaves nothing running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import structlog

log = structlog.get_logger("hpa.lab")

_PR_SET_PDEATHSIG = 1
STOP_GRACE_SECONDS = 3.0
"""kube-apiserver drains watches for a minute on SIGTERM; the lab is throwaway, so it is killed."""
LOG_TAIL_LINES = 40


class LabError(RuntimeError):
    """A component failed to start or become ready; the message carries every log's tail."""


_prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child only calls it


def _die_with_parent() -> None:
    """Runs in the forked child before exec: nothing but one system call."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@dataclass
class Component:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]

    def exited(self) -> int | None:
        return self.process.poll()


def tail(path: Path, *, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class ProcessGroup:
    """Children of one lab; `stop()` ends them all (SIGTERM, then SIGKILL after a grace)."""

    log_dir: Path
    components: dict[str, Component] = field(default_factory=dict)
    pgid: int | None = None
    extra_logs: dict[str, Path] = field(default_factory=dict)

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        die_with_parent: bool = True,
    ) -> Component:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        log_file = log_path.open("ab")
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            process_group=0 if self.pgid is None else self.pgid,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
        if self.pgid is None:
            self.pgid = process.pid
        component = Component(name, process, log_path, log_file)
        self.components[name] = component
        log.info("lab_component_started", component=name, pid=process.pid, log=str(log_path))
        return component

    def add_log(self, name: str, path: Path) -> None:
        """Show another log (of a process someone else supervises) in failure reports."""
        self.extra_logs[name] = path

    def end(self, name: str, *, sig: int = signal.SIGTERM) -> int:
        """End one component on purpose (`sig`, SIGKILL after the grace) and forget it, keeping
        its log in reports, so `check_alive` does not take its exit for a failure."""
        component = self.components.pop(name)
        self.extra_logs[name] = component.log_path
        with contextlib.suppress(ProcessLookupError):
            component.process.send_signal(sig)
        try:
            code = component.process.wait(timeout=STOP_GRACE_SECONDS * 3)
        except subprocess.TimeoutExpired:
            component.process.kill()
            code = component.process.wait()
        component.log_file.close()
        log.info("lab_component_ended", component=name, signal=sig, status=code)
        return code

    def check_alive(self) -> None:
        for component in self.components.values():
            code = component.exited()
            if code is not None:
                raise LabError(f"{component.name} exited with status {code}\n{self.report_logs()}")

    def report_logs(self, *, lines: int = LOG_TAIL_LINES) -> str:
        """The tail of every component's log, for failure messages."""
        logs = {c.name: c.log_path for c in self.components.values()} | self.extra_logs
        sections = [
            f"----- {name} ({path}), last {lines} lines -----\n{tail(path, lines=lines)}"
            for name, path in logs.items()
        ]
        return "\n".join(sections)

    def stop(self) -> None:
        if self.pgid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for component in self.components.values():
            remaining = max(0.0, deadline - time.monotonic())
            with contextlib.suppress(subprocess.TimeoutExpired):
                component.process.wait(timeout=remaining)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        for component in self.components.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                component.process.wait(timeout=STOP_GRACE_SECONDS)
            component.log_file.close()
        log.info("lab_processes_stopped", pgid=self.pgid, count=len(self.components))
        self.pgid = None


def wait_until(
    check: Callable[[], bool],
    *,
    what: str,
    timeout_seconds: float,
    group: ProcessGroup | None = None,
    interval_seconds: float = 0.25,
) -> None:
    """Poll `check` until it is true; on timeout raise `LabError` with the logs' tails.

    The lab waits on real processes and a real API server, so this polls a wall clock: it is
    the one place in the tests that sleeps.
    """
    deadline = time.monotonic() + timeout_seconds
    last_error = ""
    while True:
        if group is not None:
            group.check_alive()
        try:
            if check():
                return
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            last_error = f" (last error: {error!r})"
        if time.monotonic() > deadline:
            logs = f"\n{group.report_logs()}" if group is not None else ""
            raise LabError(
                f"timed out after {timeout_seconds} s waiting for {what}{last_error}{logs}"
            )
        time.sleep(interval_seconds)
