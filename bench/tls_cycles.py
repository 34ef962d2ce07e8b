"""How long asyncio keeps the TLS state of a connection after it ends: freed at once, or only by
the cyclic garbage collector?

Run::

    .venv/bin/python -m bench.tls_cycles --connections 50

An aiohttp server with TLS (a lab-issued certificate) on 127.0.0.1, once on aiohttp's
``web.TCPSite(ssl_context=...)`` and once on ``hpa.kube.serving.TLSSite``, which ``hpa adapter``
and ``hpa vpa admission`` serve on.
With the cyclic collector off, the script makes ``--connections`` connections of each kind and
counts the server's ``asyncio.sslproto.SSLProtocol`` objects still alive (each holds a 256 KiB read
buffer), then runs one collection and counts again:

- ``complete``: a TLS handshake, one request, the answer, a clean close;
- ``tcp-only``: a TCP connect and close, no TLS handshake (as a TCP probe does);
- ``failed-handshake``: a handshake the client abandons (it does not trust the server);
- ``not-tls``: a plain HTTP request on the TLS port (the server's handshake fails).

docs/reliability.md (the soak) uses it to explain the adapter's saw-tooth heap before the
change to ``TLSSite``, and to show that ``TLSSite`` leaves none of them to the collector.

``--loop uvloop`` runs the same on uvloop (``hpa adapter``'s default ``--event-loop``), where both
listeners use uvloop's own TLS protocol (``uvloop.loop.SSLProtocol``, in Cython; uvloop does not
say which end a protocol serves, so the clients' are counted with the server's). With ``--side
client`` on uvloop the count therefore includes the in-process server's end of connections it
still holds (the ``timeout`` and ``watch-idle`` endings' server sleeps past the client's timeout):
they are freed without a collection once the server lets go, and the next kinds read below zero.

``--side client`` measures the other end: ``hpa.kube.client.KubeClient`` (what every component
uses towards kube-apiserver) makes ``--connections`` requests of each kind against a ``TLSSite``
server that ends them the ways the soak's fault proxy and a loaded server do
(``tests/hpa/kube/client_endings.py``: a 409 or 503 answer, a reset without an answer, a body cut
short, a request timeout, a watch answering an ``ERROR`` 410 event, a watch the server ends, a
watch reset, a watch silent past its idle timeout), and counts the client's ``SSLProtocol``
objects the same way, once the client and its connection pool are closed.
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.sslproto
import contextlib
import gc
import ssl
import tempfile
from pathlib import Path

from aiohttp import web

from hpa.kube.runtime import EVENT_LOOPS, run
from hpa.kube.serving import TLSSite
from tests.faults.handshakes import ENDERS, server_tls_protocols
from tests.hpa.kube.client_endings import (
    CLIENT_ENDINGS,
    client_tls_protocols,
    ending_server,
    loopback_tls,
)

KINDS = ("complete", "tcp-only", "failed-handshake", "not-tls")
SITES = ("aiohttp", "hpa")
SITE_NAMES = {
    "aiohttp": "web.TCPSite(ssl_context=...) (asyncio's create_server(ssl=...))",
    "hpa": "hpa.kube.serving.TLSSite (hpa adapter, hpa vpa admission)",
}


async def _connect(kind: str, port: int, trusted: ssl.SSLContext) -> None:
    if kind == "complete":
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=trusted)
        writer.write(b"GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        await writer.drain()
        await reader.read()
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    else:
        await ENDERS[kind](port)


async def measure(connections: int, site_kind: str) -> dict[str, tuple[int, int]]:
    context, trusted = loopback_tls(Path(tempfile.mkdtemp(prefix="tls-cycles-")))
    app = web.Application()

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.router.add_get("/", ok)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site: web.BaseSite
    if site_kind == "aiohttp":
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    else:
        site = TLSSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = int(runner.addresses[0][1])
    results = {}
    try:
        for kind in KINDS:
            gc.collect()
            gc.disable()
            base = server_tls_protocols()
            for _ in range(connections):
                await _connect(kind, port, trusted)
            await asyncio.sleep(0.5)
            before = server_tls_protocols() - base
            gc.enable()
            gc.collect()
            results[kind] = (before, server_tls_protocols() - base)
    finally:
        gc.enable()
        await runner.cleanup()
    return results


async def measure_client(connections: int) -> dict[str, tuple[int, int]]:
    results = {}
    with tempfile.TemporaryDirectory(prefix="tls-cycles-") as directory:
        async with ending_server(Path(directory)) as kube_client:
            for kind, end in CLIENT_ENDINGS.items():
                gc.collect()
                gc.disable()
                try:
                    base = client_tls_protocols()
                    async with kube_client() as client:
                        for _ in range(connections):
                            await end(client)
                    await asyncio.sleep(0.5)
                    before = client_tls_protocols() - base
                finally:
                    gc.enable()
                gc.collect()
                results[kind] = (before, client_tls_protocols() - base)
    return results


def report(title: str, results: dict[str, tuple[int, int]]) -> None:
    print(f"{title}:")
    for kind, (before, after) in results.items():
        print(
            f"  {kind:17} SSLProtocol objects alive: {before:4d} with the collector off, "
            f"{after:4d} after one collection"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tls_cycles", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument(
        "--site",
        choices=SITES,
        action="append",
        help="the listener: aiohttp's web.TCPSite or hpa.kube.serving.TLSSite (default both)",
    )
    parser.add_argument(
        "--side",
        choices=("server", "client"),
        default="server",
        help="count the server's TLS state (default) or KubeClient's",
    )
    parser.add_argument(
        "--loop", choices=EVENT_LOOPS, default="asyncio", help="the event loop (default asyncio)"
    )
    args = parser.parse_args(argv)
    print(f"bench.tls_cycles: {args.connections} connections of each kind, on {args.loop}")
    if args.side == "client":
        results = run(measure_client(args.connections), event_loop=args.loop)
        report("hpa.kube.client.KubeClient", results)
        return 0
    for site_kind in args.site or SITES:
        report(
            SITE_NAMES[site_kind], run(measure(args.connections, site_kind), event_loop=args.loop)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
