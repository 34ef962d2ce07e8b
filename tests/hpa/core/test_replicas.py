"""Properties and edge cases of :mod:`hpa.core.replicas` beyond the upstream parity table.

The parity table (``tests/parity/test_replica_calculator.py``) pins upstream's examples; here
hypothesis checks the invariants an operator relies on for arbitrary pods and samples: a ratio
within tolerance keeps the current replica count, re-balancing missing/unready pods never scales
against the observed direction, the result does not depend on pod or sample order, and grouping
partitions the pods. Unit tests pin the strict time comparisons, Go's integer and float arithmetic,
the pod-level request aggregation and the trace.
"""

from __future__ import annotations

import ctypes
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import (
    MAX_INT32,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    RESTART_POLICY_ALWAYS,
    ContainerInfo,
    PodCondition,
    PodInfo,
    PodMetric,
    PodPhase,
    ReplicaCalculation,
    ReplicaCalculationError,
    ReplicaOutcome,
    Tolerances,
    calculate_pod_requests,
    calculate_pod_requests_from_containers,
    get_external_metric_replicas,
    get_metric_replicas,
    get_metric_usage_ratio,
    get_object_metric_replicas,
    get_object_per_pod_metric_replicas,
    get_resource_replicas,
    get_resource_utilization_ratio,
    group_pods,
)

NOW = datetime(2026, 5, 1, 8, 30, tzinfo=UTC)
INIT_SECONDS = 300.0
DELAY_SECONDS = 30.0


def _ready_pod(name: str, request_milli: int = 1000, **changes: object) -> PodInfo:
    pod = PodInfo(
        name=name,
        ready_condition=PodCondition(
            status=ConditionStatus.TRUE, last_transition_time=NOW - timedelta(hours=1)
        ),
        start_time=NOW - timedelta(hours=1),
        containers=(ContainerInfo(name="app", requests_milli={RESOURCE_CPU: request_milli}),),
    )
    return replace(pod, **changes)  # type: ignore[arg-type]


def _sample(value_milli: int, *, age_seconds: float = 0.0) -> PodMetric:
    return PodMetric(
        value_milli=value_milli, timestamp=NOW - timedelta(seconds=age_seconds), window_seconds=60.0
    )


# ------------------------------------------------------------------ strategies


_PHASES = [PodPhase.RUNNING] * 5 + [PodPhase.PENDING, PodPhase.FAILED, PodPhase.SUCCEEDED]
_READY_STATUSES: list[ConditionStatus | None] = [None, *ConditionStatus]

_POD_FIELDS = st.tuples(
    st.sampled_from(_PHASES),
    st.sampled_from(_READY_STATUSES),
    st.integers(min_value=0, max_value=900),  # started seconds ago
    st.integers(min_value=0, max_value=900),  # became (un)ready seconds ago, capped at start
    st.integers(min_value=0, max_value=7),  # 0: being deleted
    st.integers(min_value=1, max_value=4000),  # cpu request
    st.integers(min_value=0, max_value=4),  # 0: no sample
    st.integers(min_value=0, max_value=10_000),  # sample value
    st.integers(min_value=0, max_value=120),  # sample age
)


def _build(
    fields: list[tuple[PodPhase, ConditionStatus | None, int, int, int, int, int, int, int]],
    superfluous: int | None,
) -> tuple[list[PodInfo], dict[str, PodMetric]]:
    pods: list[PodInfo] = []
    samples: dict[str, PodMetric] = {}
    for i, (
        phase,
        status,
        started,
        transitioned,
        deleting,
        request,
        sampled,
        value,
        age,
    ) in enumerate(fields):
        name = f"pod-{i}"
        condition = None
        if status is not None:
            condition = PodCondition(
                status=status,
                last_transition_time=NOW - timedelta(seconds=min(transitioned, started)),
            )
        pods.append(
            PodInfo(
                name=name,
                phase=phase,
                ready_condition=condition,
                start_time=NOW - timedelta(seconds=started),
                deletion_timestamp=NOW if deleting == 0 else None,
                containers=(ContainerInfo(name="app", requests_milli={RESOURCE_CPU: request}),),
            )
        )
        if sampled:
            samples[name] = _sample(value, age_seconds=age)
    if superfluous is not None:
        samples["not-selected"] = _sample(superfluous)
    return pods, samples


