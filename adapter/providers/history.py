"""History: range queries for the VPA's Prometheus history and ``hpa simulate --from-prometheus``.

Upstream counterparts: prometheus-adapter ``pkg/client`` ``QueryRange`` and the VPA recommender's
Prometheus history provider (``vertical-pod-autoscaler/pkg/recommender/input/history``), which
reads container usage series over a time range.

Deliberate deviations: values are exact milli-units from the decimal text; NaN/+-Inf points are
dropped (and counted in ``dropped``), never read as 0; ``custom_metric_history`` renders a custom
metric's query from its rule exactly as the live provider does, so a simulation replays what the
HPA would have read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import datetime

from adapter.prometheus.errors import PrometheusError, PrometheusTimeoutError
from adapter.prometheus.results import RangeSeries
from adapter.providers.custom import IndexSource
from adapter.providers.errors import (
    InvalidRequestError,
    MetricFetchError,
    MetricFetchTimeoutError,
    MetricNotFoundError,
    MissingCause,
)
from adapter.providers.evaluation import parse_request_selector, rule_errors_to_provider_errors
from adapter.providers.ports import PrometheusQuerier
from adapter.providers.values import ValueSettings, milli_from_text, timestamp_from_seconds
from adapter.rules import NAMESPACES, BadQueryError, CustomMetricInfo
from adapter.rules.errors import RuleEvaluationError


@dataclass(frozen=True)
class HistoryPoint:
    timestamp: datetime
    value_milli: int


@dataclass(frozen=True)
class HistorySeries:
    labels: Mapping[str, str]
    points: tuple[HistoryPoint, ...]
    _: KW_ONLY
    dropped: int = 0


def _history(series: RangeSeries) -> HistorySeries:
    points = []
    dropped = 0
    for timestamp, text in series.points:
        milli = milli_from_text(text)
        if milli is None:
            dropped += 1
            continue
        points.append(HistoryPoint(timestamp_from_seconds(timestamp), milli))
    return HistorySeries(dict(series.labels), tuple(points), dropped=dropped)


class HistoryProvider:
    def __init__(
        self,
        querier: PrometheusQuerier,
        indexes: IndexSource,
        *,
        settings: ValueSettings | None = None,
    ) -> None:
        self._querier = querier
        self._indexes = indexes
        self.settings = settings if settings is not None else ValueSettings()

    async def query_range(
        self,
        query: str,
        *,
        start: datetime,
        end: datetime,
        step_seconds: float,
        timeout_seconds: float | None = None,
    ) -> list[HistorySeries]:
        """Any PromQL over ``[start, end]`` every ``step_seconds`` (aware datetimes)."""
        if end < start:
            raise ValueError("end must not be before start")
        if timeout_seconds is None:
            timeout_seconds = self.settings.query_timeout_seconds
        try:
            matrix = await self._querier.query_range(
                query,
                start_seconds=start.timestamp(),
                end_seconds=end.timestamp(),
                step_seconds=step_seconds,
                timeout_seconds=timeout_seconds,
            )
        except PrometheusTimeoutError as exc:
            raise MetricFetchTimeoutError(
                "unable to fetch metrics: timed out", detail=exc.message
            ) from exc
        except PrometheusError as exc:
            raise MetricFetchError(detail=exc.message) from exc
        return [_history(series) for series in matrix]

    async def custom_metric_history(
        self,
        info: CustomMetricInfo,
        *,
        namespace: str | None,
        names: Sequence[str],
        start: datetime,
        end: datetime,
        step_seconds: float,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> dict[str, HistorySeries]:
        """A custom metric's history per object name (objects without data are absent)."""
        requirements = parse_request_selector(metric_selector, what="metric label selector")
        if not names:
            raise InvalidRequestError("no object names given")
        registry = self._indexes.index.custom
        try:
            query = registry.query_for_metric(
                info,
                namespace=namespace if info.namespaced else None,
                names=names,
                metric_selector=requirements,
            )
            normalized = registry.normalized(info)
            entry = registry.info.get(normalized) if normalized is not None else None
            if query is None or normalized is None or entry is None:
                raise MetricNotFoundError(
                    info.group_resource, info.metric, cause=MissingCause.UNKNOWN_METRIC
                )
            label = entry.namer.label_for_resource(normalized.group_resource)
        except (BadQueryError, RuleEvaluationError) as exc:
            raise rule_errors_to_provider_errors(
                exc, resource=info.group_resource, metric=info.metric
            ) from exc
        found = await self.query_range(
            query,
            start=start,
            end=end,
            step_seconds=step_seconds,
            timeout_seconds=timeout_seconds,
        )
        return {series.labels.get(label, ""): series for series in found}

    async def external_metric_history(
        self,
        metric: str,
        *,
        namespace: str,
        start: datetime,
        end: datetime,
        step_seconds: float,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[HistorySeries]:
        """An external metric's history (one series per label set the rule's query returns)."""
        requirements = parse_request_selector(metric_selector, what="metric label selector")
        try:
            query = self._indexes.index.external.query_for_metric(
                metric, namespace=namespace, metric_selector=requirements
            )
        except (BadQueryError, RuleEvaluationError) as exc:
            raise rule_errors_to_provider_errors(exc, resource=NAMESPACES, metric=metric) from exc
        if query is None:
            raise MetricNotFoundError(NAMESPACES, metric, cause=MissingCause.UNKNOWN_METRIC)
        return await self.query_range(
            query,
            start=start,
            end=end,
            step_seconds=step_seconds,
            timeout_seconds=timeout_seconds,
        )
