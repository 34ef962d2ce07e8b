"""Scale-down disabled, ``scaleDown: selectPolicy: Disabled``: up with the load, never down."""

from hpa.testing import FakeMetrics, assert_condition, assert_replicas, assert_summary
from hpa.testing.plugin import HPATestKit


def test_idle_pods_stay(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("no-scale-down.yaml")
    idle = FakeMetrics().pods(8, cpu="0", cpu_request="500m").no_recommendations()
    result = hpa_kit.decide(hpa, idle)
    assert_replicas(result, 8)
    assert_condition(result, "ScalingLimited", status=True, reason="ScaleDownLimit")


def test_busy_pods_still_scale_up(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("no-scale-down.yaml")
    assert_replicas(hpa_kit.decide(hpa, FakeMetrics().pods(4, cpu="500m", cpu_request="500m")), 8)


def test_the_peak_is_kept_after_the_load_falls(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("no-scale-down.yaml")
    result = hpa_kit.run(
        hpa, [(0, 100), (120, 800), (600, 100)], duration="30m", initial_replicas=4
    )
    assert_summary(result, max_replicas=32, scale_downs=0)
    assert result.replicas_at("29m") == 32
