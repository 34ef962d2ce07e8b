"""Requests of ``KubeClient`` whose connections end the ways the fault proxy (and a loaded API
server) end them, against a local TLS server (test-only code shared by
``tests/hpa/kube/test_client_connections.py`` and ``bench/tls_cycles.py``)."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import gc
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web

from hpa.kube.client import ApiError, KubeClient, RetryPolicy, TransportError
from hpa.kube.serving import TLSSite
from tests.faults.handshakes import UVLOOP_TLS_PROTOCOL
from tests.lab.pki import create_ca, issue_certificate

__all__ = ["CLIENT_ENDINGS", "client_tls_protocols", "ending_server", "loopback_tls"]

TIMEOUT_SECONDS = 0.2
_GONE = {
    "type": "ERROR",
    "object": {
        "kind": "Status",
        "code": 410,
        "reason": "Expired",
        "message": "too old resource version",
    },
}


def client_tls_protocols() -> int:
    """The client-side TLS protocols alive in this process (each holds a 256 KiB read buffer):
    asyncio's ``SSLProtocol`` objects of the client side, and uvloop's of either side (uvloop does
    not say which side one is)."""
    return sum(
        isinstance(o, UVLOOP_TLS_PROTOCOL)
        or (isinstance(o, asyncio.sslproto.SSLProtocol) and not o._server_side)
        for o in gc.get_objects()
    )


async def _ok(_: web.Request) -> web.Response:
    return web.json_response({"kind": "Pod"})


async def _status(request: web.Request) -> web.Response:
    code = int(request.match_info["code"])
    body = {"kind": "Status", "code": code, "reason": "Injected", "message": "injected"}
    return web.json_response(body, status=code, headers={"Retry-After": "0"})


async def _reset(request: web.Request) -> web.Response:
    assert request.transport is not None
    request.transport.abort()
    return web.Response(status=500)  # never sent


async def _cut(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Length": "4096"})
    await response.prepare(request)
    await response.write(b'{"kind": "PodList", "items": [')
    await asyncio.sleep(0.01)
    assert request.transport is not None
    request.transport.abort()
    return response


async def _gone(_: web.Request) -> web.Response:
    return web.Response(body=orjson.dumps(_GONE) + b"\n", content_type="application/json")


async def _watch_ends(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}}
    await response.write(orjson.dumps(bookmark) + b"\n")
    await response.write_eof()
    return response


async def _silent(_: web.Request) -> web.Response:
    await asyncio.sleep(TIMEOUT_SECONDS * 10)
    return web.json_response({})


def loopback_tls(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A fresh CA's serving context for 127.0.0.1, and a client context trusting that CA."""
    ca = create_ca(directory, "ca", common_name="loopback-ca")
    serving = issue_certificate(
        ca, directory / "serving", common_name="127.0.0.1", ip_addresses=("127.0.0.1",), server=True
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(serving.cert_path, serving.key_path)
    return context, ssl.create_default_context(cafile=str(ca.pair.cert_path))


@contextlib.asynccontextmanager
async def ending_server(
    directory: Path,
) -> AsyncIterator[Callable[[], contextlib.AbstractAsyncContextManager[KubeClient]]]:
    """A TLS server (``TLSSite``, a certificate of a fresh CA) with a route per ending; yields
    a factory of ``KubeClient`` trusting it (one try per request, requests time out after
    0.2 s), each closed (with its pool) when its block ends."""
    context, trusted = loopback_tls(directory)
    app = web.Application()
    app.router.add_get("/ok", _ok)
    app.router.add_get("/status/{code}", _status)
    app.router.add_get("/reset", _reset)
    app.router.add_get("/cut", _cut)
    app.router.add_get("/gone", _gone)
    app.router.add_get("/watch-ends", _watch_ends)
    app.router.add_get("/silent", _silent)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = TLSSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = int(runner.addresses[0][1])

    @contextlib.asynccontextmanager
    async def kube_client() -> AsyncIterator[KubeClient]:
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trusted))
        client = KubeClient(
            session,
            f"https://127.0.0.1:{port}",
            retry=RetryPolicy(max_attempts=1),
            request_timeout_seconds=TIMEOUT_SECONDS,
        )
        try:
            yield client
        finally:
            await client.close()

    try:
        yield kube_client
    finally:
        await runner.cleanup()


async def _get(client: KubeClient, path: str) -> None:
    with contextlib.suppress(ApiError, TransportError):
        await client.get(path)


async def _watch(client: KubeClient, path: str) -> None:
    """Consume a watch as the informer does: an ``ERROR`` event raises its typed error."""
    stream = client.watch(path, idle_timeout_seconds=TIMEOUT_SECONDS)
    with contextlib.suppress(ApiError, TransportError):
        async with contextlib.aclosing(stream):
            async for event in stream:
                if event.get("type") == "ERROR":
                    raise ApiError.__new__(ApiError)  # the informer raises error_for_status(...)


def _ender(
    call: Callable[[KubeClient, str], Awaitable[None]], path: str
) -> Callable[[KubeClient], Awaitable[None]]:
    async def end(client: KubeClient) -> None:
        await call(client, path)

    return end


CLIENT_ENDINGS: dict[str, Callable[[KubeClient], Awaitable[None]]] = {
    "complete": _ender(_get, "/ok"),
    "409-answer": _ender(_get, "/status/409"),
    "503-answer": _ender(_get, "/status/503"),
    "reset": _ender(_get, "/reset"),
    "cut-mid-body": _ender(_get, "/cut"),
    "timeout": _ender(_get, "/silent"),
    "watch-410": _ender(_watch, "/gone"),
    "watch-ends": _ender(_watch, "/watch-ends"),
    "watch-reset": _ender(_watch, "/reset"),
    "watch-idle": _ender(_watch, "/silent"),
}
