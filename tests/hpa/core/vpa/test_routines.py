"""One VPA's pass of the recommender loop (``processVPAUpdate``) with our two conditions."""

from __future__ import annotations

from hpa.core.selector import parse_selector
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.awareness import HorizontalConflict, HpaAwareness
from hpa.core.vpa.cluster import ClusterState, ContainerId, PodId, VpaId, VpaState
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.recommender import create_pod_resource_recommender
from hpa.core.vpa.routines import process_vpa_update

S = NANOSECONDS_PER_SECOND
MINUTE, HOUR = 60 * S, 3600 * S
T0 = 1_700_000_000 * S
POD = PodId("shop", "web-1")
APP = ContainerId(POD, "app")


def fed(hours: float) -> tuple[ClusterState, VpaState]:
    """A VPA over one pod whose container used 0.5 cores and 256 MiB, a sample a minute."""
    cluster = ClusterState(gc_interval_ns=HOUR)
    vpa = cluster.add_or_update_vpa(
        VpaId("shop", "web"), selector=parse_selector("app=web"), created_ns=T0
    )
    cluster.add_or_update_pod(POD, {"app": "web"}, "Running", now_ns=T0)
    cluster.add_or_update_container(APP, Resources(cpu=100, memory=1 << 27), now_ns=T0)
    for minute in range(int(hours * 60)):
        at = T0 + minute * MINUTE
        assert cluster.add_cpu_sample(APP, at, 500, now_ns=at)
        assert cluster.add_memory_sample(APP, at, 256 << 20, now_ns=at)
    return cluster, vpa


def test_a_recommendation_with_its_conditions() -> None:
    cluster, vpa = fed(hours=25)
    now = T0 + 25 * HOUR
    update = process_vpa_update(
        cluster,
        vpa,
        recommender=create_pod_resource_recommender(),
        now_ns=now,
    )
    assert update.first_recommendation
    assert update.missing is None
    assert vpa.recommendation is not None
    (container,) = vpa.recommendation
    assert container.container_name == "app"
    bounds = (container.lower_bound.cpu, container.target.cpu, container.upper_bound.cpu)
    lower, target, upper = (b or 0 for b in bounds)
    assert 0 < lower <= target <= upper
    assert target >= 500  # the 90th percentile of a steady 0.5 cores, plus margin
    conditions = {c.type: c for c in vpa.conditions_list()}
    assert conditions["RecommendationProvided"].status == "True"
    assert conditions["LowConfidence"].status == "False"
    assert "NoPodsMatched" not in conditions
    assert "HorizontalScalingConflictAvoided" not in conditions
    again = process_vpa_update(
        cluster,
        vpa,
        recommender=create_pod_resource_recommender(),
        now_ns=now,
    )
    assert not again.first_recommendation


def test_a_short_history_is_low_confidence() -> None:
    cluster, vpa = fed(hours=2)
    process_vpa_update(
        cluster,
        vpa,
        recommender=create_pod_resource_recommender(),
        now_ns=T0 + 2 * HOUR,
    )
    low = vpa.conditions["LowConfidence"]
    assert (low.status, low.reason) == ("True", "ShortHistory")
    assert low.message == "less than a day of usage history for container(s): app"


def test_an_hpa_conflict_is_published_and_withdrawn() -> None:
    cluster, vpa = fed(hours=1)
    conflict = HorizontalConflict("cpu", None, "shop/web")
    recommender = create_pod_resource_recommender()
    process_vpa_update(cluster, vpa, recommender=recommender, now_ns=T0, conflicts=[conflict])
    condition = vpa.conditions["HorizontalScalingConflictAvoided"]
    assert (condition.status, condition.reason) == ("True", "ResourcesExcluded")
    assert "HPA shop/web" in condition.message
    process_vpa_update(
        cluster, vpa, recommender=recommender, now_ns=T0, conflicts=[conflict],
        awareness=HpaAwareness.OFF,
    )  # fmt: skip
    assert "HorizontalScalingConflictAvoided" not in vpa.conditions


def test_a_vpa_without_pods_has_no_pods_matched() -> None:
    cluster = ClusterState(gc_interval_ns=HOUR)
    vpa = cluster.add_or_update_vpa(
        VpaId("shop", "web"), selector=parse_selector("app=web"), created_ns=T0
    )
    update = process_vpa_update(
        cluster, vpa, recommender=create_pod_resource_recommender(), now_ns=T0
    )
    assert not update.first_recommendation
    assert vpa.conditions["NoPodsMatched"].status == "True"
    assert vpa.conditions["RecommendationProvided"].status == "False"
    assert "LowConfidence" not in vpa.conditions
