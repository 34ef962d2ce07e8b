"""``hpa.testing``'s VPA part: strict VPA manifests, fake usage history, the recommendation."""

from __future__ import annotations

from typing import Any

import pytest

from hpa.core.selector import parse_selector
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.cluster import ClusterState, ContainerId, PodId, VpaId
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.recommender import create_pod_resource_recommender
from hpa.core.vpa.routines import process_vpa_update
from hpa.testing import (
    EPOCH,
    FakeUsage,
    HPAAssertionError,
    ManifestError,
    assert_vpa_condition,
    assert_vpa_target,
    load_vpa,
    parse_vpas,
    recommend,
)

S = NANOSECONDS_PER_SECOND


def manifest(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}
        | spec,
    }


STEADY = (
    FakeUsage()
    .pod("web-1", containers={"app": {"cpu": "100m", "memory": "128Mi"}})
    .usage("app", cpu="500m", memory="256Mi", duration="25h")
)


def test_the_recommendation_is_the_cores_for_the_same_history() -> None:
    """The same pods and samples fed to the core's cluster model by hand give the same
    recommendation (a thin layer: nothing is estimated here)."""
    result = recommend(load_vpa(manifest()), STEADY)
    now = int(EPOCH.timestamp()) * S
    start = now - 25 * 3600 * S
    cluster = ClusterState(gc_interval_ns=3600 * S)
    vpa = cluster.add_or_update_vpa(
        VpaId("shop", "web"), selector=parse_selector("app=web"), created_ns=start
    )
    pod = PodId("shop", "web-1")
    cluster.add_or_update_pod(pod, {"app": "web"}, "Running", now_ns=start)
    app = ContainerId(pod, "app")
    cluster.add_or_update_container(app, Resources(cpu=100, memory=128 << 20), now_ns=start)
    for at in range(start, now, 60 * S):
        cluster.add_cpu_sample(app, at, 500, now_ns=at)
        cluster.add_memory_sample(app, at, 256 << 20, now_ns=at)
    process_vpa_update(cluster, vpa, recommender=create_pod_resource_recommender(), now_ns=now)
    assert result.recommendations == vpa.recommendation
    assert_vpa_target(result, "app", cpu="587m", memory="323522422")
    assert_vpa_condition(result, "RecommendationProvided", status=True)
    assert_vpa_condition(result, "LowConfidence", status=False)


def test_history_shorter_than_a_day_is_low_confidence() -> None:
    short = (
        FakeUsage()
        .pods(2, containers={"app": {"cpu": "100m"}})
        .usage("app", cpu="500m", duration="2h")
    )
    result = recommend(load_vpa(manifest()), short)
    assert_vpa_condition(result, "LowConfidence", status="True", reason="ShortHistory")


def test_an_oom_raises_memory_and_max_allowed_caps_it() -> None:
    capped = manifest(
        resourcePolicy={
            "containerPolicies": [{"containerName": "*", "maxAllowed": {"memory": "400Mi"}}]
        }
    )
    result = recommend(load_vpa(capped), STEADY.oom("app", ago="1h"))
    found = result.container("app")
    assert found is not None
    assert found.uncapped_target.memory is not None
    assert found.uncapped_target.memory > 400 << 20
    assert_vpa_target(result, "app", memory="400Mi")
    with pytest.raises(HPAAssertionError) as error:
        assert_vpa_target(result, "app", memory="401Mi")
    first = str(error.value).splitlines()[0]
    assert first == (
        "shop/web: container app target: memory: expected 420478976 (401.00Mi), "
        "got 419430400 (400.00Mi)"
    )
    assert "  explanation:" in str(error.value)


def test_no_pods_no_recommendation() -> None:
    result = recommend(load_vpa(manifest()), FakeUsage())
    assert result.recommendations == ()
    assert_vpa_condition(result, "NoPodsMatched", status=True)
    with pytest.raises(
        HPAAssertionError, match="container app: expected a recommendation, got none"
    ):
        assert_vpa_target(result, "app", cpu="1")


def test_vpa_manifests_are_strict() -> None:
    with pytest.raises(ManifestError, match=r'unknown field "spec.updatePolicy.updateMod"'):
        load_vpa(manifest(updatePolicy={"updateMod": "Off"}))
    with pytest.raises(ManifestError, match=r"VerticalPodAutoscaler is invalid: .*updateMode"):
        load_vpa(manifest(updatePolicy={"updateMode": "Sometimes"}))
    with pytest.raises(ManifestError, match="kind: expected VerticalPodAutoscaler"):
        parse_vpas("apiVersion: autoscaling.k8s.io/v1\nkind: Pod\n")
