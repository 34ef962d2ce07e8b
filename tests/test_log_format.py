"""Every server command logs JSON lines from its first line to its last: each runs briefly in a
subprocess, is stopped with SIGTERM, and every line it wrote on stderr must be a JSON object with
``level``, ``event``, ``timestamp`` and ``logger``. The controller and the webhook start against
an unreachable API server (their informers retry); the adapter reads API discovery before it
serves, as prometheus-adapter does, so it gets a fake API server, and its start against an
unreachable one is checked apart: one JSON error line and exit 2."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from hpa.kube.tls import write_self_signed
from tests.commands import UNREACHABLE_KUBECONFIG, command_env
from tests.fakes.kubeauth import FakeKubeAuth
from tests.loopthread import LoopThread

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


NEEDS_API_SERVER = {"adapter"}
"""Commands that read API discovery before they serve."""


def _kubeconfig(server_url: str) -> str:
    return UNREACHABLE_KUBECONFIG.replace("https://127.0.0.1:1", server_url)


@pytest.fixture(scope="module")
def api_server_url() -> Iterator[str]:
    """A fake API server serving discovery, in a thread of this process."""
    loop = LoopThread()
    loop.start()
    fake = FakeKubeAuth()
    loop.run(fake.__aenter__())
    try:
        yield fake.url
    finally:
        loop.stop(fake.__aexit__(None, None, None))


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
def test_a_server_logs_json_lines_from_start_to_stop(
    server: str, tmp_path: Path, api_server_url: str
) -> None:
    (tmp_path / "kubeconfig").write_text(
        _kubeconfig(api_server_url) if server in NEEDS_API_SERVER else UNREACHABLE_KUBECONFIG
    )
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


def test_the_adapter_without_api_discovery_is_one_json_error_line(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(UNREACHABLE_KUBECONFIG)
    (tmp_path / "rules.yaml").write_text("rules: []\n")
    args = [a.replace("{d}", str(tmp_path)) for a in SERVERS["adapter"]]

    code, stderr = _run_until(args, STARTED["adapter"], cwd=tmp_path)

    events = _check_json_lines(stderr)
    errors = [e for e in events if e["level"] == "error"]
    assert code == 2, stderr
    assert [e["event"] for e in errors] == ["invalid_input"], stderr
    assert "unable to populate initial set of REST mappings" in str(errors[0]["error"]), stderr


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
