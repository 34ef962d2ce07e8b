"""How to reach Prometheus: URL, TLS, credentials, extra headers, deadlines and concurrency.

Upstream counterpart: prometheus-adapter ``cmd/adapter/adapter.go`` (``--prometheus-url``,
``--prometheus-ca-file``, ``--prometheus-client-tls-cert-file``/``-key-file``,
``--prometheus-token-file``, ``--prometheus-header``, ``--prometheus-verb``,
``--prometheus-auth-config``) and ``pkg/client/api.go`` (headers added to every request).

Deliberate deviations: the bearer token file is re-read when it changes on disk (its inode, size
or modification time), so projected service-account tokens that the kubelet rotates keep working
without a restart (upstream reads the file once at start); basic auth reads its password from a
file the same way; a default per-request deadline and a bound on concurrent requests are part of
the connection settings.
"""

from __future__ import annotations

import base64
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Literal

_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def check_header(name: str, value: str) -> None:
    """An extra header must be an RFC 9110 token name with a value free of CR, LF and NUL (Go's
    ``http.Header`` writer refuses those: they would split the request); ``ValueError`` names
    the header otherwise."""
    if _HEADER_NAME.fullmatch(name) is None:
        raise ValueError(f"header name {name!r} is not an HTTP token")
    if any(char in value for char in "\r\n\x00"):
        raise ValueError(f"value of header {name!r} contains CR, LF or NUL: {value!r}")


@dataclass(frozen=True, kw_only=True)
class TLSConfig:
    """CA bundle to verify Prometheus, and an optional client certificate (mutual TLS)."""

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    insecure_skip_verify: bool = False

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(
            cafile=str(self.ca_file) if self.ca_file is not None else None
        )
        if self.insecure_skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_file is not None:
            context.load_cert_chain(
                str(self.cert_file), str(self.key_file) if self.key_file is not None else None
            )
        return context


class FileSecret:
    """A secret kept in a file, re-read whenever the file changes (inode, size or mtime).

    ``read()`` costs one ``stat`` when nothing changed. Surrounding whitespace is stripped, as
    Kubernetes secret files often end with a newline.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._value = ""

    def read(self) -> str:
        stat = os.stat(self.path)
        stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if stamp != self._stamp:
            self._value = self.path.read_text().strip()
            self._stamp = stamp
        return self._value


@dataclass(frozen=True)
class BasicAuth:
    username: str
    password: str = ""
    _: KW_ONLY
    password_file: Path | None = None


@dataclass(frozen=True)
class PrometheusConnection:
    """Everything the client needs to talk to one Prometheus (or Thanos/Mimir query frontend).

    url: base URL, e.g. ``https://prometheus.monitoring.svc:9090`` or a path-prefixed
        ``http://mimir/prometheus``; API paths are appended.
    headers: sent with every request, e.g. ``{"X-Scope-OrgID": "tenant-a"}``.
    timeout_seconds: default per-request deadline (also sent to Prometheus as ``timeout``).
    max_concurrent_requests: requests in flight at once; more wait their turn (within their
        deadline).
    method: ``GET`` (upstream's default) or ``POST`` (form-encoded, for long queries).
    """

    url: str
    _: KW_ONLY
    tls: TLSConfig | None = None
    bearer_token_file: Path | None = None
    basic_auth: BasicAuth | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float = 10.0
    max_concurrent_requests: int = 8
    method: Literal["GET", "POST"] = "GET"

    def __post_init__(self) -> None:
        if self.timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        if self.max_concurrent_requests < 1:
            raise ValueError("max_concurrent_requests must be at least 1")
        if self.bearer_token_file is not None and self.basic_auth is not None:
            raise ValueError("use either a bearer token file or basic auth, not both")
        for name, value in self.headers.items():
            check_header(name, value)


class Credentials:
    """The ``Authorization`` header for a connection, re-reading secret files on change."""

    def __init__(self, connection: PrometheusConnection) -> None:
        self._token = (
            FileSecret(connection.bearer_token_file)
            if connection.bearer_token_file is not None
            else None
        )
        basic = connection.basic_auth
        self._basic = basic
        self._password = (
            FileSecret(basic.password_file)
            if basic is not None and basic.password_file is not None
            else None
        )

    def authorization(self) -> str | None:
        if self._token is not None:
            return "Bearer " + self._token.read()
        if self._basic is not None:
            password = self._password.read() if self._password is not None else self._basic.password
            raw = f"{self._basic.username}:{password}".encode()
            return "Basic " + base64.b64encode(raw).decode("ascii")
        return None
