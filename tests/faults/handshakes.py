"""Connections that end during the server's TLS handshake, as probes, confused clients and
clients that do not trust the server make them (test-only code shared by
``tests/hpa/kube/test_serving.py`` and ``bench/tls_cycles.py``)."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import gc
import ssl
from collections.abc import Awaitable, Callable

import uvloop.loop

__all__ = [
    "ENDERS",
    "UVLOOP_TLS_PROTOCOL",
    "not_tls",
    "server_tls_protocols",
    "tcp_only",
    "untrusting_client",
]

UVLOOP_TLS_PROTOCOL: type = uvloop.loop.SSLProtocol  # type: ignore[attr-defined]  # not in its stubs
"""uvloop's own TLS protocol (Cython), what a connection on its loop gets."""


def server_tls_protocols() -> int:
    """The server-side TLS protocols alive in this process (each holds a 256 KiB read buffer):
    asyncio's ``SSLProtocol`` objects of the server side, and uvloop's of either side (uvloop
    does not say which side one is, so a client's left alive in the same process counts too)."""
    return sum(
        isinstance(o, UVLOOP_TLS_PROTOCOL)
        or (isinstance(o, asyncio.sslproto.SSLProtocol) and o._server_side)
        for o in gc.get_objects()
    )


async def tcp_only(port: int) -> None:
    """A TCP connect and close, no TLS (as a TCP probe does)."""
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def not_tls(port: int) -> None:
    """A plain HTTP request on the TLS port: the server's handshake fails."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
    with contextlib.suppress(OSError):
        await writer.drain()
        await reader.read()
    writer.close()


async def untrusting_client(port: int) -> None:
    """A TLS client that does not trust the server's certificate and abandons the handshake."""
    with contextlib.suppress(OSError, ssl.SSLError):
        await asyncio.open_connection("127.0.0.1", port, ssl=ssl.create_default_context())


ENDERS: dict[str, Callable[[int], Awaitable[None]]] = {
    "tcp-only": tcp_only,
    "not-tls": not_tls,
    "failed-handshake": untrusting_client,
}
