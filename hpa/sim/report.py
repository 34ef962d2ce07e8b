"""Writing a simulation's results: timelines (CSV, JSON), the side-by-side summary table.

Upstream counterpart: none (the simulator's output). Every output states the model's parameters
(:meth:`hpa.sim.engine.SimulationConfig.describe`), the trace it ran and what it assumes of each
HPA (:func:`assumptions_text`: how each metric is driven, the start replicas, the tolerance band),
so a result can be reproduced, compared and not over-read.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hpa.core.decision import tolerances_for_hpa
from hpa.core.replicas import Tolerances
from hpa.core.spec import MetricSourceType, MetricSpec
from hpa.sim.engine import HPARun, SimulationResult
from hpa.sim.summary import Summary, above_band_percent, summarize
from hpa.sim.workload import moment

__all__ = [
    "SUMMARY_LABELS",
    "TIMELINE_COLUMNS",
    "assumptions_text",
    "file_stem",
    "format_seconds",
    "parameters_text",
    "summaries",
    "summary_columns",
    "summary_table",
    "timeline_records",
    "write_summary",
    "write_timeline_csv",
    "write_timeline_json",
]

TIMELINE_COLUMNS = (
    "t_seconds",
    "time",
    "load_rps",
    "replicas",
    "pods",
    "ready_pods",
    "utilization_percent",
    "target_percent",
    "served_rps",
    "rps_per_pod",
    "desired_replicas",
    "observed",
    "event",
)


def format_seconds(seconds: float | None) -> str:
    """``45s``, ``12m30s``, ``3h05m``, ``2d04h`` (``-`` for ``None``)."""
    if seconds is None:
        return "-"
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:g}s" if seconds != whole else f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def file_stem(name: str) -> str:
    """A file-name-safe form of an HPA's display name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "hpa"


def _number(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def timeline_records(run: HPARun) -> list[dict[str, Any]]:
    """The run's timeline as JSON-ready rows (:data:`TIMELINE_COLUMNS`)."""
    target = run.target_percent
    return [
        {
            "t_seconds": row.t_seconds,
            "time": moment(row.t_seconds).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "load_rps": _number(row.load_rps),
            "replicas": row.replicas,
            "pods": row.pods,
            "ready_pods": row.ready_pods,
            "utilization_percent": _number(row.utilization_percent, 2),
            "target_percent": _number(target, 2),
            "served_rps": _number(row.served_rps),
            "rps_per_pod": _number(row.served_rps / row.ready_pods) if row.ready_pods else None,
            "desired_replicas": row.desired_replicas,
            "observed": _number(row.observed),
            "event": row.event,
        }
        for row in run.timeline
    ]


def write_timeline_csv(run: HPARun, path: Path) -> None:
    """One CSV row per timeline row; empty cells for "none"."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=TIMELINE_COLUMNS)
        writer.writeheader()
        for record in timeline_records(run):
            writer.writerow({k: "" if v is None else v for k, v in record.items()})


def write_timeline_json(run: HPARun, path: Path, *, result: SimulationResult) -> None:
    """The timeline with the run's parameters, trace and summary."""
    summary = summarize(
        run.timeline, duration_seconds=result.duration_seconds, target_percent=run.target_percent
    )
    document = {
        "hpa": run.name,
        "source": run.source,
        "trace": result.trace.description,
        "parameters": dict(result.config.describe()),
        "targetPercent": run.target_percent,
        "summary": {key: getattr(summary, key) for key in Summary.__dataclass_fields__},
        "reconciles": run.reconciles,
        "reconcileErrors": run.errors,
        "firstError": run.first_error,
        "events": [
            {
                "t_seconds": recorded.t_seconds,
                "type": recorded.event.type,
                "reason": recorded.event.reason,
                "message": recorded.event.message,
            }
            for recorded in run.events
        ],
        "rescales": [
            {"t_seconds": t_seconds, "explanation": explanation}
            for t_seconds, explanation in run.explanations
        ],
        "columns": list(TIMELINE_COLUMNS),
        "rows": timeline_records(run),
    }
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def run_tolerances(result: SimulationResult, run: HPARun) -> Tolerances:
    """The tolerance band the controller applied to ``run`` (the flag, or its behavior's)."""
    return tolerances_for_hpa(run.manifest.hpa.spec.behavior, result.config.settings.horizontal)


def summaries(result: SimulationResult) -> list[Summary]:
    """One :class:`Summary` per run, in run order ("time above target" is above the band)."""
    return [
        summarize(
            run.timeline,
            duration_seconds=result.duration_seconds,
            target_percent=run.target_percent,
            tolerance=run_tolerances(result, run).scale_up,
        )
        for run in result.runs
    ]


def _metric_name(metric: MetricSpec) -> str:
    for source in (metric.pods, metric.object, metric.external):
        if source is not None:
            return source.metric.name
    return ""


def metric_driver(metric: MetricSpec, *, replayed: bool) -> str:
    """How the simulator produces the values of one ``spec.metrics[*]`` entry."""
    kind = metric.type
    if kind in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE):
        return "cpu of each pod from the workload model (idle + cpu per request x its requests/s)"
    name = _metric_name(metric)
    if kind == MetricSourceType.PODS:
        return f"{name!r}: each Ready pod's requests/s, whatever the metric's name"
    if replayed:
        return f"{name!r}: the recorded values, one per fetch"
    return f"{name!r}: the offered load in requests/s (the trace), whatever the metric's name"


