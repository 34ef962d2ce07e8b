"""The metrics layer under load: a Pods-metric request for 100 pods through ``hpa adapter`` versus
the same PromQL sent to Prometheus directly.

Run::

    .venv/bin/python -m bench.adapter                 # 200 requests/s, 30 s per path
    .venv/bin/python -m bench.adapter --quick         # smoke run: 50 requests/s, 3 s per path
    .venv/bin/python -m bench.adapter --max-sample-age 0s   # adapter without its staleness probe
    .venv/bin/python -m bench.adapter --staleness-probe-reuse 0s   # a probe with every request
    .venv/bin/python -m bench.adapter --route         # forwarding: 100 requests/s, 30 s per path

What runs (each its own process, so no component steals another's interpreter):

* a fixture (``python -m bench.adapter --fixture DIR``): the lab's workload exporter
  (``tests.lab.exporter.WorkloadExporter`` with an in-memory pod source) exporting
  ``http_requests_total`` for ``--pods`` pods of ``bench/app=bench``, and the fake Kubernetes API
  of the adapter tests (``tests.fakes.kubeauth.FakeKubeAuth``: the same pods for the pod watch,
  the ``extension-apiserver-authentication`` ConfigMap, SubjectAccessReviews allowed for the HPA
  controller's user);
* Debian's Prometheus (``tests.lab.prometheus.PrometheusServer``) scraping the exporter every 1 s;
* the real ``hpa adapter`` process (``python -m hpa adapter``) with a rule turning
  ``http_requests_total`` into ``pods/http_requests_per_second``, serving TLS with a serving
  certificate and authenticating the bench's front-proxy client certificate plus
  ``X-Remote-User`` headers, as kube-apiserver's aggregator does;
* this process: the open-loop load generator, a hand-rolled keep-alive HTTP/1.1 client
  (``HttpConnection``: prebuilt request bytes, answers framed by Content-Length or chunked
  encoding, no task per request), because it shares the cores with what it measures.

Load: a constant arrival rate (``--rate`` requests/s, requests sent on schedule whether or not
earlier ones finished) over keep-alive connections. Latency is measured from the *scheduled*
send time to the last byte of the answer, so a stalled client or server cannot hide queueing
(no coordinated omission). The paths alternate in ``--rounds`` segments (direct, adapter, direct,
adapter, ...) so a neighbour's burst on the shared machine hits both alike:

* ``direct``: ``GET /api/v1/query`` on Prometheus with the exact PromQL the adapter renders
  (read from the adapter's ``/debug/explain``);
* ``adapter``: ``GET /apis/custom.metrics.k8s.io/v1beta2/namespaces/bench/pods/*/
  http_requests_per_second?labelSelector=app=bench`` over TLS;
* ``direct merged`` (unless ``--no-probe-path``): the query the adapter really sends, the value
  query merged with its staleness probe (docs/adapter-values.md), sent to Prometheus directly:
  what Prometheus alone costs the adapter per request.

Reported: p50, p99 and max of each path, adapter p99 minus direct p99 (goal <= 5 ms), errors,
the client's own scheduling lag (p99 of actual minus scheduled send time; if it is large the
machine was too busy for the numbers to mean much), and the adapter's CPU seconds per 1,000
requests from ``/proc/<pid>/stat`` (utime + stime) around the adapter segments, plus Prometheus's
and the load generator's CPU per 1,000 requests for each path.

``--route`` measures the metrics router (``routes:``, docs/adapter-server.md) instead: a second
``hpa adapter`` whose rule file has no rules and routes ``custom.metrics.k8s.io`` to the first one
(``default``), proving itself with a client certificate. The paths alternate as above:

* ``backend``: the adapter path on the first adapter, directly;
* ``routed``: the same request to the router, which authorizes it (SubjectAccessReview, cached)
  and forwards it.

Reported: routed p99 minus backend p99 (goal <= 2 ms at the default 100 requests/s) and the
router's CPU per 1,000 requests. ``--profile FILE`` runs the
adapter under ``cProfile`` timed by ``time.process_time``. Results: docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import aiohttp
import orjson
import yaml

if TYPE_CHECKING:
    from tests.lab.pki import CertificateAuthority

REPO_ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "bench"
METRIC = "http_requests_per_second"
SELECTOR = "app=bench"
HPA_USER = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
ADAPTER_PATH = (
    f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NAMESPACE}/pods/*/{METRIC}"
    f"?labelSelector={SELECTOR}"
)
GOAL_P99_DIFFERENCE_SECONDS = 0.005
GOAL_ROUTE_P99_DIFFERENCE_SECONDS = 0.002
ROUTER_USER = "hpa-adapter-router"
MAX_CLIENT_LAG_SECONDS = 0.010
"""A client more than this late (p99) on its schedule cannot judge the goal."""
RULES = """\
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
"""
CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
START_TIMEOUT_SECONDS = 60.0


def pod_names(count: int) -> list[str]:
    return [f"bench-{index:03d}" for index in range(count)]


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (``/proc/<pid>/stat`` fields 14 and 15), in seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_SECOND


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (``fraction`` in [0, 1]); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return ordered[min(len(ordered), int(rank)) - 1]


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


# ---------------------------------------------------------------- the fixture process


def _pod_json(name: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"uid-{name}",
            "labels": {"app": "bench"},
            "resourceVersion": "1",
        },
        "spec": {"containers": [{"name": "app"}], "nodeName": "node-1"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def authentication_configmap(pki_dir: Path) -> dict[str, str]:
    """The ``extension-apiserver-authentication`` ConfigMap's data for the bench's PKI."""
    return {
        "client-ca-file": (pki_dir / "client-ca.crt").read_text(),
        "requestheader-client-ca-file": (pki_dir / "front-proxy-ca.crt").read_text(),
        "requestheader-allowed-names": orjson.dumps(["front-proxy-client"]).decode(),
        "requestheader-username-headers": orjson.dumps(["X-Remote-User"]).decode(),
        "requestheader-group-headers": orjson.dumps(["X-Remote-Group"]).decode(),
        "requestheader-extra-headers-prefix": orjson.dumps(["X-Remote-Extra-"]).decode(),
    }


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (a fixture process's end)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    return stopping


async def run_fixture(directory: Path, *, pods: int, pki_dir: Path) -> None:
    """Exporter + fake Kubernetes API until SIGTERM; writes ``fixture.json`` once listening."""
    from tests.fakes.kubeauth import FakeKubeAuth
    from tests.lab.exporter import InMemoryPodSource, WorkloadExporter
    from tests.lab.load_model import PodState, WorkloadProfile

    names = pod_names(pods)
    states = [
        PodState(namespace=NAMESPACE, name=name, labels={"app": "bench"}, containers=("app",))
        for name in names
    ]
    profile = WorkloadProfile(namespace=NAMESPACE, workload="bench", selector={"app": "bench"})
    configmap = authentication_configmap(pki_dir)
    stopping = stop_on_signals()
    exporter = WorkloadExporter(pod_source=InMemoryPodSource(states))
    async with (
        FakeKubeAuth(configmap=configmap, pods=[_pod_json(name) for name in names]) as kube,
        exporter,
    ):
        kube.sar_rule = lambda spec: (spec["user"] in (HPA_USER, ROUTER_USER), "")
        exporter.add_workload(profile, rps=10 * pods)
        ready = directory / "fixture.json"
        partial = ready.with_suffix(".tmp")
        partial.write_text(json.dumps({"kube_url": kube.url, "exporter": exporter.scrape_target}))
        partial.replace(ready)
        await stopping.wait()


# ---------------------------------------------------------------- processes


@dataclass
class Processes:
    """Child processes to end (by their own process group) when the bench finishes."""

    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def spawn(
        self, argv: Sequence[str], *, log_path: Path, source: Path = REPO_ROOT
    ) -> subprocess.Popen[bytes]:
        python_path = [str(source), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(python_path)}
        with log_path.open("ab") as log_file:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=source,
                env=env,
                start_new_session=True,
            )
        self.children.append(process)
        return process

    def stop_all(self) -> None:
        for process in reversed(self.children):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.children):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def wait_for_file(path: Path, process: subprocess.Popen[bytes], *, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited:\n{tail(log_path)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {START_TIMEOUT_SECONDS}s")
        time.sleep(0.05)


def tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def free_port() -> int:
    from tests.lab.prometheus import free_loopback_port

    return free_loopback_port()


def write_kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "adapter", "user": {"token": "adapter-token"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "adapter"}}],
                "current-context": "fake",
            }
        )
    )
    return path


# ---------------------------------------------------------------- load


class SlowAnswer(NamedTuple):
    """An answer that took ``SLOW_ANSWER_SECONDS`` or more, to tell what held it: every
    connection at once (the server), one namespace (its authorization), one connection."""

    at_seconds: float
    """When it was scheduled, in seconds from the load's start."""
    latency_seconds: float
    queued_seconds: float
    """How long it waited in line for a free connection (part of its latency)."""
    namespace: str
    connection: int
    """Which of the client's connections carried it (numbered in the order first seen)."""


