"""A fake of the Kubernetes API parts a delegated API server calls, over real HTTP.

Serves discovery (``/api``, ``/apis``, ``/api/v1``, ``/apis/apps/v1``: the core kinds and
Deployments, what the adapter's REST mapper reads at start), ``GET /api/v1/pods`` and
``/api/v1/nodes`` (a list from a table; a watch that stays open without events),
``POST /apis/authentication.k8s.io/v1/tokenreviews`` (from a token table),
``POST /apis/authorization.k8s.io/v1/subjectaccessreviews`` (from a rule the test sets, or a
scripted failure) and ``GET /api/v1/namespaces/kube-system/configmaps/
extension-apiserver-authentication`` (from a data dict), recording every request body so tests
can assert the exact review sent. It evaluates no RBAC: the test's rule decides.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import orjson
from aiohttp import web

JsonObject = dict[str, Any]
SarRule = Callable[[Mapping[str, Any]], tuple[bool, str]]

CONFIGMAP_PATH = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


def _status(code: int, reason: str, *, message: str) -> JsonObject:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _resource(name: str, kind: str, *, namespaced: bool = True) -> JsonObject:
    return {"name": name, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind}


DISCOVERY: dict[str, JsonObject] = {
    "/api": {"kind": "APIVersions", "versions": ["v1"]},
    "/apis": {
        "kind": "APIGroupList",
        "groups": [
            {
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
            }
        ],
    },
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            _resource("pods", "Pod"),
            _resource("services", "Service"),
            _resource("namespaces", "Namespace", namespaced=False),
            _resource("nodes", "Node", namespaced=False),
        ],
    },
    "/apis/apps/v1": {
        "kind": "APIResourceList",
        "groupVersion": "apps/v1",
        "resources": [_resource("deployments", "Deployment")],
    },
}


@dataclass(kw_only=True)
class FakeKubeAuth:
    tokens: dict[str, JsonObject] = field(default_factory=dict)  # token -> user
    configmap: dict[str, str] | None = None
    sar_rule: SarRule = lambda spec: (False, "")
    sar_failures: int = 0  # answer this many SARs with 500
    # When set, the review's ``status`` is answered verbatim (to send malformed answers).
    sar_status: JsonObject | None = None
    token_status: JsonObject | None = None
    token_reviews: list[JsonObject] = field(default_factory=list)
    access_reviews: list[JsonObject] = field(default_factory=list)
    configmap_reads: int = 0
    pods: list[JsonObject] = field(default_factory=list)
    nodes: list[JsonObject] = field(default_factory=list)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None
    url: str = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/apis/authentication.k8s.io/v1/tokenreviews", self._token_review)
        app.router.add_post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews", self._access_review
        )
        app.router.add_get(CONFIGMAP_PATH, self._configmap)
        app.router.add_get("/api/v1/pods", self._collection)
        for path, document in DISCOVERY.items():
            app.router.add_get(path, functools.partial(self._discovery, document))
        app.router.add_get("/api/v1/nodes", self._collection)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _discovery(self, document: JsonObject, request: web.Request) -> web.Response:
        return web.json_response(document)

    async def _token_review(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.token_reviews.append(body)
        user = self.tokens.get(body["spec"]["token"])
        status: JsonObject = {"authenticated": user is not None}
        if user is not None:
            status["user"] = user
        answer = {**body, "status": status if self.token_status is None else self.token_status}
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    async def _access_review(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.access_reviews.append(body)
        if self.sar_failures > 0:
            self.sar_failures -= 1
            return web.Response(
                body=orjson.dumps(_status(500, "InternalError", message="etcd is down")),
                status=500,
                content_type="application/json",
            )
        allowed, reason = self.sar_rule(body["spec"])
        status = {"allowed": allowed, "reason": reason}
        answer = {**body, "status": status if self.sar_status is None else self.sar_status}
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    async def _collection(self, request: web.Request) -> web.StreamResponse:
        """LIST answers the table; WATCH stays open without events until the fake closes."""
        items = self.pods if request.path.endswith("/pods") else self.nodes
        if request.query.get("watch") == "true":
            response = web.StreamResponse()
            response.content_type = "application/json"
            await response.prepare(request)
            await self._closing.wait()
            return response
        body = {
            "kind": "List",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def _configmap(self, request: web.Request) -> web.Response:
        self.configmap_reads += 1
        if self.configmap is None:
            body = _status(
                404, "NotFound", message='configmaps "extension-apiserver-authentication" not found'
            )
            return web.Response(
                body=orjson.dumps(body), status=404, content_type="application/json"
            )
        obj = {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
            "data": self.configmap,
        }
        return web.Response(body=orjson.dumps(obj), content_type="application/json")
