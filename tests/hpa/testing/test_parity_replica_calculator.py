"""``hpa.testing`` on upstream's replica-calculator table, through a whole sync.

Every case of ``tests/parity/test_replica_calculator.py`` (``replica_calculator_test.go``) is
rebuilt in the test kit's terms (pods with per-container requests and usage, readiness, start
times, phases; Pods, Object and External values; the samples' time) for an HPA with that one
metric, and decided with :func:`hpa.testing.decide`. The metric's proposal must be the table's
replica count (or its failure the table's error), and for resource metrics the utilization and
raw value written to ``status.currentMetrics`` the table's.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from hpa.core.replicas import GO_ZERO_TIME
from hpa.core.spec import (
    ContainerResourceMetricSource,
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    LabelSelector,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
    ScalingRules,
)
from hpa.testing import HPA, FakeContainer, FakeMetrics, decide, hpa_from_spec
from tests.parity.replica_calc_case import (
    DEFAULT_TESTING_CPU_INITIALIZATION_PERIOD_SECONDS,
    DEFAULT_TESTING_DELAY_OF_INITIAL_READINESS_STATUS_SECONDS,
    DEFAULT_TESTING_TOLERANCE,
    METRIC_WINDOW_SECONDS,
    NOW,
    NUM_CONTAINERS_PER_POD,
    POD_NAME_PREFIX,
    MetricType,
    ReplicaCalcTestCase,
)
from tests.parity.test_horizontal import TEST_SETTINGS
from tests.parity.test_replica_calculator import CASES

SETTINGS = replace(
    TEST_SETTINGS,
    tolerance=DEFAULT_TESTING_TOLERANCE,
    cpu_initialization_period_seconds=DEFAULT_TESTING_CPU_INITIALIZATION_PERIOD_SECONDS,
    initial_readiness_delay_seconds=DEFAULT_TESTING_DELAY_OF_INITIAL_READINESS_STATUS_SECONDS,
    configurable_tolerance_enabled=True,
)
DESCRIBED = CrossVersionObjectReference("Deployment", "some-deployment", "apps/v1")


def _metric(case: ReplicaCalcTestCase) -> MetricSpec:
    if case.resource is not None:
        target = MetricTarget(
            MetricTargetType.UTILIZATION, average_utilization=case.resource.target_utilization
        )
        if case.container:
            return MetricSpec.for_container_resource(
                ContainerResourceMetricSource(case.resource.name, case.container, target)
            )
        return MetricSpec.for_resource(ResourceMetricSource(case.resource.name, target))
    metric = case.metric
    assert metric is not None
    value = MetricTarget(MetricTargetType.VALUE, value_milli=metric.target_usage)
    average = MetricTarget(
        MetricTargetType.AVERAGE_VALUE,
        average_value_milli=metric.per_pod_target_usage or metric.target_usage,
    )
    identifier = MetricIdentifier(metric.name, LabelSelector() if metric.selector else None)
    kind = metric.metric_type
    if kind is MetricType.POD:
        return MetricSpec.for_pods(PodsMetricSource(identifier, average))
    if kind in (MetricType.OBJECT, MetricType.OBJECT_PER_POD):
        target = value if kind is MetricType.OBJECT else average
        return MetricSpec.for_object(ObjectMetricSource(DESCRIBED, identifier, target))
    target = value if kind is MetricType.EXTERNAL else average
    return MetricSpec.for_external(ExternalMetricSource(identifier, target))


def _hpa(case: ReplicaCalcTestCase) -> HPA:
    behavior = None
    if case.tolerances is not None:
        behavior = HorizontalPodAutoscalerBehavior(
            scale_up=ScalingRules(tolerance=case.tolerances.scale_up),
            scale_down=ScalingRules(tolerance=case.tolerances.scale_down),
        )
    spec = HorizontalPodAutoscalerSpec(
        scale_target_ref=CrossVersionObjectReference("Deployment", "web", "apps/v1"),
        min_replicas=1,
        max_replicas=100000,
        metrics=(_metric(case),),
        behavior=behavior,
    )
    return hpa_from_spec(spec, name="calc", namespace="test-namespace")


def _metrics(case: ReplicaCalcTestCase) -> FakeMetrics:
    listed = {pod.name: pod for pod in case.pods()}
    resource = case.resource
    samples: dict[str, list[int]] = {}
    if resource is not None:
        for i, levels in enumerate(resource.levels):
            name = (
                resource.pod_names[i] if i < len(resource.pod_names) else f"{POD_NAME_PREFIX}-{i}"
            )
            samples[name] = levels
    custom: dict[str, int] = {}
    metric = case.metric
    if metric is not None and metric.metric_type is MetricType.POD:
        custom = {f"{POD_NAME_PREFIX}-{i}": level for i, level in enumerate(metric.levels)}
    metrics = FakeMetrics().sample_window(METRIC_WINDOW_SECONDS).samples_taken(NOW - case.timestamp)
    for name in [*listed, *(n for n in [*samples, *custom] if n not in listed)]:
        pod = listed.get(name)
        containers = []
        for j in range(NUM_CONTAINERS_PER_POD):
            requests = pod.containers[j].requests_milli if pod is not None else {}
            levels = samples.get(name, [])
            usage = {resource.name: f"{levels[j]}m"} if resource and j < len(levels) else {}
            containers.append(
                FakeContainer(
                    name=f"container{j + 1}",
                    requests={k: f"{v}m" for k, v in requests.items()},
                    usage=usage,
                )
            )
        ready = pod is None or pod.ready_condition is None or pod.ready_condition.status == "True"
        metrics = metrics.pod(
            name,
            containers=containers,
            ready=ready,
            started_at=pod.start_time if pod is not None else GO_ZERO_TIME,
            ready_since_ago=NOW - GO_ZERO_TIME,
            phase=str(pod.phase) if pod is not None else "Running",
            deleting=pod is not None and pod.deletion_timestamp is not None,
            metrics={metric.name: f"{custom[name]}m"} if metric and name in custom else {},
            listed=pod is not None,
        )
    metrics = metrics.replicas(case.current_replicas)
    if case.current_replicas == 0:
        metrics = metrics.was_scaled_to_zero()
    if metric is not None and metric.metric_type is not MetricType.POD:
        if metric.metric_type in (MetricType.OBJECT, MetricType.OBJECT_PER_POD):
            metrics = metrics.object_metric(metric.name, f"{metric.levels[0]}m")
        else:
            metrics = metrics.external_metric(metric.name, *(f"{v}m" for v in metric.levels))
    return metrics


@pytest.mark.parametrize("case", CASES)
def test_same_proposal_as_the_calculator(case: ReplicaCalcTestCase) -> None:
    result = decide(_hpa(case), _metrics(case), now=NOW, settings=SETTINGS)
    decision = result.decision
    assert len(decision.metric_proposals) == 1, result.explain()
    if case.expected_error is not None:
        failure = decision.metric_failures[0]
        assert failure is not None, result.explain()
        assert case.expected_error in failure[1]
        return
    assert decision.metric_proposals[0] == case.expected_replicas, result.explain()
    if case.resource is not None:
        (status,) = result.status.current_metrics or ()
        assert status.current.average_utilization == case.resource.expected_utilization
        assert status.current.average_value_milli == case.resource.expected_value