SLOW_ANSWER_SECONDS = 0.1


def slow_answer_lines(segment: Segment, *, limit: int = 12) -> list[str]:
    """The segment's slow answers in bursts (scheduled within 0.5 s of each other): when, how
    many, the slowest, over how many namespaces and connections, and how long they waited in
    line for a connection."""
    threshold = f"{SLOW_ANSWER_SECONDS * 1000:.0f} ms"
    if not segment.slow:
        return [f"  answers of {threshold} or more: none"]
    bursts: list[list[SlowAnswer]] = []
    for answer in sorted(segment.slow):
        if bursts and answer.at_seconds - bursts[-1][-1].at_seconds <= 0.5:
            bursts[-1].append(answer)
        else:
            bursts.append([answer])
    lines = [f"  answers of {threshold} or more: {len(segment.slow)} in {len(bursts)} bursts"]
    for burst in bursts[:limit]:
        queued = sorted(answer.queued_seconds for answer in burst)
        lines.append(
            f"    {burst[0].at_seconds:.2f}-{burst[-1].at_seconds:.2f} s into the load: "
            f"{len(burst)} answers, the slowest {max(a.latency_seconds for a in burst) * 1000:.0f}"
            f" ms; {len({a.namespace for a in burst})} namespaces, "
            f"{len({a.connection for a in burst})} connections; queued for a connection: p50 "
            f"{queued[len(queued) // 2] * 1000:.0f} ms, max {queued[-1] * 1000:.0f} ms"
        )
    return lines


@dataclass
class Segment:
    """One path's measurements (possibly over several segments)."""

    name: str
    latencies_seconds: list[float] = field(default_factory=list)
    lags_seconds: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    sent: int = 0
    adapter_cpu_seconds: float = 0.0
    router_cpu_seconds: float = 0.0
    prometheus_cpu_seconds: float = 0.0
    client_cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    intervals: list[tuple[float, float]] = field(default_factory=list)
    """``time.monotonic()`` at the start and end of each measured segment."""
    slow: list[SlowAnswer] = field(default_factory=list)
    """Each answer that took ``SLOW_ANSWER_SECONDS`` or more (``open_loop``)."""

    @property
    def completed(self) -> int:
        return len(self.latencies_seconds)

    def p(self, fraction: float) -> float:
        return percentile(self.latencies_seconds, fraction)

    def per_thousand(self, cpu_seconds: float) -> float:
        return cpu_seconds / self.sent * 1000 if self.sent else float("nan")


class ResponseError(Exception):
    """A request that failed: connection error, status other than 200, wrong item count."""


Done = Callable[[int, bytes, "ResponseError | None"], None]


class HttpConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection carrying one request at a time, parsed by hand.

    The load generator shares the machine's cores with everything it measures, so it avoids
    aiohttp's per-request cost (URL building, header objects, a task per request): a request is
    a prebuilt byte string, and the answer is framed by ``Content-Length`` or chunked encoding
    and handed to a callback."""

    def __init__(self, on_lost: Callable[[HttpConnection], None]) -> None:
        self.transport: asyncio.Transport | None = None
        self._on_lost = on_lost
        self._buffer = bytearray()
        self._done: Done | None = None
        self._status = 0
        self._header_end = -1
        self._length: int | None = None  # Content-Length, or None for chunked
        self._gzip = False
        self._chunks = bytearray()
        self._position = 0
        self.closed = False
        self.received_at = 0.0
        """``loop.time()`` when the last answer's last byte arrived."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        done, self._done = self._done, None
        if done is not None:
            done(0, b"", ResponseError(f"connection lost: {exc!r}"))
        self._on_lost(self)

    def send(self, request: bytes, done: Done) -> None:
        assert self.transport is not None
        assert self._done is None
        self._done = done
        self._buffer.clear()
        self._header_end = -1
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._done is None:
            return
        if self._header_end < 0 and not self._read_head():
            return
        if self._length is not None:
            if len(self._buffer) - self._header_end < self._length:
                return
            body = bytes(self._buffer[self._header_end : self._header_end + self._length])
        else:
            body_or_none = self._read_chunks()
            if body_or_none is None:
                return
            body = body_or_none
        # the answer is complete: its latency ends here, before the client's own decompression
        self.received_at = asyncio.get_running_loop().time()
        if self._gzip:
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        done, self._done = self._done, None
        done(self._status, body, None)

    def _read_head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = bytes(self._buffer[:end]).split(b"\r\n")
        self._status = int(lines[0].split(b" ", 2)[1])
        self._length, self._gzip = None, False
        chunked = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                self._length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"content-encoding":
                self._gzip = value.strip().lower() == b"gzip"
        if self._length is None and not chunked:
            self._length = 0
        self._header_end = end + 4
        self._chunks.clear()
        self._position = self._header_end
        return True

    def _read_chunks(self) -> bytes | None:
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n", self._position)
            if line_end < 0:
                return None
            size = int(bytes(buffer[self._position : line_end]).split(b";")[0], 16)
            if size == 0:
                if buffer.find(b"\r\n", line_end + 2) < 0:
                    return None  # the trailer's empty line has not arrived
                return bytes(self._chunks)
            start = line_end + 2
            if len(buffer) < start + size + 2:
                return None
            self._chunks += buffer[start : start + size]
            self._position = start + size + 2


@dataclass
class ConnectionPool:
    """Keep-alive connections to one server; a busy pool opens more (counted)."""

    host: str
    port: int
    ssl_context: ssl.SSLContext | None
    idle: list[HttpConnection] = field(default_factory=list)
    opened: int = 0

    async def open(self) -> HttpConnection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            lambda: HttpConnection(self._lost),
            self.host,
            self.port,
            ssl=self.ssl_context,
            server_hostname=self.host if self.ssl_context is not None else None,
        )
        self.opened += 1
        return connection

    async def fill(self, count: int) -> None:
        opened = await asyncio.gather(*(self.open() for _ in range(count)))
        self.idle.extend(opened)

    def _lost(self, connection: HttpConnection) -> None:
        if connection in self.idle:
            self.idle.remove(connection)

    def close(self) -> None:
        for connection in self.idle:
            if connection.transport is not None:
                connection.transport.close()
        self.idle.clear()


@dataclass(frozen=True, kw_only=True)
class LoadPath:
    """One measured path: where its requests go, the request bytes, and the items to expect."""

    name: str
    pool: ConnectionPool
    request: bytes
    item_marker: bytes
    items: int
    requests: tuple[bytes, ...] = ()
    """When set, the requests to send in turn instead of ``request`` (``--fleet``)."""


def http_request(host: str, port: int, target: str, headers: Sequence[tuple[str, str]]) -> bytes:
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}:{port}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def open_loop(
    path: LoadPath,
    segment: Segment,
    *,
    rate_per_second: float,
    duration_seconds: float,
    record: bool = True,
    max_connections: int | None = None,
) -> None:
    """Send ``path``'s request at a constant rate for ``duration_seconds``; latency from the
    schedule to the answer's last byte (a gzip answer's decompression and the item check come
    after). No task per request: an idle connection sends at once, answers come back as
    callbacks; only when every connection is busy is a new one opened (its connect time counts
    in that request's latency). With ``max_connections``, no more are opened than that: a
    request that finds them all busy waits in line for the next one free (its wait counts in its
    latency), as requests from a client with a bounded number of workers would."""
    loop = asyncio.get_running_loop()
    count = round(rate_per_second * duration_seconds)
    start = loop.time() + 0.05
    pending = 0
    busy = 0  # connections carrying a request, or being opened for one
    waiting: collections.deque[tuple[float, bytes]] = collections.deque()
    finished = asyncio.Event()
    pool = path.pool
    sending_done = False
    background: set[asyncio.Task[None]] = set()

    connection_numbers: dict[int, int] = {}

    def note_slow(
        scheduled: float, sent: float, now: float, request: bytes, connection: HttpConnection
    ) -> None:
        namespace = request.partition(b"/namespaces/")[2].partition(b"/")[0].decode()
        number = connection_numbers.setdefault(id(connection), len(connection_numbers))
        segment.slow.append(
            SlowAnswer(scheduled - start, now - scheduled, sent - scheduled, namespace, number)
        )

    def complete(
        scheduled: float, connection: HttpConnection, request: bytes
    ) -> Callable[[int, bytes, ResponseError | None], None]:
        sent = loop.time()

        def done(status: int, body: bytes, error: ResponseError | None) -> None:
            nonlocal pending, busy
            # to the answer's last byte (the client's decompression and checks are not counted)
            now = connection.received_at if error is None else loop.time()
            if error is None and status != 200:
                error = ResponseError(f"{path.name} answered {status}: {body[:200]!r}")
            if error is None and body.count(path.item_marker) != path.items:
                found = body.count(path.item_marker)
                error = ResponseError(f"{path.name} answered {found} items, not {path.items}")
            busy -= 1
            if not connection.closed and connection.transport is not None:
                pool.idle.append(connection)  # (a failed connect's stand-in has no transport)
            if record:
                if error is not None:
                    segment.errors += 1
                    if len(segment.error_samples) < 3:
                        segment.error_samples.append(str(error)[:300])
                else:
                    segment.latencies_seconds.append(now - scheduled)
                    if now - scheduled >= SLOW_ANSWER_SECONDS:
                        note_slow(scheduled, sent, now, request, connection)
            pending -= 1
            if waiting:
                dispatch(*waiting.popleft())
            if sending_done and pending == 0:
                finished.set()

        return done

    async def send_on_new_connection(scheduled: float, request: bytes) -> None:
        try:
            connection = await pool.open()
        except OSError as error:
            complete(scheduled, HttpConnection(lambda _: None), request)(
                0, b"", ResponseError(f"connect failed: {error!r}")
            )
            return
        connection.send(request, complete(scheduled, connection, request))

    def dispatch(scheduled: float, request: bytes) -> None:
        nonlocal busy
        while pool.idle and pool.idle[-1].closed:
            pool.idle.pop()
        if pool.idle:
            busy += 1
            connection = pool.idle.pop()
            connection.send(request, complete(scheduled, connection, request))
        elif max_connections is not None and busy >= max_connections:
            waiting.append((scheduled, request))
        else:
            busy += 1
            task = asyncio.create_task(send_on_new_connection(scheduled, request))
            background.add(task)
            task.add_done_callback(background.discard)

    for index in range(count):
        scheduled = start + index / rate_per_second
        delay = scheduled - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        pending += 1
        if record:
            segment.sent += 1
            segment.lags_seconds.append(loop.time() - scheduled)
        request = path.requests[index % len(path.requests)] if path.requests else path.request
        if waiting:
            waiting.append((scheduled, request))  # in line behind the earlier ones
        else:
            dispatch(scheduled, request)
    sending_done = True
    if pending:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finished.wait(), timeout=30)


