"""Which pods the VPA updater changes, in which order, and how many of a group may go at once.

Upstream counterparts (kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1):

- ``pkg/updater/priority/priority_processor.go`` (``GetUpdatePriority``): per resource, the
  requests and the recommended targets of the pod's containers are summed in milli-units;
  ``ScaleUp`` when a target exceeds its request or a request is missing,
  ``OutsideRecommendedRange`` when a request is below the lower or above the upper bound (or
  missing), ``ResourceDiff`` the sum over resources of ``|request - target| / max(request, 1)``.
  Requests come from the container status (what the kubelet applied) when it has them, else from
  the spec. Containers missing from a parseable ``vpaObservedContainers`` annotation are skipped.
- ``pkg/updater/priority/update_priority_calculator.go`` (``AddPod``, ``GetSortedPods``,
  ``PodPriority.Less``, ``hasLowerResourceRecommendation``): a pod is queued when it is outside the
  recommended range, or had a quick OOM, or lived past ``--in-recommendation-bounds-eviction-
  lifetime-threshold`` (12 h) with a ``ResourceDiff`` of at least ``--pod-update-threshold``
  (0.1); a quick-OOM pod whose resources would not change is not. Scale-ups come first, then the
  larger ``ResourceDiff``.
- ``pkg/updater/restriction/pods_restriction_factory.go`` and ``pods_eviction_restriction.go``
  (``GetCreatorMaps``, ``singleGroupStats.isPodDisruptable``, ``CanEvict``, ``Evict``): pods are
  grouped by their controller; a group with fewer live pods than ``minReplicas`` (2, or the
  VPA's ``updatePolicy.minReplicas``) is never disrupted unless one of its pods has a CPU startup
  boost in progress; ``evictionTolerance =
  int(configured * --eviction-tolerance)``; a pending pod can always be evicted; otherwise a pod may
  go while ``running - evicted > configured - tolerance``, or when the whole group runs, the
  tolerance rounds to 0 and nothing was evicted yet; pods whose in-place resize was started this
  loop count as disrupted too (``inPlaceUpdateInitiated``), eviction and resize share one budget.
- ``pods_inplace_restriction.go`` (``CanInPlaceUpdate``, ``CanEvictInPlacingPod``,
  ``getResizeStatus``, ``isInPlaceUpdating``; ``DeferredResizeUpdateTimeout`` 5 min,
  ``InProgressResizeUpdateTimeout`` 1 h) and ``pkg/updater/utils/types.go``
  (``InPlaceDecision``): a pod whose ``PodResizePending`` or ``PodResizeInProgress`` condition is
  ``True`` is being resized; ``InPlace`` waits for it (an ``Infeasible`` one is remembered and
  retried only when the recommendation drops), ``InPlaceOrRecreate`` falls back to eviction when
  it is ``Infeasible``, ``Deferred`` for 5 minutes or in progress for an hour since the last
  attempt.
- ``scaling_direction_pod_eviction_admission.go`` (``Admit``): a VPA's
  ``updatePolicy.evictionRequirements`` take a queued pod out of the queue (for eviction and for
  in-place resizes alike) unless some container with a recommendation meets every requirement. A
  requirement is met when one of its resources' targets is above (``TargetHigherThanRequests``)
  or below (``TargetLowerThanRequests``) the container's request, in milli-units; a resource
  missing from the target or the requests counts as 0; a container without a cpu or a memory
  request admits the pod.
- ``--in-place-skip-disruption-budget`` (``pods_restriction_factory.go``,
  ``pods_inplace_restriction.go``, ``utils.IsNonDisruptiveResize``): for a VPA in ``InPlace`` or
  ``InPlaceOrRecreate``, a group below ``minReplicas`` is kept, marked ``belowMinReplicas`` (none
  of its pods is evicted), and a resize of a pod none of whose containers has a
  ``RestartContainer`` resize policy is approved without the group's budget.

Deliberate deviations:
- pods with equal update priority are ordered, not left to an unstable sort: the pod of lower
  scheduling priority first, then by namespace and name (so a run is reproducible);
- a pod without a controlling owner reference is never evicted (v1.8.1 puts all such pods of a
  namespace into one nameless group with ``configured`` 0, which lets them be evicted);
- a group whose controller's replica count is unknown or 0 is never disrupted (upstream: the
  same, through an error it logs);
- the ``InPlace`` feature gate is always on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from hpa.core.names import is_dns1123_label
from hpa.core.vpa.admission import OBSERVED_CONTAINERS_SEPARATOR

__all__ = [
    "DEFERRED_RESIZE_UPDATE_TIMEOUT",
    "IN_PROGRESS_RESIZE_UPDATE_TIMEOUT",
    "TARGET_HIGHER_THAN_REQUESTS",
    "TARGET_LOWER_THAN_REQUESTS",
    "ContainerRecommendation",
    "ContainerStatus",
    "EvictionRequirement",
    "EvictionRestriction",
    "GroupStats",
    "InPlaceDecision",
    "PodCondition",
    "PodPriority",
    "ReplicaGroup",
    "ResizeStatus",
    "UpdateConfig",
    "UpdatePod",
    "admit_by_eviction_requirements",
    "admit_for_update",
    "can_evict_in_placing_pod",
    "eviction_restriction",
    "get_update_priority",
    "has_lower_resource_recommendation",
    "is_in_place_updating",
    "parse_observed_containers",
    "pod_id",
    "quick_oom",
    "resize_status",
    "sorted_for_update",
]


ResourceMilli = Mapping[str, int]
"""Amounts per resource name, in milli-units (``Quantity.MilliValue``)."""

DEFERRED_RESIZE_UPDATE_TIMEOUT = timedelta(minutes=5)
"""``DeferredResizeUpdateTimeout``."""
IN_PROGRESS_RESIZE_UPDATE_TIMEOUT = timedelta(hours=1)
"""``InProgressResizeUpdateTimeout``."""

POD_RESIZE_PENDING = "PodResizePending"
POD_RESIZE_IN_PROGRESS = "PodResizeInProgress"
REASON_DEFERRED = "Deferred"
REASON_INFEASIBLE = "Infeasible"
REASON_ERROR = "Error"


@dataclass(frozen=True, slots=True)
class PodCondition:
    """One of ``status.conditions[]`` (the updater keeps the resize ones)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    """What the updater reads of ``status.containerStatuses[]``: the applied requests
    (``resources.requests``, None when the kubelet does not report them) and the last
    termination."""

    name: str
    requests: ResourceMilli | None = None
    last_termination_reason: str = ""
    last_termination_started: datetime | None = None
    last_termination_finished: datetime | None = None


