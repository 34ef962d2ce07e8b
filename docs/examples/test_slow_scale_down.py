"""Slow scale-down, ``scaleDown: Pods 1 per 600s``: after the 5-minute stabilization window,
one pod every 10 minutes: 5 -> 4 -> 3 -> 2 -> 1."""

from hpa.testing import (
    FakeMetrics,
    assert_condition,
    assert_replicas,
    assert_replicas_within,
    assert_steps,
)
from hpa.testing.plugin import HPATestKit


def test_idle_pods_lose_one(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("slow-scale-down.yaml")
    # idle for longer than the stabilization window: the recommendations all say 1
    idle = FakeMetrics().pods(5, cpu="10m", cpu_request="500m").recommendation(1, "6m")
    result = hpa_kit.decide(hpa, idle)
    assert_replicas(result, 4)
    assert_condition(result, "ScalingLimited", status=True, reason="ScaleDownLimit")


def test_a_load_drop_removes_a_pod_every_ten_minutes(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("slow-scale-down.yaml")
    result = hpa_kit.run(hpa, [(0, 125), (60, 10)], duration="50m", initial_replicas=5)
    assert_steps(result, [5, 4, 3, 2, 1])
    assert_replicas_within(result, min_replicas=4, start="6m", end="15m")