@dataclass(frozen=True, kw_only=True)
class Target:
    adapter_url: str
    prometheus_url: str
    adapter_ssl: ssl.SSLContext
    promql: str
    merged: str


def merged_promql(promql: str) -> str:
    """What the adapter sends Prometheus for this value query: it merged with its staleness
    probe (docs/adapter-values.md), the same series and label matchers."""
    from adapter.providers.evaluation import merged_query

    match = re.search(r"(http_requests_total\{[^}]*\})", promql)
    if match is None:
        raise ValueError(f"no series selector in {promql!r}")
    return merged_query(promql, f"max by (pod) (timestamp({match.group(1)}))")


def _host_port(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url)
    assert parsed.hostname is not None
    assert parsed.port is not None
    return parsed.hostname, parsed.port


async def measure(
    target: Target,
    *,
    rate_per_second: float,
    duration_seconds: float,
    rounds: int,
    pods: int,
    adapter_pid: int,
    prometheus_pid: int,
    probe_path: bool,
) -> list[Segment]:
    adapter_host, adapter_port = _host_port(target.adapter_url)
    prometheus_host, prometheus_port = _host_port(target.prometheus_url)
    # a connection per request in flight at the expected latency, with room for bursts
    connections = max(8, int(rate_per_second * 0.1))
    adapter_pool = ConnectionPool(adapter_host, adapter_port, target.adapter_ssl)
    prometheus_pool = ConnectionPool(prometheus_host, prometheus_port, None)
    await adapter_pool.fill(connections)
    await prometheus_pool.fill(connections)
    # the direct paths ask as the adapter's client does: uncompressed (gzip answers are decoded)
    prometheus_headers = [("Accept-Encoding", "identity")]

    def prometheus_request(query: str) -> bytes:
        target_path = "/api/v1/query?" + urllib.parse.urlencode({"query": query})
        return http_request(prometheus_host, prometheus_port, target_path, prometheus_headers)

    paths: list[tuple[Segment, LoadPath]] = [
        (
            Segment("direct"),
            LoadPath(
                name="direct",
                pool=prometheus_pool,
                request=prometheus_request(target.promql),
                item_marker=b'"metric":',
                items=pods,
            ),
        ),
        (
            Segment("adapter"),
            adapter_load_path("adapter", target.adapter_url, adapter_pool, pods=pods),
        ),
    ]
    if probe_path:
        paths.append(
            (
                Segment("direct merged"),
                LoadPath(
                    name="direct merged",
                    pool=prometheus_pool,
                    request=prometheus_request(target.merged),
                    item_marker=b'"metric":',
                    items=2 * pods,
                ),
            )
        )
    try:
        return await alternate(
            paths,
            rate_per_second=rate_per_second,
            duration_seconds=duration_seconds,
            rounds=rounds,
            cpu={"adapter_cpu_seconds": adapter_pid, "prometheus_cpu_seconds": prometheus_pid},
        )
    finally:
        adapter_pool.close()
        prometheus_pool.close()


async def alternate(
    paths: Sequence[tuple[Segment, LoadPath]],
    *,
    rate_per_second: float,
    duration_seconds: float,
    rounds: int,
    cpu: dict[str, int],
) -> list[Segment]:
    """A warm-up of each path, then ``rounds`` alternating measured segments per path; ``cpu``
    names a ``Segment`` field and the process whose CPU seconds it adds up."""
    # Warm-up: connections, caches (SubjectAccessReview), the interpreter's own warm-up.
    for segment, path in paths:
        await open_loop(
            path, segment, rate_per_second=rate_per_second, duration_seconds=2.0, record=False
        )
    for _ in range(rounds):
        for segment, path in paths:
            before = {field_name: process_cpu_seconds(pid) for field_name, pid in cpu.items()}
            client_before = time.process_time()
            started = time.monotonic()
            await open_loop(
                path,
                segment,
                rate_per_second=rate_per_second,
                duration_seconds=duration_seconds / rounds,
            )
            segment.wall_seconds += time.monotonic() - started
            segment.intervals.append((started, time.monotonic()))
            segment.client_cpu_seconds += time.process_time() - client_before
            for field_name, pid in cpu.items():
                spent = process_cpu_seconds(pid) - before[field_name]
                setattr(segment, field_name, getattr(segment, field_name) + spent)
    return [segment for segment, _ in paths]