@dataclass(frozen=True, slots=True)
class ReplicaGroup:
    """A pod's controlling owner (``podReplicaCreator``)."""

    namespace: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class UpdatePod:
    """A pod as the updater sees it. ``containers`` are ``spec.containers`` with their requests
    (init containers are not considered in v1.8.1)."""

    namespace: str
    name: str
    containers: tuple[tuple[str, ResourceMilli], ...]
    statuses: tuple[ContainerStatus, ...] = ()
    observed_containers: str | None = None
    start_time: datetime | None = None
    phase: str = "Running"
    controller: ReplicaGroup | None = None
    priority: int = 0
    uid: str = ""
    cpu_boost_in_progress: bool = False
    conditions: tuple[PodCondition, ...] = ()
    non_disruptive_resize: bool = True
    """``IsNonDisruptiveResize``: no container has a ``RestartContainer`` resize policy."""

    def condition(self, condition_type: str) -> PodCondition | None:
        """``GetPodCondition``: the first condition of that type."""
        for condition in self.conditions:
            if condition.type == condition_type:
                return condition
        return None

    def requests(self, container: str) -> ResourceMilli:
        """``ContainerRequestsAndLimits``: the status's applied requests, else the spec's."""
        for status in self.statuses:
            if status.name == container and status.requests is not None:
                return status.requests
        for name, requests in self.containers:
            if name == container:
                return requests
        return {}


@dataclass(frozen=True, slots=True)
class ContainerRecommendation:
    """One container of ``status.recommendation`` after capping, in milli-units."""

    container_name: str
    target: ResourceMilli
    lower_bound: ResourceMilli = field(default_factory=dict)
    upper_bound: ResourceMilli = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PodPriority:
    """``PodPriority``."""

    outside_recommended_range: bool = False
    scale_up: bool = False
    resource_diff: float = 0.0

    def less(self, other: PodPriority) -> bool:
        """``PodPriority.Less``: scale-ups first, then the larger relative change."""
        if self.scale_up != other.scale_up:
            return other.scale_up
        return self.resource_diff < other.resource_diff


