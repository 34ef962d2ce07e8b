"""A real Prometheus server for the lab: generated config, loopback port, own data dir.

Upstream counterpart: none in Kubernetes; this starts Debian's `prometheus` binary (installed by
`make system-deps`) the way a cluster's Prometheus would be run, with a 1 s scrape and evaluation
interval so tests see changes within seconds. The flags are upstream's:
`--config.file`, `--storage.tsdb.path`, `--web.listen-address`, `--web.enable-admin-api` (series
deletion for later tests), `--web.enable-lifecycle` (`POST /-/reload` after `set_targets`).

`backfill_openmetrics` writes history with `promtool tsdb create-blocks-from openmetrics` into the
data dir. Prometheus only looks for new blocks once a minute, so a running server is restarted on
the same port to pick them up at once (a deliberate shortcut for tests).

Usage:

    with PrometheusServer(targets={"exporter": ["127.0.0.1:9100"]}) as prometheus:
        prometheus.query('sum(rate(http_requests_total[5s]))')      # blocking (urllib)
        await prometheus.query_async('up')                           # in an event loop (aiohttp)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp
import structlog
import yaml

log = structlog.get_logger(__name__)

PROMETHEUS_BINARY = "/usr/bin/prometheus"
PROMTOOL_BINARY = "/usr/bin/promtool"
READY_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0
HTTP_TIMEOUT_SECONDS = 10.0


class PrometheusError(RuntimeError):
    """Prometheus did not start, or answered a request with an error."""


@dataclass(frozen=True, slots=True)
class InstantSample:
    """One element of an instant vector (or a scalar, with empty labels)."""

    labels: dict[str, str]
    timestamp_seconds: float
    value: float


@dataclass(frozen=True, slots=True)
class RangeSeries:
    """One series of a range query: its labels and (timestamp_seconds, value) points."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


