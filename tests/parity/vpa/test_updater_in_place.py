"""Upstream's in-place restriction tables (kubernetes/autoscaler ``vertical-pod-autoscaler``
v1.8.1 ``pkg/updater/restriction/pods_inplace_restriction_test.go``: ``TestCanInPlaceUpdate``,
``TestInPlaceModeResizeStatuses``, ``TestEvictionToleranceForInPlace``, ``TestInPlaceAtLeastOne``,
``TestEvictionToleranceForInPlaceWithSkipDisruptionBudget``,
``TestEvictionToleranceForInPlaceWithSkipDisruptionBudgetWithLessThanMinimumPods``,
``TestInPlaceSkipDisruptionBudgetWithResizePolicy``; ``pods_eviction_restriction_test.go``:
``TestEvictTooFewReplicasWithInPlaceSkipDisruptionBudget``; ``pods_restriction_factory_test.go``:
``TestGetResizeStatus``), ported row by row.

Rows for the ``InPlace`` feature gate switched off do not apply (the gate is always on).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpa.core.vpa.update import (
    ContainerRecommendation,
    EvictionRestriction,
    InPlaceDecision,
    PodCondition,
    ReplicaGroup,
    ResizeStatus,
    UpdatePod,
    eviction_restriction,
    resize_status,
)

RC = ReplicaGroup("default", "ReplicationController", "rc")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
HOUR = EPOCH + timedelta(hours=1)
DEFAULT_CLOCK = EPOCH + timedelta(milliseconds=3600001)
ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)

PENDING_DEFERRED = PodCondition("PodResizePending", "True", "Deferred")
PENDING_INFEASIBLE = PodCondition("PodResizePending", "True", "Infeasible")
IN_PROGRESS = PodCondition("PodResizeInProgress", "True")
IN_PROGRESS_ERROR = PodCondition("PodResizeInProgress", "True", "Error", "some error")


def pod(
    name: str, *conditions: PodCondition, uid: str = "", non_disruptive: bool = True
) -> UpdatePod:
    return UpdatePod(
        namespace="default",
        name=name,
        containers=(("test-container", {"cpu": 500, "memory": 512 * 1024**2 * 1000}),),
        controller=RC,
        conditions=conditions,
        uid=uid or name,
        non_disruptive_resize=non_disruptive,
    )


def rec(cpu_milli: int, mem_gib: int) -> tuple[ContainerRecommendation, ...]:
    return (ContainerRecommendation("test-container", {"cpu": cpu_milli, "memory": mem_gib}),)


REC = rec(1000, 1)


def decide(
    pods: list[UpdatePod],
    *,
    replicas: int,
    tolerance: float,
    mode: str,
    last_attempt: datetime,
    clock: datetime = DEFAULT_CLOCK,
    min_replicas: int = 2,
    recommendation: tuple[ContainerRecommendation, ...] | None = REC,
    infeasible: tuple[ContainerRecommendation, ...] | None = None,
    skip: bool = False,
) -> InPlaceDecision:
    selected = pods[0]
    restriction = eviction_restriction(
        pods,
        {RC: replicas},
        min_replicas=min_replicas,
        eviction_tolerance=tolerance,
        last_in_place_attempt={f"{selected.namespace}/{selected.name}": last_attempt},
        now=clock,
        in_place_skip_disruption_budget=skip and mode in (IPOR, IP),
    )
    return restriction.can_in_place_update(
        selected, update_mode=mode, recommendation=recommendation, infeasible_attempt=infeasible
    )


IPOR, IP, RECREATE = "InPlaceOrRecreate", "InPlace", "Recreate"
A, D, E, INF, C = (
    InPlaceDecision.APPROVED,
    InPlaceDecision.DEFERRED,
    InPlaceDecision.EVICT,
    InPlaceDecision.INFEASIBLE,
    InPlaceDecision.INFEASIBLE_CACHED,
)

# name: (first pod's conditions, pod count, replicas, tolerance, last attempt, mode, clock, want,
#        --in-place-skip-disruption-budget)
CAN_IN_PLACE_UPDATE = {
    "InPlaceApproved - (half of 3)": ((), 3, 3, 0.5, ZERO_TIME, IPOR, DEFAULT_CLOCK, A),
    "InPlaceApproved(InPlaceOrRecreate mode) - with inPlaceSkipDisruptionBudget flag": (
        (), 1, 1, 0.5, ZERO_TIME, IPOR, DEFAULT_CLOCK, A, True,
    ),
    "InPlaceApproved(InPlace mode) - with inPlaceSkipDisruptionBudget flag": (
        (), 1, 1, 0.5, ZERO_TIME, IP, DEFAULT_CLOCK, A, True,
    ),
    "InPlaceDeferred(InPlaceOrRecreate) - without inPlaceSkipDisruptionBudget flag": (
        (), 1, 1, 0.5, ZERO_TIME, IPOR, DEFAULT_CLOCK, D,
    ),
    "InPlaceDeferred(InPlace) - without inPlaceSkipDisruptionBudget flag": (
        (), 1, 1, 0.5, ZERO_TIME, IP, DEFAULT_CLOCK, D,
    ),
    "InPlaceDeferred - no pods can be in-placed, one missing": (
        (), 2, 3, 0.5, ZERO_TIME, IPOR, DEFAULT_CLOCK, D,
    ),
    "InPlaceApproved - small tolerance, all running": (
        (), 3, 3, 0.1, ZERO_TIME, IPOR, DEFAULT_CLOCK, A,
    ),
    "InPlaceApproved - small tolerance, one missing": (
        (), 2, 3, 0.5, ZERO_TIME, IPOR, DEFAULT_CLOCK, D,
    ),
    "InPlaceDeferred - resize Deferred, conditions not met to fallback": (
        (PENDING_DEFERRED,), 3, 3, 0.5, HOUR, IPOR, DEFAULT_CLOCK, D,
    ),
    "InPlaceEvict - resize inProgress for more too long": (
        (IN_PROGRESS,), 3, 3, 0.5, EPOCH, IPOR, DEFAULT_CLOCK, E,
    ),
    "InPlaceDeferred - resize InProgress, conditions not met to fallback": (
        (IN_PROGRESS,), 3, 3, 0.5, HOUR, IPOR, DEFAULT_CLOCK, D,
    ),
    "InPlaceEvict - infeasible": (
        (PENDING_INFEASIBLE,), 3, 3, 0.5, ZERO_TIME, IPOR, DEFAULT_CLOCK, E,
    ),
    "InPlace - InPlaceApproved - all pods running": (
        (), 3, 3, 0.5, ZERO_TIME, IP, DEFAULT_CLOCK, A,
    ),
    "InPlace - InPlaceDeferred - resize InProgress, waits indefinitely (no timeout)": (
        (IN_PROGRESS,), 3, 3, 0.5, EPOCH, IP, DEFAULT_CLOCK, D,
    ),
    "InPlace - InPlaceDeferred - no update policy for vpa": (
        (IN_PROGRESS,), 3, 3, 0.5, EPOCH, RECREATE, DEFAULT_CLOCK, E,
    ),
    "InPlace mode - waits indefinitely for in-progress updates": (
        (IN_PROGRESS,), 3, 3, 0.5, EPOCH, IP, EPOCH + timedelta(hours=2), D,
    ),
    "InPlace mode - infeasible returns InPlaceInfeasible": (
        (PENDING_INFEASIBLE,), 3, 3, 0.5, ZERO_TIME, IP, ZERO_TIME, INF,
    ),
    "InPlace mode - deferred pod with changed recommendations retries": (
        (PENDING_DEFERRED,), 3, 3, 0.5, ZERO_TIME, IP, ZERO_TIME, D,
    ),
    "InPlaceOrRecreate mode - deferred pod with changed recommendations retries": (
        (PENDING_DEFERRED,), 3, 3, 0.5, ZERO_TIME, IPOR, ZERO_TIME, D,
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("conditions", "count", "replicas", "tolerance", "last", "mode", "clock", "want", "skip"),
    [(*row, False)[:9] for row in CAN_IN_PLACE_UPDATE.values()],
    ids=CAN_IN_PLACE_UPDATE.keys(),
)
def test_can_in_place_update(
    conditions: tuple[PodCondition, ...],
    count: int,
    replicas: int,
    tolerance: float,
    last: datetime,
    mode: str,
    clock: datetime,
    want: InPlaceDecision,
    skip: bool,
) -> None:
    pods = [pod("test-0", *conditions)] + [pod(f"test-{i}") for i in range(1, count)]
    got = decide(
        pods,
        replicas=replicas,
        tolerance=tolerance,
        mode=mode,
        last_attempt=last,
        clock=clock,
        skip=skip,
    )
    assert got is want


# name: (recommendation now, last infeasible attempt, mode, want)
INFEASIBLE_CACHING = {
    "same recommendation returns cached": (rec(1000, 1), rec(1000, 1), IP, C),
    "lower recommendation allows retry": (rec(1000, 2), rec(2000, 2), IP, A),
    "higher recommendation returns cached": (rec(2000, 2), rec(1000, 1), IP, C),
    "no history proceeds normally": (rec(1000, 1), None, IP, A),
    "InPlaceOrRecreate ignores cache": (rec(1000, 1), rec(1000, 1), IPOR, A),
    "no current recommendation defers": (None, None, IP, D),
}


@pytest.mark.parametrize(
    ("recommendation", "infeasible", "mode", "want"),
    INFEASIBLE_CACHING.values(),
    ids=INFEASIBLE_CACHING.keys(),
)
def test_infeasible_caching(
    recommendation: tuple[ContainerRecommendation, ...] | None,
    infeasible: tuple[ContainerRecommendation, ...] | None,
    mode: str,
    want: InPlaceDecision,
) -> None:
    got = decide(
        [pod("test-pod")],
        replicas=1,
        tolerance=0.5,
        mode=mode,
        last_attempt=ZERO_TIME,
        clock=ZERO_TIME,
        min_replicas=1,
        recommendation=recommendation,
        infeasible=infeasible,
    )
    assert got is want


MS = timedelta(milliseconds=1)
# name: (condition, mode, last attempt, clock, want)
RESIZE_STATUSES = {
    "InPlace mode - ResizeStatusDeferred returns InPlaceDeferred": (
        PENDING_DEFERRED, IP, EPOCH, HOUR, D,
    ),
    "InPlace mode - ResizeStatusInfeasible returns InPlaceInfeasible": (
        PENDING_INFEASIBLE, IP, EPOCH, HOUR, INF,
    ),
    "InPlace mode - ResizeStatusInProgress returns InPlaceDeferred": (
        IN_PROGRESS, IP, EPOCH, HOUR, D,
    ),
    "InPlace mode - ResizeStatusError returns InPlaceDeferred": (
        IN_PROGRESS_ERROR, IP, EPOCH, HOUR, D,
    ),
    "InPlaceOrRecreate mode - ResizeStatusDeferred within timeout returns InPlaceDeferred": (
        PENDING_DEFERRED, IPOR, HOUR, HOUR + MS, D,
    ),
    "InPlaceOrRecreate mode - ResizeStatusDeferred past timeout returns InPlaceEvict": (
        PENDING_DEFERRED, IPOR, EPOCH, EPOCH + timedelta(minutes=10), E,
    ),
    "InPlaceOrRecreate mode - ResizeStatusInfeasible returns InPlaceEvict": (
        PENDING_INFEASIBLE, IPOR, EPOCH, HOUR, E,
    ),
    "InPlaceOrRecreate mode - ResizeStatusInProgress within timeout returns InPlaceDeferred": (
        IN_PROGRESS, IPOR, HOUR, HOUR + MS, D,
    ),
    "InPlaceOrRecreate mode - ResizeStatusInProgress past timeout returns InPlaceEvict": (
        IN_PROGRESS, IPOR, EPOCH, EPOCH + timedelta(hours=2), E,
    ),
    "InPlaceOrRecreate mode - ResizeStatusError returns InPlaceEvict": (
        IN_PROGRESS_ERROR, IPOR, EPOCH, HOUR, E,
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("condition", "mode", "last", "clock", "want"),
    RESIZE_STATUSES.values(),
    ids=RESIZE_STATUSES.keys(),
)
def test_in_place_mode_resize_statuses(
    condition: PodCondition, mode: str, last: datetime, clock: datetime, want: InPlaceDecision
) -> None:
    pods = [pod("test-0", condition), pod("test-1"), pod("test-2")]
    assert (
        decide(pods, replicas=3, tolerance=0.5, mode=mode, last_attempt=last, clock=clock) is want
    )


def test_a_resizing_pod_first_seen_now_is_not_evicted_for_a_deferred_resize() -> None:
    """``CanEvictInPlacingPod``: no attempt time recorded yet means "now"."""
    pods = [pod("test-0", PENDING_DEFERRED), pod("test-1"), pod("test-2")]
    attempts: dict[str, datetime] = {}
    restriction = eviction_restriction(
        pods,
        {RC: 3},
        min_replicas=2,
        eviction_tolerance=0.5,
        last_in_place_attempt=attempts,
        now=HOUR,
    )
    assert not restriction.can_evict(pods[0])
    assert attempts == {"default/test-0": HOUR}


@pytest.mark.parametrize(
    ("replicas", "tolerance", "count", "want"),
    [(5, 0.8, 5, [True, True, True, True, False]), (5, 0.1, 5, [True, False, False, False, False])],
    ids=["TestEvictionToleranceForInPlace", "TestInPlaceAtLeastOne"],
)
def test_in_place_tolerance(replicas: int, tolerance: float, count: int, want: list[bool]) -> None:
    pods = [pod(f"test-{i}") for i in range(count)]
    restriction = eviction_restriction(
        pods, {RC: replicas}, min_replicas=2, eviction_tolerance=tolerance, now=HOUR
    )
    got = []
    for p in pods:
        approved = restriction.can_in_place_update(p, update_mode=IPOR, recommendation=REC) is A
        if approved:
            restriction.record_in_place_update(p)
        got.append(approved)
    assert got == want


def test_resizes_and_evictions_share_one_budget() -> None:
    pods = [pod(f"test-{i}") for i in range(4)]
    restriction = eviction_restriction(
        pods, {RC: 4}, min_replicas=2, eviction_tolerance=0.5, now=HOUR
    )
    restriction.record_in_place_update(pods[0])
    restriction.record_eviction(pods[1])
    assert not restriction.can_evict(pods[2])
    assert restriction.can_in_place_update(pods[3], update_mode=IPOR, recommendation=REC) is D


# name: (conditions, want)
GET_RESIZE_STATUS = {
    "pod not in-place updating - no resize status": ((), ResizeStatus.NONE),
    "PodResizePending with Deferred reason": ((PENDING_DEFERRED,), ResizeStatus.DEFERRED),
    "PodResizePending with Infeasible reason": (
        (PodCondition("PodResizePending", "True", "Infeasible", "Insufficient cpu"),),
        ResizeStatus.INFEASIBLE,
    ),
    "PodResizePending with unknown reason": (
        (PodCondition("PodResizePending", "True", "SomeOtherReason"),),
        ResizeStatus.UNKNOWN,
    ),
    "PodResizePending with empty reason": (
        (PodCondition("PodResizePending", "True"),),
        ResizeStatus.UNKNOWN,
    ),
    "PodResizeInProgress with empty reason and message": ((IN_PROGRESS,), ResizeStatus.IN_PROGRESS),
    "PodResizeInProgress with Error reason": (
        (PodCondition("PodResizeInProgress", "True", "Error", "Failed to resize container"),),
        ResizeStatus.ERROR,
    ),
    "PodResizeInProgress with unknown reason": (
        (PodCondition("PodResizeInProgress", "True", "SomeOtherReason", "some message"),),
        ResizeStatus.UNKNOWN,
    ),
    "PodResizeInProgress with message but no reason": (
        (PodCondition("PodResizeInProgress", "True", "", "some message"),),
        ResizeStatus.UNKNOWN,
    ),
    "pod with unrelated condition only": ((PodCondition("Ready", "True"),), ResizeStatus.NONE),
    "both PodResizePending and PodResizeInProgress - PodResizePending takes precedence": (
        (PENDING_DEFERRED, IN_PROGRESS),
        ResizeStatus.DEFERRED,
    ),
}


@pytest.mark.parametrize(
    ("conditions", "want"), GET_RESIZE_STATUS.values(), ids=GET_RESIZE_STATUS.keys()
)
def test_get_resize_status(conditions: tuple[PodCondition, ...], want: ResizeStatus) -> None:
    assert resize_status(pod("p", *conditions)) is want


# ------------------------------------------------------ --in-place-skip-disruption-budget


def skipping(
    pods: list[UpdatePod],
    *,
    replicas: int,
    tolerance: float,
    skip: bool = True,
    min_replicas: int = 2,
) -> EvictionRestriction:
    return eviction_restriction(
        pods,
        {RC: replicas},
        min_replicas=min_replicas,
        eviction_tolerance=tolerance,
        now=ZERO_TIME,
        in_place_skip_disruption_budget=skip,
    )


def resize_all(restriction: EvictionRestriction, pods: list[UpdatePod], mode: str = IPOR) -> int:
    """Approve and record resizes in turn, as the updater does; how many went through."""
    done = 0
    for one in pods:
        if restriction.can_in_place_update(one, update_mode=mode, recommendation=REC) is A:
            restriction.record_in_place_update(one)
            done += 1
    return done


def test_eviction_tolerance_for_in_place_with_skip_disruption_budget() -> None:
    pods = [pod(f"test-{i}") for i in range(5)]
    restriction = skipping(pods, replicas=5, tolerance=0.8)
    assert all(
        restriction.can_in_place_update(p, update_mode=IPOR, recommendation=REC) is A for p in pods
    )
    assert resize_all(restriction, pods) == 5


def test_skip_disruption_budget_with_less_than_minimum_pods_resizes_but_never_evicts() -> None:
    pods = [pod("test-0")]
    restriction = skipping(pods, replicas=5, tolerance=0.8)
    assert resize_all(restriction, pods) == 1
    assert restriction.can_evict(pods[0]) is False


def test_evict_too_few_replicas_with_in_place_skip_disruption_budget() -> None:
    pods = [pod(f"test-{i}") for i in range(5)]
    restriction = skipping(pods, replicas=5, tolerance=0.5, min_replicas=10)
    assert not any(restriction.can_evict(p) for p in pods)


# name: (no container restarts on a resize, flag, resizes approved of 5)
SKIP_WITH_RESIZE_POLICY = {
    "NotRequired policy with flag enabled - should skip disruption budget": (True, True, 5),
    # upstream names this row "RestartContainer policy with flag enabled", but its pods have
    # NotRequired policies and the flag is off
    "NotRequired policy with flag disabled - should respect disruption budget": (True, False, 1),
    "Only RestartContainer policy with flag enabled - should respect disruption budget": (
        False,
        True,
        1,
    ),
    "No resize policy with flag enabled - should skip disruption budget": (True, True, 5),
    "No resize policy with flag disabled - should respect disruption budget": (True, False, 1),
    "Multiple containers - one NotRequired, one RestartContainer - should respect budget": (
        False,
        True,
        1,
    ),
}


@pytest.mark.parametrize(
    ("non_disruptive", "skip", "want"),
    SKIP_WITH_RESIZE_POLICY.values(),
    ids=SKIP_WITH_RESIZE_POLICY.keys(),
)
def test_in_place_skip_disruption_budget_with_resize_policy(
    non_disruptive: bool, skip: bool, want: int
) -> None:
    pods = [pod(f"test-{i}", non_disruptive=non_disruptive) for i in range(5)]
    assert resize_all(skipping(pods, replicas=5, tolerance=0.1, skip=skip), pods) == want
