"""Gradual scale-up, ``scaleUp: Pods 1 per 600s``: one pod every 10 minutes, however high the
load."""

from hpa.testing import FakeMetrics, assert_replicas, assert_steps, decide, load_hpa, run
from hpa.testing.plugin import HPATestKit


def test_a_busy_pod_gets_one_more(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("gradual-scale-up.yaml")
    result = hpa_kit.decide(hpa, FakeMetrics().pods(1, cpu="2", cpu_request="500m"))
    assert_replicas(result, 2)


def test_no_second_pod_within_ten_minutes(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("gradual-scale-up.yaml")
    metrics = FakeMetrics().pods(2, cpu="2", cpu_request="500m").scale_up_event(1, "9m")
    assert_replicas(hpa_kit.decide(hpa, metrics), 2)


def test_without_fixtures(hpa_kit: HPATestKit) -> None:
    # the same, with plain functions (paths relative to the working directory or absolute)
    hpa = load_hpa(hpa_kit.path("gradual-scale-up.yaml"))
    assert_replicas(decide(hpa, FakeMetrics().pods(1, cpu="2", cpu_request="500m")), 2)
    assert_steps(run(hpa, [(0, 10), (60, 100)], duration="35m"), [1, 2, 3, 4])