@dataclass(frozen=True, slots=True)
class UpdateConfig:
    """``UpdateConfig`` with the updater's flag defaults."""

    min_change_priority: float = 0.1
    pod_lifetime_update_threshold: timedelta = timedelta(hours=12)
    evict_after_oom_threshold: timedelta = timedelta(minutes=10)


def parse_observed_containers(pod: UpdatePod) -> frozenset[str] | None:
    """``parseVpaObservedContainers``: the listed containers, or None when the annotation is
    absent or malformed (then every container counts)."""
    value = pod.observed_containers
    if value is None:
        return None
    if value == "":
        return frozenset()
    names = value.split(OBSERVED_CONTAINERS_SEPARATOR)
    if any(is_dns1123_label(name) for name in names):
        return None
    return frozenset(names)


def _recommendation_for(
    container: str, recommendations: Sequence[ContainerRecommendation]
) -> ContainerRecommendation | None:
    for recommendation in recommendations:
        if recommendation.container_name == container:
            return recommendation
    return None


def get_update_priority(
    pod: UpdatePod, recommendations: Sequence[ContainerRecommendation]
) -> PodPriority:
    """``GetUpdatePriority``."""
    outside_recommended_range = False
    scale_up = False
    total_request: dict[str, int] = {}
    total_recommended: dict[str, int] = {}
    observed = parse_observed_containers(pod)
    for container, _ in pod.containers:
        if observed is not None and container not in observed:
            continue
        recommended = _recommendation_for(container, recommendations)
        if recommended is None:
            continue
        requests = pod.requests(container)
        for resource, target in recommended.target.items():
            total_recommended[resource] = total_recommended.get(resource, 0) + target
            request = requests.get(resource)
            if request is None:
                scale_up = True
                outside_recommended_range = True
                continue
            total_request[resource] = total_request.get(resource, 0) + request
            if target > request:
                scale_up = True
            lower = recommended.lower_bound.get(resource)
            upper = recommended.upper_bound.get(resource)
            if (lower is not None and request < lower) or (upper is not None and request > upper):
                outside_recommended_range = True
    resource_diff = 0.0
    for resource, recommended_total in total_recommended.items():
        request_total = max(float(total_request.get(resource, 0)), 1.0)
        resource_diff += math.fabs(request_total - float(recommended_total)) / request_total
    return PodPriority(outside_recommended_range, scale_up, resource_diff)


def quick_oom(
    pod: UpdatePod,
    *,
    now: datetime,
    threshold: timedelta,
    off_containers: frozenset[str] = frozenset(),
) -> bool:
    """A container (observed, not in scaling mode ``Off``) was OOM-killed less than
    ``threshold`` after it started, and less than ``threshold`` ago."""
    observed = parse_observed_containers(pod)
    for status in pod.statuses:
        if observed is not None and status.name not in observed:
            continue
        if status.name in off_containers:
            continue
        started, finished = status.last_termination_started, status.last_termination_finished
        if (
            status.last_termination_reason == "OOMKilled"
            and started is not None
            and finished is not None
            and finished - started < threshold
            and now - finished < threshold
        ):
            return True
    return False


def admit_for_update(
    pod: UpdatePod,
    priority: PodPriority,
    *,
    now: datetime,
    config: UpdateConfig,
    quick_oomed: bool,
) -> bool:
    """``AddPod``'s decision: does the pod join the update queue?"""
    if not priority.outside_recommended_range and not quick_oomed:
        if pod.start_time is None:
            return False
        if now < pod.start_time + config.pod_lifetime_update_threshold:
            return False
        if priority.resource_diff < config.min_change_priority:
            return False
    return not (quick_oomed and priority.resource_diff == 0)


TARGET_HIGHER_THAN_REQUESTS = "TargetHigherThanRequests"
TARGET_LOWER_THAN_REQUESTS = "TargetLowerThanRequests"


@dataclass(frozen=True, slots=True)
class EvictionRequirement:
    """One of ``spec.updatePolicy.evictionRequirements``: met when the target of one of
    ``resources`` moved in the direction ``change_requirement`` names
    (``TargetHigherThanRequests`` or ``TargetLowerThanRequests``)."""

    resources: tuple[str, ...]
    change_requirement: str