def free_loopback_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on `host` a moment ago (the kernel's choice for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def render_config(
    targets: Mapping[str, Sequence[str]],
    *,
    scrape_interval_seconds: float = 1.0,
) -> str:
    """prometheus.yml text: one static job per entry of `targets` (job name -> host:port list).

    Every job keeps the target's own labels (`honor_labels: true`), so the exporter's
    `namespace`/`pod`/`container` labels are stored as they are, as for the kubelet's cAdvisor job.
    """
    interval = _duration(scrape_interval_seconds)
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": interval,
            # Must not exceed the interval (Prometheus refuses the config otherwise).
            "scrape_timeout": interval,
            "evaluation_interval": interval,
        },
        "scrape_configs": [
            {
                "job_name": job,
                "honor_labels": True,
                "static_configs": [{"targets": list(addresses)}],
            }
            for job, addresses in targets.items()
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


def _duration(seconds: float) -> str:
    milliseconds = round(seconds * 1000)
    if milliseconds <= 0:
        raise ValueError("a Prometheus interval must be positive")
    if milliseconds % 1000 == 0:
        return f"{milliseconds // 1000}s"
    return f"{milliseconds}ms"


class PrometheusServer:
    """A Prometheus process on a free loopback port, with its own config and TSDB directory.

    targets: job name -> list of "host:port" to scrape every `scrape_interval_seconds`.
    workdir: where prometheus.yml, data/ and prometheus.log go; a temporary directory (removed
        on stop) when None. The caller's directory is kept.
    port: 0 picks a free port.
    retention: `--storage.tsdb.retention.time`; long by default so backfilled history stays.
    """

    def __init__(
        self,
        targets: Mapping[str, Sequence[str]] | None = None,
        *,
        workdir: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        scrape_interval_seconds: float = 1.0,
        retention: str = "3650d",
        binary: str = PROMETHEUS_BINARY,
        promtool: str = PROMTOOL_BINARY,
    ) -> None:
        self._targets: dict[str, list[str]] = {
            job: list(addresses) for job, addresses in (targets or {}).items()
        }
        self._own_workdir = workdir is None
        self._workdir = workdir
        self._host = host
        self._requested_port = port
        self._port = 0
        self._scrape_interval_seconds = scrape_interval_seconds
        self._retention = retention
        self._binary = binary
        self._promtool = promtool
        self._process: subprocess.Popen[bytes] | None = None
        self._backfill_count = 0

    # ------------------------------------------------------------------ paths and addresses

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            raise PrometheusError("the server has no work directory before start()")
        return self._workdir

    @property
    def config_path(self) -> Path:
        return self.workdir / "prometheus.yml"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        return self.workdir / "prometheus.log"

    @property
    def port(self) -> int:
        if not self._port:
            raise PrometheusError("the server has no port before start()")
        return self._port

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:40123 (no trailing slash)."""
        return f"http://{self._host}:{self.port}"

    @property
    def targets(self) -> dict[str, list[str]]:
        return {job: list(addresses) for job, addresses in self._targets.items()}

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Write the config, start Prometheus and wait until /-/ready answers 200 (on the port
        of the previous start, if any: stop() then start() is an outage and a recovery)."""
        if self.running:
            return
        for binary in (self._binary, self._promtool):
            if not Path(binary).exists():
                raise PrometheusError(f"{binary} is missing: run `make system-deps`")
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="hpa-prometheus-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(exist_ok=True)
        self._write_config()
        # A port picked here can be taken before Prometheus binds it: try a few times. A start
        # after stop() keeps the port it had, so clients configured with `url` reach it again.
        known_port = self._requested_port or self._port
        attempts = 1 if known_port else 3
        for attempt in range(attempts):
            self._port = known_port or free_loopback_port(self._host)
            self._spawn()
            try:
                self._wait_ready()
            except PrometheusError:
                self._terminate()
                if attempt + 1 == attempts or "address already in use" not in self._log_tail():
                    raise
                continue
            log.info("prometheus_started", url=self.url, workdir=str(self.workdir))
            return

    def stop(self) -> None:
        """Stop the process group; remove the work directory if this object created it."""
        self._terminate()
        if self._own_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def restart(self) -> None:
        """Stop and start again on the same port and data dir (the TSDB survives)."""
        port = self._port
        self._terminate()
        self._spawn_on(port)

    def _spawn_on(self, port: int) -> None:
        self._port = port
        self._spawn()
        self._wait_ready()

    def _spawn(self) -> None:
        argv = [
            self._binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--storage.tsdb.retention.time={self._retention}",
            f"--web.listen-address={self._host}:{self._port}",
            "--web.enable-admin-api",
            "--web.enable-lifecycle",
            "--log.level=info",
        ]
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
            )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            process = self._process
            if process is None or process.poll() is not None:
                raise PrometheusError(f"prometheus exited during start:\n{self._log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise PrometheusError(f"prometheus not ready after {READY_TIMEOUT_SECONDS}s")

    def _terminate(self) -> None:
        process = self._process
        self._process = None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def _log_tail(self, line_count: int = 20) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-line_count:])

    # ------------------------------------------------------------------ configuration

    def _write_config(self) -> None:
        text = render_config(self._targets, scrape_interval_seconds=self._scrape_interval_seconds)
        self.config_path.write_text(text)

    def set_targets(self, targets: Mapping[str, Sequence[str]]) -> None:
        """Replace the scrape jobs; a running server reloads its config (POST /-/reload)."""
        self._targets = {job: list(addresses) for job, addresses in targets.items()}
        if self._workdir is not None:
            self._write_config()
        if self.running:
            self._post("/-/reload")

    def add_target(self, job: str, address: str) -> None:
        """Scrape `address` (host:port) in `job` too, creating the job if needed."""
        targets = self.targets
        targets.setdefault(job, [])
        if address not in targets[job]:
            targets[job].append(address)
        self.set_targets(targets)

    # ------------------------------------------------------------------ history

    def backfill_openmetrics(self, text: str) -> None:
        """Write OpenMetrics samples (ending in `# EOF`) into the TSDB as blocks.

        Timestamps in the text are Unix seconds. Before start() the blocks are simply there when
        Prometheus starts; a running server is restarted on the same port to load them.
        """
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="hpa-prometheus-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(exist_ok=True)
        self._backfill_count += 1
        source = self.workdir / f"backfill-{self._backfill_count}.om"
        source.write_text(text if text.endswith("\n") else text + "\n")
        result = subprocess.run(
            [
                self._promtool,
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                str(source),
                str(self.data_dir),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise PrometheusError(f"promtool backfill failed:\n{result.stdout}{result.stderr}")
        log.info("prometheus_backfilled", source=str(source), data_dir=str(self.data_dir))
        if self.running:
            self.restart()

    # ------------------------------------------------------------------ HTTP API (blocking)

    def query(self, promql: str, *, at_seconds: float | None = None) -> list[InstantSample]:
        """An instant query (GET /api/v1/query): the vector, or a scalar as one sample."""
        return parse_instant(self._get("/api/v1/query", _instant_params(promql, at_seconds)))

    def query_range(
        self, promql: str, *, start_seconds: float, end_seconds: float, step_seconds: float
    ) -> list[RangeSeries]:
        """A range query (GET /api/v1/query_range)."""
        params = _range_params(promql, start_seconds, end_seconds, step_seconds)
        return parse_range(self._get("/api/v1/query_range", params))

    def series(
        self,
        match: Iterable[str],
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
    ) -> list[dict[str, str]]:
        """Label sets of the series that match any selector (GET /api/v1/series)."""
        params = _series_params(match, start_seconds, end_seconds)
        return parse_series(self._get("/api/v1/series", params))

    def delete_series(
        self,
        match: Iterable[str],
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
    ) -> None:
        """Admin API: delete matching series, then clean the tombstones."""
        params = _series_params(match, start_seconds, end_seconds)
        self._post("/api/v1/admin/tsdb/delete_series", params)
        self._post("/api/v1/admin/tsdb/clean_tombstones")

    def active_targets(self) -> list[dict[str, Any]]:
        """GET /api/v1/targets: the active targets with their health and last error."""
        data = self._get("/api/v1/targets", [("state", "active")])
        targets: list[dict[str, Any]] = data["activeTargets"]
        return targets

    def wait_for_targets(self, *, timeout_seconds: float = 20.0) -> None:
        """Block until every configured target has been scraped successfully (health "up").

        The first scrape of a new target comes ~5-6 s after start or reload (Prometheus hands
        discovered targets to its scrapers every 5 s).
        """
        wanted = {
            (job, address) for job, addresses in self._targets.items() for address in addresses
        }
        deadline = time.monotonic() + timeout_seconds
        while True:
            up = {
                (target["labels"].get("job", ""), target["labels"].get("instance", ""))
                for target in self.active_targets()
                if target.get("health") == "up"
            }
            if wanted <= up:
                return
            if time.monotonic() > deadline:
                raise PrometheusError(f"targets not up after {timeout_seconds}s: {wanted - up}")
            time.sleep(0.1)

    def _get(self, path: str, params: Sequence[tuple[str, str]]) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        return _api_data(*_fetch(urllib.request.Request(url)))  # noqa: S310

    def _post(self, path: str, params: Sequence[tuple[str, str]] = ()) -> None:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        status, body = _fetch(urllib.request.Request(url, method="POST"))  # noqa: S310
        if status >= 300:
            raise PrometheusError(f"POST {path} answered {status}: {body[:500]!r}")

    # ------------------------------------------------------------------ HTTP API (asyncio)

    async def query_async(
        self, promql: str, *, at_seconds: float | None = None
    ) -> list[InstantSample]:
        """`query` for code running in an event loop (aiohttp; never blocks the loop)."""
        data = await self._get_async("/api/v1/query", _instant_params(promql, at_seconds))
        return parse_instant(data)

    async def query_range_async(
        self, promql: str, *, start_seconds: float, end_seconds: float, step_seconds: float
    ) -> list[RangeSeries]:
        params = _range_params(promql, start_seconds, end_seconds, step_seconds)
        return parse_range(await self._get_async("/api/v1/query_range", params))

    async def series_async(
        self,
        match: Iterable[str],
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
    ) -> list[dict[str, str]]:
        params = _series_params(match, start_seconds, end_seconds)
        return parse_series(await self._get_async("/api/v1/series", params))

    async def _get_async(self, path: str, params: Sequence[tuple[str, str]]) -> Any:
        timeout = aiohttp.ClientTimeout(total=HTTP_TIMEOUT_SECONDS)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(f"{self.url}{path}", params=list(params)) as response,
        ):
            return _api_data(response.status, await response.read())


# ---------------------------------------------------------------- request and response shapes


def _instant_params(promql: str, at_seconds: float | None) -> list[tuple[str, str]]:
    params = [("query", promql)]
    if at_seconds is not None:
        params.append(("time", repr(at_seconds)))
    return params


def _range_params(
    promql: str, start_seconds: float, end_seconds: float, step_seconds: float
) -> list[tuple[str, str]]:
    return [
        ("query", promql),
        ("start", repr(start_seconds)),
        ("end", repr(end_seconds)),
        ("step", repr(step_seconds)),
    ]


def _series_params(
    match: Iterable[str], start_seconds: float | None, end_seconds: float | None
) -> list[tuple[str, str]]:
    params = [("match[]", selector) for selector in match]
    if not params:
        raise ValueError("at least one series selector is needed")
    if start_seconds is not None:
        params.append(("start", repr(start_seconds)))
    if end_seconds is not None:
        params.append(("end", repr(end_seconds)))
    return params


def _fetch(request: urllib.request.Request) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS) as response:  # noqa: S310
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _api_data(status: int, body: bytes) -> Any:
    """The `data` of a Prometheus API answer; errors become PrometheusError."""
    try:
        envelope = json.loads(body)
    except ValueError:
        raise PrometheusError(f"HTTP {status}: {body[:500]!r}") from None
    if status >= 300 or envelope.get("status") != "success":
        raise PrometheusError(
            f"HTTP {status} {envelope.get('errorType', '')}: {envelope.get('error', body[:500])}"
        )
    return envelope["data"]


def parse_instant(data: Mapping[str, Any]) -> list[InstantSample]:
    result_type = data["resultType"]
    if result_type == "vector":
        return [
            InstantSample(
                labels=dict(item["metric"]),
                timestamp_seconds=float(item["value"][0]),
                value=float(item["value"][1]),
            )
            for item in data["result"]
        ]
    if result_type == "scalar":
        timestamp, value = data["result"]
        return [InstantSample(labels={}, timestamp_seconds=float(timestamp), value=float(value))]
    raise PrometheusError(f"an instant query returned a {result_type}: use query_range")


def parse_range(data: Mapping[str, Any]) -> list[RangeSeries]:
    if data["resultType"] != "matrix":
        raise PrometheusError(f"a range query returned a {data['resultType']}")
    return [
        RangeSeries(
            labels=dict(item["metric"]),
            points=[(float(timestamp), float(value)) for timestamp, value in item["values"]],
        )
        for item in data["result"]
    ]


def parse_series(data: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    return [dict(labels) for labels in data]
