"""A small keep-alive HTTP/1.1 client on asyncio protocols: the Prometheus client's transport.

Upstream counterpart: the ``net/http`` ``Transport`` that prometheus-adapter's
``pkg/client/api.go`` sends its requests through (keep-alive connections to one host, one request
per connection at a time, a retry when a reused connection turns out to be closed).

Why not aiohttp's client (used here before): every query went through ``ClientSession._request``
(a URL object, header multidicts, trace hooks, timers, a response object and its stream reader),
which cost the adapter about as much CPU per request as its own code (docs/performance-adapter.md,
fourth session). This transport sends one prebuilt byte string per request and frames the answer
by hand, with no task per request.

What it does:

- one base URL (``http`` or ``https``, with a path prefix); the caller gives the request target
  (path and query) and the header block;
- a pool of keep-alive connections (the most recently used first); a connection idle for longer
  than ``idle_timeout_seconds`` is closed instead of reused;
- answers framed by ``Content-Length``, chunked transfer encoding, or the end of the connection;
  interim ``1xx`` answers skipped; ``Connection: close`` honoured;
- a request sent on a reused connection that the server closed before answering (the keep-alive
  race) is sent once more on a new connection, as Go's transport does for idempotent requests
  (every Prometheus API request is: queries have no side effects);
- cancelling the awaiting task aborts the connection, so the server sees the request go away;
- TLS through ``asyncio``'s ``ssl`` support, with the caller's ``SSLContext`` and the URL's host
  as the server name.

Deliberate deviations from Go's and aiohttp's clients: redirects are not followed (Prometheus's
API does not redirect; a ``3xx`` is handed back like any other status), no proxy is taken from
the environment (aiohttp's default too), and bodies are returned as sent (``Content-Encoding`` is
left to the caller, which asks for ``identity``).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import NamedTuple
from urllib.parse import urlsplit

MAX_HEAD_BYTES = 64 * 1024
"""Longest status line plus headers accepted (aiohttp's limit is 8190 bytes per line)."""
DEFAULT_IDLE_TIMEOUT_SECONDS = 15.0
"""Keep-alive connections idle for longer are not reused (aiohttp's default, 15 s)."""

_HEAD_END = b"\r\n\r\n"
_CRLF = b"\r\n"


class HttpTransportError(Exception):
    """No complete HTTP answer: connection refused or reset, TLS failure, malformed answer."""


class HttpResponse(NamedTuple):
    """A complete answer. ``headers`` has lower-case names (the last of repeated headers)."""

    status: int
    headers: dict[str, str]
    body: bytes


class _ClosedBeforeAnswerError(HttpTransportError):
    """The connection ended before any byte of the answer: on a reused connection, the server
    closed it while idle, and the request can go again on a new one."""


class Origin(NamedTuple):
    """Where requests go: scheme, host, port, the path prefix and the ``Host`` header."""

    scheme: str
    host: str
    port: int
    path_prefix: str
    host_header: str
    username: str | None
    password: str | None

    @classmethod
    def parse(cls, url: str) -> Origin:
        """``http(s)://[user[:password]@]host[:port][/prefix]``; ``ValueError`` otherwise."""
        split = urlsplit(url)
        scheme = split.scheme.lower()
        if scheme not in ("http", "https"):
            raise ValueError(f"unsupported URL scheme {split.scheme!r} in {url!r}")
        host = split.hostname
        if not host:
            raise ValueError(f"no host in {url!r}")
        if split.query or split.fragment:
            raise ValueError(f"a query or fragment in the base URL {url!r}")
        default_port = 443 if scheme == "https" else 80
        port = split.port or default_port  # .port raises ValueError for a bad port
        bracketed = f"[{host}]" if ":" in host else host
        host_header = bracketed if port == default_port else f"{bracketed}:{port}"
        return cls(
            scheme,
            host,
            port,
            split.path.rstrip("/"),
            host_header,
            split.username,
            split.password,
        )

    def display(self) -> str:
        """The URL without credentials, for messages and logs."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path_prefix}"


class _Connection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self, transport_pool: HttpTransport) -> None:
        self._pool = transport_pool
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = True
        self.idle_since = 0.0
        self._buffer = bytearray()
        self._waiter: asyncio.Future[HttpResponse] | None = None
        self._received = False
        # the answer being read
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body_start = -1  # index of the body in _buffer, -1 while reading the head
        self._length: int | None = None  # Content-Length; None: chunked or until close
        self._chunked = False
        self._chunks = bytearray()
        self._position = 0  # chunked: where the next chunk-size line starts

    # ---------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._pool._discard(self)
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done():
            return
        if exc is None and self._body_start >= 0 and self._length is None and not self._chunked:
            waiter.set_result(self._answer(bytes(self._buffer[self._body_start :])))
            return
        reason = f": {exc}" if exc is not None else ""
        if not self._received:
            message = f"connection closed before an answer{reason}"
            waiter.set_exception(_ClosedBeforeAnswerError(message))
        else:
            waiter.set_exception(
                HttpTransportError(f"connection closed in the middle of an answer{reason}")
            )

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            self._fail(None, "data received without a request")  # nothing may arrive unasked
            return
        self._received = True
        self._buffer += data
        try:
            body = self._read()
        except HttpTransportError as error:
            self._fail(waiter, str(error))
            return
        if body is None:
            return
        self._waiter = None
        waiter.set_result(self._answer(body))

    def eof_received(self) -> bool:
        return False  # close; connection_lost decides whether the answer was complete

    # ---------------------------------------------------------- requests

    def send(self, data: bytes) -> asyncio.Future[HttpResponse]:
        assert self.transport is not None
        assert self._waiter is None
        waiter: asyncio.Future[HttpResponse] = asyncio.get_running_loop().create_future()
        if self.closed:
            waiter.set_exception(_ClosedBeforeAnswerError("connection closed before the request"))
            return waiter
        self._waiter = waiter
        self._received = False
        self._buffer.clear()
        self._body_start = -1
        self.transport.write(data)
        return waiter

    def abort(self) -> None:
        self.reusable = False
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None:
            self.transport.close()

    # ---------------------------------------------------------- parsing

    def _fail(self, waiter: asyncio.Future[HttpResponse] | None, message: str) -> None:
        self._waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(HttpTransportError(message))
        self.abort()

    def _answer(self, body: bytes) -> HttpResponse:
        return HttpResponse(self._status, self._headers, body)

    def _read(self) -> bytes | None:
        """The body once the answer is complete, None while more is needed."""
        buffer = self._buffer
        if self._body_start < 0 and not self._read_head():
            return None
        if self._chunked:
            return self._read_chunks()
        if self._length is None:
            return None  # until the connection ends
        end = self._body_start + self._length
        if len(buffer) < end:
            return None
        if len(buffer) > end:
            self.reusable = False  # more than the answer: do not trust the connection
        return bytes(buffer[self._body_start : end])

    def _read_head(self) -> bool:
        """Parse the status line and headers once they are complete (skipping interim 1xx
        answers); False while more is needed."""
        buffer = self._buffer
        while True:
            end = buffer.find(_HEAD_END)
            if end < 0:
                if len(buffer) > MAX_HEAD_BYTES:
                    raise HttpTransportError(f"answer head longer than {MAX_HEAD_BYTES} bytes")
                return False
            lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
                raise HttpTransportError(f"not an HTTP/1.x answer: {lines[0][:100]!r}")
            status = int(code)
            if not 100 <= status < 200:
                break
            del buffer[: end + 4]  # interim answer (100 Continue, 103 Early Hints): skip it
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        self._status, self._headers = status, headers
        connection = headers.get("connection", "").lower()
        if "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection):
            self.reusable = False
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self._length = None
        if self._chunked:
            self._chunks.clear()
            self._position = end + 4
        elif status in (204, 304):
            self._length = 0
        elif "content-length" in headers:
            text = headers["content-length"]
            if not text.isdigit():
                raise HttpTransportError(f"bad Content-Length {text[:40]!r}")
            self._length = int(text)
        else:
            self.reusable = False  # the body ends with the connection
        self._body_start = end + 4
        return True

    def _read_chunks(self) -> bytes | None:
        buffer = self._buffer
        chunks = self._chunks
        while True:
            position = self._position
            line_end = buffer.find(_CRLF, position)
            if line_end < 0:
                if len(buffer) - position > 1024:
                    raise HttpTransportError("chunk size line too long")
                return None
            size_text = bytes(buffer[position:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpTransportError(f"bad chunk size {size_text[:40]!r}") from None
            if size < 0:
                raise HttpTransportError(f"bad chunk size {size_text[:40]!r}")
            if size == 0:
                # optional trailer fields, then an empty line
                if buffer.startswith(_CRLF, line_end + 2):
                    trailer_end = line_end + 4
                else:
                    found = buffer.find(_HEAD_END, line_end + 2)
                    if found < 0:
                        return None
                    trailer_end = found + 4
                if len(buffer) > trailer_end:
                    self.reusable = False
                return bytes(chunks)
            start = line_end + 2
            if len(buffer) < start + size + 2:
                return None
            if buffer[start + size : start + size + 2] != _CRLF:
                raise HttpTransportError("chunk not followed by CRLF")
            chunks += buffer[start : start + size]
            self._position = start + size + 2


class HttpTransport:
    """Keep-alive connections to one origin. ``request`` sends one request and returns its
    complete answer; connections are opened as needed (the caller bounds concurrency) and kept
    for reuse. ``close()`` closes them."""

    def __init__(
        self,
        origin: Origin,
        *,
        ssl_context: ssl.SSLContext | None = None,
        idle_timeout_seconds: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
    ) -> None:
        if origin.scheme == "https" and ssl_context is None:
            ssl_context = ssl.create_default_context()
        self.origin = origin
        self._ssl = ssl_context if origin.scheme == "https" else None
        self._idle_timeout = idle_timeout_seconds
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._closed = False
        self.opened = 0
        """Connections opened so far."""

    def idle_connections(self) -> int:
        return len(self._idle)

    async def request(self, data: bytes) -> HttpResponse:
        """Send ``data`` (a complete request: head and body) and wait for the answer.

        Raises ``HttpTransportError``; cancelling the caller aborts the connection."""
        if self._closed:
            raise HttpTransportError("the transport is closed")
        connection = self._take_idle()
        reused = connection is not None
        if connection is None:
            connection = await self._open()
        try:
            return await self._exchange(connection, data)
        except _ClosedBeforeAnswerError:
            if not reused:
                raise
        # the server closed the idle connection as the request went out: once more, anew
        connection = await self._open()
        return await self._exchange(connection, data)

    async def close(self) -> None:
        self._closed = True
        for connection in [*self._idle, *self._busy]:
            connection.close()
        self._idle.clear()
        self._busy.clear()

    # ---------------------------------------------------------- plumbing

    async def _exchange(self, connection: _Connection, data: bytes) -> HttpResponse:
        self._busy.add(connection)
        try:
            response = await connection.send(data)
        except BaseException:
            connection.abort()  # cancelled, or failed: the connection is of no further use
            raise
        finally:
            self._busy.discard(connection)
        if connection.reusable and not connection.closed and not self._closed:
            connection.idle_since = asyncio.get_running_loop().time()
            self._idle.append(connection)
        else:
            connection.close()
        return response

    def _take_idle(self) -> _Connection | None:
        idle = self._idle
        if not idle:
            return None
        now = asyncio.get_running_loop().time()
        while idle:
            connection = idle.pop()
            if connection.closed:
                continue
            if now - connection.idle_since >= self._idle_timeout:
                connection.close()
                continue
            return connection
        return None

    async def _open(self) -> _Connection:
        origin = self.origin
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(
                lambda: _Connection(self),
                origin.host,
                origin.port,
                ssl=self._ssl,
                server_hostname=origin.host if self._ssl is not None else None,
            )
        except OSError as error:  # refused, unreachable, DNS, TLS (ssl.SSLError is an OSError)
            raise HttpTransportError(str(error) or type(error).__name__) from error
        self.opened += 1
        if self._closed:
            connection.close()
            raise HttpTransportError("the transport is closed")
        return connection

    def _discard(self, connection: _Connection) -> None:
        if connection in self._idle:
            self._idle.remove(connection)
