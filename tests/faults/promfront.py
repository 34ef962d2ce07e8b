"""A misbehaving Prometheus: an HTTP front between ``hpa adapter`` and the lab's real Prometheus
(test-only code).

The adapter's ``--prometheus-url`` points at the front; in the ``pass`` mode it forwards every
request and its answer unchanged (and closes the connection without an answer when Prometheus
is down, as a refused connection looks to the adapter). The other modes change what Prometheus
seems to answer:

- ``slow``: every request waits ``slow_seconds`` (10 s) before it is forwarded;
- ``garbage``: ``200 OK`` with a JSON content type and a body that is not JSON;
- ``partial``: half of the value samples of each instant query are dropped (rounded up, so a
  one-series answer comes back empty), as a partial response of a federated query can be;
- ``nan``, ``inf``, ``-inf``: every value sample reads ``NaN``, ``+Inf`` or ``-Inf``;
- ``stale``: every staleness-probe sample (the newest raw sample's time, ``timestamp()``) is ten
  minutes older than the evaluation time, as a series whose target stopped being scraped.

The value and probe samples of a merged query are told apart by the ``hpa_adapter_part`` label
the adapter adds; a query of its own starting ``max(timestamp(`` is a probe. The series list
(``/api/v1/series``, metric discovery) is changed only by ``slow`` and ``garbage``. The front
runs its own event loop in a thread, so synchronous tests drive it with ``start()``,
``set_mode()`` and ``stop()``.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import Counter
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from tests.faults.proxy import HOP_BY_HOP
from tests.loopthread import LoopThread

__all__ = ["MODES", "PrometheusFront"]

MODES = ("pass", "slow", "garbage", "partial", "nan", "inf", "-inf", "stale")
PART_LABEL = "hpa_adapter_part"
STALE_SECONDS = 600.0
GARBAGE = b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[17'
NON_FINITE = {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}


def _is_probe(sample: dict[str, Any], query: str) -> bool:
    part = (sample.get("metric") or {}).get(PART_LABEL)
    if part is not None:
        return bool(part == "probe")
    return query.lstrip().startswith("max(timestamp(")


def rewrite(mode: str, query: str, body: dict[str, Any]) -> dict[str, Any]:
    """An instant query's answer as the misbehaving Prometheus of ``mode`` would give it."""
    data = body.get("data") or {}
    result = data.get("result")
    if body.get("status") != "success" or not isinstance(result, list):
        return body
    probes = [s for s in result if _is_probe(s, query)]
    values = [s for s in result if not _is_probe(s, query)]
    if mode == "partial":
        values = values[: len(values) // 2]
    elif mode in NON_FINITE:
        for sample in values:
            sample["value"] = [sample["value"][0], NON_FINITE[mode]]
    elif mode == "stale":
        for sample in probes:
            evaluated = float(sample["value"][0])
            sample["value"] = [evaluated, repr(math.floor(evaluated - STALE_SECONDS))]
    data["result"] = values + probes
    return body


class PrometheusFront:
    """The adapter's path to Prometheus, misbehaving as ``mode`` says (``pass``: it does not)."""

    def __init__(self, upstream_url: str, *, slow_seconds: float = 10.0) -> None:
        self._upstream = upstream_url.rstrip("/")
        self.slow_seconds = slow_seconds
        self._mode = "pass"
        self._lock = threading.Lock()
        self._loop = LoopThread()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0
        self.served: Counter[str] = Counter()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        self._loop.start()
        self._loop.run(self._start())
        return self.url

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown Prometheus front mode {mode!r}; known: {MODES}")
        with self._lock:
            self._mode = mode

    def stop(self) -> None:
        self._loop.stop(self._stop())

    async def _start(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5), auto_decompress=False
        )
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = int((getattr(server, "sockets", None) or [])[0].getsockname()[1])

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            mode = self._mode
        self.served[mode] += 1
        if mode == "garbage":
            return web.Response(status=200, body=GARBAGE, content_type="application/json")
        if mode == "slow":
            await asyncio.sleep(self.slow_seconds)
        assert self._session is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            async with self._session.request(
                request.method,
                f"{self._upstream}{request.rel_url}",
                headers=headers,
                data=body or None,
            ) as upstream:
                status, answer = upstream.status, await upstream.read()
                content_type = upstream.headers.get("Content-Type", "application/json")
        except aiohttp.ClientError:
            assert request.transport is not None
            request.transport.abort()  # Prometheus is down: the adapter sees no answer
            return web.Response(status=502)
        if request.path == "/api/v1/query" and status == 200 and mode not in ("pass", "slow"):
            form = await request.post() if request.method == "POST" else request.query
            query = str(form.get("query", "")) or request.query.get("query", "")
            answer = orjson.dumps(rewrite(mode, query, orjson.loads(answer)))
        return web.Response(status=status, body=answer, headers={"Content-Type": content_type})
