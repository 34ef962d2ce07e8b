"""Parity with the VPA updater's priority and eviction-restriction rules.

Ported from kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1:
``pkg/updater/priority/priority_processor_test.go`` (``TestGetUpdatePriority``,
``TestGetUpdatePriority_VpaObservedContainers``), ``update_priority_calculator_test.go``
(``TestSortPriority``, ``TestSortPriorityResourcesDecrease``, ``TestUpdateNotRequired``,
``TestUpdateLonglivedPods``, ``TestUpdateShortlivedPods``, the quick-OOM tests,
``TestLessPodPriority``, ``TestHasLowerResourceRecommendation``) and
``pkg/updater/restriction/pods_restriction_factory_test.go`` (``TestDisruptReplicatedByController``,
eviction rows) with ``pods_eviction_restriction_test.go`` (``TestEvictTooFewReplicas``,
``TestEvictionTolerance``, ``TestEvictAtLeastOne``), and
``pkg/updater/priority/scaling_direction_pod_eviction_admission_test.go``
(``TestAdmitForSingleContainer``, ``TestAdmitForMultipleContainer``).

Quantities are written as upstream's test strings and read with ``hpa.core.quantity``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpa.core.quantity import parse_quantity
from hpa.core.vpa.update import (
    ContainerRecommendation,
    ContainerStatus,
    EvictionRequirement,
    PodPriority,
    ReplicaGroup,
    UpdateConfig,
    UpdatePod,
    admit_by_eviction_requirements,
    admit_for_update,
    eviction_restriction,
    get_update_priority,
    has_lower_resource_recommendation,
    quick_oom,
    sorted_for_update,
)

C = "test-container"
START = datetime(2026, 1, 1, tzinfo=UTC)
RC = ReplicaGroup("default", "ReplicationController", "rc")


def milli(text: str) -> int:
    return parse_quantity(text).milli_value()


def res(cpu: str = "", mem: str = "") -> dict[str, int]:
    out = {}
    if cpu:
        out["cpu"] = milli(cpu)
    if mem:
        out["memory"] = milli(mem)
    return out


def pod(
    name: str = "POD1",
    *containers: tuple[str, dict[str, int]],
    statuses: tuple[ContainerStatus, ...] = (),
    observed: str | None = None,
    phase: str = "Running",
    controller: ReplicaGroup | None = RC,
    priority: int = 0,
    boosted: bool = False,
) -> UpdatePod:
    return UpdatePod(
        namespace="default",
        name=name,
        containers=containers or ((C, res("1")),),
        statuses=statuses,
        observed_containers=observed,
        start_time=START,
        phase=phase,
        controller=controller,
        priority=priority,
        cpu_boost_in_progress=boosted,
    )


def rec(
    container: str = C,
    target: tuple[str, str] = ("", ""),
    lower: tuple[str, str] = ("", ""),
    upper: tuple[str, str] = ("", ""),
) -> ContainerRecommendation:
    return ContainerRecommendation(container, res(*target), res(*lower), res(*upper))


PRIORITY_CASES = {
    "simple scale up": (pod("POD1", (C, res("2"))), [rec(target=("10", ""))], (False, True, 4.0)),
    "simple scale up, resources from containerStatus have higher priority": (
        pod("POD1", (C, res("10000")), statuses=(ContainerStatus(C, res("2")),)),
        [rec(target=("10", ""))],
        (False, True, 4.0),
    ),
    "simple scale down": (pod("POD1", (C, res("4"))), [rec(target=("2", ""))], (False, False, 0.5)),
    "no resource diff": (pod("POD1", (C, res("2"))), [rec(target=("2", ""))], (False, False, 0.0)),
    "scale up on milliquanitites": (
        pod("POD1", (C, res("10m"))),
        [rec(target=("900m", ""))],
        (False, True, 89.0),
    ),
    "scale up outside recommended range": (
        pod("POD1", (C, res("4"))),
        [rec(target=("10", ""), lower=("6", ""), upper=("14", ""))],
        (True, True, 1.5),
    ),
    "scale down outside recommended range": (
        pod("POD1", (C, res("8"))),
        [rec(target=("2", ""), lower=("1", ""), upper=("3", ""))],
        (True, False, 0.75),
    ),
    "multiple resources, both scale up": (
        pod("POD1", (C, res("3", "10M"))),
        [rec(target=("6", "20M"))],
        (False, True, 2.0),
    ),
    "multiple resources, only one scale up": (
        pod("POD1", (C, res("4", "10M"))),
        [rec(target=("2", "20M"))],
        (False, True, 1.5),
    ),
    "multiple resources, both scale down": (
        pod("POD1", (C, res("4", "20M"))),
        [rec(target=("2", "10M"))],
        (False, False, 1.0),
    ),
    "multiple resources, one outside recommended range": (
        pod("POD1", (C, res("4", "20M"))),
        [rec(target=("2", "10M"), lower=("1", "5M"), upper=("3", "30M"))],
        (True, False, 1.0),
    ),
    "multiple containers, both scale up": (
        pod("POD1", (C, res("1")), ("test-container-2", res("2"))),
        [rec(target=("4", "")), rec("test-container-2", ("8", ""))],
        (False, True, 3.0),
    ),
    "multiple containers, both scale down": (
        pod("POD1", (C, res("3")), ("test-container-2", res("7"))),
        [rec(target=("1", "")), rec("test-container-2", ("2", ""))],
        (False, False, 0.7),
    ),
    "multiple containers, both scale up, one outside range": (
        pod("POD1", (C, res("1")), ("test-container-2", res("2"))),
        [
            rec(target=("4", ""), lower=("1", "")),
            rec("test-container-2", ("8", ""), ("3", ""), ("10", "")),
        ],
        (True, True, 3.0),
    ),
    "multiple containers, multiple resources": (
        pod("POD1", (C, res("6", "10M")), ("test-container-2", res("4", "30M"))),
        [rec(target=("8", "20M")), rec("test-container-2", ("7", "30M"))],
        (False, True, 0.5 + 0.25),
    ),
    "a missing request scales up and is outside the range": (
        pod("POD1", (C, res("", "10M"))),
        [rec(target=("1", "10M"))],
        (True, True, 999.0),
    ),
}


@pytest.mark.parametrize(
    ("the_pod", "recommendations", "expected"), PRIORITY_CASES.values(), ids=PRIORITY_CASES.keys()
)
def test_get_update_priority(
    the_pod: UpdatePod,
    recommendations: list[ContainerRecommendation],
    expected: tuple[bool, bool, float],
) -> None:
    got = get_update_priority(the_pod, recommendations)
    assert (got.outside_recommended_range, got.scale_up) == expected[:2]
    assert got.resource_diff == pytest.approx(expected[2])


def test_no_recommendation_for_the_container() -> None:
    assert get_update_priority(pod("POD1", (C, res("5", "10"))), []) == PodPriority()


@pytest.mark.parametrize(
    ("annotation", "want"),
    [(None, 9.0), (C, 9.0), ("", 0.0), ("abcd;';", 9.0)],
    ids=["no annotation", "listed", "not listed", "incorrect annotation"],
)
def test_get_update_priority_vpa_observed_containers(annotation: str | None, want: float) -> None:
    got = get_update_priority(
        pod("POD1", (C, res("1")), observed=annotation), [rec(target=("10", ""))]
    )
    assert got.resource_diff == pytest.approx(want)


def queue(
    pods: list[UpdatePod],
    recommendations: list[ContainerRecommendation],
    *,
    now: datetime,
    config: UpdateConfig | None = None,
) -> list[UpdatePod]:
    """``AddPod`` for each pod, then ``GetSortedPods`` (with the default admission)."""
    config = config or UpdateConfig()
    queued = []
    for p in pods:
        priority = get_update_priority(p, recommendations)
        oomed = quick_oom(p, now=now, threshold=config.evict_after_oom_threshold)
        if admit_for_update(p, priority, now=now, config=config, quick_oomed=oomed):
            queued.append((p, priority))
    return sorted_for_update(queued)


def names(pods: list[UpdatePod]) -> list[str]:
    return [p.name for p in pods]


def test_sort_priority() -> None:
    pods = [pod(f"POD{i + 1}", (C, res(cpu))) for i, cpu in enumerate(["2", "4", "1", "3"])]
    got = queue(pods, [rec(target=("10", ""))], now=START + timedelta(hours=24))
    assert names(got) == ["POD3", "POD1", "POD4", "POD2"]


def test_sort_priority_resources_decrease() -> None:
    pods = [pod(f"POD{i + 1}", (C, res(cpu))) for i, cpu in enumerate(["4", "8", "10"])]
    got = queue(pods, [rec(target=("5", ""))], now=START + timedelta(hours=24))
    assert names(got) == ["POD1", "POD3", "POD2"]


def test_update_not_required() -> None:
    got = queue(
        [pod("POD1", (C, res("4")))], [rec(target=("4", ""))], now=START + timedelta(hours=24)
    )
    assert got == []


BOUNDED = [rec(target=("5", ""), lower=("1", ""), upper=("6", ""))]
HALF = UpdateConfig(min_change_priority=0.5)


def test_update_long_lived_pods() -> None:
    pods = [pod(f"POD{i + 1}", (C, res(cpu))) for i, cpu in enumerate(["4", "1", "8"])]
    got = queue(pods, BOUNDED, now=START + timedelta(hours=13), config=HALF)
    assert names(got) == ["POD2", "POD3"]


def test_update_short_lived_pods() -> None:
    pods = [pod(f"POD{i + 1}", (C, res(cpu))) for i, cpu in enumerate(["4", "1", "10"])]
    got = queue(pods, BOUNDED, now=START + timedelta(hours=11), config=HALF)
    assert names(got) == ["POD3"]


def oomed(now: datetime, *, ran: timedelta, ago: timedelta, **kw: object) -> UpdatePod:
    status = ContainerStatus(
        "",
        last_termination_reason="OOMKilled",
        last_termination_started=now - ago - ran,
        last_termination_finished=now - ago,
    )
    return pod("POD1", (C, res("4", "8Gi")), statuses=(status,), **kw)  # type: ignore[arg-type]


NOW_11H = START + timedelta(hours=11)


def test_update_pod_with_quick_oom() -> None:
    """Within range, short-lived, diff below the threshold: queued for its quick OOM."""
    p = oomed(NOW_11H, ran=timedelta(minutes=2), ago=timedelta(minutes=3))
    priority = PodPriority(scale_up=True, resource_diff=0.25)
    assert quick_oom(p, now=NOW_11H, threshold=timedelta(minutes=10))
    assert admit_for_update(p, priority, now=NOW_11H, config=HALF, quick_oomed=True)


def test_dont_update_pod_with_quick_oom_no_resource_change() -> None:
    p = oomed(NOW_11H, ran=timedelta(minutes=2), ago=timedelta(minutes=3))
    recommendations = [rec(target=("4", "8Gi"), lower=("2", "5Gi"), upper=("5", "10Gi"))]
    assert queue([p], recommendations, now=NOW_11H) == []


def test_dont_update_pod_with_oom_after_long_run() -> None:
    p = oomed(NOW_11H, ran=timedelta(minutes=57), ago=timedelta(minutes=3))
    assert not quick_oom(p, now=NOW_11H, threshold=timedelta(minutes=10))
    priority = PodPriority(scale_up=True, resource_diff=0.25)
    assert not admit_for_update(p, priority, now=NOW_11H, config=HALF, quick_oomed=False)


def test_dont_update_pod_with_stale_quick_oom() -> None:
    p = oomed(NOW_11H, ran=timedelta(minutes=2), ago=timedelta(days=10))
    assert not quick_oom(p, now=NOW_11H, threshold=timedelta(minutes=10))


@pytest.mark.parametrize(
    ("annotation", "off", "want"),
    [
        (None, frozenset(), True),
        ("", frozenset(), False),
        ("x", frozenset(), False),
        (None, frozenset({""}), False),
    ],
    ids=["no annotation", "empty annotation", "not listed", "scaling mode Off"],
)
def test_quick_oom_observed_containers_and_mode_off(
    annotation: str | None, off: frozenset[str], want: bool
) -> None:
    p = oomed(NOW_11H, ran=timedelta(minutes=2), ago=timedelta(minutes=3), observed=annotation)
    assert quick_oom(p, now=NOW_11H, threshold=timedelta(minutes=10), off_containers=off) is want


@pytest.mark.parametrize(
    ("prio", "other", "is_less"),
    [
        (PodPriority(resource_diff=0.0), PodPriority(resource_diff=0.1), True),
        (PodPriority(), PodPriority(scale_up=True, resource_diff=0.1), True),
        (
            PodPriority(scale_up=True, resource_diff=0.1),
            PodPriority(scale_up=True, resource_diff=0.2),
            True,
        ),
        (PodPriority(resource_diff=0.1), PodPriority(resource_diff=0.2), True),
    ],
    ids=["scale down more than empty", "scale up more than empty", "two scale ups", "two downs"],
)
def test_less_pod_priority(prio: PodPriority, other: PodPriority, is_less: bool) -> None:
    assert prio.less(other) is is_less
    assert other.less(prio) is (not is_less)


@pytest.mark.parametrize(
    ("last", "new", "expected"),
    [
        ([], [rec(target=("100m", ""))], False),
        ([rec(target=("100m", ""))], [], False),
        ([rec(target=("200m", ""))], [rec(target=("100m", ""))], True),
        ([rec(target=("", "512Mi"))], [rec(target=("", "256Mi"))], True),
        ([rec(target=("100m", "256Mi"))], [rec(target=("200m", "512Mi"))], False),
        ([rec(target=("100m", "256Mi"))], [rec(target=("100m", "256Mi"))], False),
        ([rec(target=("100m", ""))], [rec("other-container", ("50m", ""))], False),
        ([rec(target=("200m", "256Mi"))], [rec(target=("100m", "512Mi"))], True),
        ([rec(target=("100m", "512Mi"))], [rec(target=("200m", "256Mi"))], True),
    ],
    ids=[
        "lastAttempt nil",
        "newRecommendation nil",
        "new CPU is lower",
        "new memory is lower",
        "new resources are higher",
        "equal resources",
        "container not in lastAttempt",
        "one resource lower one higher",
        "cpu higher memory lower",
    ],
)
def test_has_lower_resource_recommendation(
    last: list[ContainerRecommendation], new: list[ContainerRecommendation], expected: bool
) -> None:
    assert has_lower_resource_recommendation(last, new) is expected


# (replicas, tolerance, min_replicas, [(phase, can_evict, eviction_success, boosted)])
EVICTION_CASES = {
    "Evict only first pod (half of 3).": (
        3,
        0.5,
        2,
        [("Running", True, True), ("Running", True, False), ("Running", True, False)],
    ),
    "Evict two pods (half of 4).": (
        4,
        0.5,
        2,
        [("Running", True, True)] * 2 + [("Running", True, False)] * 2,
    ),
    "Half of the population can be evicted. One pod is missing already.": (
        4,
        0.5,
        2,
        [("Running", True, True), ("Running", True, False), ("Running", True, False)],
    ),
    "For small eviction tolerance at least one pod is evicted.": (
        3,
        0.1,
        2,
        [("Running", True, True), ("Running", True, False), ("Running", True, False)],
    ),
    "Only 2 pods in replica of 3 and tolerance is 0. None of pods can be evicted.": (
        3,
        0.1,
        2,
        [("Running", False, False), ("Running", False, False)],
    ),
    "Only pending pod can be evicted without violation of tolerance.": (
        3,
        0.5,
        2,
        [("Running", False, False), ("Pending", True, True), ("Running", False, False)],
    ),
    "Pending pods are always evictable.": (
        4,
        0.5,
        2,
        [("Running", False, False)] + [("Pending", True, True)] * 3,
    ),
    "Cannot evict a single Pod under default settings.": (1, 0.5, 2, [("Running", False, False)]),
    "Can evict even a single Pod using PodUpdatePolicy.MinReplicas.": (
        1,
        0.5,
        1,
        [("Running", True, True)],
    ),
    "TestEvictTooFewReplicas": (10, 0.5, 10, [("Running", False, False)] * 5),
    "TestEvictionTolerance": (
        5,
        0.8,
        2,
        [("Running", True, True)] * 4 + [("Running", True, False)],
    ),
    "TestEvictAtLeastOne": (5, 0.1, 2, [("Running", True, True)] + [("Running", True, False)] * 4),
}


@pytest.mark.parametrize(
    ("replicas", "tolerance", "min_replicas", "pods"),
    EVICTION_CASES.values(),
    ids=EVICTION_CASES.keys(),
)
def test_disrupt_replicated_by_controller(
    replicas: int, tolerance: float, min_replicas: int, pods: list[tuple[str, bool, bool]]
) -> None:
    members = [pod(f"test-{i}", phase=phase) for i, (phase, _, _) in enumerate(pods)]
    restriction = eviction_restriction(
        members, {RC: replicas}, min_replicas=min_replicas, eviction_tolerance=tolerance
    )
    assert [restriction.can_evict(p) for p in members] == [can for _, can, _ in pods]
    evicted = []
    for p in members:
        ok = restriction.can_evict(p)
        if ok:
            restriction.record_eviction(p)
        evicted.append(ok)
    assert evicted == [success for _, _, success in pods]


def test_a_single_pod_with_a_cpu_boost_in_progress_can_be_updated() -> None:
    boosted = pod("test-1", boosted=True)
    restriction = eviction_restriction([boosted], {RC: 1}, min_replicas=2, eviction_tolerance=0.5)
    assert restriction.can_evict(boosted)


@pytest.mark.parametrize(
    ("group", "configured"),
    [
        (
            ReplicaGroup("default", "ReplicaSet", "rs"),
            {ReplicaGroup("default", "ReplicaSet", "rs"): 3},
        ),
        (
            ReplicaGroup("default", "StatefulSet", "ss"),
            {ReplicaGroup("default", "StatefulSet", "ss"): 3},
        ),
        (
            ReplicaGroup("default", "DaemonSet", "ds"),
            {ReplicaGroup("default", "DaemonSet", "ds"): 3},
        ),
        (ReplicaGroup("default", "Job", "job"), {}),
    ],
    ids=["ReplicaSet", "StatefulSet", "DaemonSet", "Job (live pods are its replicas)"],
)
def test_evict_replicated_by_other_controllers(
    group: ReplicaGroup, configured: dict[ReplicaGroup, int]
) -> None:
    members = [pod(f"p{i}", controller=group) for i in range(3)]
    restriction = eviction_restriction(members, configured, min_replicas=2, eviction_tolerance=0.5)
    outcomes = []
    for p in members:
        ok = restriction.can_evict(p)
        if ok:
            restriction.record_eviction(p)
        outcomes.append(ok)
    assert outcomes == [True, False, False]


@pytest.mark.parametrize("configured", [None, 0])
def test_a_controller_without_a_replica_count_is_never_disrupted(configured: int | None) -> None:
    members = [pod(f"p{i}") for i in range(3)]
    restriction = eviction_restriction(
        members, {RC: configured}, min_replicas=2, eviction_tolerance=0.5
    )
    assert not any(restriction.can_evict(p) for p in members)


def test_a_pod_without_a_controller_is_never_evicted() -> None:
    bare = [pod(f"p{i}", controller=None) for i in range(3)]
    restriction = eviction_restriction(bare, {}, min_replicas=1, eviction_tolerance=1.0)
    assert not any(restriction.can_evict(p) for p in bare)
    with pytest.raises(ValueError, match="not in an evictable group"):
        restriction.record_eviction(bare[0])


# ------------------------------------------------------------------ eviction requirements

HIGHER, LOWER = "TargetHigherThanRequests", "TargetLowerThanRequests"
C1, C2 = "test-container-1", "test-container-2"


def requirement(change: str, *resources: str) -> EvictionRequirement:
    return EvictionRequirement(resources, change)


ONE = pod("test-pod", (C, res("500m", "10Gi")))
TWO = pod("test-pod", (C1, res("500m", "10Gi")), (C2, res("500m", "10Gi")))

ADMIT_CASES = {
    # TestAdmitForSingleContainer
    "no resource request is present for a Pod": (
        pod("test-pod-without-requests", ("test-container-without-requests", {})),
        [rec("test-container-without-requests", target=("600m", "10Gi"))],
        [requirement(HIGHER, "cpu")],
        True,
    ),
    "recommendation is higher than ContainerStatus requests": (
        pod(
            "test-pod",
            (C, res("500m", "10Gi")),
            statuses=(ContainerStatus(C, res("100m", "1Gi")),),
        ),
        [rec(target=("400m", "4Gi"))],
        [requirement(HIGHER, "cpu", "memory")],
        True,
    ),
    "no config is given": (ONE, [rec(target=("600m", "10Gi"))], [], True),
    "CPU scaled up, config allows scaling up CPU": (
        ONE,
        [rec(target=("600m", "10Gi"))],
        [requirement(HIGHER, "cpu")],
        True,
    ),
    "CPU scaled down, config allows scaling down CPU": (
        ONE,
        [rec(target=("400m", "10Gi"))],
        [requirement(LOWER, "cpu")],
        True,
    ),
    "CPU not scaled, config allows only scaling up CPU and memory": (
        ONE,
        [rec(target=("500m", "10Gi"))],
        [requirement(HIGHER, "cpu", "memory")],
        False,
    ),
    "CPU not scaled up, but memory is": (
        ONE,
        [rec(target=("500m", "11Gi"))],
        [requirement(HIGHER, "cpu", "memory")],
        True,
    ),
    "memory scaled up, config allows scaling up memory": (
        ONE,
        [rec(target=("500m", "11Gi"))],
        [requirement(HIGHER, "memory")],
        True,
    ),
    "memory scaled down, config allows scaling down memory": (
        ONE,
        [rec(target=("500m", "9Gi"))],
        [requirement(LOWER, "memory")],
        True,
    ),
    "memory scaled down, config allows only scaling up": (
        ONE,
        [rec(target=("500m", "9Gi"))],
        [requirement(HIGHER, "cpu", "memory")],
        False,
    ),
    "CPU up and memory down, config allows CPU up and memory down": (
        ONE,
        [rec(target=("600m", "9Gi"))],
        [requirement(HIGHER, "cpu"), requirement(LOWER, "memory")],
        True,
    ),
    "CPU up, config allows only scaling down CPU": (
        ONE,
        [rec(target=("1000m", "9Gi"))],
        [requirement(LOWER, "cpu")],
        False,
    ),
    "CPU up and memory down, config requires both up": (
        ONE,
        [rec(target=("600m", "9Gi"))],
        [requirement(HIGHER, "cpu"), requirement(HIGHER, "memory")],
        False,
    ),
    # TestAdmitForMultipleContainer
    "both containers fulfill the EvictionRequirements": (
        TWO,
        [rec(C1, target=("600m", "10Gi")), rec(C2, target=("700m", "10Gi"))],
        [requirement(HIGHER, "cpu")],
        True,
    ),
    "only one container fulfills the EvictionRequirements": (
        TWO,
        [rec(C1, target=("200m", "10Gi")), rec(C2, target=("700m", "10Gi"))],
        [requirement(HIGHER, "cpu")],
        True,
    ),
    "no container fulfills the EvictionRequirements": (
        TWO,
        [rec(C1, target=("200m", "10Gi")), rec(C2, target=("300m", "10Gi"))],
        [requirement(HIGHER, "cpu")],
        False,
    ),
    "one container without a recommendation, the other not fulfilling": (
        TWO,
        [rec(C2, target=("300m", "10Gi"))],
        [requirement(HIGHER, "cpu")],
        False,
    ),
    # not in upstream's tables: a resource missing from the target counts as 0, as
    # ``Quantity.MilliValue`` of a missing entry does upstream
    "a resource missing from the target is lower than its request": (
        ONE,
        [rec(target=("", "10Gi"))],
        [requirement(LOWER, "cpu")],
        True,
    ),
    "a resource missing from the target is never higher than its request": (
        ONE,
        [rec(target=("", "11Gi"))],
        [requirement(HIGHER, "cpu")],
        False,
    ),
}


@pytest.mark.parametrize(
    ("update_pod", "recommendation", "requirements", "admitted"),
    ADMIT_CASES.values(),
    ids=ADMIT_CASES.keys(),
)
def test_admit_by_eviction_requirements(
    update_pod: UpdatePod,
    recommendation: list[ContainerRecommendation],
    requirements: list[EvictionRequirement],
    admitted: bool,
) -> None:
    assert admit_by_eviction_requirements(update_pod, recommendation, requirements) is admitted