def _requirement_met(
    requirement: EvictionRequirement, requests: ResourceMilli, target: ResourceMilli
) -> bool:
    for resource in requirement.resources:
        request, recommended = requests.get(resource, 0), target.get(resource, 0)
        if requirement.change_requirement == TARGET_HIGHER_THAN_REQUESTS and recommended > request:
            return True
        if requirement.change_requirement == TARGET_LOWER_THAN_REQUESTS and recommended < request:
            return True
    return False


def admit_by_eviction_requirements(
    pod: UpdatePod,
    recommendations: Sequence[ContainerRecommendation],
    requirements: Sequence[EvictionRequirement],
) -> bool:
    """``scalingDirectionPodEvictionAdmission.Admit``: may ``pod`` stay in the update queue under
    its VPA's eviction requirements? Always, without requirements (upstream also admits then,
    unless no container has a recommendation, and such a pod never joins the queue)."""
    if not requirements:
        return True
    for container, _ in pod.containers:
        recommended = _recommendation_for(container, recommendations)
        if recommended is None:
            continue
        requests = pod.requests(container)
        if "cpu" not in requests or "memory" not in requests:
            return True
        if all(_requirement_met(r, requests, recommended.target) for r in requirements):
            return True
    return False


def has_lower_resource_recommendation(
    last_attempt: Sequence[ContainerRecommendation],
    new: Sequence[ContainerRecommendation],
) -> bool:
    """``hasLowerResourceRecommendation``: ``InPlace`` retries an infeasible resize only when
    some target dropped below the last attempt's."""
    last = {r.container_name: r for r in last_attempt}
    for recommendation in new:
        before = last.get(recommendation.container_name)
        if before is None:
            continue
        for resource, target in recommendation.target.items():
            previous = before.target.get(resource)
            if previous is not None and target < previous:
                return True
    return False


def sorted_for_update(queued: Iterable[tuple[UpdatePod, PodPriority]]) -> list[UpdatePod]:
    """``GetSortedPods`` order: higher update priority first (``PodPriority.less`` is the order
    of ``(scale_up, resource_diff)``); among equals, the pod of lower scheduling priority first,
    then by namespace and name."""
    ranked = sorted(
        queued,
        key=lambda e: (
            not e[1].scale_up,
            -e[1].resource_diff,
            e[0].priority,
            e[0].namespace,
            e[0].name,
        ),
    )
    return [pod for pod, _ in ranked]


@dataclass(frozen=True, slots=True)
class GroupStats:
    """``singleGroupStats``."""

    configured: int
    pending: int
    running: int
    eviction_tolerance: int
    evicted: int = 0
    in_place_update_ongoing: int = 0
    in_place_update_initiated: int = 0
    below_min_replicas: bool = False
    """Kept below ``minReplicas`` for in-place resizes only (``--in-place-skip-disruption-budget``):
    none of its pods is evicted."""

    def is_pod_disruptable(self) -> bool:
        should_be_alive = self.configured - self.eviction_tolerance
        actually_alive = self.running - (self.evicted + self.in_place_update_initiated)
        return actually_alive > should_be_alive or (
            self.configured == self.running
            and self.eviction_tolerance == 0
            and self.evicted == 0
            and self.in_place_update_initiated == 0
        )


class ResizeStatus(StrEnum):
    """``ResizeStatus`` (``pkg/updater/utils/types.go``)."""

    DEFERRED = "ResizeDeferred"
    INFEASIBLE = "ResizeInfeasible"
    IN_PROGRESS = "ResizeInProgress"
    ERROR = "ResizeError"
    UNKNOWN = "ResizeUnknown"
    NONE = "ResizeNone"


class InPlaceDecision(StrEnum):
    """``InPlaceDecision``."""

    APPROVED = "InPlaceApproved"
    DEFERRED = "InPlaceDeferred"
    EVICT = "InPlaceEvict"
    INFEASIBLE = "InPlaceInfeasible"
    INFEASIBLE_CACHED = "InPlaceInfeasibleCached"


