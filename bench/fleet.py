"""The adapter at fleet scale (``python -m bench.adapter --fleet``): batched evaluation versus
one query per request, against a real Prometheus holding a generated TSDB block.

Run::

    .venv/bin/python -m bench.adapter --fleet                  # 100,000 pods, 10,000 HPAs
    .venv/bin/python -m bench.adapter --fleet --scale 0.05     # the same shape, 5 % of the size

What runs:

* Debian's Prometheus (``tests.lab.prometheus.PrometheusServer``) on a TSDB block written by
  ``promtool tsdb create-blocks-from openmetrics``: ``http_requests_total`` for
  ``--fleet-pods`` pods
  (1,000 per namespace, 10 per HPA, a counter every 30 s from 5 minutes before the run to
  ``--window`` after), ``fleet_metric_<i>`` for ``--metric-names`` metric names, and
  ``fleet_bulk`` for ``--bulk-series`` series (the relist's memory case). No scraping: the
  CPU Prometheus spends is the queries' alone.
* a fixture process: the fake Kubernetes API of the adapter tests (``FakeKubeAuth``) serving the
  pods for the adapter's pod watch, the authentication ConfigMap and SubjectAccessReviews;
* ``hpa adapter`` processes, one per phase, serving TLS with front-proxy authentication;
* this process: the open-loop load generator of ``bench.adapter`` (keep-alive TLS, latency from
  the scheduled send time), cycling through one request per simulated HPA
  (``namespaces/<ns>/pods/*/http_requests_per_second?labelSelector=app=<hpa>``).

Phases:

1. **per request** (``--batch-max-age=0s``): ``--per-request-rate`` requests/s for
   ``--per-request-seconds``; Prometheus CPU seconds per query, times the fleet's query rate
   (HPAs / period) gives the cores Prometheus would spend for the whole fleet;
2. **batched** (``--batch-max-age=7.5s``, half the HPA sync period, and
   ``--staleness-probe-reuse`` from ``--probe-reuse``, default 15 s): ``--rate`` requests/s
   (default 1,000)
   for ``--seconds``: latency p50/p99, errors, adapter CPU, and Prometheus CPU in cores above its
   idle rate (measured just before);
3. **discovery**: ``GET /apis/custom.metrics.k8s.io/v1beta2`` at ``--discovery-rate`` for 10 s on
   the batched adapter, whose rules name ``--metric-names`` metrics, accepting gzip as client-go
   does;
4. **relist memory**: an adapter whose rules also match ``fleet_bulk``: its first relist's
   duration and its RSS after it (and its peak), minus the RSS of the same adapter without the
   ``fleet_bulk`` rule, per series.

``--phases per-request,batched,discovery,relist`` (the default) chooses which run, e.g.
``--phases discovery,relist``; the block is the same whichever run. ``--batched-flag=FLAG``
passes one more flag to the batched adapter; ``--loop-lag`` runs it under
``LOOP_LAG_RECORDER`` and prints what held its event loop during the measured load.

Results: docs/performance.md ("Fleet scale").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shlex
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.adapter import (
    GC_CALLBACK,
    HPA_USER,
    ConnectionPool,
    LoadPath,
    Processes,
    Segment,
    adapter_argv,
    authentication_configmap,
    free_port,
    http_request,
    open_loop,
    percentile,
    process_cpu_seconds,
    slow_answer_lines,
    stop_on_signals,
    tail,
    wait_for_answer,
    wait_for_file,
    write_kubeconfig,
)

PODS_PER_NAMESPACE = 1000
PODS_PER_HPA = 10
STEP_SECONDS = 30
HISTORY_SECONDS = 300
PERIOD_SECONDS = 15.0
MAX_CONNECTIONS = 64
"""The load generator's connections to the adapter at most: past that a request waits in line
for a free one (the wait counts in its latency), as behind the API server's aggregator, whose
callers (the HPA controller's 5 workers, the VPA recommender) have bounded concurrency. Without
a bound, a pause of the adapter made the generator open a TLS connection per waiting request
(thousands a second, each a handshake for the adapter) until the adapter ran out of file
descriptors."""
METRIC = "http_requests_per_second"
RULES = """\
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"fleet_metric_.*",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""
PHASES = ("per-request", "batched", "discovery", "relist")
BULK_RULE = """\
- seriesQuery: 'fleet_bulk{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


@dataclass(frozen=True)
class Fleet:
    pods: int
    hpas: int
    metric_names: int
    bulk_series: int

    def namespace_of(self, pod: int) -> str:
        return f"ns-{pod // PODS_PER_NAMESPACE}"

    def hpa_of(self, pod: int) -> str:
        return f"hpa-{pod // PODS_PER_HPA}"


def write_openmetrics(path: Path, fleet: Fleet, *, start: int, window_seconds: int) -> int:
    """The block's samples as OpenMetrics text; returns the sample count."""
    times = list(range(start - HISTORY_SECONDS, start + window_seconds + 1, STEP_SECONDS))
    count = 0
    with path.open("w") as out:
        out.write("# TYPE http_requests_total gauge\n")
        for pod in range(fleet.pods):
            labels = f'namespace="{fleet.namespace_of(pod)}",pod="pod-{pod}"'
            slope = 0.5 * (pod % 7 + 1)
            out.writelines(
                f"http_requests_total{{{labels}}} {slope * (t - times[0])} {t}\n" for t in times
            )
            count += len(times)
        for index in range(fleet.metric_names):
            out.write(f"# TYPE fleet_metric_{index} gauge\n")
            out.write(f'fleet_metric_{index}{{namespace="ns-0",pod="pod-0"}} 1 {times[0]}\n')
            out.write(f'fleet_metric_{index}{{namespace="ns-0",pod="pod-0"}} 1 {times[-1]}\n')
            count += 2
        if fleet.bulk_series:
            out.write("# TYPE fleet_bulk gauge\n")
            for index in range(fleet.bulk_series):
                labels = f'namespace="bulk-{index // 10000}",pod="bulk-{index}"'
                out.write(f"fleet_bulk{{{labels}}} 1 {start - 60}\n")
                out.write(f"fleet_bulk{{{labels}}} 1 {times[-1]}\n")
                count += 2
        out.write("# EOF\n")
    return count


# ---------------------------------------------------------------- the fixture process


async def run_fixture(directory: Path, fleet: Fleet, pki_dir: Path) -> None:
    from tests.fakes.kubeauth import FakeKubeAuth

    pods = [
        {
            "metadata": {
                "name": f"pod-{pod}",
                "namespace": fleet.namespace_of(pod),
                "uid": f"uid-{pod}",
                "labels": {"app": fleet.hpa_of(pod)},
                "resourceVersion": "1",
            },
            "spec": {"containers": [{"name": "app"}], "nodeName": "node-1"},
            "status": {"phase": "Running"},
        }
        for pod in range(fleet.pods)
    ]
    configmap = authentication_configmap(pki_dir)
    stopping = stop_on_signals()
    async with FakeKubeAuth(configmap=configmap, pods=pods) as kube:
        kube.sar_rule = lambda spec: (spec["user"] == HPA_USER, "")
        ready = directory / "fixture.json"
        partial = ready.with_suffix(".tmp")
        partial.write_text(json.dumps({"kube_url": kube.url}))
        partial.replace(ready)
        await stopping.wait()


LOOP_LAG_RECORDER = f"""\
import asyncio, gc, json, runpy, signal, sys, threading, time, traceback
out, sys.argv = sys.argv[1], sys.argv[2:]
TICK = 0.01
main, beat, ticks, stalls = threading.get_ident(), [0.0], [], []
born, census = time.monotonic(), {{}}
async def tick():
    while True:
        before = time.monotonic()
        await asyncio.sleep(TICK)
        beat[0] = now = time.monotonic()
        ticks.append((now, now - before - TICK))
def watch():
    seen = 0.0
    while True:
        time.sleep(TICK / 2)
        blocked = time.monotonic() - beat[0]
        if beat[0] and blocked > 5 * TICK and beat[0] != seen and len(stalls) < 5000:
            seen = beat[0]
            frame = sys._current_frames().get(main)
            stack = traceback.format_stack(frame, limit=14) if frame is not None else []
            stalls.append((time.monotonic(), blocked, "".join(stack)))
{GC_CALLBACK}full = []
def record_full(phase, info):
    if phase == "start" and info["generation"] == 2:
        full.append([time.monotonic(), len(gc.get_objects(2)), gc.get_count()])
    elif phase == "stop" and info["generation"] == 2 and full:
        full[-1].append(info["collected"])
gc.callbacks.append(record_full)
def count_heap(*_):
    found = gc.get_objects()
    census["tracked"], census["frozen"] = len(found), gc.get_freeze_count()
    kinds = {{}}
    for item in found:
        kinds[type(item).__name__] = kinds.get(type(item).__name__, 0) + 1
    census["kinds"] = sorted(kinds.items(), key=lambda kind: -kind[1])[:12]
    del found
signal.signal(signal.SIGUSR1, count_heap)
original = asyncio.Runner.run
def run(self, main, **kwargs):
    async def ticked():
        asyncio.get_running_loop().create_task(tick())
        return await main
    return original(self, ticked(), **kwargs)
asyncio.Runner.run = run
threading.Thread(target=watch, daemon=True).start()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
try:
    runpy.run_module("hpa", run_name="__main__", alter_sys=True)
finally:
    with open(out, "w") as file:
        json.dump(
            {{
                "ticks": ticks, "stalls": stalls, "gc": pauses, "born": born, "heap": census,
                "full": full,
            }},
            file,
        )
"""
"""``python -c LOOP_LAG_RECORDER FILE hpa adapter ...`` (``--loop-lag``): the adapter with a task
that sleeps 10 ms at a time on its event loop, recording how late each wake-up is (the loop's
lag), a thread that records the loop's stack whenever the loop has not woken that task for
50 ms (what blocks it), every cyclic collection's pause, and on ``SIGUSR1`` a census of the
objects the collector tracks (the bench sends it after the load); written to FILE at exit."""


# ---------------------------------------------------------------- measuring


def memory_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in KiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


@dataclass
class Phase:
    name: str
    segment: Segment
    prometheus_cpu_seconds: float = 0.0
    prometheus_idle_cores: float = 0.0
    queries: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    measured: tuple[float, float] = (0.0, 0.0)
    """When the measured load started and ended (``time.monotonic()``, the system's clock)."""
    loop: list[str] = field(default_factory=list)
    """The adapter's event-loop lag during the measured load (``--loop-lag``), as lines."""


def hpa_requests(fleet: Fleet, host: str, port: int) -> list[bytes]:
    headers = [("X-Remote-User", HPA_USER), ("X-Remote-Group", "system:serviceaccounts")]
    out = []
    for hpa in range(fleet.hpas):
        pod = hpa * PODS_PER_HPA
        selector = urllib.parse.quote(f"app={fleet.hpa_of(pod)}")
        target = (
            f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{fleet.namespace_of(pod)}/pods/*/"
            f"{METRIC}?labelSelector={selector}"
        )
        out.append(http_request(host, port, target, headers))
    random.Random(23).shuffle(out)
    return out


async def scrape_metric(url: str, context: ssl.SSLContext, name: str) -> float:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
        session.get(url + "/metrics", headers={"X-Remote-User": HPA_USER}, ssl=context) as response,
    ):
        text = await response.text()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.split()[-1])
    return total


QUERIES_SENT = (
    'prometheus_adapter_prometheus_client_request_duration_seconds_count{path="/api/v1/query"}'
)
ANSWER_PATHS = ("snapshot", "snapshot_late", "per_request_late")
"""``prometheus_adapter_batch_requests_total`` paths reported for the batched phase."""


def answered_by(path: str) -> str:
    return f'prometheus_adapter_batch_requests_total{{api="custom",path="{path}"}}'


async def load_phase(
    name: str,
    *,
    url: str,
    context: ssl.SSLContext,
    requests: list[bytes],
    items: int,
    marker: bytes,
    rate: float,
    seconds: float,
    adapter_pid: int,
    prometheus_pid: int,
) -> Phase:
    host, _, port = url.removeprefix("https://").partition(":")
    pool = ConnectionPool(host, int(port), context)
    await pool.fill(max(8, int(rate * 0.02)))
    segment = Segment(name)
    path = LoadPath(
        name=name,
        pool=pool,
        request=requests[0],
        item_marker=marker,
        items=items,
        requests=tuple(requests),
    )
    try:
        # Prometheus's idle rate, before any load (an evaluation of the warm-up may still run
        # after it)
        idle_before = process_cpu_seconds(prometheus_pid)
        await asyncio.sleep(3.0)
        idle_cores = (process_cpu_seconds(prometheus_pid) - idle_before) / 3.0
        # warm-up: connections, authorization cache, the first batched evaluation, and every
        # request asked once (up to one HPA period) as an adapter serving a fleet has been: the
        # first request for an HPA builds what later ones reuse (its plan, its pods' object
        # references). Then 3 s more of the same load, not a pause: a fleet does not stop
        # asking, and a batch that nobody asks for past its max age is evaluated afresh by the
        # next request, which waits for it (a pause here made the load's first 2 s wait for
        # that evaluation whenever the snapshot expired during it).
        await open_loop(
            path,
            segment,
            rate_per_second=rate,
            duration_seconds=warm_up_seconds(len(requests), rate) + SETTLE_SECONDS,
            record=False,
            max_connections=MAX_CONNECTIONS,
        )
        queries_before = await scrape_metric(url, context, QUERIES_SENT)
        paths_before = [await scrape_metric(url, context, answered_by(p)) for p in ANSWER_PATHS]
        adapter_before = process_cpu_seconds(adapter_pid)
        prometheus_before = process_cpu_seconds(prometheus_pid)
        started = time.monotonic()
        await open_loop(
            path,
            segment,
            rate_per_second=rate,
            duration_seconds=seconds,
            max_connections=MAX_CONNECTIONS,
        )
        ended = time.monotonic()
        segment.wall_seconds = ended - started
        segment.adapter_cpu_seconds = process_cpu_seconds(adapter_pid) - adapter_before
        prometheus_cpu = process_cpu_seconds(prometheus_pid) - prometheus_before
        queries = await scrape_metric(url, context, QUERIES_SENT) - queries_before
        paths = {
            path: await scrape_metric(url, context, answered_by(path)) - before
            for path, before in zip(ANSWER_PATHS, paths_before, strict=True)
        }
    finally:
        pool.close()
    return Phase(
        name, segment, prometheus_cpu, idle_cores, queries, extra=paths, measured=(started, ended)
    )


SETTLE_SECONDS = 3.0
"""The warm-up's load goes on this long after every distinct request was asked once."""


def warm_up_seconds(requests: int, rate: float) -> float:
    """The warm-up before a phase's measured load: every distinct request once, at least 3 s
    and at most one HPA period (``PERIOD_SECONDS``)."""
    return max(3.0, min(requests / rate, PERIOD_SECONDS))


async def wait_ready(url: str, context: ssl.SSLContext, probe: bytes, items: int) -> None:
    async with aiohttp.ClientSession() as session:
        await wait_for_answer(session, url, context, probe.split(b" ", 2)[1].decode(), items=items)


@dataclass
class Result:
    fleet: Fleet
    samples: int
    block_seconds: float
    phases: list[Phase]
    phase_names: tuple[str, ...] = PHASES
    relist_seconds: float = float("nan")
    baseline_kib: int = 0
    bulk_kib: int = 0
    bulk_peak_kib: int = 0
    extra: list[str] = field(default_factory=list)
    failure: str = ""
    """Why the run stopped early (the phases before it are still reported)."""


def start_adapter(
    processes: Processes,
    args: argparse.Namespace,
    workdir: Path,
    *,
    name: str,
    rules: str,
    kube_url: str,
    prometheus_url: str,
    extra: Sequence[str],
    loop_lag: Path | None = None,
) -> tuple[str, Any]:
    config = workdir / f"rules-{name}.yaml"
    config.write_text(rules)
    port = free_port()
    log_path = workdir / f"adapter-{name}.log"
    argv = adapter_argv(
        python=sys.executable,
        profile=None,
        config=config,
        port=port,
        pki=workdir / "pki",
        kubeconfig=write_kubeconfig(workdir / "kubeconfig", kube_url),
        prometheus_url=prometheus_url,
        max_sample_age=None,
    )
    if loop_lag is not None:
        argv[1:2] = ["-c", LOOP_LAG_RECORDER, str(loop_lag)]
    process = processes.spawn([*argv, *extra], log_path=log_path, source=args.adapter_source)
    return f"https://127.0.0.1:{port}", process


def stop(process: Any) -> None:
    import os

    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def run(args: argparse.Namespace, workdir: Path) -> Result:
    from bench.adapter import _prometheus_pid
    from tests.adapter.server.tlsserver import client_context, create_test_pki
    from tests.lab.prometheus import PrometheusServer

    fleet = Fleet(
        pods=round(args.fleet_pods * args.scale),
        hpas=round(args.fleet_pods * args.scale) // PODS_PER_HPA,
        metric_names=round(args.metric_names * args.scale),
        bulk_series=round(args.bulk_series * args.scale),
    )
    processes = Processes()
    pki = create_test_pki(workdir / "pki")
    context = client_context(pki, pki.front_proxy_client)
    start = int(time.time())
    block_started = time.monotonic()
    source = workdir / "fleet.om"
    samples = write_openmetrics(source, fleet, start=start, window_seconds=args.window)
    prometheus = PrometheusServer(workdir=workdir / "prometheus")
    prometheus.backfill_openmetrics(source.read_text())
    source.unlink()
    block_seconds = time.monotonic() - block_started
    (workdir / "fixture.json").unlink(missing_ok=True)
    fixture_log = workdir / "fixture.log"
    fixture = processes.spawn(
        [
            sys.executable,
            "-m",
            "bench.fleet",
            f"--fixture={workdir}",
            f"--pods={fleet.pods}",
        ],
        log_path=fixture_log,
    )
    result = Result(fleet, samples, block_seconds, [], phase_names=tuple(args.phases))
    try:
        prometheus.start()
        prometheus_pid = _prometheus_pid(workdir / "prometheus")
        wait_for_file(workdir / "fixture.json", fixture, log_path=fixture_log)
        kube_url = json.loads((workdir / "fixture.json").read_text())["kube_url"]
        marker = b'"describedObject":'

        # 1. per request
        if "per-request" in args.phases:
            url, adapter = start_adapter(
                processes,
                args,
                workdir,
                name="per-request",
                rules=RULES,
                kube_url=kube_url,
                prometheus_url=prometheus.url,
                extra=["--batch-max-age=0s"],
            )
            requests = hpa_requests(fleet, "127.0.0.1", int(url.rpartition(":")[2]))
            try:
                asyncio.run(wait_ready(url, context, requests[0], PODS_PER_HPA))
                result.phases.append(
                    asyncio.run(
                        load_phase(
                            "per request",
                            url=url,
                            context=context,
                            requests=requests,
                            items=PODS_PER_HPA,
                            marker=marker,
                            rate=args.per_request_rate,
                            seconds=args.per_request_seconds,
                            adapter_pid=adapter.pid,
                            prometheus_pid=prometheus_pid,
                        )
                    )
                )
            except RuntimeError as error:
                raise RuntimeError(
                    f"{error}\n{tail(workdir / 'adapter-per-request.log')}"
                ) from None
            finally:
                stop(adapter)

        # 2. batched, 3. discovery (on the same adapter)
        if {"batched", "discovery"} & set(args.phases):
            url, adapter = start_adapter(
                processes,
                args,
                workdir,
                name="batched",
                rules=RULES,
                kube_url=kube_url,
                prometheus_url=prometheus.url,
                extra=[
                    "--batch-max-age=7.5s",
                    f"--staleness-probe-reuse={args.probe_reuse}",
                    *args.batched_flag,
                ],
                loop_lag=workdir / "loop-lag.json" if args.loop_lag else None,
            )
            requests = hpa_requests(fleet, "127.0.0.1", int(url.rpartition(":")[2]))
            try:
                asyncio.run(wait_ready(url, context, requests[0], PODS_PER_HPA))
                if "batched" in args.phases:
                    result.phases.append(
                        asyncio.run(
                            load_phase(
                                "batched",
                                url=url,
                                context=context,
                                requests=requests,
                                items=PODS_PER_HPA,
                                marker=marker,
                                rate=args.rate,
                                seconds=args.seconds,
                                adapter_pid=adapter.pid,
                                prometheus_pid=prometheus_pid,
                            )
                        )
                    )
                if "discovery" in args.phases:
                    # as client-go and kubectl ask: gzip accepted (the client decompresses)
                    discovery = http_request(
                        "127.0.0.1",
                        int(url.rpartition(":")[2]),
                        "/apis/custom.metrics.k8s.io/v1beta2",
                        [
                            ("X-Remote-User", HPA_USER),
                            ("X-Remote-Group", "system:serviceaccounts"),
                            ("Accept-Encoding", "gzip"),
                        ],
                    )
                    result.phases.append(
                        asyncio.run(
                            load_phase(
                                "discovery",
                                url=url,
                                context=context,
                                requests=[discovery],
                                items=2 * fleet.metric_names + 2,
                                marker=b'"kind":"MetricValueList"',
                                rate=args.discovery_rate,
                                seconds=10.0,
                                adapter_pid=adapter.pid,
                                prometheus_pid=prometheus_pid,
                            )
                        )
                    )
            except RuntimeError as error:
                raise RuntimeError(f"{error}\n{tail(workdir / 'adapter-batched.log')}") from None
            finally:
                if args.loop_lag and adapter.poll() is None:
                    adapter.send_signal(signal.SIGUSR1)  # the heap census (LOOP_LAG_RECORDER)
                    time.sleep(5.0)
                stop(adapter)
            if args.loop_lag:
                for phase in result.phases:
                    if phase.name == "batched":
                        phase.loop = loop_lag_lines(workdir / "loop-lag.json", phase.measured)

        # 4. relist memory: the same adapter without and with the bulk rule
        if "relist" in args.phases and fleet.bulk_series:
            for name, rules in (("baseline", RULES), ("bulk", RULES + BULK_RULE)):
                url, adapter = start_adapter(
                    processes,
                    args,
                    workdir,
                    name=name,
                    rules=rules,
                    kube_url=kube_url,
                    prometheus_url=prometheus.url,
                    extra=[],
                )
                probe = hpa_requests(fleet, "127.0.0.1", int(url.rpartition(":")[2]))[0]
                try:
                    asyncio.run(wait_ready(url, context, probe, PODS_PER_HPA))
                    relist_seconds = asyncio.run(
                        scrape_metric(url, context, "prometheus_adapter_relist_duration_seconds")
                    )
                    time.sleep(2.0)
                    rss_kib, peak_kib = memory_kib(adapter.pid)
                except RuntimeError as error:
                    raise RuntimeError(
                        f"{error}\n{tail(workdir / f'adapter-{name}.log')}"
                    ) from None
                finally:
                    stop(adapter)
                if name == "baseline":
                    result.baseline_kib = rss_kib
                else:
                    result.relist_seconds = relist_seconds
                    result.bulk_kib, result.bulk_peak_kib = rss_kib, peak_kib
        return result
    except (RuntimeError, OSError, aiohttp.ClientError) as error:  # TimeoutError is an OSError
        done = ", ".join(phase.name for phase in result.phases) or "none"
        result.failure = f"{type(error).__name__} after the phases {done}: {error}"
        return result
    finally:
        processes.stop_all()
        prometheus.stop()


def loop_lag_lines(path: Path, window: tuple[float, float]) -> list[str]:
    """The ``LOOP_LAG_RECORDER`` file's figures within ``window``: the lag of the loop's
    wake-ups, its stalls of 50 ms or more with the stack found, and the collections' pauses."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return [f"loop lag: no record ({error})"]
    start, end = window
    lags = [lag for at, lag in data["ticks"] if start <= at <= end]
    stalls = [(at, blocked, stack) for at, blocked, stack in data["stalls"] if start <= at <= end]
    pauses = [(gen, pause) for gen, pause, at in data["gc"] if start <= at <= end]
    full = [
        f"{pause * 1000:.0f} ms at {at - data['born']:.0f} s"
        for gen, pause, at in data["gc"]
        if gen == 2 and start <= at <= end
    ]
    lines = [
        f"adapter loop lag ({len(lags)} wake-ups of a 10 ms sleep): p50 "
        f"{percentile(lags, 0.5) * 1000:.1f} ms, p99 {percentile(lags, 0.99) * 1000:.1f} ms, "
        f"max {max(lags, default=0.0) * 1000:.1f} ms, wake-ups later than 20 ms: "
        f"{sum(lag > 0.02 for lag in lags)}; {len(stalls)} stalls seen of 50 ms or more; "
        f"collections {len(pauses)}, longest "
        f"{max((pause for _, pause in pauses), default=0.0) * 1000:.1f} ms (generation 2: "
        f"{sum(gen == 2 for gen, _ in pauses)}: {', '.join(full) or 'none'} after the adapter "
        f"started); longer than 20 ms: {sorted(round(p * 1000) for _, p in pauses if p > 0.02)}",
        f"  stalls (s into the load, ms): "
        f"{[(round(at - start, 1), round(blocked * 1000)) for at, blocked, _ in stalls]}",
        f"  heap after the load: {data['heap']}",
        "  full collections (s after start, objects in the oldest generation at the start, "
        f"counts, collected): {[[round(f[0] - data['born']), *f[1:]] for f in data['full']]}",
    ]
    counts: dict[str, int] = {}
    for _, _, stack in stalls:
        frames = [line.strip() for line in stack.splitlines() if line.strip().startswith("File")]
        key = " <- ".join(reversed(frames[-4:]))
        counts[key] = counts.get(key, 0) + 1
    for key, count in sorted(counts.items(), key=lambda item: -item[1])[:5]:
        lines.append(f"  stall x{count}: {key}")
    return lines


def render(result: Result, *, command: str) -> str:
    fleet = result.fleet

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.2f}"

    lines = [
        f"$ {command}",
        f"fleet: {fleet.pods:,} pods, {fleet.hpas:,} HPAs every {PERIOD_SECONDS:g} s, "
        f"{fleet.metric_names:,} extra metric names, {fleet.bulk_series:,} bulk series; "
        f"block of {result.samples:,} samples written in {result.block_seconds:.0f} s",
        "",
        "| phase | sent | errors | unanswered | p50 ms | p99 ms | max ms | adapter CPU cores "
        "| queries sent | Prometheus CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for phase in result.phases:
        segment = phase.segment
        wall = segment.wall_seconds or float("nan")
        lines.append(
            f"| {phase.name} | {segment.sent} | {segment.errors} "
            f"| {segment.sent - segment.errors - segment.completed} | {ms(segment.p(0.5))} "
            f"| {ms(segment.p(0.99))} | {ms(max(segment.latencies_seconds, default=0.0))} "
            f"| {segment.adapter_cpu_seconds / wall:.3f} | {phase.queries:.0f} "
            f"| {phase.prometheus_cpu_seconds:.2f} |"
        )
    fleet_rate = fleet.hpas / PERIOD_SECONDS
    lines.append("")
    for phase in result.phases:
        segment = phase.segment
        wall = segment.wall_seconds or float("nan")
        above_idle = max(0.0, phase.prometheus_cpu_seconds - phase.prometheus_idle_cores * wall)
        if phase.name == "per request":
            per_query = above_idle / phase.queries if phase.queries else float("nan")
            lines.append(
                f"per request: {per_query * 1000:.2f} Prometheus CPU ms per query; the fleet's "
                f"{fleet_rate:.0f} queries/s would cost {per_query * fleet_rate:.2f} cores"
            )
        elif phase.name == "batched":
            lines.append(
                f"batched: Prometheus {above_idle / wall:.4f} cores above idle "
                f"({phase.queries:.0f} queries in {wall:.0f} s; goal <= 0.05); adapter "
                f"{segment.adapter_cpu_seconds / wall:.3f} cores (goal <= 0.5); p50 "
                f"{ms(segment.p(0.5))} ms (goal <= 5), p99 {ms(segment.p(0.99))} ms "
                f"(goal <= 25), client lag p99 {ms(percentile(segment.lags_seconds, 0.99))} ms; "
                f"answered from snapshots {phase.extra.get('snapshot', 0):.0f}, from a snapshot "
                f"past its max age while its renewal was late "
                f"{phase.extra.get('snapshot_late', 0):.0f}, per request while it was too late "
                f"{phase.extra.get('per_request_late', 0):.0f}"
            )
            lines.extend(slow_answer_lines(segment))
        elif phase.name == "discovery":
            lines.append(
                f"discovery: p50 {ms(segment.p(0.5))} ms, p99 {ms(segment.p(0.99))} ms "
                f"(goal <= 5); adapter {segment.per_thousand(segment.adapter_cpu_seconds):.2f} "
                f"CPU-ms per request; client lag p99 "
                f"{ms(percentile(segment.lags_seconds, 0.99))} ms"
            )
        lines.extend(phase.loop)
        for sample in segment.error_samples:
            lines.append(f"error ({phase.name}): {sample}")
    if result.failure:
        lines.append(f"stopped: {result.failure}")
    elif "relist" in result.phase_names and fleet.bulk_series:
        above = (result.bulk_kib - result.baseline_kib) * 1024
        lines.append(
            f"relist of {fleet.bulk_series:,} more series: {result.relist_seconds:.2f} s; RSS "
            f"{result.bulk_kib / 1024:.0f} MiB after it (peak {result.bulk_peak_kib / 1024:.0f} "
            f"MiB) vs {result.baseline_kib / 1024:.0f} MiB without the bulk rule: "
            f"{above / fleet.bulk_series:.1f} bytes per series above baseline (goal <= 150)"
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("--fleet")
    group.add_argument("--scale", type=float, default=1.0, help="fraction of the fleet size")
    group.add_argument("--fleet-pods", type=int, default=100_000, help="pods (10 per HPA)")
    group.add_argument("--metric-names", type=int, default=10_000)
    group.add_argument("--bulk-series", type=int, default=1_000_000)
    group.add_argument("--seconds", type=float, default=30.0, help="batched phase length")
    group.add_argument("--per-request-rate", type=float, default=100.0)
    group.add_argument("--per-request-seconds", type=float, default=20.0)
    group.add_argument("--discovery-rate", type=float, default=100.0)
    group.add_argument(
        "--probe-reuse",
        default="15s",
        help="the batched adapter's --staleness-probe-reuse: renewals within it reuse a probe "
        "that proved every value fresh (default 15s, one HPA sync period; 0s: a probe with "
        "every evaluation)",
    )
    group.add_argument(
        "--window", type=int, default=1200, help="seconds of samples after the start"
    )
    group.add_argument(
        "--loop-lag",
        action="store_true",
        help="record the batched adapter's event-loop lag, what stalls it, and its collections",
    )
    group.add_argument(
        "--batched-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="one more flag for the batched adapter (repeatable), e.g. "
        "--batched-flag=--max-series=5000",
    )
    group.add_argument(
        "--phases",
        type=phase_list,
        default=PHASES,
        help=f"comma-separated phases to run, in their order (default: {','.join(PHASES)})",
    )


def phase_list(text: str) -> tuple[str, ...]:
    """``--phases``: a comma-separated subset of ``PHASES``."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in PHASES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown phase {', '.join(unknown) or '(none)'}; choose from {', '.join(PHASES)}"
        )
    return names


def main(args: argparse.Namespace) -> None:
    """``bench.adapter --fleet``: ``args`` parsed by ``bench.adapter.parse_args``."""
    command = shlex.join([".venv/bin/python", "-m", "bench.adapter", *sys.argv[1:]])
    args.adapter_source = Path(args.adapter_source).resolve()
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        result = run(args, args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="hpa-bench-fleet-") as directory:
            result = run(args, Path(directory))
    print(render(result, command=command))
    if result.failure:
        sys.exit(1)


def fixture_main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet")
    parser.add_argument("--fixture", type=Path, required=True)
    parser.add_argument("--pods", type=int, required=True)
    args = parser.parse_args(argv)
    fleet = Fleet(pods=args.pods, hpas=0, metric_names=0, bulk_series=0)
    asyncio.run(run_fixture(args.fixture, fleet, args.fixture / "pki"))


if __name__ == "__main__":
    fixture_main(sys.argv[1:])
