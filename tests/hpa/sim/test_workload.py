"""The workload model: pod lifecycle, load sharing, saturation and the metric pipeline."""

from __future__ import annotations

import pytest

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import PodPhase
from hpa.sim.trace import points_trace
from hpa.sim.workload import SIM_EPOCH, Deployment, MetricPipeline, WorkloadModel, moment


def deployment(
    levels: list[tuple[float, float]],
    *,
    replicas: int = 2,
    model: WorkloadModel | None = None,
    pipeline: MetricPipeline | None = None,
) -> Deployment:
    trace = points_trace(levels, duration_seconds=3600, description="t")
    return Deployment(
        "web",
        model=model or WorkloadModel(),
        pipeline=pipeline or MetricPipeline(),
        trace=trace,
        replicas=replicas,
    )


def test_ready_pods_share_the_load_and_use_cpu_per_request() -> None:
    web = deployment([(0, 100)], replicas=4)

    samples, stamp = web.pod_samples(30, cpu=True)
    rates, _ = web.pod_samples(30, cpu=False)

    assert {s.value_milli for s in samples.values()} == {250}  # 25 req/s x 10m
    assert {s.value_milli for s in rates.values()} == {25_000}  # 25 req/s, in milli
    assert stamp == moment(30)
    assert all(s.window_seconds == 15 for s in samples.values())


def test_a_new_pod_is_pending_then_running_then_ready() -> None:
    model = WorkloadModel(startup_seconds=20, readiness_seconds=40)
    web = deployment([(0, 100)], replicas=1, model=model)

    web.scale(2, 100)
    new = web.pods[1]

    assert new.info(110, web.containers).phase == PodPhase.PENDING
    running = new.info(130, web.containers)
    assert running.phase == PodPhase.RUNNING
    assert running.ready_condition is not None
    assert running.ready_condition.status == ConditionStatus.FALSE
    ready = new.info(160, web.containers)
    assert ready.ready_condition is not None
    assert ready.ready_condition.status == ConditionStatus.TRUE
    assert ready.ready_condition.last_transition_time == moment(160)
    assert ready.start_time == moment(100)
    web.advance_to(159)
    assert web.ready_pods == 1
    web.advance_to(160)
    assert web.ready_pods == 2


def test_samples_come_from_the_newest_scrape_and_need_a_full_window_of_running() -> None:
    model = WorkloadModel(startup_seconds=5, readiness_seconds=10, startup_cpu_milli=300)
    pipeline = MetricPipeline(scrape_interval_seconds=15, window_seconds=30)
    web = deployment([(0, 100)], replicas=1, model=model, pipeline=pipeline)
    web.scale(2, 10)  # Running at 15, Ready at 25

    web.advance_to(44)
    early, stamp = web.pod_samples(44, cpu=True)  # scrape at 30 covers [0, 30]
    web.advance_to(60)
    later, _ = web.pod_samples(60, cpu=True)  # scrape at 60 covers [30, 60]

    assert stamp == moment(30)
    assert set(early) == {"web-1"}  # the new pod was not running at 0
    # [30, 60]: both Ready, 50 req/s each
    assert set(later) == {"web-1", "web-2"}
    assert {s.value_milli for s in later.values()} == {500}


def test_a_sample_mixes_warm_up_cpu_and_traffic_when_readiness_falls_inside_the_window() -> None:
    model = WorkloadModel(startup_seconds=0, readiness_seconds=10, startup_cpu_milli=600)
    pipeline = MetricPipeline(scrape_interval_seconds=15, window_seconds=20)
    web = deployment([(0, 100)], replicas=1, model=model, pipeline=pipeline)
    web.scale(2, 0)  # Running at 0, Ready at 10

    web.advance_to(20)
    samples, _ = web.pod_samples(20, cpu=True)  # scrape at 15 covers [-5, 15]: not running at -5
    web.advance_to(30)
    mixed, _ = web.pod_samples(30, cpu=True)  # scrape at 30 covers [10, 30]: Ready throughout

    assert "web-2" not in samples
    assert mixed["web-2"].value_milli == 500  # 50 req/s x 10m

    web2 = deployment([(0, 100)], replicas=1, model=model, pipeline=pipeline)
    web2.scale(2, -10)  # Running at -10, Ready at 0: the scrape at 15 covers [-5, 15]
    web2.advance_to(15)
    partial, _ = web2.pod_samples(15, cpu=True)
    # 5 s of warm-up at 600m, then 15 s Ready at 500m (100 req/s over 2 pods): (3000+7500)/20
    assert partial["web-2"].value_milli == 525


