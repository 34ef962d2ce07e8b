"""The updater's loop over fakes of its ports: which pods it evicts or resizes, and when it holds
back (tolerance, a PodDisruptionBudget's 429, a stale admission Lease, capacity, HPA awareness,
system-critical classes, in-place fall-backs, the CPU startup boost)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from hpa.controllers.vertical.updater import Updater, UpdaterConfig
from hpa.controllers.vertical.updater_metrics import UpdaterMetrics
from hpa.core.vpa.awareness import HpaAwareness
from hpa.core.vpa.update import ReplicaGroup
from hpa.kube.pod_actions import PodActionError
from tests.fakes.clock import FakeClock
from tests.fakes.vpa_updater import (
    NS,
    FakeAdmissionStatus,
    FakeCluster,
    FakePodActions,
    FakeUpdaterEvents,
    Unlimited,
    deployment,
    node,
    pod,
    replica_set,
    vpa,
)


class World:
    def __init__(
        self,
        *,
        replicas: int = 3,
        pods: int = 3,
        cluster: FakeCluster | None = None,
        **config: Any,
    ) -> None:
        self.cluster = cluster or FakeCluster()
        self.cluster.put_workload(replicas=replicas)
        self.cluster.put_node(node())
        for i in range(pods):
            self.cluster.put_pod(pod(f"web-{i}"))
        self.actions = FakePodActions()
        self.events = FakeUpdaterEvents()
        self.status = FakeAdmissionStatus()
        self.registry = CollectorRegistry()
        self.clock = FakeClock()
        self.updater = Updater(
            view=self.cluster,
            resolver=self.cluster.resolver(),
            actions=self.actions,
            events=self.events,
            status=self.status,
            eviction_limiter=Unlimited(),
            in_place_limiter=Unlimited(),
            metrics=UpdaterMetrics(self.registry),
            clock=self.clock,
            config=UpdaterConfig(**config),
        )


def sample(world: World, name: str, labels: dict[str, str]) -> float:
    value = world.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


EVICTED = "vpa_updater_evicted_pods_total"


async def test_recreate_evicts_within_the_tolerance_and_records_upstreams_events() -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode="Recreate"))
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]  # int(3 * 0.5) = 1 per loop
    assert world.events.reasons() == [("web-0", "EvictedByVPA"), ("web", "EvictedPod")]
    labels = {
        "vpa_size_log2": "1",
        "update_mode": "Recreate",
        "vpa_name": "web",
        "vpa_namespace": NS,
    }
    assert sample(world, EVICTED, labels) == 1
    assert (
        sample(
            world,
            "vpa_updater_controlled_pods_total",
            {"vpa_size_log2": "1", "update_mode": "Recreate"},
        )
        == 3
    )
    assert (
        sample(
            world,
            "vpa_updater_evictable_pods_total",
            {"vpa_size_log2": "1", "update_mode": "Recreate"},
        )
        == 3
    )


@pytest.mark.parametrize("mode", [None, "Auto", "Recreate"])
async def test_unset_and_auto_behave_as_recreate(mode: str | None) -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode=mode))
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]
    assert world.actions.resized == []


@pytest.mark.parametrize("mode", ["Off", "Initial"])
async def test_off_and_initial_touch_no_running_pod(mode: str) -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode=mode))
    await world.updater.run_once()
    assert world.actions.calls == []


@pytest.mark.parametrize(
    ("replicas", "tolerance", "evicted"), [(4, 0.5, 2), (10, 0.5, 5), (4, 0.1, 1), (4, 1.0, 4)]
)
async def test_the_tolerance_limits_evictions_per_loop(
    replicas: int, tolerance: float, evicted: int
) -> None:
    world = World(replicas=replicas, pods=replicas, eviction_tolerance=tolerance)
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    assert len(world.actions.evicted) == evicted


async def test_a_group_below_min_replicas_is_left_alone() -> None:
    world = World(replicas=1, pods=1)
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    assert world.actions.calls == []
    world.cluster.put_vpa(
        vpa(extra_spec={"updatePolicy": {"updateMode": "Recreate", "minReplicas": 1}})
    )
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]


async def test_a_429_from_a_disruption_budget_is_retried_next_loop() -> None:
    world = World()
    world.cluster.put_vpa(vpa())
    blocked = PodActionError(
        429, "Cannot evict pod as it would violate the pod's disruption budget."
    )
    world.actions.fail("evict", "web-0", blocked)
    world.actions.fail("evict", "web-1", blocked)
    world.actions.fail("evict", "web-2", blocked)
    await world.updater.run_once()
    assert world.actions.evicted == []
    assert world.actions.calls == [("evict", "web-0"), ("evict", "web-1"), ("evict", "web-2")]
    failed = {
        "vpa_size_log2": "1",
        "update_mode": "Recreate",
        "reason": "EvictionError",
        "vpa_name": "web",
        "vpa_namespace": NS,
    }
    assert sample(world, "vpa_updater_failed_eviction_attempts_total", failed) == 3
    assert world.events.recorded == []
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]


@pytest.mark.parametrize(("valid", "reason"), [(False, "invalid"), (None, "error")])
async def test_no_eviction_while_the_admission_lease_is_stale_or_unreadable(
    valid: bool | None, reason: str
) -> None:
    world = World()
    world.cluster.put_vpa(vpa())
    if valid is None:
        world.status.error = PodActionError(503, "unavailable")
    else:
        world.status.valid = valid
    await world.updater.run_once()
    assert world.actions.calls == []
    assert (
        sample(world, "vpa_updater_admission_controller_status_invalid_total", {"reason": reason})
        == 1
    )


async def test_the_admission_guard_can_be_switched_off() -> None:
    world = World(use_admission_controller_status=False)
    world.status.valid = False
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]
    assert world.status.calls == 0


async def test_a_small_change_within_the_bounds_is_not_worth_an_update() -> None:
    world = World()
    world.cluster.put_vpa(
        vpa(
            target={"cpu": "105m", "memory": "128Mi"},
            lower={"cpu": "50m", "memory": "100Mi"},
            upper={"cpu": "200m", "memory": "200Mi"},
        )
    )
    await world.updater.run_once()
    assert world.actions.calls == []


def resize_paths(world: World, name: str) -> list[str]:
    return [op["path"] for who, ops in world.actions.resized if who == name for op in ops]


async def test_in_place_or_recreate_resizes_through_the_resize_subresource() -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate"))
    await world.updater.run_once()
    assert [who for who, _ in world.actions.resized] == ["web-0"]
    assert world.actions.resized[0][1] == [
        {"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "500m"},
        {"op": "add", "path": "/spec/containers/0/resources/requests/memory", "value": "512Mi"},
    ]
    assert world.actions.patched == [
        (
            "web-0",
            [
                {"op": "add", "path": "/metadata/annotations", "value": {}},
                {"op": "add", "path": "/metadata/annotations/vpaInPlaceUpdated", "value": "true"},
            ],
        )
    ]
    assert world.actions.evicted == []
    assert world.events.reasons() == [("web-0", "InPlaceResizedByVPA")]
    assert (
        sample(
            world,
            "vpa_updater_in_place_updated_pods_total",
            {"vpa_size_log2": "1", "vpa_name": "web", "vpa_namespace": NS},
        )
        == 1
    )


INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
DEFERRED = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}


def at_target(world: World) -> None:
    """web-1 and web-2 already have the recommendation: only web-0 needs an update."""
    for name in ("web-1", "web-2"):
        world.cluster.put_pod(pod(name, cpu="500m", memory="512Mi"))


async def test_in_place_or_recreate_falls_back_to_eviction_when_infeasible() -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate"))
    world.cluster.put_pod(pod("web-0", conditions=[INFEASIBLE]))
    at_target(world)
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]
    assert world.actions.resized == []


async def test_in_place_or_recreate_evicts_a_deferred_resize_only_after_five_minutes() -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate"))
    world.cluster.put_pod(pod("web-0", conditions=[DEFERRED]))
    at_target(world)
    await world.updater.run_once()
    assert world.actions.calls == []
    await world.clock.advance(299)
    await world.updater.run_once()
    assert world.actions.calls == []
    await world.clock.advance(2)
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]


async def test_a_refused_resize_falls_back_to_eviction_in_in_place_or_recreate() -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate"))
    at_target(world)
    world.actions.fail("resize", "web-0", PodActionError(422, "invalid"))
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]
    failed = {
        "vpa_size_log2": "1",
        "reason": "InPlaceUpdateError",
        "vpa_name": "web",
        "vpa_namespace": NS,
    }
    assert sample(world, "vpa_updater_failed_in_place_update_attempts_total", failed) == 1


async def test_in_place_never_evicts_and_retries_an_infeasible_target_only_when_it_drops() -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode="InPlace"))
    world.cluster.put_pod(pod("web-0", conditions=[INFEASIBLE]))
    world.cluster.put_pod(pod("web-1", conditions=[INFEASIBLE]))
    world.cluster.put_pod(pod("web-2", conditions=[INFEASIBLE]))
    await world.updater.run_once()
    assert world.actions.evicted == []
    assert set(world.updater.infeasible_attempts) == {"uid-web-0", "uid-web-1", "uid-web-2"}
    world.actions.resized.clear()
    world.events.recorded.clear()
    await world.updater.run_once()
    assert world.actions.resized == []
    assert ("web-0", "InPlaceResizeSkipped") in world.events.reasons()
    skipped = {"vpa_size_log2": "1", "vpa_name": "web", "vpa_namespace": NS}
    assert sample(world, "vpa_updater_in_place_infeasible_skip_pods_total", skipped) == 3
    world.cluster.put_vpa(vpa(mode="InPlace", target={"cpu": "400m", "memory": "512Mi"}))
    for i in range(3):
        world.cluster.put_pod(pod(f"web-{i}"))
    await world.updater.run_once()
    assert [who for who, _ in world.actions.resized] == ["web-0"]
    assert world.actions.evicted == []


async def test_in_place_remembers_a_resize_refused_for_node_capacity() -> None:
    world = World()
    world.cluster.put_vpa(vpa(mode="InPlace"))
    world.actions.fail("resize", "web-0", PodActionError(403, "Forbidden", infeasible=True))
    await world.updater.run_once()
    assert world.actions.evicted == []
    assert "uid-web-0" in world.updater.infeasible_attempts
    failed = {
        "vpa_size_log2": "1",
        "reason": "InPlaceUpdateInfeasible",
        "vpa_name": "web",
        "vpa_namespace": NS,
    }
    assert sample(world, "vpa_updater_failed_in_place_update_attempts_total", failed) == 1


async def test_a_recommendation_that_fits_no_node_is_not_applied() -> None:
    world = World()
    world.cluster.put_vpa(vpa(target={"cpu": "16", "memory": "512Mi"}))
    await world.updater.run_once()
    assert world.actions.calls == []
    assert ("web-0", "UpdateDoesNotFit") in world.events.reasons("Pod")
    assert ("web", "UpdateDoesNotFit") in world.events.reasons("VerticalPodAutoscaler")
    labels = {"action": "evict", "vpa_name": "web", "vpa_namespace": NS}
    assert sample(world, "hpa_vpa_updater_pods_not_fitting_total", labels) == 3


async def test_a_resize_that_does_not_fit_its_node_is_not_sent() -> None:
    world = World()
    world.cluster.node_records.clear()
    world.cluster.put_node(node(cpu="1"))
    world.cluster.put_node(node("node-2", cpu="64"))
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate", target={"cpu": "900m", "memory": "512Mi"}))
    await world.updater.run_once()
    assert world.actions.resized == []
    labels = {"action": "resize", "vpa_name": "web", "vpa_namespace": NS}
    assert sample(world, "hpa_vpa_updater_pods_not_fitting_total", labels) >= 1


async def test_lower_priority_pods_count_as_free_when_the_pod_may_preempt() -> None:
    world = World()
    world.cluster.node_records.clear()
    world.cluster.put_node(node(cpu="1"))
    for i in range(3):
        world.cluster.put_pod(pod(f"web-{i}", priority=1000))
    world.cluster.put_pod(pod("batch", cpu="600m", owner="batch-rs", app="batch", priority=0))
    world.cluster.put_vpa(vpa(target={"cpu": "700m", "memory": "512Mi"}))
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]


async def test_an_hpa_on_cpu_leaves_cpu_alone_and_memory_is_updated() -> None:
    world = World(hpa_awareness=HpaAwareness.EXCLUDE)
    world.cluster.hpa_objects.append(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"namespace": NS, "name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 60},
                        },
                    }
                ],
            },
        }
    )
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate"))
    await world.updater.run_once()
    assert resize_paths(world, "web-0") == ["/spec/containers/0/resources/requests/memory"]


async def test_an_hpa_on_cpu_with_only_a_cpu_change_causes_no_eviction() -> None:
    world = World()
    world.cluster.hpa_objects.append(
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"namespace": NS, "name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 10,
            },
        }
    )
    world.cluster.put_vpa(vpa(target={"cpu": "2", "memory": "128Mi"}))
    await world.updater.run_once()
    assert world.actions.calls == []


async def test_per_resource_modes_leave_an_initial_resource_alone() -> None:
    world = World()
    world.cluster.put_vpa(
        vpa(
            mode="InPlaceOrRecreate",
            annotations={"vpa.hpa.dev/resource-update-modes": "memory=Initial"},
        )
    )
    await world.updater.run_once()
    assert resize_paths(world, "web-0") == ["/spec/containers/0/resources/requests/cpu"]


async def test_system_critical_pods_are_not_evicted_unless_allowed() -> None:
    world = World()
    for i in range(3):
        world.cluster.put_pod(pod(f"web-{i}", priority_class="system-cluster-critical"))
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    assert world.actions.calls == []
    allowed = World(allow_evicting_system_critical=True)
    for i in range(3):
        allowed.cluster.put_pod(pod(f"web-{i}", priority_class="system-node-critical"))
    allowed.cluster.put_vpa(vpa())
    await allowed.updater.run_once()
    assert allowed.actions.evicted == ["web-0"]


async def test_among_equal_update_priority_the_lower_priority_pod_goes_first() -> None:
    world = World()
    world.cluster.put_pod(pod("web-0", priority=100))
    world.cluster.put_pod(pod("web-1", priority=5))
    world.cluster.put_pod(pod("web-2", priority=50))
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    assert world.actions.evicted == ["web-1"]


async def test_a_pod_being_deleted_is_not_counted_or_touched() -> None:
    world = World(replicas=2, pods=2)
    deleting = pod("web-1")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    world.cluster.put_pod(deleting)
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    assert world.actions.calls == []  # one live pod is below --min-replicas


BOOST = {"vpaCpuStartupBoost/app": '{"requests":{"cpu":"100m"}}'}


async def test_an_expired_cpu_boost_is_lowered_in_place_and_its_annotation_removed() -> None:
    world = World()
    world.cluster.put_pod(pod("web-0", cpu="2", annotations=BOOST))
    spec = {"startupBoost": {"cpu": {"type": "Factor", "factor": 4, "durationSeconds": 60}}}
    world.cluster.put_vpa(vpa(mode="Off", extra_spec=spec))
    await world.updater.run_once()
    assert world.actions.resized == [
        (
            "web-0",
            [{"op": "add", "path": "/spec/containers/0/resources/requests/cpu", "value": "100m"}],
        )
    ]
    assert world.actions.patched[0][1][-1] == {
        "op": "remove",
        "path": "/metadata/annotations/vpaCpuStartupBoost~1app",
    }
    assert world.actions.evicted == []


async def test_a_running_boost_is_left_until_it_expires() -> None:
    world = World()
    world.cluster.put_pod(
        pod("web-0", cpu="2", annotations=BOOST, ready_since="2026-01-01T00:00:00Z")
    )
    spec = {"startupBoost": {"cpu": {"type": "Factor", "factor": 4, "durationSeconds": 60}}}
    world.cluster.put_vpa(vpa(mode="Recreate", extra_spec=spec))
    await world.updater.run_once()
    assert ("evict", "web-0") not in world.actions.calls
    assert ("resize", "web-0") not in world.actions.calls


async def test_a_vpa_whose_target_does_not_exist_is_skipped() -> None:
    world = World()
    world.cluster.controllers.clear()
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    assert world.actions.calls == []


class BrokenReplicaSet(FakeCluster):
    def replicas(self, group: ReplicaGroup) -> int | None:
        if group.name == "web-rs":
            raise RuntimeError("replica count unavailable")
        return super().replicas(group)


async def test_one_vpas_failure_does_not_stop_the_others() -> None:
    world = World(cluster=BrokenReplicaSet())
    world.cluster.put_controller("Deployment", deployment("api"))
    world.cluster.put_controller("ReplicaSet", replica_set("api-rs", owner="api"))
    for i in range(3):
        world.cluster.put_pod(pod(f"api-{i}", owner="api-rs", app="api"))
    world.cluster.put_vpa(vpa("api"))
    world.cluster.put_vpa(vpa("web"))
    await world.updater.run_once()
    assert world.actions.evicted == ["api-0"]


def oom_killed(name: str) -> dict[str, Any]:
    """A pod whose container was OOM-killed a minute after it started, a minute ago."""
    data = pod(name)
    data["status"]["containerStatuses"] = [
        {
            "name": "app",
            "lastState": {
                "terminated": {
                    "reason": "OOMKilled",
                    "startedAt": "2025-12-31T23:58:00Z",
                    "finishedAt": "2025-12-31T23:59:00Z",
                }
            },
        }
    ]
    return data


@pytest.mark.parametrize(("evict_after_oom_seconds", "evicted"), [(None, ["web-0"]), (30, [])])
async def test_a_quick_oom_makes_a_small_change_worth_it_within_the_vpas_threshold(
    evict_after_oom_seconds: int | None, evicted: list[str]
) -> None:
    world = World()
    world.cluster.put_pod(oom_killed("web-0"))
    policy: dict[str, Any] = {"updateMode": "Recreate"}
    if evict_after_oom_seconds is not None:
        policy["evictAfterOOMSeconds"] = evict_after_oom_seconds
    small = {"cpu": "105m", "memory": "128Mi"}
    wide = ({"cpu": "50m", "memory": "64Mi"}, {"cpu": "1", "memory": "1Gi"})
    world.cluster.put_vpa(
        vpa(target=small, lower=wide[0], upper=wide[1], extra_spec={"updatePolicy": policy})
    )
    await world.updater.run_once()
    assert world.actions.evicted == evicted


async def test_a_resource_marked_in_place_never_causes_an_eviction() -> None:
    world = World()
    world.cluster.put_vpa(
        vpa(mode="Recreate", annotations={"vpa.hpa.dev/resource-update-modes": "cpu=InPlace"})
    )
    world.cluster.put_pod(pod("web-0", conditions=[INFEASIBLE]))
    at_target(world)
    await world.updater.run_once()
    assert world.actions.evicted == []
    assert "uid-web-0" in world.updater.infeasible_attempts


async def test_each_system_critical_pod_kept_is_counted_once() -> None:
    world = World()
    for i in range(3):
        world.cluster.put_pod(pod(f"web-{i}", priority_class="system-cluster-critical"))
    world.cluster.put_vpa(vpa())
    await world.updater.run_once()
    labels = {"vpa_name": "web", "vpa_namespace": NS}
    assert sample(world, "hpa_vpa_updater_system_critical_skipped_pods_total", labels) == 3


@pytest.mark.parametrize(
    ("mode", "change", "changed"),
    [
        ("Recreate", "TargetHigherThanRequests", True),
        ("Recreate", "TargetLowerThanRequests", False),
        ("InPlaceOrRecreate", "TargetHigherThanRequests", True),
        ("InPlaceOrRecreate", "TargetLowerThanRequests", False),
    ],
)
async def test_eviction_requirements_keep_pods_whose_target_moved_the_other_way(
    mode: str, change: str, changed: bool
) -> None:
    # the pods request 100m and 128Mi; the target is 500m and 512Mi: both go up
    world = World()
    policy = {
        "updateMode": mode,
        "evictionRequirements": [{"resources": ["cpu", "memory"], "changeRequirement": change}],
    }
    world.cluster.put_vpa(vpa(extra_spec={"updatePolicy": policy}))
    await world.updater.run_once()
    touched = world.actions.evicted + [who for who, _ in world.actions.resized]
    assert touched == (["web-0"] if changed else [])


async def test_eviction_requirements_are_met_by_one_resource_of_a_requirement() -> None:
    # cpu goes down (100m -> 50m), memory up: "either lower" admits, "cpu lower" and
    # "memory higher" together admit, "cpu higher" does not
    target = {"cpu": "50m", "memory": "512Mi"}
    cases = [
        ([{"resources": ["cpu", "memory"], "changeRequirement": "TargetLowerThanRequests"}], True),
        (
            [
                {"resources": ["cpu"], "changeRequirement": "TargetLowerThanRequests"},
                {"resources": ["memory"], "changeRequirement": "TargetHigherThanRequests"},
            ],
            True,
        ),
        ([{"resources": ["cpu"], "changeRequirement": "TargetHigherThanRequests"}], False),
    ]
    for requirements, changed in cases:
        world = World()
        policy = {"updateMode": "Recreate", "evictionRequirements": requirements}
        world.cluster.put_vpa(vpa(target=target, extra_spec={"updatePolicy": policy}))
        await world.updater.run_once()
        assert world.actions.evicted == (["web-0"] if changed else []), requirements


@pytest.mark.parametrize(
    ("change", "paths"),
    [
        ("TargetLowerThanRequests", ["/spec/containers/0/resources/requests/cpu"]),
        ("TargetHigherThanRequests", []),
    ],
)
async def test_a_resource_the_updater_leaves_alone_counts_as_a_target_of_zero(
    change: str, paths: list[str]
) -> None:
    # memory is Initial, so the target the updater applies holds cpu only (docs/vpa.md)
    world = World()
    policy = {
        "updateMode": "InPlaceOrRecreate",
        "evictionRequirements": [{"resources": ["memory"], "changeRequirement": change}],
    }
    world.cluster.put_vpa(
        vpa(
            annotations={"vpa.hpa.dev/resource-update-modes": "memory=Initial"},
            extra_spec={"updatePolicy": policy},
        )
    )
    await world.updater.run_once()
    assert resize_paths(world, "web-0") == paths


def restarting(name: str) -> dict[str, Any]:
    """A pod whose container restarts when its memory is resized."""
    data = pod(name)
    data["spec"]["containers"][0]["resizePolicy"] = [
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "memory", "restartPolicy": "RestartContainer"},
    ]
    return data


@pytest.mark.parametrize(
    ("skip", "restarts", "resized"),
    [
        (False, False, ["web-0"]),  # int(3 * 0.5) = 1 per loop
        (True, False, ["web-0", "web-1", "web-2"]),
        (True, True, ["web-0"]),  # a container would restart: the budget holds
    ],
)
async def test_skipping_the_disruption_budget_resizes_every_pod_that_restarts_nothing(
    skip: bool, restarts: bool, resized: list[str]
) -> None:
    world = World(in_place_skip_disruption_budget=skip)
    if restarts:
        for i in range(3):
            world.cluster.put_pod(restarting(f"web-{i}"))
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate"))
    await world.updater.run_once()
    assert sorted(who for who, _ in world.actions.resized) == resized
    assert world.actions.evicted == []


async def test_skipping_the_disruption_budget_leaves_recreate_to_the_budget() -> None:
    world = World(in_place_skip_disruption_budget=True)
    world.cluster.put_vpa(vpa(mode="Recreate"))
    await world.updater.run_once()
    assert world.actions.evicted == ["web-0"]


async def test_a_group_below_min_replicas_is_resized_but_never_evicted_when_skipping() -> None:
    world = World(replicas=1, pods=1, in_place_skip_disruption_budget=True)
    world.cluster.put_vpa(vpa(mode="InPlaceOrRecreate"))
    world.actions.fail("resize", "web-0", PodActionError(422, "invalid"))
    await world.updater.run_once()
    assert [who for who, _ in world.actions.resized] == []
    assert world.actions.evicted == []  # the fall-back to eviction is refused below minReplicas
    await world.updater.run_once()
    assert [who for who, _ in world.actions.resized] == ["web-0"]
