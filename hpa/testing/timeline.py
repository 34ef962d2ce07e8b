"""One HPA over a load trace in virtual time: the replica timeline and the summary figures.

Upstream counterpart: none (the simulator's output). This is :func:`hpa.sim.engine.simulate` for
one HPA, the real controller reconciling a simulated Deployment every sync period, with every
reconcile's explanation kept (:attr:`hpa.sim.engine.SimulationConfig.record_decisions`) so that
an assertion on the timeline can say which rule decided the replicas at any time. The summary is
:func:`hpa.sim.summary.summarize`, the figures ``hpa simulate`` prints.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hpa.controllers.settings import HorizontalControllerSettings
from hpa.core.explain import Explanation
from hpa.sim.engine import SimulationConfig, simulate
from hpa.sim.manifest import check_simulatable
from hpa.sim.ports import RecordedEvent
from hpa.sim.report import format_seconds, summaries
from hpa.sim.summary import Summary
from hpa.sim.trace import LoadTrace, points_trace, read_csv, shape_trace
from hpa.sim.workload import MetricPipeline, TimelineRow, WorkloadModel
from hpa.testing.manifests import HPA
from hpa.testing.metrics import Ago, seconds
from hpa.testing.sync import deciding_rule

__all__ = ["RunResult", "TimelineRow", "load_trace", "run"]

TraceInput = LoadTrace | str | Path | Sequence[tuple[float, float]]
"""A trace: a :class:`~hpa.sim.trace.LoadTrace`; ``(t_seconds, requests_per_second)`` points
(held until the next point); a built-in shape such as ``"step:base=10,peak=1000,at=1m"``; or the
path of a CSV file (``timestamp,load``)."""


def load_trace(trace: TraceInput, *, duration: Ago | None = None) -> LoadTrace:
    """A :class:`LoadTrace` from any :data:`TraceInput`; ``duration`` ends it (points without
    one end 5 minutes after the last point)."""
    duration_seconds = None if duration is None else seconds(duration, what="duration")
    if isinstance(trace, LoadTrace):
        return trace if duration_seconds is None else trace.with_duration(duration_seconds)
    if isinstance(trace, Path) or (isinstance(trace, str) and trace.endswith(".csv")):
        loaded = read_csv(trace)
        return loaded if duration_seconds is None else loaded.with_duration(duration_seconds)
    if isinstance(trace, str):
        return shape_trace(trace, duration_seconds=duration_seconds)
    points = [(float(t), float(load)) for t, load in trace]
    if duration_seconds is None:
        duration_seconds = (points[-1][0] - points[0][0] if points else 0.0) + 300.0
    text = ", ".join(f"{t:g}s: {load:g}" for t, load in points[:6])
    return points_trace(
        points,
        duration_seconds=duration_seconds,
        description=f"points {text}{', ...' if len(points) > 6 else ''}",
    )


@dataclass(frozen=True, slots=True)
class RunResult:
    """One HPA's simulated run.

    ``timeline`` rows hold from their ``t_seconds`` until the next row (``replicas`` is the
    target's ``spec.replicas``); ``summary`` has the figures ``hpa simulate`` prints (pod-hours,
    time above target, scale events, reversals, reaction time); ``events`` are the events the
    controller recorded; ``decisions`` are every sync's ``(t_seconds, explanation)``."""

    hpa: HPA
    trace: LoadTrace
    timeline: tuple[TimelineRow, ...]
    summary: Summary
    events: tuple[RecordedEvent, ...]
    decisions: tuple[tuple[float, Explanation], ...]
    duration_seconds: float

    def replicas_at(self, t: Ago) -> int:
        """The target's replicas at time ``t`` (seconds or a duration such as ``"2m"``)."""
        t_seconds = seconds(t, what="time")
        times = [row.t_seconds for row in self.timeline]
        index = bisect.bisect_right(times, t_seconds) - 1
        return self.timeline[max(index, 0)].replicas

    def replica_steps(self) -> list[int]:
        """The replica counts the target went through, in order (``[1, 10, 100, 1000]``)."""
        steps: list[int] = []
        for row in self.timeline:
            if not steps or steps[-1] != row.replicas:
                steps.append(row.replicas)
        return steps

    def decision_at(self, t: Ago) -> tuple[float, Explanation] | None:
        """The last sync at or before ``t``: its time and explanation."""
        t_seconds = seconds(t, what="time")
        index = bisect.bisect_right([at for at, _ in self.decisions], t_seconds) - 1
        return self.decisions[index] if index >= 0 else None

    def deciding_rule_at(self, t: Ago) -> str:
        """The rule that decided the last sync at or before ``t`` (see
        :func:`hpa.testing.deciding_rule`), prefixed with the sync's time."""
        found = self.decision_at(t)
        if found is None:
            return "(no sync yet)"
        at, explanation = found
        return f"sync at {format_seconds(at)}: {deciding_rule(explanation)}"

    def rescale_rules(self) -> list[str]:
        """The deciding rule of every sync that rescaled, with its time."""
        rules = []
        for at, explanation in self.decisions:
            if any(e.stage == "rescale" for e in explanation.entries):
                rules.append(f"{format_seconds(at)}: {deciding_rule(explanation)}")
        return rules

    def render(self, *, limit: int = 20) -> str:
        """The replica changes as a short table (for failure messages)."""
        lines = ["     time  load/s  replicas  ready  event"]
        changes = [
            row
            for index, row in enumerate(self.timeline)
            if index == 0 or row.replicas != self.timeline[index - 1].replicas or row.event
        ]
        for row in changes[:limit]:
            lines.append(
                f"{format_seconds(row.t_seconds):>9} {row.load_rps:>7g} {row.replicas:>9} "
                f"{row.ready_pods:>6}  {row.event}"
            )
        if len(changes) > limit:
            lines.append(f"... ({len(changes) - limit} more changes)")
        return "\n".join(lines)


def run(
    hpa: HPA,
    trace: TraceInput,
    *,
    duration: Ago | None = None,
    initial_replicas: int | None = None,
    workload: WorkloadModel | None = None,
    pipeline: MetricPipeline | None = None,
    settings: HorizontalControllerSettings | None = None,
) -> RunResult:
    """Simulate ``hpa`` over ``trace`` in virtual time (milliseconds of real time per hour).

    The workload model (``workload``: cpu request, cpu per request, start-up and readiness
    delays) turns the offered load into the metrics; its defaults are ``hpa simulate``'s. The
    HPA must be one the simulator can drive (cpu, Pods, Object or External metrics).
    ``initial_replicas`` defaults to ``max(minReplicas, 1)``."""
    manifest = hpa.manifest()
    check_simulatable(manifest)
    load = load_trace(trace, duration=duration)
    config = SimulationConfig(
        workload=workload or WorkloadModel(),
        pipeline=pipeline or MetricPipeline(),
        settings=settings or HorizontalControllerSettings(),
        initial_replicas=initial_replicas,
        record_decisions=True,
    )
    result = simulate([manifest], load, config=config)
    (one,) = result.runs
    (summary,) = summaries(result)
    return RunResult(
        hpa=hpa,
        trace=load,
        timeline=tuple(one.timeline),
        summary=summary,
        events=tuple(one.events),
        decisions=tuple(one.decisions),
        duration_seconds=result.duration_seconds,
    )
