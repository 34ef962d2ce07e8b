"""The simulator reproduces the documented ``behavior`` examples exactly, through the controller.

Every test runs ``HorizontalController`` (via :mod:`hpa.sim.engine`) on one HPA manifest, as a
user would write it, against a piecewise-constant load. The workload is the default model: 500m
requested, 10m CPU per request/s, so 25 req/s per pod at the 50 % target; samples are scraped
every 15 s over 15 s, so a load change at ``t`` is first seen by the sync at ``t + 15``.

Sources of the expected paths: the Kubernetes documentation, HorizontalPodAutoscaler,
"Configurable scaling behavior" (scaling policies, stabilization window, default behavior,
change downscale stabilization window, limit scale down rate, disable scale down, tolerance), and
KEP-853's stories (1 -> 10 -> 100 -> 1000 with ``Percent 900 / 60s``; 1 -> 2 -> 3 -> 4 with
``Pods 1 / 600s``; slow scale-down with ``Pods 1 / 600s``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from hpa.sim.engine import SimulationConfig, SimulationResult, simulate
from hpa.sim.manifest import parse_manifests
from hpa.sim.scenarios import hpa_manifest
from hpa.sim.trace import points_trace
from hpa.sim.workload import WorkloadModel


def run(
    behavior: str,
    levels: Sequence[tuple[float, float]],
    *,
    duration: float,
    initial: int | None = None,
    min_replicas: int = 1,
    max_replicas: int = 100,
    workload: WorkloadModel | None = None,
) -> SimulationResult:
    hpas = parse_manifests(
        hpa_manifest(
            "web", behavior=behavior, min_replicas=min_replicas, max_replicas=max_replicas
        ),
        source="test",
    )
    trace = points_trace(levels, duration_seconds=duration, description="test")
    config = SimulationConfig(initial_replicas=initial, workload=workload or WorkloadModel())
    return simulate(hpas, trace, config=config)


def scale_events(result: SimulationResult) -> list[tuple[float, int, int]]:
    """``(t, from, to)`` of every rescale of the first HPA."""
    events = []
    for row in result.runs[0].timeline:
        if row.event:
            old, _, new = row.event.removeprefix("scale ").partition(" -> ")
            events.append((row.t_seconds, int(old), int(new)))
    return events


def replica_path(result: SimulationResult) -> list[int]:
    events = scale_events(result)
    return [events[0][1], *(new for _, _, new in events)] if events else []


def gaps(result: SimulationResult) -> list[float]:
    times = [t for t, _, _ in scale_events(result)]
    return [b - a for a, b in itertools.pairwise(times)]


FAST_UP = """
scaleUp:
  policies:
  - type: Percent
    value: 900
    periodSeconds: 60
"""


def test_percent_900_per_minute_goes_1_10_100_1000_at_60s_steps() -> None:
    result = run(FAST_UP, [(0, 10), (60, 25000)], duration=600, max_replicas=1000)

    assert scale_events(result) == [(75, 1, 10), (135, 10, 100), (195, 100, 1000)]
    assert gaps(result) == [60, 60]
    assert result.runs[0].timeline[-1].replicas == 1000
    assert result.runs[0].errors == 0


def test_pods_1_per_600s_scale_up_goes_1_2_3_4_at_600s_steps() -> None:
    behavior = """
scaleUp:
  policies:
  - type: Pods
    value: 1
    periodSeconds: 600
"""
    result = run(behavior, [(0, 10), (60, 100)], duration=2400)

    assert scale_events(result) == [(75, 1, 2), (675, 2, 3), (1275, 3, 4)]
    assert gaps(result) == [600, 600]
    assert result.runs[0].timeline[-1].replicas == 4  # 100 req/s at 25 per pod


def test_pods_1_per_600s_scale_down_removes_one_pod_every_10_minutes() -> None:
    behavior = """
scaleDown:
  policies:
  - type: Pods
    value: 1
    periodSeconds: 600
"""
    result = run(behavior, [(0, 125), (60, 10)], duration=3000, initial=5)

    # the last high recommendation is at 60 s; the default 300 s window holds until 360 s
    assert scale_events(result) == [(360, 5, 4), (960, 4, 3), (1560, 3, 2), (2160, 2, 1)]


def test_scaling_policies_example_80_to_10_removes_8_then_8_then_4_at_a_time() -> None:
    """Docs: Pods 4 / 60s and Percent 10 / 60s, Max: 80 -> 72 -> 64 (7.2 rounds up to 8) and
    4 at a time at 40 replicas and below."""
    behavior = """
scaleDown:
  policies:
  - type: Pods
    value: 4
    periodSeconds: 60
  - type: Percent
    value: 10
    periodSeconds: 60
