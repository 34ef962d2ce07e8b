"""The ``hpa controller`` at scale: reconciles per CPU-second, sync interval, API load, RSS.

Run::

    .venv/bin/python -m bench.controller --hpas 10000 --pods-per-hpa 10 --periods 4

The simulated cluster (``bench.fixture``: list/watch, ``/scale``, ``/status``, events, Leases,
metrics APIs answering in 1 ms, 5 % of metric calls in 2 s) runs in a child process, so the CPU
and memory measured here are the controller's alone. The controller is the real wiring,
``hpa.app.controller.build_app`` on a client loaded from a kubeconfig that points at the fixture,
with leader election on.

Phases: start-up (lists, caches synced), warm-up (at least one period, and until every HPA had
its first reconcile, which writes its status), then ``--periods - 1`` steady periods (no load
change), over which everything is measured:

* reconciles per CPU-second: reconciles finished in the window / CPU seconds of this process
  (``resource.getrusage``, user + system) in the window; goal >= 1,000;
* effective sync interval: seconds between the starts of two reconciles of the same HPA, both in
  the window (``HorizontalController(on_sync_interval=...)``), p50 / p99 / max divided by the
  period;
  goal p99 <= 1.10;
* API requests per HPA per period, counted by the fixture: core API (HPAs, pods, workloads,
  ``/scale``, ``/status``, events, Leases; goal <= 0.05) and, separately, the aggregated metrics
  APIs (one per metric per sync by design: 1.0 for one metric);
* RSS: ``VmHWM`` (peak) and ``VmRSS`` from ``/proc/self/status``; goal <= 400 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import logging
import math
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import structlog
from prometheus_client import CollectorRegistry

from hpa.app.controller import (
    ControllerAppSettings,
    HorizontalControllerApp,
    build_app,
    client_settings,
)
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.kube.client import aclose_quietly, load_client
from hpa.kube.clock import SystemClock

GOAL_RECONCILES_PER_CPU_SECOND = 1000.0
GOAL_P99_INTERVAL_RATIO = 1.10
GOAL_CORE_REQUESTS_PER_HPA_PER_PERIOD = 0.05
GOAL_RSS_BYTES = 400 * 2**20


@dataclass(slots=True)
class Observations:
    """What the controller reports while it runs."""

    intervals: list[tuple[float, float]] = field(default_factory=list)
    """``(monotonic time, seconds)`` of each effective sync interval."""

    def on_sync_interval(self, key: str, seconds: float) -> None:
        del key
        self.intervals.append((time.monotonic(), seconds))


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    hpas: int
    pods: int
    period_seconds: float
    steady_periods: int
    startup_seconds: float
    startup_cpu_seconds: float
    warmup_seconds: float
    startup_rss_bytes: int
    reconciles: int
    cpu_seconds: float
    interval_p50_ratio: float
    interval_p99_ratio: float
    interval_max_ratio: float
    core_requests: dict[str, int]
    metrics_requests: int
    vm_hwm_bytes: int
    vm_rss_bytes: int

    @property
    def reconciles_per_cpu_second(self) -> float:
        return self.reconciles / self.cpu_seconds if self.cpu_seconds > 0 else math.inf

    def per_hpa_per_period(self, count: int) -> float:
        return count / (self.hpas * self.steady_periods)

    @property
    def core_requests_total(self) -> int:
        return sum(self.core_requests.values())


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of another process (``/proc/<pid>/stat``), 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_bytes() -> tuple[int, int]:
    """``(VmHWM, VmRSS)`` of this process."""
    found = {"VmHWM": 0, "VmRSS": 0}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in found:
            found[name] = int(value.split()[0]) * 1024
    return found["VmHWM"], found["VmRSS"]


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


async def fetch_counts(session: aiohttp.ClientSession, url: str) -> dict[tuple[str, str], int]:
    async with session.get(f"{url}/_bench/counts") as response:
        rows: list[dict[str, Any]] = await response.json()
    return {(row["api"], f"{row['verb']} {row['resource']}"): int(row["count"]) for row in rows}


def write_kubeconfig(directory: Path, url: str) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: bench\n  cluster:\n    server: {url}\n"
        "users:\n- name: bench\n  user: {}\n"
        "contexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\n"
        "current-context: bench\n"
    )
    return path


def start_fixture(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    command = [
        sys.executable,
        "-m",
        "bench.fixture",
        f"--hpas={args.hpas}",
        f"--pods-per-hpa={args.pods_per_hpa}",
        f"--metric={args.metric}",
        f"--metrics-delay-seconds={args.metrics_delay_seconds}",
        f"--slow-ratio={args.slow_ratio}",
        f"--slow-delay-seconds={args.slow_delay_seconds}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("listening "):
        process.kill()
        raise RuntimeError(f"the fixture did not start: {line!r}")
    return process, f"http://127.0.0.1:{int(line.split()[1])}"


def quiet_logs(level: int) -> None:
    """What a deployment runs with: info and above, to stderr (the controller logs every
    reconcile at debug)."""
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


def reconciles_total(registry: CollectorRegistry) -> int:
    total = 0.0
    for family in registry.collect():
        if family.name == "hpa_horizontal_controller_reconciliations":
            total += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return int(total)


async def measure(args: argparse.Namespace, url: str, kubeconfig: Path) -> Result:
    period = args.period
    horizontal = HorizontalControllerSettings(
        sync_period_seconds=period,
        concurrent_syncs=args.concurrent_syncs,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        metric_timeout_seconds=args.metric_timeout,
    )
    settings = ControllerAppSettings(
        horizontal=horizontal,
        kubeconfig=str(kubeconfig),
        port=0,
        leader_elect=True,
        leader_elect_resource_namespace="kube-system",
    )
    if args.memory_top:
        tracemalloc.start()
    clock = SystemClock()
    registry = CollectorRegistry()
    observations = Observations()
    client = await load_client(client_settings(settings), clock=clock, registry=registry)
    app: HorizontalControllerApp = build_app(
        settings,
        client,
        clock=clock,
        registry=registry,
        on_sync_interval=observations.on_sync_interval,
    )
    started = time.monotonic()
    cpu_started = cpu_seconds()
    running = asyncio.create_task(app.run(), name="controller")
    async with aiohttp.ClientSession() as session:
        try:
            while not app.ready():
                if running.done():
                    running.result()
                await asyncio.sleep(0.2)
            startup_seconds = time.monotonic() - started
            startup_cpu = cpu_seconds() - cpu_started
            startup_rss = memory_bytes()[1]
            print(
                f"caches synced and leading after {startup_seconds:.1f} s "
                f"({startup_cpu:.1f} CPU s); warming up for one period",
                file=sys.stderr,
            )
            # warm-up: one period, and until every HPA had its first reconcile (status write)
            warm_until = time.monotonic() + period
            while time.monotonic() < warm_until or reconciles_total(registry) < args.hpas:
                if running.done():
                    running.result()
                if time.monotonic() - warm_until > args.max_warmup_periods * period:
                    print("warm-up did not finish: measuring anyway", file=sys.stderr)
                    break
                await asyncio.sleep(0.5)
            warmup_seconds = time.monotonic() - started - startup_seconds
            steady_periods = args.periods - 1
            window_start = time.monotonic()
            counts_before = await fetch_counts(session, url)
            cpu_before = cpu_seconds()
            reconciles_before = reconciles_total(registry)
            # CPU time, not wall time: the machine is shared, and waiting in epoll is not cost
            profiler = cProfile.Profile(time.process_time) if args.profile else None
            if profiler is not None:
                profiler.enable()
            await asyncio.sleep(period * steady_periods)
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(args.profile)
            cpu_after = cpu_seconds()
            reconciles_after = reconciles_total(registry)
            counts_after = await fetch_counts(session, url)
            window_end = time.monotonic()
            if running.done():
                running.result()
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await running
            await aclose_quietly(client)
    # both reconciles of an interval inside the window: the warm-up's backlog is not steady state
    intervals = [
        s for at, s in observations.intervals if window_start <= at - s and at <= window_end
    ]
    core = {
        name: counts_after.get((api, name), 0) - counts_before.get((api, name), 0)
        for api, name in counts_after
        if api == "core"
    }
    metrics_requests = sum(
        count - counts_before.get((api, name), 0)
        for (api, name), count in counts_after.items()
        if api == "metrics"
    )
    if args.memory_top:
        snapshot = tracemalloc.take_snapshot()
        for stat in snapshot.statistics("lineno")[: args.memory_top]:
            print(f"{stat.size / 2**20:8.1f} MB {stat.count:9d} {stat.traceback}", file=sys.stderr)
    hwm, rss = memory_bytes()
    return Result(
        hpas=args.hpas,
        pods=args.hpas * args.pods_per_hpa,
        period_seconds=period,
        steady_periods=steady_periods,
        startup_seconds=startup_seconds,
        startup_cpu_seconds=startup_cpu,
        warmup_seconds=warmup_seconds,
        startup_rss_bytes=startup_rss,
        reconciles=reconciles_after - reconciles_before,
        cpu_seconds=cpu_after - cpu_before,
        interval_p50_ratio=percentile(intervals, 0.50) / period,
        interval_p99_ratio=percentile(intervals, 0.99) / period,
        interval_max_ratio=max(intervals, default=math.nan) / period,
        core_requests={k: v for k, v in sorted(core.items()) if v},
        metrics_requests=metrics_requests,
        vm_hwm_bytes=hwm,
        vm_rss_bytes=rss,
    )


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def render(result: Result, *, command: str, slow: str) -> str:
    core = result.per_hpa_per_period(result.core_requests_total)
    rows = [
        (
            "reconciles per CPU-second",
            f"{result.reconciles_per_cpu_second:,.0f}",
            f">= {GOAL_RECONCILES_PER_CPU_SECOND:,.0f}",
            verdict(result.reconciles_per_cpu_second >= GOAL_RECONCILES_PER_CPU_SECOND),
        ),
        (
            "  ratio to goal",
            f"{result.reconciles_per_cpu_second / GOAL_RECONCILES_PER_CPU_SECOND:.2f}",
            ">= 1",
            "",
        ),
        (
            f"p99 sync interval / period ({slow})",
            f"{result.interval_p99_ratio:.3f}",
            f"<= {GOAL_P99_INTERVAL_RATIO:.2f}",
            verdict(result.interval_p99_ratio <= GOAL_P99_INTERVAL_RATIO),
        ),
        (
            "  p50 / max",
            f"{result.interval_p50_ratio:.3f} / {result.interval_max_ratio:.3f}",
            "",
            "",
        ),
        (
            "core API requests / HPA / period",
            f"{core:.4f}",
            f"<= {GOAL_CORE_REQUESTS_PER_HPA_PER_PERIOD}",
            verdict(core <= GOAL_CORE_REQUESTS_PER_HPA_PER_PERIOD),
        ),
        (
            "metrics API requests / HPA / period",
            f"{result.per_hpa_per_period(result.metrics_requests):.3f}",
            "1 per metric",
            "",
        ),
        (
            "RSS peak (VmHWM) MB",
            f"{result.vm_hwm_bytes / 2**20:.0f}",
            f"<= {GOAL_RSS_BYTES // 2**20}",
            verdict(result.vm_hwm_bytes <= GOAL_RSS_BYTES),
        ),
        ("  ratio to goal", f"{result.vm_hwm_bytes / GOAL_RSS_BYTES:.2f}", "<= 1", ""),
        ("RSS now (VmRSS) MB", f"{result.vm_rss_bytes / 2**20:.0f}", "", ""),
        ("RSS after start-up MB", f"{result.startup_rss_bytes / 2**20:.0f}", "", ""),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [
        f"{result.hpas:,} HPAs, {result.pods:,} pods, period {result.period_seconds:g} s, "
        f"{result.steady_periods} steady periods measured; start-up {result.startup_seconds:.1f} s "
        f"({result.startup_cpu_seconds:.1f} CPU s), warm-up {result.warmup_seconds:.1f} s",
        f"reconciles {result.reconciles:,} in {result.cpu_seconds:.1f} CPU s",
        "",
    ]
    lines += [f"{n.ljust(width)}  {v:>14}  {g:>14}  {o}".rstrip() for n, v, g, o in rows]
    lines.append("")
    lines.append("core API requests in the steady window, by verb and resource:")
    lines += [f"  {name}: {count}" for name, count in result.core_requests.items()] or ["  none"]
    lines.append("")
    lines.append(f"command: {command}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.controller", description=__doc__)
    parser.add_argument("--hpas", type=int, default=10_000)
    parser.add_argument("--pods-per-hpa", type=int, default=10)
    parser.add_argument("--periods", type=int, default=4, help="periods after start-up (>= 2)")
    parser.add_argument("--period", type=float, default=15.0, help="sync period, seconds")
    parser.add_argument("--metric", choices=("resource", "pods"), default="resource")
    parser.add_argument("--metrics-delay-seconds", type=float, default=0.001)
    parser.add_argument("--slow-ratio", type=float, default=0.05)
    parser.add_argument("--slow-delay-seconds", type=float, default=2.0)
    parser.add_argument(
        "--concurrent-syncs",
        type=int,
        default=500,
        help="--concurrent-horizontal-pod-autoscaler-syncs (in-flight reconciles; default 500)",
    )
    parser.add_argument("--kube-api-qps", type=float, default=2000.0)
    parser.add_argument("--kube-api-burst", type=int, default=4000)
    parser.add_argument("--metric-timeout", type=float, default=10.0, help="seconds")
    parser.add_argument(
        "--max-warmup-periods",
        type=float,
        default=6.0,
        help="give up waiting for every HPA's first reconcile after this many extra periods",
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="write a cProfile of the steady window to FILE"
    )
    parser.add_argument(
        "--memory-top",
        type=int,
        default=0,
        metavar="N",
        help="trace allocations (slow) and print the N biggest sites still alive at the end",
    )
    args = parser.parse_args(argv)
    if args.periods < 2:
        parser.error("--periods must be at least 2 (one warm-up period, then steady ones)")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    quiet_logs(logging.WARNING)
    command = shlex.join(
        [".venv/bin/python", "-m", "bench.controller", *(sys.argv[1:] if argv is None else argv)]
    )
    process, url = start_fixture(args)
    try:
        with tempfile.TemporaryDirectory(prefix="hpa-bench-") as directory:
            kubeconfig = write_kubeconfig(Path(directory), url)
            result = asyncio.run(measure(args, url, kubeconfig))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    slow = f"{args.slow_ratio:.0%} of metric calls {args.slow_delay_seconds:g} s"
    print(render(result, command=command, slow=slow))


if __name__ == "__main__":
    main()
