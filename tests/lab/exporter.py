"""The lab's workload exporter: cAdvisor-style and request series for the pods of watched workloads.

Upstream counterpart: the kubelet's cAdvisor endpoint (`/metrics/cadvisor`), which a cluster's
Prometheus scrapes for `container_cpu_usage_seconds_total` and `container_memory_working_set_bytes`,
and an application's own `/metrics` with `http_requests_total`. kwok pods run nothing, so this
process invents those numbers from a load model (tests/lab/load_model.py) that tests steer at
run time. docs/lab-observability.md describes the series, the formulas and the control endpoint.

Pieces:
- `PodSource`: where pods come from. `KubernetesPodSource` lists and watches the pods of each
  workload (namespace + label selector) with kubernetes_asyncio (resourceVersion, bookmarks,
  relist on 410 Gone); `InMemoryPodSource` is fed by tests, no cluster needed.
- `WorkloadCollector`: a custom prometheus-client collector over the model, on the exporter's own
  `CollectorRegistry`, so a pod that disappears simply stops being exported (Prometheus then
  marks its series stale).
- `WorkloadExporter`: the asyncio server (aiohttp): `GET /metrics`, `GET|POST /load`,
  `POST /workloads`, `GET /healthz`; Python API `add_workload`, `set_load`, `load`.
- `ExporterProcess`: the same exporter as a child process (`python -m tests.lab.exporter`),
  driven from blocking code such as the `Lab` context manager.

Deliberate deviations from cAdvisor: see tests/lab/load_model.py (usage in the first container,
no pod-level or pause-container series). The extra gauge `lab_workload_offered_load_rps` is not a
cAdvisor series; it shows what the tests asked for, next to what the pods served.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self

import aiohttp
import structlog
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, CoreV1Api
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tests.lab.load_model import (
    LoadModel,
    PodState,
    RpsValue,
    WorkloadKey,
    WorkloadProfile,
    to_fraction,
)

log = structlog.get_logger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0
HTTP_TIMEOUT_SECONDS = 10.0


# ---------------------------------------------------------------- pods


def pod_state_from_json(pod: Mapping[str, Any]) -> PodState:
    """The model's view of a v1 Pod as the API server sends it (JSON)."""
    metadata = pod["metadata"]
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    ready = any(
        condition.get("type") == "Ready" and condition.get("status") == "True"
        for condition in status.get("conditions") or ()
    )
    return PodState(
        namespace=metadata.get("namespace", ""),
        name=metadata["name"],
        labels=dict(metadata.get("labels") or {}),
        containers=tuple(container["name"] for container in spec.get("containers") or ()),
        phase=status.get("phase", ""),
        ready=ready,
        deleting=metadata.get("deletionTimestamp") is not None,
        uid=metadata.get("uid", ""),
        node=spec.get("nodeName") or "",
    )


def selector_string(selector: Mapping[str, str]) -> str:
    """An equality label selector in the API's query syntax: `app=web,tier=front`."""
    return ",".join(f"{name}={value}" for name, value in sorted(selector.items()))


class PodSink(Protocol):
    """Receives one workload's pods from a pod source (LoadModel is one)."""

    def replace_pods(self, key: WorkloadKey, pods: Iterable[PodState]) -> None: ...

    def upsert_pod(self, key: WorkloadKey, pod: PodState) -> None: ...

    def delete_pod(self, key: WorkloadKey, name: str) -> None: ...


class PodSource(Protocol):
    """Feeds a sink with the pods of one workload until the watch is cancelled."""

    async def watch_pods(self, profile: WorkloadProfile, sink: PodSink) -> None: ...

    async def aclose(self) -> None: ...


