"""The recommender's pass against fakes behind its ports: conditions, status writes only when
changed, OOM kills, checkpoints, history bootstrap, HPA awareness, recommender selection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hpa.api.types import format_time
from hpa.api.vpa import time_to_ns
from hpa.controllers.vertical.feeder import parse_eviction_event, selected_model
from hpa.controllers.vertical.ports import HistoryError, OomRecord, PodHistory, UsageSample
from hpa.controllers.vertical.recommender import RecommenderSettings
from hpa.core.quantity import parse_quantity
from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.awareness import HpaAwareness, effective_controlled_resources
from hpa.core.vpa.cluster import PodId
from hpa.kube.client import TokenBucket
from tests.fakes.vertical import FakeHistoryProvider, FakeRecommenderApi
from tests.hpa.controllers.vertical.harness import (
    MIB,
    NS,
    Harness,
    deployment_json,
    eviction_json,
    hpa_json,
    pod_json,
    replica_set_json,
    vpa_json,
)


def target(status: Any, container: str = "app") -> dict[str, str]:
    for rec in status["recommendation"]["containerRecommendations"]:
        if rec["containerName"] == container:
            return dict(rec["target"])
    raise AssertionError(f"no recommendation for {container}")


async def test_recommendation_provided_and_written_only_when_changed() -> None:
    h = Harness()
    h.web()
    h.feed(cpu=200, memory=200 * MIB)
    await h.run_once()
    conditions = h.conditions()
    assert conditions["RecommendationProvided"]["status"] == "True"
    assert conditions["LowConfidence"]["status"] == "True"
    assert "app" in conditions["LowConfidence"]["message"]
    assert set(target(h.status())) == {"cpu", "memory"}
    assert h.status()["observedGeneration"] == 1
    assert len(h.api.patches) == 1
    await h.clock.advance(60)
    await h.run_once()  # same sample (same time): nothing moves
    assert len(h.api.patches) == 1
    await h.clock.advance(60)
    h.feed(cpu=2000, memory=2000 * MIB)
    await h.run_once()
    assert len(h.api.patches) == 2


async def test_no_pods_matched() -> None:
    h = Harness()
    h.web(pods=0)
    await h.run_once()
    conditions = h.conditions()
    assert conditions["NoPodsMatched"]["status"] == "True"
    assert conditions["RecommendationProvided"]["status"] == "False"
    assert conditions["RecommendationProvided"]["reason"] == "NoPodsMatched"


async def test_config_unsupported_for_a_missing_target_and_a_child_target() -> None:
    h = Harness()
    h.web()
    h.put_vpa(vpa_json("gone", target={"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}))
    h.put_vpa(
        vpa_json("child", target={"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1"})
    )
    await h.run_once()
    gone = h.conditions("gone")["ConfigUnsupported"]
    assert gone["status"] == "True"
    assert gone["message"].startswith("Cannot read targetRef. Reason: Deployment shop/x")
    child = h.conditions("child")["ConfigUnsupported"]
    assert "has a parent controller" in child["message"]
    assert "ConfigUnsupported" not in h.conditions("web")


async def test_config_deprecated_and_unsupported_are_removed_once_fixed() -> None:
    h = Harness()
    h.web()
    h.put_vpa(
        vpa_json(
            status={
                "conditions": [
                    {"type": "ConfigDeprecated", "status": "True"},
                    {"type": "ConfigUnsupported", "status": "True", "message": "old"},
                ]
            }
        )
    )
    await h.run_once()
    assert "ConfigDeprecated" not in h.conditions()
    assert "ConfigUnsupported" not in h.conditions()


async def test_a_policy_the_model_cannot_use_is_config_unsupported() -> None:
    h = Harness()
    h.web()
    h.put_vpa(
        vpa_json(policy={"containerPolicies": [{"containerName": "app", "mode": "Sometimes"}]})
    )
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    condition = h.conditions()["ConfigUnsupported"]
    assert condition["message"].startswith("Cannot use the resource policy")


async def test_owner_chain_through_a_custom_resource_with_scale() -> None:
    h = Harness()
    h.scales.scales[(NS, "Rollout", "web")] = h.scales_info("app=web")
    h.put_pod(pod_json("web-0", owner="web-1"))
    h.put_controller(
        "ReplicaSet",
        {
            "metadata": {
                "namespace": NS,
                "name": "web-1",
                "ownerReferences": [
                    {
                        "apiVersion": "argoproj.io/v1alpha1",
                        "kind": "Rollout",
                        "name": "web",
                        "controller": True,
                    }
                ],
            },
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        },
    )
    h.put_vpa(
        vpa_json(target={"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"})
    )
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    assert h.conditions()["RecommendationProvided"]["status"] == "True"
    assert "ConfigUnsupported" not in h.conditions()


async def test_hpa_on_cpu_leaves_cpu_to_the_hpa_and_memory_recommended() -> None:
    h = Harness()
    h.web()
    h.put_hpa(hpa_json("web-hpa"))
    h.put_hpa(hpa_json("other", target="api"))
    h.feed(cpu=200, memory=300 * MIB)
    await h.run_once()
    condition = h.conditions()["HorizontalScalingConflictAvoided"]
    assert condition["status"] == "True"
    assert "HPA shop/web-hpa" in condition["message"]
    assert "cpu in every container" in condition["message"]
    assert "other" not in condition["message"]
    recommended = target(h.status())
    assert set(recommended) == {"cpu", "memory"}  # cpu is computed and shown
    record = h.cluster.vpas[next(iter(h.cluster.vpas))]
    conflicts = h.recommender._conflicts(record, {})
    applied = effective_controlled_resources(
        "app", ("cpu", "memory"), conflicts, awareness=HpaAwareness.EXCLUDE
    )
    assert applied == frozenset({"memory"})


async def test_hpa_awareness_warn_and_off() -> None:
    for awareness, expected in ((HpaAwareness.WARN, "False"), (HpaAwareness.OFF, None)):
        h = Harness(settings=RecommenderSettings(hpa_awareness=awareness))
        h.web()
        h.put_hpa(hpa_json("web-hpa"))
        h.feed(cpu=200, memory=300 * MIB)
        await h.run_once()
        condition = h.conditions().get("HorizontalScalingConflictAvoided")
        assert (condition or {}).get("status") == expected


async def test_hpa_on_a_pods_metric_excludes_nothing() -> None:
    h = Harness()
    h.web()
    h.put_hpa(
        hpa_json(
            "web-hpa",
            metrics=[
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "rps"},
                        "target": {"type": "AverageValue", "averageValue": "10"},
                    },
                }
            ],
        )
    )
    h.feed(cpu=200, memory=300 * MIB)
    await h.run_once()
    assert "HorizontalScalingConflictAvoided" not in h.conditions()


async def test_unknown_recommender_is_left_alone_and_crane_is_served() -> None:
    h = Harness()
    h.web()
    h.put_vpa(vpa_json("theirs", recommenders=["upstream"]))
    h.put_vpa(vpa_json("crane", recommenders=["crane"]))
    h.feed(cpu=500, memory=300 * MIB)
    await h.run_once()
    assert h.api.last_status(NS, "theirs") is None
    crane = h.status("crane")["recommendation"]["containerRecommendations"][0]
    assert crane["target"] == crane["lowerBound"] == crane["upperBound"]
    assert h.conditions("crane")["RecommendationProvided"]["status"] == "True"
    assert "LowConfidence" not in h.conditions("crane")


async def test_crane_restarts_from_the_history_bootstrap_not_from_checkpoints() -> None:
    """The ``crane`` model's histories are not checkpointed (the checkpoints are the default
    model's, readable by upstream): a restart with checkpoints only has no ``crane``
    recommendation until live samples come; a restart with the history provider has one at once.
    The default model's VPA resumes from its checkpoint either way."""
    first = Harness()
    first.web()
    first.put_vpa(vpa_json("crane", recommenders=["crane"]))
    first.feed(cpu=500, memory=300 * MIB)
    await first.run_once()
    assert first.status("crane")["recommendation"]["containerRecommendations"]

    def restarted(history: FakeHistoryProvider | None) -> Harness:
        h = Harness(api=first.api, history=history)
        h.clock = h.recommender.clock = first.clock
        h.web()
        h.put_vpa(vpa_json("crane", recommenders=["crane"]))
        return h

    plain = restarted(None)
    assert await plain.recommender.init_from_checkpoints() == 2, "web-app and crane-app"
    await plain.run_once()
    assert plain.status()["recommendation"]["containerRecommendations"], "from the checkpoint"
    assert plain.conditions("crane")["RecommendationProvided"]["status"] == "False"

    hour_ago = first.now_ns() - 3600 * 10**9
    history = {
        PodId(NS, "web-0"): PodHistory(
            last_labels={"app": "web"},
            last_seen_ns=first.now_ns(),
            samples={
                "app": [
                    UsageSample(hour_ago, "cpu", 500),
                    UsageSample(hour_ago, "memory", 300 * MIB),
                ]
            },
        )
    }
    bootstrapped = restarted(FakeHistoryProvider(history))
    await bootstrapped.recommender.init_from_checkpoints()
    await bootstrapped.recommender.fetch_history()
    await bootstrapped.run_once()
    recommended = bootstrapped.status("crane")["recommendation"]["containerRecommendations"]
    assert recommended[0]["target"] == recommended[0]["upperBound"]
    assert bootstrapped.conditions("crane")["RecommendationProvided"]["status"] == "True"


