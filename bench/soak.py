"""A soak: ``hpa controller`` and ``hpa adapter`` against the lab under a changing load, with API
faults, for a long time; are memory, file descriptors and threads flat?

Run::

    .venv/bin/python -m bench.soak --minutes 30 --fault-rate 0.05

The lab starts (control plane, kwok, Prometheus, the exporter); ``--workloads`` Deployments
(default 20) each get an HPA on their offered load (External metric, 10 requests/s per replica,
scale-down window 0 s), and every minute each workload's load moves to a new value drawn from a
seeded random walk between 5 and 80 requests/s. The adapter serves the metrics APIs through the
aggregation layer; the controller reaches kube-apiserver through the fault proxy of
``tests/faults/proxy.py``, which answers ``--fault-rate`` of its requests with 409, 429, 500, 503,
410 on watches, or a closed connection.

Both processes run this checkout's code (``PYTHONPATH`` names it first). Every
``--sample-seconds`` the script reads each process's resident set (``VmRSS``), open file
descriptors (``/proc/PID/fd``) and threads (``Threads``) from ``/proc``, and scrapes its asyncio
task count (``hpa_asyncio_tasks``) from its ``/metrics`` (the controller's on a local port; the
adapter's with ``/metrics`` among its ``--authorization-always-allow-paths``). At the end it
prints, per process, the least-squares slope per hour of each series over the run after the
first ``--warmup-minutes`` and over its last half (a level still being reached flattens there, a
leak does not), and the first and last values. The goal is an RSS slope below 1 MB per hour.
Slopes are machine-independent enough to compare; absolute RSS is not asserted.

It also reads each process's anonymous memory from ``/proc/PID/smaps``, split into ``[heap]``
(glibc's main heap) and the other anonymous mappings (pymalloc's arenas, large blocks mapped on
their own). Unless ``--no-probe``, an in-process probe (``bench/tracing/sitecustomize.py``)
records pymalloc's arenas and bytes in use, glibc's ``mallinfo2``, the collector's tracked
objects and full collections and the ``SSLProtocol`` count, and at the end runs one full
collection in each process and prints what it freed. ``--series FILE`` writes every sample as
CSV (``process,source,seconds,column,value``).

``--tracemalloc DIR`` runs both processes with Python's allocation tracing
(``bench/tracing/sitecustomize.py``): a heap snapshot every ``--snapshot-minutes``, and at the
end, per process, the traced Python heap at each snapshot with its slope per hour, and the
allocation sites that grew most between the first snapshot after the warm-up and the last. A
Python heap that stays flat while RSS grows points at the allocator or native code, not at a
Python object kept alive. Tracing costs CPU and memory of its own: compare RSS slopes only
between runs without it.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import math
import os
import random
import ssl
import sysconfig
import time
import tracemalloc
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hpa.kube.runtime import TASKS_METRIC
from tests.e2e.controller_lab import (
    adapter_rules,
    deployment_manifest,
    free_port,
    hpa_manifest,
    offered_load_metric,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.faults.proxy import FaultProxy
from tests.lab.controlplane import ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig
from tests.lab.load_model import WorkloadProfile
from tests.lab.pki import issue_certificate

NAMESPACE = "soak"
USER = "hpa-controller-soak"
REPO = Path(__file__).resolve().parent.parent
TRACING = REPO / "bench" / "tracing"


SERIES_COLUMNS = ("rss_mb", "heap_mb", "other_anon_mb", "fds", "threads", "tasks")
"""Sampled from outside each process (``/proc``, ``/metrics``), in the ``--series`` CSV."""


@dataclass
class Series:
    times: list[float] = field(default_factory=list)
    values: dict[str, list[float]] = field(
        default_factory=lambda: {column: [] for column in SERIES_COLUMNS}
    )

    def add(self, seconds: float, **values: float) -> None:
        self.times.append(seconds)
        for column in SERIES_COLUMNS:
            self.values[column].append(values[column])


def read_anonymous(pid: int) -> tuple[float, float]:
    """The anonymous memory of ``pid`` in MB (``Anonymous`` of ``/proc/PID/smaps``): in the
    ``[heap]`` mapping (the C allocator's main ``brk`` area) and in every other mapping
    (pymalloc's arenas, blocks of 128 KiB or more mapped on their own, stacks)."""
    heap_kb = other_kb = 0
    in_heap = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):
            in_heap = line.rstrip().endswith("[heap]")
        elif first == "Anonymous:":
            kb = int(line.split()[1])
            if in_heap:
                heap_kb += kb
            else:
                other_kb += kb
    return heap_kb / 1024, other_kb / 1024


def read_process(pid: int) -> tuple[float, int, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_kb = int(fields["VmRSS"].split()[0])
    threads = int(fields["Threads"].strip())
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    return rss_kb / 1024, fds, threads


def scrape_tasks(url: str, context: ssl.SSLContext | None) -> float:
    """``hpa_asyncio_tasks`` from the ``/metrics`` at ``url`` (NaN when it does not answer)."""
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:  # noqa: S310
            text = response.read().decode()
    except OSError:
        return math.nan
    for line in text.splitlines():
        if line.startswith(f"{TASKS_METRIC} "):
            return float(line.split()[1])
    return math.nan


def flag_value(argv: Sequence[str], flag: str) -> str:
    """The value of ``--flag=value`` in a started process's ``argv``."""
    return next(arg.split("=", 1)[1] for arg in argv if arg.startswith(f"{flag}="))


def slope_per_hour(times: list[float], values: list[float]) -> float:
    """The least-squares slope of ``values`` over ``times`` (seconds), per hour; NaN values (a
    scrape that failed) are left out."""
    kept = [(t, v) for t, v in zip(times, values, strict=True) if not math.isnan(v)]
    times, values = [t for t, _ in kept], [v for _, v in kept]
    n = len(times)
    if n < 2:
        return 0.0
    mean_t, mean_v = sum(times) / n, sum(values) / n
    var = sum((t - mean_t) ** 2 for t in times)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values, strict=True))
    return cov / var * 3600


