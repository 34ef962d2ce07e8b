"""The straightforward replica-calculator path, kept as the oracle for the fast paths.

This is :mod:`hpa.core.replicas` as first ported (one loop per upstream function, Go's int64
wrap after every addition, the pod-name set built per call), before the grouping pass learned to
check the common all-ready case first and to sum requests while grouping. The differential tests
in ``test_replicas_differential.py`` compare the production calculators against it on random pod
sets; it is test code only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import (
    DEFAULT_CPU_INITIALIZATION_PERIOD_SECONDS,
    DEFAULT_INITIAL_READINESS_DELAY_SECONDS,
    GO_ZERO_TIME,
    MAX_INT32,
    MAX_INT64,
    RESOURCE_CPU,
    PodGroups,
    PodInfo,
    PodMetric,
    PodPhase,
    ReplicaCalculation,
    ReplicaCalculationError,
    ReplicaCalculationTrace,
    ReplicaOutcome,
    Tolerances,
    calculate_pod_requests,
)

MIN_INT32 = -(2**31)
MIN_INT64 = -(2**63)


def _wrap_int64(value: int) -> int:
    """Go's two's-complement int64 overflow."""
    return ((value + 2**63) % 2**64) - 2**63


def _wrap_int32(value: int) -> int:
    """Go's ``int32(x)`` of an integer: keep the low 32 bits, signed."""
    return ((value + 2**31) % 2**32) - 2**31


def _go_quo(numerator: int, denominator: int) -> int:
    """Go's integer ``/``: truncation toward zero (the operands are already int64)."""
    quotient = abs(numerator) // abs(denominator)
    negative = (numerator < 0) != (denominator < 0)
    return _wrap_int64(-quotient if negative else quotient)


def _go_fdiv(numerator: float, denominator: float) -> float:
    """Go's float64 ``/``: IEEE-754, so division by zero yields ``±Inf`` or ``NaN``."""
    if denominator != 0.0:
        return numerator / denominator
    if numerator == 0.0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def _go_float_to_int(value: float, *, low: int, high: int) -> int:
    """Go's float-to-integer conversion on amd64: truncate; NaN/Inf/out of range give ``low``."""
    if math.isnan(value) or math.isinf(value):
        return low
    truncated = math.trunc(value)
    if truncated < low or truncated > high:
        return low
    return truncated


def _go_int32(value: float) -> int:
    return _go_float_to_int(value, low=MIN_INT32, high=MAX_INT32)


def _go_int64(value: float) -> int:
    return _go_float_to_int(value, low=MIN_INT64, high=MAX_INT64)


def _go_ceil(value: float) -> float:
    """``math.Ceil`` (identity on NaN and ``±Inf``)."""
    if math.isnan(value) or math.isinf(value):
        return value
    return float(math.ceil(value))


# ------------------------------------------------------------------ utilization.go


def get_resource_utilization_ratio(
    metrics: Mapping[str, PodMetric],
    requests: Mapping[str, int],
    target_utilization: int,
) -> tuple[float, int, int]:
    """``GetResourceUtilizationRatio``: ``(usage_ratio, utilization_percent, raw_average_milli)``.

    Samples without a request (pods outside the pod list) are skipped. Raises
    :class:`ReplicaCalculationError` ``no metrics returned matched known pods`` when no sample
    matches a request.
    """
    metrics_total = 0
    requests_total = 0
    num_entries = 0
    for pod_name, metric in metrics.items():
        request = requests.get(pod_name)
        if request is None:
            # we check for missing requests elsewhere, so missing requests == extraneous metrics
            continue
        metrics_total = _wrap_int64(metrics_total + metric.value_milli)
        requests_total = _wrap_int64(requests_total + request)
        num_entries += 1
    if requests_total == 0:
        raise ReplicaCalculationError("no metrics returned matched known pods")
    utilization = _wrap_int32(_go_quo(_wrap_int64(metrics_total * 100), requests_total))
    usage_ratio = _go_fdiv(float(utilization), float(target_utilization))
    return usage_ratio, utilization, _go_quo(metrics_total, num_entries)


def get_metric_usage_ratio(
    metrics: Mapping[str, PodMetric], target_usage: int
) -> tuple[float, int]:
    """``GetMetricUsageRatio``: ``(usage_ratio, average_usage_milli)`` over every sample."""
    metrics_total = 0
    for metric in metrics.values():
        metrics_total = _wrap_int64(metrics_total + metric.value_milli)
    usage = _go_quo(metrics_total, len(metrics))
    return _go_fdiv(float(usage), float(target_usage)), usage