def adapter_load_path(name: str, url: str, pool: ConnectionPool, *, pods: int) -> LoadPath:
    """The adapter path as kube-apiserver's aggregator sends it (front-proxy identity headers)."""
    host, port = _host_port(url)
    return LoadPath(
        name=name,
        pool=pool,
        request=http_request(
            host,
            port,
            ADAPTER_PATH,
            [("X-Remote-User", HPA_USER), ("X-Remote-Group", "system:serviceaccounts")],
        ),
        item_marker=b'"describedObject":',
        items=pods,
    )


async def measure_route(
    *,
    backend_url: str,
    router_url: str,
    context: ssl.SSLContext,
    rate_per_second: float,
    duration_seconds: float,
    rounds: int,
    pods: int,
    backend_pid: int,
    router_pid: int,
) -> list[Segment]:
    """``backend`` (the first adapter, directly) and ``routed`` (through the router), in
    alternating segments after a warm-up of each."""
    connections = max(8, int(rate_per_second * 0.1))
    pools = [ConnectionPool(*_host_port(url), context) for url in (backend_url, router_url)]
    for pool in pools:
        await pool.fill(connections)
    paths = [
        (Segment("backend"), adapter_load_path("backend", backend_url, pools[0], pods=pods)),
        (Segment("routed"), adapter_load_path("routed", router_url, pools[1], pods=pods)),
    ]
    try:
        return await alternate(
            paths,
            rate_per_second=rate_per_second,
            duration_seconds=duration_seconds,
            rounds=rounds,
            cpu={"adapter_cpu_seconds": backend_pid, "router_cpu_seconds": router_pid},
        )
    finally:
        for pool in pools:
            pool.close()


def router_rules(backend_url: str, pki: Path) -> str:
    """No rules of its own: every custom metric goes to the backend adapter."""
    return f"""\
rules: []
routes:
  backends:
  - name: backend
    url: {backend_url}
    caFile: {pki / "serving-ca.crt"}
    clientCertFile: {pki / "router.crt"}
    clientKeyFile: {pki / "router.key"}
  custom.metrics.k8s.io:
    default: backend
"""


# ---------------------------------------------------------------- setup


