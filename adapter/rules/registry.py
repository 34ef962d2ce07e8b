"""Series registries: which API metrics exist, and the query behind each one.

Upstream counterparts: prometheus-adapter ``pkg/custom-provider/series_registry.go``
(``basicSeriesRegistry``: ``SetSeries``, ``ListAllMetrics``, ``QueryForMetric``,
``MatchValuesToNames``) and ``pkg/external-provider/external_series_registry.go``
(``externalSeriesRegistry``: ``filterAndStoreMetrics``, ``QueryForMetric``), with
custom-metrics-apiserver's ``CustomMetricInfo``.

These are the pure halves: the providers' periodic relist asks Prometheus for each namer's
``series_query``, passes the answers to ``SeriesRegistry.from_series`` /
``ExternalSeriesRegistry.from_series`` and swaps in the new immutable snapshot. Nothing here
locks: a snapshot never changes after it is built.

Deliberate deviations (docs/adapter-rules.md): ``query_for_metric`` returns ``None`` for an unknown
metric (upstream's ``found == false``) but raises ``BadQueryError`` for a caller's bad input and
``RuleEvaluationError`` when the rule cannot render, instead of logging and answering "not found";
series whose names are not valid Prometheus metric names are skipped at registration (and listed in
``skipped``) instead of producing unparsable queries later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from adapter.rules.errors import RuleEvaluationError
from adapter.rules.mapper import (
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUMES,
    GroupResource,
    RESTMapper,
    UnknownResourceError,
)
from adapter.rules.naming import MetricNamer, Series
from adapter.rules.promql import is_valid_metric_name
from adapter.rules.selector import Requirement

V = TypeVar("V")


@dataclass(frozen=True, order=True)
class CustomMetricInfo:
    """``provider.CustomMetricInfo``: a metric on a (normalized) group-resource."""

    group_resource: GroupResource
    namespaced: bool
    metric: str

    def __str__(self) -> str:
        suffix = "(namespaced)" if self.namespaced else ""
        return f"{self.group_resource}/{self.metric}{suffix}"


@dataclass(frozen=True)
class SeriesInfo:
    """``seriesInfo``: the Prometheus series behind an API metric, and its namer."""

    series_name: str
    namer: MetricNamer


def _check_slices(series: Sequence[Sequence[Series]], namers: Sequence[MetricNamer]) -> None:
    if len(series) != len(namers):
        raise ValueError("need one set of series per namer")


@dataclass(frozen=True)
class SeriesRegistry:
    """``basicSeriesRegistry``, as an immutable snapshot."""

    mapper: RESTMapper
    info: Mapping[CustomMetricInfo, SeriesInfo] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    @classmethod
    def from_series(
        cls,
        series: Sequence[Sequence[Series]],
        namers: Sequence[MetricNamer],
        mapper: RESTMapper,
    ) -> SeriesRegistry:
        """``SetSeries``: ``series[i]`` are the (filtered) series found by ``namers[i]``."""
        _check_slices(series, namers)
        info: dict[CustomMetricInfo, SeriesInfo] = {}
        skipped: list[str] = []
        for namer, found in zip(namers, series, strict=True):
            # a relist returns many series per metric name and label-name set (one per pod):
            # the name and the resources depend on nothing else, so each is worked out once
            seen: set[tuple[str, frozenset[str]]] = set()
            for item in found:
                shape = (item.name, frozenset(item.labels))
                if shape in seen:
                    continue
                seen.add(shape)
                if not is_valid_metric_name(item.name):
                    skipped.append(item.name)
                    continue
                resources, namespaced = namer.resources_for_series(item)
                try:
                    name = namer.metric_name_for_series(item)
                except RuleEvaluationError:
                    skipped.append(item.name)
                    continue
                for resource in resources:
                    metric_namespaced = namespaced and resource not in (
                        NAMESPACES,
                        NODES,
                        PERSISTENT_VOLUMES,
                    )
                    key = CustomMetricInfo(resource, metric_namespaced, name)
                    info[key] = SeriesInfo(item.name, namer)
        return cls(mapper=mapper, info=info, skipped=tuple(skipped))

    def list_all_metrics(self) -> list[CustomMetricInfo]:
        """``ListAllMetrics``, sorted for stable discovery documents."""
        return sorted(self.info)

    def normalized(self, info: CustomMetricInfo) -> CustomMetricInfo | None:
        """``CustomMetricInfo.Normalized``; ``None`` when the mapper does not know the resource."""
        try:
            resource = self.mapper.resource_for(info.group_resource)
        except UnknownResourceError:
            return None
        return CustomMetricInfo(resource, info.namespaced, info.metric)

    def query_for_metric(
        self,
        info: CustomMetricInfo,
        *,
        namespace: str | None,
        names: Sequence[str],
        metric_selector: Iterable[Requirement] = (),
    ) -> str | None:
        """``QueryForMetric``: the PromQL for ``names``; ``None`` if the metric is unknown.

        No names (a selector that matched no objects) is also ``None``: upstream answers
        "not found" then, without asking Prometheus.
        """
        if not names:
            return None
        normalized = self.normalized(info)
        if normalized is None:
            return None
        entry = self.info.get(normalized)
        if entry is None:
            return None
        return entry.namer.query_for_series(
            entry.series_name,
            normalized.group_resource,
            namespace=namespace,
            names=names,
            metric_selector=metric_selector,
        )

    def match_values_to_names(
        self, info: CustomMetricInfo, samples: Iterable[tuple[Mapping[str, str], V]]
    ) -> dict[str, V] | None:
        """``MatchValuesToNames``: sample values keyed by the object name in the resource label."""
        normalized = self.normalized(info)
        entry = self.info.get(normalized) if normalized is not None else None
        if normalized is None or entry is None:
            return None
        label = entry.namer.label_for_resource(normalized.group_resource)
        return {labels.get(label, ""): value for labels, value in samples}


@dataclass(frozen=True)
class ExternalSeriesRegistry:
    """``externalSeriesRegistry``, as an immutable snapshot."""

    info: Mapping[str, SeriesInfo] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    @classmethod
    def from_series(
        cls, series: Sequence[Sequence[Series]], namers: Sequence[MetricNamer]
    ) -> ExternalSeriesRegistry:
        """``filterAndStoreMetrics``: the last namer to produce a name wins, as upstream."""
        _check_slices(series, namers)
        info: dict[str, SeriesInfo] = {}
        skipped: list[str] = []
        for namer, found in zip(namers, series, strict=True):
            for item in found:
                if not is_valid_metric_name(item.name):
                    skipped.append(item.name)
                    continue
                try:
                    name = namer.metric_name_for_series(item)
                except RuleEvaluationError:
                    skipped.append(item.name)
                    continue
                info[name] = SeriesInfo(item.name, namer)
        return cls(info=info, skipped=tuple(skipped))

    def list_all_metrics(self) -> list[str]:
        return sorted(self.info)

    def query_for_metric(
        self,
        metric_name: str,
        *,
        namespace: str | None,
        metric_selector: Iterable[Requirement] = (),
    ) -> str | None:
        """``QueryForMetric``: the PromQL for an external metric; ``None`` if unknown."""
        entry = self.info.get(metric_name)
        if entry is None:
            return None
        return entry.namer.query_for_external_series(
            entry.series_name, namespace=namespace, metric_selector=metric_selector
        )
