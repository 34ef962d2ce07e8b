"""``hpa demo``: a short tour of ``behavior`` policies in virtual time, no cluster, no network.

Upstream counterpart: none. Each scenario of :mod:`hpa.sim.scenarios` runs through the real
controller (:mod:`hpa.sim.engine`); a compact live table prints the replica changes as they
happen; every scenario gets a plot (``NN-<slug>.png``) and a timeline CSV per HPA under the output
directory, plus one ``summary.md`` for the whole tour.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from hpa.sim.engine import HPARun, SimulationResult, simulate
from hpa.sim.plot import plot_result
from hpa.sim.report import (
    file_stem,
    format_seconds,
    parameters_text,
    summary_table,
    write_timeline_csv,
)
from hpa.sim.scenarios import SCENARIOS, Scenario
from hpa.sim.vertical import summary_lines
from hpa.sim.workload import Deployment

__all__ = ["DemoOutcome", "run_demo"]

CLOSING = """\
Same thing against a real cluster:
  make lab                      # a local control plane, Prometheus and a load exporter
  helm install hpa charts/hpa   # the controller and the metrics adapter, in any cluster
Simulate your own HPAs (the YAML you apply) against a trace or a built-in shape:
  hpa simulate my-hpa.yaml other-hpa.yaml --trace step:base=100,peak=1000,at=5m --output sim-out
  hpa simulate my-hpa.yaml --trace load.csv --duration 7d
  hpa simulate my-hpa.yaml --from-prometheus http://prometheus:9090 \\
      --query 'sum(rate(http_requests_total{app="web"}[1m]))' --start 2026-01-01T00:00:00Z \\
      --end 2026-01-08T00:00:00Z --step 15s
"""


@dataclass(frozen=True, slots=True)
class DemoOutcome:
    """What the tour produced: one result and one plot per scenario."""

    results: tuple[tuple[Scenario, SimulationResult], ...]
    plots: tuple[Path, ...]
    summary_path: Path
    wall_seconds: float


class _LiveTable:
    """Prints a row when replicas change (at most every ``interval`` virtual seconds)."""

    def __init__(self, stream: TextIO, names: Sequence[str], *, interval: float) -> None:
        self.stream = stream
        self.interval = interval
        self.widths = [max(12, len(name) + 2) for name in names]
        self._last: list[int] | None = None
        self._last_row_seconds = -float("inf")
        header = f"  {'virtual time':>12}  {'load req/s':>10}"
        header += "".join(f"  {name:>{w}}" for name, w in zip(names, self.widths, strict=True))
        stream.write(header + "\n")
        stream.write(
            f"  {'':>12}  {'':>10}"
            + "".join(f"  {'replicas (cpu)':>{w}}" for w in self.widths)
            + "\n"
        )

    def row(self, t_seconds: float, deployments: Sequence[Deployment]) -> None:
        cells = []
        for deployment, width in zip(deployments, self.widths, strict=True):
            util = "-"
            if deployment.timeline and deployment.timeline[-1].utilization_percent is not None:
                util = f"{deployment.timeline[-1].utilization_percent:.0f}%"
            cells.append(f"  {f'{deployment.spec_replicas} ({util})':>{width}}")
        load = deployments[0].load_rps
        self.stream.write(f"  {format_seconds(t_seconds):>12}  {load:>10.0f}" + "".join(cells))
        self.stream.write("\n")
        self.stream.flush()

    def sync(
        self, t_seconds: float, _runs: Sequence[HPARun], deployments: Sequence[Deployment]
    ) -> None:
        replicas = [d.spec_replicas for d in deployments]
        changed = replicas != self._last
        if self._last is None or (changed and t_seconds - self._last_row_seconds >= self.interval):
            self.row(t_seconds, deployments)
            self._last = replicas
            self._last_row_seconds = t_seconds


def run_demo(out_dir: Path, *, stream: TextIO, quick: bool = False) -> DemoOutcome:
    """Run the tour, print as it goes, write plots, timelines and ``summary.md``."""
    started = time.monotonic()  # wall time, for the closing line only
    out_dir.mkdir(parents=True, exist_ok=True)
    stream.write(
        "hpa demo: the real HPA controller code, run in virtual time against a simulated "
        "workload.\nNo cluster, no network. Outputs go to "
        f"{out_dir}/\n\n"
    )
    results: list[tuple[Scenario, SimulationResult]] = []
    plots: list[Path] = []
    sections: list[str] = ["# hpa demo\n"]
    for number, scenario in enumerate(SCENARIOS, start=1):
        trace = scenario.trace(quick)
        hpas = scenario.hpas()
        stream.write(f"[{number}/{len(SCENARIOS)}] {scenario.title}\n")
        stream.write(f"  {scenario.explanation}\n")
        stream.write(f"  trace: {trace.description}, {format_seconds(trace.duration_seconds)}\n")
        table = _LiveTable(stream, [m.name for m in hpas], interval=scenario.row_interval_seconds)
        result = simulate(hpas, trace, config=scenario.config(), on_sync=table.sync)
        stem = f"{number:02d}-{scenario.slug}"
        plot_path = out_dir / f"{stem}.png"
        plot_result(result, plot_path, title=scenario.title, subtitle=trace.description)
        plots.append(plot_path)
        for run in result.runs:
            write_timeline_csv(run, out_dir / f"{stem}.{file_stem(run.name)}.csv")
        text = summary_table(result)
        verticals = [
            (run.name, run.vertical.summary(result.duration_seconds))
            for run in result.runs
            if run.vertical is not None
        ]
        if verticals:
            text += "\n\n" + "\n".join(summary_lines(verticals))
        stream.write("\n" + "\n".join(f"  {line}" for line in text.splitlines()) + "\n")
        stream.write(f"  plot: {plot_path} (and .svg)\n\n")
        results.append((scenario, result))
        sections.append(
            f"## {number}. {scenario.title}\n\n{scenario.explanation}\n\n"
            f"![{scenario.title}]({plot_path.name})\n\n"
            + "\n".join(f"```yaml\n{m}```\n" for m in (*scenario.manifests, *scenario.vpas))
            + f"\n```text\n{parameters_text(result)}\n```\n\n```text\n{text}\n```\n"
        )
    summary_path = out_dir / "summary.md"
    summary_path.write_text("\n".join(sections), encoding="utf-8")
    wall = time.monotonic() - started
    stream.write(
        f"Done in {wall:.1f}s of wall time. Plots, timelines and {summary_path.name} "
        f"are in {out_dir}/\n\n{CLOSING}"
    )
    stream.flush()
    return DemoOutcome(
        results=tuple(results),
        plots=tuple(plots),
        summary_path=summary_path,
        wall_seconds=wall,
    )
