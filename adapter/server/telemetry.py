"""The server's own metrics, on an injected ``CollectorRegistry``.

Upstream counterpart: k8s.io/apiserver ``pkg/endpoints/metrics/metrics.go``:
``apiserver_request_total`` (verb, dry_run, group, version, resource, subresource, scope,
component, code) and ``apiserver_request_duration_seconds`` (the same but code, upstream's
buckets), labelled from the request's one parse (``RequestInfo``) as upstream's ``Record``/
``CleanScope``: a non-resource request has an empty resource and its path as ``subresource``.
Config reloads are recorded as in Prometheus (``..._last_reload_successful`` and
``..._last_reload_success_timestamp_seconds``).

Deliberate deviations, to keep label sets closed: a non-resource path outside
``NON_RESOURCE_PATHS`` is recorded as ``other``, and a request that failed authentication (401) is
recorded without its resource, subresource, group and version, so unauthenticated clients cannot
mint series; ``dry_run`` is always empty (the metrics APIs are read-only).

The providers are rebuilt on a config reload, each time with a fresh registry; ``ProviderCollector``
re-exports whichever registry is current, so their metrics appear once on the injected registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric

from adapter.server.requestinfo import RequestInfo

REQUEST_DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip
"""Upstream's ``apiserver_request_duration_seconds`` buckets."""
REQUEST_LABELS = (
    "verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component",
)  # fmt: skip
NON_RESOURCE_PATHS = frozenset(
    {"/", "/apis", "/healthz", "/readyz", "/livez", "/metrics", "/openapi/v2", "/version"}
)
"""Non-resource paths recorded as themselves; discovery (``/apis/<group>/<version>``) too."""
COMPONENT = "apiserver"


def request_labels(info: RequestInfo | None, *, method: str, code: int) -> tuple[str, ...]:
    """The ``REQUEST_LABELS`` values of one request (upstream's ``Record`` and ``CleanScope``)."""
    if info is None:
        return (method.upper(), "", "", "", "", "other", "", COMPONENT)
    a = info.attributes
    verb = a.verb.upper()
    if not a.is_resource_request:
        path = a.path.rstrip("/") or "/"
        known = path in NON_RESOURCE_PATHS or (
            len(info.segments) in (2, 3) and info.segments[0] == "apis"
        )
        return (verb, "", "", "", "", path if known else "other", "", COMPONENT)
    scope = "namespace" if a.namespace else "resource" if a.name else "cluster"
    if code == 401:
        return (verb, "", "", "", "", "", scope, COMPONENT)
    return (verb, "", a.api_group, a.api_version, a.resource, a.subresource, scope, COMPONENT)


class ServerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            [*REQUEST_LABELS, "code"],
            registry=registry,
        )
        self.request_duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            list(REQUEST_LABELS),
            buckets=REQUEST_DURATION_BUCKETS,
            registry=registry,
        )
        self.config_reloads = Counter(
            "hpa_adapter_config_reloads_total",
            "Rule file reloads, by result (success or failure).",
            ["result"],
            registry=registry,
        )
        self.config_last_reload_successful = Gauge(
            "hpa_adapter_config_last_reload_successful",
            "Whether the last rule file (re)load succeeded (1) or failed (0).",
            registry=registry,
        )
        self.config_last_reload_success_timestamp = Gauge(
            "hpa_adapter_config_last_reload_success_timestamp_seconds",
            "Unix time of the last successful rule file (re)load.",
            registry=registry,
        )
        for result in ("success", "failure"):
            self.config_reloads.labels(result)
        self._children: dict[tuple[str, ...], tuple[Counter, Histogram]] = {}
        """The request metrics' children by label values (the label sets are closed, so this
        stays as small as the series themselves): looked up once per request, not built."""

    def observe(self, info: RequestInfo | None, code: int, *, method: str, seconds: float) -> None:
        labels = (*request_labels(info, method=method, code=code), str(code))
        children = self._children.get(labels)
        if children is None:
            children = self._children[labels] = (
                self.requests.labels(*labels),
                self.request_duration.labels(*labels[:-1]),
            )
        children[0].inc()
        children[1].observe(seconds)


class ProviderCollector:
    """Collects from the registry the current providers report to."""

    def __init__(self, current: Callable[[], CollectorRegistry | None]) -> None:
        self._current = current

    def collect(self) -> Iterable[Metric]:
        registry = self._current()
        if registry is None:
            return []
        return list(registry.collect())
