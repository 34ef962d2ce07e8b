"""The ``hpa simulate`` and ``hpa demo`` subcommands: flags and handlers.

Upstream counterpart: the controller's flags keep kube-controller-manager's names
(``--horizontal-pod-autoscaler-sync-period``, ``-tolerance``, ``-downscale-stabilization``,
``-cpu-initialization-period``, ``-initial-readiness-delay``) and defaults. The workload and
metric-pipeline flags are the simulator's own (see ``docs/simulator.md``).

Deliberate deviations: none. Errors in manifests, traces or flags are one line on stderr
(``hpa simulate: error: <file>: <field path>: <message>``) and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

import structlog

from hpa.controllers.settings import HorizontalControllerSettings
from hpa.core.duration import format_duration
from hpa.core.quantity import QuantityError, parse_quantity
from hpa.kube.logs import INPUT_ERRORS, add_log_flags
from hpa.sim.demo import run_demo
from hpa.sim.engine import SimulationConfig, simulate
from hpa.sim.history import parse_time_seconds, prometheus_trace
from hpa.sim.manifest import HPAManifest
from hpa.sim.plot import PlotUnavailableError, plot_result
from hpa.sim.progress import ProgressBar
from hpa.sim.report import (
    file_stem,
    parameters_text,
    summaries,
    write_summary,
    write_timeline_csv,
    write_timeline_json,
)
from hpa.sim.summary import Summary
from hpa.sim.trace import SHAPES, LoadTrace, TraceError, parse_duration, read_csv, shape_trace
from hpa.sim.vertical import (
    RECOMMENDERS,
    ResourceModel,
    VerticalSummary,
    comparison_lines,
    summary_lines,
)
from hpa.sim.vpa_manifest import load_manifest_set
from hpa.sim.workload import MetricPipeline, WorkloadModel

__all__ = ["add_demo_parser", "add_simulate_parser", "quiet_controller_logs"]

log = structlog.get_logger("hpa.sim")

SIMULATE_DESCRIPTION = """\
Replay a load trace through the real HPA controller in virtual time, for one or more HPA
manifests side by side (autoscaling/v2 YAML, exactly what you apply). Writes a timeline per HPA
(CSV or JSON), a summary (summary.md, also printed) and a plot (plot.png, plot.svg) to --output.

