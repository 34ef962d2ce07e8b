"""A fake upstream metrics API server (KEDA's metrics server, an old prometheus-adapter) on a real
local HTTP port, for the router's tests: discovery lists and answers come from tables, every
request is recorded with its headers, and answers can be held until a test releases them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer


def resource_list(group_version: str, *names: str) -> dict[str, Any]:
    """An ``APIResourceList`` naming ``names`` (``pods/m`` for custom metrics)."""
    namespaced = group_version.startswith("external.")
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": [
            {
                "name": name,
                "singularName": "",
                "namespaced": namespaced or not name.startswith("namespaces/"),
                "kind": "ExternalMetricValueList" if namespaced else "MetricValueList",
                "verbs": ["get"],
            }
            for name in names
        ],
    }


@dataclass(frozen=True)
class Seen:
    path_qs: str
    headers: Mapping[str, str]


@dataclass
class FakeMetricsBackend:
    """``answers`` maps a raw path with query to ``(status, JSON body)``; discovery documents
    are answers too. Anything else is a 404 ``Status``."""

    answers: dict[str, tuple[int, Any]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    held: asyncio.Event | None = None
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _server: TestServer | None = None

    def lists(self, group_version: str, *names: str) -> None:
        self.answers[f"/apis/{group_version}"] = (200, resource_list(group_version, *names))

    def answer(self, path_qs: str, status: int, body: Any) -> None:
        self.answers[path_qs] = (status, body)

    def hold(self) -> asyncio.Event:
        """Answers wait until the returned event is set."""
        self.held = asyncio.Event()
        return self.held

    async def wait_for_metric_requests(self, count: int) -> None:
        async with self.arrived:
            await self.arrived.wait_for(lambda: len(self.metric_requests()) >= count)

    def metric_requests(self) -> list[Seen]:
        """What reached the backend apart from discovery."""
        return [s for s in self.seen if s.path_qs.count("/") > 3]

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._server = TestServer(app)
        await self._server.start_server()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return str(self._server.make_url("")).rstrip("/")

    async def _handle(self, request: web.Request) -> web.Response:
        path_qs = request.rel_url.raw_path_qs
        self.seen.append(Seen(path_qs, dict(request.headers)))
        async with self.arrived:
            self.arrived.notify_all()
        if self.held is not None:
            await self.held.wait()
        status, body = self.answers.get(
            path_qs,
            (
                404,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "the server could not find the requested resource",
                    "reason": "NotFound",
                    "code": 404,
                },
            ),
        )
        return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")
