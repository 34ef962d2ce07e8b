"""The aiohttp application: routes of the three metrics APIs, discovery, OpenAPI, health,
``/metrics``, ``/debug/explain``, and the filters in front of them.

Upstream counterparts: custom-metrics-apiserver ``pkg/apiserver/installer`` (routes
``namespaces/{namespace}/{resource}/{name}/{metric}``, ``{resource}/{name}/{metric}``, the
``namespaces/{namespace}/metrics/{metric}`` special case, and the external
``namespaces/{namespace}/{metric}``), ``pkg/registry/custom_metrics/reststorage.go`` and
``external_metrics/reststorage.go`` (``labelSelector``/``metricLabelSelector`` query parameters; a
named object answers a list of one), metrics-server ``pkg/api`` (``PodMetrics``/``NodeMetrics``
get and list with ``labelSelector``; not-found texts ``podmetrics.metrics.k8s.io "ns/name" not
found``), and k8s.io/apiserver's handler chain (``WithAuthentication`` → 401,
``WithAuthorization`` → 403, always-allowed health paths, ``system:masters`` allowed without a
review (``AlwaysAllowGroups``), ``/metrics`` authorized as a non-resource ``get``).

Deliberate deviations: only JSON is served (no protobuf; clients that offer both take JSON); the
resource metrics API lists pods and nodes from the watch cache instead of the API server.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from adapter.providers import ProviderError, custom_metric_request
from adapter.server import discovery, openapi, status, wire
from adapter.server.authn import Authenticator, Credentials, UserInfo
from adapter.server.authz import AuthorizationError, Authorizer, Decision
from adapter.server.ports import Clock, MetricsSource, ObjectLister, ResourceMetrics
from adapter.server.requestinfo import RequestAttributes, forbidden_message, request_attributes
from adapter.server.settings import DEFAULT_ALWAYS_ALLOW_GROUPS, DEFAULT_ALWAYS_ALLOW_PATHS
from adapter.server.status import StatusError
from adapter.server.telemetry import ServerMetrics

log = structlog.get_logger(__name__)

USER = web.RequestKey("user", UserInfo)

Explain = Callable[[str, Mapping[str, str]], Awaitable[dict[str, Any]]]


@dataclass(kw_only=True)
class Server:
    """Everything the handlers use. ``metrics`` is read once per request (reload-safe)."""

    metrics: MetricsSource
    lister: ObjectLister
    authenticator: Authenticator
    authorizer: Authorizer
    clock: Clock
    registry: CollectorRegistry
    server_metrics: ServerMetrics
    explain: Explain | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS
    version: str = "0.0.0"
    live: Callable[[], bool] = field(default=lambda: True)


def _json(body: Any, *, status_code: int = 200) -> web.Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return web.Response(body=data, status=status_code, content_type="application/json")


def api_label(path: str) -> str:
    parts = path.strip("/").split("/")
    if path in ("/healthz", "/readyz", "/livez") or parts[0] in ("healthz", "readyz", "livez"):
        return "health"
    if parts[0] == "metrics" and len(parts) == 1:
        return "metrics"
    if parts[0] == "openapi":
        return "openapi"
    if parts[0] == "debug":
        return "debug"
    if parts[0] != "apis":
        return "other"
    if len(parts) <= 3:
        return "discovery"
    group = parts[1]
    if group == wire.CUSTOM_GROUP:
        return "custom"
    if group == wire.EXTERNAL_GROUP:
        return "external"
    if group == wire.RESOURCE_GROUP:
        return "resource"
    return "other"


def _peer_certificate(request: web.Request) -> bytes | None:
    transport = request.transport
    if transport is None:
        return None
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return der if der else None


async def _authorize(
    authorizer: Authorizer, user: UserInfo, *, attributes: RequestAttributes
) -> Decision:
    try:
        return await authorizer.authorize(user, attributes)
    except AuthorizationError as error:
        raise status.internal_error(f"authorization failed: {error}") from error


def build_app(server: Server) -> web.Application:
    """The application; serve it with ``web.AppRunner`` on a TLS site."""

    @web.middleware
    async def observe(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        started = time.perf_counter()
        api = api_label(request.path)
        try:
            response = await handler(request)
        except StatusError as error:
            response = status.status_response(error)
        except web.HTTPException as error:
            if error.status == 404:
                response = status.status_response(status.not_found_path())
            else:
                raise
        except Exception as error:
            log.exception("request_failed", path=request.path, error=repr(error))
            response = status.status_response(status.internal_error("unexpected server error"))
        seconds = time.perf_counter() - started
        server.server_metrics.observe(api, response.status, seconds=seconds)
        user = request.get(USER)
        log.debug(
            "request",
            method=request.method,
            path=request.path,
            code=response.status,
            api=api,
            user=user.name if user is not None else None,
            seconds=round(seconds, 6),
        )
        return response

    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path in server.always_allow_paths:
            return await handler(request)
        credentials = Credentials(request.headers, _peer_certificate(request))
        user = await server.authenticator.authenticate(credentials)
        if user is None:
            raise status.unauthorized()
        request[USER] = user
        attributes = request_attributes(request.method, request.path, query=request.query)
        if any(group in server.always_allow_groups for group in user.groups):
            decision = Decision(True)
        else:
            decision = await _authorize(server.authorizer, user, attributes=attributes)
        if not decision.allowed:
            raise status.forbidden(
                forbidden_message(user.name, attributes),
                resource=attributes.resource,
                group=attributes.api_group,
                name=attributes.name,
                reason=decision.reason,
            )
        if request.method not in ("GET", "HEAD"):
            raise status.method_not_allowed(request.method)
        return await handler(request)

    app = web.Application(middlewares=[observe, guard])
    routes = Routes(server)
    r = app.router
    for path in ("/healthz", "/livez"):
        r.add_get(path, routes.live, allow_head=True)
    r.add_get("/readyz", routes.ready, allow_head=True)
    r.add_get("/metrics", routes.prometheus_metrics)
    r.add_get("/openapi/v2", routes.openapi_v2)
    r.add_get("/openapi/v3", routes.openapi_v3)
    r.add_get("/openapi/v3/apis/{group}/{version}", routes.openapi_v3_group_version)
    r.add_get("/debug/explain", routes.explain)
    r.add_get("/apis", routes.group_list)
    r.add_get("/apis/", routes.group_list)
    custom = "/apis/custom.metrics.k8s.io/{version}"
    r.add_get(custom + "/namespaces/{namespace}/metrics/{metric}", routes.custom_namespace)
    r.add_get(
        custom + "/namespaces/{namespace}/{resource}/{name}/{metric}", routes.custom_namespaced
    )
    r.add_get(custom + "/{resource}/{name}/{metric}", routes.custom_root)
    external = "/apis/external.metrics.k8s.io/{version}"
    r.add_get(external + "/namespaces/{namespace}/{metric}", routes.external)
    resource = "/apis/metrics.k8s.io/{version}"
    r.add_get(resource + "/pods", routes.pod_metrics_list)
    r.add_get(resource + "/namespaces/{namespace}/pods", routes.pod_metrics_list)
    r.add_get(resource + "/namespaces/{namespace}/pods/{name}", routes.pod_metrics_get)
    r.add_get(resource + "/nodes", routes.node_metrics_list)
    r.add_get(resource + "/nodes/{name}", routes.node_metrics_get)
    r.add_get("/apis/{group}", routes.group)
    r.add_get("/apis/{group}/", routes.group)
    r.add_get("/apis/{group}/{version}", routes.resource_list)
    r.add_get("/apis/{group}/{version}/", routes.resource_list)
    r.add_route("*", "/{tail:.*}", routes.unknown)
    return app


class Routes:
    def __init__(self, server: Server) -> None:
        self.server = server

    # ---------------------------------------------------------------- health and metrics

    async def live(self, request: web.Request) -> web.Response:
        if not self.server.live():
            return web.Response(text="[-]ping failed\n", status=500)
        return web.Response(text="ok")

    async def ready(self, request: web.Request) -> web.Response:
        if not self.server.metrics.ready:
            return web.Response(
                text="[-]metric-index failed: no successful relist yet\nreadyz check failed\n",
                status=500,
            )
        return web.Response(text="ok")

    async def prometheus_metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.server.registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def unknown(self, request: web.Request) -> web.Response:
        raise status.not_found_path()

    # ---------------------------------------------------------------- discovery and OpenAPI

    def _groups(self) -> tuple[discovery.GroupInfo, ...]:
        return discovery.served_groups(
            resource_metrics=self.server.metrics.current.resource is not None
        )

    def _group(self, name: str) -> discovery.GroupInfo:
        for group in self._groups():
            if group.name == name:
                return group
        raise status.not_found_path()

    async def group_list(self, request: web.Request) -> web.Response:
        return _json(discovery.api_group_list(self._groups()))

    async def group(self, request: web.Request) -> web.Response:
        return _json(discovery.api_group(self._group(request.match_info["group"])))

    async def resource_list(self, request: web.Request) -> web.Response:
        group = self._group(request.match_info["group"])
        version = request.match_info["version"]
        if version not in group.versions:
            raise status.not_found_path()
        if group.name == wire.RESOURCE_GROUP:
            return _json(discovery.RESOURCE_METRICS_RESOURCES)
        body = self.server.metrics.current.discovery(f"{group.name}/{version}")
        if body is None:
            raise status.not_found_path()
        return _json(body)

    async def openapi_v2(self, request: web.Request) -> web.Response:
        return _json(openapi.openapi_v2(self._groups(), version=self.server.version))

    async def openapi_v3(self, request: web.Request) -> web.Response:
        return _json(openapi.openapi_v3_root(self._groups(), version=self.server.version))

    async def openapi_v3_group_version(self, request: web.Request) -> web.Response:
        group = self._group(request.match_info["group"])
        version = request.match_info["version"]
        if version not in group.versions:
            raise status.not_found_path()
        return _json(openapi.openapi_v3_group_version(group, version, version=self.server.version))

    # ---------------------------------------------------------------- custom metrics

    async def custom_namespace(self, request: web.Request) -> web.Response:
        info = request.match_info
        return await self._custom(
            request, namespace=info["namespace"], resource="metrics", name="", metric=info["metric"]
        )

    async def custom_namespaced(self, request: web.Request) -> web.Response:
        info = request.match_info
        return await self._custom(
            request,
            namespace=info["namespace"],
            resource=info["resource"],
            name=info["name"],
            metric=info["metric"],
        )

    async def custom_root(self, request: web.Request) -> web.Response:
        info = request.match_info
        return await self._custom(
            request,
            namespace=None,
            resource=info["resource"],
            name=info["name"],
            metric=info["metric"],
        )

    async def _custom(
        self,
        request: web.Request,
        *,
        namespace: str | None,
        resource: str,
        name: str,
        metric: str,
    ) -> web.Response:
        version = request.match_info["version"]
        if version not in discovery.CUSTOM.versions:
            raise status.not_found_path()
        wanted = custom_metric_request(
            namespace=namespace, resource=resource, name=name, metric=metric
        )
        provider = self.server.metrics.current.custom
        metric_selector = request.query.get("metricLabelSelector", "")
        try:
            if wanted.name is None:
                values = await provider.get_metric_by_selector(
                    wanted.info,
                    namespace=wanted.namespace,
                    selector=request.query.get("labelSelector", ""),
                    metric_selector=metric_selector,
                )
            else:
                values = [
                    await provider.get_metric_by_name(
                        wanted.info,
                        wanted.name,
                        namespace=wanted.namespace,
                        metric_selector=metric_selector,
                    )
                ]
        except ProviderError as error:
            log.info(
                "custom_metric_failed",
                metric=metric,
                resource=resource,
                namespace=namespace,
                name=name,
                code=error.code,
                detail=error.detail,
            )
            raise status.from_provider_error(error) from error
        return _json(wire.custom_value_list(version, values))

    # ---------------------------------------------------------------- external metrics

    async def external(self, request: web.Request) -> web.Response:
        if request.match_info["version"] not in discovery.EXTERNAL.versions:
            raise status.not_found_path()
        metric = request.match_info["metric"]
        namespace = request.match_info["namespace"]
        try:
            values = await self.server.metrics.current.external.get_external_metric(
                metric, namespace=namespace, metric_selector=request.query.get("labelSelector", "")
            )
        except ProviderError as error:
            log.info(
                "external_metric_failed",
                metric=metric,
                namespace=namespace,
                code=error.code,
                detail=error.detail,
            )
            raise status.from_provider_error(error) from error
        return _json(wire.external_value_list(values))

    # ---------------------------------------------------------------- resource metrics

    def _resource(self, request: web.Request) -> ResourceMetrics:
        provider = self.server.metrics.current.resource
        if provider is None or request.match_info["version"] not in discovery.RESOURCE.versions:
            raise status.not_found_path()
        return provider

    async def _list_pods(self, namespace: str | None, selector: str) -> list[Any]:
        try:
            return list(await self.server.lister.list_pods(namespace, selector))
        except ValueError as error:
            raise status.bad_request(f"unable to parse requirement: {error}") from error

    async def pod_metrics_list(self, request: web.Request) -> web.Response:
        provider = self._resource(request)
        namespace = request.match_info.get("namespace")
        pods = await self._list_pods(namespace, request.query.get("labelSelector", ""))
        labels = {(p.namespace, p.name): p.labels for p in pods}
        try:
            usages = await provider.get_pod_metrics([(p.namespace, p.name) for p in pods])
        except ProviderError as error:
            raise status.from_provider_error(error) from error
        now = self.server.clock.now()
        items = [
            wire.pod_metrics(u, labels=labels.get((u.namespace, u.name), {}), created=now)
            for u in usages
        ]
        return _json(wire.resource_list("PodMetricsList", items))

    async def pod_metrics_get(self, request: web.Request) -> web.Response:
        provider = self._resource(request)
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        pod = next((p for p in await self._list_pods(namespace, "") if p.name == name), None)
        if pod is None:
            raise status.not_found("pods", "", name=name)
        try:
            usages = await provider.get_pod_metrics([(namespace, name)])
        except ProviderError as error:
            raise status.from_provider_error(error) from error
        if not usages:
            raise status.not_found("podmetrics", wire.RESOURCE_GROUP, name=f"{namespace}/{name}")
        return _json(
            wire.pod_metrics(usages[0], labels=pod.labels, created=self.server.clock.now())
        )

    async def _list_nodes(self, selector: str) -> list[Any]:
        try:
            return list(await self.server.lister.list_nodes(selector))
        except ValueError as error:
            raise status.bad_request(f"unable to parse requirement: {error}") from error

    async def node_metrics_list(self, request: web.Request) -> web.Response:
        provider = self._resource(request)
        nodes = await self._list_nodes(request.query.get("labelSelector", ""))
        labels = {n.name: n.labels for n in nodes}
        try:
            usages = await provider.get_node_metrics([n.name for n in nodes])
        except ProviderError as error:
            raise status.from_provider_error(error) from error
        now = self.server.clock.now()
        items = [wire.node_metrics(u, labels=labels.get(u.name, {}), created=now) for u in usages]
        return _json(wire.resource_list("NodeMetricsList", items))

    async def node_metrics_get(self, request: web.Request) -> web.Response:
        provider = self._resource(request)
        name = request.match_info["name"]
        node = next((n for n in await self._list_nodes("") if n.name == name), None)
        if node is None:
            raise status.not_found("nodes", "", name=name)
        try:
            usages = await provider.get_node_metrics([name])
        except ProviderError as error:
            raise status.from_provider_error(error) from error
        if not usages:
            raise status.not_found("nodemetrics", wire.RESOURCE_GROUP, name=name)
        return _json(
            wire.node_metrics(usages[0], labels=node.labels, created=self.server.clock.now())
        )

    # ---------------------------------------------------------------- explain

    async def explain(self, request: web.Request) -> web.Response:
        if self.server.explain is None:
            raise status.not_found_path()
        path = request.query.get("path", "")
        if not path:
            raise status.bad_request("the path query parameter is required")
        query = {k: v for k, v in request.query.items() if k != "path"}
        return _json(await self.server.explain(path, query))
