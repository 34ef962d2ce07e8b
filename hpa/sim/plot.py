"""Plots of a simulation, for sharing: a 150 dpi PNG and an SVG of the same figure.

Upstream counterpart: none (the simulator's output). Uses matplotlib's Agg backend (no display
needed); matplotlib comes with the ``plot`` extra (``pip install 'hpa[plot]'``).

Panels share the time axis:

* the offered load;
* each HPA's replicas, with its ``minReplicas`` and ``maxReplicas`` as thin lines of the same
  colour and style (a bound far above the replicas reached is listed in the legend as off the
  scale instead of flattening the panel); scale events are dots; a log axis when the replicas
  span more than two decades, as in a 1 -> 1000 scale-up;
* each HPA's CPU utilization of Ready pods, with its target as a line and the tolerance band
  around it (``target x (1 - down)`` to ``target x (1 + up)``, where the controller does not
  scale) shaded in the HPA's colour. A log axis when utilization spans more than two decades;
  otherwise a linear axis cut at four times the highest target (the cut is labelled);
* when an HPA's first metric is not cpu (Pods, Object, External, or another resource), the value
  of that metric as the controller read it (``status.currentMetrics[0]``), with its target and
  tolerance band;
* when a VerticalPodAutoscaler acts on a run: per-pod memory requested (solid) and used (dotted),
  averaged over the Ready pods, with a red cross at each OOM kill;
* the comparison's key figures (cost, time above the band, peak utilization, scale events,
  reversals, longest reaction; the summary table's definitions) as a table under the panels.

Each HPA has its own colour and its own line style, so the lines stay apart in grey print.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpa.core.replicas import Tolerances
from hpa.core.spec import MetricSourceType, MetricSpec, MetricTarget
from hpa.sim.engine import HPARun, SimulationResult
from hpa.sim.report import SUMMARY_LABELS, run_tolerances, summary_columns

__all__ = [
    "DPI",
    "KEY_FIGURES",
    "LINE_STYLES",
    "PlotUnavailableError",
    "build_figure",
    "driving_metric",
    "plot_result",
]

DPI = 150
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")
LINE_STYLES: tuple[Any, ...] = (
    "solid",
    "dashed",
    "dashdot",
    "dotted",
    (0, (5, 1, 1, 1, 1, 1)),
    (0, (8, 2)),
    (0, (1, 3)),
)
"""One per HPA, in order (matplotlib line styles; the 8th HPA reuses the first)."""
KEY_FIGURES = (
    "pod-hours (cost)",
    "replicas mean / max",
    "time above target",
    "peak utilization",
    "scale events",
    "direction reversals",
    "longest reaction to a step",
)
"""The summary table's rows drawn on the figure."""
_DECADES = 100.0  # a log axis when max / min exceeds two decades