Trace: a CSV file of timestamp,load rows (seconds or RFC 3339; load in requests/s), or a
built-in shape with optional parameters:
""" + "\n".join(f"  {shape.help_text()}" for shape in SHAPES.values())


def quiet_controller_logs() -> None:
    """The controller logs every reconcile; a simulation reports through its outputs instead."""
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except TraceError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _milli(text: str) -> float:
    """A CPU quantity (``500m``, ``0.5``, ``2``) in milli-cores."""
    try:
        return parse_quantity(text).as_approximate_float64() * 1000
    except QuantityError as error:
        raise argparse.ArgumentTypeError(f"invalid quantity {text!r}: {error}") from error


def _memory(text: str) -> float:
    """A memory quantity flag (``512Mi``), in bytes."""
    return _milli(text) / 1000


def _memory_or_none(text: str) -> float | None:
    """A memory limit flag: a quantity, or ``none``."""
    return None if text == "none" else _memory(text)


def _add_model_flags(parser: argparse.ArgumentParser) -> None:
    w = WorkloadModel()
    p = MetricPipeline()
    s = HorizontalControllerSettings()
    model = parser.add_argument_group("workload model")
    vertical = parser.add_argument_group(
        "memory model and vertical autoscaling (with VerticalPodAutoscaler manifests)"
    )
    vertical.add_argument(
        "--memory-base",
        type=_memory,
        default=_memory("200Mi"),
        metavar="MEM",
        help="memory a Ready pod uses with no load (default 200Mi)",
    )
    vertical.add_argument(
        "--memory-per-request",
        type=_memory,
        default=_memory("4Mi"),
        metavar="MEM",
        help="memory per request/s of per-pod load (default 4Mi)",
    )
    vertical.add_argument(
        "--memory-request",
        type=_memory,
        default=_memory("512Mi"),
        metavar="MEM",
        help="memory request of the pod template (default 512Mi)",
    )
    vertical.add_argument(
        "--memory-limit",
        type=_memory_or_none,
        default=_memory_or_none("512Mi"),
        metavar="MEM",
        help="memory limit of the pod template, or none (default 512Mi)",
    )
    vertical.add_argument(
        "--recommender",
        choices=RECOMMENDERS,
        default=None,
        help="recommender model of every VPA (default: each VPA's spec.recommenders)",
    )
    model.add_argument(
        "--cpu-request",
        type=_milli,
        default=float(w.cpu_request_milli),
        metavar="CPU",
        help=f"cpu request per pod (default {w.cpu_request_milli}m)",
    )
    model.add_argument(
        "--cpu-per-request",
        type=_milli,
        default=None,
        metavar="CPU",
        help=f"cpu per request/s served (default {w.cpu_per_request_milli:g}m)",
    )
    model.add_argument(
        "--capacity",
        type=float,
        default=None,
        metavar="RPS",
        help="requests/s one pod serves at 100%% of its cpu request (instead of --cpu-per-request)",
    )
    model.add_argument(
        "--idle-cpu",
        type=_milli,
        default=w.idle_cpu_milli,
        metavar="CPU",
        help="cpu of a Ready pod with no traffic (default 0)",
    )
    model.add_argument(
        "--cpu-limit",
        type=_milli,
        default=None,
        metavar="CPU",
        help="cpu limit per pod: usage saturates, excess load is dropped (default none)",
    )
    model.add_argument(
        "--startup-time",
        type=_duration,
        default=w.startup_seconds,
        metavar="DURATION",
        help=f"pod creation to Running (default {w.startup_seconds:g}s)",
    )
    model.add_argument(
        "--readiness-delay",
        type=_duration,
        default=w.readiness_seconds,
        metavar="DURATION",
        help=f"Running to Ready (default {w.readiness_seconds:g}s)",
    )
    model.add_argument(
        "--warmup-cpu",
        type=_milli,
        default=w.startup_cpu_milli,
        metavar="CPU",
        help="cpu while Running but not Ready (default 0)",
    )
    model.add_argument(
        "--start-replicas",
        "--initial-replicas",
        dest="initial_replicas",
        type=int,
        default=None,
        metavar="N",
        help="replicas at the start (default: each HPA's minReplicas, at least 1)",
    )
    pipeline = parser.add_argument_group("metric pipeline")
    pipeline.add_argument(
        "--scrape-interval",
        type=_duration,
        default=p.scrape_interval_seconds,
        metavar="DURATION",
        help=f"metrics scrape period (default {p.scrape_interval_seconds:g}s)",
    )
    pipeline.add_argument(
        "--rate-window",
        type=_duration,
        default=p.window_seconds,
        metavar="DURATION",
        help=f"window of each rate sample (default {p.window_seconds:g}s)",
    )
    pipeline.add_argument(
        "--scrape-offset",
        type=_duration,
        default=p.scrape_offset_seconds,
        metavar="DURATION",
        help="scrapes happen this long after each sync (default 0s)",
    )
    controller = parser.add_argument_group("controller (kube-controller-manager names)")
    controller.add_argument(
        "--horizontal-pod-autoscaler-sync-period",
        type=_duration,
        default=s.sync_period_seconds,
        metavar="DURATION",
        help=f"period of each HPA's sync (default {format_duration(s.sync_period_seconds)})",
    )
    controller.add_argument(
        "--horizontal-pod-autoscaler-tolerance",
        type=float,
        default=s.tolerance,
        metavar="RATIO",
        help=f"usage-ratio tolerance (default {s.tolerance})",
    )
    controller.add_argument(
        "--horizontal-pod-autoscaler-downscale-stabilization",
        type=_duration,
        default=s.downscale_stabilization_seconds,
        metavar="DURATION",
        help="scale-down stabilization window "
        f"(default {format_duration(s.downscale_stabilization_seconds)})",
    )
    controller.add_argument(
        "--horizontal-pod-autoscaler-cpu-initialization-period",
        type=_duration,
        default=s.cpu_initialization_period_seconds,
        metavar="DURATION",
        help="cpu initialization period "
        f"(default {format_duration(s.cpu_initialization_period_seconds)})",
    )
    controller.add_argument(
        "--horizontal-pod-autoscaler-initial-readiness-delay",
        type=_duration,
        default=s.initial_readiness_delay_seconds,
        metavar="DURATION",
        help="initial readiness delay "
        f"(default {format_duration(s.initial_readiness_delay_seconds)})",
    )


def _config(args: argparse.Namespace) -> SimulationConfig:
    request = round(args.cpu_request)
    per_request = WorkloadModel().cpu_per_request_milli
    if args.capacity is not None and args.cpu_per_request is not None:
        raise ValueError("give either --capacity or --cpu-per-request, not both")
    if args.capacity is not None:
        if args.capacity <= 0:
            raise ValueError("--capacity must be positive")
        per_request = max(0.0, request - args.idle_cpu) / args.capacity
    elif args.cpu_per_request is not None:
        per_request = args.cpu_per_request
    workload = WorkloadModel(
        cpu_request_milli=request,
        cpu_per_request_milli=per_request,
        idle_cpu_milli=args.idle_cpu,
        cpu_limit_milli=None if args.cpu_limit is None else round(args.cpu_limit),
        startup_seconds=args.startup_time,
        readiness_seconds=args.readiness_delay,
        startup_cpu_milli=args.warmup_cpu,
    )
    pipeline = MetricPipeline(
        scrape_interval_seconds=args.scrape_interval,
        window_seconds=args.rate_window,
        scrape_offset_seconds=args.scrape_offset,
    )
    settings = HorizontalControllerSettings(
        sync_period_seconds=args.horizontal_pod_autoscaler_sync_period,
        tolerance=args.horizontal_pod_autoscaler_tolerance,
        downscale_stabilization_seconds=args.horizontal_pod_autoscaler_downscale_stabilization,
        cpu_initialization_period_seconds=args.horizontal_pod_autoscaler_cpu_initialization_period,
        initial_readiness_delay_seconds=args.horizontal_pod_autoscaler_initial_readiness_delay,
    )
    if args.initial_replicas is not None and args.initial_replicas < 0:
        raise ValueError(f"--start-replicas: {args.initial_replicas} must be >= 0")
    resources = ResourceModel(
        memory_base_bytes=round(args.memory_base),
        memory_per_request_bytes=args.memory_per_request,
        memory_request_bytes=round(args.memory_request),
        memory_limit_bytes=None if args.memory_limit is None else round(args.memory_limit),
    )
    return SimulationConfig(
        workload=workload,
        pipeline=pipeline,
        settings=settings,
        initial_replicas=args.initial_replicas,
        resources=resources,
        recommender=args.recommender,
    )


def _trace(args: argparse.Namespace) -> LoadTrace:
    prometheus = args.from_prometheus
    if prometheus is not None:
        if args.trace is not None:
            raise TraceError("give either --trace or --from-prometheus, not both")
        missing = [f"--{n}" for n in ("query", "start", "end") if getattr(args, n) is None]
        if missing:
            raise TraceError(f"--from-prometheus needs {', '.join(missing)}")
        trace = asyncio.run(
            prometheus_trace(
                prometheus,
                args.query,
                start_seconds=parse_time_seconds(args.start),
                end_seconds=parse_time_seconds(args.end),
                step_seconds=args.step,
            )
        )
    elif args.trace is None:
        raise TraceError("give a load trace: --trace FILE.csv|SHAPE, or --from-prometheus URL")
    elif Path(args.trace).exists() or args.trace.endswith(".csv"):
        trace = read_csv(args.trace)
    else:
        return shape_trace(args.trace, duration_seconds=args.duration)
    if args.duration is not None:
        trace = trace.with_duration(args.duration)
    return trace


def _output_directory(path: Path) -> Path:
    """``--output``: a directory that exists or can be made, checked before a simulation runs."""
    if path.exists() and not path.is_dir():
        raise ValueError(f"--output: {path}: exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run_simulate(args: argparse.Namespace) -> int:
    """``hpa simulate``: a mistake in the manifests, the trace, the flags or ``--output`` is one
    ``invalid_input`` line and exit 2, before anything is simulated."""
    try:
        manifests, vpas = load_manifest_set(args.manifests)
        trace = _trace(args)
        config = replace(_config(args), vpas=tuple(vpas))
        out = _output_directory(args.output)
    except INPUT_ERRORS as error:
        log.error("invalid_input", error=str(error))
        return 2
    if args.compare_recommenders:
        if not config.vpas:
            log.error("invalid_input", error="--compare-recommenders needs a VerticalPodAutoscaler")
            return 2
        return _compare_recommenders(manifests, trace, config, out)
    progress = ProgressBar(
        trace.duration_seconds,
        stream=sys.stderr,
        enabled=args.progress or sys.stderr.isatty(),
    )
    wall_start = time.monotonic()
    cpu_start = time.process_time()
    result = simulate(
        manifests, trace, config=config, on_sync=lambda t, _runs, _deps: progress.update(t)
    )
    progress.close()
    cpu = time.process_time() - cpu_start
    wall = time.monotonic() - wall_start
    written: list[Path] = []
    for run in result.runs:
        if args.format == "json":
            path = out / f"{file_stem(run.name)}.timeline.json"
            write_timeline_json(run, path, result=result)
        else:
            path = out / f"{file_stem(run.name)}.timeline.csv"
            write_timeline_csv(run, path)
        written.append(path)
    summary_path = out / "summary.md"
    table = write_summary(result, summary_path, title="hpa simulate")
    written.append(summary_path)
    if not args.no_plot:
        plot_path = out / "plot.png"
        try:
            written += plot_result(
                result,
                plot_path,
                title=" vs ".join(run.name for run in result.runs),
                subtitle=trace.description,
            )
        except PlotUnavailableError as error:
            print(f"hpa simulate: no plot: {error}", file=sys.stderr)
    print(parameters_text(result))
    print()
    print(table)
    print()
    verticals = [
        (run.name, run.vertical.summary(result.duration_seconds))
        for run in result.runs
        if run.vertical is not None
    ]
    if verticals:
        print("\n".join(summary_lines(verticals)))
        print()
    ratio = trace.duration_seconds / wall if wall > 0 else float("inf")
    print(
        f"simulated {trace.duration_seconds:g}s of virtual time in {wall:.2f}s of wall time "
        f"({cpu:.2f}s cpu; {ratio:,.0f}x real time)"
    )
    for path in written:
        print(f"wrote {path}")
    return 0


def _compare_recommenders(
    manifests: list[HPAManifest], trace: LoadTrace, config: SimulationConfig, out: Path
) -> int:
    """``hpa simulate --compare-recommenders``: the same run once per recommender model."""
    rows: list[tuple[str, Summary, VerticalSummary]] = []
    for recommender in RECOMMENDERS:
        result = simulate(manifests, trace, config=replace(config, recommender=recommender))
        for run, summary in zip(result.runs, summaries(result), strict=True):
            if run.vertical is not None:
                rows.append((run.name, summary, run.vertical.summary(result.duration_seconds)))
    table = "\n".join(comparison_lines(rows))
    path = out / "compare.md"
    path.write_text(f"# hpa simulate --compare-recommenders\n\n{trace.description}\n\n{table}\n")
    print(trace.description)
    print()
    print(table)
    print()
    print(f"wrote {path}")
    return 0


def add_simulate_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``hpa simulate`` on the CLI's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        help="replay a load trace through the HPA controller in virtual time",
        description=SIMULATE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "manifests",
        nargs="+",
        metavar="HPA.yaml",
        help="autoscaling/v2 HorizontalPodAutoscaler manifests, and autoscaling.k8s.io/v1 "
        "VerticalPodAutoscaler manifests acting on their Deployments",
    )
    source = parser.add_argument_group("load")
    source.add_argument(
        "--trace",
        metavar="CSV|SHAPE",
        help="CSV file (timestamp,load) or a shape such as step:peak=2000",
    )
    source.add_argument(
        "--duration",
        type=_duration,
        default=None,
        metavar="DURATION",
        help="simulate this long (cuts a CSV trace; sets a shape's duration)",
    )
    source.add_argument(
        "--from-prometheus",
        metavar="URL",
        default=None,
        help="replay history: a range query against this Prometheus",
    )
    source.add_argument("--query", metavar="PROMQL", help="the load in requests/s (summed)")
    source.add_argument("--start", metavar="TIME", help="RFC 3339 or Unix seconds")
    source.add_argument("--end", metavar="TIME", help="RFC 3339 or Unix seconds")
    source.add_argument(
        "--step",
        type=_duration,
        default=15.0,
        metavar="DURATION",
        help="range query resolution (default 15s)",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--output",
        type=Path,
        default=Path("sim-out"),
        metavar="DIR",
        help="directory for timelines, summary.md and plot.png/.svg (default sim-out)",
    )
    output.add_argument(
        "--format", choices=("csv", "json"), default="csv", help="timeline format (default csv)"
    )
    output.add_argument("--no-plot", action="store_true", help="do not draw plot.png and plot.svg")
    output.add_argument(
        "--compare-recommenders",
        action="store_true",
        help="run once per VPA recommender model ("
        + ", ".join(RECOMMENDERS)
        + ") on the same trace and print one table (compare.md)",
    )
    output.add_argument(
        "--progress",
        action="store_true",
        help="show a progress bar on stderr even when it is not a terminal",
    )
    _add_model_flags(parser)
    add_log_flags(output, default_level="error", default_format="console")
    parser.set_defaults(handler=_run_simulate)


def _run_demo(args: argparse.Namespace) -> int:
    """``hpa demo``: an unusable ``--output`` is one ``invalid_input`` line and exit 2."""
    try:
        out = _output_directory(args.output)
    except INPUT_ERRORS as error:
        log.error("invalid_input", error=str(error))
        return 2
    run_demo(out, stream=sys.stdout, quick=args.quick)
    return 0


def add_demo_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``hpa demo`` on the CLI's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="a tour of HPA behaviors in virtual time (no cluster, no network)",
        description="Run the embedded tour of behavior policies through the real controller "
        "in virtual time; writes a plot per scenario and summary.md to --output.",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=Path("demo-out"),
        metavar="DIR",
        help="where plots, timelines and summary.md go (default demo-out)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a shorter diurnal scenario (6 h instead of 24 h)"
    )
    add_log_flags(parser, default_level="error", default_format="console")
    parser.set_defaults(handler=_run_demo)
