"""Fast scale-up, ``scaleUp: Percent 900 per 60s``: 1 -> 10 -> 100 -> 1000 in three minutes."""

from hpa.testing import (
    FakeMetrics,
    assert_condition,
    assert_replicas,
    assert_replicas_at,
    assert_steps,
)
from hpa.testing.plugin import HPATestKit


def test_one_busy_pod_becomes_ten(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("fast-scale-up.yaml")
    # one pod at 10 cores of its 500m request: the metric asks for 200, the policy allows 10
    result = hpa_kit.decide(hpa, FakeMetrics().pods(1, cpu="5", cpu_request="500m"))
    assert_replicas(result, 10)
    assert_condition(result, "ScalingLimited", status=True, reason="ScaleUpLimit")


def test_a_minute_later_ten_become_a_hundred(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("fast-scale-up.yaml")
    busy = FakeMetrics().pods(1, cpu="5", cpu_request="500m")
    first = hpa_kit.decide(hpa, busy)
    ten = FakeMetrics().pods(10, cpu="5", cpu_request="500m")
    # 15 s later the 9 pods added count against the 60 s period: still 10
    assert_replicas(hpa_kit.decide(hpa, ten, after=first), 10)
    # once the period has passed, 900 % of 10 more
    later = hpa_kit.decide(hpa, ten, after=first, now=first.now.replace(minute=1, second=1))
    assert_replicas(later, 100)


def test_a_load_step_goes_1_10_100_1000(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("fast-scale-up.yaml")
    result = hpa_kit.run(hpa, [(0, 10), (60, 25000)], duration="7m")
    assert_steps(result, [1, 10, 100, 1000])
    assert_replicas_at(result, "3m", 100)
    assert result.summary.scale_ups == 3
