"""The VPA recommender's inputs wired to I/O: the Prometheus history bootstrap and the live sources.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/config/config.go`` (the history flags and their defaults),
``pkg/recommender/routines/recommender_controller.go`` (``initHistoryProvider``,
``newPrometheusHistoryProviderConfig``: ``--storage=prometheus`` selects the Prometheus history,
anything else the checkpoints) and ``history_provider.go`` (``NewPrometheusHistoryProvider``:
durations parsed with Prometheus's ``model.ParseDuration``, so ``8d`` works).

Prometheus is reached through the metrics layer's client (``adapter.prometheus``) configured by
the adapter's own flags (``--prometheus-url``, ``--prometheus-auth-config``,
``--prometheus-ca-file``, ``--prometheus-token-file``, ``--prometheus-client-tls-*``,
``--prometheus-header`` for tenant headers, ``--prometheus-query-timeout``; registered by
:func:`hpa.app.inprocess_metrics.add_flags`), so the URL, TLS, credentials and headers have one
home for the adapter, the controller and the recommender. :func:`add_flags` registers only the
history flags, and upstream's ``--prometheus-address`` and ``--prometheus-bearer-token-file`` as
aliases of ``--prometheus-url`` and ``--prometheus-token-file``.

:func:`open_containers_source` builds the live ``ContainerMetricsSource``: ``metrics.k8s.io``
through the API server (``--metrics-source=api``, any server of the API) or the adapter's
resource-metrics provider in-process (``--metrics-source=inprocess``).

Deliberate deviations: ``--prometheus-query-timeout`` keeps the adapter's default (30s; upstream's
history default is 5m); upstream's ``--prometheus-insecure``, ``--username``/``--password`` (and
``PROMETHEUS_USERNAME``/``PROMETHEUS_PASSWORD``) and ``--prometheus-bearer-token`` are not flags:
``--prometheus-auth-config`` (kubeconfig format: ``insecure-skip-tls-verify``, basic auth,
``tokenFile``) says the same; ``--history-oom`` (default true) is ours.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusError, PrometheusTimeoutError
from adapter.prometheus.client import BaseURL
from adapter.providers.ports import PrometheusQuerier
from adapter.rules import parse_duration_milliseconds
from adapter.server.cli import prometheus_connection
from adapter.server.settings import Settings as AdapterSettings
from hpa.app import inprocess_metrics
from hpa.controllers.settings import switch_flag as switch
from hpa.controllers.vertical.history import (
    PrometheusHistoryConfig,
    PrometheusHistoryProvider,
    RangeSeriesLike,
)
from hpa.controllers.vertical.ports import ContainerMetricsSource, HistoryError
from hpa.core.vpa.cluster import PodId
from hpa.kube.clock import Clock
from hpa.metrics.containers import MetricsApiContainerSource
from hpa.metrics.transport import JsonGetter

__all__ = [
    "STORAGES",
    "ContainersSourceHandle",
    "HistoryHandle",
    "HistorySettings",
    "PrometheusRangeQuerier",
    "add_flags",
    "open_containers_source",
    "open_history_provider",
    "settings_from_args",
]

log = structlog.get_logger("hpa.app.history")

STORAGES = ("checkpoint", "prometheus")
"""``--storage``: where the model starts from (upstream's values; "" is ``checkpoint``)."""


@dataclass(frozen=True, slots=True)
class HistorySettings:
    """The Prometheus history bootstrap (``--storage=prometheus``).

    connection: the adapter's Prometheus settings (URL, TLS, credentials, headers, timeout);
      only its ``prometheus_*`` fields are read.
    config: the queries and window (:class:`PrometheusHistoryConfig`).
    history_length / history_resolution: the flags' text (for logs).
    """

    connection: AdapterSettings
    config: PrometheusHistoryConfig
    history_length: str = "8d"
    history_resolution: str = "1h"


def _prometheus_duration(text: str) -> str:
    """A ``model.ParseDuration`` flag value, kept as text (``ArgumentTypeError`` otherwise)."""
    try:
        milliseconds = parse_duration_milliseconds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid Prometheus duration") from error
    if milliseconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration")
    return text


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The history flags (upstream's names and defaults). The Prometheus connection flags are
    the adapter's, registered by :func:`hpa.app.inprocess_metrics.add_flags` on the same parser."""
    d = PrometheusHistoryConfig()
    group = parser.add_argument_group(
        "history (--storage=prometheus; the connection is --prometheus-url and the other "
        "--prometheus-* flags)"
    )
    add = group.add_argument
    add(
        "--storage",
        choices=("", *STORAGES),
        default="checkpoint",
        help="where the model starts from: checkpoint (default) or prometheus",
    )
    add(
        "--history-length",
        type=_prometheus_duration,
        default="8d",
        metavar="DURATION",
        help="how far back Prometheus is read (default 8d)",
    )
    add(
        "--history-resolution",
        type=_prometheus_duration,
        default="1h",
        metavar="DURATION",
        help="step of the history queries and range of rate() (default 1h)",
    )
    add(
        "--prometheus-cadvisor-job-name",
        default=d.cadvisor_metrics_job_name,
        help=f"job of the cAdvisor series, empty for any (default {d.cadvisor_metrics_job_name})",
    )
    add(
        "--history-cpu-metric",
        default=d.cpu_metric_name,
        help=f"CPU counter in seconds (default {d.cpu_metric_name})",
    )
    add(
        "--history-memory-metric",
        default=d.memory_metric_name,
        help=f"memory gauge in bytes (default {d.memory_metric_name})",
    )
    add(
        "--pod-label-prefix",
        default=d.pod_label_prefix,
        help=f"prefix of pod labels on the labels metric (default {d.pod_label_prefix})",
    )
    add(
        "--metric-for-pod-labels",
        "--pod-labels-metric-name",
        dest="metric_for_pod_labels",
        default=d.pod_labels_metric_name,
        help=f"series carrying pod labels (default {d.pod_labels_metric_name})",
    )
    add(
        "--pod-namespace-label",
        default=d.pod_namespace_label,
        help=f"namespace label of the labels metric (default {d.pod_namespace_label})",
    )
    add(
        "--pod-name-label",
        default=d.pod_name_label,
        help=f"pod name label of the labels metric (default {d.pod_name_label})",
    )
    add(
        "--container-namespace-label",
        default=d.ctr_namespace_label,
        help=f"namespace label of the container series (default {d.ctr_namespace_label})",
    )
    add(
        "--container-pod-name-label",
        default=d.ctr_pod_name_label,
        help=f"pod name label of the container series (default {d.ctr_pod_name_label})",
    )
    add(
        "--container-name-label",
        default=d.ctr_name_label,
        help=f"container name label of the container series (default {d.ctr_name_label})",
    )
    add(
        "--history-oom",
        type=switch,
        default=d.oom_history,
        metavar="BOOL",
        help="read OOM kills from kube-state-metrics (default true)",
    )
    add(
        "--prometheus-address",
        dest="prometheus_url",
        default=argparse.SUPPRESS,
        help="alias of --prometheus-url (upstream's name)",
    )
    add(
        "--prometheus-bearer-token-file",
        dest="prometheus_token_file",
        type=Path,
        default=argparse.SUPPRESS,
        help="alias of --prometheus-token-file (upstream's name)",
    )


def settings_from_args(args: argparse.Namespace, *, namespace: str = "") -> HistorySettings | None:
    """The history settings, or None when the model starts from checkpoints. ``namespace`` is
    ``--vpa-object-namespace`` (the recommender's flag). ``ValueError`` on a bad connection."""
    if args.storage != "prometheus":
        return None
    connection = inprocess_metrics.connection_settings_from_args(args, config=args.config)
    config = PrometheusHistoryConfig(
        history_length_seconds=parse_duration_milliseconds(args.history_length) / 1000,
        history_resolution=args.history_resolution,
        history_resolution_seconds=parse_duration_milliseconds(args.history_resolution) / 1000,
        query_timeout_seconds=args.prometheus_query_timeout,
        pod_label_prefix=args.pod_label_prefix,
        pod_labels_metric_name=args.metric_for_pod_labels,
        pod_namespace_label=args.pod_namespace_label,
        pod_name_label=args.pod_name_label,
        ctr_namespace_label=args.container_namespace_label,
        ctr_pod_name_label=args.container_pod_name_label,
        ctr_name_label=args.container_name_label,
        cadvisor_metrics_job_name=args.prometheus_cadvisor_job_name,
        namespace=namespace,
        cpu_metric_name=args.history_cpu_metric,
        memory_metric_name=args.history_memory_metric,
        oom_history=args.history_oom,
    )
    return HistorySettings(
        connection,
        config,
        history_length=args.history_length,
        history_resolution=args.history_resolution,
    )


# ------------------------------------------------------------------ the range-query port


class PrometheusRangeQuerier:
    """The history provider's ``RangeQuerier`` over the metrics layer's Prometheus client: its
    errors become one-line :class:`HistoryError` causes."""

    def __init__(self, querier: PrometheusQuerier, *, display_url: str) -> None:
        self._querier = querier
        self._display_url = display_url

    async def query_range(
        self,
        query: str,
        *,
        start_seconds: float,
        end_seconds: float,
        step_seconds: float,
        timeout_seconds: float,
    ) -> Sequence[RangeSeriesLike]:
        try:
            return await self._querier.query_range(
                query,
                start_seconds=start_seconds,
                end_seconds=end_seconds,
                step_seconds=step_seconds,
                timeout_seconds=timeout_seconds,
            )
        except PrometheusTimeoutError as error:
            raise HistoryError(
                f"Prometheus at {self._display_url} did not answer within "
                f"{error.timeout_seconds:g}s ({error.source} timeout)"
            ) from error
        except PrometheusError as error:
            raise HistoryError(_one_line(f"Prometheus at {self._display_url}: {error}")) from error


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(slots=True)
class HistoryHandle:
    """The opened history provider; ``aclose()`` releases the Prometheus client it opened."""

    provider: PrometheusHistoryProvider
    settings: HistorySettings
    _client: PrometheusClient | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


async def open_history_provider(
    settings: HistorySettings,
    *,
    clock: Clock,
    registry: CollectorRegistry,
    querier: PrometheusQuerier | None = None,
) -> HistoryHandle:
    """The ``HistoryProvider`` of ``--storage=prometheus``. ``querier``: a Prometheus client to
    share (the in-process source's); otherwise one is opened on ``registry`` and closed by
    ``HistoryHandle.aclose``."""
    client: PrometheusClient | None = None
    if querier is None:
        client = PrometheusClient(prometheus_connection(settings.connection), registry=registry)
        querier = client
    range_querier = PrometheusRangeQuerier(
        querier, display_url=_display_url(settings.connection.prometheus_url)
    )
    provider = PrometheusHistoryProvider(range_querier, settings.config, clock=clock)
    log.info(
        "history_provider_opened",
        prometheus=_display_url(settings.connection.prometheus_url),
        history_length=settings.history_length,
        history_resolution=settings.history_resolution,
        cpu_query=provider.queries.cpu,
        memory_query=provider.queries.memory,
        labels_query=provider.queries.labels,
        oom_query=provider.queries.oom if settings.config.oom_history else "",
    )
    return HistoryHandle(provider, settings, client)


def _display_url(url: str) -> str:
    """The URL as the Prometheus client's messages show it (without credentials)."""
    try:
        return BaseURL.parse(url).display
    except ValueError:
        return url


# ------------------------------------------------------------------ the live source


@dataclass(slots=True)
class ContainersSourceHandle:
    """The opened live source; ``aclose()`` releases the Prometheus client it opened."""

    source: ContainerMetricsSource
    _client: PrometheusClient | None = None

    @property
    def querier(self) -> PrometheusQuerier | None:
        """The Prometheus client the in-process source opened (the history provider shares it:
        a second client on the same registry would register its metrics twice)."""
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


async def open_containers_source(
    metrics_source: str,
    *,
    kube: JsonGetter,
    pods: Callable[[], Iterable[PodId]],
    namespace: str = "",
    ignored_namespaces: Collection[str] = (),
    inprocess: AdapterSettings | None = None,
    registry: CollectorRegistry | None = None,
    querier: PrometheusQuerier | None = None,
) -> ContainersSourceHandle:
    """The live ``ContainerMetricsSource`` of ``--metrics-source`` (``api`` or ``inprocess``).

    ``api``: ``metrics.k8s.io`` through ``kube`` (``hpa.kube.client.KubeClient``).
    ``inprocess``: the resource rules of ``inprocess`` (the adapter's settings,
    :func:`hpa.app.inprocess_metrics.settings_from_args`) over ``querier``, or over a new
    Prometheus client on ``registry``; ``pods`` lists the pods the recommender knows."""
    if metrics_source == "api":
        return ContainersSourceHandle(
            MetricsApiContainerSource(
                kube, namespace=namespace, ignored_namespaces=ignored_namespaces
            )
        )
    if metrics_source != "inprocess":
        raise ValueError(f"--metrics-source must be one of api, inprocess, not {metrics_source!r}")
    if inprocess is None:
        raise ValueError("--metrics-source=inprocess needs the adapter's settings (--config)")
    client: PrometheusClient | None = None
    if querier is None:
        client = PrometheusClient(
            prometheus_connection(inprocess),
            registry=registry if registry is not None else CollectorRegistry(),
        )
        querier = client
    source = inprocess_metrics.InProcessContainerSource(
        inprocess_metrics.resource_provider(inprocess, querier),
        pods=pods,
        namespace=namespace,
        ignored_namespaces=ignored_namespaces,
    )
    return ContainersSourceHandle(source, client)
