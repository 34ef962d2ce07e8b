"""Replica calculation for every HPA metric source: a port of the upstream replica calculator.

Upstream counterparts (kubernetes/kubernetes):

* ``pkg/controller/podautoscaler/replica_calculator.go``, in its order: ``Tolerances`` /
  ``isWithin``, ``GetResourceReplicas``, ``GetRawResourceReplicas``, ``GetMetricReplicas``,
  ``calcPlainMetricReplicas``, ``GetObjectMetricReplicas``, ``getUsageRatioReplicaCount``,
  ``GetObjectPerPodMetricReplicas``, ``getReadyPodsCount``, ``GetExternalMetricReplicas``,
  ``GetExternalPerPodMetricReplicas``, ``groupPods``, ``calculateRequests`` (here
  ``calculate_pod_requests``, its name in older releases), ``calculatePodLevelRequests``,
  ``calculatePodRequestsFromContainers``, ``removeMetricsForPods``;
* ``pkg/controller/podautoscaler/metrics/utilization.go``: ``GetResourceUtilizationRatio``,
  ``GetMetricUsageRatio``;
* ``pkg/controller/podautoscaler/metrics/interfaces.go``: ``PodMetric`` / ``PodMetricsInfo``;
* ``k8s.io/component-helpers/resource``: ``IsPodLevelRequestsSet``, ``PodRequests`` and
  ``AggregateContainerRequests`` (what ``calculatePodLevelRequests`` reads).

Shape of the port. Upstream's calculator calls a metrics client and a pod lister; here the caller
(the decision layer) fetches first and passes the observations in: the pod list (:class:`PodInfo`,
built once per pod by the informer), the per-pod samples (:class:`PodMetric`, already shaped the
way ``metrics/client.go`` shapes them: a pod's resource value is the sum over its containers, or
the named container's value), the metric's timestamp, and ``now``. Fetch errors (including "no
metrics returned from ... metrics API") are the caller's; every error raised *after* the fetch is
raised here as a :class:`ReplicaCalculationError` carrying upstream's message text. Each
calculator returns a frozen :class:`ReplicaCalculation` with a :class:`ReplicaCalculationTrace`
that says which pods were set aside and why, the usage ratio before and after re-balancing, and
which branch decided. Upstream writes the list check, ``groupPods`` with ``removeMetricsForPods``,
and the tolerance/direction tail out in both ``GetResourceReplicas`` and
``calcPlainMetricReplicas``; here each is one private helper that both call.

Arithmetic is Go's, so results are bit-identical: quantities are ``int`` milli-units wrapped to
int64 where Go sums them (wrapping the exact sum once equals Go's wrap after every addition, since
wrapping is reduction modulo 2**64), utilization is an int32 percentage from truncating integer
division, integer division truncates toward zero, the usage ratio is an IEEE-754 double computed
with the same operations in the same order, float division by zero gives ``±Inf``/``NaN`` as in
Go, and a float-to-integer conversion that Go leaves implementation-defined (NaN, ``±Inf`` or out
of range) gives what the amd64 build of the controller gives (the "integer indefinite" value
``MinInt32`` / ``MinInt64``). Go's ``time.Time`` zero value ("no timestamp") is ``None``.

Feature gates read by this code are parameters: ``PodLevelResources``
(``pod_level_resources_enabled``, on by default as upstream since it went beta);
``HPAConfigurableTolerance`` is applied by the caller when it derives the :class:`Tolerances`.

Deliberate deviation (``resize_aware``, on by default; off is upstream's behaviour): during an
in-place resize, a container's request is what the kubelet applied
(``status.containerStatuses[].resources.requests``, :attr:`ContainerInfo.applied_requests_milli`)
rather than the new spec, so utilization is measured against the resources the container has
(kubernetes/kubernetes#142155). See ``docs/hpa-core.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from hpa.core.conditions import ConditionStatus

__all__ = [
    "DEFAULT_CPU_INITIALIZATION_PERIOD_SECONDS",
    "DEFAULT_INITIAL_READINESS_DELAY_SECONDS",
    "DEFAULT_TOLERANCE",
    "GO_ZERO_TIME",
    "MAX_INT32",
    "MAX_INT64",
    "RESOURCE_CPU",
    "RESOURCE_MEMORY",
    "RESTART_POLICY_ALWAYS",
    "ContainerInfo",
    "PodCondition",
    "PodGroups",
    "PodInfo",
    "PodMetric",
    "PodPhase",
    "ReplicaCalculation",
    "ReplicaCalculationError",
    "ReplicaCalculationTrace",
    "ReplicaOutcome",
    "Tolerances",
    "calculate_pod_level_requests",
    "calculate_pod_requests",
    "calculate_pod_requests_from_containers",
    "get_external_metric_replicas",
    "get_external_per_pod_metric_replicas",
    "get_metric_replicas",
    "get_metric_usage_ratio",
    "get_object_metric_replicas",
    "get_object_per_pod_metric_replicas",
    "get_raw_resource_replicas",
    "get_ready_pods_count",
    "get_resource_replicas",
    "get_resource_utilization_ratio",
    "group_pods",
    "is_pod_level_requests_set",
    "is_supported_pod_level_resource",
]

DEFAULT_TOLERANCE = 0.1
"""``--horizontal-pod-autoscaler-tolerance`` default (ratio, both directions)."""
DEFAULT_CPU_INITIALIZATION_PERIOD_SECONDS = 300.0
"""``--horizontal-pod-autoscaler-cpu-initialization-period`` default (5 min), in seconds."""
DEFAULT_INITIAL_READINESS_DELAY_SECONDS = 30.0
"""``--horizontal-pod-autoscaler-initial-readiness-delay`` default (30 s), in seconds."""

RESOURCE_CPU = "cpu"
"""``v1.ResourceCPU``: the only resource whose samples are filtered by readiness."""
RESOURCE_MEMORY = "memory"
"""``v1.ResourceMemory``."""
RESTART_POLICY_ALWAYS = "Always"
"""``v1.ContainerRestartPolicyAlways``: an init container with it is a sidecar."""

GO_ZERO_TIME = datetime.min.replace(tzinfo=UTC)
"""Go's zero ``time.Time`` (0001-01-01 UTC): what an unset timestamp compares as."""

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)

