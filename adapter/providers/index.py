"""The metric index: a periodic relist through ``/api/v1/series``, swapped in atomically.

Upstream counterparts: prometheus-adapter ``pkg/custom-provider/provider.go``
(``cachingMetricsLister.updateMetrics``: one ``Series`` call per distinct ``seriesQuery``, in
parallel, over ``[now - maxAge, now]``; any failure keeps the previous index), the external
lister (``pkg/external-provider/basic_metric_lister.go``, ``periodic_metric_lister.go``) and
custom-metrics-apiserver's discovery listers (``NewResourceLister``:
``{name: "<group-resource>/<metric>", namespaced, kind: MetricValueList, verbs: [get]}``;
``NewExternalMetricResourceLister``: ``{name: <metric>, namespaced: true, kind:
ExternalMetricValueList, verbs: [get]}``).

Deliberate deviations: custom and external rules are relisted together (one pass, one index,
selectors shared across both); each index carries the discovery documents
(``APIResourceList`` JSON for custom.metrics.k8s.io v1beta1 and v1beta2 and
external.metrics.k8s.io v1beta1) prebuilt as bytes, so a discovery request is a dictionary
lookup, and a document over k8s.io/apiserver's gzip threshold (128 KiB) also prebuilt gzipped, for
clients that accept it (upstream compresses it per request); a relist keeps only each series'
shape (name and label names) and how many series have it, never the listed series; a generation
number and the relist time travel with the index.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import orjson
import structlog
from prometheus_client import CollectorRegistry

from adapter.prometheus.errors import PrometheusError
from adapter.prometheus.results import distinct_series
from adapter.providers.ports import Clock, PrometheusQuerier
from adapter.providers.telemetry import ProviderMetrics
from adapter.rules import (
    CustomMetricInfo,
    ExternalSeriesRegistry,
    MetricNamer,
    RESTMapper,
    Series,
    SeriesRegistry,
    StaticRESTMapper,
    UnknownResourceError,
)
from adapter.rules.errors import RuleEvaluationError

log = structlog.get_logger(__name__)

CUSTOM_GROUP = "custom.metrics.k8s.io"
EXTERNAL_GROUP = "external.metrics.k8s.io"
CUSTOM_V1BETA1 = f"{CUSTOM_GROUP}/v1beta1"
CUSTOM_V1BETA2 = f"{CUSTOM_GROUP}/v1beta2"
EXTERNAL_V1BETA1 = f"{EXTERNAL_GROUP}/v1beta1"

DEFAULT_RELIST_INTERVAL_SECONDS = 600.0  # --metrics-relist-interval (upstream: 10m)
GZIP_THRESHOLD_BYTES = 128 * 1024
"""k8s.io/apiserver ``defaultGzipThresholdBytes``: larger answers are gzipped for a client that
sends ``Accept-Encoding: gzip``."""


def api_resource_list(group_version: str, resources: Sequence[dict[str, object]]) -> bytes:
    """``metav1.APIResourceList`` JSON, fields in Go's order."""
    return orjson.dumps(
        {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": list(resources),
        }
    )


def custom_api_resources(metrics: Sequence[CustomMetricInfo]) -> list[dict[str, object]]:
    return [
        {
            "name": f"{info.group_resource}/{info.metric}",
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": "MetricValueList",
            "verbs": ["get"],
        }
        for info in metrics
    ]


def external_api_resources(metrics: Sequence[str]) -> list[dict[str, object]]:
    return [
        {
            "name": metric,
            "singularName": "",
            "namespaced": True,
            "kind": "ExternalMetricValueList",
            "verbs": ["get"],
        }
        for metric in metrics
    ]


@dataclass(frozen=True, kw_only=True)
class MetricIndex:
    """One immutable relist result. ``discovery`` maps a group-version
    (``custom.metrics.k8s.io/v1beta2``, ...) to its ``APIResourceList`` JSON bytes;
    ``discovery_gzip`` holds the same documents gzipped, those over ``GZIP_THRESHOLD_BYTES``."""

    custom: SeriesRegistry
    external: ExternalSeriesRegistry
    generation: int = 0
    listed_at: datetime | None = None
    custom_series_count: int = 0
    external_series_count: int = 0
    discovery: dict[str, bytes] = field(default_factory=dict)
    discovery_gzip: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        custom: SeriesRegistry,
        external: ExternalSeriesRegistry,
        *,
        generation: int,
        listed_at: datetime | None,
        custom_series_count: int = 0,
        external_series_count: int = 0,
    ) -> MetricIndex:
        custom_resources = custom_api_resources(custom.list_all_metrics())
        external_resources = external_api_resources(external.list_all_metrics())
        discovery = {
            CUSTOM_V1BETA1: api_resource_list(CUSTOM_V1BETA1, custom_resources),
            CUSTOM_V1BETA2: api_resource_list(CUSTOM_V1BETA2, custom_resources),
            EXTERNAL_V1BETA1: api_resource_list(EXTERNAL_V1BETA1, external_resources),
        }
        return cls(
            custom=custom,
            external=external,
            generation=generation,
            listed_at=listed_at,
            custom_series_count=custom_series_count,
            external_series_count=external_series_count,
            discovery=discovery,
            discovery_gzip={
                group_version: gzip.compress(body, mtime=0)
                for group_version, body in discovery.items()
                if len(body) > GZIP_THRESHOLD_BYTES
            },
        )

    @classmethod
    def empty(cls, mapper: RESTMapper) -> MetricIndex:
        return cls.build(
            SeriesRegistry(mapper=mapper), ExternalSeriesRegistry(), generation=0, listed_at=None
        )


