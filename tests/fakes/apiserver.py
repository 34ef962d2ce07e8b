"""A small in-memory kube-apiserver over real HTTP, for protocol-level tests of ``hpa.kube``.

It speaks the parts of the API protocol our shell depends on: discovery (``/apis/<g>/<v>``),
paginated lists (``limit``/``continue``, optionally expiring continue tokens with 410), watches
(newline-delimited JSON, resume from ``resourceVersion``, ``ERROR`` 410 "too old resource version"
after ``compact``, ``BOOKMARK`` on demand), create/update/merge-patch/delete with resourceVersion
preconditions (409), JSON Patch (``application/json-patch+json``: add, replace, remove), the
``/status`` and ``/scale`` subresources, a pod's ``/eviction`` (a policy/v1 ``Eviction``: the pod
is deleted unless a PodDisruptionBudget of its namespace selecting it has
``status.disruptionsAllowed`` 0 or ``spec.maxUnavailable`` 0, which answers 429 as the real
server does) and ``/resize`` (a JSON Patch of the pod's spec), and scripted failures (429 with
``Retry-After``, 5xx, 400, ...). Every request is recorded for assertions.

It is not a Kubernetes: no defaulting, validation, admission or strategic merge. End-to-end
behaviour against a real API server is the lab's job (``tests/e2e``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from hpa.core.selector import parse_selector
from hpa.core.vpa.admission import apply_patch
from hpa.kube.client import KubeClient, RetryPolicy
from tests.fakes.clock import FakeClock

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, str]
    body: Any


@dataclass(kw_only=True)
class ScriptedFailure:
    method: str
    path: str
    status: int
    reason: str
    headers: Mapping[str, str]
    times: int


@dataclass(frozen=True, kw_only=True)
class ResourceInfo:
    prefix: str  # "/api/v1" or "/apis/<group>/<version>"
    plural: str
    kind: str
    namespaced: bool = True
    unconditional_update: bool = True
    """Whether a PUT without ``metadata.resourceVersion`` is accepted (built-in kinds such as
    Deployments); custom resources refuse it with 422, as kube-apiserver does."""
    subresources: tuple[str, ...] = ()


@dataclass(kw_only=True)
class _Watcher:
    prefix: str
    plural: str
    namespace: str | None
    label_selector: str
    bookmarks: bool
    queue: asyncio.Queue[JsonObject | bytes | None] = field(default_factory=asyncio.Queue)


def _status(code: int, reason: str, message: str) -> JsonObject:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 ``add``, ``replace`` and ``remove`` on a copy of ``target`` (the core's applier);
    raises ``KeyError`` or ``IndexError`` for a path that does not resolve."""
    return apply_patch(target, operations)


DEFAULT_RESOURCES = (
    ResourceInfo(
        prefix="/api/v1", plural="pods", kind="Pod", subresources=("status", "eviction", "resize")
    ),
    ResourceInfo(prefix="/api/v1", plural="events", kind="Event"),
    ResourceInfo(
        prefix="/apis/apps/v1",
        plural="deployments",
        kind="Deployment",
        subresources=("status", "scale"),
    ),
    ResourceInfo(
        prefix="/apis/apps/v1",
        plural="statefulsets",
        kind="StatefulSet",
        subresources=("status", "scale"),
    ),
    ResourceInfo(
        prefix="/apis/apps/v1",
        plural="replicasets",
        kind="ReplicaSet",
        subresources=("status", "scale"),
    ),
    ResourceInfo(
        prefix="/apis/autoscaling/v2",
        plural="horizontalpodautoscalers",
        kind="HorizontalPodAutoscaler",
        subresources=("status",),
    ),
    ResourceInfo(prefix="/apis/coordination.k8s.io/v1", plural="leases", kind="Lease"),
)


