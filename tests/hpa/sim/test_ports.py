"""The simulator's ports: the pod lister's reused listing and the replayed metrics client."""

from __future__ import annotations

from hpa.core.conditions import ConditionStatus
from hpa.core.decision import ExternalMetricObservation, MetricFetchError
from hpa.core.replicas import PodPhase
from hpa.core.selector import parse_selector
from hpa.sim.ports import ReplayedMetricsClient, SimPodLister, VirtualClock
from hpa.sim.trace import points_trace
from hpa.sim.workload import Deployment, MetricPipeline, WorkloadModel, moment


def deployment(replicas: int = 2) -> Deployment:
    return Deployment(
        "web",
        model=WorkloadModel(startup_seconds=5, readiness_seconds=10),
        pipeline=MetricPipeline(),
        trace=points_trace([(0, 50)], duration_seconds=600, description="t"),
        replicas=replicas,
    )


def states(lister: SimPodLister) -> list[tuple[str, PodPhase, ConditionStatus | None]]:
    listed = lister.list_pods("default", parse_selector("app=web"))
    return [
        (
            pod.info.name,
            pod.info.phase,
            None if pod.info.ready_condition is None else pod.info.ready_condition.status,
        )
        for pod in listed
    ]


def test_the_listing_follows_scaling_and_every_state_change_of_a_new_pod() -> None:
    web = deployment()
    clock = VirtualClock()
    lister = SimPodLister(web, clock)
    ready = ConditionStatus.TRUE
    not_ready = ConditionStatus.FALSE

    assert states(lister) == [
        ("web-1", PodPhase.RUNNING, ready),
        ("web-2", PodPhase.RUNNING, ready),
    ]
    clock.set(30)
    web.scale(3, 30)
    at_30 = states(lister)
    clock.set(34)
    at_34 = states(lister)
    clock.set(35)
    at_35 = states(lister)
    clock.set(44.9)
    at_44 = states(lister)
    clock.set(45)
    at_45 = states(lister)
    clock.set(50)
    web.scale(1, 50)
    at_50 = states(lister)

    assert at_30[2:] == at_34[2:] == [("web-3", PodPhase.PENDING, not_ready)]
    assert at_35[2:] == at_44[2:] == [("web-3", PodPhase.RUNNING, not_ready)]
    assert at_45[2:] == [("web-3", PodPhase.RUNNING, ready)]
    # the newest Ready pod goes first, then the oldest of two equally old ones (stable ranking)
    assert at_50 == [("web-2", PodPhase.RUNNING, ready)]
    assert lister.list_pods("default", parse_selector("app=other")) == []


async def test_the_replay_answers_recorded_values_in_fetch_order_then_an_error() -> None:
    web = deployment()
    clock = VirtualClock()
    replay = ReplayedMetricsClient(web, clock, values_milli=(1_500, 250_000))

    clock.set(2.5)
    first = await replay.get_external_metric("queue", "default", metric_selector="")
    second = await replay.get_external_metric("queue", "default", metric_selector="")
    third = await replay.get_external_metric("queue", "default", metric_selector="")

    assert first == ExternalMetricObservation((1_500,), moment(2.5))
    assert second == ExternalMetricObservation((250_000,), moment(2.5))
    assert isinstance(third, MetricFetchError)
    assert "no value for fetch 3" in third.message
    # the model's own metrics are untouched by the replay
    samples = await replay.get_resource_metric("cpu", "default", selector="app=web")
    assert not isinstance(samples, MetricFetchError)
    assert {metric.value_milli for metric in samples.metrics.values()} == {250}