_SUPPORTED_POD_LEVEL_RESOURCES = frozenset({RESOURCE_CPU, RESOURCE_MEMORY})
_HUGE_PAGES_PREFIX = "hugepages-"


class ReplicaCalculationError(ValueError):
    """An error the upstream calculator returns; ``str(error)`` is upstream's message text."""


class PodPhase(StrEnum):
    """``v1.PodPhase``."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class PodCondition:
    """The pod's ``Ready`` condition (``v1.PodCondition`` with ``Type: Ready``)."""

    status: ConditionStatus
    last_transition_time: datetime


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    """One container of a pod spec, as far as requests go.

    ``requests_milli`` maps a resource name (``cpu``, ``memory``, ...) to
    ``Quantity.MilliValue()`` of its request; a resource without a request is absent.
    ``restart_policy`` is the container-level ``restartPolicy`` (only init containers have one;
    ``Always`` makes an init container a restartable sidecar).
    """

    name: str
    requests_milli: Mapping[str, int] = field(default_factory=dict)
    restart_policy: str | None = None
    applied_requests_milli: Mapping[str, int] | None = None
    """``status.containerStatuses[].resources.requests``: what the kubelet applied (``None`` when
    the status reports no resources). It differs from ``requests_milli`` while a resize is in
    progress."""

    @property
    def resizing(self) -> bool:
        """The kubelet reports requests that differ from the spec's (a resize in progress)."""
        applied = self.applied_requests_milli
        return applied is not None and any(
            applied.get(name, value) != value for name, value in self.requests_milli.items()
        )

    def applied(self) -> ContainerInfo:
        """This container with the applied requests in place of the spec's (per resource; a
        resource the status does not report keeps its spec request)."""
        applied = self.applied_requests_milli or {}
        requests = {name: applied.get(name, value) for name, value in self.requests_milli.items()}
        return ContainerInfo(self.name, requests, self.restart_policy, self.applied_requests_milli)


