"""The resource metrics provider (``metrics.k8s.io``): pod and node CPU/memory from resourceRules.

Upstream counterpart: prometheus-adapter ``pkg/resourceprovider/provider.go`` (``GetPodMetrics``:
pods grouped by namespace, CPU and memory queried concurrently per namespace, a namespace whose
query fails is skipped; ``assignForPod``: a pod needs both CPU and memory results, containers are
keyed by the container label, a container with only one of them gets 0 for the other, the
timestamp is the earliest sample's; ``GetNodeMetrics``: the first sample per node, earliest of
the two timestamps; negative values read 0; CPU is DecimalSI, memory BinarySI, both
``NewMilliQuantity(int64(v*1000))``; the rule's ``window``).

Deliberate deviations (docs/adapter-values.md): a NaN/+-Inf sample is dropped instead of read as 0
(so a pod whose only CPU sample is NaN has no metrics, like a pod Prometheus has nothing for);
when every query failed the call raises ``MetricFetchError`` instead of answering an empty list;
values come from the exact decimal text; with batched evaluation (``BatchSettings``) the
container and node queries run once for every pod (grouped by namespace, pod and container) and
every node, and requests are answered from those snapshots (docs/adapter-values.md). No
staleness probe runs here: the container/node query templates name their own series, so there
is no single series to probe (Prometheus's staleness markers still end series that stopped
being scraped).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import datetime

import structlog

from adapter.prometheus.results import Sample
from adapter.providers.batch import Batcher, BatchPlan, BatchSettings, Snapshot
from adapter.providers.clock import SystemClock
from adapter.providers.errors import MetricFetchError, ProviderError
from adapter.providers.evaluation import run_instant, vector_samples
from adapter.providers.ports import Clock, PrometheusQuerier
from adapter.providers.telemetry import ProviderMetrics
from adapter.providers.values import ValueSettings, milli_from_text, timestamp_from_seconds
from adapter.rules import NODES, PODS, BadQueryError, ResourceQueries, ResourceQuery
from adapter.rules.batching import batchability, build_batch_query
from adapter.rules.errors import RuleEvaluationError
from hpa.core.quantity import Format, Quantity

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ContainerUsage:
    name: str
    cpu: Quantity
    _: KW_ONLY
    memory: Quantity


@dataclass(frozen=True)
class PodUsage:
    """``metrics.PodMetrics`` without object metadata (the server adds labels)."""

    namespace: str
    name: str
    _: KW_ONLY
    timestamp: datetime
    window_milliseconds: int
    containers: tuple[ContainerUsage, ...]


@dataclass(frozen=True)
class NodeUsage:
    """``metrics.NodeMetrics`` without object metadata."""

    name: str
    timestamp: datetime
    _: KW_ONLY
    window_milliseconds: int
    cpu: Quantity
    memory: Quantity


@dataclass(frozen=True)
class _Point:
    labels: Mapping[str, str]
    milli: int
    _: KW_ONLY
    timestamp_seconds: float


_Results = dict[str, list[_Point]]


def _cpu(milli: int) -> Quantity:
    return Quantity.from_milli(milli, Format.DECIMAL_SI)


def _memory(milli: int) -> Quantity:
    return Quantity.from_milli(milli, Format.BINARY_SI)


class ResourceMetricsProvider:
    def __init__(
        self,
        querier: PrometheusQuerier,
        queries: ResourceQueries,
        *,
        settings: ValueSettings | None = None,
        batching: BatchSettings | None = None,
        clock: Clock | None = None,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        """batching: evaluate the container and node queries once for every pod and node
        (when all four templates are batchable; None or a zero max age: per request)."""
        self._querier = querier
        self.queries = queries
        self.settings = settings if settings is not None else ValueSettings()
        self.batcher: Batcher | None = None
        templates = [
            query.template
            for rule in (queries.cpu, queries.memory)
            for query in (rule.container_query, rule.node_query)
        ]
        if (
            batching is not None
            and batching.enabled
            and all(batchability(template).batchable for template in templates)
        ):
            self.batcher = Batcher(
                querier,
                settings=batching,
                clock=clock if clock is not None else SystemClock(),
                api="resource",
                metrics=metrics,
            )

    async def get_pod_metrics(
        self, pods: Sequence[tuple[str, str]], *, timeout_seconds: float | None = None
    ) -> list[PodUsage]:
        """``GetPodMetrics`` for (namespace, name) pairs, in the order given; pods without
        complete data are left out."""
        if not pods:
            return []
        if self.batcher is not None:
            return await self._pods_from_batch(self.batcher, pods, timeout_seconds=timeout_seconds)
        by_namespace: dict[str, list[str]] = {}
        for namespace, name in pods:
            names = by_namespace.setdefault(namespace, [])
            if name not in names:
                names.append(name)
        namespaces = list(by_namespace)
        answers = await asyncio.gather(
            *(
                self._query_both(
                    namespace, by_namespace[namespace], timeout_seconds=timeout_seconds
                )
                for namespace in namespaces
            ),
            return_exceptions=True,
        )
        results: dict[str, tuple[_Results, _Results]] = {}
        failures: list[BaseException] = []
        for namespace, answer in zip(namespaces, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, ProviderError):
                    raise answer
                log.warning(
                    "pod_metrics_failed", namespace=namespace, error=answer.detail or str(answer)
                )
                failures.append(answer)
                continue
            results[namespace] = answer
        if not results:
            raise MetricFetchError(detail=f"every resource query failed: {failures[0]}") from (
                failures[0]
            )
        out: list[PodUsage] = []
        for namespace, name in dict.fromkeys(pods):
            found = results.get(namespace)
            if found is None:
                continue
            usage = self._assign_for_pod(namespace, name, found=found)
            if usage is not None:
                out.append(usage)
        return out

    async def get_node_metrics(
        self, nodes: Sequence[str], *, timeout_seconds: float | None = None
    ) -> list[NodeUsage]:
        """``GetNodeMetrics``; nodes without both CPU and memory are left out."""
        names = list(dict.fromkeys(nodes))
        if not names:
            return []
        if self.batcher is not None:
            cpu, memory = await self._batched_both(
                self.batcher, "nodes", None, names, timeout_seconds=timeout_seconds
            )
        else:
            cpu, memory = await self._query_both(None, names, timeout_seconds=timeout_seconds)
        out = []
        for name in names:
            cpu_points, memory_points = cpu.get(name), memory.get(name)
            if not cpu_points or not memory_points:
                continue
            first_cpu, first_memory = cpu_points[0], memory_points[0]
            timestamp = min(first_cpu.timestamp_seconds, first_memory.timestamp_seconds)
            out.append(
                NodeUsage(
                    name,
                    timestamp_from_seconds(timestamp),
                    window_milliseconds=self.queries.window_milliseconds,
                    cpu=_cpu(first_cpu.milli),
                    memory=_memory(first_memory.milli),
                )
            )
        return out

    # ------------------------------------------------------------------ internals

    async def _pods_from_batch(
        self,
        batcher: Batcher,
        pods: Sequence[tuple[str, str]],
        *,
        timeout_seconds: float | None,
    ) -> list[PodUsage]:
        """``get_pod_metrics`` from the snapshots of every pod's containers."""
        cpu, memory = await self._snapshots(batcher, "pods", timeout_seconds=timeout_seconds)
        out: list[PodUsage] = []
        for namespace, name in dict.fromkeys(pods):
            found = (
                _results(cpu, namespace, (name,)),
                _results(memory, namespace, (name,)),
            )
            usage = self._assign_for_pod(namespace, name, found=found)
            if usage is not None:
                out.append(usage)
        if self.batcher is not None:
            self.batcher.count_answer("snapshot")
        return out

    async def _batched_both(
        self,
        batcher: Batcher,
        kind: str,
        namespace: str | None,
        names: Sequence[str],
        *,
        timeout_seconds: float | None,
    ) -> tuple[_Results, _Results]:
        cpu, memory = await self._snapshots(batcher, kind, timeout_seconds=timeout_seconds)
        batcher.count_answer("snapshot")
        return _results(cpu, namespace, names), _results(memory, namespace, names)

    async def _snapshots(
        self, batcher: Batcher, kind: str, *, timeout_seconds: float | None
    ) -> tuple[Snapshot, Snapshot]:
        """The CPU and memory snapshots of every pod (``kind`` "pods") or node ("nodes")."""
        if timeout_seconds is None:
            timeout_seconds = self.settings.query_timeout_seconds

        def plan(query_info: ResourceQuery) -> BatchPlan:
            pods = kind == "pods"
            try:
                built = build_batch_query(
                    query_info.container_query if pods else query_info.node_query,
                    "",
                    PODS if pods else NODES,
                    namespace=None,
                    across_namespaces=pods,
                    extra_group_by=(query_info.container_label,) if pods else (),
                )
            except (BadQueryError, RuleEvaluationError) as exc:
                raise MetricFetchError(detail=f"unable to construct query: {exc}") from exc
            return BatchPlan(
                built.query,
                False,
                built.resource_label,
                built.namespace_label,
                None,
                grouped=True,
            )

        cpu, memory = await asyncio.gather(
            batcher.snapshot(
                (kind, "cpu"),
                lambda: plan(self.queries.cpu),
                family=(kind, "cpu"),
                timeout_seconds=timeout_seconds,
            ),
            batcher.snapshot(
                (kind, "memory"),
                lambda: plan(self.queries.memory),
                family=(kind, "memory"),
                timeout_seconds=timeout_seconds,
            ),
        )
        return cpu, memory

    def _assign_for_pod(
        self, namespace: str, name: str, *, found: tuple[_Results, _Results]
    ) -> PodUsage | None:
        cpu_points, memory_points = found[0].get(name), found[1].get(name)
        if not cpu_points or not memory_points:
            log.info("pod_metrics_incomplete", namespace=namespace, pod=name)
            return None
        cpu_by_container: dict[str, int] = {}
        memory_by_container: dict[str, int] = {}
        earliest = min(point.timestamp_seconds for point in (*cpu_points, *memory_points))
        for point in cpu_points:
            cpu_by_container[point.labels.get(self.queries.cpu.container_label, "")] = point.milli
        for point in memory_points:
            container = point.labels.get(self.queries.memory.container_label, "")
            memory_by_container[container] = point.milli
        containers = tuple(
            ContainerUsage(
                container,
                _cpu(cpu_by_container.get(container, 0)),
                memory=_memory(memory_by_container.get(container, 0)),
            )
            for container in dict.fromkeys([*cpu_by_container, *memory_by_container])
        )
        return PodUsage(
            namespace,
            name,
            timestamp=timestamp_from_seconds(earliest),
            window_milliseconds=self.queries.window_milliseconds,
            containers=containers,
        )

    async def _query_both(
        self, namespace: str | None, names: Sequence[str], *, timeout_seconds: float | None
    ) -> tuple[_Results, _Results]:
        if timeout_seconds is None:
            timeout_seconds = self.settings.query_timeout_seconds
        cpu, memory = await asyncio.gather(
            self._run(self.queries.cpu, namespace, names=names, timeout_seconds=timeout_seconds),
            self._run(self.queries.memory, namespace, names=names, timeout_seconds=timeout_seconds),
        )
        return cpu, memory

    async def _run(
        self,
        query_info: ResourceQuery,
        namespace: str | None,
        *,
        names: Sequence[str],
        timeout_seconds: float | None,
    ) -> _Results:
        """``runQuery``: samples keyed by the pod (or node) label."""
        try:
            if namespace is None:
                query = query_info.build_node_query(names)
                label = query_info.node_label()
            else:
                query = query_info.build_container_query(names, namespace=namespace)
                label = query_info.pod_label()
        except (BadQueryError, RuleEvaluationError) as exc:
            raise MetricFetchError(detail=f"unable to construct query: {exc}") from exc
        result = await run_instant(self._querier, query, timeout_seconds=timeout_seconds)
        out: _Results = {}
        for sample in vector_samples(result):
            point = _point(sample)
            if point is not None:
                out.setdefault(sample.labels.get(label, ""), []).append(point)
        return out


def _results(snapshot: Snapshot, namespace: str | None, names: Sequence[str]) -> _Results:
    """The points of ``names`` in a grouped snapshot, as ``_run`` returns them."""
    groups = snapshot.groups_in(namespace)
    out: _Results = {}
    for name in names:
        for sample in groups.get(name, ()):
            point = _point(sample)
            if point is not None:
                out.setdefault(name, []).append(point)
    return out


def _point(sample: Sample) -> _Point | None:
    milli = milli_from_text(sample.value_text)
    if milli is None:
        return None
    return _Point(sample.labels, max(0, milli), timestamp_seconds=sample.timestamp_seconds)