class InMemoryPodSource:
    """Pods kept in memory and changed by the test: `put_pod`, `remove_pod`.

    Every change reaches the watching sinks at once (same event loop, no copy of the API's
    delays), so a test controls exactly which pods exist.
    """

    def __init__(self, pods: Iterable[PodState] = ()) -> None:
        self._pods: dict[tuple[str, str], PodState] = {
            (pod.namespace, pod.name): pod for pod in pods
        }
        self._watchers: dict[WorkloadKey, tuple[WorkloadProfile, PodSink]] = {}

    @property
    def pods(self) -> list[PodState]:
        return list(self._pods.values())

    def put_pod(self, pod: PodState) -> None:
        """Create or update a pod."""
        self._pods[pod.namespace, pod.name] = pod
        for key, (profile, sink) in self._watchers.items():
            if profile.selects(pod):
                sink.upsert_pod(key, pod)
            else:
                sink.delete_pod(key, pod.name)

    def remove_pod(self, namespace: str, name: str) -> None:
        """Delete a pod (as when its deletion is finished)."""
        self._pods.pop((namespace, name), None)
        for key, (profile, sink) in self._watchers.items():
            if profile.namespace == namespace:
                sink.delete_pod(key, name)

    async def watch_pods(self, profile: WorkloadProfile, sink: PodSink) -> None:
        self._watchers[profile.key] = (profile, sink)
        try:
            sink.replace_pods(profile.key, [p for p in self._pods.values() if profile.selects(p)])
            await asyncio.Event().wait()
        finally:
            if self._watchers.get(profile.key) == (profile, sink):
                del self._watchers[profile.key]

    async def aclose(self) -> None:
        self._watchers.clear()