def is_in_place_updating(pod: UpdatePod) -> bool:
    """``isInPlaceUpdating``: the first resize condition found decides."""
    for condition in pod.conditions:
        if condition.type in (POD_RESIZE_PENDING, POD_RESIZE_IN_PROGRESS):
            return condition.status == "True"
    return False


def resize_status(pod: UpdatePod) -> ResizeStatus:
    """``getResizeStatus``."""
    if not is_in_place_updating(pod):
        return ResizeStatus.NONE
    pending = pod.condition(POD_RESIZE_PENDING)
    if pending is not None:
        if pending.reason == REASON_DEFERRED:
            return ResizeStatus.DEFERRED
        if pending.reason == REASON_INFEASIBLE:
            return ResizeStatus.INFEASIBLE
        return ResizeStatus.UNKNOWN
    in_progress = pod.condition(POD_RESIZE_IN_PROGRESS)
    if in_progress is not None:
        if in_progress.reason == "" and in_progress.message == "":
            return ResizeStatus.IN_PROGRESS
        if in_progress.reason == REASON_ERROR:
            return ResizeStatus.ERROR
    return ResizeStatus.UNKNOWN


def pod_id(pod: UpdatePod) -> str:
    """``getPodID``: ``namespace/name``."""
    return f"{pod.namespace}/{pod.name}"


def can_evict_in_placing_pod(
    pod: UpdatePod,
    stats: GroupStats,
    last_in_place_attempt: MutableMapping[str, datetime],
    *,
    now: datetime,
) -> bool:
    """``CanEvictInPlacingPod``: a pod being resized may be evicted when its group can lose it
    and the resize failed: ``Infeasible`` (or an unknown pending reason), ``Deferred`` for more
    than 5 minutes, in progress for more than an hour, or an ``Error``. The first time a resizing
    pod is seen its attempt time is taken as ``now``."""
    if not is_in_place_updating(pod):
        return False
    last = last_in_place_attempt.setdefault(pod_id(pod), now)
    if not stats.is_pod_disruptable():
        return False
    pending = pod.condition(POD_RESIZE_PENDING)
    if pending is not None:
        if pending.reason == REASON_DEFERRED:
            return now - last > DEFERRED_RESIZE_UPDATE_TIMEOUT
        return True
    in_progress = pod.condition(POD_RESIZE_IN_PROGRESS)
    if in_progress is not None:
        if in_progress.reason == "" and in_progress.message == "":
            return now - last > IN_PROGRESS_RESIZE_UPDATE_TIMEOUT
        return True
    return False


