"""Properties of the updater's rules: the eviction budget holds whatever the group looks like,
and the update order is a total order that puts scale-ups and large changes first."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from hpa.core.vpa.update import (
    InPlaceDecision,
    PodPriority,
    ReplicaGroup,
    UpdatePod,
    eviction_restriction,
    sorted_for_update,
)

GROUP = ReplicaGroup("ns", "ReplicaSet", "web")


def member(i: int, phase: str, priority: int = 0) -> UpdatePod:
    return UpdatePod(
        namespace="ns",
        name=f"p{i}",
        containers=(("app", {"cpu": 100}),),
        phase=phase,
        controller=GROUP,
        priority=priority,
    )


@given(
    configured=st.integers(min_value=1, max_value=40),
    phases=st.lists(st.sampled_from(["Running", "Running", "Pending"]), max_size=40),
    tolerance=st.floats(min_value=0.0, max_value=1.0),
    min_replicas=st.integers(min_value=1, max_value=5),
)
def test_the_updater_never_evicts_more_running_pods_than_the_tolerance_allows(
    configured: int, phases: list[str], tolerance: float, min_replicas: int
) -> None:
    pods = [member(i, phase) for i, phase in enumerate(phases)]
    restriction = eviction_restriction(
        pods, {GROUP: configured}, min_replicas=min_replicas, eviction_tolerance=tolerance
    )
    evicted_running = 0
    for pod in pods:
        if restriction.can_evict(pod):
            restriction.record_eviction(pod)
            evicted_running += pod.phase != "Pending"
    running = phases.count("Running")
    allowed = int(configured * tolerance)
    budget = max(0, running - (configured - allowed))
    if configured == running and allowed == 0:
        budget = max(budget, 1)
    if len(pods) < min_replicas:
        budget = 0
    assert evicted_running <= budget


@given(
    configured=st.integers(min_value=1, max_value=40),
    phases=st.lists(st.sampled_from(["Running", "Running", "Pending"]), max_size=40),
    tolerance=st.floats(min_value=0.0, max_value=1.0),
    actions=st.lists(st.sampled_from(["evict", "resize"]), min_size=40, max_size=40),
)
def test_evictions_and_resizes_together_never_take_down_more_than_the_tolerance(
    configured: int, phases: list[str], tolerance: float, actions: list[str]
) -> None:
    pods = [member(i, phase) for i, phase in enumerate(phases)]
    restriction = eviction_restriction(
        pods,
        {GROUP: configured},
        min_replicas=1,
        eviction_tolerance=tolerance,
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    disrupted = 0
    for pod, action in zip(pods, actions, strict=False):
        if pod.phase == "Pending":
            continue
        if action == "evict" and restriction.can_evict(pod):
            restriction.record_eviction(pod)
            disrupted += 1
        elif action == "resize" and (
            restriction.can_in_place_update(pod, update_mode="InPlaceOrRecreate", recommendation=())
            is InPlaceDecision.APPROVED
        ):
            restriction.record_in_place_update(pod)
            disrupted += 1
    running = phases.count("Running")
    allowed = int(configured * tolerance)
    budget = max(0, running - (configured - allowed))
    if configured == running and allowed == 0:
        budget = max(budget, 1)
    assert disrupted <= budget


PRIORITIES = st.builds(
    PodPriority,
    outside_recommended_range=st.booleans(),
    scale_up=st.booleans(),
    resource_diff=st.floats(min_value=0.0, max_value=100.0),
)


@given(st.lists(st.tuples(PRIORITIES, st.integers(-5, 5)), max_size=12))
def test_no_pod_is_updated_after_one_it_should_follow(
    entries: list[tuple[PodPriority, int]],
) -> None:
    queued = [(member(i, "Running", priority=p), prio) for i, (prio, p) in enumerate(entries)]
    by_name = {pod.name: (prio, pod.priority) for pod, prio in queued}
    order = sorted_for_update(queued)
    assert sorted(p.name for p in order) == sorted(by_name)
    for earlier, later in itertools.pairwise(order):
        (a, a_sched), (b, b_sched) = by_name[earlier.name], by_name[later.name]
        assert not a.less(b)
        if not a.less(b) and not b.less(a):
            assert a_sched <= b_sched
