"""Two metrics, cpu at 60 % and a queue at 30 messages per pod: the larger proposal wins."""

from hpa.testing import FakeMetrics, assert_event, assert_replicas
from hpa.testing.plugin import HPATestKit

QUEUE = "queue_messages_ready"


def test_the_queue_wins_when_it_is_long(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("multi-metric.yaml")
    # cpu on target (4 pods), 240 messages = 8 pods' worth
    metrics = FakeMetrics().pods(4, cpu="300m", cpu_request="500m").external_metric(QUEUE, 240)
    result = hpa_kit.decide(hpa, metrics)
    assert_replicas(result, 8)
    assert_event(result, "SuccessfulRescale", message="external metric queue_messages_ready")


def test_cpu_wins_when_the_queue_is_short(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("multi-metric.yaml")
    metrics = FakeMetrics().pods(4, cpu="450m", cpu_request="500m").external_metric(QUEUE, 30)
    result = hpa_kit.decide(hpa, metrics)
    assert_replicas(result, 6)
    assert result.reason == "cpu resource utilization (percentage of request) above target"


def test_a_failing_queue_metric_does_not_block_a_cpu_scale_up(hpa_kit: HPATestKit) -> None:
    hpa = hpa_kit.load("multi-metric.yaml")
    metrics = (
        FakeMetrics()
        .pods(4, cpu="450m", cpu_request="500m")
        .metric_error(QUEUE, "unable to fetch metrics from external metrics API: timeout")
    )
    result = hpa_kit.decide(hpa, metrics)
    assert_replicas(result, 6)
    assert result.error is not None
