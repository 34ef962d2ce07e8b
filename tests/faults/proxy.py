"""An HTTP fault proxy between one component and kube-apiserver (test-only code).

The component's kubeconfig points at the proxy (TLS with a lab-issued certificate for 127.0.0.1);
the proxy forwards every request to the real API server with the component's own client
certificate, so the audit log still names the component. At a configured rate it answers a
request itself instead of forwarding it, with one of these faults:

- ``conflict``: 409 on a write (PUT, PATCH, POST, DELETE); reads are forwarded;
- ``throttle``: 429 with ``Retry-After: 1``;
- ``error`` and ``unavailable``: 500 and 503;
- ``gone``: on a watch, a 200 stream holding one ``ERROR`` event with a 410 ``Expired`` Status
  (what kube-apiserver sends when the resourceVersion is too old); other requests are forwarded;
- ``reset``: the connection is closed without an answer.

Every fault is injected *before* the request reaches the API server, so an injected failure
never hides a write that happened; the audit log then holds exactly the writes the component made.
Watches are streamed through chunk by chunk. The proxy runs its own event loop in a thread, so
synchronous tests drive it with ``start()``, ``set_rate()`` and ``stop()``.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from tests.lab.lab import Lab
from tests.lab.pki import KeyPair, issue_certificate, write_kubeconfig
from tests.loopthread import LoopThread

__all__ = ["FAULT_KINDS", "FaultProxy", "status_body"]

FAULT_KINDS = ("conflict", "throttle", "error", "unavailable", "gone", "reset")
WRITE_METHODS = frozenset({"PUT", "PATCH", "POST", "DELETE"})
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
STATUS_REASONS = {
    409: "Conflict",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


def status_body(code: int, message: str, reason: str) -> bytes:
    """A ``metav1.Status`` failure body as kube-apiserver writes it."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


def _is_watch(request: web.Request) -> bool:
    return request.query.get("watch", "").lower() in ("true", "1")


@dataclass
class _Plan:
    rate: float
    kinds: tuple[str, ...]


class FaultProxy:
    """One component's path to the API server, with faults at ``rate`` (0 = a plain proxy)."""

    def __init__(
        self,
        lab: Lab,
        *,
        user: str,
        client: KeyPair,
        work: Path,
        rate: float = 0.0,
        kinds: tuple[str, ...] = FAULT_KINDS,
        seed: int = 0,
    ) -> None:
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}")
        self._lab = lab
        self._user = user
        self._client = client
        self._work = work
        self._plan = _Plan(rate, kinds)
        self._rng = random.Random(seed)
        self._loop = LoopThread()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0
        self.injected: Counter[str] = Counter()
        self.forwarded = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ control (any thread)

    def start(self) -> Path:
        """Serve on 127.0.0.1; returns a kubeconfig for ``user`` that points at the proxy."""
        self._loop.start()
        self._loop.run(self._start())
        serving = issue_certificate(
            self._lab.pki.ca,
            self._work / f"{self._user}-proxy-serving",
            common_name="fault-proxy",
            ip_addresses=("127.0.0.1",),
            server=True,
        )
        self._serving = serving
        self._loop.run(self._listen(serving))
        return write_kubeconfig(
            self._work / f"{self._user}-via-proxy.kubeconfig",
            server=f"https://127.0.0.1:{self.port}",
            ca_path=self._lab.pki.ca.pair.cert_path,
            client=self._client,
            user=self._user,
        )

    def set_rate(self, rate: float) -> None:
        with self._lock:
            self._plan = _Plan(rate, self._plan.kinds)

    def stop(self) -> None:
        self._loop.stop(self._stop())

    # ------------------------------------------------------------------ the event loop's side

    async def _start(self) -> None:
        upstream = ssl.create_default_context(cafile=str(self._lab.pki.ca.pair.cert_path))
        upstream.load_cert_chain(str(self._client.cert_path), str(self._client.key_path))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=upstream, limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False,
        )

    async def _listen(self, serving: KeyPair) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(serving.cert_path), str(serving.key_path))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=2.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        # Streams still open (a watch the API server keeps open) end here, not at interpreter exit.
        pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def _choose(self, request: web.Request) -> str | None:
        with self._lock:
            plan = self._plan
        if plan.rate <= 0 or self._rng.random() >= plan.rate:
            return None
        kind = self._rng.choice(plan.kinds)
        if kind == "conflict" and request.method not in WRITE_METHODS:
            return None
        if kind == "gone" and not _is_watch(request):
            return None
        return kind

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        kind = self._choose(request)
        if kind is not None:
            self.injected[kind] += 1
            return await self._fault(request, kind)
        self.forwarded += 1
        return await self._forward(request)

    async def _fault(self, request: web.Request, kind: str) -> web.StreamResponse:
        if kind == "reset":
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=500)  # never sent: the connection is gone
        if kind == "gone":
            event = {
                "type": "ERROR",
                "object": orjson.loads(
                    status_body(410, "too old resource version: injected", "Expired")
                ),
            }
            return web.Response(
                status=200, body=orjson.dumps(event) + b"\n", content_type="application/json"
            )
        code = {"conflict": 409, "throttle": 429, "error": 500, "unavailable": 503}[kind]
        headers = {"Retry-After": "1"} if code == 429 else {}
        return web.Response(
            status=code,
            body=status_body(code, f"injected {kind}", STATUS_REASONS[code]),
            content_type="application/json",
            headers=headers,
        )

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read() if request.can_read_body else None
        url = f"{self._lab.server_url}{request.rel_url}"
        try:
            upstream = await self._session.request(
                request.method, url, headers=headers, data=body, allow_redirects=False
            )
        except aiohttp.ClientError as error:
            return web.Response(
                status=502,
                body=status_body(502, str(error), "BadGateway"),
                content_type="application/json",
            )
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in HOP_BY_HOP and key.lower() != "content-encoding":
                    response.headers[key] = value
            if "Content-Encoding" in upstream.headers:
                response.headers["Content-Encoding"] = upstream.headers["Content-Encoding"]
            try:
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
            except (ConnectionResetError, aiohttp.ClientError):
                pass  # the component or the API server closed the stream (a watch ending)
            return response

    def describe(self) -> dict[str, Any]:
        return {"forwarded": self.forwarded, "injected": dict(self.injected)}