async def wait_until(check: Callable[[], Awaitable[bool]], *, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    last = ""
    while time.monotonic() < deadline:
        try:
            if await check():
                return
        except (aiohttp.ClientError, OSError, KeyError, ValueError) as error:
            last = repr(error)
        await asyncio.sleep(0.2)
    raise RuntimeError(f"{what} not ready within {START_TIMEOUT_SECONDS}s {last}")


async def wait_for_answer(
    session: aiohttp.ClientSession, url: str, context: ssl.SSLContext, target: str, *, items: int
) -> None:
    """Wait for the adapter's /readyz, then for ``target`` to answer ``items`` items."""
    headers = {"X-Remote-User": HPA_USER}

    async def ready() -> bool:
        async with session.get(url + "/readyz", ssl=context) as response:
            return response.status == 200

    async def full() -> bool:
        async with session.get(url + target, headers=headers, ssl=context) as response:
            if response.status != 200:
                return False
            return len(orjson.loads(await response.read())["items"]) == items

    await wait_until(ready, what="adapter /readyz")
    await wait_until(full, what=f"adapter values for {items} objects")


async def adapter_ready(
    url: str, context: ssl.SSLContext, *, pods: int, explain: bool = True
) -> str:
    """Wait for /readyz and a full answer; the PromQL the adapter renders (from explain)."""
    headers = {"X-Remote-User": HPA_USER}
    async with aiohttp.ClientSession() as session:
        await wait_for_answer(session, url, context, ADAPTER_PATH, items=pods)
        if not explain:
            return ""
        path = ADAPTER_PATH.partition("?")[0]
        async with session.get(
            url + "/debug/explain",
            params={"path": path, "labelSelector": SELECTOR},
            headers=headers,
            ssl=context,
        ) as response:
            document = orjson.loads(await response.read())
    query = document.get("query")
    if not isinstance(query, str):
        raise RuntimeError(f"explain has no PromQL: {document}")
    return query


@dataclass(frozen=True, kw_only=True)
class Run:
    segments: list[Segment]
    promql: str
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    adapter_idle_cpu_per_second: float
    coalesced: str
    forwarded: str = ""


CPU_PROFILER = """\
import cProfile, runpy, signal, sys, time
profile = cProfile.Profile(time.process_time)  # CPU time: waits on the network do not count
out, sys.argv = sys.argv[1], sys.argv[2:]
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
profile.enable()
try:
    runpy.run_module("hpa", run_name="__main__", alter_sys=True)
finally:
    profile.disable()
    profile.dump_stats(out)
"""
"""``python -c CPU_PROFILER FILE hpa adapter ...``: the adapter under cProfile timed by
``time.process_time``, so the profile shows CPU, not time spent waiting."""


GC_CALLBACK = """\
pauses, started = [], [0.0]
def record(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        pauses.append((info["generation"], time.perf_counter() - started[0], time.monotonic()))
gc.callbacks.append(record)
"""
"""Recorder code (needs ``gc`` and ``time``): every collection's (generation, pause seconds,
``time.monotonic()`` at its end) appended to ``pauses``."""


GC_RECORDER = f"""\
import gc, json, runpy, signal, sys, time
out, sys.argv = sys.argv[1], sys.argv[2:]
{GC_CALLBACK}signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
try:
    runpy.run_module("hpa", run_name="__main__", alter_sys=True)
finally:
    with open(out, "w") as file:
        json.dump(pauses, file)
"""
"""``python -c GC_RECORDER FILE hpa adapter ...``: the adapter with a ``gc.callbacks`` hook that
writes every collection (generation, pause seconds, ``time.monotonic()`` at its end) to FILE
when the adapter exits."""


def adapter_argv(
    *,
    python: str,
    profile: Path | None,
    gc_stats: Path | None = None,
    config: Path,
    port: int,
    pki: Path,
    kubeconfig: Path,
    prometheus_url: str,
    max_sample_age: str | None,
    probe_reuse: str | None = None,
) -> list[str]:
    runner = [python, "-m"]
    if profile is not None:
        runner = [python, "-c", CPU_PROFILER, str(profile)]
    elif gc_stats is not None:
        runner = [python, "-c", GC_RECORDER, str(gc_stats)]
    return [
        *runner,
        "hpa",
        "adapter",
        f"--config={config}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        f"--tls-cert-file={pki / 'serving.crt'}",
        f"--tls-private-key-file={pki / 'serving.key'}",
        f"--kubeconfig={kubeconfig}",
        f"--prometheus-url={prometheus_url}",
        "--log-level=warning",
        *([f"--max-sample-age={max_sample_age}"] if max_sample_age is not None else []),
        *([f"--staleness-probe-reuse={probe_reuse}"] if probe_reuse is not None else []),
    ]


def run(args: argparse.Namespace, workdir: Path) -> Run:
    from tests.adapter.server.tlsserver import client_context, create_test_pki
    from tests.lab.prometheus import PrometheusServer

    processes = Processes()
    (workdir / "fixture.json").unlink(missing_ok=True)
    shutil.rmtree(workdir / "prometheus", ignore_errors=True)
    pki_dir = workdir / "pki"
    pki = create_test_pki(pki_dir)
    fixture_log = workdir / "fixture.log"
    fixture = processes.spawn(
        [
            sys.executable,
            "-m",
            "bench.adapter",
            f"--fixture={workdir}",
            f"--pods={args.pods}",
        ],
        log_path=fixture_log,
    )
    prometheus: PrometheusServer | None = None
    try:
        wait_for_file(workdir / "fixture.json", fixture, log_path=fixture_log)
        endpoints = json.loads((workdir / "fixture.json").read_text())
        prometheus = PrometheusServer(
            targets={"bench": [endpoints["exporter"]]},
            workdir=workdir / "prometheus",
            scrape_interval_seconds=1.0,
        )
        prometheus.start()
        prometheus.wait_for_targets(timeout_seconds=30)
        config = workdir / "rules.yaml"
        config.write_text(RULES)
        port = free_port()
        adapter_log = workdir / "adapter.log"
        adapter = processes.spawn(
            adapter_argv(
                python=sys.executable,
                profile=args.profile,
                gc_stats=args.gc_stats,
                config=config,
                port=port,
                pki=pki_dir,
                kubeconfig=write_kubeconfig(workdir / "kubeconfig", endpoints["kube_url"]),
                prometheus_url=prometheus.url,
                max_sample_age=args.max_sample_age,
                probe_reuse=args.staleness_probe_reuse,
            ),
            log_path=adapter_log,
            source=args.adapter_source,
        )
        adapter_url = f"https://127.0.0.1:{port}"
        context = client_context(pki, pki.front_proxy_client)
        prometheus_pid = _prometheus_pid(workdir / "prometheus")
        try:
            promql = asyncio.run(adapter_ready(adapter_url, context, pods=args.pods))
        except RuntimeError as error:
            raise RuntimeError(f"{error}\nadapter log:\n{tail(adapter_log)}") from None
        idle_before = process_cpu_seconds(adapter.pid)
        time.sleep(2.0)
        idle_per_second = (process_cpu_seconds(adapter.pid) - idle_before) / 2.0
        target = Target(
            adapter_url=adapter_url,
            prometheus_url=prometheus.url,
            adapter_ssl=context,
            promql=promql,
            merged=merged_promql(promql),
        )
        load_before = load_average()
        if args.route:
            return _run_route(
                args,
                workdir,
                processes=processes,
                backend=adapter,
                backend_url=adapter_url,
                context=context,
                promql=promql,
                client_ca=pki.client_ca,
                prometheus_url=prometheus.url,
                load_before=load_before,
            )
        segments = asyncio.run(
            measure(
                target,
                rate_per_second=args.rate,
                duration_seconds=args.duration,
                rounds=args.rounds,
                pods=args.pods,
                adapter_pid=adapter.pid,
                prometheus_pid=prometheus_pid,
                probe_path=args.probe_path,
            )
        )
        load_after = load_average()
        coalesced = asyncio.run(_coalesced(adapter_url, context))
        if adapter.poll() is not None:
            raise RuntimeError(f"the adapter exited during the run:\n{tail(adapter_log)}")
        return Run(
            segments=segments,
            promql=promql,
            load_before=load_before,
            load_after=load_after,
            adapter_idle_cpu_per_second=idle_per_second,
            coalesced=coalesced,
        )
    finally:
        processes.stop_all()
        if prometheus is not None:
            prometheus.stop()


def _run_route(
    args: argparse.Namespace,
    workdir: Path,
    *,
    processes: Processes,
    backend: subprocess.Popen[bytes],
    backend_url: str,
    context: ssl.SSLContext,
    promql: str,
    client_ca: CertificateAuthority,
    prometheus_url: str,
    load_before: tuple[float, float, float],
) -> Run:
    """Start the router in front of ``backend`` and measure both paths."""
    from tests.lab.pki import issue_certificate

    pki = workdir / "pki"
    issue_certificate(client_ca, pki / "router", common_name=ROUTER_USER, client=True)
    config = workdir / "router-rules.yaml"
    config.write_text(router_rules(backend_url, pki))
    port = free_port()
    router_log = workdir / "router.log"
    router = processes.spawn(
        adapter_argv(
            python=sys.executable,
            profile=None,
            config=config,
            port=port,
            pki=pki,
            kubeconfig=workdir / "kubeconfig",
            prometheus_url=prometheus_url,
            max_sample_age=None,
        ),
        log_path=router_log,
        source=args.adapter_source,
    )
    router_url = f"https://127.0.0.1:{port}"
    try:
        asyncio.run(adapter_ready(router_url, context, pods=args.pods, explain=False))
    except RuntimeError as error:
        raise RuntimeError(f"{error}\nrouter log:\n{tail(router_log)}") from None
    idle_before = process_cpu_seconds(router.pid)
    time.sleep(2.0)
    idle_per_second = (process_cpu_seconds(router.pid) - idle_before) / 2.0
    segments = asyncio.run(
        measure_route(
            backend_url=backend_url,
            router_url=router_url,
            context=context,
            rate_per_second=args.rate,
            duration_seconds=args.duration,
            rounds=args.rounds,
            pods=args.pods,
            backend_pid=backend.pid,
            router_pid=router.pid,
        )
    )
    load_after = load_average()
    forwarded = asyncio.run(_forwarded(router_url, context))
    for name, process, log_path in (
        ("adapter", backend, workdir / "adapter.log"),
        ("router", router, router_log),
    ):
        if process.poll() is not None:
            raise RuntimeError(f"the {name} exited during the run:\n{tail(log_path)}")
    return Run(
        segments=segments,
        promql=promql,
        load_before=load_before,
        load_after=load_after,
        adapter_idle_cpu_per_second=idle_per_second,
        coalesced="",
        forwarded=forwarded,
    )


async def _forwarded(url: str, context: ssl.SSLContext) -> str:
    """The router's ``hpa_adapter_route_requests_total`` (forwarded requests, coalesced ones
    excluded) against the requests it answered."""
    headers = {"X-Remote-User": HPA_USER}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url + "/metrics", headers=headers, ssl=context) as response,
    ):
        text = await response.text()
    forwarded = answered = 0.0
    for line in text.splitlines():
        if line.startswith("hpa_adapter_route_requests_total{"):
            forwarded += float(line.split()[-1])
        if line.startswith("apiserver_request_total{") and 'resource="pods"' in line:
            answered += float(line.split()[-1])
    return (
        f"the router answered {answered:.0f} metric requests and sent {forwarded:.0f} requests to "
        "the backend (its discovery refreshes included; identical requests in flight share one)"
    )


