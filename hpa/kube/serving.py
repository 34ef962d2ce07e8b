"""TLS listeners whose connections free their TLS state when they end, by reference counting.

``web.TCPSite(ssl_context=...)`` hands TLS to asyncio's ``loop.create_server(ssl=...)``. Each
accepted connection gets an ``asyncio.sslproto.SSLProtocol`` with a 256 KiB read buffer. When a
connection ends before its TLS handshake completes (a TCP probe that connects and closes, a client
that does not trust the certificate, a handshake that times out on a loaded machine), CPython
3.11-3.13 keep that protocol in reference cycles that only the cyclic garbage collector frees:

- the loop's accept task awaits a handshake *waiter* future; the handshake's exception is set on
  that future and raised in the task, so exception -> traceback -> the task's frame -> waiter ->
  exception;
- a failed handshake re-raises its ``ssl.SSLError`` inside ``SSLProtocol._on_handshake_complete``,
  whose frame (holding the protocol and the exception) lands in the exception's own traceback.

The buffers are not objects the collector counts, so hundreds of them (tens of MB) pile up
between full collections and the allocator keeps the high-water mark (``docs/reliability.md``,
the soak; ``python -m bench.tls_cycles`` shows it).

``TLSSite`` serves the same aiohttp application over the same ``ssl.SSLContext`` without either
cycle: the listener is a plain TCP server whose protocol is the TLS protocol itself, created
without a waiter (nothing awaits the handshake: the application protocol is told of the
connection once it is encrypted, as before), and a failed handshake's exception drops its
traceback once the protocol has handled it. A connection's TLS state is then freed as soon as the
connection ends, whichever way it ends.

On uvloop (``--event-loop uvloop``) the TLS is uvloop's own (``uvloop.loop.SSLProtocol``, in
Cython): it has neither cycle, so ``TLSSite`` hands it the ``ssl.SSLContext`` as
``web.TCPSite`` would.
"""

from __future__ import annotations

import asyncio
import ssl
from asyncio import sslproto
from typing import Any

from aiohttp import web


class _ServerTLSProtocol(sslproto.SSLProtocol):
    """The server side of one TLS connection; see the module's docstring."""

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        try:
            super()._on_handshake_complete(handshake_exc)
        finally:
            if isinstance(handshake_exc, BaseException):
                # Its traceback holds the frame that holds the exception (and this protocol).
                handshake_exc.__traceback__ = None


class TLSSite(web.BaseSite):
    """``web.TCPSite(runner, host, port, ssl_context=context)`` without the reference cycles of
    connections that end during the handshake. ``host`` None or empty listens on every
    interface."""

    __slots__ = ("_host", "_port")

    def __init__(
        self, runner: web.BaseRunner, host: str | None, port: int, *, ssl_context: ssl.SSLContext
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host or None
        self._port = port

    @property
    def name(self) -> str:
        return f"https://{self._host or '*'}:{self._port}"

    async def start(self) -> None:
        await super().start()
        loop = asyncio.get_running_loop()
        application = self._runner.server
        context = self._ssl_context
        assert application is not None
        assert context is not None

        if not isinstance(loop, asyncio.BaseEventLoop):
            # uvloop: its TLS protocol (Cython) is freed by reference counting however the
            # connection ends (tests/hpa/kube/test_serving.py, bench.tls_cycles --loop uvloop).
            self._server = await loop.create_server(
                application, self._host, self._port, ssl=context, backlog=self._backlog
            )
            return

        def connection() -> asyncio.BaseProtocol:
            # No waiter: SSLProtocol skips it when None (typeshed types it as a Future).
            waiter: Any = None
            return _ServerTLSProtocol(loop, application(), context, waiter, server_side=True)

        self._server = await loop.create_server(
            connection, self._host, self._port, backlog=self._backlog
        )
