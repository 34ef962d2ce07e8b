"""Every server command logs JSON lines from its first line to its last: each runs briefly in a
subprocess against an unreachable API server, is stopped with SIGTERM, and every line it wrote
on stderr must be a JSON object with ``level``, ``event``, ``timestamp`` and ``logger``."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from hpa.kube.tls import write_self_signed
from tests.commands import UNREACHABLE_KUBECONFIG, command_env

SERVERS = {
    "controller": ("controller", "--kubeconfig", "{d}/kubeconfig", "--port", "0"),
    "adapter": (
        "adapter",
        "--config",
        "{d}/rules.yaml",
        "--kubeconfig",
        "{d}/kubeconfig",
        "--cert-dir",
        "{d}",
        "--secure-port",
        "0",
    ),
    "vpa-admission": (
        "vpa",
        "admission",
        "--kubeconfig",
        "{d}/kubeconfig",
        "--tls-cert-file",
        "{d}/apiserver.crt",
        "--tls-private-key",
        "{d}/apiserver.key",
        "--port",
        "{port}",
        "--address",
        "127.0.0.1:0",
    ),
}
STARTED = {
    "controller": "controller_starting",
    "adapter": "adapter_serving",
    "vpa-admission": "admission_starting",
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run_until(args: list[str], started: str, *, cwd: Path) -> tuple[int, str]:
    """Run ``hpa args`` until it logs ``started`` (or 20 s), then SIGTERM; (code, stderr)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "hpa", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=command_env(),
        cwd=cwd,
    )
    assert process.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 20
    for line in process.stderr:
        lines.append(line)
        if started in line or time.monotonic() > deadline:
            break
    process.send_signal(signal.SIGTERM)
    try:
        _, rest = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        _, rest = process.communicate()
    return process.returncode, "".join(lines) + rest


def _command(server: str) -> list[str]:
    """The command's words (``vpa admission``) without its flags."""
    words = []
    for word in SERVERS[server]:
        if word.startswith("-"):
            break
        words.append(word)
    return words


def _check_json_lines(stderr: str) -> list[dict[str, object]]:
    events = []
    for line in stderr.splitlines():
        event = orjson.loads(line)  # every line: not a traceback, not a usage text
        assert isinstance(event, dict), line
        assert {"level", "event", "timestamp", "logger"} <= event.keys(), line
        events.append(event)
    return events


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_server_logs_json_lines_from_start_to_stop(server: str, tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
    (tmp_path / "rules.yaml").write_text("rules: []\n")
    write_self_signed(tmp_path)
    args = [
        a.replace("{d}", str(tmp_path)).replace("{port}", str(_free_port()))
        for a in SERVERS[server]
    ]

    code, stderr = _run_until(args, STARTED[server], cwd=tmp_path)

    events = _check_json_lines(stderr)
    assert STARTED[server] in [e["event"] for e in events], stderr
    assert code == 0, stderr


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_flag_mistake_is_a_json_line_too(server: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hpa", *_command(server), "--no-such-flag"],
        capture_output=True,
        text=True,
        env=command_env(),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    [event] = _check_json_lines(done.stderr)
    assert done.returncode == 2
    assert event["level"] == "error"
    assert "--no-such-flag" in str(event["error"])
