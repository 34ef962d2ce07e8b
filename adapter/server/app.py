"""The aiohttp server: routes of the three metrics APIs, discovery, OpenAPI, health,
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

Every request is parsed once (``requestinfo.parse_request`` over the raw path); authentication,
authorization, routing (``routing.route``) and the handlers read that parse. ``/debug/explain``
also authorizes the attributes of the path it explains.

Deliberate deviations: only JSON is served (no protobuf; clients that offer both take JSON); the
resource metrics API lists pods and nodes from the watch cache instead of the API server; the
deviations of ``requestinfo`` and ``routing`` (encoded slashes, the root-form namespace path).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from adapter.providers import ProviderError, custom_metric_request
from adapter.server import authz, discovery, openapi, status, wire
from adapter.server.authn import Authenticator, Credentials, UserInfo
from adapter.server.authz import Authorizer
from adapter.server.ports import Clock, MetricsSource, ObjectLister, ResourceMetrics
from adapter.server.requestinfo import (
    RequestAttributes,
    RequestInfo,
    RequestPathError,
    parse_request,
)
from adapter.server.router import Backend, Router
from adapter.server.routing import (
    CustomMetricTarget,
    ExternalMetricTarget,
    GroupTarget,
    InvalidPathTarget,
    MetricRequest,
    NodeMetricsTarget,
    OpenApiGroupVersionTarget,
    Page,
    PodMetricsTarget,
    ResourceListTarget,
    parse_metric_request,
    route,
)
from adapter.server.settings import DEFAULT_ALWAYS_ALLOW_GROUPS, DEFAULT_ALWAYS_ALLOW_PATHS
from adapter.server.status import StatusError
from adapter.server.telemetry import ServerMetrics

log = structlog.get_logger(__name__)

USER = web.RequestKey("user", UserInfo)

Explain = Callable[[MetricRequest], Awaitable[dict[str, Any]]]


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
    router: Router | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    always_allow_groups: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_GROUPS
    version: str = "0.0.0"
    live: Callable[[], bool] = field(default=lambda: True)


def _json(body: Any, *, status_code: int = 200) -> web.Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return web.Response(body=data, status=status_code, content_type="application/json")


def accepts_gzip(accept_encoding: str) -> bool:
    """k8s.io/apiserver ``ContentEncodingSupported``: a comma-separated token that is exactly
    ``gzip`` (no quality value)."""
    return any(token.strip() == "gzip" for token in accept_encoding.split(","))


def api_label(info: RequestInfo | None) -> str:
    """The closed ``api`` label of the request metrics, from the request's parse."""
    if info is None:
        return "other"
    head = info.segments[0]
    if head in ("healthz", "readyz", "livez"):
        return "health"
    if head == "metrics" and len(info.segments) == 1:
        return "metrics"
    if head in ("openapi", "debug"):
        return head
    if head != "apis":
        return "other"
    if not info.attributes.is_resource_request:
        return "discovery"
    return {
        wire.CUSTOM_GROUP: "custom",
        wire.EXTERNAL_GROUP: "external",
        wire.RESOURCE_GROUP: "resource",
    }.get(info.attributes.api_group, "other")


def peer_certificate(request: web.BaseRequest) -> bytes | None:
    """The TLS peer's leaf certificate (DER), or None."""
    transport = request.transport
    if transport is None:
        return None
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return der if der else None


async def require_authorized(server: Server, user: UserInfo, attributes: RequestAttributes) -> None:
    """``WithAuthorization`` with the server's authorizer and always-allowed groups."""
    await authz.require_authorized(
        server.authorizer, user, attributes, always_allow_groups=server.always_allow_groups
    )


Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


def request_handler(server: Server) -> Handler:
    """The one handler of every request; serve it with ``web.Server`` (``serving_server``).

    Every request is parsed once (``parse_request`` over the raw path) before anything else;
    authentication, authorization, routing and the handlers read that parse. aiohttp's own
    router and middleware chain are not used: the parse is the routing, and the handler chain
    (``WithAuthentication`` → ``WithAuthorization`` → the route) is written out here."""
    routes = Routes(server)
    # the module's logger is a lazy proxy that builds a logger per call; this one is built once,
    # and the request line's fields are only gathered when it is written
    request_log = log.bind()
    log_requests = request_log.is_enabled_for(logging.DEBUG)

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        started = time.perf_counter()
        info: RequestInfo | None = None
        user: UserInfo | None = None
        try:
            info = parse_request(request.method, request.rel_url.raw_path, query=request.query)
            attributes = info.attributes
            if attributes.path not in server.always_allow_paths:
                credentials = Credentials(request.headers, peer_certificate(request))
                user = await server.authenticator.authenticate(credentials)
                if user is None:
                    raise status.unauthorized()
                request[USER] = user
                await require_authorized(server, user, attributes)
                if request.method not in ("GET", "HEAD"):
                    raise status.method_not_allowed(request.method)
            response = await routes.dispatch(request, info)
        except RequestPathError as error:
            response = status.status_response(status.bad_request(str(error)))
        except StatusError as error:
            response = status.status_response(error)
        except Exception as error:
            log.exception("request_failed", path=request.path, error=repr(error))
            response = status.status_response(status.internal_error("unexpected server error"))
        seconds = time.perf_counter() - started
        server.server_metrics.observe(info, response.status, method=request.method, seconds=seconds)
        if log_requests:
            request_log.debug(
                "request",
                method=request.method,
                path=request.path,
                code=response.status,
                api=api_label(info),
                user=user.name if user is not None else None,
                seconds=round(seconds, 6),
            )
        return response

    return handle