"""
    result = run(behavior, [(0, 2000), (60, 5)], duration=1500, initial=80, min_replicas=10)

    path = replica_path(result)
    assert path[:3] == [80, 72, 64]
    assert path == [80, 72, 64, 57, 51, 45, 40, 36, 32, 28, 24, 20, 16, 12, 10]
    below_40 = [old - new for old, new in itertools.pairwise(path) if old <= 40]
    assert below_40[:-1] == [4] * (len(below_40) - 1)  # the last step stops at minReplicas
    assert set(gaps(result)) == {60}


def test_scale_down_stabilization_window_300s_uses_the_highest_recommendation() -> None:
    behavior = """
scaleDown:
  stabilizationWindowSeconds: 300
"""
    result = run(behavior, [(0, 1000), (60, 100)], duration=900, initial=40)

    # recommendations of 40 until the sync at 60 s; the lower ones win once it leaves the window
    assert scale_events(result) == [(360, 40, 4)]


def test_default_behavior_adds_4_pods_or_100_percent_per_15s_and_waits_300s_to_scale_down() -> None:
    behavior = """
scaleDown:
  stabilizationWindowSeconds: 300
  policies:
  - type: Percent
    value: 100
    periodSeconds: 15
scaleUp:
  stabilizationWindowSeconds: 0
  policies:
  - type: Percent
    value: 100
    periodSeconds: 15
  - type: Pods
    value: 4
    periodSeconds: 15
  selectPolicy: Max
"""
    result = run(behavior, [(0, 25), (60, 2000), (600, 25)], duration=1200)

    assert scale_events(result) == [
        (75, 1, 5),  # 4 pods beat 100 % of 1
        (90, 5, 10),  # 100 % beats 4 pods from here on
        (105, 10, 20),
        (120, 20, 40),
        (135, 40, 80),
        (900, 80, 1),  # 100 % per 15 s: straight to the recommendation, 300 s after 600 s
    ]


def test_change_downscale_stabilization_window_to_60s() -> None:
    behavior = """
scaleDown:
  stabilizationWindowSeconds: 60
"""
    result = run(behavior, [(0, 250), (60, 25)], duration=600, initial=10)

    assert scale_events(result) == [(120, 10, 1)]


def test_limit_scale_down_rate_to_10_percent_per_minute() -> None:
    behavior = """
scaleDown:
  policies:
  - type: Percent
    value: 10
    periodSeconds: 60
"""
    result = run(behavior, [(0, 2500), (60, 5)], duration=900, initial=100)

    assert replica_path(result) == [100, 90, 81, 72, 64, 57, 51, 45, 40, 36]
    assert set(gaps(result)) == {60}


def test_no_more_than_5_pods_removed_per_minute_with_select_policy_min() -> None:
    behavior = """
scaleDown:
  policies:
  - type: Percent
    value: 10
    periodSeconds: 60
  - type: Pods
    value: 5
    periodSeconds: 60
  selectPolicy: Min
"""
    result = run(behavior, [(0, 2500), (60, 5)], duration=1500, initial=100)

    path = replica_path(result)
    removed = [old - new for old, new in itertools.pairwise(path)]
    assert max(removed) == 5
    assert path[:12] == [100, 95, 90, 85, 80, 75, 70, 65, 60, 55, 50, 45]
    assert path[12:16] == [40, 36, 32, 28]  # below 50 replicas 10 % is the smaller change
    assert set(gaps(result)) == {60}


def test_disable_scale_down_keeps_the_peak() -> None:
    behavior = """
scaleDown:
  selectPolicy: Disabled
"""
    result = run(behavior, [(0, 100), (60, 400), (300, 25)], duration=1800, initial=4)

    assert scale_events(result) == [(75, 4, 8), (90, 8, 16)]
    assert result.runs[0].timeline[-1].replicas == 16
    assert result.runs[0].timeline[-1].desired_replicas == 16


def test_scale_up_tolerance_5_percent_scales_where_the_default_10_percent_does_not() -> None:
    behavior = """
scaleUp:
  tolerance: 0.05
