"""Decisions per CPU-second of :func:`hpa.core.decision.decide` (a benchmark, not a test).

Run ``.venv/bin/python -m bench.core``. Each scenario is one HPA reconciled over and over with the
same inputs: a cpu Utilization metric plus a Pods metric, ``N`` running and ready pods with two
containers each, a behavior with the default rules and a 20-entry recommendation log (five minutes
of 15 s syncs). The object+external row uses an Object and an External metric instead, so it
measures the decision layer (normalization, conditions, trace) without the per-pod arithmetic of the
calculators. The "template" rows share one containers tuple and Ready condition between the pods, as
the controller's pod lister converts pods of one template. Time is ``time.process_time`` (CPU time
of this process), so other load on the machine does not count. The goal is at least 10,000 decisions
per CPU-second at 100 pods.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hpa.core.behavior import TimestampedRecommendation
from hpa.core.conditions import ConditionStatus
from hpa.core.decision import (
    CurrentScale,
    ExternalMetricObservation,
    History,
    HorizontalPodAutoscalerStatus,
    MetricObservation,
    ObjectMetricObservation,
    PodMetricsObservation,
    apply_rescale_result,
    decide,
)
from hpa.core.replicas import ContainerInfo, PodCondition, PodInfo, PodMetric
from hpa.core.spec import (
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    HorizontalSettings,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Scenario:
    name: str
    pods: int
    metrics: int
    per_pod: bool = True
    """cpu + Pods metrics (per-pod math) when true, Object + External metrics when false."""
    shared_template: bool = False
    """Pods share one containers tuple and Ready condition, as the controller converts them."""


def _inputs(
    pod_count: int, metric_count: int, *, per_pod: bool = True, shared_template: bool = False
) -> tuple[
    HorizontalPodAutoscalerSpec,
    CurrentScale,
    list[MetricObservation],
    list[PodInfo],
    History,
]:
    started = NOW - timedelta(hours=1)
    shared_ready = PodCondition(ConditionStatus.TRUE, started)
    shared_containers = (
        ContainerInfo("app", {"cpu": 250}),
        ContainerInfo("sidecar", {"cpu": 250}),
    )
    pods = [
        PodInfo(
            name=f"web-{i}",
            ready_condition=(
                shared_ready if shared_template else PodCondition(ConditionStatus.TRUE, started)
            ),
            start_time=started,
            containers=(
                shared_containers
                if shared_template
                else (
                    ContainerInfo("app", {"cpu": 250}),
                    ContainerInfo("sidecar", {"cpu": 250}),
                )
            ),
        )
        for i in range(pod_count)
    ]
    metrics = [
        MetricSpec.for_resource(
            ResourceMetricSource(
                "cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=60)
            )
        ),
        MetricSpec.for_pods(
            PodsMetricSource(
                MetricIdentifier("http_requests"),
                MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=10_000),
            )
        ),
    ][:metric_count]
    cpu = PodMetricsObservation(
        {
            pod.name: PodMetric(300 + (i % 7) * 20, NOW - timedelta(seconds=20), 30.0)
            for i, pod in enumerate(pods)
        },
        timestamp=NOW,
    )
    requests = PodMetricsObservation(
        {pod.name: PodMetric(12_000 + (i % 5) * 100, NOW) for i, pod in enumerate(pods)},
        timestamp=NOW,
    )
    both: list[MetricObservation] = [cpu, requests]
    observations = both[:metric_count]
    if not per_pod:
        metrics = [
            MetricSpec.for_object(
                ObjectMetricSource(
                    CrossVersionObjectReference("Service", "web", "v1"),
                    MetricIdentifier("requests_per_second"),
                    MetricTarget(MetricTargetType.VALUE, value_milli=1_000_000 * pod_count),
                )
            ),
            MetricSpec.for_external(
                ExternalMetricSource(
                    MetricIdentifier("queue_depth"),
                    MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=5_000),
                )
            ),
        ][:metric_count]
        both = [
            ObjectMetricObservation(1_150_000 * pod_count, NOW),
            ExternalMetricObservation((4_000 * pod_count, 900 * pod_count), NOW),
        ]
        observations = both[:metric_count]
    spec = HorizontalPodAutoscalerSpec(
        scale_target_ref=CrossVersionObjectReference("Deployment", "web", "apps/v1"),
        min_replicas=1,
        max_replicas=10 * pod_count,
        metrics=tuple(metrics),
        behavior=HorizontalPodAutoscalerBehavior(),
    )
    history = History(
        recommendations=tuple(
            TimestampedRecommendation(pod_count, NOW - timedelta(seconds=15 * k))
            for k in range(1, 21)
        )
    )
    return spec, CurrentScale(pod_count, pod_count, "app=web"), observations, pods, history


def measure(scenario: Scenario, *, min_cpu_seconds: float) -> tuple[int, float]:
    """Run decide() until ``min_cpu_seconds`` of CPU time; return (decisions, CPU seconds)."""
    spec, current, observations, pods, history = _inputs(
        scenario.pods,
        scenario.metrics,
        per_pod=scenario.per_pod,
        shared_template=scenario.shared_template,
    )
    settings = HorizontalSettings()
    status = HorizontalPodAutoscalerStatus(
        current_replicas=scenario.pods, desired_replicas=scenario.pods
    )
    count = 0
    start = time.process_time()
    elapsed = 0.0
    while elapsed < min_cpu_seconds:
        for _ in range(20):
            decision = decide(
                spec,
                current=current,
                observations=observations,
                pods=pods,
                history=history,
                previous_status=status,
                now=NOW,
                settings=settings,
            )
            if decision.rescale:
                apply_rescale_result(decision, succeeded=True, now=NOW)
        count += 20
        elapsed = time.process_time() - start
    return count, elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per scenario")
    args = parser.parse_args(argv)
    scenarios = [
        Scenario("100 pods, 2 metrics", 100, 2),
        Scenario("1,000 pods, 2 metrics", 1000, 2),
        Scenario("1,000 pods, 1 metric", 1000, 1),
        Scenario("100 pods, object+external", 100, 2, per_pod=False),
        Scenario("100 pods, 2 metrics, template", 100, 2, shared_template=True),
        Scenario("1,000 pods, 2 metrics, template", 1000, 2, shared_template=True),
    ]
    print(f"{'scenario':<32} {'decisions':>10} {'cpu s':>8} {'decisions/cpu-s':>16}")
    for scenario in scenarios:
        count, elapsed = measure(scenario, min_cpu_seconds=args.seconds)
        print(f"{scenario.name:<32} {count:>10} {elapsed:>8.2f} {count / elapsed:>16,.0f}")


if __name__ == "__main__":
    main()