def assumptions_text(result: SimulationResult) -> str:
    """What the simulation assumes of each HPA, one block per HPA."""
    replayed = result.config.replayed_metric_milli is not None
    lines = ["assumptions:"]
    for run in result.runs:
        tolerances = run_tolerances(result, run)
        band = (
            f"usage/target within {1 - tolerances.scale_down:g}..{1 + tolerances.scale_up:g}"
            " (no scaling inside)"
        )
        if run.target_percent is not None:
            top = above_band_percent(run.target_percent, tolerances.scale_up)
            band += f"; 'time above target' counts cpu utilization above {top:.3g}%"
        lines.append(f"  {run.name}: starts at {run.start_replicas} replica(s); tolerance {band}")
        for index, metric in enumerate(run.manifest.hpa.spec.metrics):
            driver = metric_driver(metric, replayed=replayed)
            lines.append(f"    metrics[{index}] {metric.type}: {driver}")
    return "\n".join(lines)


def _summary_rows(run: HPARun, summary: Summary) -> list[str]:
    above = "-"
    if summary.above_target_seconds is not None and summary.above_target_share is not None:
        above = (
            f"{format_seconds(summary.above_target_seconds)} "
            f"({100 * summary.above_target_share:.1f}%)"
        )
    peak = summary.peak_utilization_percent
    reaction = format_seconds(summary.longest_reaction_seconds)
    if summary.load_steps:
        reaction += f" ({summary.load_steps} steps"
        reaction += f", {summary.unreacted_steps} unanswered)" if summary.unreacted_steps else ")"
    errors = str(run.errors)
    if run.first_error is not None:
        errors += f" (first at {format_seconds(run.first_error_seconds)})"
    return [
        f"{summary.pod_hours:.2f}",
        f"{summary.mean_replicas:.1f} / {summary.max_replicas}",
        "-" if summary.target_percent is None else f"{summary.target_percent:g}%",
        above,
        "-" if peak is None else f"{peak:.0f}%",
        f"{summary.scale_events} ({summary.scale_ups} up, {summary.scale_downs} down)",
        str(summary.reversals),
        reaction,
        f"{100 * summary.dropped_share:.1f}%",
        errors,
    ]


SUMMARY_LABELS = (
    "pod-hours (cost)",
    "replicas mean / max",
    "target utilization",
    "time above target",
    "peak utilization",
    "scale events",
    "direction reversals",
    "longest reaction to a step",
    "dropped requests",
    "reconcile errors",
)


def summary_columns(
    result: SimulationResult, stats: Sequence[Summary] | None = None
) -> list[list[str]]:
    """One column per HPA: its name, then one cell per :data:`SUMMARY_LABELS` row."""
    stats = list(stats) if stats is not None else summaries(result)
    return [[run.name, *_summary_rows(run, s)] for run, s in zip(result.runs, stats, strict=True)]


def summary_table(result: SimulationResult, stats: Sequence[Summary] | None = None) -> str:
    """The side-by-side summary: one column per HPA, one row per statistic."""
    columns = summary_columns(result, stats)
    labels = ["", *SUMMARY_LABELS]
    label_width = max(len(label) for label in labels)
    widths = [max(len(cell) for cell in column) for column in columns]
    lines = []
    for index, label in enumerate(labels):
        cells = [column[index].rjust(width) for column, width in zip(columns, widths, strict=True)]
        lines.append(f"{label.ljust(label_width)}  " + "  ".join(cells))
    return "\n".join(lines)


def parameters_text(result: SimulationResult) -> str:
    """The trace and every model parameter, one per line."""
    described = result.config.describe()
    width = max(len(name) for name, _ in described)
    lines = [
        f"trace: {result.trace.description}, {format_seconds(result.duration_seconds)}",
        *(f"  {name.ljust(width)}  {value}" for name, value in described),
        assumptions_text(result),
    ]
    return "\n".join(lines)


def write_summary(result: SimulationResult, path: Path, *, title: str = "Simulation") -> str:
    """Write the parameters and the summary table as Markdown; return the table's text."""
    table = summary_table(result)
    sources = "\n".join(f"- `{run.name}`: {run.source}" for run in result.runs)
    text = (
        f"# {title}\n\n{sources}\n\n```text\n{parameters_text(result)}\n```\n\n"
        f"```text\n{table}\n```\n"
    )
    path.write_text(text, encoding="utf-8")
    return table