class ResourceExpiredError(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


class KubernetesPodSource:
    """List + watch of a workload's pods through the API server (kubernetes_asyncio).

    The list gives the complete set (`replace_pods`) and a resourceVersion; the watch
    (`allowWatchBookmarks`, server-side timeout `watch_timeout_seconds`) continues from it and is
    resumed from the last version seen. A 410 Gone, as an HTTP status or an ERROR event, means a
    relist. Other failures are logged and retried after `retry_seconds`.
    """

    def __init__(
        self,
        kubeconfig: Path | str,
        *,
        context: str | None = None,
        watch_timeout_seconds: int = 60,
        retry_seconds: float = 1.0,
    ) -> None:
        self._kubeconfig = Path(kubeconfig)
        self._context = context
        self._watch_timeout_seconds = watch_timeout_seconds
        self._retry_seconds = retry_seconds
        self._client: ApiClient | None = None
        self._client_lock = asyncio.Lock()

    async def _api(self) -> CoreV1Api:
        async with self._client_lock:
            if self._client is None:
                self._client = await new_client_from_config(
                    config_file=str(self._kubeconfig), context=self._context, persist_config=False
                )
            return CoreV1Api(self._client)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def watch_pods(self, profile: WorkloadProfile, sink: PodSink) -> None:
        workload = str(profile.key)
        while True:
            try:
                api = await self._api()
                resource_version = await self._list(api, profile, sink)
                while True:
                    resource_version = await self._watch(api, profile, sink, resource_version)
            except ResourceExpiredError:
                log.info("pod_watch_relist", workload=workload, reason="410 Gone")
            except (ApiException, aiohttp.ClientError, OSError, ValueError, KeyError) as error:
                log.warning("pod_watch_failed", workload=workload, error=repr(error))
                await asyncio.sleep(self._retry_seconds)

    async def _list(self, api: CoreV1Api, profile: WorkloadProfile, sink: PodSink) -> str:
        # With _preload_content=False the client returns the raw aiohttp response.
        response: aiohttp.ClientResponse = await api.list_namespaced_pod(  # type: ignore[assignment]
            profile.namespace,
            label_selector=selector_string(profile.selector),
            _preload_content=False,
            _request_timeout=HTTP_TIMEOUT_SECONDS,
        )
        try:
            body = await response.read()
            if response.status != 200:
                raise ApiException(status=response.status, reason=body.decode(errors="replace"))
        finally:
            response.release()
        pod_list = json.loads(body)
        sink.replace_pods(
            profile.key, [pod_state_from_json(item) for item in pod_list.get("items") or ()]
        )
        resource_version: str = pod_list["metadata"]["resourceVersion"]
        return resource_version

    async def _watch(
        self,
        api: CoreV1Api,
        profile: WorkloadProfile,
        sink: PodSink,
        resource_version: str,
    ) -> str:
        """One watch request; returns the last resourceVersion when the server ends it."""
        response: aiohttp.ClientResponse = await api.list_namespaced_pod(  # type: ignore[assignment]
            profile.namespace,
            label_selector=selector_string(profile.selector),
            watch=True,
            allow_watch_bookmarks=True,
            resource_version=resource_version,
            timeout_seconds=self._watch_timeout_seconds,
            _preload_content=False,
            _request_timeout=(HTTP_TIMEOUT_SECONDS, self._watch_timeout_seconds + 30),
        )
        try:
            if response.status == 410:
                raise ResourceExpiredError
            if response.status != 200:
                body = await response.read()
                raise ApiException(status=response.status, reason=body.decode(errors="replace"))
            async for line in response.content:
                if line.strip():
                    resource_version = self._apply(profile.key, json.loads(line), sink)
        finally:
            response.release()
        return resource_version

    @staticmethod
    def _apply(key: WorkloadKey, event: Mapping[str, Any], sink: PodSink) -> str:
        event_type = event["type"]
        pod = event["object"]
        if event_type == "ERROR":
            if pod.get("code") == 410:
                raise ResourceExpiredError
            raise ApiException(status=pod.get("code", 500), reason=pod.get("message", ""))
        if event_type in ("ADDED", "MODIFIED"):
            sink.upsert_pod(key, pod_state_from_json(pod))
        elif event_type == "DELETED":
            sink.delete_pod(key, pod["metadata"]["name"])
        # BOOKMARK carries only a newer resourceVersion.
        resource_version: str = pod["metadata"]["resourceVersion"]
        return resource_version


# ---------------------------------------------------------------- metrics


class WorkloadCollector:
    """Collects the model's pods at scrape time (prometheus-client custom collector)."""

    def __init__(self, model: LoadModel) -> None:
        self._model = model

    @staticmethod
    def _families() -> tuple[CounterMetricFamily, GaugeMetricFamily, CounterMetricFamily]:
        container_labels = ["namespace", "pod", "container", "node"]
        return (
            CounterMetricFamily(
                "container_cpu_usage_seconds",
                "Cumulative cpu time consumed in seconds.",
                labels=container_labels,
            ),
            GaugeMetricFamily(
                "container_memory_working_set_bytes",
                "Current working set in bytes.",
                labels=container_labels,
            ),
            CounterMetricFamily(
                "http_requests", "Requests served by the pod.", labels=["namespace", "pod"]
            ),
        )

    @staticmethod
    def _cpu_gauge_family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "lab_container_cpu_usage_cores",
            "CPU usage now in cores (workloads with cpu_gauge only; not a cAdvisor series).",
            labels=["namespace", "pod", "container", "node"],
        )

    @staticmethod
    def _offered_family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "lab_workload_offered_load_rps",
            "Load offered to the workload by the lab (requests/s), served or not.",
            labels=["namespace", "workload"],
        )

    def describe(self) -> Iterator[Metric]:
        yield from self._families()
        yield self._cpu_gauge_family()
        yield self._offered_family()

    def collect(self) -> Iterator[Metric]:
        cpu, memory, requests = self._families()
        cpu_now = self._cpu_gauge_family()
        gauged = {profile.key for profile in self._model.profiles() if profile.cpu_gauge}
        exported: set[tuple[str, str]] = set()
        for sample in self._model.sample():
            if (sample.namespace, sample.pod) in exported:
                continue  # a pod selected by two workloads is exported once (the first)
            exported.add((sample.namespace, sample.pod))
            first, *others = sample.containers
            where = [sample.namespace, sample.pod]
            cpu.add_metric([*where, first, sample.node], float(sample.cpu_usage_seconds))
            memory.add_metric([*where, first, sample.node], sample.memory_working_set_bytes)
            for container in others:
                cpu.add_metric([*where, container, sample.node], 0.0)
                memory.add_metric([*where, container, sample.node], 0)
            if sample.workload in gauged:
                cpu_now.add_metric([*where, first, sample.node], float(sample.cpu_usage_cores))
            requests.add_metric([sample.namespace, sample.pod], float(sample.http_requests))
        offered = self._offered_family()
        for profile in self._model.profiles():
            rps = self._model.load(profile.namespace, profile.workload)
            offered.add_metric([profile.namespace, profile.workload], float(rps))
        yield from (cpu, memory, requests, offered)
        if gauged:
            yield cpu_now


