"""The server's own metrics, on an injected ``CollectorRegistry``.

Upstream counterpart: k8s.io/apiserver ``endpoints/metrics`` (``apiserver_request_duration_seconds``
by verb, group, resource and code). Ours is smaller and has closed label sets: ``api`` is one of
``API_LABELS`` and ``outcome`` one of ``OUTCOMES``. Config reloads are recorded as in Prometheus
(``..._last_reload_successful`` and ``..._last_reload_success_timestamp_seconds``).

The providers are rebuilt on a config reload, each time with a fresh registry; ``ProviderCollector``
re-exports whichever registry is current, so their metrics appear once on the injected registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric

API_LABELS = (
    "custom",
    "external",
    "resource",
    "discovery",
    "openapi",
    "health",
    "metrics",
    "debug",
    "other",
)
OUTCOMES = (
    "success",
    "bad_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "error",
    "timeout",
    "unavailable",
)

_OUTCOME_BY_CODE = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    503: "unavailable",
    504: "timeout",
}


def outcome_for(code: int) -> str:
    if code < 400:
        return "success"
    return _OUTCOME_BY_CODE.get(code, "error")


class ServerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.request_duration = Histogram(
            "hpa_adapter_request_duration_seconds",
            "Latency of API requests served by the adapter, by API and outcome.",
            ["api", "outcome"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
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

    def observe(self, api: str, code: int, *, seconds: float) -> None:
        self.request_duration.labels(api, outcome_for(code)).observe(seconds)


class ProviderCollector:
    """Collects from the registry the current providers report to."""

    def __init__(self, current: Callable[[], CollectorRegistry | None]) -> None:
        self._current = current

    def collect(self) -> Iterable[Metric]:
        registry = self._current()
        if registry is None:
            return []
        return list(registry.collect())