class PlotUnavailableError(RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        from matplotlib import pyplot
    except ImportError as error:  # pragma: no cover - the test environment has the extra
        raise PlotUnavailableError(
            "plots need matplotlib: install the plot extra (pip install 'hpa[plot]')"
        ) from error
    return pyplot


def _time_unit(duration_seconds: float) -> tuple[float, str]:
    if duration_seconds > 2 * 86400:
        return 86400.0, "days"
    if duration_seconds > 3 * 3600:
        return 3600.0, "hours"
    return 60.0, "minutes"


def _steps(
    times: Sequence[float], values: Sequence[float | None], *, end: float, unit: float
) -> tuple[list[float], list[float]]:
    xs = [t / unit for t in times] + [end / unit]
    ys = [math.nan if v is None else float(v) for v in values]
    ys.append(ys[-1] if ys else math.nan)
    return xs, ys


def _spans_decades(values: Sequence[float]) -> bool:
    """More than two decades between the smallest and largest positive value."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    return bool(positive) and max(positive) / min(positive) > _DECADES


@dataclass(frozen=True, slots=True)
class DrivingMetric:
    """An HPA's first metric when it is not cpu: its name, its target value (units), its type."""

    name: str
    target: float | None
    target_type: str


def _target_units(target: MetricTarget) -> float | None:
    if target.average_value_milli is not None:
        return target.average_value_milli / 1000
    if target.value_milli is not None:
        return target.value_milli / 1000
    return None


def driving_metric(metric: MetricSpec) -> DrivingMetric | None:
    """``None`` for a cpu metric (the utilization panel shows it), else what to plot."""
    resource = metric.resource or metric.container_resource
    if resource is not None:
        if resource.name == "cpu":
            return None
        if resource.target.average_utilization is not None:
            return DrivingMetric(
                f"{resource.name} utilization (%)",
                float(resource.target.average_utilization),
                "Utilization",
            )
        return DrivingMetric(resource.name, _target_units(resource.target), resource.target.type)
    for kind, source in (
        (MetricSourceType.PODS, metric.pods),
        (MetricSourceType.OBJECT, metric.object),
        (MetricSourceType.EXTERNAL, metric.external),
    ):
        if source is not None:
            return DrivingMetric(
                f"{kind} {source.metric.name}", _target_units(source.target), source.target.type
            )
    return DrivingMetric(metric.type, None, "")


def _first_driving_metric(run: HPARun) -> DrivingMetric | None:
    metrics = run.manifest.hpa.spec.metrics
    return driving_metric(metrics[0]) if metrics else None


def _band(
    ax: Any, target: float, tolerances: Tolerances, *, colour: str, style: Any, label: str
) -> None:
    """The target as a line and the tolerance band around it, shaded."""
    low, high = target * (1 - tolerances.scale_down), target * (1 + tolerances.scale_up)
    ax.axhspan(low, high, color=colour, alpha=0.2, linewidth=0)
    ax.axhline(target, color=colour, linestyle=style, linewidth=1.0, alpha=0.9, label=label)


def _series(
    ax: Any, xs: Sequence[float], ys: Sequence[float], *, colour: str, style: Any, label: str
) -> list[float]:
    """One HPA's step line; returns its defined values (for the axis' scale)."""
    ax.step(xs, ys, where="post", color=colour, linestyle=style, linewidth=1.3, label=label)
    return [y for y in ys if not math.isnan(y)]


def _key_figures(ax: Any, result: SimulationResult) -> None:
    columns = summary_columns(result)
    rows = [SUMMARY_LABELS.index(label) + 1 for label in KEY_FIGURES]
    cells = [
        [label, *(column[row] for column in columns)]
        for label, row in zip(KEY_FIGURES, rows, strict=True)
    ]
    ax.axis("off")
    share = 0.74 / len(columns)
    table = ax.table(
        cellText=cells,
        colLabels=["", *(column[0] for column in columns)],
        colColours=["white", *(_COLOURS[i % len(_COLOURS)] + "33" for i in range(len(columns)))],
        colWidths=[0.26, *([share] * len(columns))],
        cellLoc="center",
        bbox=(0.0, 0.0, 1.0, 0.8),  # under the time axis' label
    )
    table.auto_set_font_size(False)
    table.set_fontsize(8)


def build_figure(result: SimulationResult, *, title: str, subtitle: str = "") -> Any:
    """The matplotlib figure of ``result`` (see the module docstring for its panels)."""
    pyplot = _pyplot()
    unit, unit_name = _time_unit(result.duration_seconds)
    end = result.duration_seconds
    drivers = [_first_driving_metric(run) for run in result.runs]
    with_metric = any(driver is not None for driver in drivers)
    with_memory = any(run.vertical is not None for run in result.runs)
    heights = [
        1.0,
        1.3,
        1.3,
        *([1.3] if with_metric else []),
        *([1.3] if with_memory else []),
        0.35 + 0.17 * len(KEY_FIGURES),
    ]
    figure, axes = pyplot.subplots(
        len(heights),
        1,
        figsize=(12, 1.9 * sum(heights) + 0.6),
        height_ratios=heights,
        gridspec_kw={"hspace": 0.12},
    )
    load_ax, replicas_ax, util_ax = axes[0], axes[1], axes[2]
    metric_ax = axes[3] if with_metric else None
    memory_ax = axes[3 + int(with_metric)] if with_memory else None
    key_ax = axes[-1]
    for ax in axes[1:-1]:
        ax.sharex(load_ax)
    for ax in axes[:-2]:
        ax.tick_params(labelbottom=False)
    figure.suptitle(title, fontsize=14, fontweight="bold")
    if subtitle:
        load_ax.set_title(subtitle, fontsize=9, color="#444444")

    first: HPARun = result.runs[0]
    xs, ys = _steps(
        [r.t_seconds for r in first.timeline],
        [r.load_rps for r in first.timeline],
        end=end,
        unit=unit,
    )
    load_ax.step(xs, ys, where="post", color="black", linewidth=1.4)
    load_ax.fill_between(xs, ys, step="post", color="#bbbbbb", alpha=0.5)
    load_ax.set_ylabel("load (req/s)")
    load_ax.set_ylim(bottom=0)
    load_ax.grid(alpha=0.3)

    replica_values = [float(r.replicas) for run in result.runs for r in run.timeline]
    replicas_log = _spans_decades(replica_values)
    reached = max(replica_values, default=1.0)
    # a bound up to three times the replicas reached is on the axis; one further up is listed
    bounds_near = [
        float(bound)
        for run in result.runs
        for bound in (run.manifest.hpa.spec.min_replicas or 1, run.manifest.hpa.spec.max_replicas)
        if bound <= 3 * reached
    ]
    replicas_top = max([reached, *bounds_near]) * 1.1 + 0.5
    targets: list[float] = []
    utilization: list[float] = []
    metric_values: list[float] = []
    for index, run in enumerate(result.runs):
        colour = _COLOURS[index % len(_COLOURS)]
        style = LINE_STYLES[index % len(LINE_STYLES)]
        tolerances = run_tolerances(result, run)
        times = [r.t_seconds for r in run.timeline]
        xs, ys = _steps(times, [r.replicas for r in run.timeline], end=end, unit=unit)
        replicas_ax.step(
            xs, ys, where="post", color=colour, linestyle=style, linewidth=1.8, label=run.name
        )
        events = [r for r in run.timeline if r.event]
        replicas_ax.plot(
            [r.t_seconds / unit for r in events],
            [r.replicas for r in events],
            "o",
            color=colour,
            markersize=3,
        )
        spec = run.manifest.hpa.spec
        bounds = (
            ("minReplicas", spec.min_replicas if spec.min_replicas is not None else 1),
            ("maxReplicas", spec.max_replicas),
        )
        for name, bound in bounds:
            if replicas_log and bound <= 0:
                continue  # minReplicas 0 has no place on a log axis
            off_scale = bound > replicas_top and not replicas_log
            replicas_ax.axhline(
                bound,
                color=colour,
                linestyle=style,
                linewidth=0.8,
                alpha=0.55,
                label=f"{run.name} {name} {bound}" + (" (off the scale)" if off_scale else ""),
            )
        xs, ys = _steps(times, [r.utilization_percent for r in run.timeline], end=end, unit=unit)
        utilization += _series(util_ax, xs, ys, colour=colour, style=style, label=run.name)
        band = f"(band -{tolerances.scale_down:g}/+{tolerances.scale_up:g})"
        if run.target_percent is not None:
            targets.append(run.target_percent)
            label = f"{run.name} target {run.target_percent:g}% {band}"
            _band(util_ax, run.target_percent, tolerances, colour=colour, style=style, label=label)
        driver = drivers[index]
        if metric_ax is not None and driver is not None:
            xs, ys = _steps(times, [r.observed for r in run.timeline], end=end, unit=unit)
            label = f"{run.name}: {driver.name}"
            metric_values += _series(metric_ax, xs, ys, colour=colour, style=style, label=label)
            if driver.target is not None:
                metric_values.append(driver.target)
                label = f"{run.name} target {driver.target_type} {driver.target:g}\n{band}"
                _band(metric_ax, driver.target, tolerances, colour=colour, style=style, label=label)
    if replicas_log:
        replicas_ax.set_yscale("log")
    else:
        replicas_ax.set_ylim(0, replicas_top)
    replicas_ax.set_ylabel("replicas")
    replicas_ax.grid(alpha=0.3, which="both")
    replicas_ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)

    _utilization_axis(util_ax, utilization, targets)
    if metric_ax is not None:
        if _spans_decades(metric_values):
            metric_ax.set_yscale("log")
        else:
            metric_ax.set_ylim(0, max([*metric_values, 1.0]) * 1.3)
        metric_ax.set_ylabel("metric (as read)")
        metric_ax.grid(alpha=0.3, which="both")
        metric_ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)
    if memory_ax is not None:
        _memory_axis(memory_ax, result, unit=unit)
    axes[-2].set_xlabel(f"time ({unit_name})")
    load_ax.set_xlim(0, end / unit)
    _key_figures(key_ax, result)
    figure.subplots_adjust(left=0.07, right=0.74, top=0.93, bottom=0.02)
    return figure