def test_scale_down_removes_pending_then_unready_then_the_newest_ready_pods() -> None:
    model = WorkloadModel(startup_seconds=30, readiness_seconds=30)
    web = deployment([(0, 100)], replicas=2, model=model)
    web.scale(3, 0)  # web-3: Ready at 60
    web.scale(4, 40)  # web-4: Pending until 70

    web.scale(2, 50)
    assert [p.name for p in web.pods] == ["web-1", "web-2"]
    assert web.ready_pods == 2
    web.advance_to(100)
    assert web.ready_pods == 2  # the removed pods never become Ready


def test_cpu_limit_saturates_usage_and_drops_the_excess_load() -> None:
    model = WorkloadModel(cpu_request_milli=500, cpu_limit_milli=1000, cpu_per_request_milli=10)
    web = deployment([(0, 300)], replicas=2, model=model)
    web.note_decision(0, desired=None, observed=None)

    row = web.timeline[-1]
    assert row.utilization_percent == 200  # capped at the limit
    assert row.served_rps == 200  # 100 req/s per pod at 1000m
    samples, _ = web.pod_samples(15, cpu=True)
    assert {s.value_milli for s in samples.values()} == {1000}


def test_offered_load_is_averaged_over_the_window() -> None:
    web = deployment([(0, 100), (10, 400)], pipeline=MetricPipeline(window_seconds=20))

    web.advance_to(30)
    value, stamp = web.offered_average_milli(30)  # [10, 30]
    early, _ = web.offered_average_milli(15)  # [-5, 15]: 15 s at 100, 5 s at 400

    assert value == 400_000
    assert early == 175_000
    assert stamp == moment(30)


def test_no_ready_pod_means_no_utilization_and_nothing_served() -> None:
    web = deployment([(0, 50)], replicas=0)
    web.note_decision(0, desired=0, observed=None)

    assert web.timeline[-1].utilization_percent is None
    assert web.timeline[-1].served_rps == 0
    assert web.pod_samples(15, cpu=True)[0] == {}


def test_timeline_rows_mark_rescales_and_the_controller_view() -> None:
    web = deployment([(0, 100)], replicas=2)
    web.note_decision(0, desired=2, observed=50)
    web.scale(4, 15)
    web.note_decision(15, desired=4, observed=100)

    assert [(r.t_seconds, r.replicas, r.event) for r in web.timeline] == [
        (0, 2, ""),
        (15, 4, "scale 2 -> 4"),
    ]
    assert web.timeline[-1].desired_replicas == 4
    assert web.timeline[-1].observed == 100


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cpu_request_milli": 0}, "cpu request must be positive"),
        ({"startup_seconds": -1}, "startup_seconds must be a finite number"),
        ({"cpu_limit_milli": 100}, "cpu limit must be at least the cpu request"),
    ],
)
def test_bad_workload_parameters_are_refused(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WorkloadModel(**kwargs)


def test_pipeline_scrapes_on_its_grid() -> None:
    pipeline = MetricPipeline(
        scrape_interval_seconds=30, window_seconds=60, scrape_offset_seconds=5
    )

    assert pipeline.last_scrape(64.9) == 35
    assert pipeline.last_scrape(65) == 65
    with pytest.raises(ValueError, match="scrape offset"):
        MetricPipeline(scrape_offset_seconds=15)
    assert moment(0) == SIM_EPOCH