@contextlib.contextmanager
def traced(
    directory: Path | None, *, seconds: float, probes: Path | None, probe_seconds: float
) -> Iterator[None]:
    """While open, processes started run this checkout's code and, with ``directory``, inherit
    allocation tracing, with ``probes``, the in-process probe (``bench/tracing``)."""
    saved = dict(os.environ)
    probed = directory is not None or probes is not None
    paths = [str(TRACING), str(REPO)] if probed else [str(REPO)]
    python_path = [*paths, *filter(None, [os.environ.get("PYTHONPATH")])]
    os.environ["PYTHONPATH"] = os.pathsep.join(python_path)
    if directory is not None:
        os.environ["HPA_TRACEMALLOC_DIR"] = str(directory)
        os.environ["HPA_TRACEMALLOC_SECONDS"] = f"{seconds:g}"
    if probes is not None:
        os.environ["HPA_PROBE_DIR"] = str(probes)
        os.environ["HPA_PROBE_SECONDS"] = f"{probe_seconds:g}"
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def print_slopes(
    name: str,
    label: str,
    unit: str,
    times: list[float],
    values: list[float],
    *,
    warm: float,
    end: float,
) -> None:
    """First and last value of a series, its slope per hour after the warm-up and over the
    last half of the run (a level still being reached flattens there; a leak does not)."""
    known = [value for value in values if not math.isnan(value)] or [math.nan]
    after = [(t, v) for t, v in zip(times, values, strict=True) if t >= warm]
    late = [(t, v) for t, v in zip(times, values, strict=True) if t >= end / 2]
    print(
        f"  {name:10} {label:18} {known[0]:9.1f} -> {known[-1]:9.1f} {unit:2} slope "
        f"{slope_per_hour([t for t, _ in after], [v for _, v in after]):+9.2f} {unit}/h, "
        f"last half {slope_per_hour([t for t, _ in late], [v for _, v in late]):+9.2f} {unit}/h"
    )


def read_probe(path: Path) -> tuple[list[float], dict[str, list[float]]]:
    """The rows of a ``PID.probe.csv`` written by ``bench/tracing/sitecustomize.py``."""
    with path.open() as rows:
        reader = csv.DictReader(rows)
        records = list(reader)
        columns = [c for c in reader.fieldnames or () if c != "seconds"]
    times = [float(r["seconds"]) for r in records]
    return times, {c: [float(r[c]) for r in records] for c in columns}


def short(filename: str) -> str:
    for marker in ("/site-packages/", f"{sysconfig.get_path('stdlib')}/", f"{REPO}/"):
        if marker in filename:
            return filename.rsplit(marker, 1)[-1]
    return filename


