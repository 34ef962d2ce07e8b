"""The external metrics provider (``external.metrics.k8s.io``): values for a metric selector.

Upstream counterparts: prometheus-adapter ``pkg/external-provider/provider.go``
(``GetExternalMetric``, ``ListAllExternalMetrics``, ``selectGroupResource``) and
``metric_converter.go`` (one item per vector sample with all its labels and its timestamp; a
scalar becomes one unlabelled item).

Deliberate deviations (docs/adapter-values.md):

- an empty result is NotFound "the server could not find the metric M for namespaces" (upstream
  answers an empty list, which the HPA rejects as "no metrics returned from external metrics
  API"; KEDA#3065 shows why silently reading it as 0 is dangerous) unless the metric opts in with
  ``empty_is_zero``, which answers one item of value 0;
- the NotFound message names ``namespaces`` for every namespace (upstream: only for ``default``,
  an empty resource otherwise);
- NaN/+-Inf samples are left out; if nothing is left the metric is NotFound;
- when the newest raw sample of the rule's series under the selector is older than the staleness
  bound, the whole answer is NotFound (``STALE``);
- items carry the rule's window when known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import NoReturn

import structlog

from adapter.providers.clock import SystemClock
from adapter.providers.custom import IndexSource
from adapter.providers.errors import MetricNotFoundError, MissingCause
from adapter.providers.evaluation import (
    external_probe_query,
    freshness_of,
    parse_request_selector,
    rule_errors_to_provider_errors,
    run_with_probe,
)
from adapter.providers.ports import Clock, PrometheusQuerier
from adapter.providers.telemetry import ProviderMetrics
from adapter.providers.values import (
    ValueSettings,
    milli_from_text,
    timestamp_from_seconds,
    window_from_query,
)
from adapter.rules import NAMESPACES, BadQueryError
from adapter.rules.errors import RuleEvaluationError
from hpa.core.quantity import Quantity

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ExternalMetricValue:
    """``external_metrics.ExternalMetricValue``."""

    metric: str
    labels: Mapping[str, str]
    _: KW_ONLY
    value: Quantity
    timestamp: datetime
    window_seconds: int | None


class ExternalMetricsProvider:
    def __init__(
        self,
        querier: PrometheusQuerier,
        indexes: IndexSource,
        *,
        settings: ValueSettings | None = None,
        clock: Clock | None = None,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        self._querier = querier
        self._indexes = indexes
        self.settings = settings if settings is not None else ValueSettings()
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._metrics = metrics

    def list_all_metrics(self) -> list[str]:
        """``ListAllExternalMetrics`` from the current index (sorted names)."""
        return self._indexes.index.external.list_all_metrics()

    async def get_external_metric(
        self,
        metric: str,
        *,
        namespace: str,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[ExternalMetricValue]:
        """``GetExternalMetric``: the series ``metric_selector`` selects (the HPA sums them).

        ``namespace`` is always in the path; rules with ``namespaced: false`` ignore it.
        Raises ``MetricNotFoundError``, ``InvalidRequestError``, ``MetricFetchError``.
        """
        requirements = parse_request_selector(metric_selector, what="metric label selector")
        registry = self._indexes.index.external
        entry = registry.info.get(metric)
        try:
            query = registry.query_for_metric(
                metric, namespace=namespace, metric_selector=requirements
            )
            if query is None or entry is None:
                self._missing(metric, MissingCause.UNKNOWN_METRIC)
            probe = None
            if self.settings.max_sample_age_seconds is not None:
                probe = external_probe_query(
                    entry, namespace=namespace, metric_selector=requirements
                )
        except (BadQueryError, RuleEvaluationError) as exc:
            raise rule_errors_to_provider_errors(exc) from exc
        if timeout_seconds is None:
            timeout_seconds = self.settings.query_timeout_seconds
        result, probed = await run_with_probe(
            self._querier, query, probe=probe, timeout_seconds=timeout_seconds
        )
        policy = self.settings.policy(metric)
        window = policy.window_seconds
        if window is None:
            window = window_from_query(entry.namer.rule.metrics_query)
        if not result.samples:
            if policy.empty_is_zero:
                return [
                    ExternalMetricValue(
                        metric,
                        {},
                        value=Quantity.from_milli(0),
                        timestamp=self._clock.now(),
                        window_seconds=window,
                    )
                ]
            self._missing(metric, MissingCause.EMPTY_RESULT)
        newest: float | None = None
        bound = self.settings.max_sample_age_seconds
        if probed is not None and bound is not None:
            fresh = freshness_of(probed.samples[0]) if probed.samples else None
            if fresh is None or fresh.age_seconds > bound:
                self._missing(metric, MissingCause.STALE)
            newest = fresh.sample_time_seconds
        values = []
        for sample in result.samples:
            milli = milli_from_text(sample.value_text)
            if milli is None:
                continue
            timestamp = sample.timestamp_seconds if newest is None else newest
            values.append(
                ExternalMetricValue(
                    metric,
                    dict(sample.labels),
                    value=Quantity.from_milli(milli),
                    timestamp=timestamp_from_seconds(timestamp),
                    window_seconds=window,
                )
            )
        if not values:
            self._missing(metric, MissingCause.NOT_FINITE)
        return values

    def _missing(self, metric: str, cause: MissingCause) -> NoReturn:
        if self._metrics is not None:
            self._metrics.missing.labels("external", cause.value).inc()
        raise MetricNotFoundError(NAMESPACES, metric, cause=cause)
