"""The ``hpa controller`` at scale: reconciles per CPU-second, sync interval, API load, RSS.

Run::

    .venv/bin/python -m bench.controller --hpas 10000 --pods-per-hpa 10 --periods 4
    .venv/bin/python -m bench.controller --lab --hpas 1000 --pods-per-hpa 2 --periods 4
    .venv/bin/python -m bench.controller --cold-start   # first full pass, 10,000 HPAs

With ``--lab`` the controller runs against the real lab (``tests.lab``: kube-apiserver, etcd,
kube-controller-manager, kube-scheduler, kwok nodes): ``--hpas`` Deployments of
``--pods-per-hpa`` kwok pods, created through kube-controller-manager, each with an HPA on CPU
utilization; the metrics come from ``hpa adapter`` behind the aggregation layer, over Prometheus
and the lab's workload exporter (every pod uses exactly the HPA's target, so nothing scales).
Requests are counted from kube-apiserver's audit log (every request of the controller's own
user); nothing slows metric calls down on purpose there.

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
import array
import asyncio
import collections
import contextlib
import cProfile
import functools
import json
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
from collections.abc import Awaitable, Callable, Iterator, Sequence
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
from hpa.controllers.settings import HorizontalControllerSettings, switch_flag
from hpa.kube.client import aclose_quietly, load_client
from hpa.kube.clock import SystemClock

GOAL_RECONCILES_PER_CPU_SECOND = 1000.0
GOAL_P99_INTERVAL_RATIO = 1.10
GOAL_CORE_REQUESTS_PER_HPA_PER_PERIOD = 0.05
GOAL_RSS_BYTES = 400 * 2**20


@dataclass(slots=True)
class Observations:
    """What the controller reports while it runs (in arrays of doubles: the bench's own
    bookkeeping should not show in the controller's RSS)."""

    at: array.array[float] = field(default_factory=lambda: array.array("d"))
    """Monotonic time of each effective sync interval's end."""
    seconds: array.array[float] = field(default_factory=lambda: array.array("d"))
    """Each effective sync interval."""

    def on_sync_interval(self, key: str, seconds: float) -> None:
        del key
        self.at.append(time.monotonic())
        self.seconds.append(seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    hpas: int
    pods: int
    period_seconds: float
    window_seconds: float
    peer: str
    peer_cpu_seconds: float
    metrics_backend: str
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


Counts = dict[tuple[str, str], int]
"""Requests by ``(api, "verb resource")``; ``api`` is ``core`` or ``metrics``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What the controller runs against."""

    kubeconfig: Path
    pods: int
    counts: Callable[[], Awaitable[Counts]]
    """Requests the controller made so far (cumulative)."""
    peer: str
    """The process whose CPU is reported beside the controller's (the API server side)."""
    peer_cpu_seconds: Callable[[], float]
    metrics_backend: str
    """How the metrics APIs answer (for the report)."""


@contextlib.contextmanager
def fixture_target(args: argparse.Namespace) -> Iterator[Target]:
    """``bench.fixture`` in a child process and a kubeconfig pointing at it."""
    process, url = start_fixture(args)

    async def counts() -> Counts:
        async with aiohttp.ClientSession() as session:
            return await fetch_counts(session, url)

    try:
        with tempfile.TemporaryDirectory(prefix="hpa-bench-") as directory:
            yield Target(
                kubeconfig=write_kubeconfig(Path(directory), url),
                pods=args.hpas * args.pods_per_hpa,
                counts=counts,
                peer="bench.fixture",
                peer_cpu_seconds=functools.partial(process_cpu_seconds, process.pid),
                metrics_backend=(
                    f"stub answering in {args.metrics_delay_seconds * 1000:g} ms, "
                    f"{args.slow_ratio:.0%} of calls in {args.slow_delay_seconds:g} s"
                ),
            )
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


LAB_USER = "hpa-bench-controller"
"""The controller's user in the lab (its own client certificate, ``system:masters``)."""
LAB_AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["{LAB_USER}"]
- level: None
"""
"""Metadata of every request of the controller's user, nothing else."""
LAB_LABEL = "hpa-bench"
LAB_CPU_REQUEST_MILLI = 20
LAB_CPU_USAGE_MILLI = 10
"""The exporter's idle CPU per pod: half the request, exactly the HPAs' 50 % target."""
HPAS_PER_NAMESPACE = 100
LAB_METRIC_WINDOW_SECONDS = 30
METRICS_GROUPS = frozenset({"metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io"})


class AuditCounts:
    """Requests of the controller's user in kube-apiserver's audit log, read as it grows."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0
        self._seen: set[str] = set()
        self._counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def read(self) -> Counts:
        """Every request seen so far (one per ``auditID``, whatever its stages)."""
        try:
            with self._path.open("rb") as log_file:
                log_file.seek(self._offset)
                chunk = log_file.read()
        except FileNotFoundError:
            return dict(self._counts)
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            event = json.loads(line)
            audit_id = str(event.get("auditID", ""))
            if audit_id in self._seen:
                continue
            self._seen.add(audit_id)
            self._counts[_audit_category(event)] += 1
        return dict(self._counts)


def _audit_category(event: dict[str, Any]) -> tuple[str, str]:
    ref = event.get("objectRef") or {}
    uri = str(event.get("requestURI", "")).partition("?")[0]
    group = str(ref.get("apiGroup") or "")
    if not group and uri.startswith("/apis/"):
        group = uri.split("/")[2]
    resource = str(ref.get("resource") or uri)
    if ref.get("subresource"):
        resource = f"{resource}/{ref['subresource']}"
    return ("metrics" if group in METRICS_GROUPS else "core", f"{event.get('verb')} {resource}")


def _lab_objects(namespace: str, indexes: range, *, pods_per_hpa: int) -> list[dict[str, Any]]:
    from tests.e2e.controller_lab import (
        cpu_utilization_metric,
        deployment_manifest,
        hpa_manifest,
    )

    objects: list[dict[str, Any]] = []
    target = LAB_CPU_USAGE_MILLI * 100 // LAB_CPU_REQUEST_MILLI
    for index in indexes:
        name = f"app-{index:05d}"
        deployment = deployment_manifest(
            name, namespace, replicas=pods_per_hpa, cpu_request=f"{LAB_CPU_REQUEST_MILLI}m"
        )
        deployment["metadata"]["labels"] = {LAB_LABEL: "hpa"}
        deployment["spec"]["template"]["metadata"]["labels"][LAB_LABEL] = "hpa"
        objects.append(deployment)
        objects.append(
            hpa_manifest(
                name,
                namespace,
                min_replicas=1,
                max_replicas=max(10, 2 * pods_per_hpa),
                metrics=[cpu_utilization_metric(target)],
            )
        )
    return objects


@contextlib.contextmanager
def lab_target(args: argparse.Namespace) -> Iterator[Target]:
    """The lab with ``--hpas`` Deployments of kwok pods, their HPAs and ``hpa adapter``."""
    from tests.e2e.controller_lab import adapter_rules, controller_kubeconfig, start_adapter
    from tests.lab.controlplane import ControlPlaneConfig
    from tests.lab.lab import Lab, LabConfig
    from tests.lab.load_model import WorkloadProfile

    pods = args.hpas * args.pods_per_hpa
    config = LabConfig(
        control_plane=ControlPlaneConfig(
            node_count=max(3, math.ceil(pods / 200)),
            node_pods="250",
            audit_policy=LAB_AUDIT_POLICY,
        ),
        keep_work_dir=args.lab_keep,
    )
    started = time.monotonic()

    def progress(text: str) -> None:
        print(f"[lab {time.monotonic() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    with Lab(config) as lab:
        progress(f"lab up; creating {args.hpas} Deployments of {args.pods_per_hpa} pods + HPAs")
        namespaces = [f"bench-{i:02d}" for i in range(math.ceil(args.hpas / HPAS_PER_NAMESPACE))]
        for number, namespace in enumerate(namespaces):
            lab.kubectl("create", "namespace", namespace)
            first = number * HPAS_PER_NAMESPACE
            indexes = range(first, min(args.hpas, first + HPAS_PER_NAMESPACE))
            lab.apply(_lab_objects(namespace, indexes, pods_per_hpa=args.pods_per_hpa))
            lab.add_workload(
                WorkloadProfile(
                    namespace=namespace,
                    workload="bench",
                    selector={LAB_LABEL: "hpa"},
                    base_cpu_milli=LAB_CPU_USAGE_MILLI,
                ),
                rps=0,
            )

        def ready_pods() -> int:
            listing = lab.kubectl_json("get", "deployments", "-A", "-l", f"{LAB_LABEL}=hpa")
            return sum(
                int((item.get("status") or {}).get("readyReplicas") or 0)
                for item in listing["items"]
            )

        lab.wait_for(
            lambda: ready_pods() >= pods,
            what=f"{pods} Ready pods",
            timeout_seconds=args.lab_ready_timeout,
            interval_seconds=5.0,
        )
        ready_at = time.monotonic()
        progress(f"{pods} pods Ready; starting hpa adapter")
        work = lab.work_dir / "bench-adapter"
        work.mkdir(exist_ok=True)
        start_adapter(lab, work, rules=adapter_rules(window_seconds=LAB_METRIC_WINDOW_SECONDS))

        def metrics_cover_every_pod() -> bool:
            for number, namespace in enumerate(namespaces):
                path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"
                answer = json.loads(lab.kubectl("get", "--raw", path))
                hpas_here = min(HPAS_PER_NAMESPACE, args.hpas - number * HPAS_PER_NAMESPACE)
                if len(answer.get("items") or ()) < hpas_here * args.pods_per_hpa:
                    return False
            return True

        lab.wait_for(
            metrics_cover_every_pod,
            what="PodMetrics for every pod",
            timeout_seconds=args.lab_ready_timeout,
            interval_seconds=5.0,
        )
        # a pod Ready for less than the metric window counts as not yet ready (its sample may
        # predate readiness: upstream's groupPods); wait that out so the HPAs are steady
        settle_seconds = LAB_METRIC_WINDOW_SECONDS + 5 - (time.monotonic() - ready_at)
        if settle_seconds > 0:
            progress(f"waiting {settle_seconds:.0f} s: samples must postdate readiness")
            time.sleep(settle_seconds)
        progress("metrics.k8s.io answers for every pod; starting the controller")
        audit = AuditCounts(lab.control_plane.audit_log_path)

        async def counts() -> Counts:
            return await asyncio.to_thread(audit.read)

        yield Target(
            kubeconfig=controller_kubeconfig(lab, LAB_USER),
            pods=pods,
            counts=counts,
            peer="kube-apiserver",
            peer_cpu_seconds=functools.partial(
                process_cpu_seconds, lab.group.components["kube-apiserver"].process.pid
            ),
            metrics_backend=(
                f"hpa adapter (Prometheus, {LAB_METRIC_WINDOW_SECONDS} s rate window) through "
                "kube-apiserver's aggregation layer; no injected slowness"
            ),
        )


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
    """Reconciles so far, collecting that one family (the cold start polls it every 50 ms; a
    whole-registry collect, with a gauge per HPA, would show in the controller's CPU)."""
    name = "horizontal_pod_autoscaler_controller_reconciliations"
    total = 0.0
    for family in registry.restricted_registry([f"{name}_total"]).collect():
        if family.name == name:
            total += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return int(total)


async def measure(args: argparse.Namespace, target: Target) -> Result:
    period = args.period
    kubeconfig = target.kubeconfig
    horizontal = HorizontalControllerSettings(
        sync_period_seconds=period,
        concurrent_syncs=args.concurrent_syncs,
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        metric_timeout_seconds=args.metric_timeout,
        shared_resource_metrics_reads=args.shared_resource_metrics_reads,
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
        # warm-up: one period, until every HPA had its first reconcile (status write), and
        # until the queue has no backlog (the first round's status writes and events are
        # done): what is measured then is the steady state, not the catching up
        warm_until = time.monotonic() + period
        while (
            time.monotonic() < warm_until
            or reconciles_total(registry) < args.hpas
            or len(app.queue) > 0
        ):
            if running.done():
                running.result()
            if time.monotonic() - warm_until > args.max_warmup_periods * period:
                print("warm-up did not finish: measuring anyway", file=sys.stderr)
                break
            await asyncio.sleep(0.5)
        warmup_seconds = time.monotonic() - started - startup_seconds
        steady_periods = args.periods - 1
        window_start = time.monotonic()
        counts_before = await target.counts()
        cpu_before = cpu_seconds()
        peer_cpu_before = target.peer_cpu_seconds()
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
        peer_cpu_after = target.peer_cpu_seconds()
        reconciles_after = reconciles_total(registry)
        counts_after = await target.counts()
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
        s
        for at, s in zip(observations.at, observations.seconds, strict=True)
        if window_start <= at - s and at <= window_end
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
        pods=target.pods,
        period_seconds=period,
        window_seconds=window_end - window_start,
        peer=target.peer,
        peer_cpu_seconds=peer_cpu_after - peer_cpu_before,
        metrics_backend=target.metrics_backend,
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


COLD_START_GOAL_SECONDS = 15.0


async def measure_cold_start(args: argparse.Namespace, target: Target) -> str:
    """``--cold-start``: from an empty process to every HPA's first reconcile finished (the first
    full pass: lists of every pod and HPA from the loopback fixture, caches synced, leadership,
    then one reconcile per HPA), in wall and CPU seconds of this (single-threaded) process."""
    settings = ControllerAppSettings(
        horizontal=HorizontalControllerSettings(
            sync_period_seconds=args.period,
            concurrent_syncs=args.concurrent_syncs,
            kube_api_qps=args.kube_api_qps,
            kube_api_burst=args.kube_api_burst,
            metric_timeout_seconds=args.metric_timeout,
            shared_resource_metrics_reads=args.shared_resource_metrics_reads,
        ),
        kubeconfig=str(target.kubeconfig),
        port=0,
        leader_elect=True,
        leader_elect_resource_namespace="kube-system",
    )
    clock = SystemClock()
    registry = CollectorRegistry()
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    if profiler is not None:
        profiler.enable()
    started = time.monotonic()
    cpu_started = cpu_seconds()
    client = await load_client(client_settings(settings), clock=clock, registry=registry)
    app: HorizontalControllerApp = build_app(settings, client, clock=clock, registry=registry)
    running = asyncio.create_task(app.run(), name="controller")
    synced_seconds = synced_cpu = math.nan
    try:
        deadline = started + args.max_warmup_periods * args.period + 120.0
        while reconciles_total(registry) < args.hpas:
            if running.done():
                running.result()
            if math.isnan(synced_seconds) and app.ready():
                synced_seconds = time.monotonic() - started
                synced_cpu = cpu_seconds() - cpu_started
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"only {reconciles_total(registry)} of {args.hpas} HPAs reconciled"
                )
            await asyncio.sleep(0.05)
        total_seconds = time.monotonic() - started
        total_cpu = cpu_seconds() - cpu_started
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await running
        await aclose_quietly(client)
    hwm, _ = memory_bytes()
    peer_cpu = target.peer_cpu_seconds()
    counts = await target.counts()
    ok = total_seconds <= COLD_START_GOAL_SECONDS
    metrics_requests = sum(n for (api, _), n in counts.items() if api == "metrics")
    core_requests = sum(n for (api, _), n in counts.items() if api != "metrics")
    return "\n".join(
        [
            f"cold start: {args.hpas:,} HPAs, {target.pods:,} pods listed from the loopback "
            f"fixture ({target.metrics_backend})",
            "",
            "| step | wall s | CPU s |",
            "| --- | ---: | ---: |",
            f"| lists and caches synced, leading | {synced_seconds:.2f} | {synced_cpu:.2f} |",
            f"| first reconcile of every HPA | {total_seconds:.2f} | {total_cpu:.2f} |",
            "",
            f"first full pass in {total_seconds:.2f} s (goal <= {COLD_START_GOAL_SECONDS:g} s on "
            f"one core: {verdict(ok)}); peak RSS {hwm / 2**20:.0f} MiB",
            f"requests: {core_requests:,} to the Kubernetes API, {metrics_requests:,} to the "
            f"metrics APIs; {target.peer} used {peer_cpu:.2f} CPU s (from its start)",
        ]
    )


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def render(
    result: Result,
    *,
    command: str,
    load: tuple[tuple[float, float, float], tuple[float, float, float]],
) -> str:
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
            "p99 sync interval / period",
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
        f"reconciles {result.reconciles:,} in {result.cpu_seconds:.1f} CPU s "
        f"({result.cpu_seconds / result.window_seconds:.2f} of a core over "
        f"{result.window_seconds:.1f} s); {result.peer} used "
        f"{result.peer_cpu_seconds / result.window_seconds:.2f} of a core",
        f"metrics APIs: {result.metrics_backend}",
        "load average (1/5/15 min) before {:.2f} {:.2f} {:.2f}, after {:.2f} {:.2f} {:.2f}".format(
            *load[0], *load[1]
        ),
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
    parser.add_argument(
        "--lab",
        action="store_true",
        help="run against the real lab (tests.lab) with kwok pods and hpa adapter; "
        "defaults to 1,000 HPAs of 2 pods",
    )
    parser.add_argument("--hpas", type=int, help="HPAs (default 10,000; --lab: 1,000)")
    parser.add_argument(
        "--pods-per-hpa", type=int, help="pods of each HPA's Deployment (default 10; --lab: 2)"
    )
    parser.add_argument(
        "--lab-keep", action="store_true", help="--lab: keep the lab's work dir (logs) afterwards"
    )
    parser.add_argument(
        "--lab-ready-timeout",
        type=float,
        default=1200.0,
        help="--lab: seconds to wait for every pod to be Ready and every HPA to have metrics",
    )
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
        "--shared-resource-metrics-reads",
        type=switch_flag,
        default=True,
        metavar="BOOL",
        help="--horizontal-pod-autoscaler-shared-resource-metrics-reads (default true)",
    )
    parser.add_argument(
        "--max-warmup-periods",
        type=float,
        default=6.0,
        help="give up waiting for every HPA's first reconcile after this many extra periods",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="write a cProfile of the steady window (--cold-start: of the first pass) to FILE",
    )
    parser.add_argument(
        "--memory-top",
        type=int,
        default=0,
        metavar="N",
        help="trace allocations (slow) and print the N biggest sites still alive at the end",
    )
    parser.add_argument(
        "--cold-start",
        action="store_true",
        help="measure the first full reconcile pass from an empty process (goal <= 15 s for "
        "10,000 HPAs of 10 pods)",
    )
    args = parser.parse_args(argv)
    if args.hpas is None:
        args.hpas = 1000 if args.lab else 10_000
    if args.pods_per_hpa is None:
        args.pods_per_hpa = 2 if args.lab else 10
    if args.periods < 2:
        parser.error("--periods must be at least 2 (one warm-up period, then steady ones)")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    quiet_logs(logging.WARNING)
    command = shlex.join(
        [".venv/bin/python", "-m", "bench.controller", *(sys.argv[1:] if argv is None else argv)]
    )
    load_before = os.getloadavg()
    if args.cold_start:
        with lab_target(args) if args.lab else fixture_target(args) as target:
            report = asyncio.run(measure_cold_start(args, target))
        print(f"$ {command}\n{report}")
        return
    with lab_target(args) if args.lab else fixture_target(args) as target:
        result = asyncio.run(measure(args, target))
    load_after = os.getloadavg()
    print(render(result, command=command, load=(load_before, load_after)))


if __name__ == "__main__":
    main()
