"""PNG plots of a simulation: load, replicas per HPA, utilization against target, one time axis.

Upstream counterpart: none (the simulator's output). Uses matplotlib's Agg backend (no display
needed); matplotlib comes with the ``plot`` extra (``pip install 'hpa[plot]'``).

Three panels share the time axis: the offered load; each HPA's replicas (a log scale when they
span more than two decades, as in a 1 -> 1000 scale-up); each HPA's CPU utilization of Ready pods
with its target as a dashed line of the same colour (the axis is cut at four times the highest
target so a pod at 20,000 % does not flatten everything else; the cut is labelled). Scale events
are dots on the replica lines.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hpa.sim.engine import HPARun, SimulationResult

__all__ = ["PlotUnavailableError", "plot_result"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")


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


def plot_result(
    result: SimulationResult,
    path: Path,
    *,
    title: str,
    subtitle: str = "",
) -> None:
    """Write the three-panel PNG of ``result`` to ``path``."""
    pyplot = _pyplot()
    unit, unit_name = _time_unit(result.duration_seconds)
    end = result.duration_seconds
    figure, (load_ax, replicas_ax, util_ax) = pyplot.subplots(
        3, 1, sharex=True, figsize=(12, 7.5), height_ratios=(1, 1.3, 1.3)
    )
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

    replica_values = [r.replicas for run in result.runs for r in run.timeline]
    span = max(replica_values) / max(1, min(replica_values)) if replica_values else 1
    targets: list[float] = []
    peak = 0.0
    for index, run in enumerate(result.runs):
        colour = _COLOURS[index % len(_COLOURS)]
        times = [r.t_seconds for r in run.timeline]
        xs, ys = _steps(times, [r.replicas for r in run.timeline], end=end, unit=unit)
        replicas_ax.step(xs, ys, where="post", color=colour, linewidth=1.8, label=run.name)
        events = [r for r in run.timeline if r.event]
        replicas_ax.plot(
            [r.t_seconds / unit for r in events],
            [r.replicas for r in events],
            "o",
            color=colour,
            markersize=3,
        )
        xs, ys = _steps(times, [r.utilization_percent for r in run.timeline], end=end, unit=unit)
        util_ax.step(xs, ys, where="post", color=colour, linewidth=1.3, label=run.name)
        peak = max([peak, *(y for y in ys if not math.isnan(y))])
        if run.target_percent is not None:
            targets.append(run.target_percent)
            util_ax.axhline(
                run.target_percent,
                color=colour,
                linestyle="--",
                linewidth=1.2,
                alpha=0.9,
                label=f"{run.name} target {run.target_percent:g}%",
            )
    if span > 100:
        replicas_ax.set_yscale("log")
    else:
        replicas_ax.set_ylim(0, max(replica_values, default=1) * 1.25 + 0.5)
    replicas_ax.set_ylabel("replicas")
    replicas_ax.grid(alpha=0.3, which="both")
    replicas_ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=9, frameon=False)

    ceiling = 4 * max(targets) if targets else None
    if ceiling is not None and peak > ceiling:
        util_ax.set_ylim(0, ceiling)
        util_ax.text(
            0.995,
            0.97,
            f"axis cut at {ceiling:g}% (peak {peak:,.0f}%)",
            transform=util_ax.transAxes,
            ha="right",
            va="top",
            fontsize=8,
            color="#444444",
        )
    else:
        util_ax.set_ylim(0, max([peak, *targets, 1.0]) * 1.3)
    util_ax.set_ylabel("cpu utilization (%)")
    util_ax.set_xlabel(f"time ({unit_name})")
    util_ax.grid(alpha=0.3)
    util_ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)
    util_ax.set_xlim(0, end / unit)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