@pytest.mark.parametrize(
    ("recommenders", "name", "expected"),
    [
        ((), "default", "default"),
        ((), "mine", None),
        (("mine",), "mine", "default"),
        (("default",), "mine", None),
        (("crane",), "default", "crane"),
        (("other", "crane"), "default", "crane"),
        (("other",), "default", None),
    ],
)
def test_selected_model(recommenders: tuple[str, ...], name: str, expected: str | None) -> None:
    assert selected_model(recommenders, name) == expected


async def test_oom_kill_raises_memory() -> None:
    h = Harness()
    h.web()
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    before = target(h.status())["memory"]
    await h.clock.advance(60)
    finished = format_time(h.clock.now())
    running = {"name": "app", "restartCount": 0, "state": {"running": {}}}
    h.put_pod(pod_json("web-0", statuses=[running], resource_version="2"))
    await h.run_once()
    restarted = {
        "name": "app",
        "restartCount": 1,
        "state": {"running": {}},
        "lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": finished}},
    }
    h.put_pod(pod_json("web-0", statuses=[restarted], resource_version="3"))
    await h.clock.advance(60)
    await h.run_once()
    after = target(h.status())["memory"]
    assert after != before
    state = next(iter(h.cluster.aggregate_state_map.values()))
    assert state.aggregate_memory_peaks.total_weight > 0
    assert time_to_ns(None) != 0  # Go's zero time, not 0