@dataclass(frozen=True, slots=True)
class PodInfo:
    """What the replica calculator reads from a ``v1.Pod``.

    ``ready_condition`` is the ``Ready`` condition or ``None`` when the pod has none;
    ``start_time`` is ``status.startTime`` (``None`` when unset); ``deletion_timestamp`` is
    ``metadata.deletionTimestamp``. ``init_containers`` lists every init container (only the
    restartable ones count towards requests, as upstream). ``pod_requests_milli`` is
    ``spec.resources.requests`` (pod-level resources, ``None`` when ``spec.resources`` is unset)
    and ``overhead_milli`` is ``spec.overhead``.

    ``container_requests_milli`` is derived, not passed: per resource, the request
    :func:`calculate_pod_requests_from_containers` gives without a container name, for each
    resource it gives without an error. It is computed once, when the pod is built (by the
    informer, as the Pod arrives), so a decision does not walk the containers again.
    """

    name: str
    phase: PodPhase = PodPhase.RUNNING
    ready_condition: PodCondition | None = None
    start_time: datetime | None = None
    deletion_timestamp: datetime | None = None
    containers: tuple[ContainerInfo, ...] = ()
    init_containers: tuple[ContainerInfo, ...] = ()
    pod_requests_milli: Mapping[str, int] | None = None
    overhead_milli: Mapping[str, int] | None = None
    container_requests_milli: Mapping[str, int] = field(init=False, repr=False, compare=False)
    resizing: bool = field(init=False, repr=False, compare=False)
    """A container's applied requests differ from its spec (an in-place resize in progress);
    derived when the pod is built."""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "resizing", any(c.resizing for c in (*self.containers, *self.init_containers))
        )
        requests: dict[str, int] = {}
        if self.containers or self.init_containers:
            for container in (*self.containers, *self.init_containers):
                for resource in container.requests_milli:
                    if resource in requests:
                        continue
                    try:
                        requests[resource] = calculate_pod_requests_from_containers(
                            self, "", resource=resource
                        )
                    except ReplicaCalculationError:
                        continue  # asked for, the pod reports upstream's error then
        object.__setattr__(self, "container_requests_milli", requests)

    def applied(self) -> PodInfo:
        """This pod as the kubelet runs it: each container's applied requests in place of the
        spec's (itself when no resize is in progress)."""
        if not self.resizing:
            return self
        return PodInfo(
            name=self.name,
            phase=self.phase,
            ready_condition=self.ready_condition,
            start_time=self.start_time,
            deletion_timestamp=self.deletion_timestamp,
            containers=tuple(c.applied() for c in self.containers),
            init_containers=tuple(c.applied() for c in self.init_containers),
            pod_requests_milli=self.pod_requests_milli,
            overhead_milli=self.overhead_milli,
        )


@dataclass(frozen=True, slots=True)
class PodMetric:
    """``metricsclient.PodMetric``: one pod's sample, in milli-units.

    ``timestamp`` is the sample's timestamp and ``window_seconds`` the window it covers (the
    resource metrics API reports it; custom metrics default to 60 s upstream).
    """

    value_milli: int
    timestamp: datetime | None = None
    window_seconds: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Tolerances:
    """``Tolerances`` of ``replica_calculator.go``: the scale-down and scale-up tolerances.

    Fields are keyword-only because upstream's positional order (down, up) is easy to swap.
    """

    scale_down: float = DEFAULT_TOLERANCE
    scale_up: float = DEFAULT_TOLERANCE

    def is_within(self, usage_ratio: float) -> bool:
        """``isWithin``: ``(1 - scale_down) <= usage_ratio <= (1 + scale_up)``."""
        return (1.0 - self.scale_down) <= usage_ratio <= (1.0 + self.scale_up)

    def __str__(self) -> str:
        """``Tolerances.String``: ``[down:10.0%, up:10.0%]``."""
        return f"[down:{self.scale_down * 100.0:.1f}%, up:{self.scale_up * 100.0:.1f}%]"


@dataclass(frozen=True, slots=True)
class PodGroups:
    """The four results of ``groupPods``.

    ``ignored_pods`` are deleted or failed pods; ``unready_pods`` are pending pods and (for CPU)
    pods that are not ready or whose sample predates readiness; ``missing_pods`` have no sample.
    """

    ready_pod_count: int
    unready_pods: frozenset[str]
    missing_pods: frozenset[str]
    ignored_pods: frozenset[str]