class FakeApiServer:
    """Start with ``await server.start()``; ``server.url`` is the base URL."""

    def __init__(self, resources: tuple[ResourceInfo, ...] = DEFAULT_RESOURCES) -> None:
        self.resources = {(r.prefix, r.plural): r for r in resources}
        self.objects: dict[tuple[str, str, str, str], JsonObject] = {}
        self.log: list[tuple[int, str, str, str, JsonObject]] = []
        self.resource_version = 100
        self.compacted_resource_version = 0
        self.expire_continue_tokens = False
        self.requests: list[RecordedRequest] = []
        self.failures: list[ScriptedFailure] = []
        self._watchers: list[_Watcher] = []
        self._watchers_changed = asyncio.Event()
        self._uids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.url = ""

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self.url

    async def close(self) -> None:
        self.close_watches()
        if self._runner is not None:
            await self._runner.cleanup()

    # ------------------------------------------------------------ test controls

    def fail(
        self,
        method: str,
        path: str,
        *,
        status: int,
        reason: str = "",
        headers: Mapping[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` requests ``method path`` with ``status``."""
        self.failures.append(
            ScriptedFailure(
                method=method,
                path=path,
                status=status,
                reason=reason,
                headers=headers or {},
                times=times,
            )
        )

    def close_watches(self) -> None:
        """End every open watch stream (as the server does at ``timeoutSeconds``)."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(None)
        self._watchers.clear()

    def compact(self) -> None:
        """Forget history: a watch from an older resourceVersion now gets 410."""
        self.compacted_resource_version = self.resource_version
        self.log.clear()

    def send_raw(self, line: bytes) -> None:
        """Write ``line`` as-is to every open watch stream (to test framing errors)."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(line)

    def send_bookmark(self) -> None:
        for watcher in self._watchers:
            if watcher.bookmarks:
                watcher.queue.put_nowait(
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": "Bookmark",
                            "metadata": {"resourceVersion": str(self.resource_version)},
                        },
                    }
                )

    @property
    def watch_count(self) -> int:
        return len(self._watchers)

    async def wait_for_watches(self, count: int = 1, *, timeout_seconds: float = 5.0) -> None:
        """Wait until ``count`` watch streams are open (the informer's request is real I/O)."""
        async with asyncio.timeout(timeout_seconds):
            while len(self._watchers) < count:
                self._watchers_changed.clear()
                await self._watchers_changed.wait()

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and r.path == path]

    # ------------------------------------------------------------ server-side object changes

    def _bump(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    def put_object(self, prefix: str, plural: str, obj: JsonObject) -> JsonObject:
        """Create or replace an object as another client would, emitting a watch event."""
        metadata = obj.setdefault("metadata", {})
        namespace = metadata.get("namespace", "")
        key = (prefix, plural, namespace, metadata["name"])
        event_type = "MODIFIED" if key in self.objects else "ADDED"
        if key not in self.objects:
            metadata.setdefault("uid", f"uid-{next(self._uids)}")
            metadata.setdefault("generation", 1)
            metadata.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        metadata["resourceVersion"] = self._bump()
        self.objects[key] = obj
        self._emit(event_type, prefix, plural, obj)
        return obj

    def delete_object(self, prefix: str, plural: str, namespace: str, name: str) -> JsonObject:
        """Delete an object as another client would, emitting a watch event."""
        obj = self.objects.pop((prefix, plural, namespace, name))
        obj["metadata"]["resourceVersion"] = self._bump()
        self._emit("DELETED", prefix, plural, obj)
        return obj

    def get_object(self, prefix: str, plural: str, namespace: str, name: str) -> JsonObject | None:
        return self.objects.get((prefix, plural, namespace, name))

    def _emit(self, event_type: str, prefix: str, plural: str, obj: JsonObject) -> None:
        snapshot = orjson.loads(orjson.dumps(obj))
        self.log.append((self.resource_version, event_type, prefix, plural, snapshot))
        for watcher in self._watchers:
            if self._watched(watcher, prefix, plural, snapshot):
                watcher.queue.put_nowait({"type": event_type, "object": snapshot})

    @staticmethod
    def _watched(watcher: _Watcher, prefix: str, plural: str, obj: JsonObject) -> bool:
        metadata = obj.get("metadata") or {}
        return (
            watcher.prefix == prefix
            and watcher.plural == plural
            and (watcher.namespace is None or metadata.get("namespace") == watcher.namespace)
            and parse_selector(watcher.label_selector).matches(metadata.get("labels") or {})
        )

    # ------------------------------------------------------------ HTTP

    def _split(self, path: str) -> tuple[str, list[str]] | None:
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            return "/api/v1", parts[2:]
        if parts[:1] == ["apis"] and len(parts) >= 3:
            return f"/apis/{parts[1]}/{parts[2]}", parts[3:]
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            body = orjson.loads(raw) if raw else None
        query = dict(request.query)
        self.requests.append(RecordedRequest(request.method, request.path, query, body))
        for failure in self.failures:
            if failure.times > 0 and (failure.method, failure.path) == (
                request.method,
                request.path,
            ):
                failure.times -= 1
                return self._error(
                    failure.status, failure.reason or "Failure", "scripted", failure.headers
                )
        split = self._split(request.path)
        if split is None:
            return self._error(404, "NotFound", f"no route {request.path}")
        prefix, rest = split
        if not rest:
            return self._discovery(prefix)
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural, name, sub = (
            rest[0],
            (rest[1] if len(rest) > 1 else None),
            (rest[2] if len(rest) > 2 else None),
        )
        info = self.resources.get((prefix, plural))
        if info is None:
            return self._error(404, "NotFound", f"the server could not find {plural}")
        if name is None:
            if request.method == "GET" and query.get("watch") in ("true", "1"):
                return await self._watch(request, info, namespace, query)
            if request.method == "GET":
                return self._list(info, namespace, query)
            if request.method == "POST":
                return self._create(info, namespace or "", body)
            return self._error(405, "MethodNotAllowed", request.method)
        key = (prefix, plural, namespace or "", name)
        if request.content_type == "application/json-patch+json" and request.method == "PATCH":
            return self._json_patch(info, key, sub, body)
        if sub == "eviction" and request.method == "POST" and key in self.objects:
            return self._evict(key)
        return self._object(request.method, info, key, sub, body)

    def _json_patch(
        self, info: ResourceInfo, key: tuple[str, str, str, str], sub: str | None, body: Any
    ) -> web.Response:
        current = self.objects.get(key)
        if current is None:
            return self._error(404, "NotFound", f'{info.plural} "{key[3]}" not found')
        if sub is not None and sub not in info.subresources:
            return self._error(404, "NotFound", f"no subresource {sub}")
        try:
            patched = json_patch(current, body)
        except (KeyError, IndexError, ValueError, TypeError) as error:
            return self._error(422, "Invalid", f"the patch does not apply: {error!r}")
        if sub == "resize":
            patched = {**current, "spec": patched.get("spec")}
        elif sub == "status":
            patched = {**current, "status": patched.get("status")}
        return self._json(self.put_object(info.prefix, info.plural, patched))

    def _evict(self, key: tuple[str, str, str, str]) -> web.Response:
        pod = self.objects[key]
        labels = pod["metadata"].get("labels") or {}
        for (prefix, plural, namespace, _name), budget in sorted(self.objects.items()):
            if (prefix, plural, namespace) != ("/apis/policy/v1", "poddisruptionbudgets", key[2]):
                continue
            selector = ((budget.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            if not all(labels.get(k) == v for k, v in selector.items()):
                continue
            allowed = (budget.get("status") or {}).get("disruptionsAllowed")
            if allowed is None:
                allowed = (budget.get("spec") or {}).get("maxUnavailable", 1)
            if allowed == 0:
                return self._error(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                )
        self.delete_object(*key)
        return self._json(
            {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, 201
        )

    @staticmethod
    def _json(data: Any, status: int = 200) -> web.Response:
        return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")

    def _error(
        self, code: int, reason: str, message: str, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        return web.Response(
            body=orjson.dumps(_status(code, reason, message)),
            status=code,
            content_type="application/json",
            headers=dict(headers or {}),
        )

    def _discovery(self, prefix: str) -> web.Response:
        resources: list[JsonObject] = []
        for info in self.resources.values():
            if info.prefix != prefix:
                continue
            resources.append(
                {"name": info.plural, "kind": info.kind, "namespaced": info.namespaced}
            )
            resources.extend(
                {
                    "name": f"{info.plural}/{sub}",
                    "kind": "Scale" if sub == "scale" else info.kind,
                    "namespaced": info.namespaced,
                }
                for sub in info.subresources
            )
        if not resources:
            return self._error(404, "NotFound", prefix)
        group_version = prefix.removeprefix("/api/").removeprefix("/apis/")
        return self._json(
            {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}
        )

    def _matching(
        self, info: ResourceInfo, namespace: str | None, selector: str
    ) -> list[JsonObject]:
        parsed = parse_selector(selector)
        return [
            obj
            for (prefix, plural, ns, _), obj in sorted(self.objects.items())
            if (prefix, plural) == (info.prefix, info.plural)
            and (namespace is None or ns == namespace)
            and parsed.matches(obj["metadata"].get("labels") or {})
        ]

    def _list(
        self, info: ResourceInfo, namespace: str | None, query: Mapping[str, str]
    ) -> web.Response:
        items = self._matching(info, namespace, query.get("labelSelector", ""))
        list_rv = str(self.resource_version)
        offset = 0
        if "continue" in query:
            if self.expire_continue_tokens:
                return self._error(410, "Expired", "The provided continue parameter is too old")
            token_rv, _, token_offset = query["continue"].partition(":")
            list_rv, offset = token_rv, int(token_offset)
        limit = int(query.get("limit", "0") or 0)
        page = items[offset : offset + limit] if limit else items[offset:]
        metadata: JsonObject = {"resourceVersion": list_rv}
        if limit and offset + limit < len(items):
            metadata["continue"] = f"{list_rv}:{offset + limit}"
        return self._json({"kind": f"{info.kind}List", "metadata": metadata, "items": page})

    async def _watch(
        self,
        request: web.Request,
        info: ResourceInfo,
        namespace: str | None,
        query: Mapping[str, str],
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        since = int(query.get("resourceVersion") or 0)
        if since and since < self.compacted_resource_version:
            error = _status(410, "Expired", f"too old resource version: {since}")
            await response.write(orjson.dumps({"type": "ERROR", "object": error}) + b"\n")
            return response
        watcher = _Watcher(
            prefix=info.prefix,
            plural=info.plural,
            namespace=namespace,
            label_selector=query.get("labelSelector", ""),
            bookmarks=query.get("allowWatchBookmarks") == "true",
        )
        for rv, event_type, prefix, plural, obj in self.log:
            if rv > since and self._watched(watcher, prefix, plural, obj):
                watcher.queue.put_nowait({"type": event_type, "object": obj})
        self._watchers.append(watcher)
        self._watchers_changed.set()
        try:
            while True:
                event = await watcher.queue.get()
                if event is None:
                    break
                line = event if isinstance(event, bytes) else orjson.dumps(event)
                await response.write(line + b"\n")
        finally:
            if watcher in self._watchers:
                self._watchers.remove(watcher)
        return response

    def _create(self, info: ResourceInfo, namespace: str, body: JsonObject) -> web.Response:
        metadata = body.setdefault("metadata", {})
        if namespace:
            metadata["namespace"] = namespace
        if (info.prefix, info.plural, namespace, metadata.get("name", "")) in self.objects:
            return self._error(
                409, "AlreadyExists", f"{info.plural} {metadata.get('name')!r} already exists"
            )
        metadata.pop("resourceVersion", None)
        return self._json(self.put_object(info.prefix, info.plural, body), 201)

    def _object(
        self,
        method: str,
        info: ResourceInfo,
        key: tuple[str, str, str, str],
        sub: str | None,
        body: Any,
    ) -> web.Response:
        current = self.objects.get(key)
        if current is None:
            return self._error(404, "NotFound", f'{info.plural} "{key[3]}" not found')
        if sub is not None and sub not in info.subresources:
            return self._error(404, "NotFound", f"no subresource {sub}")
        if method == "GET":
            return self._json(self._scale_of(current) if sub == "scale" else current)
        if method == "DELETE":
            return self._json(self.delete_object(*key))
        if method == "PATCH":
            patched = merge_patch(current, body)
            if sub == "status":
                patched = {**current, "status": patched.get("status")}
            return self._json(self.put_object(info.prefix, info.plural, patched))
        if method != "PUT":
            return self._error(405, "MethodNotAllowed", method)
        precondition = (body.get("metadata") or {}).get("resourceVersion")
        if not precondition and not info.unconditional_update:
            return self._error(
                422,
                "Invalid",
                f'{info.plural} "{key[3]}" is invalid: metadata.resourceVersion: '
                "Invalid value: 0: must be specified for an update",
            )
        if precondition and precondition != current["metadata"]["resourceVersion"]:
            return self._error(
                409,
                "Conflict",
                "Operation cannot be fulfilled: the object has been modified; "
                "please apply your changes to the latest version and try again",
            )
        updated = orjson.loads(orjson.dumps(current))
        if sub == "scale":
            updated.setdefault("spec", {})["replicas"] = body["spec"]["replicas"]
            stored = self.put_object(info.prefix, info.plural, updated)
            return self._json(self._scale_of(stored))
        if sub == "status":
            updated["status"] = body.get("status")
        else:
            status = current.get("status")
            updated = dict(body)
            updated["metadata"] = {**current["metadata"], **(body.get("metadata") or {})}
            if "status" in info.subresources and status is not None:
                updated["status"] = status
        return self._json(self.put_object(info.prefix, info.plural, updated))

    @staticmethod
    def _scale_of(obj: JsonObject) -> JsonObject:
        metadata = obj["metadata"]
        selector = (obj.get("spec") or {}).get("selector") or {}
        match_labels = selector.get("matchLabels") or {}
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                "name": metadata["name"],
                "namespace": metadata.get("namespace", ""),
                "resourceVersion": metadata["resourceVersion"],
                "uid": metadata.get("uid", ""),
            },
            "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
            "status": {
                "replicas": (obj.get("status") or {}).get("replicas", 0),
                "selector": ",".join(f"{k}={v}" for k, v in sorted(match_labels.items())),
            },
        }


@contextlib.asynccontextmanager
async def running(
    resources: tuple[ResourceInfo, ...] = DEFAULT_RESOURCES, *, max_attempts: int = 2
) -> AsyncIterator[tuple[FakeApiServer, KubeClient]]:
    """A started server and a client of ours pointed at it (fake clock, seeded jitter)."""
    server = FakeApiServer(resources)
    await server.start()
    client = KubeClient(
        aiohttp.ClientSession(),
        server.url,
        clock=FakeClock(auto_advance=True),
        rng=random.Random(1),
        retry=RetryPolicy(max_attempts=max_attempts),
    )
    try:
        yield server, client
    finally:
        await client.close()
        await server.close()
