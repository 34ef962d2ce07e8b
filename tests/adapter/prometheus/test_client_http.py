"""``PrometheusClient`` over HTTP against real TCP servers that answer with scripted bytes:
framing (Content-Length, chunked, until close, interim 1xx), keep-alive reuse, the retry when a
server drops an idle connection, cancellation, malformed answers, Content-Encoding, redirects,
URL credentials, extra headers, the User-Agent and POST bodies.

Upstream counterpart: Go's ``net/http`` transport behaviour that prometheus-adapter relies on.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
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
from adapter.prometheus.client import USER_AGENT, BaseURL

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


def ok(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{line}\r\n" for line in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


def vector(value: str) -> bytes:
    """An instant-query answer with one sample of ``value``."""
    return orjson.dumps(
        {
            "status": "success",
            "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1.5, value]}]},
        }
    )


def chunked(*chunks: bytes) -> list[bytes]:
    pieces = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]
    pieces += [b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks]
    return [*pieces, b"0\r\n\r\n"]


async def value_of(client: PrometheusClient, query: str = "up") -> str:
    return (await client.query(query)).samples[0].value_text


VECTOR = orjson.dumps(
    {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1.5, "7"]}]},
    }
)


def client_for(url: str, **options: object) -> PrometheusClient:
    return PrometheusClient(PrometheusConnection(url, timeout_seconds=5.0, **options))  # type: ignore[arg-type]


# ---------------------------------------------------------------- framing and keep-alive


async def test_answers_framed_by_length_and_chunks_share_one_connection(
    server: ScriptedServer,
) -> None:
    body = vector("3")
    server.answers = [
        ok(vector("1")),
        chunked(vector("2")[:10], vector("2")[10:]),
        [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body[:7]), body[7:]],
    ]
    async with client_for(server.url) as client:
        values = [await value_of(client, f"q{index}") for index in range(3)]
    assert values == ["1", "2", "3"]
    assert server.connections == 1
    assert [request.request_line.split("&")[0] for request in server.requests] == [
        "GET /api/v1/query?query=q0",
        "GET /api/v1/query?query=q1",
        "GET /api/v1/query?query=q2",
    ]


async def test_chunk_extensions_and_trailers(server: ScriptedServer) -> None:
    body = vector("4")
    server.answers = [
        [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"%x;name=value\r\n%s\r\n" % (len(body), body),
            b"0\r\nExpires: never\r\n\r\n",
        ],
        ok(vector("5")),
    ]
    async with client_for(server.url) as client:
        values = [await value_of(client), await value_of(client)]
    assert values == ["4", "5"]
    assert server.connections == 1


async def test_an_answer_without_length_ends_with_the_connection(server: ScriptedServer) -> None:
    body = vector("6")
    server.answers = [[b"HTTP/1.1 200 OK\r\n\r\n" + body[:5], body[5:], CLOSE], ok(vector("7"))]
    async with client_for(server.url) as client:
        values = [await value_of(client), await value_of(client)]
    assert values == ["6", "7"]
    assert server.connections == 2


async def test_connection_close_header_is_honoured(server: ScriptedServer) -> None:
    server.answers = [ok(vector("1"), "Connection: close"), ok(vector("2"))]
    async with client_for(server.url) as client:
        await value_of(client)
        await value_of(client)
    assert server.connections == 2


async def test_interim_answers_are_skipped(server: ScriptedServer) -> None:
    server.answers = [
        [
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n",
            ok(vector("8")),
        ]
    ]
    async with client_for(server.url) as client:
        assert await value_of(client) == "8"


async def test_statuses_are_errors_and_the_connection_is_kept(server: ScriptedServer) -> None:
    server.answers = [
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nContent-TYPE: text/plain"
        b"\r\n\r\nbusy",
        b"HTTP/1.1 204 No Content\r\n\r\n",
        ok(vector("9")),
    ]
    async with client_for(server.url) as client:
        with pytest.raises(PrometheusHTTPError) as unavailable:
            await value_of(client)
        with pytest.raises(PrometheusResponseError, match="HTTP 204: answer is not JSON"):
            await value_of(client)
        assert await value_of(client) == "9"
    assert unavailable.value.status == 500
    assert unavailable.value.message == "unknown response code 500: busy"
    assert server.connections == 1


async def test_requests_carry_the_user_agent_and_the_extra_headers(server: ScriptedServer) -> None:
    server.answers = [ok(vector("1"))]
    async with client_for(server.url, headers={"X-Scope-OrgID": "tenant-a"}) as client:
        await value_of(client)
    request = server.requests[0]
    assert request.header("User-Agent") == USER_AGENT == "hpa-adapter"
    assert request.header("X-Scope-OrgID") == "tenant-a"
    assert request.header("Accept-Encoding") == "identity"
    assert request.header("Host") == f"127.0.0.1:{server.port}"


def test_header_values_with_cr_or_lf_never_reach_the_wire() -> None:
    for value in ("a\r\nX-Injected: 1", "a\nb", "a\x00b"):
        with pytest.raises(ValueError, match="CR, LF or NUL"):
            PrometheusConnection("http://prometheus", headers={"X-Scope-OrgID": value})


# ---------------------------------------------------------------- failures


async def test_a_dropped_idle_connection_is_retried_once_on_a_new_one(
    server: ScriptedServer,
) -> None:
    # The server answers, then closes the kept-alive connection as the next request arrives
    # (the keep-alive race): the request goes again on a new connection.
    server.answers = [ok(vector("1")), CLOSE, ok(vector("2"))]
    async with client_for(server.url) as client:
        await value_of(client, "first")
        assert await value_of(client, "second") == "2"
    assert server.connections == 2
    assert [(r.request_line.split("&")[0], r.connection) for r in server.requests] == [
        ("GET /api/v1/query?query=first", 1),
        ("GET /api/v1/query?query=second", 1),
        ("GET /api/v1/query?query=second", 2),
    ]


async def test_a_server_that_closes_without_answering_is_a_connection_error(
    server: ScriptedServer,
) -> None:
    server.answers = [CLOSE, CLOSE]
    async with client_for(server.url) as client:
        with pytest.raises(PrometheusConnectionError, match="cannot reach Prometheus at http://"):
            await value_of(client)


async def test_a_truncated_answer_is_a_connection_error(server: ScriptedServer) -> None:
    server.answers = [[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial", CLOSE]]
    async with client_for(server.url) as client:
        with pytest.raises(PrometheusConnectionError):
            await value_of(client)


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
async def test_malformed_answers_fail_clearly_and_the_next_request_works(
    server: ScriptedServer, answer: bytes
) -> None:
    server.answers = [[answer], ok(vector("1"))]
    async with client_for(server.url) as client:
        with pytest.raises(PrometheusConnectionError, match="cannot reach Prometheus"):
            await value_of(client)
        assert await value_of(client) == "1"  # on a new connection
    assert server.connections == 2


async def test_connection_refused_is_a_connection_error() -> None:
    scripted = ScriptedServer()
    await scripted.start()
    await scripted.stop()
    async with client_for(scripted.url) as client:
        with pytest.raises(PrometheusConnectionError, match="cannot reach Prometheus"):
            await value_of(client)


async def test_cancelling_the_caller_aborts_the_connection(server: ScriptedServer) -> None:
    server.answers = [HANG, ok(vector("1"))]
    async with client_for(server.url) as client:
        task = asyncio.create_task(value_of(client))
        await server.request_seen.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await server.client_hung_up.wait()
        assert await value_of(client) == "1"
    assert server.connections == 2


def test_base_urls() -> None:
    base = BaseURL.parse("https://prometheus.monitoring.svc:9090/prefix/")
    assert (base.origin, base.path_prefix, base.username) == (
        "https://prometheus.monitoring.svc:9090",
        "/prefix",
        None,
    )
    ipv6 = BaseURL.parse("http://u:p%40ss@[::1]/")
    assert (ipv6.origin, ipv6.username, ipv6.password) == ("http://[::1]", "u", "p@ss")
    assert ipv6.display == "http://[::1]:80"
    for bad in ("ftp://x", "http://", "http://x/?q=1", "http://x:99999"):
        with pytest.raises(ValueError):  # noqa: PT011 - each has its own message
            BaseURL.parse(bad)


# ---------------------------------------------------------------- encodings, redirects, auth


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
    server.answers = [ok(compress(vector("7")), f"Content-Encoding: {encoding}")]
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
    server.answers = [ok(vector("7")), CLOSE]
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
    server.answers = [ok(vector("7"))]
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


async def test_a_bearer_token_file_is_read_again_when_it_changes(
    server: ScriptedServer, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    server.answers = [ok(vector("1")), ok(vector("2"))]
    async with client_for(server.url, bearer_token_file=token) as client:
        await value_of(client)
        token.write_text("second-token\n")
        await value_of(client)
    assert [r.header("Authorization") for r in server.requests] == [
        "Bearer first",
        "Bearer second-token",
    ]