def group_pods(
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    *,
    resource: str,
    now: datetime,
    cpu_initialization_period_seconds: float = DEFAULT_CPU_INITIALIZATION_PERIOD_SECONDS,
    initial_readiness_delay_seconds: float = DEFAULT_INITIAL_READINESS_DELAY_SECONDS,
) -> PodGroups:
    """``groupPods``: sort pods into ready (counted), unready, missing and ignored.

    In order: deleted or failed pods are ignored; pending pods are unready; pods without a sample
    are missing; for ``cpu`` only, a pod without a Ready condition or start time is unready, a pod
    inside the CPU initialization period is unready when not Ready or when its sample's window
    began before the Ready transition, and an older pod is unready only when not Ready and never
    ready since start (``start + initial readiness delay`` after the transition). ``resource`` is
    ``""`` for custom metrics. Comparisons are strict, as Go's ``After``/``Before``.
    """
    cpu_initialization_period = timedelta(seconds=cpu_initialization_period_seconds)
    initial_readiness_delay = timedelta(seconds=initial_readiness_delay_seconds)
    ready_pod_count = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        if pod.deletion_timestamp is not None or pod.phase == PodPhase.FAILED:
            ignored.add(pod.name)
            continue
        # Pending pods are ignored.
        if pod.phase == PodPhase.PENDING:
            unready.add(pod.name)
            continue
        # Pods missing metrics.
        metric = metrics.get(pod.name)
        if metric is None:
            missing.add(pod.name)
            continue
        # Unready pods are ignored.
        if resource == RESOURCE_CPU and _cpu_sample_unready(
            pod,
            metric,
            now=now,
            cpu_initialization_period=cpu_initialization_period,
            initial_readiness_delay=initial_readiness_delay,
        ):
            unready.add(pod.name)
            continue
        ready_pod_count += 1
    return PodGroups(
        ready_pod_count=ready_pod_count,
        unready_pods=frozenset(unready),
        missing_pods=frozenset(missing),
        ignored_pods=frozenset(ignored),
    )


def _cpu_sample_unready(
    pod: PodInfo,
    metric: PodMetric,
    *,
    now: datetime,
    cpu_initialization_period: timedelta,
    initial_readiness_delay: timedelta,
) -> bool:
    condition = pod.ready_condition
    if condition is None or pod.start_time is None:
        return True
    if pod.start_time + cpu_initialization_period > now:
        # Pod still within possible initialisation period: ignore the sample if the pod is unready
        # or one window of metric wasn't collected since the last state transition.
        if condition.status == ConditionStatus.FALSE:
            return True
        window_end = condition.last_transition_time + timedelta(seconds=metric.window_seconds)
        return _sample_time(metric) < window_end
    # Ignore the sample if the pod is unready and it has never been ready.
    return (
        condition.status == ConditionStatus.FALSE
        and pod.start_time + initial_readiness_delay > condition.last_transition_time
    )


def _sample_time(metric: PodMetric) -> datetime:
    return GO_ZERO_TIME if metric.timestamp is None else metric.timestamp


def get_ready_pods_count(pods: Sequence[PodInfo]) -> int:
    """``getReadyPodsCount``: pods that are ``Running`` with ``Ready=True``.

    Raises ``no pods returned by selector while calculating replica count`` for an empty list.
    """
    if not pods:
        raise ReplicaCalculationError(
            "no pods returned by selector while calculating replica count"
        )
    return sum(
        1
        for pod in pods
        if pod.phase == PodPhase.RUNNING
        and pod.ready_condition is not None
        and pod.ready_condition.status == ConditionStatus.TRUE
    )


def _remove_metrics_for_pods(metrics: dict[str, PodMetric], pods: Iterable[str]) -> None:
    """``removeMetricsForPods``."""
    for pod in pods:
        metrics.pop(pod, None)


@dataclass(frozen=True, slots=True)
class _Decision:
    """The replica count a branch produced, its outcome and the pod count it multiplied by."""

    replica_count: int
    outcome: ReplicaOutcome
    pod_count: int | None = None


def _decide_rebalanced(
    *,
    current_replicas: int,
    usage_ratio: float,
    new_usage_ratio: float,
    sample_count: int,
    tolerances: Tolerances,
) -> _Decision:
    """The tail shared by ``GetResourceReplicas`` and ``calcPlainMetricReplicas``."""
    if tolerances.is_within(new_usage_ratio):
        # return the current replicas if the change would be too small
        return _Decision(current_replicas, ReplicaOutcome.WITHIN_TOLERANCE)
    if (usage_ratio < 1.0 and new_usage_ratio > 1.0) or (
        usage_ratio > 1.0 and new_usage_ratio < 1.0
    ):
        # return the current replicas if the new usage ratio would change the scale direction
        return _Decision(current_replicas, ReplicaOutcome.DIRECTION_FLIPPED)
    new_replicas = _go_int32(_go_ceil(new_usage_ratio * float(sample_count)))
    if (new_usage_ratio < 1.0 and new_replicas > current_replicas) or (
        new_usage_ratio > 1.0 and new_replicas < current_replicas
    ):
        # return the current replicas if the change of metrics length would change the direction
        return _Decision(current_replicas, ReplicaOutcome.REPLICA_COUNT_FLIPPED, sample_count)
    # the number of replicas considered is however many replicas factored into our calculation
    return _Decision(new_replicas, ReplicaOutcome.SCALED, sample_count)