class StaticSeries(BaseModel):
    """One gauge sample the exporter serves as it is (``PUT /series``): for tests that need
    series of other resources (deployments, services, nodes) or external metrics."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
    labels: dict[str, str] = Field(default_factory=dict)
    value: float


class StaticSeriesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    series: list[StaticSeries]


class StaticCollector:
    """Serves the static series last put, grouped into one gauge family per name."""

    def __init__(self) -> None:
        self.series: tuple[StaticSeries, ...] = ()

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        by_name: dict[str, list[StaticSeries]] = {}
        for one in self.series:
            by_name.setdefault(one.name, []).append(one)
        for name, samples in sorted(by_name.items()):
            family = Metric(name, "Static series set by a test.", "gauge")
            for one in samples:
                family.add_sample(name, dict(one.labels), one.value)
            yield family


# ---------------------------------------------------------------- control API


class LoadRequest(BaseModel):
    """Body of `POST /load`."""

    model_config = ConfigDict(extra="forbid")

    namespace: str
    workload: str
    rps: Decimal = Field(ge=0)
    ramp_seconds: Decimal = Field(default=Decimal(0), ge=0)


class WorkloadRequest(BaseModel):
    """Body of `POST /workloads`: a WorkloadProfile plus the initial load."""

    model_config = ConfigDict(extra="forbid")

    namespace: str
    workload: str
    selector: dict[str, str] = Field(min_length=1)
    cpu_per_request_milli: int = Field(default=10, ge=0)
    base_cpu_milli: int = Field(default=10, ge=0)
    base_memory_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    memory_per_rps_bytes: int = Field(default=1024 * 1024, ge=0)
    cpu_gauge: bool = False
    rps: Decimal = Field(default=Decimal(0), ge=0)

    def profile(self) -> WorkloadProfile:
        return WorkloadProfile(
            namespace=self.namespace,
            workload=self.workload,
            selector=self.selector,
            cpu_per_request_milli=self.cpu_per_request_milli,
            base_cpu_milli=self.base_cpu_milli,
            base_memory_bytes=self.base_memory_bytes,
            memory_per_rps_bytes=self.memory_per_rps_bytes,
            cpu_gauge=self.cpu_gauge,
        )


def profile_json(profile: WorkloadProfile, *, rps: RpsValue = 0) -> dict[str, Any]:
    """The `POST /workloads` body for `profile`."""
    return {
        "namespace": profile.namespace,
        "workload": profile.workload,
        "selector": dict(profile.selector),
        "cpu_per_request_milli": profile.cpu_per_request_milli,
        "base_cpu_milli": profile.base_cpu_milli,
        "base_memory_bytes": profile.base_memory_bytes,
        "memory_per_rps_bytes": profile.memory_per_rps_bytes,
        "cpu_gauge": profile.cpu_gauge,
        "rps": float(to_fraction(rps)),
    }


# ---------------------------------------------------------------- the exporter


class WorkloadExporter:
    """The exporter in this event loop: an aiohttp server plus one pod watch per workload.

    pod_source: where pods come from; by default a `KubernetesPodSource` on `kubeconfig`, or an
        empty `InMemoryPodSource` when there is no kubeconfig either.
    host, port: where /metrics and the control endpoints listen (port 0: a free port).
    clock: seconds for the load model; `time.monotonic` in real use.

        async with WorkloadExporter(kubeconfig=path) as exporter:
            exporter.add_workload(WorkloadProfile(namespace="default", workload="web",
                                                  selector={"app": "web"}), rps=10)
            prometheus.add_target("workloads", exporter.scrape_target)
            exporter.set_load("default", "web", 50, ramp_seconds=30)
    """

    def __init__(
        self,
        *,
        pod_source: PodSource | None = None,
        kubeconfig: Path | str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.monotonic,
        workloads: Iterable[WorkloadProfile] = (),
    ) -> None:
        if pod_source is not None and kubeconfig is not None:
            raise ValueError("give a pod_source or a kubeconfig, not both")
        if pod_source is None:
            pod_source = (
                KubernetesPodSource(kubeconfig) if kubeconfig is not None else InMemoryPodSource()
            )
        self.pod_source: PodSource = pod_source
        self.model = LoadModel(clock)
        self.registry = CollectorRegistry()
        self.registry.register(WorkloadCollector(self.model))
        self.static = StaticCollector()
        self.registry.register(self.static)
        self._host = host
        self._requested_port = port
        self._port = 0
        self._runner: web.AppRunner | None = None
        self._watches: dict[WorkloadKey, tuple[WorkloadProfile, asyncio.Task[None]]] = {}
        for profile in workloads:
            self.model.add_workload(profile)

    # ------------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the exporter has no port before start()")
        return self._port

    @property
    def scrape_target(self) -> str:
        """host:port for a Prometheus static_config."""
        return f"{self._host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.scrape_target}"

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Listen, and start a pod watch for every workload added so far."""
        app = web.Application()
        app.router.add_get("/metrics", self._handle_metrics)
        app.router.add_get("/load", self._handle_get_load)
        app.router.add_post("/load", self._handle_post_load)
        app.router.add_get("/workloads", self._handle_get_load)
        app.router.add_post("/workloads", self._handle_post_workload)
        app.router.add_get("/healthz", self._handle_healthz)
        app.router.add_put("/series", self._handle_put_series)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._requested_port)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        for profile in self.model.profiles():
            self._start_watch(profile)
        log.info("exporter_started", url=self.url)

    async def stop(self) -> None:
        """Cancel the watches, stop listening, close the pod source."""
        watches = [task for _, task in self._watches.values()]
        self._watches.clear()
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.pod_source.aclose()

    # ------------------------------------------------------------------ Python API

    def add_workload(self, profile: WorkloadProfile, *, rps: RpsValue = 0) -> None:
        """Export the pods of `profile`'s workload with offered load `rps` (a known workload
        keeps its load and counters and only takes the new profile)."""
        self.model.add_workload(profile, rps=rps)
        if self._runner is not None:
            self._start_watch(profile)

    def set_load(
        self, namespace: str, workload: str, rps: RpsValue, *, ramp_seconds: RpsValue = 0
    ) -> None:
        """Offer `rps` requests/s to the workload, at once or by a linear ramp."""
        self.model.set_load(namespace, workload, rps, ramp_seconds=ramp_seconds)

    def load(self, namespace: str, workload: str) -> Fraction:
        """The offered load now (requests/s)."""
        return self.model.load(namespace, workload)

    def set_series(self, series: Iterable[StaticSeries]) -> None:
        """Serve exactly these static series from now on (the previous ones go stale)."""
        self.static.series = tuple(series)

    def metrics_text(self) -> str:
        return generate_latest(self.registry).decode()

    # ------------------------------------------------------------------ watches

    def _start_watch(self, profile: WorkloadProfile) -> None:
        current = self._watches.get(profile.key)
        if current is not None:
            if current[0].selector == profile.selector:
                return
            current[1].cancel()
        task = asyncio.create_task(self._watch(profile), name=f"pod-watch {profile.key}")
        self._watches[profile.key] = (profile, task)

    async def _watch(self, profile: WorkloadProfile) -> None:
        """Guard of one watch task: an unexpected end is logged (the series then freeze)."""
        try:
            await self.pod_source.watch_pods(profile, self.model)
        except asyncio.CancelledError:
            raise
        except Exception:  # logged with its traceback; the task ends here
            log.exception("pod_watch_exited", workload=str(profile.key))
        else:
            log.error("pod_watch_exited", workload=str(profile.key), reason="returned")

    # ------------------------------------------------------------------ HTTP handlers

    async def _handle_metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4}
        )

    async def _handle_healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _workload_json(self, profile: WorkloadProfile) -> dict[str, Any]:
        pods = [
            {
                "pod": sample.pod,
                "serving": sample.serving,
                "load_share_rps": float(sample.load_share_rps),
            }
            for sample in self.model.sample()
            if sample.workload == profile.key
        ]
        return {
            **profile_json(profile),
            "rps": float(self.model.load(profile.namespace, profile.workload)),
            "target_rps": float(self.model.target_load(profile.namespace, profile.workload)),
            "pods": pods,
        }

    async def _handle_get_load(self, request: web.Request) -> web.Response:
        workloads = [self._workload_json(profile) for profile in self.model.profiles()]
        return web.json_response({"workloads": workloads})

    async def _handle_post_load(self, request: web.Request) -> web.Response:
        try:
            body = LoadRequest.model_validate_json(await request.read())
        except ValidationError as error:
            return _error_response(400, error.json(include_url=False))
        try:
            self.set_load(body.namespace, body.workload, body.rps, ramp_seconds=body.ramp_seconds)
        except KeyError:
            return _error_response(404, f"unknown workload {body.namespace}/{body.workload}")
        profile = self.model.profile(body.namespace, body.workload)
        return web.json_response(self._workload_json(profile))

    async def _handle_post_workload(self, request: web.Request) -> web.Response:
        try:
            body = WorkloadRequest.model_validate_json(await request.read())
        except ValidationError as error:
            return _error_response(400, error.json(include_url=False))
        self.add_workload(body.profile(), rps=body.rps)
        return web.json_response(self._workload_json(body.profile()), status=201)

    async def _handle_put_series(self, request: web.Request) -> web.Response:
        try:
            body = StaticSeriesRequest.model_validate_json(await request.read())
        except ValidationError as error:
            return _error_response(400, error.json(include_url=False))
        self.set_series(body.series)
        return web.json_response({"series": len(body.series)})