def report_heap(name: str, pid: int, directory: Path, *, warmup_seconds: float) -> None:
    """The traced heap at each snapshot of ``pid``, its slope, and the sites that grew most."""
    paths = sorted(directory.glob(f"{pid}-*.snapshot"))
    if len(paths) < 2:
        print(f"  {name}: {len(paths)} heap snapshot(s), too few to compare")
        return
    times = [float(path.stem.rsplit("-", 1)[1]) for path in paths]
    sizes = []
    for path in paths:
        snapshot = tracemalloc.Snapshot.load(str(path))
        sizes.append(sum(stat.size for stat in snapshot.statistics("filename")) / 2**20)
    keep = [i for i, t in enumerate(times) if t >= warmup_seconds] or [0, len(paths) - 1]
    first = keep[0] if len(keep) > 1 else 0
    slope = slope_per_hour([times[i] for i in keep], [sizes[i] for i in keep])
    print(
        f"  {name:10} Python heap (traced) "
        + " ".join(f"{size:.1f}" for size in sizes)
        + f" MB, slope {slope:+.2f} MB/h after the warm-up"
    )
    before = tracemalloc.Snapshot.load(str(paths[first]))
    after = tracemalloc.Snapshot.load(str(paths[-1]))
    for stat in after.compare_to(before, "traceback")[:12]:
        if stat.size_diff <= 0:
            break
        frames = [f"{short(frame.filename)}:{frame.lineno}" for frame in stat.traceback[-4:]]
        print(
            f"    {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks  "
            + " <- ".join(reversed(frames))
        )


