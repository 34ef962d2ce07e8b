"""A fake Prometheus HTTP API over real HTTP (optionally TLS), recording every request.

It answers ``/api/v1/query``, ``/api/v1/query_range`` and ``/api/v1/series`` from tables the test
fills in (exact query text -> samples), so client features can be checked on the wire: headers,
``timeout``, TLS client certificates, coalescing (requests counted), bounded concurrency (a gate
holds requests; the most seen in flight at once is recorded), cancellation (handlers cancelled when
the client hangs up) and error mapping (scripted error answers). It evaluates no PromQL: behaviour
against a real Prometheus is tested with Debian's ``prometheus`` (``tests/lab/prometheus.py``).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from types import TracebackType
from typing import Any, Self

import orjson
from aiohttp import web

Labels = Mapping[str, str]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    _: KW_ONLY
    params: tuple[tuple[str, str], ...]
    headers: Mapping[str, str]
    client_common_name: str | None

    def param(self, name: str) -> str | None:
        for key, value in self.params:
            if key == name:
                return value
        return None

    def params_named(self, name: str) -> list[str]:
        return [value for key, value in self.params if key == name]


@dataclass(frozen=True)
class FakeSample:
    """An instant-vector element; ``timestamp_seconds`` None means "the evaluation time"."""

    labels: Labels
    value: str
    _: KW_ONLY
    timestamp_seconds: float | None = None


@dataclass
class ScriptedAnswer:
    status: int
    body: bytes
    _: KW_ONLY
    times: int
    content_type: str = "application/json"


@dataclass
class FakePrometheus:
    """Serve with ``async with FakePrometheus() as prometheus:``; ``prometheus.url`` is the base.

    vectors: exact query text -> samples of an instant query (unknown queries: empty vector).
    scalars: exact query text -> scalar value text.
    matrices: exact query text -> [(labels, [(t, value_text), ...])].
    series: label sets (with ``__name__``) returned for every ``/api/v1/series`` call, or
        ``series_by_match`` for the ones whose ``match[]`` is listed there.
    responder: called with the query text of an instant query not found in ``vectors`` or
        ``scalars``; returns its samples (None: an empty vector).
    ssl_context: serve HTTPS with it.
    """

    vectors: dict[str, list[FakeSample]] = field(default_factory=dict)
    scalars: dict[str, str] = field(default_factory=dict)
    matrices: dict[str, list[tuple[Labels, list[tuple[float, str]]]]] = field(default_factory=dict)
    series: list[dict[str, str]] = field(default_factory=list)
    series_by_match: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    responder: Callable[[str], list[FakeSample] | None] | None = None
    ssl_context: ssl.SSLContext | None = None
    eval_time_seconds: float | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    cancelled: int = 0
    answered: int = 0
    gate: asyncio.Event | None = None
    _scripted: dict[str, list[ScriptedAnswer]] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    _port: int = 0
    _arrived: asyncio.Condition | None = None

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        app = web.Application()
        for path in ("/api/v1/query", "/api/v1/query_range", "/api/v1/series"):
            app.router.add_route("GET", path, self._handle)
            app.router.add_route("POST", path, self._handle)
        app.router.add_route("GET", "/prefix/api/v1/query", self._handle)
        self._arrived = asyncio.Condition()
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        await site.start()
        self._port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.gate is not None:
            self.gate.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self._port}"

    # ------------------------------------------------------------------ scripting

    def hold(self) -> asyncio.Event:
        """Make every request wait until the returned event is set."""
        self.gate = asyncio.Event()
        return self.gate

    def fail(
        self,
        path: str,
        *,
        status: int,
        body: Any = None,
        text: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` requests to ``path`` with ``status`` and a JSON ``body``
        (or a plain ``text`` body)."""
        if text is not None:
            answer = ScriptedAnswer(status, text.encode(), times=times, content_type="text/plain")
        else:
            answer = ScriptedAnswer(status, orjson.dumps(body), times=times)
        self._scripted.setdefault(path, []).append(answer)

    def fail_api(self, path: str, *, status: int, error_type: str, error: str) -> None:
        """A Prometheus API error envelope."""
        self.fail(
            path,
            status=status,
            body={"status": "error", "errorType": error_type, "error": error},
        )

    async def wait_for_requests(self, count: int, *, timeout_seconds: float = 5.0) -> None:
        """Wait until ``count`` requests have arrived (held ones included)."""
        assert self._arrived is not None
        async with asyncio.timeout(timeout_seconds), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)

    async def wait_for_cancelled(self, count: int, *, timeout_seconds: float = 5.0) -> None:
        assert self._arrived is not None
        async with asyncio.timeout(timeout_seconds), self._arrived:
            await self._arrived.wait_for(lambda: self.cancelled >= count)

    def queries(self, path: str = "/api/v1/query") -> list[str]:
        """The ``query`` parameter of every request to ``path``, in arrival order."""
        return [r.param("query") or "" for r in self.requests if r.path.endswith(path)]

    # ------------------------------------------------------------------ serving

    async def _notify(self) -> None:
        assert self._arrived is not None
        async with self._arrived:
            self._arrived.notify_all()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        params = list(request.query.items())
        if request.method == "POST":
            form = await request.post()
            params += [(key, str(value)) for key, value in form.items()]
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        self.requests.append(
            RecordedRequest(
                request.method,
                request.path,
                params=tuple(params),
                headers=dict(request.headers),
                client_common_name=_common_name(peer),
            )
        )
        await self._notify()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            response = self._answer(request.path, dict(params), params=params)
            self.answered += 1
            return response
        except asyncio.CancelledError:
            self.cancelled += 1
            asyncio.get_running_loop().create_task(self._notify())
            raise
        finally:
            self.in_flight -= 1

    def _answer(
        self, path: str, query: Mapping[str, str], *, params: Sequence[tuple[str, str]]
    ) -> web.Response:
        scripted = self._scripted.get(path.removeprefix("/prefix"))
        if scripted:
            answer = scripted[0]
            answer.times -= 1
            if answer.times <= 0:
                scripted.pop(0)
            return web.Response(
                status=answer.status, body=answer.body, content_type=answer.content_type
            )
        data: Any
        if path.endswith("/api/v1/query"):
            data = self._instant(query)
        elif path.endswith("/api/v1/query_range"):
            data = self._range(query)
        else:
            data = self._series([value for key, value in params if key == "match[]"])
        return web.Response(
            body=orjson.dumps({"status": "success", "data": data}),
            content_type="application/json",
        )

    def _eval_time(self, query: Mapping[str, str]) -> float:
        if "time" in query:
            return float(query["time"])
        if self.eval_time_seconds is not None:
            return self.eval_time_seconds
        return round(time.time(), 3)

    def _instant(self, query: Mapping[str, str]) -> dict[str, Any]:
        text = query.get("query", "")
        at = self._eval_time(query)
        if text in self.scalars:
            return {"resultType": "scalar", "result": [at, self.scalars[text]]}
        return {
            "resultType": "vector",
            "result": [
                {
                    "metric": dict(sample.labels),
                    "value": [
                        sample.timestamp_seconds if sample.timestamp_seconds is not None else at,
                        sample.value,
                    ],
                }
                for sample in self._vector(text)
            ],
        }

    def _vector(self, text: str) -> list[FakeSample]:
        if text in self.vectors:
            return self.vectors[text]
        if self.responder is not None:
            return self.responder(text) or []
        return []

    def _range(self, query: Mapping[str, str]) -> dict[str, Any]:
        return {
            "resultType": "matrix",
            "result": [
                {"metric": dict(labels), "values": [[t, v] for t, v in points]}
                for labels, points in self.matrices.get(query.get("query", ""), [])
            ],
        }

    def _series(self, matches: Sequence[str]) -> list[dict[str, str]]:
        if any(match in self.series_by_match for match in matches):
            found: list[dict[str, str]] = []
            for match in matches:
                found.extend(self.series_by_match.get(match, []))
            return found
        return list(self.series)


def _common_name(peer: Any) -> str | None:
    if not peer:
        return None
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None
