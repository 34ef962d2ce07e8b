"""Which handler serves a request, read from its one parse (``RequestInfo``).

Upstream counterparts: custom-metrics-apiserver ``pkg/apiserver/installer`` (custom metrics:
``namespaces/{namespace}/{resource}/{name}/{metric}``, ``{resource}/{name}/{metric}`` and the
``namespaces/{namespace}/metrics/{metric}`` special case; external metrics:
``namespaces/{namespace}/{metric}``), metrics-server ``pkg/api`` (``pods``, ``nodes``), and the
discovery, OpenAPI and health paths of k8s.io/apiserver.

Routing reads the same fields authorization reads: a custom metric is the request's namespace,
resource, name and subresource (the metric); an external metric is its namespace and resource (the
metric). So what is served is always what was authorized.

Deliberate deviations: a custom metric of a namespace object is served on its canonical path
``namespaces/{namespace}/metrics/{metric}`` (what the ``k8s.io/metrics`` client sends), authorized
as ``get`` on ``metrics`` named ``{metric}``. The root form ``namespaces/{namespace}/{metric}`` is
not served: authorization reads it as ``list {metric}``, which grants nothing about the namespace's
metrics; as upstream (``ListResourceWithOptions``: fewer than three parts), it is 400 "invalid
request path". A path ``namespaces/{ns}/namespaces/{name}/{metric}`` is authorized and served as the
root-scoped ``namespaces/{name}/{metric}`` (upstream's parse gives both the same attributes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qsl, urlsplit

from adapter.server import wire
from adapter.server.requestinfo import RequestInfo, parse_request


class Page(StrEnum):
    """Non-resource paths served without parameters."""

    HEALTHZ = "healthz"
    LIVEZ = "livez"
    READYZ = "readyz"
    METRICS = "metrics"
    OPENAPI_V2 = "openapi/v2"
    OPENAPI_V3 = "openapi/v3"
    EXPLAIN = "debug/explain"
    GROUP_LIST = "apis"


@dataclass(frozen=True, slots=True)
class GroupTarget:
    group: str


@dataclass(frozen=True, slots=True)
class ResourceListTarget:
    group: str
    version: str


@dataclass(frozen=True, slots=True)
class OpenApiGroupVersionTarget:
    group: str
    version: str


@dataclass(frozen=True, slots=True)
class CustomMetricTarget:
    """``name`` is ``""`` for the namespace-metric form; ``*`` selects by label."""

    version: str
    namespace: str | None
    resource: str
    name: str
    metric: str


@dataclass(frozen=True, slots=True)
class ExternalMetricTarget:
    version: str
    namespace: str
    metric: str


@dataclass(frozen=True, slots=True)
class PodMetricsTarget:
    """``namespace`` None lists every namespace; ``name`` ``""`` lists."""

    version: str
    namespace: str | None
    name: str


@dataclass(frozen=True, slots=True)
class NodeMetricsTarget:
    version: str
    name: str


@dataclass(frozen=True, slots=True)
class InvalidPathTarget:
    """A custom-metrics path upstream routes but cannot read (``namespaces/{ns}/{x}``): 400."""

    path: str


MetricTarget = CustomMetricTarget | ExternalMetricTarget
Target = (
    Page
    | GroupTarget
    | ResourceListTarget
    | OpenApiGroupVersionTarget
    | MetricTarget
    | PodMetricsTarget
    | NodeMetricsTarget
    | InvalidPathTarget
)

_PAGES = {tuple(page.value.split("/")): page for page in Page}


def route(info: RequestInfo) -> Target | None:
    """The target of a parsed request, or None (404). A path with an empty segment (``//``)
    names nothing."""
    if "" in info.segments:
        return None
    attributes = info.attributes
    if not attributes.is_resource_request:
        return _non_resource(info.segments)
    group, version = attributes.api_group, attributes.api_version
    namespace, parts = attributes.namespace, info.parts
    if group == wire.CUSTOM_GROUP:
        if namespace and parts[0] == "metrics" and len(parts) == 2:
            return CustomMetricTarget(version, namespace, "metrics", "", attributes.name)
        if namespace and len(parts) == 1:
            return InvalidPathTarget("/".join(info.segments))
        if len(parts) == 3:
            scope = None if not namespace or attributes.resource == "namespaces" else namespace
            return CustomMetricTarget(
                version, scope, attributes.resource, attributes.name, attributes.subresource
            )
        return None
    if group == wire.EXTERNAL_GROUP:
        if namespace and len(parts) == 1:
            return ExternalMetricTarget(version, namespace, attributes.resource)
        return None
    if group == wire.RESOURCE_GROUP:
        if attributes.resource == "pods" and len(parts) == 1:
            return PodMetricsTarget(version, namespace or None, "")
        if attributes.resource == "pods" and len(parts) == 2 and namespace:
            return PodMetricsTarget(version, namespace, attributes.name)
        if attributes.resource == "nodes" and not namespace and len(parts) <= 2:
            return NodeMetricsTarget(version, attributes.name)
    return None


def _non_resource(segments: tuple[str, ...]) -> Target | None:
    page = _PAGES.get(segments)
    if page is not None:
        return page
    if segments[0] == "apis" and len(segments) == 2:
        return GroupTarget(segments[1])
    if segments[0] == "apis" and len(segments) == 3:
        return ResourceListTarget(segments[1], segments[2])
    if segments[:3] == ("openapi", "v3", "apis") and len(segments) == 5:
        return OpenApiGroupVersionTarget(segments[3], segments[4])
    return None


@dataclass(frozen=True, slots=True)
class MetricRequest:
    """A custom or external metric request, as ``/debug/explain`` and ``hpa adapter explain``
    name it: the parse (for authorization), its target, and the selectors."""

    info: RequestInfo
    target: MetricTarget
    label_selector: str = ""
    metric_label_selector: str = ""


def parse_metric_request(path: str, *, query: Mapping[str, str] | None = None) -> MetricRequest:
    """A metrics API path with an optional query string (``query`` overrides its parameters),
    parsed and routed exactly as the server parses and routes a request for it. Raises
    ``ValueError`` (``RequestPathError`` included) naming the path when it is not one."""
    split = urlsplit(path)
    params = dict(parse_qsl(split.query, keep_blank_values=True))
    params.update(query or {})
    info = parse_request("GET", split.path, query=params)
    target = route(info)
    if not isinstance(target, CustomMetricTarget | ExternalMetricTarget):
        raise ValueError(
            f"not a custom.metrics.k8s.io or external.metrics.k8s.io metric path: {path!r}"
        )
    return MetricRequest(
        info,
        target,
        label_selector=params.get("labelSelector", ""),
        metric_label_selector=params.get("metricLabelSelector", ""),
    )
