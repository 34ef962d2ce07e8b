"""Parity with the VPA recommender's cluster model.

Ported from kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/model/cluster_test.go`` (samples, OOMs, missing keys, init containers, the links
between pods, aggregates and VPAs, selector changes, the garbage collection of aggregates and its
rate limit, ``RecordRecommendation``, ``GetMatchingPods``) and ``vpa_test.go``
(``TestUpdateConditions``, ``TestUpdateRecommendation``, ``TestUseAggregationIfMatching``,
``TestDeleteAggregation``, ``TestMergeAggregateContainerState``).

Upstream creates aggregates at ``time.Now()``; here the creation time is passed in, so each test
states it.
"""

from __future__ import annotations

import pytest

from hpa.core.selector import parse_selector
from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.cluster import (
    RECOMMENDATION_MISSING_MAX_DURATION_NS,
    ClusterState,
    ClusterStateKeyError,
    ContainerId,
    PodId,
    PodState,
    VpaCondition,
    VpaId,
    VpaState,
)
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.recommender import RecommendedContainerResources

S = NANOSECONDS_PER_SECOND
MINUTE, HOUR, DAY = 60 * S, 3600 * S, 86400 * S
T0 = 1_700_000_000 * S  # testTimestamp
POD = PodId("namespace-1", "pod-1")
CONTAINER = ContainerId(POD, "container-1")
VPA = VpaId("namespace-1", "vpa-1")
LABELS = {"label-1": "value-1"}
REQUEST = Resources(cpu=3140, memory=3_140_000_000)
GC_PERIOD = MINUTE


def always(pod: PodState) -> bool:
    return True


def never(pod: PodState) -> bool:
    return False


def cluster() -> ClusterState:
    return ClusterState(gc_interval_ns=GC_PERIOD)


def add_vpa(c: ClusterState, selector: str = "label-1 = value-1", **kw: object) -> VpaState:
    return c.add_or_update_vpa(
        VPA,
        selector=parse_selector(selector),
        created_ns=T0,
        target_ref=("apiVersion-1", "kind-1", "name-1"),
        **kw,  # type: ignore[arg-type]
    )


def add_pod_and_container(c: ClusterState, *, now_ns: int = T0) -> PodState:
    c.add_or_update_pod(POD, LABELS, "Running", now_ns=now_ns)
    c.add_or_update_container(CONTAINER, REQUEST, now_ns=now_ns)
    return c.pods[POD]


def key(c: ClusterState, container: ContainerId = CONTAINER) -> object:
    return c.make_aggregate_state_key(c.pods[container.pod_id], container.container_name)


def test_cluster_add_sample() -> None:
    c = cluster()
    add_pod_and_container(c)
    assert c.add_cpu_sample(CONTAINER, T0, 1000, now_ns=T0)
    assert c.pods[POD].containers["container-1"].last_cpu_sample_start_ns == T0


def test_gc_deletes_old() -> None:
    c = cluster()
    vpa = add_vpa(c)
    add_pod_and_container(c)
    assert c.add_cpu_sample(CONTAINER, T0, 1000, now_ns=T0)
    assert c.aggregate_state_map
    assert vpa.aggregate_container_states
    c.garbage_collect(T0 + 9 * DAY, controller_exists=always)
    assert not c.aggregate_state_map
    assert not vpa.aggregate_container_states


def test_gc_deletes_old_empty() -> None:
    c = cluster()
    vpa = add_vpa(c)
    add_pod_and_container(c, now_ns=T0)
    c.garbage_collect(T0 + MINUTE, controller_exists=always)
    assert c.aggregate_state_map
    assert vpa.aggregate_container_states
    c.garbage_collect(T0 + 9 * DAY, controller_exists=always)
    assert not c.aggregate_state_map
    assert not vpa.aggregate_container_states


def test_gc_deletes_empty_inactive_without_controller() -> None:
    c = cluster()
    vpa = add_vpa(c)
    pod = add_pod_and_container(c)
    c.garbage_collect(T0, controller_exists=never)
    assert c.aggregate_state_map  # the pod is still active
    pod.phase = "Succeeded"
    c.garbage_collect(T0, controller_exists=never)
    assert not c.aggregate_state_map
    assert not vpa.aggregate_container_states


def test_gc_leaves_empty_inactive_with_controller() -> None:
    c = cluster()
    vpa = add_vpa(c)
    pod = add_pod_and_container(c)
    pod.phase = "Succeeded"
    c.garbage_collect(T0, controller_exists=always)
    assert c.aggregate_state_map
    assert vpa.aggregate_container_states