_PODS_AND_SAMPLES = st.builds(
    _build,
    st.lists(_POD_FIELDS, min_size=1, max_size=8),
    st.none() | st.integers(min_value=0, max_value=10_000),
)
"""Pods in every phase and readiness state, some without samples, maybe a foreign sample."""

_READY_PODS_AND_SAMPLES = st.lists(
    st.tuples(st.integers(min_value=1, max_value=4000), st.integers(min_value=0, max_value=10_000)),
    min_size=1,
    max_size=8,
).map(
    lambda fields: (
        [_ready_pod(f"pod-{i}", request) for i, (request, _) in enumerate(fields)],
        {f"pod-{i}": _sample(value) for i, (_, value) in enumerate(fields)},
    )
)
"""Running, long-ready pods, each with a fresh sample."""


_TOLERANCES = st.builds(
    Tolerances,
    scale_down=st.floats(min_value=0.0, max_value=0.5),
    scale_up=st.floats(min_value=0.0, max_value=0.5),
)


def _resource(
    pods: list[PodInfo],
    samples: dict[str, PodMetric],
    current: int,
    target: int,
    tolerances: Tolerances,
) -> ReplicaCalculation | None:
    try:
        return get_resource_replicas(
            current,
            target,
            resource=RESOURCE_CPU,
            tolerances=tolerances,
            pods=pods,
            metrics=samples,
            timestamp=NOW,
            now=NOW,
            cpu_initialization_period_seconds=INIT_SECONDS,
            initial_readiness_delay_seconds=DELAY_SECONDS,
        )
    except ReplicaCalculationError:
        return None


def _plain(
    pods: list[PodInfo],
    samples: dict[str, PodMetric],
    current: int,
    target: int,
    tolerances: Tolerances,
) -> ReplicaCalculation | None:
    try:
        return get_metric_replicas(
            current,
            target,
            tolerances=tolerances,
            pods=pods,
            metrics=samples,
            timestamp=NOW,
            now=NOW,
        )
    except ReplicaCalculationError:
        return None


def _check_direction(result: ReplicaCalculation, current: int) -> None:
    """Within tolerance keeps current; re-balancing never scales against the observed ratio."""
    trace = result.trace
    deciding = trace.usage_ratio
    if trace.rebalanced_usage_ratio is not None:
        deciding = trace.rebalanced_usage_ratio
        if trace.usage_ratio > 1.0:
            assert result.replica_count >= current
        if trace.usage_ratio < 1.0:
            assert result.replica_count <= current
    if trace.tolerances.is_within(deciding):
        assert result.replica_count == current
        assert trace.outcome is ReplicaOutcome.WITHIN_TOLERANCE
    if trace.outcome is not ReplicaOutcome.SCALED:
        assert result.replica_count == current


# ------------------------------------------------------------------ properties


@settings(max_examples=1000, deadline=None)
@given(
    data=_PODS_AND_SAMPLES,
    current=st.integers(min_value=0, max_value=12),
    target=st.integers(min_value=1, max_value=300),
    tolerances=_TOLERANCES,
)
def test_resource_replicas_keep_current_within_tolerance_and_never_flip(
    data: tuple[list[PodInfo], dict[str, PodMetric]],
    current: int,
    target: int,
    tolerances: Tolerances,
) -> None:
    pods, samples = data
    result = _resource(pods, samples, current, target, tolerances)
    if result is not None:
        _check_direction(result, current)


