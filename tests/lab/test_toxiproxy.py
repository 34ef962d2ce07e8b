"""toxiproxy's pin and build key, and the lab's client of its API against the real server: a
proxy forwards bytes, a ``timeout`` toxic with 0 leaves a connection open with no answer (half
open), and removing it lets new connections through again."""

from __future__ import annotations

import shutil
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab import toxiproxy
from tests.lab.build import module_cache_key
from tests.lab.process import ProcessGroup


def test_the_module_pins_the_version_and_the_key_follows_go_and_the_pins(tmp_path: Path) -> None:
    go_mod = (toxiproxy.MODULE_DIR / "go.mod").read_text()
    assert f"tool {toxiproxy.MODULE}/cmd/server" in go_mod
    assert f"{toxiproxy.MODULE} {toxiproxy.VERSION}" in go_mod
    for name in ("go.mod", "go.sum"):
        shutil.copy(toxiproxy.MODULE_DIR / name, tmp_path / name)
    key = module_cache_key("go1.26.8", tmp_path, toxiproxy.BUILD_FLAGS)
    assert key != module_cache_key("go1.26.9", tmp_path, toxiproxy.BUILD_FLAGS)
    (tmp_path / "go.sum").write_text("changed\n")
    assert key != module_cache_key("go1.26.8", tmp_path, toxiproxy.BUILD_FLAGS)
    assert toxiproxy.bin_dir_for(key).name == f"toxiproxy-v2.5.0-{key}"


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(1024):
            self.request.sendall(data)


@pytest.fixture
def echo() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _round_trip(listen: str, payload: bytes, *, timeout_seconds: float = 2.0) -> bytes:
    host, port = listen.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_seconds) as connection:
        connection.sendall(payload)
        return connection.recv(1024)


def test_a_half_open_toxic_holds_answers_until_it_is_removed(echo: str, tmp_path: Path) -> None:
    group = ProcessGroup(tmp_path / "logs")
    try:
        server = toxiproxy.Toxiproxy.start(group)
        listen = server.proxy("echo", echo)
        assert _round_trip(listen, b"ping") == b"ping"
        toxic = server.add_toxic("echo", "timeout", {"timeout": 0})
        assert [t["type"] for t in server.toxics("echo")] == ["timeout"]
        with pytest.raises(TimeoutError):  # connected, never answered, never closed
            _round_trip(listen, b"lost", timeout_seconds=0.5)
        server.remove_toxic("echo", toxic)
        assert _round_trip(listen, b"back") == b"back"
        server.add_toxic("echo", "reset_peer", {"timeout": 0})
        with pytest.raises(ConnectionError):
            _round_trip(listen, b"reset")
        server.reset()
        assert server.toxics("echo") == []
        assert _round_trip(listen, b"again") == b"again"
    finally:
        group.stop()
