"""The recommender's history bootstrap from Prometheus: the queries, and the history they build.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/input/history/history_provider.go`` (``PrometheusHistoryProviderConfig``,
``prometheusHistoryProvider``: ``GetClusterHistory``, ``readResourceHistory``,
``readLastLabels``, ``getContainerIDFromLabels``, ``getPodIDFromLabels``, ``getPodLabelsMap``,
``resourceAmountFromValue``) and its ``history_provider_test.go`` table
(``tests/hpa/controllers/vertical/test_history.py``).

The queries, over ``[now - history_length, now]`` every ``history_resolution`` (defaults ``8d``
and ``1h``), with ``<sel>`` = ``job="<cadvisor job>", <ctr pod label>=~".+", <ctr name
label>!="POD", <ctr name label>!=""`` (the ``job`` matcher only when a job name is set, and
``, <ctr namespace label>="<ns>"`` when the recommender is limited to one namespace):

* cpu: ``rate(<cpu metric>{<sel>}[<history resolution>])``, cores -> millicores
  (``CPUAmountFromCores``);
* memory: ``<memory metric>{<sel>}``, bytes (``MemoryAmountFromBytes``);
* last labels: ``<metric for pod labels>`` (default ``up{job="kubernetes-pods"}``): per pod
  (``<pod namespace label>``, ``<pod name label>``), the labels of its newest series with the
  ``<pod label prefix>`` stripped, and that sample's time as ``last_seen``;
* OOM kills (ours, from kube-state-metrics): ``kube_pod_container_status_last_terminated_reason
  {reason="OOMKilled"}`` and ``kube_pod_container_resource_requests{resource="memory"}`` (labels
  ``namespace``, ``pod``, ``container``, as kube-state-metrics writes them; ``, namespace="<ns>"``
  added when limited): an OOM is recorded where a container's ``OOMKilled`` series appears (its
  first point after an absence), with the memory request of the same container at that time (the
  newest point at or before it, else the first after it; 0 when kube-state-metrics has none).

Each container's samples are in time order; a sample's time is the Prometheus point's
(millisecond precision) and is its ``measure_start``. A series whose labels lack a needed label
fails the whole history, as upstream.

Deliberate deviations:

* the last-labels query is a range query over the same window (upstream sends an instant query and
  then requires a matrix, which a real Prometheus never returns for a plain selector:
  kubernetes/autoscaler#5031, "cannot read last labels: expected query to return a matrix");
* the OOM history is ours (upstream reads none from Prometheus); so is ``PodHistory.ooms``;
* points that are NaN or infinite are dropped (Go would convert them to an undefined amount);
* samples of one container with the same time keep cpu before memory (Go's sort is unstable);
* errors are :class:`~hpa.controllers.vertical.ports.HistoryError` with upstream's wrapping in one
  line (``cannot get usage history: cannot get timeseries for cpu: <cause>``), the cause worded
  by the range-query port.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from hpa.controllers.vertical.ports import HistoryError, OomRecord, PodHistory, UsageSample
from hpa.core.vpa.amount import cpu_amount_from_cores, memory_amount_from_bytes
from hpa.core.vpa.cluster import PodId
from hpa.kube.clock import Clock

__all__ = [
    "OOM_REASON_METRIC",
    "OOM_REQUESTS_METRIC",
    "HistoryQueries",
    "PrometheusHistoryConfig",
    "PrometheusHistoryProvider",
    "RangeQuerier",
    "RangeSeriesLike",
    "history_queries",
]

log = structlog.get_logger("hpa.controllers.vertical.history")

OOM_REASON_METRIC = "kube_pod_container_status_last_terminated_reason"
OOM_REQUESTS_METRIC = "kube_pod_container_resource_requests"
_KSM_NAMESPACE, _KSM_POD, _KSM_CONTAINER = "namespace", "pod", "container"
_NANOSECONDS_PER_MILLISECOND = 1_000_000


@dataclass(frozen=True, slots=True)
class PrometheusHistoryConfig:
    """``PrometheusHistoryProviderConfig`` (the connection is the range-query port's).

    history_length_seconds / history_resolution_seconds: the window and the step (upstream's
      ``--history-length`` 8d, ``--history-resolution`` 1h, Prometheus durations).
    history_resolution: the resolution as given, used as the ``rate()`` range.
    query_timeout_seconds: each query's deadline (``--prometheus-query-timeout``).
    pod_label_prefix, pod_labels_metric_name, pod_namespace_label, pod_name_label,
    ctr_namespace_label, ctr_pod_name_label, ctr_name_label, cadvisor_metrics_job_name,
    cpu_metric_name, memory_metric_name: upstream's flags and defaults.
    namespace: ``--vpa-object-namespace`` ("" for all).
    oom_history: also read OOM kills from kube-state-metrics (ours; default on).
    """

    history_length_seconds: float = 8 * 24 * 3600.0
    history_resolution: str = "1h"
    history_resolution_seconds: float = 3600.0
    query_timeout_seconds: float = 300.0
    pod_label_prefix: str = "pod_label_"
    pod_labels_metric_name: str = 'up{job="kubernetes-pods"}'
    pod_namespace_label: str = "kubernetes_namespace"
    pod_name_label: str = "kubernetes_pod_name"
    ctr_namespace_label: str = "namespace"
    ctr_pod_name_label: str = "pod_name"
    ctr_name_label: str = "name"
    cadvisor_metrics_job_name: str = "kubernetes-cadvisor"
    namespace: str = ""
    cpu_metric_name: str = "container_cpu_usage_seconds_total"
    memory_metric_name: str = "container_memory_working_set_bytes"
    oom_history: bool = True


@dataclass(frozen=True, slots=True)
class HistoryQueries:
    """The PromQL of one bootstrap (see the module)."""

    cpu: str
    memory: str
    labels: str
    oom: str
    oom_memory_requests: str


def history_queries(config: PrometheusHistoryConfig) -> HistoryQueries:
    """The queries ``GetClusterHistory`` sends, exactly as upstream builds them (and ours)."""
    selector = ""
    if config.cadvisor_metrics_job_name:
        selector = f'job="{config.cadvisor_metrics_job_name}", '
    selector += (
        f'{config.ctr_pod_name_label}=~".+", {config.ctr_name_label}!="POD", '
        f'{config.ctr_name_label}!=""'
    )
    ksm_namespace = ""
    if config.namespace:
        selector = f'{selector}, {config.ctr_namespace_label}="{config.namespace}"'
        ksm_namespace = f', {_KSM_NAMESPACE}="{config.namespace}"'
    return HistoryQueries(
        cpu=f"rate({config.cpu_metric_name}{{{selector}}}[{config.history_resolution}])",
        memory=f"{config.memory_metric_name}{{{selector}}}",
        labels=config.pod_labels_metric_name,
        oom=f'{OOM_REASON_METRIC}{{reason="OOMKilled"{ksm_namespace}}}',
        oom_memory_requests=f'{OOM_REQUESTS_METRIC}{{resource="memory"{ksm_namespace}}}',
    )


class RangeSeriesLike(Protocol):
    """One series of a range query's matrix: its labels and ``(unix seconds, value text)``
    points in time order (``adapter.prometheus.RangeSeries`` is one)."""

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def points(self) -> Sequence[tuple[float, str]]: ...


class RangeQuerier(Protocol):
    """``QueryRange`` of the Prometheus HTTP API; raises :class:`HistoryError` with a one-line
    cause (unreachable, timed out, an error answer)."""

    async def query_range(
        self,
        query: str,
        *,
        start_seconds: float,
        end_seconds: float,
        step_seconds: float,
        timeout_seconds: float,
    ) -> Sequence[RangeSeriesLike]: ...


@dataclass(slots=True)
class _History:
    last_labels: dict[str, str] = field(default_factory=dict)
    last_seen_ns: int = 0
    samples: dict[str, list[UsageSample]] = field(default_factory=dict)
    ooms: list[OomRecord] = field(default_factory=list)


def _metric_text(labels: Mapping[str, str]) -> str:
    """``model.Metric.String()``: ``name{a="b", c="d"}``, labels sorted."""
    name = labels.get("__name__", "")
    pairs = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return f"{name}{{{pairs}}}"


def _point_ns(timestamp_seconds: float) -> int:
    """``model.Time`` (milliseconds) of a point, as nanoseconds."""
    return round(timestamp_seconds * 1000) * _NANOSECONDS_PER_MILLISECOND


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class PrometheusHistoryProvider:
    """``prometheusHistoryProvider``: :meth:`get_cluster_history` (the ``HistoryProvider`` port)."""

    def __init__(
        self, querier: RangeQuerier, config: PrometheusHistoryConfig, *, clock: Clock
    ) -> None:
        self._querier = querier
        self.config = config
        self.queries = history_queries(config)
        self._clock = clock

    async def get_cluster_history(self) -> Mapping[PodId, PodHistory]:
        """``GetClusterHistory``; raises :class:`HistoryError` (one line)."""
        end_seconds = self._clock.now().timestamp()
        start_seconds = end_seconds - self.config.history_length_seconds
        res: dict[PodId, _History] = {}

        async def matrix(query: str, what: str) -> Sequence[RangeSeriesLike]:
            log.debug("history_query", what=what, query=query)
            try:
                return await self._querier.query_range(
                    query,
                    start_seconds=start_seconds,
                    end_seconds=end_seconds,
                    step_seconds=self.config.history_resolution_seconds,
                    timeout_seconds=self.config.query_timeout_seconds,
                )
            except HistoryError as error:
                raise HistoryError(f"cannot get timeseries for {what}: {error}") from error

        try:
            self._read_resource_history(res, await matrix(self.queries.cpu, "cpu"), "cpu")
            self._read_resource_history(res, await matrix(self.queries.memory, "memory"), "memory")
        except HistoryError as error:
            raise HistoryError(f"cannot get usage history: {error}") from error
        for history in res.values():
            for samples in history.samples.values():
                samples.sort(key=lambda sample: sample.measure_start_ns)
        try:
            self._read_last_labels(res, await matrix(self.queries.labels, "labels"))
        except HistoryError as error:
            raise HistoryError(f"cannot read last labels: {error}") from error
        if self.config.oom_history:
            try:
                ooms = await matrix(self.queries.oom, "OOM kills")
                requests = await matrix(self.queries.oom_memory_requests, "memory requests")
            except HistoryError as error:
                raise HistoryError(f"cannot read OOM history: {error}") from error
            self._read_ooms(res, ooms, requests)
        log.info(
            "history_read",
            pods=len(res),
            containers=sum(len(h.samples) for h in res.values()),
            samples=sum(len(s) for h in res.values() for s in h.samples.values()),
            ooms=sum(len(h.ooms) for h in res.values()),
        )
        return {
            pod_id: PodHistory(
                last_labels=history.last_labels,
                last_seen_ns=history.last_seen_ns,
                samples={name: tuple(samples) for name, samples in history.samples.items()},
                ooms=tuple(history.ooms),
            )
            for pod_id, history in res.items()
        }

    # ------------------------------------------------------------------ readers

    def _container_id(self, labels: Mapping[str, str]) -> tuple[PodId, str]:
        """``getContainerIDFromLabels``."""
        config = self.config
        for label in (config.ctr_namespace_label, config.ctr_pod_name_label, config.ctr_name_label):
            if label not in labels:
                raise HistoryError(f"cannot get container ID from labels: {_metric_text(labels)}")
        return (
            PodId(labels[config.ctr_namespace_label], labels[config.ctr_pod_name_label]),
            labels[config.ctr_name_label],
        )

    def _read_resource_history(
        self, res: dict[PodId, _History], series: Sequence[RangeSeriesLike], resource: str
    ) -> None:
        """``readResourceHistory``."""
        convert = cpu_amount_from_cores if resource == "cpu" else memory_amount_from_bytes
        dropped = 0
        for ts in series:
            pod_id, container = self._container_id(ts.labels)
            samples = res.setdefault(pod_id, _History()).samples.setdefault(container, [])
            for timestamp_seconds, text in ts.points:
                value = _finite(text)
                if value is None:
                    dropped += 1
                    continue
                samples.append(
                    UsageSample(
                        measure_start_ns=_point_ns(timestamp_seconds),
                        resource=resource,
                        usage=convert(value),
                    )
                )
        if dropped:
            log.info("history_points_dropped", resource=resource, points=dropped, reason="NaN")

    def _read_last_labels(
        self, res: dict[PodId, _History], series: Sequence[RangeSeriesLike]
    ) -> None:
        """``readLastLabels``: the newest series of a pod gives its labels and ``last_seen``."""
        config = self.config
        for ts in series:
            labels = ts.labels
            for label in (config.pod_namespace_label, config.pod_name_label):
                if label not in labels:
                    raise HistoryError(
                        f"cannot get container ID from labels {_metric_text(labels)}: "
                        f"no {label} label"
                    )
            if not ts.points:
                continue
            pod_id = PodId(labels[config.pod_namespace_label], labels[config.pod_name_label])
            history = res.setdefault(pod_id, _History())
            last_ns = _point_ns(ts.points[-1][0])
            if last_ns > history.last_seen_ns:
                history.last_seen_ns = last_ns
                history.last_labels = self._pod_labels(labels)

    def _pod_labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        """``getPodLabelsMap``: the labels with the prefix, without it (an empty prefix: none)."""
        prefix = self.config.pod_label_prefix
        return {
            key.removeprefix(prefix): value
            for key, value in labels.items()
            if prefix and key.startswith(prefix)
        }

    def _read_ooms(
        self,
        res: dict[PodId, _History],
        ooms: Sequence[RangeSeriesLike],
        requests: Sequence[RangeSeriesLike],
    ) -> None:
        """OOM kills: where a container's ``OOMKilled`` series appears, with its memory request."""
        step_ns = round(self.config.history_resolution_seconds * 1e9)
        request_points: dict[tuple[PodId, str], list[tuple[int, float]]] = {}
        for ts in requests:
            key = self._ksm_container(ts.labels)
            if key is None:
                continue
            points = request_points.setdefault(key, [])
            for timestamp_seconds, text in ts.points:
                value = _finite(text)
                if value is not None:
                    points.append((_point_ns(timestamp_seconds), value))
        for points in request_points.values():
            points.sort()
        seen: set[tuple[PodId, str, int]] = set()
        for ts in ooms:
            key = self._ksm_container(ts.labels)
            if key is None:
                continue
            previous_ns: int | None = None
            for timestamp_seconds, text in ts.points:
                value = _finite(text)
                if value is None or value <= 0:
                    previous_ns = None
                    continue
                at_ns = _point_ns(timestamp_seconds)
                appeared = previous_ns is None or at_ns - previous_ns > step_ns
                previous_ns = at_ns
                if not appeared or (key[0], key[1], at_ns) in seen:
                    continue
                seen.add((key[0], key[1], at_ns))
                request = _request_at(request_points.get(key, []), at_ns)
                res.setdefault(key[0], _History()).ooms.append(
                    OomRecord(
                        container=key[1],
                        timestamp_ns=at_ns,
                        memory_request_bytes=memory_amount_from_bytes(request),
                    )
                )
        for history in res.values():
            history.ooms.sort(key=lambda oom: (oom.timestamp_ns, oom.container))

    @staticmethod
    def _ksm_container(labels: Mapping[str, str]) -> tuple[PodId, str] | None:
        try:
            return PodId(labels[_KSM_NAMESPACE], labels[_KSM_POD]), labels[_KSM_CONTAINER]
        except KeyError:
            log.info("history_oom_series_skipped", labels=dict(labels), reason="labels")
            return None


def _request_at(points: Sequence[tuple[int, float]], at_ns: int) -> float:
    """The newest request at or before ``at_ns``, else the first after it, else 0."""
    before = [value for time_ns, value in points if time_ns <= at_ns]
    if before:
        return before[-1]
    return points[0][1] if points else 0.0
