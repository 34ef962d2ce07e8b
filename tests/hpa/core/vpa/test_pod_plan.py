"""The updater's plan for one pod: upstream's in-place patch table (kubernetes/autoscaler
``vertical-pod-autoscaler`` v1.8.1 ``pkg/updater/inplace/resource_updates_test.go``,
``TestCalculatePatches_StartupBoost``), and the property that a resource the updater may not change
(an HPA scales on it, or its per-resource mode is Off/Initial) is never patched."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hpa.core.vpa.admission import AdmissionContainer, ContainerResources
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.awareness import HorizontalConflict, HpaAwareness, effective_controlled_resources
from hpa.core.vpa.pod_plan import (
    annotation_removal_patches,
    plan_pod,
    resize_patches,
    restrict_recommendation,
)
from hpa.core.vpa.recommender import RecommendedContainerResources

BOOSTED = {
    "vpaCpuStartupBoost/c1": '{"requests":{"cpu":"100m"}}',
    "vpaCpuStartupBoost/c2": '{"requests":{"cpu":"100m"}}',
}
C1C2 = (
    AdmissionContainer("c1", requests=Resources(cpu=1), has_requests=True),
    AdmissionContainer("c2", requests=Resources(cpu=1), has_requests=True),
)


def cpu(milli: int) -> ContainerResources:
    return ContainerResources(requests=Resources(cpu=milli))


def test_mode_off_only_unboosts_the_expired_container() -> None:
    patches = resize_patches(
        C1C2,
        [ContainerResources(), ContainerResources()],
        annotations=BOOSTED,
        expired=["vpaCpuStartupBoost/c1"],
    )
    assert patches == [
        {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "100m"}
    ]


def test_boosted_unexpired_containers_are_left_alone() -> None:
    patches = resize_patches(
        C1C2, [cpu(200), cpu(200)], annotations=BOOSTED, expired=["vpaCpuStartupBoost/c1"]
    )
    assert patches == [
        {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "200m"}
    ]


def test_no_unboost_while_both_boosts_run() -> None:
    assert resize_patches(C1C2, [cpu(200), cpu(200)], annotations=BOOSTED, expired=[]) == []


def test_regular_recommendation() -> None:
    assert resize_patches(C1C2, [cpu(300), cpu(300)], annotations={}) == [
        {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "300m"},
        {"op": "add", "path": "/spec/containers/1/resources/requests/cpu", "value": "300m"},
    ]


def test_mode_off_without_boost_yields_no_patches() -> None:
    empty = [ContainerResources(), ContainerResources()]
    assert resize_patches(C1C2, empty, annotations={}) == []


def test_a_container_without_resources_gets_the_empty_objects_first() -> None:
    bare = (AdmissionContainer("app"),)
    assert resize_patches(bare, [cpu(250)], annotations={}) == [
        {"op": "add", "path": "/spec/containers/0/resources", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/requests", "value": {}},
        {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "250m"},
    ]


def test_annotation_removal_escapes_the_slash() -> None:
    assert annotation_removal_patches(["vpaCpuStartupBoost/c1"]) == [
        {"op": "remove", "path": "/metadata/annotations/vpaCpuStartupBoost~1c1"}
    ]


def rec(name: str, cpu_milli: int, memory: int) -> RecommendedContainerResources:
    target = Resources(cpu=cpu_milli, memory=memory)
    return RecommendedContainerResources(name, target, target, target, target)


def test_plan_limits_grow_in_proportion_and_totals_follow() -> None:
    app = AdmissionContainer(
        "app",
        requests=Resources(cpu=100, memory=100 * 2**20),
        limits=Resources(cpu=200, memory=200 * 2**20),
        has_requests=True,
        has_limits=True,
    )
    plan = plan_pod((app,), recommendation=(rec("app", 300, 300 * 2**20),), policy=None)
    assert plan.resources[0].requests == Resources(cpu=300, memory=300 * 2**20)
    assert plan.resources[0].limits == Resources(cpu=600, memory=600 * 2**20)
    assert plan.new_requests_milli == {"cpu": 300, "memory": 300 * 2**20 * 1000}
    assert plan.ranked[0].target == {"cpu": 300, "memory": 300 * 2**20 * 1000}


NAMES = st.sampled_from(["app", "side", "init"])
AMOUNT = st.integers(min_value=1, max_value=10_000)


@st.composite
def containers(draw: st.DrawFn) -> list[AdmissionContainer]:
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    out = []
    for name in names:
        has_requests = draw(st.booleans())
        has_limits = draw(st.booleans())
        out.append(
            AdmissionContainer(
                name,
                requests=Resources(cpu=draw(AMOUNT), memory=draw(AMOUNT) * 2**20)
                if has_requests
                else Resources(),
                limits=Resources(cpu=draw(AMOUNT), memory=draw(AMOUNT) * 2**20)
                if has_limits
                else Resources(),
                has_requests=has_requests,
                has_limits=has_limits,
            )
        )
    return out


CONFLICTS = st.lists(
    st.builds(
        HorizontalConflict,
        st.sampled_from(["cpu", "memory"]),
        st.one_of(st.none(), NAMES),
        st.just("ns/hpa"),
    ),
    max_size=3,
)


@given(
    pod=containers(),
    conflicts=CONFLICTS,
    modes=st.sampled_from(
        [frozenset({"cpu", "memory"}), frozenset({"cpu"}), frozenset({"memory"})]
    ),
    targets=st.lists(st.tuples(AMOUNT, AMOUNT), min_size=3, max_size=3),
)
def test_an_excluded_resource_is_never_patched_nor_counted(
    pod: list[AdmissionContainer],
    conflicts: list[HorizontalConflict],
    modes: frozenset[str],
    targets: list[tuple[int, int]],
) -> None:
    def allowed(container: str) -> frozenset[str]:
        return effective_controlled_resources(
            container, modes, conflicts, awareness=HpaAwareness.EXCLUDE
        )

    recommendation = restrict_recommendation(
        [
            rec(c.name, cpu_milli, mem * 2**20)
            for c, (cpu_milli, mem) in zip(pod, targets, strict=False)
        ],
        allowed,
    )
    plan = plan_pod(pod, recommendation=recommendation, policy=None)
    patches = resize_patches(pod, plan.resources, annotations={})
    for index, container in enumerate(pod):
        excluded = {"cpu", "memory"} - allowed(container.name)
        for op in patches:
            path = op["path"]
            if path.startswith(f"/spec/containers/{index}/resources/"):
                assert path.rsplit("/", 1)[1] not in excluded, (container.name, path)
    for resource in ("cpu", "memory"):
        if all(resource not in allowed(c.name) for c in pod):
            current = sum(
                (c.requests.cpu if resource == "cpu" else c.requests.memory) or 0 for c in pod
            )
            scale = 1 if resource == "cpu" else 1000
            assert plan.new_requests_milli.get(resource, 0) == current * scale
            assert all(resource not in r.target for r in plan.ranked)
