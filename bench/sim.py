"""The simulator's speed: 7 days of load at 15 s resolution, 3 HPAs side by side.

Run ``.venv/bin/python -m bench.sim``. The trace is a diurnal week (40 -> 600 req/s, peak at
14:00) with a 20-minute +-25 % ripple, one point every 15 s (40,320 points); the three HPAs are
the demo's: no behavior, a 20-minute scale-down window, and ``Percent 900 / 60s`` scale-up. Every
HPA is reconciled every 15 s by the real ``HorizontalController`` (120,960 reconciles). Prints CPU
seconds (``time.process_time``), wall seconds, the ratio of simulated time to wall time and the
machine's load average. The goal is at most 10 CPU seconds.
"""

from __future__ import annotations

import argparse
import math
import os
import time

from hpa.sim.commands import quiet_controller_logs
from hpa.sim.engine import SimulationConfig, simulate
from hpa.sim.manifest import parse_manifests
from hpa.sim.report import summary_table
from hpa.sim.scenarios import CALM, FAST_UP, hpa_manifest
from hpa.sim.trace import LoadTrace, points_trace

STEP_SECONDS = 15.0


def week_trace(days: float) -> LoadTrace:
    duration = days * 86400
    points = []
    for index in range(math.ceil(duration / STEP_SECONDS)):
        t = index * STEP_SECONDS
        day = 40 + 560 * (1 + math.cos(2 * math.pi * (t - 14 * 3600) / 86400)) / 2
        ripple = 1 + 0.25 * math.sin(2 * math.pi * t / 1200)
        points.append((t, round(day * ripple, 1)))
    return points_trace(
        points, duration_seconds=duration, description=f"{days:g} days at 15 s resolution"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=7.0, help="simulated days (default 7)")
    args = parser.parse_args(argv)
    quiet_controller_logs()
    trace = week_trace(args.days)
    hpas = parse_manifests(
        "---\n".join(
            (
                hpa_manifest("defaults"),
                hpa_manifest("calm", behavior=CALM),
                hpa_manifest("fast-up", behavior=FAST_UP, max_replicas=1000),
            )
        ),
        source="bench",
    )
    load_before = os.getloadavg()
    cpu_start = time.process_time()
    wall_start = time.perf_counter()
    result = simulate(hpas, trace, config=SimulationConfig(initial_replicas=2))
    wall = time.perf_counter() - wall_start
    cpu = time.process_time() - cpu_start
    reconciles = sum(run.reconciles for run in result.runs)
    print(summary_table(result))
    print()
    print(f"trace          {trace.description}, {len(trace.loads)} points")
    print(f"reconciles     {reconciles} ({len(result.runs)} HPAs)")
    print(f"cpu seconds    {cpu:.2f} ({1e6 * cpu / reconciles:.0f} us per reconcile)")
    print(f"wall seconds   {wall:.2f}")
    print(f"simulated/wall {trace.duration_seconds / wall:,.0f}x")
    load_after = os.getloadavg()
    print(
        f"load average   {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end "
        "(1 min; other processes inflate wall time, and CPU time less so)"
    )


if __name__ == "__main__":
    main()