def memory_target_mib(h: Harness) -> float:
    return parse_quantity(target(h.status())["memory"]).value() / MIB


async def test_eviction_event_raises_memory_once() -> None:
    """An eviction Event naming a container starved of memory bumps it from its usage
    (``parseEvictionEvent``); the same Event delivered again (a relist) is read once."""
    h = Harness()
    h.web()
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    assert memory_target_mib(h) < 300, "the per-pod minimum, 250Mi"
    await h.clock.advance(60)
    evicted = parse_eviction_event(eviction_json("e1", at=format_time(h.clock.now())))
    h.feeder.observe_eviction_event(evicted)
    h.feeder.observe_eviction_event(evicted)
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    assert memory_target_mib(h) >= 600, "500Mi of usage bumped by 20 % (at least +100Mi)"


async def test_one_oom_seen_by_pod_status_and_event_is_recorded_once() -> None:
    """The kernel kills a container (its status: ``OOMKilled``) and the kubelet evicts its pod
    naming it (an Event) 10 s later: one OOM, the status's (the request, 128Mi, + 100Mi). An
    eviction of the same container minutes later is another OOM."""
    h = Harness()
    h.web()
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    await h.clock.advance(60)
    running = {"name": "app", "restartCount": 0, "state": {"running": {}}}
    h.put_pod(pod_json("web-0", statuses=[running], resource_version="2"))
    await h.run_once()
    killed_at = h.clock.now()
    restarted = {
        "name": "app",
        "restartCount": 1,
        "state": {"running": {}},
        "lastState": {"terminated": {"reason": "OOMKilled", "finishedAt": format_time(killed_at)}},
    }
    h.put_pod(pod_json("web-0", statuses=[restarted], resource_version="3"))
    await h.clock.advance(10)
    h.feeder.observe_eviction_event(
        parse_eviction_event(eviction_json("e1", at=format_time(h.clock.now())))
    )
    await h.clock.advance(50)
    await h.run_once()
    assert memory_target_mib(h) < 400, "the status's OOM only (the event's would be 600Mi+)"
    await h.clock.advance(300)
    h.feeder.observe_eviction_event(
        parse_eviction_event(eviction_json("e2", at=format_time(h.clock.now())))
    )
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    assert memory_target_mib(h) >= 600, "a later eviction is a new OOM"


