"""Parity: upstream ``pkg/controller/podautoscaler/replica_calculator_test.go``, case by case.

Every case is named after its Go test function (``t.Run`` subtests as ``Func/subtest name``). The
cases are the union of two upstream revisions of the file: the last one with one function per case
(container-metric cases, restartable init containers) and the newest (per-direction tolerances,
int64/int32 overflow caps, pod-level requests, and ``TestReplicaCalcResourceScale``, a table that
regroups the 24 resource-scaling functions of the older revision: those run here under their
original function names, the newer subtest name noted beside each). Fixtures are built by
:mod:`tests.parity.replica_calc_case`, the Python twin of the Go harness.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import (
    MAX_INT32,
    MAX_INT64,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    RESTART_POLICY_ALWAYS,
    ContainerInfo,
    PodCondition,
    PodInfo,
    PodMetric,
    PodPhase,
    ReplicaCalculationError,
    Tolerances,
    calculate_pod_requests,
    calculate_pod_requests_from_containers,
    group_pods,
)
from tests.parity.replica_calc_case import (
    DEFAULT_TESTING_CPU_INITIALIZATION_PERIOD_SECONDS,
    DEFAULT_TESTING_DELAY_OF_INITIAL_READINESS_STATUS_SECONDS,
    DEFAULT_TESTING_TOLERANCE,
    NOW,
    NUM_CONTAINERS_PER_POD,
    MetricInfo,
    MetricType,
    ReplicaCalcTestCase,
    ResourceInfo,
    cool_cpu_creation_time,
    cpu_requests,
    hot_cpu_creation_time,
    make_pod_metric_levels,
    must_parse_milli,
)

T = ConditionStatus.TRUE
F = ConditionStatus.FALSE
RUNNING = PodPhase.RUNNING
PENDING = PodPhase.PENDING
FAILED = PodPhase.FAILED
hot = hot_cpu_creation_time
cool = cool_cpu_creation_time
N = NUM_CONTAINERS_PER_POD


def _tolerances(scale_down: float, scale_up: float) -> Tolerances:
    """``&Tolerances{scaleDown, scaleUp}`` (upstream's positional order)."""
    return Tolerances(scale_down=scale_down, scale_up=scale_up)


def _cpu(
    requests: list[int],
    levels: list[list[int]],
    target: int,
    utilization: int = 0,
    value: int = 0,
    pod_names: list[str] | None = None,
) -> ResourceInfo:
    return ResourceInfo(
        name=RESOURCE_CPU,
        requests=requests,
        levels=levels,
        pod_names=pod_names or [],
        target_utilization=target,
        expected_utilization=utilization,
        expected_value=value,
    )


def _pods_metric(levels: list[int], target: int, usage: int) -> MetricInfo:
    return MetricInfo(
        levels=levels, target_usage=target, expected_usage=usage, metric_type=MetricType.POD
    )


def _object(levels: list[int], target: int, usage: int) -> MetricInfo:
    return MetricInfo(
        levels=levels,
        target_usage=target,
        expected_usage=usage,
        single_object=True,
        metric_type=MetricType.OBJECT,
    )


def _object_per_pod(levels: list[int], per_pod_target: int, usage: int) -> MetricInfo:
    return MetricInfo(
        levels=levels,
        per_pod_target_usage=per_pod_target,
        expected_usage=usage,
        single_object=True,
        metric_type=MetricType.OBJECT_PER_POD,
    )


def _external(levels: list[int], target: int, usage: int) -> MetricInfo:
    return MetricInfo(
        levels=levels,
        target_usage=target,
        expected_usage=usage,
        selector=True,
        metric_type=MetricType.EXTERNAL,
    )


def _external_per_pod(levels: list[int], per_pod_target: int, usage: int) -> MetricInfo:
    return MetricInfo(
        levels=levels,
        per_pod_target_usage=per_pod_target,
        expected_usage=usage,
        selector=True,
        metric_type=MetricType.EXTERNAL_PER_POD,
    )


def _computed_tolerance_alg_cases() -> list[ReplicaCalcTestCase]:
    """``TestReplicaCalcComputedToleranceAlgImplementation``, with Go's exact arithmetic."""
    start_pods = 10
    # 150 mCPU per pod.
    total_used_cpu_of_all_pods = start_pods * 150
    # Each pod starts out asking for 2X what is really needed (a 50% used/requested ratio).
    total_requested_cpu_of_all_pods = 2 * total_used_cpu_of_all_pods
    requested_to_used = float(total_requested_cpu_of_all_pods // total_used_cpu_of_all_pods)
    per_pod_requested = total_requested_cpu_of_all_pods // start_pods
    # Force a minimal scaling event by satisfying (tolerance < 1 - resourcesUsedRatio).
    target = abs(1 / (requested_to_used * (1 - DEFAULT_TESTING_TOLERANCE))) + 0.01
    final_cpu_percent_target = math.trunc(target * 100)
    resources_used_ratio = float(total_used_cpu_of_all_pods) / (
        float(total_requested_cpu_of_all_pods) * target
    )
    final_pods = math.ceil(resources_used_ratio * float(start_pods))
    offsets = [100, -100, 10, -10, 2, -2, 1, -1, 0, 0]

    def case(target_percent: int, expected_replicas: int) -> ReplicaCalcTestCase:
        return ReplicaCalcTestCase(
            current_replicas=start_pods,
            expected_replicas=expected_replicas,
            resource=_cpu(
                requests=[must_parse_milli(f"{per_pod_requested + o}m") for o in offsets],
                levels=make_pod_metric_levels(*[total_used_cpu_of_all_pods // 10] * 10),
                target=target_percent,
                utilization=(total_used_cpu_of_all_pods * 100) // total_requested_cpu_of_all_pods,
                value=N * total_used_cpu_of_all_pods // 10,
            ),
        )

    first = case(final_cpu_percent_target, final_pods)
    # Now no scaling happens if we are in a very close margin to the tolerance.
    target = abs(1 / (requested_to_used * (1 - DEFAULT_TESTING_TOLERANCE))) + 0.004
    second = case(math.trunc(target * 100), start_pods)
    return [first, second]


CASES = [
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=1,
            expected_error="no metrics returned matched known pods",
            resource=_cpu(
                cpu_requests(1, "1.0"),
                make_pod_metric_levels(100),
                target=100,
                pod_names=["an-older-pod-name"],
            ),
        ),
        id="TestReplicaCalcDisjointResourcesMetrics",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale up
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=5,
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(300, 500, 700), 30, 50, N * 500
            ),
        ),
        id="TestReplicaCalcScaleUp",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale up: container metric
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=5,
            resource=_cpu(
                cpu_requests(3, "1.0"), [[1000, 300], [1000, 500], [1000, 700]], 30, 50, 500
            ),
            container="container2",
        ),
        id="TestReplicaCalcContainerScaleUp",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale up: unready pod scales less
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            pod_readiness=[F, T, T],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(300, 500, 700), 30, 60, N * 600
            ),
        ),
        id="TestReplicaCalcScaleUpUnreadyLessScale",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale up: hot-CPU container scales less
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            pod_start_time=[hot(), cool(), cool()],
            resource=_cpu(cpu_requests(3, "1.0"), [[0, 300], [0, 500], [0, 700]], 30, 60, 600),
            container="container2",
        ),
        id="TestReplicaCalcScaleUpContainerHotCpuLessScale",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale up: hot-CPU pod scales less
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            pod_start_time=[hot(), cool(), cool()],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(300, 500, 700), 30, 60, N * 600
            ),
        ),
        id="TestReplicaCalcScaleUpHotCpuLessScale",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/no scale: unready pods ignored
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            pod_readiness=[T, F, F],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(400, 500, 700), 30, 40, N * 400
            ),
        ),
        id="TestReplicaCalcScaleUpUnreadyNoScale",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/no scale: hot-CPU pods ignored
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            pod_readiness=[T, F, F],
            pod_start_time=[cool(), hot(), hot()],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(400, 500, 700), 30, 40, N * 400
            ),
        ),
        id="TestReplicaCalcScaleHotCpuNoScale",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale up: failed pods ignored
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=4,
            pod_readiness=[T, T, F, F],
            pod_phase=[RUNNING, RUNNING, FAILED, FAILED],
            resource=_cpu(
                cpu_requests(4, "1.0"), make_pod_metric_levels(500, 700), 30, 60, N * 600
            ),
        ),
        id="TestReplicaCalcScaleUpIgnoresFailedPods",
    ),
    pytest.param(
        # newest: TestReplicaCalcResourceScale/scale up: failed pods ignored with missing
        # container metric
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=4,
            pod_readiness=[T, T, F, F],
            pod_phase=[RUNNING, RUNNING, FAILED, FAILED],
            resource=_cpu(
                cpu_requests(4, "1.0"), [[1000, 500], [9000, 700], [1000], [9000]], 30, 60, 600
            ),
            container="container2",
        ),
        id="TestReplicaCalcMissingContainerMetricScaleUpIgnoresFailedPods",
    ),
    pytest.param(
        # newest: TestReplicaCalcResourceScale/scale up: container metrics with failed pods
        # ignored
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=4,
            pod_readiness=[T, T, F, F],
            pod_phase=[RUNNING, RUNNING, FAILED, FAILED],
            resource=_cpu(cpu_requests(4, "1.0"), [[1000, 500], [9000, 700]], 30, 60, 600),
            container="container2",
        ),
        id="TestReplicaCalcScaleUpContainerIgnoresFailedPods",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale up: pods being deleted are ignored
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=4,
            pod_readiness=[T, T, F, F],
            pod_phase=[RUNNING, RUNNING, RUNNING, RUNNING],
            pod_deletion_timestamp=[False, False, True, True],
            resource=_cpu(
                cpu_requests(4, "1.0"), make_pod_metric_levels(500, 700), 30, 60, N * 600
            ),
        ),
        id="TestReplicaCalcScaleUpIgnoresDeletionPods",
    ),
    pytest.param(
        # newest: TestReplicaCalcResourceScale/scale up: container metrics with pods being
        # deleted ignored (upstream: "This test is broken and works only because of missing
        # metrics")
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=4,
            pod_readiness=[T, T, F, F],
            pod_phase=[RUNNING, RUNNING, RUNNING, RUNNING],
            pod_deletion_timestamp=[False, False, True, True],
            resource=_cpu(cpu_requests(4, "1.0"), make_pod_metric_levels(500, 700), 30, 60, 600),
            container="container1",
        ),
        id="TestReplicaCalcScaleUpContainerIgnoresDeletionPods",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=MAX_INT32,
            metric=_object([MAX_INT64], target=1, usage=MAX_INT64),
        ),
        id="TestReplicaCalcScaleUpOverflow",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=1,
            expected_replicas=MAX_INT32,
            metric=_external_per_pod([MAX_INT64], per_pod_target=1, usage=MAX_INT64),
        ),
        id="TestExternalPerPodMetricReplicaOverflow",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=1,
            expected_replicas=1,
            metric=_external_per_pod([MAX_INT64], per_pod_target=MAX_INT64, usage=MAX_INT64),
        ),
        id="TestExternalPerPodMetricUsageOverflow",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            metric=_pods_metric([20000, 10000, 30000], target=15000, usage=20000),
        ),
        id="TestReplicaCalcScaleUpCM",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=6,
            pod_readiness=[T, T, F],
            pod_start_time=[cool(), cool(), hot()],
            metric=_pods_metric([50000, 10000, 30000], target=15000, usage=30000),
        ),
        id="TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=7,
            pod_readiness=[F, T, F],
            pod_start_time=[hot(), cool(), hot()],
            metric=_pods_metric([50000, 15000, 30000], target=15000, usage=31666),
        ),
        id="TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            metric=_object([20000], target=15000, usage=20000),
        ),
        id="TestReplicaCalcScaleUpCMObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            metric=_object_per_pod([20000], per_pod_target=5000, usage=6667),
        ),
        id="TestReplicaCalcScaleUpCMPerPodObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=5,  # If we did not ignore unready pods, we'd expect 15 replicas.
            pod_readiness=[F, T, F],
            metric=_object([50000], target=10000, usage=50000),
        ),
        id="TestReplicaCalcScaleUpCMObjectIgnoresUnreadyPods",
    ),
    pytest.param(
        # upstream declares this "external" case with metricType podMetric (and a selector)
        ReplicaCalcTestCase(
            current_replicas=1,
            expected_replicas=2,
            metric=MetricInfo(
                levels=[8600],
                target_usage=4400,
                expected_usage=8600,
                selector=True,
                metric_type=MetricType.POD,
            ),
        ),
        id="TestReplicaCalcScaleUpCMExternal",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=2,  # Would expect 6 if we didn't ignore unready pods
            pod_readiness=[F, T, F],
            metric=_external([8600], target=4400, usage=8600),
        ),
        id="TestReplicaCalcScaleUpCMExternalIgnoresUnreadyPods",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=1,
            expected_replicas=2,
            metric=_pods_metric([8600], target=4400, usage=8600),
        ),
        id="TestReplicaCalcScaleUpCMExternalNoLabels",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            metric=_external_per_pod([8600], per_pod_target=2150, usage=2867),
        ),
        id="TestReplicaCalcScaleUpPerPodCMExternal",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale down
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            resource=_cpu(
                cpu_requests(5, "1.0"),
                make_pod_metric_levels(100, 300, 500, 250, 250),
                50,
                28,
                N * 280,
            ),
        ),
        id="TestReplicaCalcScaleDown",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale down: container metric
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            resource=_cpu(
                cpu_requests(5, "1.0"),
                [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
                50,
                28,
                280,
            ),
            container="container2",
        ),
        id="TestReplicaCalcContainerScaleDown",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            metric=_pods_metric([12000] * 5, target=20000, usage=12000),
        ),
        id="TestReplicaCalcScaleDownCM",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            metric=_object_per_pod([6000], per_pod_target=2000, usage=1200),
        ),
        id="TestReplicaCalcScaleDownPerPodCMObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            metric=_object([12000], target=20000, usage=12000),
        ),
        id="TestReplicaCalcScaleDownCMObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            metric=_external([8600], target=14334, usage=8600),
        ),
        id="TestReplicaCalcScaleDownCMExternal",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            metric=_external_per_pod([8600], per_pod_target=2867, usage=1720),
        ),
        id="TestReplicaCalcScaleDownPerPodCMExternal",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale down: exclude unready pods
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=2,
            pod_readiness=[T, T, T, F, F],
            resource=_cpu(
                cpu_requests(5, "1.0"),
                make_pod_metric_levels(100, 300, 500, 250, 250),
                50,
                30,
                N * 300,
            ),
        ),
        id="TestReplicaCalcScaleDownExcludeUnreadyPods",
    ),
    pytest.param(
        # newest: TestReplicaCalcResourceScale/scale down: container metric excludes unready pods
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=2,
            pod_readiness=[T, T, T, F, F],
            resource=_cpu(
                cpu_requests(5, "1.0"),
                [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
                50,
                30,
                300,
            ),
            container="container2",
        ),
        id="TestReplicaCalcScaleDownContainerExcludeUnreadyPods",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale down: exclude unscheduled pods
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=1,
            pod_readiness=[T, F, F, F, F],
            pod_phase=[RUNNING, PENDING, PENDING, PENDING, PENDING],
            resource=_cpu(cpu_requests(5, "1.0"), make_pod_metric_levels(100), 50, 10, N * 100),
        ),
        id="TestReplicaCalcScaleDownExcludeUnscheduledPods",
    ),
    pytest.param(
        # newest: TestReplicaCalcResourceScale/scale down: container metric excludes
        # unscheduled pods
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=1,
            pod_readiness=[T, F, F, F, F],
            pod_phase=[RUNNING, PENDING, PENDING, PENDING, PENDING],
            resource=_cpu(
                cpu_requests(5, "1.0"),
                [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
                50,
                10,
                100,
            ),
            container="container2",
        ),
        id="TestReplicaCalcScaleDownContainerExcludeUnscheduledPods",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale down: ignore hot-CPU pods
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=2,
            pod_start_time=[cool(), cool(), cool(), hot(), hot()],
            resource=_cpu(
                cpu_requests(5, "1.0"),
                make_pod_metric_levels(100, 300, 500, 250, 250),
                50,
                30,
                N * 300,
            ),
        ),
        id="TestReplicaCalcScaleDownIgnoreHotCpuPods",
    ),
    pytest.param(
        # newest: TestReplicaCalcResourceScale/scale down: container metric ignores hot-CPU pods
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=2,
            pod_start_time=[cool(), cool(), cool(), hot(), hot()],
            resource=_cpu(
                cpu_requests(5, "1.0"),
                [[1000, 100], [1000, 300], [1000, 500], [1000, 1000], [1000, 1000]],
                50,
                30,
                300,
            ),
            container="container2",
        ),
        id="TestReplicaCalcScaleDownContainerIgnoreHotCpuPods",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale down: failed pods ignored
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            pod_readiness=[T, T, T, T, T, F, F],
            pod_phase=[RUNNING] * 5 + [FAILED, FAILED],
            resource=_cpu(
                cpu_requests(7, "1.0"),
                make_pod_metric_levels(100, 300, 500, 250, 250),
                50,
                28,
                N * 280,
            ),
        ),
        id="TestReplicaCalcScaleDownIgnoresFailedPods",
    ),
    pytest.param(
        # newest: TestReplicaCalcResourceScale/scale down: container metric with failed pods
        # ignored
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            pod_readiness=[T, T, T, T, T, F, F],
            pod_phase=[RUNNING] * 5 + [FAILED, FAILED],
            resource=_cpu(
                cpu_requests(7, "1.0"),
                [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
                50,
                28,
                280,
            ),
            container="container2",
        ),
        id="TestReplicaCalcScaleDownContainerIgnoresFailedPods",
    ),
    pytest.param(  # newest: TestReplicaCalcResourceScale/scale down: pods being deleted are ignored
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            pod_readiness=[T, T, T, T, T, F, F],
            pod_phase=[RUNNING] * 7,
            pod_deletion_timestamp=[False] * 5 + [True, True],
            resource=_cpu(
                cpu_requests(7, "1.0"),
                make_pod_metric_levels(100, 300, 500, 250, 250),
                50,
                28,
                N * 280,
            ),
        ),
        id="TestReplicaCalcScaleDownIgnoresDeletionPods",
    ),
    pytest.param(
        # Regression test for kubernetes/kubernetes#83561. newest:
        # TestReplicaCalcResourceScale/scale down: still-running pods being deleted are ignored
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=3,
            pod_readiness=[T, T, T, T, T, F, F],
            pod_phase=[RUNNING] * 7,
            pod_deletion_timestamp=[False] * 5 + [True, True],
            resource=_cpu(
                cpu_requests(7, "1.0"),
                [[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
                50,
                28,
                280,
            ),
            container="container2",
        ),
        id="TestReplicaCalcScaleDownIgnoresDeletionPods_StillRunning",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            resource=_cpu(
                [must_parse_milli("0.9"), must_parse_milli("1.0"), must_parse_milli("1.1")],
                make_pod_metric_levels(1010, 1030, 1020),
                100,
                102,
                N * 1020,
            ),
        ),
        id="TestReplicaCalcTolerance",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            metric=_pods_metric([20000, 21000, 21000], target=20000, usage=20666),
        ),
        id="TestReplicaCalcToleranceCM",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            metric=_object([20666], target=20000, usage=20666),
        ),
        id="TestReplicaCalcToleranceCMObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=4,
            expected_replicas=4,
            metric=_object_per_pod([20166], per_pod_target=5000, usage=5042),
        ),
        id="TestReplicaCalcTolerancePerPodCMObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            metric=_external([8600], target=8888, usage=8600),
        ),
        id="TestReplicaCalcToleranceCMExternal",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            metric=_external_per_pod([8600], per_pod_target=2900, usage=2867),
        ),
        id="TestReplicaCalcTolerancePerPodCMExternal",
    ),
    *[
        pytest.param(
            ReplicaCalcTestCase(
                tolerances=tolerances,
                current_replicas=3,
                expected_replicas=expected_replicas,
                resource=_cpu(
                    [must_parse_milli("0.9"), must_parse_milli("1.0"), must_parse_milli("1.1")],
                    make_pod_metric_levels(*levels),
                    100,
                    utilization,
                    N * value,
                ),
            ),
            id=f"TestReplicaCalcConfigurableTolerance/{name}",
        )
        for name, tolerances, expected_replicas, levels, utilization, value in [
            ("Outside of a 0% tolerance", _tolerances(0.0, 0.0), 4, (909, 1010, 1111), 101, 1010),
            (
                "Within a 200% scale-up tolerance",
                _tolerances(DEFAULT_TESTING_TOLERANCE, 2.0),
                3,
                (1890, 1910, 1900),
                190,
                1900,
            ),
            (
                "Outside 8% scale-up tolerance (and superfuous scale-down tolerance)",
                _tolerances(2.0, 0.08),
                4,
                (1100, 1080, 1090),
                109,
                1090,
            ),
            (
                "Within a 36% scale-down tolerance",
                _tolerances(0.36, DEFAULT_TESTING_TOLERANCE),
                3,
                (660, 640, 650),
                65,
                650,
            ),
            (
                "Outside a 34% scale-down tolerance",
                _tolerances(0.34, DEFAULT_TESTING_TOLERANCE),
                2,
                (660, 640, 650),
                65,
                650,
            ),
        ]
    ],
    pytest.param(
        ReplicaCalcTestCase(
            tolerances=_tolerances(DEFAULT_TESTING_TOLERANCE, 0.01),
            current_replicas=3,
            expected_replicas=4,
            metric=_pods_metric([20000, 21000, 21000], target=20000, usage=20666),
        ),
        id="TestReplicaCalcConfigurableToleranceCM",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            tolerances=_tolerances(DEFAULT_TESTING_TOLERANCE, 0.01),
            current_replicas=3,
            expected_replicas=4,
            metric=_object([20666], target=20000, usage=20666),
        ),
        id="TestReplicaCalcConfigurableToleranceCMObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            tolerances=_tolerances(DEFAULT_TESTING_TOLERANCE, 0.01),
            current_replicas=4,
            expected_replicas=5,
            metric=_object_per_pod([20208], per_pod_target=5000, usage=5052),
        ),
        id="TestReplicaCalcConfigurableTolerancePerPodCMObject",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            tolerances=_tolerances(DEFAULT_TESTING_TOLERANCE, 0.01),
            current_replicas=3,
            expected_replicas=4,
            metric=_external([8900], target=8800, usage=8900),
        ),
        id="TestReplicaCalcConfigurableToleranceCMExternal",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            tolerances=_tolerances(DEFAULT_TESTING_TOLERANCE, 0.01),
            current_replicas=3,
            expected_replicas=4,
            metric=_external_per_pod([8600], per_pod_target=2800, usage=2867),
        ),
        id="TestReplicaCalcConfigurableTolerancePerPodCMExternal",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=4,
            expected_replicas=24,
            resource=_cpu(
                cpu_requests(4, "1.0"),
                make_pod_metric_levels(4000, 9500, 3000, 7000, 3200, 2000),
                100,
                587,
                N * 5875,
            ),
        ),
        id="TestReplicaCalcSuperfluousMetrics",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=4,
            expected_replicas=3,
            # numContainersPerPod * 247, for sufficiently large values of 247
            resource=_cpu(cpu_requests(4, "1.0"), make_pod_metric_levels(400, 95), 100, 24, 495),
        ),
        id="TestReplicaCalcMissingMetrics",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=4,
            expected_error=(
                "unable to get metrics for resource cpu: "
                "no metrics returned from resource metrics API"
            ),
            resource=_cpu(cpu_requests(3, "1.0"), make_pod_metric_levels(), 100),
        ),
        id="TestReplicaCalcEmptyMetrics",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=1,
            expected_error="missing request for",
            resource=_cpu([], make_pod_metric_levels(200), 100),
        ),
        id="TestReplicaCalcEmptyCPURequest",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=5,
            expected_replicas=5,
            metric=_pods_metric([20000, 19000, 21000], target=20000, usage=20000),
        ),
        id="TestPlainMetricReplicaCalcMissingMetricsNoChangeEq",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=2,
            resource=_cpu(cpu_requests(2, "1.0"), make_pod_metric_levels(1000), 100, 100, N * 1000),
        ),
        id="TestReplicaCalcMissingMetricsNoChangeEq",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=2,
            resource=_cpu(cpu_requests(2, "1.0"), make_pod_metric_levels(1900), 100, 190, N * 1900),
        ),
        id="TestReplicaCalcMissingMetricsNoChangeGt",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=2,
            resource=_cpu(cpu_requests(2, "1.0"), make_pod_metric_levels(600), 100, 60, N * 600),
        ),
        id="TestReplicaCalcMissingMetricsNoChangeLt",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            pod_readiness=[F, T, T],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(100, 450), 50, 45, N * 450
            ),
        ),
        id="TestReplicaCalcMissingMetricsUnreadyChange",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            pod_start_time=[hot(), cool(), cool()],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(100, 450), 50, 45, N * 450
            ),
        ),
        id="TestReplicaCalcMissingMetricsHotCpuNoChange",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            pod_readiness=[F, T, T],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(100, 2000), 50, 200, N * 2000
            ),
        ),
        id="TestReplicaCalcMissingMetricsUnreadyScaleUp",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=4,
            pod_readiness=[F, T, T],
            pod_start_time=[hot(), cool(), cool()],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(100, 2000), 50, 200, N * 2000
            ),
        ),
        id="TestReplicaCalcMissingMetricsHotCpuScaleUp",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=4,
            expected_replicas=3,
            pod_readiness=[F, T, T, T],
            resource=_cpu(
                cpu_requests(4, "1.0"), make_pod_metric_levels(100, 100, 100), 50, 10, N * 100
            ),
        ),
        id="TestReplicaCalcMissingMetricsUnreadyScaleDown",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=4,
            expected_replicas=2,
            pod_readiness=[F, T, T, T],
            resource=_cpu(
                [must_parse_milli(q) for q in ("1.0", "1.0", "2.0", "2.0")],
                make_pod_metric_levels(200, 100, 100),
                300,
                6,
                N * 100,
            ),
        ),
        id="TestReplicaCalcMissingMetricsScaleDownTargetOver100",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=2,
            pod_phase=[RUNNING, RUNNING, RUNNING],
            resource=_cpu(
                cpu_requests(3, "1.0"), make_pod_metric_levels(100, 100), 50, 10, N * 100
            ),
        ),
        id="TestReplicaCalcDuringRollingUpdateWithMaxSurge",
    ),
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=2,
            expected_replicas=2,
            pod_phase=[RUNNING, RUNNING, RUNNING],
            metric=_pods_metric([10000, 10000], target=17000, usage=10000),
        ),
        id="TestReplicaCalcDuringRollingUpdateWithMaxSurgeCM",
    ),
    *[
        pytest.param(case, id=f"TestReplicaCalcComputedToleranceAlgImplementation/run{i + 1}")
        for i, case in enumerate(_computed_tolerance_alg_cases())
    ],
    pytest.param(
        ReplicaCalcTestCase(
            current_replicas=3,
            expected_replicas=3,
            # Two values that when added together will overflow int64
            metric=_external(
                [MAX_INT64 // 2 + 1, MAX_INT64 // 2 + 1], target=MAX_INT64, usage=MAX_INT64
            ),
        ),
        id="TestReplicaCalcExternalMetricUsageOverflow",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_replica_calculator(case: ReplicaCalcTestCase) -> None:
    case.run_test()


# ---------------------------------------------------------------- TestGroupPods


def _ago(**delta: float) -> datetime:
    """``time.Now().Add(-delta)``."""
    return NOW - timedelta(**delta)


def _ready(status: ConditionStatus, last_transition: datetime) -> PodCondition:
    return PodCondition(status=status, last_transition_time=last_transition)


GROUP_PODS_CASES = [
    pytest.param([], {}, RESOURCE_CPU, 0, set(), set(), set(), id="TestGroupPods/void"),
    pytest.param(
        [PodInfo(name="bentham", phase=PodPhase.SUCCEEDED)],
        {"bentham": PodMetric(value_milli=1, timestamp=NOW, window_seconds=60)},
        RESOURCE_MEMORY,
        1,
        set(),
        set(),
        set(),
        id="TestGroupPods/count in a ready pod - memory",
    ),
    pytest.param(
        [PodInfo(name="lucretius", phase=PodPhase.SUCCEEDED, start_time=NOW)],
        {"lucretius": PodMetric(value_milli=1)},
        RESOURCE_CPU,
        0,
        {"lucretius"},
        set(),
        set(),
        id="TestGroupPods/unready a pod without ready condition - CPU",
    ),
    pytest.param(
        [
            PodInfo(
                name="bentham",
                phase=PodPhase.SUCCEEDED,
                start_time=_ago(minutes=1),
                ready_condition=_ready(T, _ago(seconds=30)),
            )
        ],
        {"bentham": PodMetric(value_milli=1, timestamp=NOW, window_seconds=30)},
        RESOURCE_CPU,
        1,
        set(),
        set(),
        set(),
        id=(
            "TestGroupPods/"
            "count in a ready pod with fresh metrics during initialization period - CPU"
        ),
    ),
    pytest.param(
        [
            PodInfo(
                name="bentham",
                phase=PodPhase.SUCCEEDED,
                start_time=_ago(minutes=1),
                ready_condition=_ready(T, _ago(seconds=30)),
            )
        ],
        {"bentham": PodMetric(value_milli=1, timestamp=NOW, window_seconds=60)},
        RESOURCE_CPU,
        0,
        {"bentham"},
        set(),
        set(),
        id=(
            "TestGroupPods/"
            "unready a ready pod without fresh metrics during initialization period - CPU"
        ),
    ),
    pytest.param(
        [
            PodInfo(
                name="lucretius",
                phase=PodPhase.SUCCEEDED,
                start_time=_ago(minutes=10),
                ready_condition=_ready(F, _ago(minutes=9, seconds=54)),
            )
        ],
        {"lucretius": PodMetric(value_milli=1)},
        RESOURCE_CPU,
        0,
        {"lucretius"},
        set(),
        set(),
        id="TestGroupPods/unready an unready pod during initialization period - CPU",
    ),
    pytest.param(
        [
            PodInfo(
                name="bentham",
                phase=PodPhase.SUCCEEDED,
                start_time=_ago(minutes=3),
                ready_condition=_ready(T, _ago(minutes=3)),
            )
        ],
        {"bentham": PodMetric(value_milli=1, timestamp=_ago(minutes=2), window_seconds=60)},
        RESOURCE_CPU,
        1,
        set(),
        set(),
        set(),
        id=(
            "TestGroupPods/"
            "count in a ready pod without fresh metrics after initialization period - CPU"
        ),
    ),
    pytest.param(
        [
            PodInfo(
                name="lucretius",
                phase=PodPhase.SUCCEEDED,
                start_time=_ago(minutes=10),
                ready_condition=_ready(F, _ago(minutes=9)),
            )
        ],
        {"lucretius": PodMetric(value_milli=1)},
        RESOURCE_CPU,
        1,
        set(),
        set(),
        set(),
        id=(
            "TestGroupPods/count in an unready pod that was ready after initialization period - CPU"
        ),
    ),
    pytest.param(
        [
            PodInfo(
                name="lucretius",
                phase=PodPhase.SUCCEEDED,
                start_time=_ago(minutes=10),
                ready_condition=_ready(F, _ago(minutes=9, seconds=50)),
            )
        ],
        {"lucretius": PodMetric(value_milli=1)},
        RESOURCE_CPU,
        1,
        set(),
        set(),
        set(),
        id=(
            "TestGroupPods/unready pod that has never been ready after initialization period - CPU"
        ),
    ),
    pytest.param(
        [PodInfo(name="epicurus", phase=PodPhase.SUCCEEDED, start_time=_ago(minutes=3))],
        {},
        RESOURCE_CPU,
        0,
        set(),
        {"epicurus"},
        set(),
        id="TestGroupPods/a missing pod",
    ),
    pytest.param(
        [
            PodInfo(name="lucretius", phase=PodPhase.SUCCEEDED, start_time=NOW),
            PodInfo(
                name="niccolo",
                phase=PodPhase.SUCCEEDED,
                start_time=_ago(minutes=3),
                ready_condition=_ready(T, _ago(minutes=3)),
            ),
            PodInfo(name="epicurus", phase=PodPhase.SUCCEEDED, start_time=_ago(minutes=3)),
        ],
        {"lucretius": PodMetric(value_milli=1), "niccolo": PodMetric(value_milli=1)},
        RESOURCE_CPU,
        1,
        {"lucretius"},
        {"epicurus"},
        set(),
        id="TestGroupPods/several pods",
    ),
    pytest.param(
        [PodInfo(name="unscheduled", phase=PodPhase.PENDING)],
        {},
        RESOURCE_CPU,
        0,
        {"unscheduled"},
        set(),
        set(),
        id="TestGroupPods/pending pods are unreadied",
    ),
    pytest.param(
        [
            PodInfo(
                name="deleted",
                phase=PodPhase.PENDING,
                deletion_timestamp=datetime.fromtimestamp(1, tz=UTC),
            )
        ],
        {"deleted": PodMetric(value_milli=1)},
        RESOURCE_CPU,
        0,
        set(),
        set(),
        {"deleted"},
        id="TestGroupPods/ignore pods with deletion timestamps",
    ),
    pytest.param(
        [PodInfo(name="failed", phase=PodPhase.FAILED)],
        {"failed": PodMetric(value_milli=1)},
        RESOURCE_CPU,
        0,
        set(),
        set(),
        {"failed"},
        id="TestGroupPods/ignore pods in a failed state",
    ),
]


@pytest.mark.parametrize(
    (
        "pods",
        "metrics",
        "resource",
        "expect_ready_pod_count",
        "expect_unready_pods",
        "expect_missing_pods",
        "expect_ignored_pods",
    ),
    GROUP_PODS_CASES,
)
def test_group_pods(
    pods: list[PodInfo],
    metrics: dict[str, PodMetric],
    resource: str,
    expect_ready_pod_count: int,
    expect_unready_pods: set[str],
    expect_missing_pods: set[str],
    expect_ignored_pods: set[str],
) -> None:
    """``TestGroupPods``."""
    groups = group_pods(
        pods,
        metrics,
        resource=resource,
        now=NOW,
        cpu_initialization_period_seconds=DEFAULT_TESTING_CPU_INITIALIZATION_PERIOD_SECONDS,
        initial_readiness_delay_seconds=DEFAULT_TESTING_DELAY_OF_INITIAL_READINESS_STATUS_SECONDS,
    )
    assert groups.ready_pod_count == expect_ready_pod_count
    assert groups.unready_pods == expect_unready_pods
    assert groups.missing_pods == expect_missing_pods
    assert groups.ignored_pods == expect_ignored_pods


# ------------------------------------------------- TestCalculatePodRequests / TestCalculateRequests

TEST_POD = "test-pod"


def _container(
    name: str, cpu_milli: int | None = None, *, restart_policy: str | None = None
) -> ContainerInfo:
    requests = {} if cpu_milli is None else {RESOURCE_CPU: cpu_milli}
    return ContainerInfo(name=name, requests_milli=requests, restart_policy=restart_policy)


TWO_CONTAINERS = (_container("container1", 100), _container("container2", 50))
WITH_SIDECAR = PodInfo(
    name=TEST_POD,
    containers=(_container("container1", 100),),
    init_containers=(
        _container("init-container1", 20),
        _container("restartable-container1", 50, restart_policy=RESTART_POLICY_ALWAYS),
    ),
)
MISSING_ERROR = f"missing request for {RESOURCE_CPU} in container container1 of Pod {TEST_POD}"

CALCULATE_REQUESTS_CASES = [
    # TestCalculatePodRequests (the revision with one function per replica case)
    pytest.param([], "", False, {}, None, id="TestCalculatePodRequests/void"),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=TWO_CONTAINERS)],
        "",
        False,
        {TEST_POD: 150},
        None,
        id="TestCalculatePodRequests/pod with regular containers",
    ),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=TWO_CONTAINERS)],
        "container1",
        False,
        {TEST_POD: 100},
        None,
        id="TestCalculatePodRequests/calculate requests with special container",
    ),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=(_container("container1"),))],
        "",
        False,
        None,
        MISSING_ERROR,
        id="TestCalculatePodRequests/container missing requests",
    ),
    pytest.param(
        [WITH_SIDECAR],
        "",
        False,
        {TEST_POD: 150},
        None,
        id="TestCalculatePodRequests/pod with restartable init containers",
    ),
    # TestCalculateRequests (newest revision, PodLevelResources gate per case)
    pytest.param([], "", False, {}, None, id="TestCalculateRequests/void"),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=TWO_CONTAINERS)],
        "",
        False,
        {TEST_POD: 150},
        None,
        id="TestCalculateRequests/Sum container requests if pod-level feature is disabled",
    ),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=TWO_CONTAINERS)],
        "",
        True,
        {TEST_POD: 150},
        None,
        id=(
            "TestCalculateRequests/Pod-level resources are enabled, but not set: "
            "fallback to sum container requests"
        ),
    ),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=TWO_CONTAINERS, pod_requests_milli={RESOURCE_CPU: 800})],
        "",
        True,
        {TEST_POD: 800},
        None,
        id=(
            "TestCalculateRequests/Pod-level resources override container requests "
            "when feature enabled and pod resources specified"
        ),
    ),
    pytest.param(
        [
            PodInfo(
                name=TEST_POD,
                containers=(_container("container1"), _container("container2", 50)),
            )
        ],
        "",
        False,
        None,
        MISSING_ERROR,
        id=(
            "TestCalculateRequests/Fail if at least one of the containers is missing requests "
            "and pod-level feature/requests are not set"
        ),
    ),
    pytest.param(
        [
            PodInfo(
                name=TEST_POD,
                containers=(_container("container1"), _container("container2", 50)),
                pod_requests_milli={RESOURCE_CPU: 800},
            )
        ],
        "",
        True,
        {TEST_POD: 800},
        None,
        id=(
            "TestCalculateRequests/Pod-level resources override missing container requests "
            "when feature enabled and pod resources specified"
        ),
    ),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=TWO_CONTAINERS)],
        "container1",
        False,
        {TEST_POD: 100},
        None,
        id=(
            "TestCalculateRequests/Container: if a container name is specified, "
            "calculate requests only for that container"
        ),
    ),
    pytest.param(
        [PodInfo(name=TEST_POD, containers=TWO_CONTAINERS, pod_requests_milli={RESOURCE_CPU: 800})],
        "container1",
        True,
        {TEST_POD: 100},
        None,
        id=(
            "TestCalculateRequests/Container: if a container name is specified, calculate "
            "requests only for that container and ignore pod-level requests"
        ),
    ),
    pytest.param(
        [WITH_SIDECAR],
        "",
        False,
        {TEST_POD: 150},
        None,
        id="TestCalculateRequests/pod with restartable init containers",
    ),
]