def _decide_unbalanced(
    *, current_replicas: int, usage_ratio: float, ready_pod_count: int, tolerances: Tolerances
) -> _Decision:
    """The branch without unready pods on a scale-up and without missing pods."""
    if tolerances.is_within(usage_ratio):
        # return the current replicas if the change would be too small
        return _Decision(current_replicas, ReplicaOutcome.WITHIN_TOLERANCE)
    # if we don't have any unready or missing pods, we can calculate the new replica count now
    return _Decision(
        _go_int32(_go_ceil(usage_ratio * float(ready_pod_count))),
        ReplicaOutcome.SCALED,
        ready_pod_count,
    )


def _select_samples(
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    *,
    resource: str,
    now: datetime,
    cpu_initialization_period_seconds: float,
    initial_readiness_delay_seconds: float,
) -> tuple[PodGroups, dict[str, PodMetric]]:
    """List check, ``groupPods`` and ``removeMetricsForPods``, shared by the per-pod calculators."""
    if not pods:
        raise ReplicaCalculationError(
            "no pods returned by selector while calculating replica count"
        )
    groups = group_pods(
        pods,
        metrics,
        resource=resource,
        now=now,
        cpu_initialization_period_seconds=cpu_initialization_period_seconds,
        initial_readiness_delay_seconds=initial_readiness_delay_seconds,
    )
    samples = dict(metrics)
    _remove_metrics_for_pods(samples, groups.ignored_pods)
    _remove_metrics_for_pods(samples, groups.unready_pods)
    if not samples:
        raise ReplicaCalculationError(
            "did not receive metrics for targeted pods (pods might be unready)"
        )
    return groups, samples


def _superfluous(samples: Mapping[str, PodMetric], pods: Sequence[PodInfo]) -> frozenset[str]:
    return frozenset(samples) - {pod.name for pod in pods}


def get_resource_replicas(
    current_replicas: int,
    target_utilization: int,
    *,
    resource: str,
    tolerances: Tolerances,
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    timestamp: datetime | None,
    now: datetime,
    container: str = "",
    cpu_initialization_period_seconds: float = DEFAULT_CPU_INITIALIZATION_PERIOD_SECONDS,
    initial_readiness_delay_seconds: float = DEFAULT_INITIAL_READINESS_DELAY_SECONDS,
    pod_level_resources_enabled: bool = True,
) -> ReplicaCalculation:
    """``GetResourceReplicas``: Resource / ContainerResource metric with a Utilization target.

    ``metrics`` and ``timestamp`` are what the resource metrics client returned for ``resource``
    (and ``container``, for ContainerResource); ``pods`` are the pods the selector matched. The
    reported utilization and raw value are those before re-balancing, as upstream.
    """
    groups, samples = _select_samples(
        pods,
        metrics,
        resource=resource,
        now=now,
        cpu_initialization_period_seconds=cpu_initialization_period_seconds,
        initial_readiness_delay_seconds=initial_readiness_delay_seconds,
    )
    requests = calculate_pod_requests(
        pods,
        container,
        resource=resource,
        pod_level_resources_enabled=pod_level_resources_enabled,
    )
    usage_ratio, utilization, raw_utilization = get_resource_utilization_ratio(
        samples, requests, target_utilization
    )
    superfluous = _superfluous(samples, pods)

    scale_up_with_unready = bool(groups.unready_pods) and usage_ratio > 1.0
    new_usage_ratio: float | None = None
    fill_percent: int | None = None
    if not scale_up_with_unready and not groups.missing_pods:
        decision = _decide_unbalanced(
            current_replicas=current_replicas,
            usage_ratio=usage_ratio,
            ready_pod_count=groups.ready_pod_count,
            tolerances=tolerances,
        )
    else:
        if groups.missing_pods:
            if usage_ratio < 1.0:
                # on a scale-down, treat missing pods as using 100% (all) of the resource request
                # or the utilization target for targets higher than 100%
                fill_percent = max(100, target_utilization)
                for pod_name in groups.missing_pods:
                    samples[pod_name] = PodMetric(
                        value_milli=_go_quo(_wrap_int64(requests[pod_name] * fill_percent), 100)
                    )
            elif usage_ratio > 1.0:
                # on a scale-up, treat missing pods as using 0% of the resource request
                fill_percent = 0
                for pod_name in groups.missing_pods:
                    samples[pod_name] = PodMetric(value_milli=0)
        if scale_up_with_unready:
            # on a scale-up, treat unready pods as using 0% of the resource request
            for pod_name in groups.unready_pods:
                samples[pod_name] = PodMetric(value_milli=0)
        # re-run the utilization calculation with our new numbers
        new_usage_ratio, _, _ = get_resource_utilization_ratio(
            samples, requests, target_utilization
        )
        decision = _decide_rebalanced(
            current_replicas=current_replicas,
            usage_ratio=usage_ratio,
            new_usage_ratio=new_usage_ratio,
            sample_count=len(samples),
            tolerances=tolerances,
        )
    return ReplicaCalculation(
        replica_count=decision.replica_count,
        usage_milli=raw_utilization,
        utilization=utilization,
        timestamp=timestamp,
        trace=ReplicaCalculationTrace(
            tolerances=tolerances,
            usage_ratio=usage_ratio,
            outcome=decision.outcome,
            ready_pod_count=groups.ready_pod_count,
            unready_pods=groups.unready_pods,
            missing_pods=groups.missing_pods,
            ignored_pods=groups.ignored_pods,
            superfluous_metrics=superfluous,
            rebalanced_usage_ratio=new_usage_ratio,
            unready_pods_counted_as_zero=scale_up_with_unready,
            missing_pods_fill_percent=fill_percent,
            pod_count=decision.pod_count,
        ),
    )