@dataclass(slots=True)
class EvictionRestriction:
    """``PodsEvictionRestrictionImpl`` and ``PodsInPlaceRestrictionImpl`` for one VPA in one
    updater loop, sharing one budget: ``can_evict``/``can_in_place_update`` before acting,
    ``record_eviction``/``record_in_place_update`` after the API server accepted.
    ``last_in_place_attempt`` (``lastInPlaceAttemptTimeMap``) outlives the loop: the updater
    passes the same mapping every time."""

    groups: dict[ReplicaGroup, GroupStats]
    last_in_place_attempt: MutableMapping[str, datetime] = field(default_factory=dict)
    now: datetime | None = None
    skip_disruption_budget: bool = False
    """``--in-place-skip-disruption-budget`` for this VPA: a resize that restarts no container
    is approved without the group's budget."""

    def _now(self) -> datetime:
        if self.now is None:
            raise ValueError("the restriction needs the loop's time to judge resizing pods")
        return self.now

    def can_evict(self, pod: UpdatePod) -> bool:
        if pod.controller is None or pod.controller not in self.groups:
            return False
        if pod.phase == "Pending":
            return True
        stats = self.groups[pod.controller]
        if stats.below_min_replicas:
            return False
        if is_in_place_updating(pod):
            return can_evict_in_placing_pod(pod, stats, self.last_in_place_attempt, now=self._now())
        return stats.is_pod_disruptable()

    def can_in_place_update(
        self,
        pod: UpdatePod,
        *,
        update_mode: str,
        recommendation: Sequence[ContainerRecommendation] | None,
        infeasible_attempt: Sequence[ContainerRecommendation] | None = None,
    ) -> InPlaceDecision:
        """``CanInPlaceUpdate``. ``recommendation`` is the VPA's (None when it has none);
        ``infeasible_attempt`` the recommendation of this pod's last infeasible resize."""
        if pod.controller is None or pod.controller not in self.groups:
            return InPlaceDecision.DEFERRED
        if pod.phase == "Pending":
            return InPlaceDecision.DEFERRED
        stats = self.groups[pod.controller]
        if recommendation is None:
            return InPlaceDecision.DEFERRED
        in_place_only = update_mode == "InPlace"
        if (
            in_place_only
            and infeasible_attempt is not None
            and not has_lower_resource_recommendation(infeasible_attempt, recommendation)
        ):
            return InPlaceDecision.INFEASIBLE_CACHED
        status = resize_status(pod)
        if status is not ResizeStatus.NONE:
            if in_place_only:
                if status is ResizeStatus.INFEASIBLE:
                    return InPlaceDecision.INFEASIBLE
                return InPlaceDecision.DEFERRED
            if can_evict_in_placing_pod(pod, stats, self.last_in_place_attempt, now=self._now()):
                return InPlaceDecision.EVICT
            return InPlaceDecision.DEFERRED
        if self.skip_disruption_budget and pod.non_disruptive_resize:
            return InPlaceDecision.APPROVED
        if stats.is_pod_disruptable():
            return InPlaceDecision.APPROVED
        return InPlaceDecision.DEFERRED

    def record_in_place_update(self, pod: UpdatePod) -> None:
        """Count a resize the API server accepted against the pod's group
        (``inPlaceUpdateInitiated``)."""
        if pod.controller is None or pod.controller not in self.groups:
            raise ValueError(f"pod {pod.namespace}/{pod.name} is not in an updatable group")
        stats = self.groups[pod.controller]
        self.groups[pod.controller] = replace(
            stats, in_place_update_initiated=stats.in_place_update_initiated + 1
        )

    def record_eviction(self, pod: UpdatePod) -> None:
        """Count an eviction against the pod's group (pending pods do not count)."""
        if pod.controller is None or pod.controller not in self.groups:
            raise ValueError(f"pod {pod.namespace}/{pod.name} is not in an evictable group")
        if pod.phase != "Pending":
            stats = self.groups[pod.controller]
            self.groups[pod.controller] = replace(stats, evicted=stats.evicted + 1)


def eviction_restriction(
    pods: Iterable[UpdatePod],
    configured_replicas: Mapping[ReplicaGroup, int | None],
    *,
    min_replicas: int,
    eviction_tolerance: float,
    last_in_place_attempt: MutableMapping[str, datetime] | None = None,
    now: datetime | None = None,
    in_place_skip_disruption_budget: bool = False,
) -> EvictionRestriction:
    """``GetCreatorMaps``: the groups of ``pods`` that may be disrupted. ``configured_replicas``
    is the controller's ``spec.replicas`` (a DaemonSet's ``desiredNumberScheduled``); a Job's is
    its live pod count. ``min_replicas`` is the VPA's ``updatePolicy.minReplicas`` or the flag.
    ``in_place_skip_disruption_budget``: the flag is set and the VPA's mode is ``InPlace`` or
    ``InPlaceOrRecreate``."""
    live: dict[ReplicaGroup, list[UpdatePod]] = {}
    for pod in pods:
        if pod.controller is not None:
            live.setdefault(pod.controller, []).append(pod)
    groups: dict[ReplicaGroup, GroupStats] = {}
    for group, members in live.items():
        below_min_replicas = False
        if len(members) < min_replicas:
            boosted = any(p.cpu_boost_in_progress for p in members)
            if not boosted and not in_place_skip_disruption_budget:
                continue
            below_min_replicas = in_place_skip_disruption_budget
        configured = len(members) if group.kind == "Job" else configured_replicas.get(group)
        if not configured:
            continue
        pending = sum(1 for pod in members if pod.phase == "Pending")
        groups[group] = GroupStats(
            configured=configured,
            pending=pending,
            running=len(members) - pending,
            eviction_tolerance=int(float(configured) * eviction_tolerance),
            in_place_update_ongoing=sum(1 for pod in members if is_in_place_updating(pod)),
            below_min_replicas=below_min_replicas,
        )
    return EvictionRestriction(
        groups,
        {} if last_in_place_attempt is None else last_in_place_attempt,
        now,
        skip_disruption_budget=in_place_skip_disruption_budget,
    )