def write_series(
    path: Path,
    series: dict[str, Series],
    probed: dict[str, tuple[list[float], dict[str, list[float]]]],
) -> None:
    """One CSV row per process, source, sample and column (``process,source,seconds,column,
    value``); source ``proc`` holds :data:`SERIES_COLUMNS`, ``probe`` the in-process probe's."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["process", "source", "seconds", "column", "value"])
        for name, s in series.items():
            for column in SERIES_COLUMNS:
                for t, v in zip(s.times, s.values[column], strict=True):
                    writer.writerow([name, "proc", f"{t:.1f}", column, f"{v:.4f}"])
        for name, (times, columns) in probed.items():
            for column, values in columns.items():
                for t, v in zip(times, values, strict=True):
                    writer.writerow([name, "probe", f"{t:.1f}", column, f"{v:.4f}"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--warmup-minutes", type=float, default=5)
    parser.add_argument("--fault-rate", type=float, default=0.05)
    parser.add_argument("--workloads", type=int, default=20)
    parser.add_argument("--sample-seconds", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tracemalloc", type=Path, default=None, metavar="DIR")
    parser.add_argument("--snapshot-minutes", type=float, default=5)
    parser.add_argument("--series", type=Path, default=None, metavar="FILE")
    parser.add_argument("--no-probe", dest="probe", action="store_false")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    config = LabConfig(control_plane=ControlPlaneConfig(node_count=3))
    with Lab(config) as lab:
        work = lab.work_dir / "soak"
        work.mkdir()
        lab.kubectl("create", "namespace", NAMESPACE)
        every = args.snapshot_minutes * 60
        probes = work / "probes" if args.probe else None
        tracing = functools.partial(
            traced,
            args.tracemalloc,
            seconds=every,
            probes=probes,
            probe_seconds=args.sample_seconds,
        )
        with tracing():
            adapter = start_adapter(
                lab,
                work,
                rules=adapter_rules(window_seconds=5),
                extra_flags=(
                    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                ),
            )
        launched = {"adapter": time.monotonic()}
        client = issue_certificate(
            lab.pki.ca,
            work / USER,
            common_name=USER,
            organizations=("system:masters",),
            client=True,
        )
        proxy = FaultProxy(lab, user=USER, client=client, work=work, seed=args.seed)
        kubeconfig = proxy.start()
        names = [f"w{i:02d}" for i in range(args.workloads)]
        loads = {name: rng.uniform(5, 80) for name in names}
        for name in names:
            lab.add_workload(
                WorkloadProfile(NAMESPACE, name, {"app": name}), rps=round(loads[name], 1)
            )
            lab.apply(
                [
                    deployment_manifest(name, NAMESPACE, replicas=1),
                    hpa_manifest(
                        name,
                        NAMESPACE,
                        min_replicas=1,
                        max_replicas=10,
                        metrics=[offered_load_metric(name, "10")],
                        behavior={"scaleDown": {"stabilizationWindowSeconds": 0}},
                    ),
                ]
            )
        controller_port = free_port("127.0.0.1")
        with tracing():
            controller = start_controller(
                lab,
                USER,
                kubeconfig=kubeconfig,
                flags=[
                    "--horizontal-pod-autoscaler-sync-period=5s",
                    "--bind-address=127.0.0.1",
                    f"--port={controller_port}",
                ],
            )
        launched["controller"] = time.monotonic()
        proxy.set_rate(args.fault_rate)
        processes = {"controller": controller.process.pid, "adapter": adapter.process.pid}
        adapter_argv = [str(arg) for arg in adapter.process.args]  # type: ignore[union-attr]
        adapter_tls = ssl.create_default_context(cafile=str(lab.pki.ca.pair.cert_path))
        adapter_tls.check_hostname = False  # its certificate names the Service, not the address
        scrapes: dict[str, tuple[str, ssl.SSLContext | None]] = {
            "controller": (f"http://127.0.0.1:{controller_port}/metrics", None),
            "adapter": (
                f"https://{flag_value(adapter_argv, '--bind-address')}:"
                f"{flag_value(adapter_argv, '--secure-port')}/metrics",
                adapter_tls,
            ),
        }
        series = {name: Series() for name in processes}
        started = time.monotonic()
        end = started + args.minutes * 60
        next_load = started
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_load:
                for name in names:
                    loads[name] = min(80.0, max(5.0, loads[name] * rng.uniform(0.6, 1.6)))
                    lab.set_load(NAMESPACE, name, round(loads[name], 1))
                next_load = now + 60
            for name, pid in processes.items():
                rss, fds, threads = read_process(pid)
                heap, other = read_anonymous(pid)
                series[name].add(
                    now - started,
                    rss_mb=rss,
                    heap_mb=heap,
                    other_anon_mb=other,
                    fds=fds,
                    threads=threads,
                    tasks=scrape_tasks(*scrapes[name]),
                )
            lab.group.check_alive()
            time.sleep(args.sample_seconds)
        duration = time.monotonic() - started
        if probes is not None:
            # one full collection in each process: was what grew garbage awaiting a collection?
            for pid in processes.values():
                (probes / f"collect-{pid}").touch()
            time.sleep(args.sample_seconds + 5)
        print(
            f"bench.soak: {args.minutes:g} min, {args.workloads} HPAs, API faults at "
            f"{args.fault_rate:.0%} ({proxy.describe()}); slopes after {args.warmup_minutes:g} "
            "min of warm-up and over the last half"
        )
        warm = args.warmup_minutes * 60
        probed: dict[str, tuple[list[float], dict[str, list[float]]]] = {}
        for name, pid in processes.items():
            path = probes / f"{pid}.probe.csv" if probes is not None else None
            if path is not None and path.exists():
                times, columns = read_probe(path)
                shift = launched[name] - started
                probed[name] = ([t + shift for t in times], columns)
        for name, s in series.items():
            for label, column, unit in (
                ("RSS", "rss_mb", "MB"),
                ("anon [heap]", "heap_mb", "MB"),
                ("anon other", "other_anon_mb", "MB"),
                ("open fds", "fds", ""),
                ("threads", "threads", ""),
                ("tasks", "tasks", ""),
            ):
                print_slopes(name, label, unit, s.times, s.values[column], warm=warm, end=duration)
            if name in probed:
                times, columns = probed[name]
                for label, column, unit in (
                    ("pymalloc arenas", "arena_mb", "MB"),
                    ("pymalloc in use", "allocated_block_mb", "MB"),
                    ("malloc in use", "malloc_in_use_mb", "MB"),
                    ("malloc free", "malloc_free_mb", "MB"),
                    ("malloc mapped", "malloc_mapped_mb", "MB"),
                    ("gc objects", "gc_objects", ""),
                    ("gc full collections", "gc_full_collections", ""),
                    ("SSLProtocols", "ssl_protocols", ""),
                    ("traced heap", "traced_mb", "MB"),
                ):
                    kept = [
                        (t, v) for t, v in zip(times, columns[column], strict=True) if t <= duration
                    ]
                    if not all(math.isnan(v) for _, v in kept):
                        print_slopes(
                            name,
                            label,
                            unit,
                            [t for t, _ in kept],
                            [v for _, v in kept],
                            warm=warm,
                            end=duration,
                        )
                after = [i for i, v in enumerate(columns["collected"]) if not math.isnan(v)]
                if after and after[0] > 0:
                    i = after[0]
                    print(
                        f"  {name:10} one full collection at the end: "
                        f"{columns['collected'][i]:.0f} objects unreachable; pymalloc in use "
                        f"{columns['allocated_block_mb'][i - 1]:.2f} -> "
                        f"{columns['allocated_block_mb'][i]:.2f} MB, gc objects "
                        f"{columns['gc_objects'][i - 1]:.0f} -> {columns['gc_objects'][i]:.0f}"
                    )
        if args.series is not None:
            write_series(args.series, series, probed)
            print(f"  series: {args.series}")
        if args.tracemalloc is not None:
            for name, pid in processes.items():
                report_heap(name, pid, args.tracemalloc, warmup_seconds=warm)
        lab.group.end(controller.name)
        proxy.stop()
        stop_adapter(lab, adapter)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