class ReplicaOutcome(StrEnum):
    """Which branch of the upstream calculator produced the replica count."""

    WITHIN_TOLERANCE = "WithinTolerance"
    """The usage ratio (after re-balancing, if any) is within tolerance: current replicas."""
    SCALED = "Scaled"
    """A new replica count was computed from the usage ratio."""
    DIRECTION_FLIPPED = "DirectionFlipped"
    """Re-balancing missing/unready pods reversed the scale direction: current replicas."""
    REPLICA_COUNT_FLIPPED = "ReplicaCountFlipped"
    """The re-balanced count would move against the usage ratio's direction: current replicas."""
    SCALED_FROM_ZERO = "ScaledFromZero"
    """Object/External value target with zero current replicas: ``ceil(ratio)``, no tolerance."""


@dataclass(frozen=True, slots=True)
class ReplicaCalculationTrace:
    """What a calculator did, for the decision layer's explanation.

    ``usage_ratio`` is the ratio the tolerance was first checked against;
    ``rebalanced_usage_ratio`` is the ratio after missing pods were filled and (on a scale-up)
    unready pods counted at zero, ``None`` when no re-balancing happened. ``pod_count`` is the
    number the deciding ratio was multiplied by (ready pods, the re-balanced sample count, or
    ``None`` when no count was computed). ``missing_pods_fill_milli`` is the value each missing pod
    was assumed at (per pod; for resources the per-pod value is ``request * fill_percent / 100``,
    reported as the percentage in ``missing_pods_fill_percent``), ``None`` when nothing was filled.
    ``superfluous_metrics`` are samples for pods not in the pod list (kept, as upstream).
    """

    tolerances: Tolerances
    usage_ratio: float
    outcome: ReplicaOutcome
    ready_pod_count: int | None = None
    unready_pods: frozenset[str] = frozenset()
    missing_pods: frozenset[str] = frozenset()
    ignored_pods: frozenset[str] = frozenset()
    superfluous_metrics: frozenset[str] = frozenset()
    rebalanced_usage_ratio: float | None = None
    unready_pods_counted_as_zero: bool = False
    missing_pods_fill_milli: int | None = None
    missing_pods_fill_percent: int | None = None
    pod_count: int | None = None


@dataclass(frozen=True, slots=True)
class ReplicaCalculation:
    """A calculator's result.

    ``usage_milli`` is upstream's second value: the raw average per-pod value for Resource
    metrics (``rawUtilization``), the average for Pods and Resource AverageValue, the metric value
    for Object/External Value, and the per-pod average for the AverageValue variants.
    ``utilization`` is the percentage of request (Resource/ContainerResource Utilization targets
    only, ``None`` otherwise). ``timestamp`` is ``None`` where upstream returns the zero time.
    """

    replica_count: int
    usage_milli: int
    timestamp: datetime | None
    trace: ReplicaCalculationTrace
    utilization: int | None = None


# ------------------------------------------------------------------ Go arithmetic


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
        metrics_total += metric.value_milli
        requests_total += request
        num_entries += 1
    # Go wraps every addition to int64: wrapping the exact sums once gives the same values
    metrics_total = _wrap_int64(metrics_total)
    requests_total = _wrap_int64(requests_total)
    if requests_total == 0:
        raise ReplicaCalculationError("no metrics returned matched known pods")
    utilization = _wrap_int32(_go_quo(_wrap_int64(metrics_total * 100), requests_total))
    usage_ratio = _go_fdiv(float(utilization), float(target_utilization))
    return usage_ratio, utilization, _go_quo(metrics_total, num_entries)


def get_metric_usage_ratio(
    metrics: Mapping[str, PodMetric], target_usage: int
) -> tuple[float, int]:
    """``GetMetricUsageRatio``: ``(usage_ratio, average_usage_milli)`` over every sample."""
    # Go wraps every addition to int64: wrapping the exact sum once gives the same value
    metrics_total = _wrap_int64(sum(metric.value_milli for metric in metrics.values()))
    usage = _go_quo(metrics_total, len(metrics))
    return _go_fdiv(float(usage), float(target_usage)), usage