def test_gc_leaves_valid() -> None:
    c = cluster()
    vpa = add_vpa(c)
    add_pod_and_container(c)
    assert c.add_cpu_sample(CONTAINER, T0, 1000, now_ns=T0)
    c.garbage_collect(T0 + 7 * DAY, controller_exists=always)
    assert c.aggregate_state_map
    assert vpa.aggregate_container_states


def test_add_sample_after_aggregate_state_gced() -> None:
    c = cluster()
    vpa = add_vpa(c)
    pod = add_pod_and_container(c)
    assert c.add_cpu_sample(CONTAINER, T0, 1000, now_ns=T0)
    the_key = key(c)
    assert the_key in vpa.aggregate_container_states
    gc_at = T0 + 10 * DAY
    c.garbage_collect(gc_at, controller_exists=always)
    assert not c.aggregate_state_map
    assert not vpa.aggregate_container_states
    assert "container-1" in pod.containers
    assert c.add_cpu_sample(CONTAINER, gc_at + HOUR, 1000, now_ns=gc_at + HOUR)
    assert the_key in vpa.aggregate_container_states


def test_gc_rate_limiting() -> None:
    c = cluster()
    expire = T0 + 9 * DAY
    c.rate_limited_garbage_collect(expire, controller_exists=always)
    vpa = add_vpa(c)
    add_pod_and_container(c)
    assert c.add_cpu_sample(CONTAINER, T0, 1000, now_ns=T0)
    c.rate_limited_garbage_collect(expire + GC_PERIOD // 2, controller_exists=always)
    assert c.aggregate_state_map
    assert vpa.aggregate_container_states
    c.rate_limited_garbage_collect(expire + 2 * GC_PERIOD, controller_exists=always)
    assert not c.aggregate_state_map
    assert not vpa.aggregate_container_states


def test_record_oom() -> None:
    c = cluster()
    add_pod_and_container(c)
    c.record_oom(CONTAINER, 0, 10, now_ns=T0)
    (state,) = c.aggregate_state_map.values()
    assert not state.aggregate_memory_peaks.is_empty()


def test_missing_keys() -> None:
    c = cluster()
    for call in (
        lambda: c.add_cpu_sample(CONTAINER, T0, 1000, now_ns=T0),
        lambda: c.record_oom(CONTAINER, 0, 10, now_ns=T0),
        lambda: c.add_or_update_container(CONTAINER, REQUEST, now_ns=T0),
        lambda: c.set_init_containers(POD, ["init-container-1"]),
    ):
        with pytest.raises(ClusterStateKeyError) as raised:
            call()
        assert str(raised.value) == "KeyError: PodId(namespace='namespace-1', pod_name='pod-1')"


def test_set_init_containers() -> None:
    c = cluster()
    c.add_or_update_pod(POD, LABELS, "Running", now_ns=T0)
    c.set_init_containers(POD, ["init-container-1", "init-container-2"])
    assert c.pods[POD].init_containers == ("init-container-1", "init-container-2")
    c.set_init_containers(POD, ["init-container-3"])
    assert c.pods[POD].init_containers == ("init-container-3",)


def test_add_vpa_then_add_pod() -> None:
    c = cluster()
    vpa = add_vpa(c)
    assert not vpa.aggregate_container_states
    add_pod_and_container(c)
    assert key(c) in vpa.aggregate_container_states
    assert vpa.pod_count == 1


def test_add_pod_then_add_vpa() -> None:
    c = cluster()
    add_pod_and_container(c)
    vpa = add_vpa(c)
    assert key(c) in vpa.aggregate_container_states
    assert vpa.pod_count == 1


def test_change_pod_labels() -> None:
    c = cluster()
    vpa = add_vpa(c)
    add_pod_and_container(c)
    assert key(c) in vpa.aggregate_container_states
    c.add_or_update_pod(POD, {}, "Running", now_ns=T0)
    assert key(c) not in vpa.aggregate_container_states
    assert vpa.pod_count == 0


def test_update_annotations() -> None:
    c = cluster()
    assert add_vpa(c, annotations={"key-1": "value-1"}).annotations == {"key-1": "value-1"}
    assert add_vpa(c, annotations={"key-2": "value-2"}).annotations == {"key-2": "value-2"}
    assert add_vpa(c, annotations={}).annotations == {}


def test_update_pod_selector() -> None:
    c = cluster()
    add_pod_and_container(c)
    assert key(c) in add_vpa(c, "label-1 in (value-1,value-2)").aggregate_container_states
    assert key(c) not in add_vpa(c, "label-1 = value-2").aggregate_container_states
    assert key(c) in add_vpa(c, "label-1 = value-1").aggregate_container_states


def test_equal_aggregate_state_key() -> None:
    c = cluster()
    pod = add_pod_and_container(c)
    assert c.make_aggregate_state_key(pod, "container-1") == c.make_aggregate_state_key(
        pod, "container-1"
    )


def test_two_pods_with_same_labels_share_an_aggregate() -> None:
    c = cluster()
    for name in ("pod-1", "pod-2"):
        pod = PodId("namespace-1", name)
        c.add_or_update_pod(pod, LABELS, "Running", now_ns=T0)
        c.add_or_update_container(ContainerId(pod, "foo-container"), REQUEST, now_ns=T0)
    assert len(c.aggregate_state_map) == 1


def test_two_pods_in_different_namespaces_do_not() -> None:
    c = cluster()
    for namespace in ("namespace-1", "namespace-2"):
        pod = PodId(namespace, "foo-pod")
        c.add_or_update_pod(pod, LABELS, "Running", now_ns=T0)
        c.add_or_update_container(ContainerId(pod, "foo-container"), REQUEST, now_ns=T0)
    assert len(c.aggregate_state_map) == 2
    assert len(c.label_set_map) == 1


def test_empty_selector_matches_every_pod() -> None:
    c = cluster()
    vpa = add_vpa(c, "")
    c.add_or_update_pod(POD, LABELS, "Running", now_ns=T0)
    first = ContainerId(POD, "foo")
    c.add_or_update_container(first, REQUEST, now_ns=T0)
    other = PodId("namespace-1", "pod-2")
    c.add_or_update_pod(other, {}, "Running", now_ns=T0)
    second = ContainerId(other, "foo")
    c.add_or_update_container(second, REQUEST, now_ns=T0)
    assert key(c, first) in vpa.aggregate_container_states
    assert key(c, second) in vpa.aggregate_container_states


RECOMMENDED = (RecommendedContainerResources("test", *[Resources(cpu=100, memory=200)] * 4),)


@pytest.mark.parametrize(
    ("recommendation", "last_logged", "expected_empty", "expected_logged", "error"),
    [
        (RECOMMENDED, None, False, None, False),
        (RECOMMENDED, T0 - 10 * MINUTE, False, None, False),
        ((), T0 - 10 * MINUTE, True, T0 - 10 * MINUTE, False),
        ((), T0 - 40 * MINUTE, True, T0, True),
        ((), None, True, T0, False),
    ],
    ids=[
        "VPA has recommendation",
        "VPA recommendation appears",
        "VPA recommendation missing",
        "VPA recommendation missing and needs logging",
        "VPA recommendation disappears",
    ],
)
def test_record_recommendation(
    recommendation: tuple[RecommendedContainerResources, ...],
    last_logged: int | None,
    expected_empty: bool,
    expected_logged: int | None,
    error: bool,
) -> None:
    c = cluster()
    vpa = add_vpa(c)
    vpa.recommendation = recommendation
    if last_logged is not None:
        c.empty_vpas[VPA] = last_logged
    message = c.record_recommendation(vpa, T0)
    if error:
        assert message == "VPA namespace-1/vpa-1 is missing recommendation for more than 30m0s"
    else:
        assert message is None
    if expected_empty:
        assert c.empty_vpas[VPA] == expected_logged
    else:
        assert VPA not in c.empty_vpas
    assert RECOMMENDATION_MISSING_MAX_DURATION_NS == 30 * MINUTE


def test_get_matching_pods_and_the_controlling_vpa() -> None:
    c = cluster()
    vpa = add_vpa(c)
    pods = [PodId("namespace-1", "a"), PodId("namespace-1", "b"), PodId("namespace-2", "c")]
    c.add_or_update_pod(pods[0], LABELS, "Running", now_ns=T0)
    c.add_or_update_pod(pods[1], {"label-1": "other"}, "Running", now_ns=T0)
    c.add_or_update_pod(pods[2], LABELS, "Running", now_ns=T0)
    assert c.get_matching_pods(vpa) == [pods[0]]
    assert c.get_controlling_vpa(c.pods[pods[0]]) is vpa
    assert c.get_controlling_vpa(c.pods[pods[1]]) is None
    c.delete_pod(pods[0])
    assert vpa.pod_count == 0


def test_the_status_recommendation_is_kept_only_while_recommendation_provided() -> None:
    c = cluster()
    provided = VpaCondition("RecommendationProvided", "True")
    assert add_vpa(c, conditions=[provided], recommendation=RECOMMENDED).recommendation
    withdrawn = VpaCondition("RecommendationProvided", "False")
    assert add_vpa(c, conditions=[withdrawn], recommendation=RECOMMENDED).recommendation is None


def test_delete_vpa_marks_its_aggregates_not_autoscaled() -> None:
    c = cluster()
    vpa = add_vpa(c)
    add_pod_and_container(c)
    (state,) = vpa.aggregate_container_states.values()
    under_vpa_before = state.is_under_vpa
    c.delete_vpa(VPA)
    assert (under_vpa_before, state.is_under_vpa) == (True, False)
    with pytest.raises(ClusterStateKeyError):
        c.delete_vpa(VPA)


# ---------------------------------------------------------------- vpa_test.go


@pytest.mark.parametrize(
    ("pods_matched", "has_recommendation", "expected"),
    [
        (True, True, {"RecommendationProvided": ("True", "", "")}),
        (
            False,
            True,
            {
                "RecommendationProvided": ("True", "", ""),
                "NoPodsMatched": ("True", "NoPodsMatched", "No pods match this VPA object"),
            },
        ),
        (
            False,
            False,
            {
                "RecommendationProvided": (
                    "False",
                    "NoPodsMatched",
                    "No pods match this VPA object",
                ),
                "NoPodsMatched": ("True", "NoPodsMatched", "No pods match this VPA object"),
            },
        ),
        (True, False, {"RecommendationProvided": ("False", "", "")}),
    ],
    ids=[
        "Has recommendation",
        "Has recommendation but no matching pods",
        "No recommendation and no matching pods",
        "No recommendation but pods matched",
    ],
)
def test_update_conditions(
    pods_matched: bool, has_recommendation: bool, expected: dict[str, tuple[str, str, str]]
) -> None:
    vpa = VpaState(VPA, parse_selector("label-1 = value-1"), T0)
    vpa.set_condition("NoPodsMatched", True, "NoPodsMatched", "old", now_ns=T0)
    if has_recommendation:
        vpa.recommendation = RECOMMENDED
    vpa.update_conditions(pods_matched, now_ns=T0 + MINUTE)
    got = {c.type: (c.status, c.reason, c.message) for c in vpa.conditions_list()}
    assert got == expected
    assert vpa.has_matched_pods() is pods_matched


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    vpa = VpaState(VPA, None, T0)
    vpa.set_condition("RecommendationProvided", True, "", "", now_ns=T0)
    vpa.set_condition("RecommendationProvided", True, "again", "", now_ns=T0 + HOUR)
    assert vpa.conditions["RecommendationProvided"].last_transition_time_ns == T0
    vpa.set_condition("RecommendationProvided", False, "", "", now_ns=T0 + 2 * HOUR)
    assert vpa.conditions["RecommendationProvided"].last_transition_time_ns == T0 + 2 * HOUR


def test_update_recommendation_remembers_the_uncapped_target_per_aggregate() -> None:
    c = cluster()
    vpa = add_vpa(c)
    add_pod_and_container(c)
    uncapped = Resources(cpu=500, memory=1 << 30)
    recommendation = (
        RecommendedContainerResources(
            "container-1", Resources(cpu=400), Resources(), Resources(), uncapped
        ),
    )
    vpa.update_recommendation(recommendation)
    (state,) = vpa.aggregate_container_states.values()
    assert state.last_recommendation == uncapped
    assert vpa.recommendation == recommendation


def test_use_aggregation_if_matching_only_in_its_namespace_and_selector() -> None:
    c = cluster()
    vpa = add_vpa(c)
    for namespace, labels in (("namespace-2", LABELS), ("namespace-1", {"label-1": "no"})):
        pod = PodId(namespace, "p")
        c.add_or_update_pod(pod, labels, "Running", now_ns=T0)
        c.add_or_update_container(ContainerId(pod, "c"), REQUEST, now_ns=T0)
    assert not vpa.aggregate_container_states
    assert len(c.aggregate_state_map) == 2


def test_merge_checkpointed_state_into_the_aggregates() -> None:
    c = cluster()
    vpa = add_vpa(c)
    add_pod_and_container(c)
    assert c.add_cpu_sample(CONTAINER, T0, 1000, now_ns=T0)
    checkpointed = AggregateContainerState()
    checkpointed.add_cpu_sample(T0 - HOUR, 2000)
    vpa.containers_initial_aggregate_state["container-1"] = checkpointed
    vpa.containers_initial_aggregate_state["gone"] = AggregateContainerState()
    merged = vpa.aggregate_state_by_container_name()
    assert set(merged) == {"container-1", "gone"}
    assert merged["container-1"].total_samples_count == 2