async def test_checkpoints_written_loaded_and_resume_the_same_recommendation() -> None:
    h = Harness()
    h.web()
    h.feed(cpu=300, memory=400 * MIB)
    await h.run_once()
    assert list(h.api.checkpoints) == [(NS, "web-app")]
    checkpoint = h.api.checkpoints[(NS, "web-app")]
    assert checkpoint["status"]["version"] == "v3"
    first = h.status()
    restarted = Harness(api=h.api)
    restarted.clock = h.clock
    restarted.recommender.clock = h.clock
    restarted.web()
    loaded = await restarted.recommender.init_from_checkpoints()
    assert loaded == 1
    restarted.put_vpa(vpa_json())  # a fresh status: everything is written again
    restarted.metrics.snapshots = [
        s.__class__(s.pod_id, s.container, s.snapshot_time_ns, s.window_ns, {"memory": 400 * MIB})
        for s in h.metrics.snapshots
    ]
    await restarted.run_once()
    assert restarted.status()["recommendation"] == first["recommendation"], (
        "a restart resumes from the checkpoint"
    )


def rate_limited(settings: RecommenderSettings, *, qps: float, apps: int) -> Harness:
    """``apps`` Deployments with one pod and a VPA each, the API writes limited to ``qps`` (burst
    1) on a clock that moves by itself when the client waits."""
    h = Harness(settings=settings)
    h.clock.auto_advance = True
    h.api.limiter = TokenBucket(qps, 1, clock=h.clock)
    for name in (f"w{i}" for i in range(apps)):
        h.put_controller("Deployment", deployment_json(name, app=name))
        h.put_controller("ReplicaSet", replica_set_json(f"{name}-1", owner=name, app=name))
        h.put_pod(pod_json(f"{name}-0", app=name, owner=f"{name}-1"))
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        h.put_vpa(vpa_json(name, target=target))
        h.feed(f"{name}-0", cpu=300, memory=400 * MIB)
    return h


async def test_checkpoints_rate_limited_oldest_first_until_the_timeout() -> None:
    """The client's limit bounds a pass's checkpoint writes: written until
    ``--checkpoints-timeout`` (on the injected clock) is over, the least recently written VPAs
    first, so the next pass goes on with the others."""
    h = rate_limited(
        RecommenderSettings(checkpoints_timeout_seconds=2, min_checkpoints=1), qps=1, apps=5
    )
    await h.run_once()
    first = set(h.api.saves)
    assert len(first) == 2, "a write a second: 2 s of the timeout allow two"
    h.api.saves.clear()
    await h.run_once()
    second = set(h.api.saves)
    assert len(second) == 2
    assert not second & first, "the never-written VPAs go first"
    h.api.saves.clear()
    await h.run_once()
    assert set(h.api.saves) - first - second, "the last one, then the oldest again"


async def test_min_checkpoints_are_written_past_the_timeout() -> None:
    h = rate_limited(
        RecommenderSettings(checkpoints_timeout_seconds=1, min_checkpoints=3), qps=0.1, apps=4
    )
    await h.run_once()
    assert len(h.api.saves) == 3


async def test_checkpoint_garbage_collection() -> None:
    api = FakeRecommenderApi()
    h = Harness(api=api)
    h.web()
    h.feed(cpu=300, memory=400 * MIB)
    await h.run_once()
    await api.save_checkpoint(
        NS,
        "deleted-app",
        vpa_name="deleted",
        container_name="app",
        status=h.cluster.vpas[next(iter(h.cluster.vpas))]
        .aggregate_state_by_container_name()["app"]
        .save_to_checkpoint(h.now_ns()),
    )
    await h.clock.advance(601)
    await h.run_once()
    assert (NS, "deleted-app") in api.deletes
    assert (NS, "web-app") in api.checkpoints