# ------------------------------------------------------------------ replica_calculator.go


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
    """Samples of pods not in the pod list (kept, as upstream; reported in the trace)."""
    return frozenset(samples.keys() - {pod.name for pod in pods})


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
    resize_aware: bool = False,
) -> ReplicaCalculation:
    """``GetResourceReplicas``: Resource / ContainerResource metric with a Utilization target.

    ``metrics`` and ``timestamp`` are what the resource metrics client returned for ``resource``
    (and ``container``, for ContainerResource); ``pods`` are the pods the selector matched. The
    reported utilization and raw value are those before re-balancing, as upstream. With
    ``resize_aware`` (ours; the controller's default), a pod being resized in place counts with
    the requests the kubelet applied; without it, with its spec's (upstream).
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
        resize_aware=resize_aware,
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


def get_raw_resource_replicas(
    current_replicas: int,
    target_usage: int,
    *,
    resource: str,
    tolerances: Tolerances,
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    timestamp: datetime | None,
    now: datetime,
    cpu_initialization_period_seconds: float = DEFAULT_CPU_INITIALIZATION_PERIOD_SECONDS,
    initial_readiness_delay_seconds: float = DEFAULT_INITIAL_READINESS_DELAY_SECONDS,
) -> ReplicaCalculation:
    """``GetRawResourceReplicas``: Resource / ContainerResource metric with an AverageValue target.

    ``target_usage`` is the per-pod average in milli-units; CPU samples are filtered by readiness.
    """
    return _calc_plain_metric_replicas(
        current_replicas,
        target_usage,
        resource=resource,
        tolerances=tolerances,
        pods=pods,
        metrics=metrics,
        timestamp=timestamp,
        now=now,
        cpu_initialization_period_seconds=cpu_initialization_period_seconds,
        initial_readiness_delay_seconds=initial_readiness_delay_seconds,
    )


def get_metric_replicas(
    current_replicas: int,
    target_usage: int,
    *,
    tolerances: Tolerances,
    pods: Sequence[PodInfo],
    metrics: Mapping[str, PodMetric],
    timestamp: datetime | None,
    now: datetime,
) -> ReplicaCalculation:
    """``GetMetricReplicas``: a Pods metric with an AverageValue target (milli-units per pod).

    Readiness is not examined for custom metrics: only deleted, failed and pending pods are set
    aside.
    """
    return _calc_plain_metric_replicas(
        current_replicas,
        target_usage,
        resource="",
        tolerances=tolerances,
        pods=pods,
        metrics=metrics,
        timestamp=timestamp,
        now=now,
        cpu_initialization_period_seconds=DEFAULT_CPU_INITIALIZATION_PERIOD_SECONDS,
        initial_readiness_delay_seconds=DEFAULT_INITIAL_READINESS_DELAY_SECONDS,
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


def get_object_metric_replicas(
    current_replicas: int,
    target_usage: int,
    *,
    usage: int,
    tolerances: Tolerances,
    pods: Sequence[PodInfo],
) -> ReplicaCalculation:
    """``GetObjectMetricReplicas``: an Object metric with a Value target.

    ``usage`` is the object's metric value (milli-units). The replica count scales the number of
    Running+Ready ``pods``; the returned timestamp is always ``None`` (upstream returns the zero
    time here).
    """
    usage_ratio = _go_fdiv(float(usage), float(target_usage))
    decision = _get_usage_ratio_replica_count(
        current_replicas, usage_ratio, tolerances=tolerances, pods=pods
    )
    return ReplicaCalculation(
        replica_count=decision.replica_count,
        usage_milli=usage,
        timestamp=None,
        trace=ReplicaCalculationTrace(
            tolerances=tolerances,
            usage_ratio=usage_ratio,
            outcome=decision.outcome,
            ready_pod_count=decision.pod_count,
            pod_count=decision.pod_count,
        ),
    )


def _get_usage_ratio_replica_count(
    current_replicas: int,
    usage_ratio: float,
    *,
    tolerances: Tolerances,
    pods: Sequence[PodInfo],
) -> _Decision:
    """``getUsageRatioReplicaCount``; with zero current replicas: ``ceil(ratio)``, no tolerance."""
    if current_replicas == 0:
        # Scale to zero or n pods depending on usageRatio
        return _Decision(_go_int32(_go_ceil(usage_ratio)), ReplicaOutcome.SCALED_FROM_ZERO)
    if tolerances.is_within(usage_ratio):
        # return the current replicas if the change would be too small
        return _Decision(current_replicas, ReplicaOutcome.WITHIN_TOLERANCE)
    try:
        ready_pod_count = get_ready_pods_count(pods)
    except ReplicaCalculationError as err:
        raise ReplicaCalculationError(f"unable to calculate ready pods: {err}") from err
    replica_count_float = usage_ratio * float(ready_pod_count)
    if replica_count_float > MAX_INT32:
        replica_count = MAX_INT32
    else:
        replica_count = _go_int32(_go_ceil(replica_count_float))
    return _Decision(replica_count, ReplicaOutcome.SCALED, ready_pod_count)


def get_object_per_pod_metric_replicas(
    status_replicas: int,
    target_average_usage: int,
    *,
    usage: int,
    timestamp: datetime | None,
    tolerances: Tolerances,
) -> ReplicaCalculation:
    """``GetObjectPerPodMetricReplicas``: an Object metric with an AverageValue target.

    ``status_replicas`` is the scale's ``status.replicas``; the reported usage is the value per
    replica, rounded up.
    """
    replica_count = status_replicas
    usage_ratio = _go_fdiv(float(usage), float(target_average_usage) * float(replica_count))
    outcome = ReplicaOutcome.WITHIN_TOLERANCE
    if not tolerances.is_within(usage_ratio):
        # update number of replicas if change is large enough
        replica_count = _go_int32(_go_ceil(_go_fdiv(float(usage), float(target_average_usage))))
        outcome = ReplicaOutcome.SCALED
    average = _go_int64(_go_ceil(_go_fdiv(float(usage), float(status_replicas))))
    return ReplicaCalculation(
        replica_count=replica_count,
        usage_milli=average,
        timestamp=timestamp,
        trace=ReplicaCalculationTrace(
            tolerances=tolerances, usage_ratio=usage_ratio, outcome=outcome
        ),
    )


def get_ready_pods_count(pods: Sequence[PodInfo]) -> int:
    """``getReadyPodsCount``: pods that are ``Running`` with ``Ready=True``.

    Raises ``no pods returned by selector while calculating replica count`` for an empty list.
    """
    if not pods:
        raise ReplicaCalculationError(
            "no pods returned by selector while calculating replica count"
        )
    running = PodPhase.RUNNING
    condition_true = ConditionStatus.TRUE
    ready_pods_count = 0
    for pod in pods:
        if pod.phase == running:
            condition = pod.ready_condition
            if condition is not None and condition.status == condition_true:
                ready_pods_count += 1
    return ready_pods_count


def get_external_metric_replicas(
    current_replicas: int,
    target_usage: int,
    *,
    values: Sequence[int],
    tolerances: Tolerances,
    pods: Sequence[PodInfo],
) -> ReplicaCalculation:
    """``GetExternalMetricReplicas``: an External metric with a Value target.

    ``values`` are the milli-values of every series the external metrics API returned; they are
    summed (capped at ``MaxInt64`` on positive overflow). The returned timestamp is ``None``.
    """
    usage = 0
    for value in values:
        # Cap at MaxInt64 for positive overflow
        if value > 0 and usage > MAX_INT64 - value:
            usage = MAX_INT64
            break
        usage = _wrap_int64(usage + value)
    usage_ratio = _go_fdiv(float(usage), float(target_usage))
    decision = _get_usage_ratio_replica_count(
        current_replicas, usage_ratio, tolerances=tolerances, pods=pods
    )
    return ReplicaCalculation(
        replica_count=decision.replica_count,
        usage_milli=usage,
        timestamp=None,
        trace=ReplicaCalculationTrace(
            tolerances=tolerances,
            usage_ratio=usage_ratio,
            outcome=decision.outcome,
            ready_pod_count=decision.pod_count,
            pod_count=decision.pod_count,
        ),
    )


def get_external_per_pod_metric_replicas(
    status_replicas: int,
    target_usage_per_pod: int,
    *,
    values: Sequence[int],
    timestamp: datetime | None,
    tolerances: Tolerances,
) -> ReplicaCalculation:
    """``GetExternalPerPodMetricReplicas``: an External metric with an AverageValue target.

    ``values`` are summed (a sum that goes negative is taken as an overflow and becomes
    ``MaxInt64``, as upstream); the replica count is capped at ``MaxInt32``.
    """
    usage = 0
    for value in values:
        usage = _wrap_int64(usage + value)
        if usage < 0:
            # the only way we would ever get here is because of an Int64 overflow
            usage = MAX_INT64
            break
    replica_count = status_replicas
    usage_ratio = _go_fdiv(float(usage), float(target_usage_per_pod) * float(replica_count))
    outcome = ReplicaOutcome.WITHIN_TOLERANCE
    if not tolerances.is_within(usage_ratio):
        # update number of replicas if the change is large enough
        replica_count_result = _go_ceil(_go_fdiv(float(usage), float(target_usage_per_pod)))
        if replica_count_result > float(MAX_INT32):
            replica_count = MAX_INT32
        else:
            replica_count = _go_int32(replica_count_result)
        outcome = ReplicaOutcome.SCALED
    if float(usage) >= float(MAX_INT64):
        average = MAX_INT64
    else:
        average = _go_int64(_go_ceil(_go_fdiv(float(usage), float(status_replicas))))
    return ReplicaCalculation(
        replica_count=replica_count,
        usage_milli=average,
        timestamp=timestamp,
        trace=ReplicaCalculationTrace(
            tolerances=tolerances, usage_ratio=usage_ratio, outcome=outcome
        ),
    )


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
    delay_of_initial_readiness_status = timedelta(seconds=initial_readiness_delay_seconds)
    ready_pod_count = 0
    unready_pods: set[str] = set()
    missing_pods: set[str] = set()
    ignored_pods: set[str] = set()
    for pod in pods:
        if pod.deletion_timestamp is not None or pod.phase == PodPhase.FAILED:
            ignored_pods.add(pod.name)
            continue
        # Pending pods are ignored.
        if pod.phase == PodPhase.PENDING:
            unready_pods.add(pod.name)
            continue
        # Pods missing metrics.
        metric = metrics.get(pod.name)
        if metric is None:
            missing_pods.add(pod.name)
            continue
        # Unready pods are ignored.
        if resource == RESOURCE_CPU:
            condition = pod.ready_condition
            start_time = pod.start_time
            if condition is None or start_time is None:
                unready = True
            elif start_time + cpu_initialization_period > now:
                # Pod still within possible initialisation period.
                # Ignore sample if pod is unready or one window of metric wasn't collected since
                # last state transition.
                sample_time = GO_ZERO_TIME if metric.timestamp is None else metric.timestamp
                unready = condition.status == ConditionStatus.FALSE or (
                    sample_time
                    < condition.last_transition_time + timedelta(seconds=metric.window_seconds)
                )
            else:
                # Ignore metric if pod is unready and it has never been ready.
                unready = (
                    condition.status == ConditionStatus.FALSE
                    and start_time + delay_of_initial_readiness_status
                    > condition.last_transition_time
                )
            if unready:
                unready_pods.add(pod.name)
                continue
        ready_pod_count += 1
    return PodGroups(
        ready_pod_count=ready_pod_count,
        unready_pods=frozenset(unready_pods),
        missing_pods=frozenset(missing_pods),
        ignored_pods=frozenset(ignored_pods),
    )


def calculate_pod_requests(
    pods: Sequence[PodInfo],
    container: str = "",
    *,
    resource: str,
    pod_level_resources_enabled: bool = True,
    resize_aware: bool = False,
) -> dict[str, int]:
    """``calculateRequests``: each pod's request for ``resource`` in milli-units.

    With a container name, only that container counts. Without one, the pod-level request is used
    when the ``PodLevelResources`` gate is on and ``spec.resources.requests`` is set; otherwise the
    sum over regular containers and restartable init containers. Raises
    :class:`ReplicaCalculationError` with upstream's text (``missing request for cpu in container c
    of Pod p``, ``container c not found in Pod p``, ``missing pod-level request for cpu in Pod p``).
    With ``resize_aware`` (ours), a pod being resized in place counts with the requests the kubelet
    applied (:meth:`PodInfo.applied`).
    """
    requests: dict[str, int] = {}
    for pod in pods:
        if resize_aware and pod.resizing:
            pod = pod.applied()  # the pod as the kubelet runs it
        use_pod_level_requests = (
            pod_level_resources_enabled and is_pod_level_requests_set(pod) and container == ""
        )
        if use_pod_level_requests:
            request = calculate_pod_level_requests(pod, resource=resource)
        elif container == "" and resource in pod.container_requests_milli:
            # calculatePodRequestsFromContainers' result, computed when the pod was built
            request = pod.container_requests_milli[resource]
        else:
            request = calculate_pod_requests_from_containers(pod, container, resource=resource)
        requests[pod.name] = request
    return requests


def calculate_pod_level_requests(pod: PodInfo, *, resource: str) -> int:
    """``calculatePodLevelRequests``: ``resourcehelpers.PodRequests(pod, {})[resource]``.

    That is the aggregated container requests, overridden by the supported pod-level requests,
    plus the pod overhead.
    """
    requests = _aggregate_container_requests(pod)
    for name, value in (pod.pod_requests_milli or {}).items():
        if is_supported_pod_level_resource(name):
            requests[name] = value
    for name, value in (pod.overhead_milli or {}).items():
        requests[name] = requests.get(name, 0) + value
    if resource not in requests:
        raise ReplicaCalculationError(f"missing pod-level request for {resource} in Pod {pod.name}")
    return requests[resource]


def calculate_pod_requests_from_containers(pod: PodInfo, container: str, *, resource: str) -> int:
    """``calculatePodRequestsFromContainers``: sum over containers and restartable init containers.

    With a non-empty ``container``, only the container of that name counts.
    """
    containers = list(pod.containers)
    containers.extend(c for c in pod.init_containers if c.restart_policy == RESTART_POLICY_ALWAYS)
    request = 0
    for candidate in containers:
        if container in ("", candidate.name):
            container_request = candidate.requests_milli.get(resource)
            if container_request is None:
                raise ReplicaCalculationError(
                    f"missing request for {resource} in container {candidate.name} "
                    f"of Pod {pod.name}"
                )
            request += container_request
        # container names are unique inside the pod
        if container == candidate.name:
            return request
    if container != "":
        raise ReplicaCalculationError(f"container {container} not found in Pod {pod.name}")
    return request


def _remove_metrics_for_pods(metrics: dict[str, PodMetric], pods: Iterable[str]) -> None:
    """``removeMetricsForPods``."""
    for pod in pods:
        metrics.pop(pod, None)


# a scratch value inside one call: not frozen, which is several times cheaper to build


# ---------------------------------------------------------- k8s.io/component-helpers/resource


def is_supported_pod_level_resource(resource: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and huge pages."""
    return resource in _SUPPORTED_POD_LEVEL_RESOURCES or resource.startswith(_HUGE_PAGES_PREFIX)