def _error_response(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


# ---------------------------------------------------------------- child process


class ExporterProcess:
    """The exporter as a child process (`python -m tests.lab.exporter`), for blocking code.

    kubeconfig: the cluster whose pods are watched (None: no cluster, no pods).
    workdir: where exporter.log and the port file go.

        with ExporterProcess(kubeconfig=kubeconfig, workdir=lab_dir / "exporter") as exporter:
            exporter.add_workload(profile, rps=10)
            prometheus.add_target("workloads", exporter.scrape_target)
            exporter.set_load("default", "web", 40)
    """

    def __init__(
        self,
        *,
        workdir: Path,
        kubeconfig: Path | str | None = None,
        context: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        workloads: Iterable[WorkloadProfile] = (),
        python: str = sys.executable,
    ) -> None:
        self._workdir = workdir
        self._kubeconfig = kubeconfig
        self._context = context
        self._host = host
        self._requested_port = port
        self._port = 0
        self._initial_workloads = list(workloads)
        self._python = python
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self._workdir / "exporter.log"

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the exporter has no port before start()")
        return self._port

    @property
    def scrape_target(self) -> str:
        return f"{self._host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.scrape_target}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

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
        """Start the process and wait until it listens and answers /healthz."""
        if self.running:
            return
        self._workdir.mkdir(parents=True, exist_ok=True)
        port_file = self._workdir / "exporter.port"
        port_file.unlink(missing_ok=True)
        argv = [
            self._python,
            "-m",
            "tests.lab.exporter",
            f"--host={self._host}",
            f"--port={self._requested_port}",
            f"--port-file={port_file}",
        ]
        if self._kubeconfig is not None:
            argv.append(f"--kubeconfig={self._kubeconfig}")
        if self._context is not None:
            argv.append(f"--context={self._context}")
        python_path = [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(python_path)}
        with self.log_path.open("ab") as log_file:
            process = self._process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self._read_port(port_file):
            if process.poll() is not None:
                raise RuntimeError(f"the exporter exited during start:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the exporter did not listen within {START_TIMEOUT_SECONDS}s")
            time.sleep(0.05)
        self._request("GET", "/healthz")
        for profile in self._initial_workloads:
            self.add_workload(profile)

    def _read_port(self, port_file: Path) -> bool:
        try:
            text = port_file.read_text()
        except FileNotFoundError:
            return False
        if not text.endswith("\n"):
            return False
        self._port = int(text)
        return True

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after a grace period."""
        process = self._process
        self._process = None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def _log_tail(self, line_count: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-line_count:])
        except OSError:
            return ""

    # ------------------------------------------------------------------ control (HTTP)

    def add_workload(self, profile: WorkloadProfile, *, rps: RpsValue = 0) -> dict[str, Any]:
        """POST /workloads: export `profile`'s pods with offered load `rps`."""
        return self._request("POST", "/workloads", profile_json(profile, rps=rps))

    def set_load(
        self, namespace: str, workload: str, rps: RpsValue, *, ramp_seconds: RpsValue = 0
    ) -> dict[str, Any]:
        """POST /load: offer `rps` requests/s, at once or by a linear ramp."""
        body = {
            "namespace": namespace,
            "workload": workload,
            "rps": float(to_fraction(rps)),
            "ramp_seconds": float(to_fraction(ramp_seconds)),
        }
        return self._request("POST", "/load", body)

    def set_series(self, series: Iterable[StaticSeries]) -> None:
        """PUT /series: serve exactly these static gauges (name, labels, value) from now on."""
        self._request("PUT", "/series", {"series": [one.model_dump() for one in series]})

    def workloads(self) -> list[dict[str, Any]]:
        """GET /load: every workload with its current and target load and its pods."""
        workloads: list[dict[str, Any]] = self._request("GET", "/load")["workloads"]
        return workloads

    def metrics_text(self) -> str:
        url = f"{self.url}/metrics"
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_SECONDS) as response:  # noqa: S310
            return bytes(response.read()).decode()

    def _request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS) as response:  # noqa: S310
                payload = bytes(response.read())
        except urllib.error.HTTPError as error:
            raise RuntimeError(
                f"{method} {path} answered {error.code}: {error.read().decode(errors='replace')}"
            ) from None
        if path == "/healthz":
            return {}
        result: dict[str, Any] = json.loads(payload)
        return result


