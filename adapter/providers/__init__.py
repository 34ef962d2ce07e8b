"""The metric providers: relisted metric index, custom/external/resource values, history.

Upstream counterparts: prometheus-adapter ``pkg/custom-provider``, ``pkg/external-provider``,
``pkg/resourceprovider`` and the provider interfaces of custom-metrics-apiserver. The server
(``adapter/server``) and ``hpa``'s in-process metrics port call these typed async methods; every
failure is a ``ProviderError`` carrying its ``metav1.Status`` code, reason and message.

Typical wiring::

    config = load_rules(text, source=path)
    async with PrometheusClient(PrometheusConnection(url, ...), registry=registry) as client:
        providers = build_providers(config, client, pod_lister=pods, registry=registry)
        tg.create_task(providers.relister.run(), name="metrics-relist")
        await providers.relister.wait_ready()
        body = providers.discovery("custom.metrics.k8s.io/v1beta2")          # prebuilt bytes
        value = await providers.custom.get_metric_by_name(info, "web-0", namespace="default")

See docs/adapter-values.md for value semantics (empty is not zero, staleness, NaN, timestamps).
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from adapter.providers.batch import DEFAULT_BATCH_MAX_AGE_SECONDS, Batcher, BatchSettings
from adapter.providers.clock import SystemClock
from adapter.providers.custom import CustomMetricsProvider, CustomMetricValue, IndexSource
from adapter.providers.errors import (
    InvalidRequestError,
    MetricFetchError,
    MetricFetchTimeoutError,
    MetricNotFoundError,
    MissingCause,
    ObjectListError,
    ProviderError,
)
from adapter.providers.external import ExternalMetricsProvider, ExternalMetricValue
from adapter.providers.history import HistoryPoint, HistoryProvider, HistorySeries
from adapter.providers.index import (
    CUSTOM_V1BETA1,
    CUSTOM_V1BETA2,
    DEFAULT_RELIST_INTERVAL_SECONDS,
    EXTERNAL_V1BETA1,
    MetricIndex,
    MetricRelister,
    RelistError,
)
from adapter.providers.objects import (
    BuiltinKinds,
    CustomMetricRequest,
    KindMapper,
    ObjectReference,
    custom_metric_request,
    label_selector_json,
    parse_group_resource,
)
from adapter.providers.ports import Clock, ObjectNameLister, PodLister, PrometheusQuerier
from adapter.providers.resource import (
    ContainerUsage,
    NodeUsage,
    PodUsage,
    ResourceMetricsProvider,
)
from adapter.providers.telemetry import ProviderMetrics
from adapter.providers.values import MetricPolicy, ValueSettings, milli_text
from adapter.rules import (
    ResourceQueries,
    RESTMapper,
    RuleConfig,
    StaticRESTMapper,
    namers_from_config,
)


@dataclass(frozen=True)
class MetricProviders:
    """Everything the server (or ``hpa`` in-process) needs, built from one rule file."""

    relister: MetricRelister
    custom: CustomMetricsProvider
    external: ExternalMetricsProvider
    resource: ResourceMetricsProvider | None
    history: HistoryProvider

    def discovery(self, group_version: str) -> bytes | None:
        """The prebuilt ``APIResourceList`` JSON of the current index, or None if not served."""
        return self.relister.index.discovery.get(group_version)

    def discovery_gzip(self, group_version: str) -> bytes | None:
        """The same document gzipped, when it is over the gzip threshold (128 KiB)."""
        return self.relister.index.discovery_gzip.get(group_version)


def build_providers(
    config: RuleConfig,
    querier: PrometheusQuerier,
    *,
    pod_lister: PodLister,
    object_lister: ObjectNameLister | None = None,
    mapper: RESTMapper | None = None,
    kinds: KindMapper | None = None,
    settings: ValueSettings | None = None,
    clock: Clock | None = None,
    registry: CollectorRegistry | None = None,
    relist_interval_seconds: float = DEFAULT_RELIST_INTERVAL_SECONDS,
    max_age_seconds: float | None = None,
    source: str = "config",
    batching: BatchSettings | None = None,
) -> MetricProviders:
    """Compile the rules (``RuleConfigError`` on a bad override) and wire the providers.

    batching: batched evaluation (``adapter.providers.batch``); None answers every request with
    its own query. The server passes ``--batch-max-age`` and ``--max-series`` here."""
    rest_mapper: RESTMapper = mapper if mapper is not None else StaticRESTMapper.builtin()
    real_clock: Clock = clock if clock is not None else SystemClock()
    value_settings = settings if settings is not None else ValueSettings()
    metrics = ProviderMetrics(registry if registry is not None else CollectorRegistry())
    relister = MetricRelister(
        querier,
        custom_namers=namers_from_config(config.rules, rest_mapper, kind="rules", source=source),
        external_namers=namers_from_config(
            config.external_rules, rest_mapper, kind="externalRules", source=source
        ),
        mapper=rest_mapper,
        clock=real_clock,
        relist_interval_seconds=relist_interval_seconds,
        max_age_seconds=max_age_seconds,
        metrics=metrics,
    )
    resource = None
    if config.resource_rules is not None:
        queries = ResourceQueries.from_config(config.resource_rules, rest_mapper, source=source)
        resource = ResourceMetricsProvider(
            querier,
            queries,
            settings=value_settings,
            batching=batching,
            clock=real_clock,
            metrics=metrics,
        )
    return MetricProviders(
        relister=relister,
        custom=CustomMetricsProvider(
            querier,
            relister,
            pod_lister=pod_lister,
            object_lister=object_lister,
            kinds=kinds,
            settings=value_settings,
            clock=real_clock,
            metrics=metrics,
            batching=batching,
        ),
        external=ExternalMetricsProvider(
            querier, relister, settings=value_settings, clock=real_clock, metrics=metrics
        ),
        resource=resource,
        history=HistoryProvider(querier, relister, settings=value_settings),
    )


__all__ = [
    "CUSTOM_V1BETA1",
    "CUSTOM_V1BETA2",
    "DEFAULT_BATCH_MAX_AGE_SECONDS",
    "EXTERNAL_V1BETA1",
    "BatchSettings",
    "Batcher",
    "BuiltinKinds",
    "Clock",
    "ContainerUsage",
    "CustomMetricRequest",
    "CustomMetricValue",
    "CustomMetricsProvider",
    "ExternalMetricValue",
    "ExternalMetricsProvider",
    "HistoryPoint",
    "HistoryProvider",
    "HistorySeries",
    "IndexSource",
    "InvalidRequestError",
    "KindMapper",
    "MetricFetchError",
    "MetricFetchTimeoutError",
    "MetricIndex",
    "MetricNotFoundError",
    "MetricPolicy",
    "MetricProviders",
    "MetricRelister",
    "MissingCause",
    "NodeUsage",
    "ObjectListError",
    "ObjectNameLister",
    "ObjectReference",
    "PodLister",
    "PodUsage",
    "PrometheusQuerier",
    "ProviderError",
    "ProviderMetrics",
    "RelistError",
    "ResourceMetricsProvider",
    "ValueSettings",
    "build_providers",
    "custom_metric_request",
    "label_selector_json",
    "milli_text",
    "parse_group_resource",
]
