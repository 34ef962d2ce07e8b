"""The providers' own metrics, on an injected ``CollectorRegistry``.

Upstream counterpart: none in prometheus-adapter (it exports only the client latency histogram);
these answer "is discovery fresh, how big is it, and why are values missing".
Label values are closed sets: ``api`` is custom/external/resource/history, ``cause`` a
``MissingCause`` value, ``kind`` custom/external.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge


class ProviderMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.relist_age = Gauge(
            "prometheus_adapter_relist_age_seconds",
            "Seconds since the metric index was last rebuilt from Prometheus (-1: never).",
            registry=registry,
        )
        self.relist_total = Counter(
            "prometheus_adapter_relists_total",
            "Relists of the metric index, by result (success or error).",
            ["result"],
            registry=registry,
        )
        self.relist_duration = Gauge(
            "prometheus_adapter_relist_duration_seconds",
            "How long the last successful relist took.",
            registry=registry,
        )
        self.series = Gauge(
            "prometheus_adapter_series",
            "Series found by the last successful relist (after filtering), by kind.",
            ["kind"],
            registry=registry,
        )
        self.metrics = Gauge(
            "prometheus_adapter_metrics",
            "API metrics served after the last successful relist, by kind.",
            ["kind"],
            registry=registry,
        )
        self.missing = Counter(
            "prometheus_adapter_missing_values_total",
            "Requests answered NotFound (or objects left out of a list), by API and cause.",
            ["api", "cause"],
            registry=registry,
        )

        self.batch_evaluations = Counter(
            "prometheus_adapter_batch_evaluations_total",
            "Batched evaluations (one query for every object of a rule), by API and result.",
            ["api", "result"],
            registry=registry,
        )
        self.batch_requests = Counter(
            "prometheus_adapter_batch_requests_total",
            "Requests by how they were answered: snapshot, snapshot_late (the snapshot past "
            "its max age while its renewal is in flight), or per_request_rule / "
            "per_request_selector when the rule or the metric selector cannot be batched, "
            "per_request_late when a late renewal's snapshot is too old to serve.",
            ["api", "path"],
            registry=registry,
        )

    def track_relist_age(self, age_seconds: Callable[[], float]) -> None:
        self.relist_age.set_function(age_seconds)