"""
    levels = [(0, 100), (60, 107)]  # 4 pods at 53.6 % of request against a 50 % target

    assert scale_events(run(behavior, levels, duration=300, initial=4)) == [(75, 4, 5)]
    assert scale_events(run("", levels, duration=300, initial=4)) == []


def test_unready_new_pods_hold_back_a_second_scale_up_until_their_samples_count() -> None:
    """CPU initialization: a pod Ready 2 minutes after creation has no sample before then, so
    the scale-up the first scale-up already answered is not repeated on half-counted data."""
    slow_start = WorkloadModel(startup_seconds=60, readiness_seconds=60)
    result = run("", [(0, 25), (60, 100)], duration=600, workload=slow_start)

    # 1 pod at 200 %: 4 wanted; the 3 new pods count as 0 until Ready, so nothing more happens
    assert scale_events(result) == [(75, 1, 4)]
    ready = [row for row in result.runs[0].timeline if row.ready_pods == 4]
    assert ready[0].t_seconds == 75 + 120


def test_several_hpas_share_the_trace_but_not_their_pods() -> None:
    hpas = parse_manifests(
        hpa_manifest("a", behavior=FAST_UP, max_replicas=1000)
        + "---\n"
        + hpa_manifest("b", max_replicas=1000),
        source="test",
    )
    trace = points_trace([(0, 10), (60, 25000)], duration_seconds=300, description="test")

    result = simulate(hpas, trace)

    fast, default = result.runs
    assert [row.replicas for row in fast.timeline if row.event] == [10, 100, 1000]
    # no behavior: the legacy limit max(2 x current, 4) per sync
    assert [row.replicas for row in default.timeline if row.event][:4] == [4, 8, 16, 32]


def test_min_replicas_0_with_an_external_metric_scales_to_zero_and_wakes_up() -> None:
    """KEP-2021 through the controller: the HPA puts the target at zero when the queue is empty
    and brings it back when requests arrive again."""
    text = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: queue}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  minReplicas: 0
  maxReplicas: 20
  metrics:
  - type: External
    external:
      metric: {name: queue_rps}
      target: {type: AverageValue, averageValue: "20"}
"""
    hpas = parse_manifests(text, source="test")
    trace = points_trace([(0, 40), (60, 0), (900, 100)], duration_seconds=1200, description="t")

    result = simulate(hpas, trace)

    events = scale_events(result)
    assert events[0] == (0.0, 1, 2)  # 40 req/s at 20 per pod, seen at the first sync
    # no behavior: the legacy window keeps recommendations not older than 300 s (inclusive, unlike
    # the behavior window), so the 60 s recommendation holds through 360 s
    assert events[1] == (375.0, 2, 0)
    # woken by the queue: at most max(2 x 0, 4) on the first sync, then 100 req/s at 20 per pod
    assert events[2:] == [(915, 0, 4), (930, 4, 5)]
    timeline = result.runs[0].timeline
    assert min(row.replicas for row in timeline) == 0
    assert timeline[-1].ready_pods == 5


REPLAY_HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: replay}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - type: External
    external:
      metric: {name: offered_rps}
      target: {type: AverageValue, averageValue: "10"}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      policies: [{type: Pods, value: 2, periodSeconds: 3}]
"""


def test_a_recorded_schedule_and_replayed_values_drive_each_sync() -> None:
    """The lab-parity mode: syncs at recorded times, the k-th External fetch answers the k-th
    recorded value (not the trace's load), and the Pods 2 per 3 s policy counts real seconds."""
    hpas = parse_manifests(REPLAY_HPA, source="test")
    times = (0.0, 0.5, 1.1, 2.9, 3.2, 3.6)
    values = (95_000, 95_000, 95_000, 95_000, 95_000, 15_000)
    trace = points_trace([(0, 1.0)], duration_seconds=4, description="ignored by the metric")
    desired: list[int | None] = []
    config = SimulationConfig(
        initial_replicas=1, sync_times_seconds=times, replayed_metric_milli=values
    )

    result = simulate(
        hpas,
        trace,
        config=config,
        on_sync=lambda t, runs, deployments: desired.append(deployments[0].desired_replicas),
    )

    assert result.runs[0].reconciles == len(times)
    # 95 req/s at 10 per replica proposes 10; +2 per 3 s: 3 at 0 s, held until the 0 s event is
    # more than 3 s old (3.2 s), then 5; at 3.6 s 15 req/s proposes 2, held by the 300 s window
    assert desired == [3, 3, 3, 3, 5, 5]
    assert [t for t, _, _ in scale_events(result)] == [0.0, 3.2]


def test_a_replay_that_runs_out_is_a_metric_error_and_a_bad_schedule_is_refused() -> None:
    hpas = parse_manifests(REPLAY_HPA, source="test")
    trace = points_trace([(0, 1.0)], duration_seconds=60, description="t")
    config = SimulationConfig(initial_replicas=1, replayed_metric_milli=(30_000,))

    result = simulate(hpas, trace, config=config)

    run = result.runs[0]
    assert run.reconciles == 4
    assert run.errors == 3
    assert run.first_error is not None
    assert "the replay has no value for fetch 2" in run.first_error
    with pytest.raises(ValueError, match="sync times must increase"):
        SimulationConfig(sync_times_seconds=(0.0, 2.0, 2.0))
    with pytest.raises(ValueError, match="not inside the trace"):
        simulate(hpas, trace, config=SimulationConfig(sync_times_seconds=(0.0, 60.0)))