def _memory_axis(ax: Any, result: SimulationResult, *, unit: float) -> None:
    """Per-pod memory requested (solid) and used (dashed) of the runs with a VPA, averaged over
    the Ready pods at each VPA step, with a cross at each step with OOM kills."""
    for index, run in enumerate(result.runs):
        if run.vertical is None:
            continue
        colour = _COLOURS[index % len(_COLOURS)]
        rows = run.vertical.rows
        xs = [row.t_seconds / unit for row in rows]
        ax.step(
            xs,
            [row.memory_request_bytes / 2**20 for row in rows],
            where="post",
            color=colour,
            linewidth=1.6,
            label=f"{run.name}: requested ({run.vertical.recommender})",
        )
        ax.step(
            xs,
            [row.memory_used_bytes / 2**20 for row in rows],
            where="post",
            color=colour,
            linestyle=":",
            linewidth=1.2,
            label=f"{run.name}: used",
        )
        ooms = [row for row in rows if row.oom_kills]
        if ooms:
            ax.plot(
                [row.t_seconds / unit for row in ooms],
                [row.memory_used_bytes / 2**20 for row in ooms],
                "x",
                color="#d62728",
                markersize=7,
                label=f"{run.name}: OOM kills ({sum(row.oom_kills for row in ooms)})",
            )
    ax.set_ylim(bottom=0)
    ax.set_ylabel("memory per pod (MiB)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)


def _utilization_axis(ax: Any, utilization: Sequence[float], targets: Sequence[float]) -> None:
    if _spans_decades([*utilization, *targets]):
        ax.set_yscale("log")
        ax.set_ylabel("cpu utilization (%, log)")
    else:
        peak = max(utilization, default=0.0)
        ceiling = 4 * max(targets) if targets else None
        if ceiling is not None and peak > ceiling:
            ax.set_ylim(0, ceiling)
            ax.text(
                0.995,
                0.97,
                f"axis cut at {ceiling:g}% (peak {peak:,.0f}%)",
                transform=ax.transAxes,
                ha="right",
                va="top",
                fontsize=8,
                color="#444444",
            )
        else:
            ax.set_ylim(0, max([peak, *targets, 1.0]) * 1.3)
        ax.set_ylabel("cpu utilization (%)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)


def plot_result(
    result: SimulationResult,
    path: Path,
    *,
    title: str,
    subtitle: str = "",
) -> list[Path]:
    """Write the figure of ``result`` as ``path`` (PNG, 150 dpi) and the same name ``.svg``;
    return both paths."""
    pyplot = _pyplot()
    figure = build_figure(result, title=title, subtitle=subtitle)
    path.parent.mkdir(parents=True, exist_ok=True)
    svg = path.with_suffix(".svg")
    try:
        figure.savefig(path, dpi=DPI, format="png", metadata={"Software": None})
        # text stays text in the SVG: searchable, selectable and editable where it is shared
        with pyplot.rc_context({"svg.fonttype": "none"}):
            figure.savefig(svg, format="svg", metadata={"Date": None})
    finally:
        pyplot.close(figure)
    return [path, svg]