# ---------------------------------------------------------------- command line


def parse_workload(text: str) -> WorkloadProfile:
    """`NAMESPACE/NAME:LABEL=VALUE[,LABEL=VALUE...]` with the profile's default costs."""
    name_part, _, selector_part = text.partition(":")
    namespace, _, workload = name_part.partition("/")
    selector = dict(item.split("=", 1) for item in selector_part.split(",") if "=" in item)
    if not namespace or not workload or not selector:
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME:LABEL=VALUE,..., got {text!r}")
    return WorkloadProfile(namespace=namespace, workload=workload, selector=selector)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.lab.exporter",
        description="The lab's workload exporter (cAdvisor-style series from a load model).",
    )
    parser.add_argument("--kubeconfig", type=Path, help="watch pods here (default: no cluster)")
    parser.add_argument("--context", help="kubeconfig context (default: current)")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="listen port (default 0: free port)")
    parser.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    parser.add_argument(
        "--workload",
        type=parse_workload,
        action="append",
        default=[],
        help="NAMESPACE/NAME:LABEL=VALUE,... (repeatable; costs via POST /workloads)",
    )
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    """Run until SIGTERM or SIGINT."""
    pod_source: PodSource = (
        KubernetesPodSource(args.kubeconfig, context=args.context)
        if args.kubeconfig is not None
        else InMemoryPodSource()
    )
    exporter = WorkloadExporter(
        pod_source=pod_source, host=args.host, port=args.port, workloads=args.workload
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    async with exporter:
        if args.port_file is not None:
            partial = args.port_file.with_suffix(".tmp")
            partial.write_text(f"{exporter.port}\n")
            partial.replace(args.port_file)
        await stopping.wait()
    log.info("exporter_stopped")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