def _prometheus_pid(workdir: Path) -> int:
    """The Prometheus process serving ``workdir`` (PrometheusServer does not expose its pid)."""
    wanted = f"--storage.tsdb.path={workdir / 'data'}"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if wanted.encode() in argv:
                return int(entry.name)
    raise RuntimeError("cannot find the Prometheus process")


async def _coalesced(url: str, context: ssl.SSLContext) -> str:
    """The adapter's Prometheus client counters: requests sent and calls coalesced."""
    headers = {"X-Remote-User": HPA_USER}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url + "/metrics", headers=headers, ssl=context) as response,
    ):
        text = await response.text()
    sent = coalesced = 0.0
    for line in text.splitlines():
        if line.startswith(
            'prometheus_adapter_prometheus_client_request_duration_seconds_count{path="/api/v1/query"}'
        ):
            sent = float(line.split()[-1])
        if line.startswith(
            'prometheus_adapter_prometheus_client_coalesced_total{path="/api/v1/query"}'
        ):
            coalesced = float(line.split()[-1])
    return f"{sent:.0f} queries sent to Prometheus, {coalesced:.0f} calls coalesced"


# ---------------------------------------------------------------- report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _header(result: Run, *, command: str) -> list[str]:
    return [
        f"$ {command}",
        f"load average before {result.load_before[0]:.2f}, after {result.load_after[0]:.2f} "
        f"(1 min; {os.cpu_count()} CPUs)",
    ]


def _table(segments: Sequence[Segment], cpu: dict[str, Callable[[Segment], float]]) -> list[str]:
    """One row per path: latencies, the client's lag and CPU per 1,000 requests (``cpu``:
    column title -> the segment's CPU seconds)."""
    titles = "".join(f" | {title} CPU s/1k req" for title in cpu)
    lines = [
        f"| path | sent | errors | p50 ms | p99 ms | max ms | client lag p99 ms{titles} |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |" + " ---: |" * len(cpu),
    ]
    for segment in segments:
        cells = "".join(
            f" | {segment.per_thousand(seconds(segment)):.3f}" for seconds in cpu.values()
        )
        lines.append(
            f"| {segment.name} | {segment.sent} | {segment.errors} | {_ms(segment.p(0.5))} "
            f"| {_ms(segment.p(0.99))} | {_ms(max(segment.latencies_seconds, default=0.0))} "
            f"| {_ms(percentile(segment.lags_seconds, 0.99))}{cells} |"
        )
    return lines


def _verdict(segments: Sequence[Segment], difference: float, goal: float) -> str:
    """``met``/``MISSED``, or why the run cannot judge the goal."""
    verdict = "met" if difference <= goal else "MISSED"
    lag = max(percentile(segment.lags_seconds, 0.99) for segment in segments)
    if lag > MAX_CLIENT_LAG_SECONDS or any(segment.errors for segment in segments):
        verdict = (
            f"NOT MEASURED: the client fell {_ms(lag)} ms behind its schedule or requests failed, "
            "so the latencies are this machine's queueing, not the paths'"
        )
    return verdict


def _errors(segments: Sequence[Segment]) -> list[str]:
    return [
        f"error ({segment.name}): {sample}"
        for segment in segments
        for sample in segment.error_samples
    ]


def render_route(result: Run, *, command: str, rate: float) -> str:
    by_name = {segment.name: segment for segment in result.segments}
    backend, routed = by_name["backend"], by_name["routed"]
    difference = routed.p(0.99) - backend.p(0.99)
    verdict = _verdict(result.segments, difference, GOAL_ROUTE_P99_DIFFERENCE_SECONDS)
    lines = [
        *_header(result, command=command),
        "",
        *_table(
            result.segments,
            {
                "backend adapter": lambda s: s.adapter_cpu_seconds,
                "router": lambda s: s.router_cpu_seconds,
            },
        ),
        "",
        f"routed p99 - backend p99 = {_ms(difference)} ms (goal <= "
        f"{_ms(GOAL_ROUTE_P99_DIFFERENCE_SECONDS)} ms: {verdict}); "
        f"routed p50 - backend p50 = {_ms(routed.p(0.5) - backend.p(0.5))} ms",
        f"router CPU: {routed.per_thousand(routed.router_cpu_seconds):.3f} s per 1,000 requests "
        f"at {rate:g}/s (idle {result.adapter_idle_cpu_per_second:.3f} CPU-s/s); "
        f"{result.forwarded}",
        *_errors(result.segments),
    ]
    return "\n".join(lines)


