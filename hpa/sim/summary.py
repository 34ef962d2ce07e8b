"""Summary statistics of a simulated timeline: cost, under-provisioning, flapping, reaction time.

Upstream counterpart: none (the simulator's output). A timeline is piecewise constant: each
:class:`~hpa.sim.workload.TimelineRow` holds from its ``t_seconds`` until the next row, the last
one until the end of the run. Every statistic is exact over that step function:

* ``pod_hours``: pods existing (Pending, starting or Ready) integrated over time (the cost);
* ``above_target_seconds`` / ``above_target_share``: time with the Ready pods' CPU utilization
  above the HPA's tolerance band, ``target * (1 + tolerance)`` (under-provisioning the controller
  would act on; values inside the band are where it deliberately does nothing); time with load
  but no Ready pod counts;
* ``peak_utilization_percent``: the highest utilization of a Ready pod;
* ``scale_events``, ``scale_ups``, ``scale_downs``; ``reversals``: scale events whose direction
  differs from the previous one (flapping);
* ``longest_reaction_seconds``: for each load step (the load rising by at least
  ``step_threshold_ratio`` from one row to the next, with utilization then above target), the
  time until the next scale-up; the longest one. A step that comes while an earlier one is still
  waiting joins it. ``unreacted_steps`` counts steps with no scale-up before the end (their wait
  runs to the end and is included);
* ``dropped_share``: requests offered but not served (no Ready pod, or CPU limit reached).

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hpa.sim.workload import TimelineRow

__all__ = ["DEFAULT_STEP_THRESHOLD_RATIO", "Summary", "above_band_percent", "summarize"]

DEFAULT_STEP_THRESHOLD_RATIO = 0.2
"""A load step is a rise of at least 20 % from one timeline row to the next."""


@dataclass(frozen=True, slots=True)
class Summary:
    """The statistics of one HPA's run (see the module docstring for each definition)."""

    duration_seconds: float
    pod_hours: float
    mean_replicas: float
    max_replicas: int
    target_percent: float | None
    above_target_seconds: float | None
    above_target_share: float | None
    peak_utilization_percent: float | None
    scale_events: int
    scale_ups: int
    scale_downs: int
    reversals: int
    load_steps: int
    longest_reaction_seconds: float | None
    unreacted_steps: int
    dropped_share: float


def _direction(event: str) -> int:
    """+1 for ``scale a -> b`` with b > a, -1 for b < a, 0 otherwise."""
    if not event.startswith("scale "):
        return 0
    before, _, after = event[len("scale ") :].partition(" -> ")
    try:
        old, new = int(before), int(after)
    except ValueError:
        return 0
    return (new > old) - (new < old)


def _above(row: TimelineRow, target_percent: float) -> bool:
    if row.utilization_percent is None:
        return row.load_rps > 0
    return row.utilization_percent > target_percent


def above_band_percent(target_percent: float, tolerance: float) -> float:
    """The utilization above which the controller scales up: the top of the tolerance band."""
    return target_percent * (1 + tolerance)


def summarize(
    timeline: Sequence[TimelineRow],
    *,
    duration_seconds: float,
    target_percent: float | None,
    tolerance: float = 0.0,
    step_threshold_ratio: float = DEFAULT_STEP_THRESHOLD_RATIO,
) -> Summary:
    """The statistics of ``timeline`` over ``[first row, duration_seconds)``; ``tolerance`` is
    the scale-up tolerance (``--horizontal-pod-autoscaler-tolerance`` or the behavior's)."""
    band_top = None if target_percent is None else above_band_percent(target_percent, tolerance)
    if not timeline:
        raise ValueError("an empty timeline has no summary")
    start = timeline[0].t_seconds
    span = duration_seconds - start
    if span <= 0:
        raise ValueError("the run must end after its first row")
    pod_seconds = 0.0
    replica_seconds = 0.0
    above_seconds = 0.0
    offered = 0.0
    served = 0.0
    peak: float | None = None
    max_replicas = 0
    scale_ups = scale_downs = reversals = 0
    last_direction = 0
    steps = 0
    unreacted = 0
    longest: float | None = None
    waiting_since: float | None = None
    previous_load: float | None = None
    for index, row in enumerate(timeline):
        end = timeline[index + 1].t_seconds if index + 1 < len(timeline) else duration_seconds
        end = min(end, duration_seconds)
        dt = max(0.0, end - row.t_seconds)
        pod_seconds += row.pods * dt
        replica_seconds += row.replicas * dt
        offered += row.load_rps * dt
        served += min(row.served_rps, row.load_rps) * dt
        max_replicas = max(max_replicas, row.replicas)
        if row.utilization_percent is not None and dt > 0:
            peak = row.utilization_percent if peak is None else max(peak, row.utilization_percent)
        if band_top is not None and dt > 0 and _above(row, band_top):
            above_seconds += dt
        direction = _direction(row.event)
        if direction:
            if direction > 0:
                scale_ups += 1
            else:
                scale_downs += 1
            if last_direction and direction != last_direction:
                reversals += 1
            last_direction = direction
        # the scale-up ends a wait; a step on the same row starts a new one afterwards
        if direction > 0 and waiting_since is not None:
            wait = row.t_seconds - waiting_since
            longest = wait if longest is None else max(longest, wait)
            waiting_since = None
        if (
            previous_load is not None
            and row.load_rps > previous_load * (1 + step_threshold_ratio)
            and row.load_rps > previous_load
            and (target_percent is None or _above(row, target_percent))
            and direction <= 0
        ):
            steps += 1
            if waiting_since is None:
                waiting_since = row.t_seconds
        previous_load = row.load_rps
    if waiting_since is not None:
        unreacted += 1
        wait = duration_seconds - waiting_since
        longest = wait if longest is None else max(longest, wait)
    return Summary(
        duration_seconds=span,
        pod_hours=pod_seconds / 3600,
        mean_replicas=replica_seconds / span,
        max_replicas=max_replicas,
        target_percent=target_percent,
        above_target_seconds=above_seconds if target_percent is not None else None,
        above_target_share=above_seconds / span if target_percent is not None else None,
        peak_utilization_percent=peak,
        scale_events=scale_ups + scale_downs,
        scale_ups=scale_ups,
        scale_downs=scale_downs,
        reversals=reversals,
        load_steps=steps,
        longest_reaction_seconds=longest,
        unreacted_steps=unreacted,
        dropped_share=(offered - served) / offered if offered > 0 else 0.0,
    )
