"""The horizontal controller's ``MetricsClient`` port over ``adapter``'s providers, in-process.

Upstream counterpart: ``restMetricsClient`` of ``pkg/controller/podautoscaler/metrics/client.go``
(the four methods ``GetResourceMetric``, ``GetRawMetric``, ``GetObjectMetric``,
``GetExternalMetric``) with what the aggregated APIs would have answered computed by
prometheus-adapter's providers in the same process (``--metrics-source=inprocess``, for
single-binary installs: no ``APIService``, no adapter Deployment, no aggregation hop).

Each method maps to one provider call, and shapes the answer as ``hpa.metrics`` shapes the REST
answer, so the decision cannot tell the two sources apart:

* ``get_resource_metric`` -> the pods the selector selects (the controller's pod informer, through
  :class:`ControllerPodNames`) -> ``resource.get_pod_metrics``; a pod's value is the sum over its
  containers or the named container's (``container <c> not present in metrics for pod ns/name``
  fails the call, as ``getContainerMetrics``); no pod with data is ``no metrics returned from
  resource metrics API``; without ``resourceRules`` the call fails as a cluster without
  ``metrics.k8s.io`` does (``the server could not find the requested resource (get
  pods.metrics.k8s.io)``).
* ``get_raw_metric`` -> ``custom.get_metric_by_selector`` on ``pods``; a sample without a window
  gets the client's 60 s default.
* ``get_object_metric`` -> ``custom.get_metric_by_name`` on the described object (a core
  ``Namespace`` is the root-scoped namespace object, as the REST path ``namespaces/<ns>/metrics/
  <metric>``; other kinds map to ``<plural>.<group>`` by the same guess the adapter's
  ``BuiltinKinds`` uses).
* ``get_external_metric`` -> ``external.get_external_metric``.

A ``ProviderError`` becomes the :class:`~hpa.core.decision.MetricFetchError` the REST client would
have produced from the adapter's ``metav1.Status``: ``unable to fetch metrics from <custom|external|
resource> metrics API: <status message>`` (e.g. ``... custom metrics API: the server could not
find the metric m for pods``). The provider's ``detail`` (why a value is missing) is logged, not
returned, as the server does not leak it either.

The Prometheus connection and rule file come from the adapter's own settings and flags
(``--config``, ``--prometheus-url``, ``--prometheus-*``, ``--metrics-relist-interval``,
``--metrics-max-age``; :func:`add_flags` registers that subset, :func:`settings_from_args` builds
``adapter.server.settings.Settings``), so ``hpa adapter`` and ``hpa controller
--metrics-source=inprocess`` read one configuration the same way.

The VPA recommender's live samples come the same way (:class:`InProcessContainerSource`, the
``ContainerMetricsSource`` port of ``hpa.controllers.vertical.ports``): the pods the recommender
knows (its pod informer) -> ``resource.get_pod_metrics`` -> one snapshot per container, shaped as
``hpa.metrics.containers`` shapes a ``metrics.k8s.io`` list (cpu ``MilliValue()``, memory
``Value()``, the timestamp in whole seconds as ``metav1.Time`` carries it, the rule's window), so
the recommender cannot tell the two sources apart either.

Deliberate deviations: the rule file is read once at start (``hpa adapter`` reloads it on change
and SIGHUP); a custom or external metric requested before the first relist succeeded waits for it
(within the controller's per-metric deadline) instead of answering "not found" from an empty index.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient
from adapter.providers import (
    MetricProviders,
    ProviderError,
    ValueSettings,
    build_providers,
    custom_metric_request,
)
from adapter.providers.ports import PrometheusQuerier
from adapter.providers.resource import ResourceMetricsProvider
from adapter.rules import ResourceQueries, StaticRESTMapper, load_rules
from adapter.rules.mapper import guess_plural
from adapter.server.cli import prometheus_connection
from adapter.server.settings import Settings as AdapterSettings
from adapter.server.settings import parse_header
from hpa.api.vpa import time_to_ns
from hpa.controllers.ports import MetricsClient, PodLister
from hpa.core.decision import (
    ExternalMetricObservation,
    MetricFetchError,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.duration import parse_duration_seconds
from hpa.core.replicas import PodMetric
from hpa.core.selector import parse_selector
from hpa.core.spec import CrossVersionObjectReference
from hpa.core.vpa.cluster import PodId
from hpa.core.vpa.usage import ContainerMetricsSnapshot, MetricsSourceError
from hpa.metrics.containers import METRICS_API
from hpa.metrics.custom import DEFAULT_METRIC_WINDOW_SECONDS

__all__ = [
    "METRICS_SOURCES",
    "ControllerPodNames",
    "InProcessContainerSource",
    "InProcessMetricsClient",
    "InProcessMetricsSource",
    "add_flags",
    "connection_settings_from_args",
    "open_source",
    "resource_provider",
    "settings_from_args",
]

log = structlog.get_logger("hpa.app.inprocess_metrics")

METRICS_SOURCES = ("api", "inprocess")
"""``--metrics-source``: the aggregated APIs (default) or the adapter's providers in-process."""