def render(result: Run, *, command: str, rate: float) -> str:
    by_name = {segment.name: segment for segment in result.segments}
    direct, adapter = by_name["direct"], by_name["adapter"]
    difference = adapter.p(0.99) - direct.p(0.99)
    verdict = _verdict(result.segments, difference, GOAL_P99_DIFFERENCE_SECONDS)
    idle = result.adapter_idle_cpu_per_second
    lines = [
        *_header(result, command=command),
        f"PromQL: {result.promql[:110]}{'...' if len(result.promql) > 110 else ''}",
        "",
        *_table(
            result.segments,
            {
                "adapter": lambda s: s.adapter_cpu_seconds,
                "Prometheus": lambda s: s.prometheus_cpu_seconds,
                "load generator": lambda s: s.client_cpu_seconds,
            },
        ),
        "",
        f"adapter p99 - direct p99 = {_ms(difference)} ms (goal <= "
        f"{_ms(GOAL_P99_DIFFERENCE_SECONDS)} ms: {verdict}); "
        f"adapter p50 - direct p50 = {_ms(adapter.p(0.5) - direct.p(0.5))} ms",
        f"adapter CPU: {adapter.per_thousand(adapter.adapter_cpu_seconds):.3f} s per 1,000 "
        f"requests at {rate:g}/s ({adapter.adapter_cpu_seconds / adapter.wall_seconds:.0%} of "
        f"a core; idle {idle:.3f} CPU-s/s); {result.coalesced}",
        *_errors(result.segments),
    ]
    return "\n".join(lines)


def render_gc_stats(path: Path, adapter: Segment) -> str:
    """The adapter's collections during its measured segments (from ``GC_RECORDER``'s file)."""
    pauses = json.loads(path.read_text())
    lines = ["", "| generation | collections | per 1,000 requests | total ms | p50 ms | max ms |"]
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for generation in (0, 1, 2):
        durations = [
            duration
            for gen, duration, ended in pauses
            if gen == generation and any(start <= ended <= end for start, end in adapter.intervals)
        ]
        lines.append(
            f"| {generation} | {len(durations)} | {len(durations) / adapter.sent * 1000:.1f} "
            f"| {sum(durations) * 1000:.2f} | {percentile(durations, 0.5) * 1000:.3f} "
            f"| {max(durations, default=0.0) * 1000:.3f} |"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.adapter",
        description="Latency of the adapter's Pods-metric path versus Prometheus directly.",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        help="requests/s (default 200; 1000 with --fleet; 100 with --route)",
    )
    parser.add_argument(
        "--duration", type=float, default=30.0, help="seconds per path (default 30)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating segments per path (default 3)"
    )
    parser.add_argument("--pods", type=int, default=100, help="pods selected (default 100)")
    parser.add_argument(
        "--no-probe-path",
        dest="probe_path",
        action="store_false",
        help="skip the direct merged (value + staleness probe) path",
    )
    parser.add_argument(
        "--max-sample-age",
        help="the adapter's --max-sample-age (default: the adapter's, 60s); 0s turns its "
        "staleness probe off, so it sends the bare value query (the direct merged path is then "
        "skipped)",
    )
    parser.add_argument(
        "--staleness-probe-reuse",
        help="the adapter's --staleness-probe-reuse (default: the adapter's, 1s); 0s sends the "
        "staleness probe with every request, as before it was shared",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 50/s, 3 s per path")
    parser.add_argument(
        "--route",
        action="store_true",
        help="measure the metrics router: the adapter path directly versus through a second "
        "adapter that forwards it (goal: <= 2 ms more at p99)",
    )
    parser.add_argument("--profile", type=Path, help="run the adapter under cProfile into FILE")
    parser.add_argument(
        "--gc-stats",
        type=Path,
        help="record the adapter's garbage collections (gc.callbacks) into FILE and print their "
        "pauses during the measured segments",
    )
    parser.add_argument("--workdir", type=Path, help="keep logs here (default: a temp dir)")
    parser.add_argument(
        "--adapter-source",
        type=Path,
        default=REPO_ROOT,
        help="run the adapter from this source tree (e.g. `git archive` of an older commit) to "
        "compare before and after a change; default: this checkout",
    )
    parser.add_argument("--fixture", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--fleet",
        action="store_true",
        help="fleet scale: batched evaluation versus per request (bench/fleet.py); --rate "
        "defaults to 1000 there",
    )
    from bench.fleet import add_arguments as fleet_arguments

    fleet_arguments(parser)
    args = parser.parse_args(argv)
    if args.rate is None:
        args.rate = 1000.0 if args.fleet else 100.0 if args.route else 200.0
    if args.quick:
        args.rate, args.duration, args.rounds = 50.0, 3.0, 1
    if args.max_sample_age is not None and args.max_sample_age.strip("0smh.") == "":
        args.probe_path = False  # the adapter sends the bare value query: direct is its twin
    if args.rounds < 1 or args.duration <= 0 or args.rate <= 0:
        parser.error("--rounds, --duration and --rate must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.fleet:
        from bench.fleet import main as fleet_main

        fleet_main(args)
        return
    if args.fixture is not None:
        asyncio.run(run_fixture(args.fixture, pods=args.pods, pki_dir=args.fixture / "pki"))
        return
    command = shlex.join([".venv/bin/python", "-m", "bench.adapter", *sys.argv[1:]])
    if args.profile is not None:
        args.profile = args.profile.resolve()
    if args.gc_stats is not None:
        if args.profile is not None:
            raise SystemExit("--gc-stats and --profile are exclusive")
        args.gc_stats = args.gc_stats.resolve()
    args.adapter_source = args.adapter_source.resolve()
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        result = run(args, args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="hpa-bench-adapter-") as directory:
            result = run(args, Path(directory))
    if args.route:
        print(render_route(result, command=command, rate=args.rate))
        return
    print(render(result, command=command, rate=args.rate))
    if args.gc_stats is not None:
        adapter = next(segment for segment in result.segments if segment.name == "adapter")
        print(render_gc_stats(args.gc_stats, adapter))


if __name__ == "__main__":
    main()
