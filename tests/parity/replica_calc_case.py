"""Python twin of the ``replicaCalcTestCase`` harness of upstream's ``replica_calculator_test.go``.

Upstream builds fake pods (``prepareTestClientSet``) and fake metrics APIs
(``prepareTestMetricsClient``, ``prepareTestCMClient``, ``prepareTestEMClient``), runs them
through the real REST metrics client (``metrics/client.go``) and then the calculator
(``runTest``). Here :class:`ReplicaCalcTestCase` builds our :class:`~hpa.core.replicas.PodInfo`
list the same way, shapes the fake samples exactly as ``metrics/client.go`` does (a pod's value is
the sum over its containers, a pod lacking the resource on any container is absent; with a
container name only that container counts and a pod without it is absent; an empty list is the
client's ``no metrics returned from ... metrics API`` error), wraps fetch errors with the
calculator's prefix, calls our calculator and checks the same outputs ``runTest`` checks.

Defaults are upstream's: every pod is Running, Ready=True with a zero ``lastTransitionTime``, a zero
(but set) ``startTime`` and no deletion timestamp; samples carry the case's timestamp (the zero
time unless set) and a one-minute window; two containers per pod (``container1``,
``container2``), both requesting ``resource.requests[i]``. ``time.Now()`` is the fixed :data:`NOW`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_CEILING, Decimal
from enum import Enum

import pytest

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import (
    GO_ZERO_TIME,
    RESOURCE_CPU,
    ContainerInfo,
    PodCondition,
    PodInfo,
    PodMetric,
    PodPhase,
    ReplicaCalculation,
    ReplicaCalculationError,
    Tolerances,
    get_external_metric_replicas,
    get_external_per_pod_metric_replicas,
    get_metric_replicas,
    get_object_metric_replicas,
    get_object_per_pod_metric_replicas,
    get_resource_replicas,
)

TEST_NAMESPACE = "test-namespace"
POD_NAME_PREFIX = "test-pod"
NUM_CONTAINERS_PER_POD = 2

DEFAULT_TESTING_TOLERANCE = 0.1
"""``defaultTestingTolerance``."""
DEFAULT_TESTING_CPU_INITIALIZATION_PERIOD_SECONDS = 120.0
"""``defaultTestingCPUInitializationPeriod`` (2 min)."""
DEFAULT_TESTING_DELAY_OF_INITIAL_READINESS_STATUS_SECONDS = 10.0
"""``defaultTestingDelayOfInitialReadinessStatus`` (10 s)."""

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
"""The ``time.Now()`` of a test run: fixtures and the calculator see the same instant."""

METRIC_WINDOW_SECONDS = 60.0
"""``Window: time.Minute`` of the fake resource metrics, and the custom-metrics default window."""

Level = list[int]


def hot_cpu_creation_time() -> datetime:
    """``hotCPUCreationTime``: a pod that just started (inside the CPU initialization period)."""
    return NOW


def cool_cpu_creation_time() -> datetime:
    """``coolCPUCreationTime``: a pod that started three minutes ago."""
    return NOW - timedelta(minutes=3)


def make_pod_metric_levels(*container_metric: int) -> list[Level]:
    """``makePodMetricLevels``: every container of pod ``i`` reports ``container_metric[i]``."""
    return [[metric] * NUM_CONTAINERS_PER_POD for metric in container_metric]


def must_parse_milli(quantity: str) -> int:
    """``resource.MustParse(q).MilliValue()`` for the decimal and ``m`` forms the tests use."""
    if quantity.endswith("m"):
        return int(quantity[:-1])
    return int((Decimal(quantity) * 1000).to_integral_value(rounding=ROUND_CEILING))


def cpu_requests(count: int, quantity: str) -> list[int]:
    """``cpuRequests``: ``count`` identical requests."""
    return [must_parse_milli(quantity)] * count


class MetricType(Enum):
    """``metricType``; the zero value (unset in a Go literal) is ``objectMetric``."""

    OBJECT = 0
    OBJECT_PER_POD = 1
    EXTERNAL = 2
    EXTERNAL_PER_POD = 3
    POD = 4


@dataclass
class ResourceInfo:
    """``resourceInfo``: requests in milli-units, ``levels[pod][container]`` in milli-units."""

    name: str = RESOURCE_CPU
    requests: list[int] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)
    pod_names: list[str] = field(default_factory=list)
    target_utilization: int = 0
    expected_utilization: int = 0
    expected_value: int = 0


@dataclass
class MetricInfo:
    """``metricInfo``: ``selector`` only records whether the Go case set one."""

    name: str = "qps"
    levels: list[int] = field(default_factory=list)
    single_object: bool = False
    selector: bool = False
    metric_type: MetricType = MetricType.OBJECT
    target_usage: int = 0
    per_pod_target_usage: int = 0
    expected_usage: int = 0


class FetchError(Exception):
    """An error the fake metrics APIs or ``metrics/client.go`` would return."""


@dataclass
class ReplicaCalcTestCase:
    """``replicaCalcTestCase``."""

    current_replicas: int = 0
    expected_replicas: int = 0
    expected_error: str | None = None
    timestamp: datetime = GO_ZERO_TIME
    tolerances: Tolerances | None = None
    resource: ResourceInfo | None = None
    metric: MetricInfo | None = None
    container: str = ""
    pod_readiness: Sequence[ConditionStatus] | None = None
    pod_start_time: Sequence[datetime] | None = None
    pod_phase: Sequence[PodPhase] | None = None
    pod_deletion_timestamp: Sequence[bool] | None = None

    # ------------------------------------------------------------ fakes

    def pods(self) -> list[PodInfo]:
        """``prepareTestClientSet`` / ``buildFakePod``."""
        pods_count = self.current_replicas
        # Failed pods are not included in current_replicas
        if self.pod_phase is not None and len(self.pod_phase) > pods_count:
            pods_count = len(self.pod_phase)
        pods = []
        for i in range(pods_count):
            readiness = ConditionStatus.TRUE
            if self.pod_readiness is not None and i < len(self.pod_readiness):
                readiness = self.pod_readiness[i]
            start_time = GO_ZERO_TIME if self.pod_start_time is None else self.pod_start_time[i]
            phase = PodPhase.RUNNING if self.pod_phase is None else self.pod_phase[i]
            deleted = self.pod_deletion_timestamp is not None and self.pod_deletion_timestamp[i]
            requests: dict[str, int] = {}
            if self.resource is not None and i < len(self.resource.requests):
                requests = {self.resource.name: self.resource.requests[i]}
            pods.append(
                PodInfo(
                    name=f"{POD_NAME_PREFIX}-{i}",
                    phase=phase,
                    ready_condition=PodCondition(
                        status=readiness, last_transition_time=GO_ZERO_TIME
                    ),
                    start_time=start_time,
                    deletion_timestamp=NOW if deleted else None,
                    containers=(
                        ContainerInfo(name="container1", requests_milli=requests),
                        ContainerInfo(name="container2", requests_milli=requests),
                    ),
                )
            )
        return pods

    def resource_metrics(self) -> tuple[dict[str, PodMetric], datetime]:
        """``prepareTestMetricsClient`` shaped by ``resourceMetricsClient.GetResourceMetric``."""
        assert self.resource is not None
        items: list[tuple[str, list[tuple[str, dict[str, int]]]]] = []
        for i, res_value in enumerate(self.resource.levels):
            pod_name = f"{POD_NAME_PREFIX}-{i}"
            if len(self.resource.pod_names) > i:
                pod_name = self.resource.pod_names[i]
            # make([]ContainerMetrics, 2): unset entries have no name and no usage
            containers: list[tuple[str, dict[str, int]]] = [("", {})] * NUM_CONTAINERS_PER_POD
            for j, milli in enumerate(res_value):
                containers[j] = (f"container{j + 1}", {self.resource.name: milli})
            items.append((pod_name, containers))
        if not items:
            raise FetchError("no metrics returned from resource metrics API")
        metrics: dict[str, PodMetric] = {}
        for pod_name, containers in items:
            value = self._pod_value(containers)
            if value is not None:
                metrics[pod_name] = PodMetric(
                    value_milli=value,
                    timestamp=self.timestamp,
                    window_seconds=METRIC_WINDOW_SECONDS,
                )
        return metrics, self.timestamp

    def _pod_value(self, containers: list[tuple[str, dict[str, int]]]) -> int | None:
        assert self.resource is not None
        name = self.resource.name
        if self.container:
            # getContainerMetrics: the named container's value; absent container => missing pod
            for container_name, usage in containers:
                if container_name == self.container:
                    return usage.get(name)
            return None
        # getPodMetrics: the sum over containers; any container without the resource => missing
        if not containers or any(name not in usage for _, usage in containers):
            return None
        return sum(usage[name] for _, usage in containers)

    def custom_pod_metrics(self) -> tuple[dict[str, PodMetric], datetime]:
        """``prepareTestCMClient`` (all pods) shaped by ``customMetricsClient.GetRawMetric``."""
        assert self.metric is not None
        if not self.metric.levels:
            raise FetchError("no metrics returned from custom metrics API")
        metrics = {
            f"{POD_NAME_PREFIX}-{i}": PodMetric(
                value_milli=level, timestamp=self.timestamp, window_seconds=METRIC_WINDOW_SECONDS
            )
            for i, level in enumerate(self.metric.levels)
        }
        return metrics, self.timestamp

    def external_values(self) -> tuple[list[int], datetime]:
        """``prepareTestEMClient`` shaped by ``externalMetricsClient.GetExternalMetric``."""
        assert self.metric is not None
        if not self.metric.levels:
            raise FetchError("no metrics returned from external metrics API")
        return list(self.metric.levels), self.timestamp

    # ------------------------------------------------------------ runTest

    def calculate(self) -> ReplicaCalculation:
        """Fetch from the fakes and call the calculator the way ``runTest`` does."""
        tolerances = self.tolerances or Tolerances(
            scale_down=DEFAULT_TESTING_TOLERANCE, scale_up=DEFAULT_TESTING_TOLERANCE
        )
        pods = self.pods()
        if self.resource is not None:
            try:
                metrics, timestamp = self.resource_metrics()
            except FetchError as err:
                message = f"unable to get metrics for resource {self.resource.name}: {err}"
                raise ReplicaCalculationError(message) from err
            return get_resource_replicas(
                self.current_replicas,
                self.resource.target_utilization,
                resource=self.resource.name,
                tolerances=tolerances,
                pods=pods,
                metrics=metrics,
                timestamp=timestamp,
                now=NOW,
                container=self.container,
                cpu_initialization_period_seconds=DEFAULT_TESTING_CPU_INITIALIZATION_PERIOD_SECONDS,
                initial_readiness_delay_seconds=DEFAULT_TESTING_DELAY_OF_INITIAL_READINESS_STATUS_SECONDS,
            )
        metric = self.metric
        assert metric is not None, "a case sets either resource or metric"
        if metric.metric_type is MetricType.OBJECT:
            assert metric.single_object, "Metric specified as objectMetric but no singleObject"
            return get_object_metric_replicas(
                self.current_replicas,
                metric.target_usage,
                usage=metric.levels[0],
                tolerances=tolerances,
                pods=pods,
            )
        if metric.metric_type is MetricType.OBJECT_PER_POD:
            assert metric.single_object, "Metric specified as objectMetric but no singleObject"
            return get_object_per_pod_metric_replicas(
                self.current_replicas,
                metric.per_pod_target_usage,
                usage=metric.levels[0],
                timestamp=self.timestamp,
                tolerances=tolerances,
            )
        if metric.metric_type is MetricType.EXTERNAL:
            assert metric.selector, "Metric specified as externalMetric but no selector"
            assert metric.target_usage > 0
            values, _ = self._external_or_error()
            return get_external_metric_replicas(
                self.current_replicas,
                metric.target_usage,
                values=values,
                tolerances=tolerances,
                pods=pods,
            )
        if metric.metric_type is MetricType.EXTERNAL_PER_POD:
            assert metric.selector, "Metric specified as externalPerPodMetric but no selector"
            assert metric.per_pod_target_usage > 0
            values, timestamp = self._external_or_error()
            return get_external_per_pod_metric_replicas(
                self.current_replicas,
                metric.per_pod_target_usage,
                values=values,
                timestamp=timestamp,
                tolerances=tolerances,
            )
        try:
            pod_metrics, timestamp = self.custom_pod_metrics()
        except FetchError as err:
            raise ReplicaCalculationError(f"unable to get metric {metric.name}: {err}") from err
        return get_metric_replicas(
            self.current_replicas,
            metric.target_usage,
            tolerances=tolerances,
            pods=pods,
            metrics=pod_metrics,
            timestamp=timestamp,
            now=NOW,
        )

    def _external_or_error(self) -> tuple[list[int], datetime]:
        assert self.metric is not None
        try:
            return self.external_values()
        except FetchError as err:
            message = f"unable to get external metric {TEST_NAMESPACE}/{self.metric.name}: {err}"
            raise ReplicaCalculationError(message) from err

    def run_test(self) -> None:
        """``runTest``: the expected error (by substring), or replicas, usage and timestamp."""
        if self.expected_error is not None:
            with pytest.raises(ReplicaCalculationError) as raised:
                self.calculate()
            assert self.expected_error in str(raised.value)
            return
        result = self.calculate()
        assert result.replica_count == self.expected_replicas, "replicas should be as expected"
        if self.resource is not None:
            assert result.utilization == self.resource.expected_utilization
            assert result.usage_milli == self.resource.expected_value, "raw value"
        else:
            assert self.metric is not None
            assert result.usage_milli == self.metric.expected_usage, "usage should be as expected"
        returned = GO_ZERO_TIME if result.timestamp is None else result.timestamp
        assert returned == self.timestamp, "timestamp should be as expected"