RESOURCE_API = "resource metrics API"
CUSTOM_API = "custom metrics API"
EXTERNAL_API = "external metrics API"
NO_RESOURCE_METRICS = "the server could not find the requested resource (get pods.metrics.k8s.io)"
"""What the API server answers for ``metrics.k8s.io`` when nothing serves it (no resourceRules)."""


class ControllerPodNames:
    """``adapter.providers.PodLister`` over the controller's ``PodLister`` (the pod informer):
    the names of the pods a selector selects; a selector that does not parse raises
    ``SelectorError`` (the provider reports ``unable to list matching resources``)."""

    def __init__(self, pods: PodLister) -> None:
        self._pods = pods

    async def pods_for_selector(self, namespace: str, selector: str) -> Sequence[str]:
        return [pod.info.name for pod in self._pods.list_pods(namespace, parse_selector(selector))]


def _fetch_error(api: str, error: ProviderError, **context: str) -> MetricFetchError:
    """The REST client's text for the adapter's ``metav1.Status`` of ``error``."""
    log.info("inprocess_metric_error", api=api, code=error.code, detail=error.detail, **context)
    return MetricFetchError(f"unable to fetch metrics from {api}: {error.message}")


def _described_resource(reference: CrossVersionObjectReference) -> str:
    """``<plural>.<group>`` (``<plural>`` for the core group) of a described object's kind."""
    group = reference.api_version.rpartition("/")[0] if "/" in reference.api_version else ""
    plural, _ = guess_plural(reference.kind)
    return f"{plural}.{group}" if group else plural


class InProcessMetricsClient:
    """``MetricsClient`` answered by ``adapter`` providers in this process (see the module)."""

    def __init__(self, providers: MetricProviders, *, pods: PodLister) -> None:
        self._providers = providers
        self._pods = pods

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        provider = self._providers.resource
        if provider is None:
            return MetricFetchError(
                f"unable to fetch metrics from {RESOURCE_API}: {NO_RESOURCE_METRICS}"
            )
        names = [p.info.name for p in self._pods.list_pods(namespace, parse_selector(selector))]
        try:
            usages = await provider.get_pod_metrics([(namespace, name) for name in names])
        except ProviderError as error:
            return _fetch_error(RESOURCE_API, error, resource=resource, namespace=namespace)
        if not usages:
            return MetricFetchError(f"no metrics returned from {RESOURCE_API}")
        shaped: dict[str, PodMetric] = {}
        for usage in usages:
            window_seconds = usage.window_milliseconds / 1000
            values = {
                c.name: (c.cpu if resource == "cpu" else c.memory if resource == "memory" else None)
                for c in usage.containers
            }
            if container:
                if container not in values:
                    return MetricFetchError(
                        "failed to get container metrics: container "
                        f"{container} not present in metrics for pod {namespace}/{usage.name}"
                    )
                value = values[container]
                if value is not None:
                    shaped[usage.name] = PodMetric(
                        value_milli=value.milli_value(),
                        timestamp=usage.timestamp,
                        window_seconds=window_seconds,
                    )
                continue
            if not values or any(value is None for value in values.values()):
                continue  # upstream leaves a pod out when a container lacks the resource
            shaped[usage.name] = PodMetric(
                value_milli=sum(v.milli_value() for v in values.values() if v is not None),
                timestamp=usage.timestamp,
                window_seconds=window_seconds,
            )
        return PodMetricsObservation(metrics=shaped, timestamp=usages[0].timestamp)

    async def get_raw_metric(
        self, metric_name: str, namespace: str, *, selector: str, metric_selector: str
    ) -> PodMetricsObservation | MetricFetchError:
        request = custom_metric_request(
            namespace=namespace, resource="pods", name="*", metric=metric_name
        )
        await self._providers.relister.wait_ready()
        try:
            values = await self._providers.custom.get_metric_by_selector(
                request.info,
                namespace=namespace,
                selector=selector,
                metric_selector=metric_selector,
            )
        except ProviderError as error:
            return _fetch_error(CUSTOM_API, error, metric=metric_name, namespace=namespace)
        if not values:
            return MetricFetchError(f"no metrics returned from {CUSTOM_API}")
        metrics = {
            value.described_object.name: PodMetric(
                value_milli=value.value.milli_value(),
                timestamp=value.timestamp,
                window_seconds=DEFAULT_METRIC_WINDOW_SECONDS
                if value.window_seconds is None
                else float(value.window_seconds),
            )
            for value in values
        }
        return PodMetricsObservation(metrics=metrics, timestamp=values[0].timestamp)

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        core = "/" not in described_object.api_version
        if described_object.kind == "Namespace" and core:
            request = custom_metric_request(
                namespace=namespace, resource="metrics", name=metric_name, metric=metric_name
            )
        else:
            request = custom_metric_request(
                namespace=namespace,
                resource=_described_resource(described_object),
                name=described_object.name,
                metric=metric_name,
            )
        assert request.name is not None
        await self._providers.relister.wait_ready()
        try:
            value = await self._providers.custom.get_metric_by_name(
                request.info,
                request.name,
                namespace=request.namespace,
                metric_selector=metric_selector,
            )
        except ProviderError as error:
            return _fetch_error(CUSTOM_API, error, metric=metric_name, namespace=namespace)
        return ObjectMetricObservation(
            value_milli=value.value.milli_value(), timestamp=value.timestamp
        )

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        await self._providers.relister.wait_ready()
        try:
            values = await self._providers.external.get_external_metric(
                metric_name, namespace=namespace, metric_selector=metric_selector
            )
        except ProviderError as error:
            return _fetch_error(EXTERNAL_API, error, metric=metric_name, namespace=namespace)
        if not values:
            return MetricFetchError(f"no metrics returned from {EXTERNAL_API}")
        return ExternalMetricObservation(
            values_milli=tuple(value.value.milli_value() for value in values),
            timestamp=values[0].timestamp,
        )


