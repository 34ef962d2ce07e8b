"""The Prometheus client's HTTP/1.1 transport against real TCP servers that answer with scripted
bytes: framing (Content-Length, chunked, until close, interim 1xx), keep-alive reuse, the retry
when a server drops an idle connection, cancellation, malformed answers; and, through
``PrometheusClient``, what the transport leaves to it (Content-Encoding, redirects, URL
credentials, POST bodies).

Upstream counterpart: Go's ``net/http`` transport behaviour that prometheus-adapter relies on.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

import orjson
import pytest

from adapter.prometheus import (
    PrometheusClient,
    PrometheusConnection,
    PrometheusConnectionError,
    PrometheusHTTPError,
    PrometheusResponseError,
)
from adapter.prometheus.transport import HttpTransport, HttpTransportError, Origin

CLOSE = b""
"""A scripted answer that closes the connection without answering."""
HANG = None
"""A scripted answer that never comes (the server waits for the client to go away)."""

Answer = bytes | None


@dataclass
class RecordedRequest:
    head: str
    body: bytes
    connection: int

    @property
    def request_line(self) -> str:
        return self.head.split("\r\n", 1)[0]

    def header(self, name: str) -> str | None:
        for line in self.head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None


@dataclass
class ScriptedServer:
    """A TCP server that reads HTTP requests and writes the next scripted answer for each.

    Each answer is a list of byte strings written one at a time (so a client sees the answer
    arrive in pieces; a ``CLOSE`` piece hangs up there), ``CLOSE`` to hang up without answering,
    or ``HANG`` to wait until the client hangs up."""

    answers: list[list[bytes] | Answer] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    connections: int = 0
    client_hung_up: asyncio.Event = field(default_factory=asyncio.Event)
    request_seen: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.client_hung_up.set()
                    return
                request = RecordedRequest(head.decode("latin-1"), b"", number)
                length = request.header("Content-Length")
                if length is not None:
                    request.body = await reader.readexactly(int(length))
                self.requests.append(request)
                self.request_seen.set()
                answer = self.answers.pop(0)
                if answer is HANG:
                    await reader.read()  # until the client goes away
                    self.client_hung_up.set()
                    return
                if answer == CLOSE:
                    return
                for piece in answer if isinstance(answer, list) else [answer]:
                    if piece == CLOSE:
                        return
                    writer.write(piece)
                    await writer.drain()
        finally:
            writer.close()


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    scripted = ScriptedServer()
    await scripted.start()
    yield scripted
    await scripted.stop()


def transport_to(server: ScriptedServer, *, idle_timeout_seconds: float = 15.0) -> HttpTransport:
    return HttpTransport(Origin.parse(server.url), idle_timeout_seconds=idle_timeout_seconds)


def get(path: str = "/") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


def ok(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{line}\r\n" for line in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


def chunked(*chunks: bytes) -> list[bytes]:
    pieces = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]
    pieces += [b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks]
    return [*pieces, b"0\r\n\r\n"]


# ---------------------------------------------------------------- framing and keep-alive


async def test_answers_framed_by_length_and_chunks_share_one_connection(
    server: ScriptedServer,
) -> None:
    server.answers = [
        ok(b'{"a": 1}'),
        chunked(b'{"b":', b" 2}"),
        [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", b"cde"],  # body in two pieces
    ]
    transport = transport_to(server)
    try:
        answers = [await transport.request(get(f"/{index}")) for index in range(3)]
    finally:
        await transport.close()
    assert [answer.body for answer in answers] == [b'{"a": 1}', b'{"b": 2}', b"abcde"]
    assert {answer.status for answer in answers} == {200}
    assert server.connections == 1
    assert [request.request_line for request in server.requests] == [
        "GET /0 HTTP/1.1",
        "GET /1 HTTP/1.1",
        "GET /2 HTTP/1.1",
    ]


async def test_chunk_extensions_and_trailers(server: ScriptedServer) -> None:
    server.answers = [
        [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"4;name=value\r\nwiki\r\n5\r\npedia\r\n",
            b"0\r\nExpires: never\r\n\r\n",
        ],
        ok(b"next"),
    ]
    transport = transport_to(server)
    try:
        first = await transport.request(get())
        second = await transport.request(get())
    finally:
        await transport.close()
    assert (first.body, second.body) == (b"wikipedia", b"next")
    assert server.connections == 1


async def test_an_answer_without_length_ends_with_the_connection(server: ScriptedServer) -> None:
    server.answers = [[b"HTTP/1.1 200 OK\r\n\r\nuntil ", b"the end", CLOSE], ok(b"again")]
    transport = transport_to(server)
    try:
        first = await transport.request(get())
        second = await transport.request(get())
    finally:
        await transport.close()
    assert (first.body, second.body) == (b"until the end", b"again")
    assert server.connections == 2


async def test_connection_close_header_is_honoured(server: ScriptedServer) -> None:
    server.answers = [ok(b"one", "Connection: close"), ok(b"two")]
    transport = transport_to(server)
    try:
        await transport.request(get())
        await transport.request(get())
    finally:
        await transport.close()
    assert server.connections == 2


async def test_interim_answers_are_skipped(server: ScriptedServer) -> None:
    server.answers = [
        [
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n",
            ok(b"final", "X-Answer: yes"),
        ]
    ]
    transport = transport_to(server)
    try:
        answer = await transport.request(get())
    finally:
        await transport.close()
    assert (answer.status, answer.body, answer.headers["x-answer"]) == (200, b"final", "yes")


async def test_statuses_and_headers_are_returned(server: ScriptedServer) -> None:
    server.answers = [
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nContent-TYPE: text/plain\r\n"
        b"\r\nbusy",
        b"HTTP/1.1 204 No Content\r\n\r\n",
        ok(b"after"),
    ]
    transport = transport_to(server)
    try:
        unavailable = await transport.request(get())
        empty = await transport.request(get())
        after = await transport.request(get())
    finally:
        await transport.close()
    assert (unavailable.status, unavailable.body) == (503, b"busy")
    assert unavailable.headers["content-type"] == "text/plain"
    assert (empty.status, empty.body) == (204, b"")
    assert after.body == b"after"
    assert server.connections == 1


async def test_idle_connections_past_the_idle_timeout_are_not_reused(
    server: ScriptedServer,
) -> None:
    server.answers = [ok(b"1"), ok(b"2")]
    transport = transport_to(server, idle_timeout_seconds=0.0)
    try:
        await transport.request(get())
        await transport.request(get())
    finally:
        await transport.close()
    assert server.connections == 2


# ---------------------------------------------------------------- failures


async def test_a_dropped_idle_connection_is_retried_once_on_a_new_one(
    server: ScriptedServer,
) -> None:
    # The server answers, then closes the kept-alive connection as the next request arrives
    # (the keep-alive race): the request goes again on a new connection.
    server.answers = [ok(b"first"), CLOSE, ok(b"second")]
    transport = transport_to(server)
    try:
        await transport.request(get("/1"))
        answer = await transport.request(get("/2"))
    finally:
        await transport.close()
    assert answer.body == b"second"
    assert server.connections == 2
    assert [(r.request_line, r.connection) for r in server.requests] == [
        ("GET /1 HTTP/1.1", 1),
        ("GET /2 HTTP/1.1", 1),
        ("GET /2 HTTP/1.1", 2),
    ]


async def test_a_new_connection_closed_without_an_answer_fails(server: ScriptedServer) -> None:
    server.answers = [CLOSE]
    transport = transport_to(server)
    try:
        with pytest.raises(HttpTransportError, match="closed before an answer"):
            await transport.request(get())
    finally:
        await transport.close()
    assert len(server.requests) == 1  # not retried: the server saw the request fail


async def test_a_truncated_answer_fails(server: ScriptedServer) -> None:
    server.answers = [[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial", CLOSE]]
    transport = transport_to(server)
    try:
        with pytest.raises(HttpTransportError, match="middle of an answer"):
            await transport.request(get())
    finally:
        await transport.close()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"SSH-2.0-OpenSSH_9.2\r\n\r\n", "not an HTTP/1.x answer"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd", "not followed by"),
    ],
)
async def test_malformed_answers_fail_clearly(
    server: ScriptedServer, answer: bytes, message: str
) -> None:
    server.answers = [[answer], ok(b"fine")]
    transport = transport_to(server)
    try:
        with pytest.raises(HttpTransportError, match=message):
            await transport.request(get())
        assert (await transport.request(get())).body == b"fine"  # on a new connection
    finally:
        await transport.close()
    assert server.connections == 2


async def test_connection_refused_fails() -> None:
    scripted = ScriptedServer()
    await scripted.start()
    await scripted.stop()
    transport = transport_to(scripted)
    try:
        with pytest.raises(HttpTransportError):
            await transport.request(get())
    finally:
        await transport.close()


async def test_cancelling_the_caller_aborts_the_connection(server: ScriptedServer) -> None:
    server.answers = [HANG, ok(b"later")]
    transport = transport_to(server)
    try:
        task = asyncio.create_task(transport.request(get()))
        await server.request_seen.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await server.client_hung_up.wait()
        assert (await transport.request(get())).body == b"later"
    finally:
        await transport.close()
    assert server.connections == 2


def test_origins() -> None:
    assert Origin.parse("https://prometheus.monitoring.svc:9090/prefix/") == Origin(
        "https",
        "prometheus.monitoring.svc",
        9090,
        "/prefix",
        "prometheus.monitoring.svc:9090",
        None,
        None,
    )
    ipv6 = Origin.parse("http://u:p%40ss@[::1]/")
    assert (ipv6.host, ipv6.port, ipv6.host_header) == ("::1", 80, "[::1]")
    assert (ipv6.username, ipv6.password) == ("u", "p%40ss")
    assert ipv6.display() == "http://[::1]:80"
    for bad in ("ftp://x", "http://", "http://x/?q=1", "http://x:99999"):
        with pytest.raises(ValueError):  # noqa: PT011 - each has its own message
            Origin.parse(bad)


# ---------------------------------------------------------------- through the client

VECTOR = orjson.dumps(
    {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1.5, "7"]}]},
    }
)


def client_for(url: str, **options: object) -> PrometheusClient:
    return PrometheusClient(PrometheusConnection(url, timeout_seconds=5.0, **options))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "compress",
    [
        pytest.param(lambda body: gzip.compress(body), id="gzip"),
        pytest.param(lambda body: __import__("zlib").compress(body), id="deflate"),
    ],
)
async def test_compressed_answers_are_decoded_when_a_header_asks_for_them(
    server: ScriptedServer, compress: Callable[[bytes], bytes]
) -> None:
    encoding = "gzip" if compress(b"")[:2] == b"\x1f\x8b" else "deflate"
    server.answers = [ok(compress(VECTOR), f"Content-Encoding: {encoding}")]
    async with client_for(server.url, headers={"Accept-Encoding": "gzip, deflate"}) as client:
        result = await client.query("up")
    assert result.samples[0].value_text == "7"
    assert server.requests[0].header("Accept-Encoding") == "gzip, deflate"


async def test_unknown_or_broken_encodings_are_response_errors(server: ScriptedServer) -> None:
    server.answers = [
        ok(b"\x00\x01", "Content-Encoding: br"),
        ok(b"not gzip", "Content-Encoding: gzip"),
    ]
    async with client_for(server.url) as client:
        with pytest.raises(PrometheusResponseError, match="unsupported Content-Encoding 'br'"):
            await client.query("up")
        with pytest.raises(PrometheusResponseError, match="cannot decode the gzip answer"):
            await client.query("up")


async def test_redirects_are_errors_naming_the_location(server: ScriptedServer) -> None:
    server.answers = [
        b"HTTP/1.1 302 Found\r\nLocation: https://login.example/\r\nContent-Length: 0\r\n\r\n"
    ]
    async with client_for(server.url) as client:
        with pytest.raises(PrometheusHTTPError) as caught:
            await client.query("up")
    assert caught.value.status == 302
    assert "redirect to https://login.example/ (not followed)" in caught.value.message


async def test_url_credentials_become_basic_auth_and_stay_out_of_messages(
    server: ScriptedServer,
) -> None:
    server.answers = [ok(VECTOR), CLOSE]
    url = f"http://adapter:s%40cret@127.0.0.1:{server.port}/prom"
    async with client_for(url) as client:
        await client.query("up")
        with pytest.raises(PrometheusConnectionError) as caught:
            await client.query("down")
    first = server.requests[0]
    assert first.request_line.startswith("GET /prom/api/v1/query?query=up&timeout=")
    assert first.header("Authorization") == "Basic " + base64.b64encode(b"adapter:s@cret").decode()
    assert first.header("Host") == f"127.0.0.1:{server.port}"
    assert "s%40cret" not in caught.value.message
    assert "s@cret" not in caught.value.message


async def test_post_sends_a_form_body_with_its_length(server: ScriptedServer) -> None:
    server.answers = [ok(VECTOR)]
    async with client_for(server.url, method="POST") as client:
        await client.query('sum(x{pod=~"a b|c"})')
    request = server.requests[0]
    assert request.request_line == "POST /api/v1/query HTTP/1.1"
    assert request.header("Content-Type") == "application/x-www-form-urlencoded"
    assert request.body.startswith(b"query=sum%28x%7Bpod%3D~%22a+b%7Cc%22%7D%29&timeout=")
    assert parse_qsl(request.body.decode())[0] == ("query", 'sum(x{pod=~"a b|c"})')
    assert request.header("Content-Length") == str(len(request.body))


async def test_a_bad_url_is_a_connection_error() -> None:
    async with client_for("ftp://prometheus") as client:
        with pytest.raises(PrometheusConnectionError, match="unsupported URL scheme"):
            await client.query("up")
