"""Summary statistics on hand-made timelines (rows hold until the next row)."""

from __future__ import annotations

import pytest

from hpa.sim.summary import summarize
from hpa.sim.workload import TimelineRow


def row(
    t: float,
    *,
    load: float = 100,
    replicas: int = 2,
    pods: int | None = None,
    util: float | None = 50,
    served: float | None = None,
    event: str = "",
) -> TimelineRow:
    return TimelineRow(
        t_seconds=t,
        load_rps=load,
        replicas=replicas,
        pods=replicas if pods is None else pods,
        ready_pods=replicas,
        utilization_percent=util,
        served_rps=load if served is None else served,
        event=event,
    )


def test_pod_hours_integrate_pods_over_time() -> None:
    timeline = [row(0, replicas=2), row(1800, replicas=4, event="scale 2 -> 4")]

    summary = summarize(timeline, duration_seconds=3600, target_percent=50)

    assert summary.pod_hours == pytest.approx(1 * 2 / 2 + 4 / 2)  # 0.5 h x 2 + 0.5 h x 4
    assert summary.mean_replicas == pytest.approx(3)
    assert summary.max_replicas == 4


def test_time_above_target_is_strictly_above_and_counts_load_without_ready_pods() -> None:
    timeline = [
        row(0, util=50),  # at target: not above
        row(100, util=80),
        row(160, util=None, load=10),  # nobody Ready while load arrives
        row(200, util=None, load=0),  # nobody Ready, no load: fine
        row(300, util=20),
    ]

    summary = summarize(timeline, duration_seconds=400, target_percent=50)

    assert summary.above_target_seconds == 60 + 40
    assert summary.above_target_share == pytest.approx(100 / 400)
    assert summary.peak_utilization_percent == 80


def test_time_above_target_excludes_the_tolerance_band() -> None:
    timeline = [
        row(0, util=54),  # inside 50 x (1 + 0.1): the controller does nothing, nor do we count
        row(100, util=55),  # the band's edge: still inside (upstream scales only beyond it)
        row(200, util=56),
        row(300, util=20),
    ]

    within = summarize(timeline, duration_seconds=400, target_percent=50, tolerance=0.1)
    strict = summarize(timeline, duration_seconds=400, target_percent=50)

    assert within.above_target_seconds == 100
    assert strict.above_target_seconds == 300


def test_without_a_target_under_provisioning_is_not_reported() -> None:
    summary = summarize([row(0, util=90)], duration_seconds=60, target_percent=None)

    assert summary.above_target_seconds is None
    assert summary.above_target_share is None
    assert summary.peak_utilization_percent == 90


def test_scale_events_and_direction_reversals_count_flapping() -> None:
    timeline = [
        row(0, replicas=2),
        row(15, replicas=4, event="scale 2 -> 4"),
        row(30, replicas=6, event="scale 4 -> 6"),
        row(45, replicas=3, event="scale 6 -> 3"),  # reversal 1
        row(60, replicas=5, event="scale 3 -> 5"),  # reversal 2
        row(75, replicas=4, event="scale 5 -> 4"),  # reversal 3
        row(90, replicas=4),
    ]

    summary = summarize(timeline, duration_seconds=120, target_percent=50)

    assert (summary.scale_events, summary.scale_ups, summary.scale_downs) == (5, 3, 2)
    assert summary.reversals == 3


def test_longest_reaction_is_the_longest_wait_from_a_load_step_to_the_next_scale_up() -> None:
    timeline = [
        row(0, load=100, util=50),
        row(60, load=300, util=150),  # step 1
        row(90, load=300, util=75, replicas=4, event="scale 2 -> 4"),  # 30 s later
        row(600, load=600, util=150, replicas=4),  # step 2
        row(660, load=800, util=200, replicas=4),  # joins step 2 (still waiting)
        row(720, load=800, util=67, replicas=12, event="scale 4 -> 12"),  # 120 s after step 2
        row(900, load=200, util=17, replicas=12),  # a drop is not a step
    ]

    summary = summarize(timeline, duration_seconds=1000, target_percent=50)

    assert summary.load_steps == 3
    assert summary.longest_reaction_seconds == 120
    assert summary.unreacted_steps == 0


def test_a_step_below_target_is_not_a_step_and_an_unanswered_step_waits_to_the_end() -> None:
    small = [row(0, load=10, util=10), row(60, load=20, util=20)]
    unanswered = [row(0, load=100, util=50), row(100, load=400, util=200)]

    assert summarize(small, duration_seconds=120, target_percent=50).load_steps == 0
    summary = summarize(unanswered, duration_seconds=400, target_percent=50)
    assert summary.unreacted_steps == 1
    assert summary.longest_reaction_seconds == 300


def test_dropped_share_is_offered_minus_served_over_offered() -> None:
    timeline = [row(0, load=100, served=100), row(50, load=100, served=50)]

    summary = summarize(timeline, duration_seconds=100, target_percent=50)

    assert summary.dropped_share == pytest.approx(0.25)


def test_empty_or_zero_length_timelines_are_refused() -> None:
    with pytest.raises(ValueError, match="empty timeline"):
        summarize([], duration_seconds=10, target_percent=50)
    with pytest.raises(ValueError, match="must end after its first row"):
        summarize([row(10)], duration_seconds=10, target_percent=50)