# --------------------------------------------------------- the VPA recommender's samples


class InProcessContainerSource:
    """``ContainerMetricsSource`` answered by ``adapter``'s resource-metrics provider in this
    process (see the module). ``pods`` lists the pods the recommender knows; ``namespace`` and
    ``ignored_namespaces`` are ``--vpa-object-namespace`` and
    ``--ignored-vpa-object-namespaces``. Without ``resourceRules`` (``resource`` None) every call
    fails as a cluster without ``metrics.k8s.io`` does."""

    def __init__(
        self,
        resource: ResourceMetricsProvider | None,
        *,
        pods: Callable[[], Iterable[PodId]],
        namespace: str = "",
        ignored_namespaces: Collection[str] = (),
    ) -> None:
        self._resource = resource
        self._pods = pods
        self._namespace = namespace
        self._ignored = frozenset(ignored_namespaces)

    async def containers_metrics(self) -> Sequence[ContainerMetricsSnapshot]:
        """``GetContainersMetrics``: every known container's latest usage."""
        if self._resource is None:
            raise MetricsSourceError(f"cannot list pods.{METRICS_API}: {NO_RESOURCE_METRICS}")
        wanted = [
            (pod.namespace, pod.pod_name)
            for pod in self._pods()
            if (not self._namespace or pod.namespace == self._namespace)
            and pod.namespace not in self._ignored
        ]
        try:
            usages = await self._resource.get_pod_metrics(wanted)
        except ProviderError as error:
            log.info("inprocess_metric_error", api=RESOURCE_API, detail=error.detail)
            raise MetricsSourceError(f"cannot list pods.{METRICS_API}: {error.message}") from error
        snapshots: list[ContainerMetricsSnapshot] = []
        for usage in usages:
            pod_id = PodId(usage.namespace, usage.name)
            # metav1.Time carries whole seconds: the API's answer would have this time
            snapshot_time_ns = time_to_ns(usage.timestamp.replace(microsecond=0))
            window_ns = usage.window_milliseconds * 1_000_000
            snapshots.extend(
                ContainerMetricsSnapshot(
                    pod_id=pod_id,
                    container=container.name,
                    snapshot_time_ns=snapshot_time_ns,
                    window_ns=window_ns,
                    usage={"cpu": container.cpu.milli_value(), "memory": container.memory.value()},
                )
                for container in usage.containers
            )
        return snapshots


def resource_provider(
    settings: AdapterSettings, querier: PrometheusQuerier
) -> ResourceMetricsProvider | None:
    """The resource-metrics provider of the rule file's ``resourceRules`` (None without them)."""
    source = str(settings.config)
    config = load_rules(settings.config.read_text(), source=source)
    if config.resource_rules is None:
        return None
    queries = ResourceQueries.from_config(
        config.resource_rules, StaticRESTMapper.builtin(), source=source
    )
    return ResourceMetricsProvider(
        querier,
        queries,
        settings=ValueSettings(query_timeout_seconds=settings.prometheus_query_timeout_seconds),
    )


# ------------------------------------------------------------------------- the source


Job = tuple[str, Callable[[], Awaitable[None]]]