def _filter_counted(
    namer: MetricNamer, found: Sequence[tuple[Series, int]]
) -> list[tuple[Series, int]]:
    """``FilterSeries`` over distinct series shapes and their counts."""
    return [(item, count) for item, count in found if namer.series_matches(item.name)]


class RelistError(RuntimeError):
    """A relist failed; the previous index stays in place."""


class MetricRelister:
    """Keeps ``index`` fresh: ``relist()`` once, or ``run()`` forever every ``interval``.

    relist_interval_seconds: ``--metrics-relist-interval``.
    max_age_seconds: ``--metrics-max-age``, how far back ``/api/v1/series`` looks (upstream
        defaults it to the relist interval).
    """

    def __init__(
        self,
        querier: PrometheusQuerier,
        *,
        custom_namers: Sequence[MetricNamer],
        external_namers: Sequence[MetricNamer] = (),
        mapper: RESTMapper | None = None,
        clock: Clock,
        relist_interval_seconds: float = DEFAULT_RELIST_INTERVAL_SECONDS,
        max_age_seconds: float | None = None,
        registry: CollectorRegistry | None = None,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        if relist_interval_seconds <= 0:
            raise ValueError("relist_interval_seconds must be positive")
        self._querier = querier
        self._custom_namers = tuple(custom_namers)
        self._external_namers = tuple(external_namers)
        self._mapper: RESTMapper = mapper if mapper is not None else StaticRESTMapper.builtin()
        self._clock = clock
        self.relist_interval_seconds = relist_interval_seconds
        self.max_age_seconds = (
            relist_interval_seconds if max_age_seconds is None else max_age_seconds
        )
        self.metrics = metrics or ProviderMetrics(registry or CollectorRegistry())
        self._index = MetricIndex.empty(self._mapper)
        self._listed_monotonic: float | None = None
        self._ready = asyncio.Event()
        self.metrics.track_relist_age(self.age_seconds)

    @property
    def index(self) -> MetricIndex:
        """The current snapshot; read it once per request and use that object throughout."""
        return self._index

    @property
    def ready(self) -> bool:
        """True once a relist has succeeded."""
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    def age_seconds(self) -> float:
        if self._listed_monotonic is None:
            return -1.0
        return max(0.0, self._clock.monotonic() - self._listed_monotonic)

    async def relist(self) -> MetricIndex:
        """``updateMetrics``: list series for every distinct selector and swap in a new index.

        Raises ``RelistError`` (and keeps the old index) when any selector fails.
        """
        started = self._clock.monotonic()
        now = self._clock.now().timestamp()
        start_seconds = now - self.max_age_seconds
        selectors = sorted(
            {namer.series_query for namer in (*self._custom_namers, *self._external_namers)}
        )
        try:
            answers = await asyncio.gather(
                *(
                    self._querier.series([selector], start_seconds=start_seconds)
                    for selector in selectors
                )
            )
        except PrometheusError as exc:
            self.metrics.relist_total.labels("error").inc()
            log.warning("relist_failed", error=exc.message, endpoint=exc.endpoint)
            raise RelistError(f"unable to update list of all metrics: {exc.message}") from exc
        # only each series' shape (name, label names) matters from here on: the answers (a
        # series per pod, a relist's bulk) are dropped once their shapes are counted
        by_selector: dict[str, list[tuple[Series, int]]] = {
            selector: distinct_series(answer)
            for selector, answer in zip(selectors, answers, strict=True)
        }
        del answers
        try:
            custom_series = [
                _filter_counted(namer, by_selector[namer.series_query])
                for namer in self._custom_namers
            ]
            external_series = [
                _filter_counted(namer, by_selector[namer.series_query])
                for namer in self._external_namers
            ]
            custom = SeriesRegistry.from_series(
                [[item for item, _ in found] for found in custom_series],
                self._custom_namers,
                self._mapper,
            )
            external = ExternalSeriesRegistry.from_series(
                [[item for item, _ in found] for found in external_series], self._external_namers
            )
        except (RuleEvaluationError, UnknownResourceError, ValueError) as exc:
            self.metrics.relist_total.labels("error").inc()
            log.warning("relist_failed", error=str(exc))
            raise RelistError(f"unable to update list of all metrics: {exc}") from exc
        index = MetricIndex.build(
            custom,
            external,
            generation=self._index.generation + 1,
            listed_at=self._clock.now(),
            custom_series_count=sum(count for found in custom_series for _, count in found),
            external_series_count=sum(count for found in external_series for _, count in found),
        )
        self._index = index
        self._listed_monotonic = self._clock.monotonic()
        self._ready.set()
        self.metrics.relist_total.labels("success").inc()
        self.metrics.relist_duration.set(self._listed_monotonic - started)
        self.metrics.series.labels("custom").set(index.custom_series_count)
        self.metrics.series.labels("external").set(index.external_series_count)
        self.metrics.metrics.labels("custom").set(len(index.custom.info))
        self.metrics.metrics.labels("external").set(len(index.external.info))
        skipped = (*custom.skipped, *external.skipped)
        log.info(
            "relisted",
            generation=index.generation,
            custom_metrics=len(index.custom.info),
            external_metrics=len(index.external.info),
            series=index.custom_series_count + index.external_series_count,
            skipped=len(skipped),
        )
        return index

    async def run(self) -> None:
        """Relist now and then every interval until cancelled; failures are logged and retried
        at the next tick (``wait.Until``)."""
        while True:
            with contextlib.suppress(RelistError):  # logged and counted in relist()
                await self.relist()
            await self._clock.sleep(self.relist_interval_seconds)
