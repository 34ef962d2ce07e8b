"""Build (once) and run Shopify's toxiproxy v2.5.0, a TCP proxy that injects network faults.

Upstream counterpart: ``github.com/Shopify/toxiproxy/v2`` (``cmd/server``, its ``Makefile``,
which stamps ``toxiproxy.Version`` with ``-X``) and its HTTP API (``api.go``: ``POST /proxies``,
``POST /proxies/{proxy}/toxics``, ``DELETE /proxies/{proxy}/toxics/{toxic}``, ``POST /reset``).
The module is pinned in ``tests/lab/tools/toxiproxy/go.mod`` and fetched from the Go module proxy
like the lab's control plane (``tests/lab/build.py``). Deviations: stripped (``-s -w``) and
``-trimpath``, like the lab's other binaries; no ``toxiproxy-cli`` (the tests speak the API).
Cold: about 30 s on 2 cores.

A proxy forwards bytes unchanged, so a TLS client behind it still verifies the real server's
certificate (the lab's certificates name ``127.0.0.1``). The toxics the fault suite uses
(``toxics/*.go``): ``latency`` (each chunk held ``latency`` ± ``jitter`` ms), ``bandwidth``
(``rate`` KB/s), ``timeout`` (data dropped, the connection closed after ``timeout`` ms, or never
with 0: a half-open connection), ``reset_peer`` (closed with a TCP RST after ``timeout`` ms) and
``limit_data`` (closed once ``bytes`` have passed). Each acts on every connection of the proxy,
open or new, in one direction: ``downstream`` (server to client) or ``upstream``.

The cache lives in ``$HPA_CACHE/bin/toxiproxy-v2.5.0-<key>/`` (default ``~/.cache/hpa``); the key
hashes the tools module's go.mod/go.sum, the build flags and the Go version.

    python -m tests.lab.toxiproxy        # build if missing, print the directory
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.lab.build import TOOLS_DIR, build_tools_module, cache_root, module_cache_key
from tests.lab.process import Component, ProcessGroup, wait_until
from tests.lab.prometheus import free_loopback_port

VERSION = "v2.5.0"
MODULE = "github.com/Shopify/toxiproxy/v2"
MODULE_DIR = TOOLS_DIR / "toxiproxy"
BINARY = "toxiproxy-server"
BUILD_FLAGS = ("-trimpath", f"-ldflags=-s -w -X {MODULE}.Version={VERSION}")
READY_TIMEOUT_SECONDS = 30.0
API_TIMEOUT_SECONDS = 10.0


def bin_dir_for(key: str) -> Path:
    return cache_root() / "bin" / f"toxiproxy-{VERSION}-{key}"


def build(*, parallel_jobs: int = 2) -> Path:
    """Build the server unless the cache has it; returns the cache directory
    (``tests.lab.build.build_once``: an interrupted build never looks complete)."""
    return build_tools_module(
        MODULE_DIR,
        lambda go_version_text: bin_dir_for(
            module_cache_key(go_version_text, MODULE_DIR, (BINARY, BUILD_FLAGS))
        ),
        [f"{MODULE}/cmd/server"],
        output=BINARY,
        flags=BUILD_FLAGS,
        what=f"toxiproxy {VERSION}",
        manifest={"toxiproxy": VERSION},
        parallel_jobs=parallel_jobs,
    )


class ToxiproxyError(RuntimeError):
    """The toxiproxy API refused a request; the message holds its answer."""


class Toxiproxy:
    """One toxiproxy server, a lab component; its proxies listen on 127.0.0.1."""

    def __init__(self, component: Component, api_port: int) -> None:
        self.component = component
        self.api_url = f"http://127.0.0.1:{api_port}"

    @classmethod
    def start(cls, group: ProcessGroup, *, name: str = "toxiproxy", seed: int = 0) -> Toxiproxy:
        """Start the server (built first if needed) and wait until its API answers."""
        port = free_loopback_port()
        argv = [
            str(build() / BINARY),
            "-host=127.0.0.1",
            f"-port={port}",
            f"-seed={seed}",
        ]
        server = cls(group.start(name, argv, env={**os.environ, "LOG_LEVEL": "warn"}), port)

        def answers() -> bool:
            try:
                server.call("GET", "/proxies")
            except (OSError, ToxiproxyError):
                return False
            return True

        wait_until(
            answers, what="toxiproxy API", timeout_seconds=READY_TIMEOUT_SECONDS, group=group
        )
        return server

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 - the lab's loopback URL
            f"{self.api_url}{path}", data=data, method=method
        )
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=API_TIMEOUT_SECONDS) as answer:  # noqa: S310
                text = answer.read()
        except urllib.error.HTTPError as error:
            raise ToxiproxyError(f"{method} {path}: {error.code} {error.read()!r}") from error
        return json.loads(text) if text.strip() else None

    def proxy(self, name: str, upstream: str) -> str:
        """A proxy to ``upstream`` (``host:port``); returns the ``127.0.0.1:port`` it listens on."""
        listen = f"127.0.0.1:{free_loopback_port()}"
        created = self.call(
            "POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream}
        )
        return str(created["listen"])

    def add_toxic(
        self,
        proxy: str,
        kind: str,
        attributes: dict[str, int],
        *,
        stream: str = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
    ) -> str:
        """Add a toxic to every connection of ``proxy``, open or new; returns its name."""
        toxic = name or f"{kind}_{stream}"
        self.call(
            "POST",
            f"/proxies/{proxy}/toxics",
            {
                "name": toxic,
                "type": kind,
                "stream": stream,
                "toxicity": toxicity,
                "attributes": attributes,
            },
        )
        return toxic

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        self.call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        return list(self.call("GET", f"/proxies/{proxy}/toxics"))

    def reset(self) -> None:
        """``POST /reset``: every toxic removed, every proxy enabled."""
        self.call("POST", "/reset")


def main() -> int:
    print(build())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
