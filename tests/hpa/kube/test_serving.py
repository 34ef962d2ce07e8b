"""TLSSite serves an aiohttp application over TLS, and a connection that ends during its TLS
handshake leaves no TLS state behind for the cyclic garbage collector (each holds a 256 KiB read
buffer). Each test runs on both event loops ``--event-loop`` offers (``hpa.kube.runtime.run``):
asyncio's, where TLSSite brings its own TLS protocol, and uvloop, whose TLS it uses."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import gc
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web

from hpa.kube.runtime import EVENT_LOOPS, EventLoop, run
from hpa.kube.serving import TLSSite
from hpa.kube.tls import build_context
from tests.faults.handshakes import ENDERS, server_tls_protocols
from tests.lab.pki import CertificateAuthority, create_ca, issue_certificate

CONNECTIONS = 20


@dataclass
class Served:
    port: int
    ca: CertificateAuthority
    directory: Path


async def _peer_common_name(request: web.Request) -> web.Response:
    transport = request.transport
    assert transport is not None
    peer = transport.get_extra_info("ssl_object").getpeercert()
    subject = dict(item[0] for item in peer["subject"]) if peer else {}
    return web.Response(text=f"{request.scheme} {subject.get('commonName', '-')}")


@contextlib.asynccontextmanager
async def serving(directory: Path) -> AsyncIterator[Served]:
    ca = create_ca(directory, "ca", common_name="ca")
    serving = issue_certificate(
        ca, directory / "serving", common_name="127.0.0.1", ip_addresses=("127.0.0.1",), server=True
    )
    context = build_context(
        serving.cert_path, serving.key_path, client_ca_pem=ca.pair.cert_path.read_bytes()
    )
    app = web.Application()
    app.router.add_get("/", _peer_common_name)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await TLSSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    try:
        yield Served(int(runner.addresses[0][1]), ca, directory)
    finally:
        await runner.cleanup()


@pytest.fixture(params=EVENT_LOOPS)
def loop_kind(request: pytest.FixtureRequest) -> EventLoop:
    """The test's body runs on a new loop of this kind."""
    kind: EventLoop = request.param
    return kind


async def _get(port: int, context: ssl.SSLContext) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    writer.write(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
    answer = await reader.read()
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()
    return answer


def test_serves_the_application_with_the_client_certificate(
    tmp_path: Path, loop_kind: EventLoop
) -> None:
    async def body() -> bytes:
        async with serving(tmp_path) as served:
            client = issue_certificate(
                served.ca, served.directory / "client", common_name="alice", client=True
            )
            context = ssl.create_default_context(cafile=str(served.ca.pair.cert_path))
            context.load_cert_chain(client.cert_path, client.key_path)
            return await _get(served.port, context)

    answer = run(body(), event_loop=loop_kind)

    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.endswith(b"https alice")


async def _settled(count: Callable[[], int], target: int) -> int:
    """``count()`` once it reaches ``target``, or its value after the server had 5 s to close
    the connections."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5.0
    value = count()
    while value > target and loop.time() < deadline:
        await asyncio.sleep(0.05)
        value = count()
    return value


@pytest.mark.parametrize("kind", sorted(ENDERS))
def test_connections_ended_in_the_handshake_leave_no_tls_state_for_the_collector(
    tmp_path: Path, loop_kind: EventLoop, kind: str
) -> None:
    async def body() -> tuple[int, int]:
        async with serving(tmp_path) as served:
            gc.collect()
            gc.disable()
            try:
                baseline = server_tls_protocols()
                for _ in range(CONNECTIONS):
                    await ENDERS[kind](served.port)
                return baseline, await _settled(server_tls_protocols, baseline)
            finally:
                gc.enable()

    baseline, alive = run(body(), event_loop=loop_kind)

    assert alive == baseline