def is_pod_level_requests_set(pod: PodInfo) -> bool:
    """``IsPodLevelRequestsSet``: ``spec.resources.requests`` names a supported resource."""
    if not pod.pod_requests_milli:
        return False
    return any(is_supported_pod_level_resource(name) for name in pod.pod_requests_milli)


def _aggregate_container_requests(pod: PodInfo) -> dict[str, int]:
    """``AggregateContainerRequests`` with default options (spec requests, no status)."""
    requests: dict[str, int] = {}
    for container in pod.containers:
        _add_resource_list(requests, container.requests_milli)
    restartable_init_requests: dict[str, int] = {}
    init_requests: dict[str, int] = {}
    for container in pod.init_containers:
        container_requests: Mapping[str, int]
        if container.restart_policy == RESTART_POLICY_ALWAYS:
            # restartable init containers run alongside the regular ones
            _add_resource_list(requests, container.requests_milli)
            _add_resource_list(restartable_init_requests, container.requests_milli)
            container_requests = restartable_init_requests
        else:
            combined: dict[str, int] = {}
            _add_resource_list(combined, container.requests_milli)
            _add_resource_list(combined, restartable_init_requests)
            container_requests = combined
        _max_resource_list(init_requests, container_requests)
    _max_resource_list(requests, init_requests)
    return requests


def _add_resource_list(target: dict[str, int], addition: Mapping[str, int]) -> None:
    for name, value in addition.items():
        target[name] = target.get(name, 0) + value


def _max_resource_list(target: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if name not in target or value > target[name]:
            target[name] = value