def _calc_plain_metric_replicas(
    current_replicas: int,
    target_usage: int,
    *,
    resource: str,
    tolerances: Tolerances,
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    timestamp: datetime | None,
    now: datetime,
    cpu_initialization_period_seconds: float,
    initial_readiness_delay_seconds: float,
) -> ReplicaCalculation:
    """``calcPlainMetricReplicas``: per-pod values compared with a per-pod average target."""
    groups, samples = _select_samples(
        pods,
        metrics,
        resource=resource,
        now=now,
        cpu_initialization_period_seconds=cpu_initialization_period_seconds,
        initial_readiness_delay_seconds=initial_readiness_delay_seconds,
    )
    usage_ratio, usage = get_metric_usage_ratio(samples, target_usage)
    superfluous = _superfluous(samples, pods)

    scale_up_with_unready = bool(groups.unready_pods) and usage_ratio > 1.0
    new_usage_ratio: float | None = None
    fill_milli: int | None = None
    if not scale_up_with_unready and not groups.missing_pods:
        decision = _decide_unbalanced(
            current_replicas=current_replicas,
            usage_ratio=usage_ratio,
            ready_pod_count=groups.ready_pod_count,
            tolerances=tolerances,
        )
    else:
        if groups.missing_pods:
            if usage_ratio < 1.0:
                # on a scale-down, treat missing pods as using exactly the target amount
                fill_milli = target_usage
            elif usage_ratio > 1.0:
                # on a scale-up, treat missing pods as using 0% of the resource request
                fill_milli = 0
            if fill_milli is not None:
                for pod_name in groups.missing_pods:
                    samples[pod_name] = PodMetric(value_milli=fill_milli)
        if scale_up_with_unready:
            # on a scale-up, treat unready pods as using 0% of the resource request
            for pod_name in groups.unready_pods:
                samples[pod_name] = PodMetric(value_milli=0)
        # re-run the usage calculation with our new numbers
        new_usage_ratio, _ = get_metric_usage_ratio(samples, target_usage)
        decision = _decide_rebalanced(
            current_replicas=current_replicas,
            usage_ratio=usage_ratio,
            new_usage_ratio=new_usage_ratio,
            sample_count=len(samples),
            tolerances=tolerances,
        )
    return ReplicaCalculation(
        replica_count=decision.replica_count,
        usage_milli=usage,
        timestamp=timestamp,
        trace=ReplicaCalculationTrace(
            tolerances=tolerances,
            usage_ratio=usage_ratio,
            outcome=decision.outcome,
            ready_pod_count=groups.ready_pod_count,
            unready_pods=groups.unready_pods,
            missing_pods=groups.missing_pods,
            ignored_pods=groups.ignored_pods,
            superfluous_metrics=superfluous,
            rebalanced_usage_ratio=new_usage_ratio,
            unready_pods_counted_as_zero=scale_up_with_unready,
            missing_pods_fill_milli=fill_milli,
            pod_count=decision.pod_count,
        ),
    )