def serving_server(server: Server) -> web.Server:
    """The low-level aiohttp server of ``request_handler``: run it with ``web.ServerRunner`` on a
    TLS site. No access log (``request`` debug lines instead); a request whose client goes
    away is cancelled."""
    return web.Server(request_handler(server), access_log=None, handler_cancellation=True)


class Routes:
    """Handlers, chosen by ``routing.route`` from the request's parse."""

    def __init__(self, server: Server) -> None:
        self.server = server

    async def dispatch(self, request: web.BaseRequest, info: RequestInfo) -> web.Response:
        target = route(info)
        match target:
            case Page.HEALTHZ | Page.LIVEZ:
                return await self.live(request)
            case Page.READYZ:
                return await self.ready(request)
            case Page.METRICS:
                return await self.prometheus_metrics(request)
            case Page.OPENAPI_V2:
                return await self.openapi_v2(request)
            case Page.OPENAPI_V3:
                return await self.openapi_v3(request)
            case Page.EXPLAIN:
                return await self.explain(request)
            case Page.GROUP_LIST:
                return await self.group_list(request)
            case GroupTarget():
                return await self.group(target)
            case ResourceListTarget():
                return await self.resource_list(request, target)
            case OpenApiGroupVersionTarget():
                return await self.openapi_v3_group_version(target)
            case CustomMetricTarget():
                return await self.custom(request, target)
            case ExternalMetricTarget():
                return await self.external(request, target)
            case PodMetricsTarget(name=""):
                return await self.pod_metrics_list(request, target)
            case PodMetricsTarget():
                return await self.pod_metrics_get(target)
            case NodeMetricsTarget(name=""):
                return await self.node_metrics_list(request, target)
            case NodeMetricsTarget():
                return await self.node_metrics_get(target)
            case InvalidPathTarget():
                raise status.bad_request("invalid request path")
        raise status.not_found_path()

    # ---------------------------------------------------------------- health and metrics

    async def live(self, request: web.BaseRequest) -> web.Response:
        if not self.server.live():
            return web.Response(text="[-]ping failed\n", status=500)
        return web.Response(text="ok")

    async def ready(self, request: web.BaseRequest) -> web.Response:
        """Ready once the metric index is listed. Routed backends are shown with ``?verbose``
        (and on failure) but never fail it: this adapter's own metrics are still served."""
        routed = self.server.router.readiness() if self.server.router is not None else []
        if not self.server.metrics.ready:
            lines = ["[-]metric-index failed: no successful relist yet", *routed]
            return web.Response(text="\n".join([*lines, "readyz check failed\n"]), status=500)
        if "verbose" in request.query:
            lines = ["[+]metric-index ok", *routed]
            return web.Response(text="\n".join([*lines, "readyz check passed\n"]))
        return web.Response(text="ok")

    async def prometheus_metrics(self, request: web.BaseRequest) -> web.Response:
        body = generate_latest(self.server.registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

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

    async def group_list(self, request: web.BaseRequest) -> web.Response:
        return _json(discovery.api_group_list(self._groups()))

    async def group(self, target: GroupTarget) -> web.Response:
        return _json(discovery.api_group(self._group(target.group)))

    async def resource_list(
        self, request: web.BaseRequest, target: ResourceListTarget
    ) -> web.Response:
        """The prebuilt document of the current index (merged with routed backends' lists when
        the group is routed); gzipped as prebuilt when the client accepts gzip and it is large."""
        group = self._group(target.group)
        if target.version not in group.versions:
            raise status.not_found_path()
        if group.name == wire.RESOURCE_GROUP:
            return _json(discovery.RESOURCE_METRICS_RESOURCES)
        group_version = f"{group.name}/{target.version}"
        metrics = self.server.metrics.current
        local = body = metrics.discovery(group_version)
        if self.server.router is not None:
            body = await self.server.router.discovery(group.name, target.version, body)
        if body is None:
            raise status.not_found_path()
        if body is local and accepts_gzip(request.headers.get("Accept-Encoding", "")):
            compressed = metrics.discovery_gzip(group_version)
            if compressed is not None:
                response = _json(compressed)
                response.headers["Content-Encoding"] = "gzip"
                response.headers["Vary"] = "Accept-Encoding"
                return response
        return _json(body)

    async def openapi_v2(self, request: web.BaseRequest) -> web.Response:
        return _json(openapi.openapi_v2(self._groups(), version=self.server.version))

    async def openapi_v3(self, request: web.BaseRequest) -> web.Response:
        return _json(openapi.openapi_v3_root(self._groups(), version=self.server.version))

    async def openapi_v3_group_version(self, target: OpenApiGroupVersionTarget) -> web.Response:
        group = self._group(target.group)
        if target.version not in group.versions:
            raise status.not_found_path()
        return _json(
            openapi.openapi_v3_group_version(group, target.version, version=self.server.version)
        )

    # ---------------------------------------------------------------- routed metrics

    def _routed(self, group: str, version: str, resource: str, metric: str) -> Backend | None:
        """The backend of the ``routes:`` section that owns the metric (None: served here).
        The request was authorized already (``guard``), for its original user."""
        router = self.server.router
        if router is None:
            return None
        return router.owner(
            group,
            version,
            resource=resource,
            metric=metric,
            local=self.server.metrics.current.discovery,
        )

    # ---------------------------------------------------------------- custom metrics

    async def custom(self, request: web.BaseRequest, target: CustomMetricTarget) -> web.Response:
        if target.version not in discovery.CUSTOM.versions:
            raise status.not_found_path()
        routed = self._routed(wire.CUSTOM_GROUP, target.version, target.resource, target.metric)
        if routed is not None:
            return await routed.forward(request)
        wanted = custom_metric_request(
            namespace=target.namespace,
            resource=target.resource,
            name=target.name,
            metric=target.metric,
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
                metric=target.metric,
                resource=target.resource,
                namespace=target.namespace,
                name=target.name,
                code=error.code,
                detail=error.detail,
            )
            raise status.from_provider_error(error) from error
        return _json(wire.custom_value_list(target.version, values))

    # ---------------------------------------------------------------- external metrics

    async def external(
        self, request: web.BaseRequest, target: ExternalMetricTarget
    ) -> web.Response:
        if target.version not in discovery.EXTERNAL.versions:
            raise status.not_found_path()
        routed = self._routed(wire.EXTERNAL_GROUP, target.version, "", target.metric)
        if routed is not None:
            return await routed.forward(request)
        try:
            values = await self.server.metrics.current.external.get_external_metric(
                target.metric,
                namespace=target.namespace,
                metric_selector=request.query.get("labelSelector", ""),
            )
        except ProviderError as error:
            log.info(
                "external_metric_failed",
                metric=target.metric,
                namespace=target.namespace,
                code=error.code,
                detail=error.detail,
            )
            raise status.from_provider_error(error) from error
        return _json(wire.external_value_list(values))

    # ---------------------------------------------------------------- resource metrics

    def _resource(self, version: str) -> ResourceMetrics:
        provider = self.server.metrics.current.resource
        if provider is None or version not in discovery.RESOURCE.versions:
            raise status.not_found_path()
        return provider

    async def _list_pods(self, namespace: str | None, selector: str) -> list[Any]:
        try:
            return list(await self.server.lister.list_pods(namespace, selector))
        except ValueError as error:
            raise status.bad_request(f"unable to parse requirement: {error}") from error

    async def pod_metrics_list(
        self, request: web.BaseRequest, target: PodMetricsTarget
    ) -> web.Response:
        provider = self._resource(target.version)
        pods = await self._list_pods(target.namespace, request.query.get("labelSelector", ""))
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

    async def pod_metrics_get(self, target: PodMetricsTarget) -> web.Response:
        provider = self._resource(target.version)
        namespace, name = target.namespace or "", target.name
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

    async def node_metrics_list(
        self, request: web.BaseRequest, target: NodeMetricsTarget
    ) -> web.Response:
        provider = self._resource(target.version)
        nodes = await self._list_nodes(request.query.get("labelSelector", ""))
        labels = {n.name: n.labels for n in nodes}
        try:
            usages = await provider.get_node_metrics([n.name for n in nodes])
        except ProviderError as error:
            raise status.from_provider_error(error) from error
        now = self.server.clock.now()
        items = [wire.node_metrics(u, labels=labels.get(u.name, {}), created=now) for u in usages]
        return _json(wire.resource_list("NodeMetricsList", items))

    async def node_metrics_get(self, target: NodeMetricsTarget) -> web.Response:
        provider = self._resource(target.version)
        name = target.name
        node = next((n for n in await self._list_nodes("") if n.name == name), None)
        if node is None:
            raise status.not_found("node", "", name=name)  # the node lister's resource
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

    async def explain(self, request: web.BaseRequest) -> web.Response:
        """``/debug/explain?path=P``: the explanation reveals P's rule, PromQL and values, so the
        user must also be authorized for P itself, with P's own attributes."""
        if self.server.explain is None:
            raise status.not_found_path()
        path = request.query.get("path", "")
        if not path:
            raise status.bad_request("the path query parameter is required")
        query = {k: v for k, v in request.query.items() if k != "path"}
        try:
            metric = parse_metric_request(path, query=query)
        except ValueError as error:
            raise status.bad_request(f"path: {error}") from error
        await require_authorized(self.server, request[USER], metric.info.attributes)
        return _json(await self.server.explain(metric))