@pytest.mark.parametrize(
    ("pods", "container", "enable_pod_level_resources", "expected_requests", "expected_error"),
    CALCULATE_REQUESTS_CASES,
)
def test_calculate_requests(
    pods: list[PodInfo],
    container: str,
    enable_pod_level_resources: bool,
    expected_requests: dict[str, int] | None,
    expected_error: str | None,
) -> None:
    """``TestCalculatePodRequests`` and ``TestCalculateRequests``: requests or the exact error."""
    if expected_error is not None:
        with pytest.raises(ReplicaCalculationError) as raised:
            calculate_pod_requests(
                pods,
                container,
                resource=RESOURCE_CPU,
                pod_level_resources_enabled=enable_pod_level_resources,
            )
        assert str(raised.value) == expected_error
        return
    requests = calculate_pod_requests(
        pods,
        container,
        resource=RESOURCE_CPU,
        pod_level_resources_enabled=enable_pod_level_resources,
    )
    assert requests == expected_requests


def test_calculate_pod_requests_from_containers_non_existent_container() -> None:
    """``TestCalculatePodRequestsFromContainers_NonExistentContainer``."""
    pod = PodInfo(name="test-pod", containers=(_container("container1", must_parse_milli("100m")),))
    with pytest.raises(ReplicaCalculationError) as raised:
        calculate_pod_requests_from_containers(pod, "non-existent-container", resource=RESOURCE_CPU)
    assert str(raised.value) == "container non-existent-container not found in Pod test-pod"