@dataclass(slots=True)
class InProcessMetricsSource:
    """The rule file and Prometheus client of the in-process source, opened once per process.

    ``factory(pods)`` builds the providers over the controller's pod lister and returns the
    metrics client with the task to run in the process's TaskGroup (the relist loop);
    ``aclose()`` releases the Prometheus connections.
    """

    settings: AdapterSettings
    querier: PrometheusQuerier
    registry: CollectorRegistry
    _client: PrometheusClient | None = None
    providers: MetricProviders | None = None

    def factory(self, pods: PodLister) -> tuple[MetricsClient, Sequence[Job]]:
        config = load_rules(self.settings.config.read_text(), source=str(self.settings.config))
        providers = build_providers(
            config,
            self.querier,
            pod_lister=ControllerPodNames(pods),
            settings=ValueSettings(
                query_timeout_seconds=self.settings.prometheus_query_timeout_seconds
            ),
            registry=self.registry,
            relist_interval_seconds=self.settings.metrics_relist_interval_seconds,
            max_age_seconds=self.settings.metrics_max_age_seconds,
            source=str(self.settings.config),
        )
        self.providers = providers
        return InProcessMetricsClient(providers, pods=pods), [
            ("metrics-relist", providers.relister.run)
        ]

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


def open_source(
    settings: AdapterSettings, *, registry: CollectorRegistry
) -> InProcessMetricsSource:
    """A source on a new Prometheus client for ``settings`` (the adapter's connection rules)."""
    client = PrometheusClient(prometheus_connection(settings), registry=registry)
    return InProcessMetricsSource(settings, client, registry, _client=client)


# ------------------------------------------------------------------------------ flags


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The adapter's rule-file and Prometheus flags (its names and defaults), read only with
    ``--metrics-source=inprocess``."""
    d = AdapterSettings(config=Path("config.yaml"))
    group = parser.add_argument_group(
        "in-process metrics (--metrics-source=inprocess; the flags of hpa adapter)"
    )
    add = group.add_argument
    add("--config", type=Path, default=None, help="prometheus-adapter rule file (required)")
    add("--prometheus-url", default=d.prometheus_url, help=f"default {d.prometheus_url}")
    add("--prometheus-auth-config", type=Path, help="kubeconfig-format Prometheus credentials")
    add("--prometheus-ca-file", type=Path)
    add("--prometheus-token-file", type=Path)
    add("--prometheus-client-tls-cert-file", type=Path)
    add("--prometheus-client-tls-key-file", type=Path)
    add("--prometheus-header", type=parse_header, action="append", default=[], metavar="NAME=VALUE")
    add(
        "--prometheus-query-timeout",
        type=parse_duration_seconds,
        default=d.prometheus_query_timeout_seconds,
        metavar="DURATION",
    )
    add(
        "--metrics-relist-interval",
        type=parse_duration_seconds,
        default=d.metrics_relist_interval_seconds,
        metavar="DURATION",
    )
    add("--metrics-max-age", type=parse_duration_seconds, default=None, metavar="DURATION")


def settings_from_args(args: argparse.Namespace) -> AdapterSettings:
    """``adapter.server.settings.Settings`` for the in-process source (``ValueError`` without
    a readable, valid ``--config``)."""
    if args.config is None:
        raise ValueError("--metrics-source=inprocess needs --config (the adapter's rule file)")
    try:
        load_rules(args.config.read_text(), source=str(args.config))  # RuleConfigError: ValueError
    except OSError as error:
        raise ValueError(f"cannot read --config {args.config}: {error}") from error
    return connection_settings_from_args(args, config=args.config)


def connection_settings_from_args(
    args: argparse.Namespace, *, config: Path | None = None
) -> AdapterSettings:
    """``adapter.server.settings.Settings`` from the flags of :func:`add_flags`, without checking
    ``--config``: the Prometheus connection (read by ``adapter.server.cli.prometheus_connection``)
    for every user of it, the in-process source and the VPA's history alike."""
    return AdapterSettings(
        config=config if config is not None else Path("config.yaml"),
        prometheus_url=args.prometheus_url,
        prometheus_auth_config=args.prometheus_auth_config,
        prometheus_ca_file=args.prometheus_ca_file,
        prometheus_token_file=args.prometheus_token_file,
        prometheus_client_tls_cert_file=args.prometheus_client_tls_cert_file,
        prometheus_client_tls_key_file=args.prometheus_client_tls_key_file,
        prometheus_headers=tuple(args.prometheus_header),
        prometheus_query_timeout_seconds=args.prometheus_query_timeout,
        metrics_relist_interval_seconds=args.metrics_relist_interval,
        metrics_max_age_seconds=args.metrics_max_age,
    )