async def test_ignored_vpa_object_namespaces_are_not_served_loaded_or_collected() -> None:
    """``--ignored-vpa-object-namespaces`` (upstream's ``shouldIgnoreNamespace``): a VPA there
    gets no status and no checkpoint, its checkpoints are not loaded at start and not deleted by
    the garbage collection even when their VPA is gone; other namespaces are served as usual."""
    api = FakeRecommenderApi()
    h = Harness(api=api, ignored_vpa_object_namespaces=frozenset({"kube-system", "infra"}))
    h.web()
    h.put_vpa(vpa_json("agent", namespace="infra"))
    h.feed(cpu=300, memory=400 * MIB)
    saved = AggregateContainerState()
    saved.add_cpu_sample(h.now_ns(), 100)
    for namespace, vpa in (("infra", "agent"), ("infra", "gone"), (NS, "gone")):
        await api.save_checkpoint(
            namespace,
            f"{vpa}-app",
            vpa_name=vpa,
            container_name="app",
            status=saved.save_to_checkpoint(h.now_ns()),
        )
    assert await h.recommender.init_from_checkpoints() == 0, "no served VPA has a checkpoint"
    await h.run_once()
    assert api.last_status("infra", "agent") is None
    assert "RecommendationProvided" in h.conditions()
    assert ("infra", "agent-app") in api.checkpoints
    assert ("infra", "gone-app") in api.checkpoints, "left to whoever serves that namespace"
    assert (NS, "gone-app") not in api.checkpoints, "an orphan of a served namespace is deleted"


async def test_hanging_history_provider_never_blocks_live_passes() -> None:
    provider = FakeHistoryProvider(hang=True)
    h = Harness(history=provider, settings=RecommenderSettings(interval_seconds=60))
    h.web()
    h.feed(cpu=100, memory=100 * MIB)
    task = asyncio.create_task(h.recommender.run())
    await h.clock.settle()
    assert h.recommender.passes == 1
    conditions = h.conditions()
    assert conditions["FetchingHistory"]["status"] == "True"
    assert conditions["RecommendationProvided"]["status"] == "True"
    assert h.api.saves == []  # a VPA fetching history is not checkpointed
    h.observe_vpa_status()
    await h.clock.advance(60)
    await h.clock.settle()
    assert h.recommender.passes == 2
    provider.history = {
        PodId(NS, "old-0"): PodHistory(
            last_labels={"app": "web"},
            last_seen_ns=h.now_ns(),
            samples={
                "app": [
                    UsageSample(h.now_ns() - 3600 * 10**9, "cpu", 900),
                    UsageSample(h.now_ns() - 3600 * 10**9, "memory", 900 * MIB),
                ]
            },
            ooms=[OomRecord("app", h.now_ns() - 600 * 10**9, 512 * MIB)],
        )
    }
    provider.release.set()
    await h.clock.settle()
    h.observe_vpa_status()
    await h.clock.advance(60)
    await h.clock.settle()
    assert "FetchingHistory" not in h.conditions()
    assert h.api.saves  # checkpoints resume
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_failing_history_provider_is_logged_and_the_condition_removed() -> None:
    for error in (HistoryError("prometheus: connection refused"), RuntimeError("bug")):
        h = Harness(history=FakeHistoryProvider(error=error))
        h.web()
        h.feed(cpu=100, memory=100 * MIB)
        await h.recommender.init_from_checkpoints()
        await h.recommender.fetch_history()
        await h.run_once()
        assert "FetchingHistory" not in h.conditions()
        assert h.conditions()["RecommendationProvided"]["status"] == "True"


async def test_bad_input_never_stops_the_pass() -> None:
    h = Harness()
    h.web()
    h.put_vpa(
        vpa_json("broken", target={"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    )
    h.api.fail_status.add(f"{NS}/broken")
    h.metrics.error = "metrics.k8s.io: 503"
    await h.run_once()
    assert h.api.last_status(NS, "web") is not None
    h.metrics.error = ""
    h.feed(cpu=100, memory=100 * MIB)
    await h.run_once()
    assert h.conditions()["RecommendationProvided"]["status"] == "True"


async def test_init_container_samples_are_dropped() -> None:
    h = Harness()
    h.put_controller(
        "Deployment",
        {
            "metadata": {"namespace": NS, "name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        },
    )
    h.put_controller(
        "ReplicaSet",
        {
            "metadata": {
                "namespace": NS,
                "name": "web-1",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                        "controller": True,
                    }
                ],
            },
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        },
    )
    h.put_pod(pod_json("web-0", init_containers=["setup"]))
    h.put_vpa(vpa_json())
    h.feed(cpu=100, memory=100 * MIB)
    h.feed(container="setup", cpu=5000, memory=5000 * MIB)
    await h.run_once()
    names = {r["containerName"] for r in h.status()["recommendation"]["containerRecommendations"]}
    assert names == {"app"}
    assert h.feeder.samples_dropped == 2