@settings(max_examples=1000, deadline=None)
@given(
    data=_PODS_AND_SAMPLES,
    current=st.integers(min_value=0, max_value=12),
    target=st.integers(min_value=1, max_value=10_000),
    tolerances=_TOLERANCES,
)
def test_pods_metric_replicas_keep_current_within_tolerance_and_never_flip(
    data: tuple[list[PodInfo], dict[str, PodMetric]],
    current: int,
    target: int,
    tolerances: Tolerances,
) -> None:
    pods, samples = data
    result = _plain(pods, samples, current, target, tolerances)
    if result is None:
        return
    _check_direction(result, current)
    rebalanced = result.trace.rebalanced_usage_ratio
    if rebalanced is not None:
        # missing pods count at the target on a scale-down and 0 on a scale-up, unready pods at 0
        # on a scale-up: re-balancing only ever pulls the ratio towards 1
        if result.trace.usage_ratio < 1.0:
            assert rebalanced >= result.trace.usage_ratio
        if result.trace.usage_ratio > 1.0:
            assert rebalanced <= result.trace.usage_ratio


@settings(max_examples=1000, deadline=None)
@given(
    data=_READY_PODS_AND_SAMPLES,
    target=st.integers(min_value=1, max_value=300),
    tolerances=_TOLERANCES,
)
def test_all_pods_ready_scales_in_the_direction_of_the_ratio(
    data: tuple[list[PodInfo], dict[str, PodMetric]], target: int, tolerances: Tolerances
) -> None:
    pods, samples = data
    current = len(pods)
    result = _resource(pods, samples, current, target, tolerances)
    if result is None:
        return
    ratio = result.trace.usage_ratio
    assert result.trace.rebalanced_usage_ratio is None
    assert result.trace.ready_pod_count == current
    if ratio > 1.0 + tolerances.scale_up:
        assert result.replica_count > current
    elif ratio < 1.0 - tolerances.scale_down:
        assert result.replica_count <= current
    else:
        assert result.replica_count == current


@settings(max_examples=1000, deadline=None)
@given(
    data=_PODS_AND_SAMPLES,
    current=st.integers(min_value=0, max_value=12),
    target=st.integers(min_value=1, max_value=300),
    tolerances=_TOLERANCES,
    seed=st.randoms(use_true_random=False),
)
def test_result_does_not_depend_on_pod_or_sample_order(
    data: tuple[list[PodInfo], dict[str, PodMetric]],
    current: int,
    target: int,
    tolerances: Tolerances,
    seed: random.Random,
) -> None:
    pods, samples = data
    shuffled_pods = list(pods)
    shuffled_names = list(samples)
    seed.shuffle(shuffled_pods)
    seed.shuffle(shuffled_names)
    shuffled_samples = {name: samples[name] for name in shuffled_names}
    for calculate in (_resource, _plain):
        first = calculate(pods, samples, current, target, tolerances)
        again = calculate(pods, samples, current, target, tolerances)
        reordered = calculate(shuffled_pods, shuffled_samples, current, target, tolerances)
        assert first == again == reordered


@settings(max_examples=1000, deadline=None)
@given(data=_PODS_AND_SAMPLES, resource=st.sampled_from([RESOURCE_CPU, RESOURCE_MEMORY, ""]))
def test_group_pods_partitions_the_pods(
    data: tuple[list[PodInfo], dict[str, PodMetric]], resource: str
) -> None:
    pods, samples = data
    groups = group_pods(pods, samples, resource=resource, now=NOW)
    buckets = [groups.unready_pods, groups.missing_pods, groups.ignored_pods]
    assert sum(len(bucket) for bucket in buckets) + groups.ready_pod_count == len(pods)
    assert not (groups.unready_pods & groups.missing_pods)
    assert not (groups.unready_pods & groups.ignored_pods)
    assert not (groups.missing_pods & groups.ignored_pods)
    assert groups.missing_pods == {pod.name for pod in pods} - set(samples) - (
        groups.unready_pods | groups.ignored_pods
    )
    if resource != RESOURCE_CPU:
        # readiness only matters for CPU samples: only pending pods are unready
        assert groups.unready_pods == {
            pod.name
            for pod in pods
            if pod.phase is PodPhase.PENDING and pod.deletion_timestamp is None
        }


@settings(max_examples=1000, deadline=None)
@given(
    usage=st.integers(min_value=0, max_value=10**12),
    target=st.integers(min_value=1, max_value=10**9),
    current=st.integers(min_value=0, max_value=50),
    tolerances=_TOLERANCES,
)
def test_object_value_target_from_zero_ignores_tolerance(
    usage: int, target: int, current: int, tolerances: Tolerances
) -> None:
    pods = [_ready_pod(f"pod-{i}") for i in range(max(current, 1))]
    result = get_object_metric_replicas(
        current, target, usage=usage, tolerances=tolerances, pods=pods
    )
    ratio = usage / target
    if current == 0:
        assert result.trace.outcome is ReplicaOutcome.SCALED_FROM_ZERO
        assert result.replica_count == min(-(-usage // target), MAX_INT32) or ratio > MAX_INT32
    elif tolerances.is_within(ratio):
        assert result.replica_count == current
    assert result.timestamp is None
    assert result.usage_milli == usage


# ------------------------------------------------------------------ time boundaries


def test_pod_exactly_at_the_end_of_cpu_initialization_counts_as_initialized() -> None:
    # startTime + period is not After(now): the sample is judged by the after-init rule
    pod = _ready_pod("web", start_time=NOW - timedelta(seconds=INIT_SECONDS))
    fresh_transition = PodCondition(status=ConditionStatus.TRUE, last_transition_time=NOW)
    pod = replace(pod, ready_condition=fresh_transition)
    groups = group_pods(
        [pod],
        {"web": _sample(500)},
        resource=RESOURCE_CPU,
        now=NOW,
        cpu_initialization_period_seconds=INIT_SECONDS,
    )
    assert groups.ready_pod_count == 1
    one_second_younger = replace(pod, start_time=NOW - timedelta(seconds=INIT_SECONDS - 1))
    groups = group_pods(
        [one_second_younger],
        {"web": _sample(500)},
        resource=RESOURCE_CPU,
        now=NOW,
        cpu_initialization_period_seconds=INIT_SECONDS,
    )
    assert groups.unready_pods == {"web"}


def test_sample_whose_window_starts_exactly_at_the_ready_transition_is_fresh() -> None:
    transition = NOW - timedelta(seconds=60)
    pod = _ready_pod(
        "web",
        start_time=NOW - timedelta(seconds=90),
        ready_condition=PodCondition(status=ConditionStatus.TRUE, last_transition_time=transition),
    )
    at_boundary = PodMetric(value_milli=1, timestamp=NOW, window_seconds=60.0)
    assert group_pods([pod], {"web": at_boundary}, resource=RESOURCE_CPU, now=NOW).unready_pods == (
        frozenset()
    )
    too_early = PodMetric(value_milli=1, timestamp=NOW - timedelta(seconds=1), window_seconds=60.0)
    assert group_pods([pod], {"web": too_early}, resource=RESOURCE_CPU, now=NOW).unready_pods == {
        "web"
    }


# ------------------------------------------------------------------ Go arithmetic


def _go_int64(value: int) -> int:
    return ctypes.c_int64(value).value


def test_average_of_negative_samples_truncates_toward_zero_like_go() -> None:
    ratio, usage = get_metric_usage_ratio(
        {"a": PodMetric(value_milli=-5), "b": PodMetric(value_milli=0)}, 10
    )
    assert usage == -2  # Go: -5/2 == -2 (Python floor division would give -3)
    assert ratio == -0.2


def test_utilization_wraps_int64_like_go() -> None:
    value = 2**61 + 3
    _, utilization, raw = get_resource_utilization_ratio(
        {"a": PodMetric(value_milli=value)}, {"a": 7}, 100
    )
    percent = _go_int64(value * 100)  # metricsTotal * 100 overflows int64
    assert percent == -(2**63) + 300
    quotient = -((2**63 - 300) // 7)  # Go's "/" truncates toward zero
    assert utilization == ctypes.c_int32(quotient).value  # int32() keeps the low 32 bits
    assert utilization != 0
    assert raw == value


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=8),
    target=st.integers(min_value=1, max_value=500),
)
def test_sums_wrap_like_go_wrapping_every_addition(values: list[int], target: int) -> None:
    samples = {f"p{i}": PodMetric(value_milli=value) for i, value in enumerate(values)}
    go_total = 0
    for value in values:
        go_total = _go_int64(go_total + value)
    _, usage = get_metric_usage_ratio(samples, target)
    assert usage == _go_quo(go_total, len(values))


def _go_quo(numerator: int, denominator: int) -> int:
    quotient = abs(numerator) // abs(denominator)
    return _go_int64(-quotient if (numerator < 0) != (denominator < 0) else quotient)


def test_object_per_pod_with_zero_status_replicas_follows_go_division_by_zero() -> None:
    result = get_object_per_pod_metric_replicas(
        0, 1000, usage=5000, timestamp=NOW, tolerances=Tolerances()
    )
    # ratio is +Inf (never within tolerance): ceil(usage / target) replicas
    assert result.replica_count == 5
    assert result.trace.outcome is ReplicaOutcome.SCALED
    # int64(+Inf) is the amd64 "integer indefinite" value
    assert result.usage_milli == -(2**63)


def test_external_value_sums_all_series_and_scales_ready_pods() -> None:
    pods = [_ready_pod("a"), _ready_pod("b"), _ready_pod("c", phase=PodPhase.PENDING)]
    result = get_external_metric_replicas(
        2, 1000, values=[1500, 1500, 1000], tolerances=Tolerances(), pods=pods
    )
    assert result.usage_milli == 4000
    assert result.replica_count == 8  # ratio 4.0 x 2 Running+Ready pods
    assert result.trace.ready_pod_count == 2


def test_object_value_target_without_pods_reports_upstream_error() -> None:
    with pytest.raises(ReplicaCalculationError) as raised:
        get_object_metric_replicas(3, 100, usage=500, tolerances=Tolerances(), pods=[])
    assert str(raised.value) == (
        "unable to calculate ready pods: "
        "no pods returned by selector while calculating replica count"
    )


def test_tolerances_render_like_upstream() -> None:
    assert str(Tolerances(scale_down=0.1, scale_up=0.05)) == "[down:10.0%, up:5.0%]"


# ------------------------------------------------------------------ requests


def test_pod_level_requests_fall_back_to_aggregated_containers_plus_overhead() -> None:
    pod = PodInfo(
        name="web",
        containers=(
            ContainerInfo(name="app", requests_milli={RESOURCE_CPU: 100}),
            ContainerInfo(name="proxy", requests_milli={RESOURCE_CPU: 50}),
        ),
        init_containers=(
            ContainerInfo(name="migrate", requests_milli={RESOURCE_CPU: 400}),
            ContainerInfo(
                name="log-shipper",
                requests_milli={RESOURCE_CPU: 20},
                restart_policy=RESTART_POLICY_ALWAYS,
            ),
        ),
        # pod-level requests only for memory: cpu comes from the containers
        pod_requests_milli={RESOURCE_MEMORY: 512 * 1024**2 * 1000},
        overhead_milli={RESOURCE_CPU: 10},
    )
    # max(containers 100+50 plus sidecar 20, init container 400 plus the sidecar before it 0)
    # = 400, plus overhead 10
    assert calculate_pod_requests([pod], resource=RESOURCE_CPU) == {"web": 410}
    # with the gate off, the sum over containers and sidecars (no overhead, no init max)
    assert calculate_pod_requests(
        [pod], resource=RESOURCE_CPU, pod_level_resources_enabled=False
    ) == {"web": 170}


def test_container_requests_stop_at_a_container_named_empty_as_upstream() -> None:
    """``calculatePodRequestsFromContainers`` with no container name returns at the first
    container whose name is ``""`` (``container == c.Name``): later containers are not summed."""
    pod = PodInfo(
        name="web",
        containers=(
            ContainerInfo("app", {RESOURCE_CPU: 100}),
            ContainerInfo("", {RESOURCE_CPU: 20}),
            ContainerInfo("late", {}),
        ),
    )
    assert calculate_pod_requests([pod], resource=RESOURCE_CPU) == {"web": 120}
    unnamed_first = replace(pod, containers=(ContainerInfo("", {}), pod.containers[0]))
    with pytest.raises(ReplicaCalculationError) as raised:
        calculate_pod_requests([unnamed_first], resource=RESOURCE_CPU)
    assert str(raised.value) == "missing request for cpu in container  of Pod web"


_CONTAINERS = st.builds(
    ContainerInfo,
    name=st.sampled_from(["", "app", "log", "proxy"]),
    requests_milli=st.dictionaries(
        st.sampled_from([RESOURCE_CPU, RESOURCE_MEMORY, "gpu"]), st.integers(0, 10**6)
    ),
    restart_policy=st.sampled_from([None, RESTART_POLICY_ALWAYS]),
)


@settings(max_examples=300, deadline=None)
@given(
    containers=st.lists(_CONTAINERS, max_size=4),
    init_containers=st.lists(_CONTAINERS, max_size=3),
    resource=st.sampled_from([RESOURCE_CPU, RESOURCE_MEMORY, "gpu", "ephemeral-storage"]),
)
def test_requests_computed_when_the_pod_is_built_are_what_the_container_walk_gives(
    containers: list[ContainerInfo], init_containers: list[ContainerInfo], resource: str
) -> None:
    pod = PodInfo(name="web", containers=tuple(containers), init_containers=tuple(init_containers))
    try:
        walked: int | str = calculate_pod_requests_from_containers(pod, "", resource=resource)
    except ReplicaCalculationError as error:
        walked = str(error)
    try:
        requested: int | str = calculate_pod_requests([pod], resource=resource)["web"]
    except ReplicaCalculationError as error:
        requested = str(error)
    assert requested == walked
    assert pod.container_requests_milli.get(resource, walked) == walked


def test_pod_level_request_missing_for_resource_reports_upstream_error() -> None:
    pod = PodInfo(name="web", pod_requests_milli={RESOURCE_MEMORY: 1000})
    with pytest.raises(ReplicaCalculationError) as raised:
        calculate_pod_requests([pod], resource=RESOURCE_CPU)
    assert str(raised.value) == "missing pod-level request for cpu in Pod web"


# ------------------------------------------------------------------ trace


def test_trace_explains_a_rebalanced_scale_up() -> None:
    pods = [
        _ready_pod("busy"),
        _ready_pod(
            "starting",
            start_time=NOW - timedelta(seconds=20),
            ready_condition=PodCondition(
                status=ConditionStatus.TRUE, last_transition_time=NOW - timedelta(seconds=10)
            ),
        ),
        _ready_pod("no-metrics"),
        _ready_pod("gone", deletion_timestamp=NOW),
    ]
    samples = {"busy": _sample(2000), "starting": _sample(1500), "gone": _sample(900)}
    result = get_resource_replicas(
        4,
        50,
        resource=RESOURCE_CPU,
        tolerances=Tolerances(),
        pods=pods,
        metrics=samples,
        timestamp=NOW,
        now=NOW,
    )
    trace = result.trace
    assert result.utilization == 200
    assert trace.usage_ratio == 4.0
    assert trace.ready_pod_count == 1
    assert trace.unready_pods == {"starting"}
    assert trace.missing_pods == {"no-metrics"}
    assert trace.ignored_pods == {"gone"}
    assert trace.unready_pods_counted_as_zero
    assert trace.missing_pods_fill_percent == 0
    # 2000 / (3 x 1000) of request = 66% -> ratio 1.32 over 3 samples
    assert trace.rebalanced_usage_ratio == 66 / 50
    assert trace.pod_count == 3
    assert (result.replica_count, trace.outcome) == (4, ReplicaOutcome.SCALED)
