"""The workload exporter: /metrics for a set of pods, the control endpoint, the pod watch (against a
fake API server), the child process, and a real Prometheus scraping it at 1 s."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from tests.lab.exporter import (
    ExporterProcess,
    InMemoryPodSource,
    KubernetesPodSource,
    WorkloadExporter,
    parse_workload,
    pod_state_from_json,
)
from tests.lab.load_model import PodState, WorkloadProfile
from tests.lab.prometheus import PrometheusServer

T = TypeVar("T")
NS = "shop"
NODE = "kwok-node-1"
LABELS = {"app": "web"}
PROFILE = WorkloadProfile(
    namespace=NS,
    workload="web",
    selector=LABELS,
    cpu_per_request_milli=20,
    base_cpu_milli=100,
    base_memory_bytes=50_000_000,
    memory_per_rps_bytes=1_000_000,
)


class ManualClock:
    def __init__(self) -> None:
        self.now_seconds = 100.0

    def __call__(self) -> float:
        return self.now_seconds


def pod(name: str, *, ready: bool = True, phase: str = "Running", app: str = "web") -> PodState:
    return PodState(
        namespace=NS,
        name=name,
        labels={"app": app},
        containers=("app", "sidecar"),
        phase=phase,
        ready=ready,
        node=NODE,
    )


async def wait_for(
    probe: Callable[[], Awaitable[T]],
    accept: Callable[[T], bool],
    *,
    timeout_seconds: float,
    poll_seconds: float = 0.05,
) -> T:
    """Poll `probe` until `accept` holds; fail with the last value at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_seconds
    while True:
        value = await probe()
        if accept(value):
            return value
        if loop.time() > deadline:
            pytest.fail(f"not reached within {timeout_seconds}s; last value: {value!r}")
        await asyncio.sleep(poll_seconds)


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def series(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return (name, tuple(sorted(labels.items())))


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield session


# ---------------------------------------------------------------- /metrics


async def test_metrics_hold_cadvisor_style_series_for_the_running_pods(
    http: aiohttp.ClientSession,
) -> None:
    clock = ManualClock()
    source = InMemoryPodSource(
        [pod("a"), pod("b"), pod("c", ready=False), pod("d", phase="Pending"), pod("x", app="db")]
    )
    async with WorkloadExporter(pod_source=source, clock=clock) as exporter:
        exporter.add_workload(PROFILE, rps=30)
        await asyncio.sleep(0)  # the watch task delivers the initial list
        clock.now_seconds += 10

        async with http.get(f"{exporter.url}/metrics") as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            metrics = parse_metrics(await response.text())

    cpu = "container_cpu_usage_seconds_total"
    memory = "container_memory_working_set_bytes"
    assert metrics == {
        # 15 rps each for a and b: 0.1 core + 15 * 20 ms, for 10 s.
        series(cpu, namespace=NS, pod="a", container="app", node=NODE): 4.0,
        series(cpu, namespace=NS, pod="a", container="sidecar", node=NODE): 0.0,
        series(cpu, namespace=NS, pod="b", container="app", node=NODE): 4.0,
        series(cpu, namespace=NS, pod="b", container="sidecar", node=NODE): 0.0,
        # c is Running but not Ready: base CPU only, no requests.
        series(cpu, namespace=NS, pod="c", container="app", node=NODE): 1.0,
        series(cpu, namespace=NS, pod="c", container="sidecar", node=NODE): 0.0,
        series(memory, namespace=NS, pod="a", container="app", node=NODE): 65_000_000,
        series(memory, namespace=NS, pod="a", container="sidecar", node=NODE): 0,
        series(memory, namespace=NS, pod="b", container="app", node=NODE): 65_000_000,
        series(memory, namespace=NS, pod="b", container="sidecar", node=NODE): 0,
        series(memory, namespace=NS, pod="c", container="app", node=NODE): 50_000_000,
        series(memory, namespace=NS, pod="c", container="sidecar", node=NODE): 0,
        series("http_requests_total", namespace=NS, pod="a"): 150,
        series("http_requests_total", namespace=NS, pod="b"): 150,
        series("http_requests_total", namespace=NS, pod="c"): 0,
        series("lab_workload_offered_load_rps", namespace=NS, workload="web"): 30,
    }


async def test_a_removed_pod_disappears_from_metrics_and_its_load_moves() -> None:
    clock = ManualClock()
    source = InMemoryPodSource([pod("a"), pod("b")])
    async with WorkloadExporter(pod_source=source, clock=clock) as exporter:
        exporter.add_workload(PROFILE, rps=20)
        await asyncio.sleep(0)
        clock.now_seconds += 1
        source.remove_pod(NS, "b")
        clock.now_seconds += 1
        metrics = parse_metrics(exporter.metrics_text())

    requests = {
        labels: value for (name, labels), value in metrics.items() if name == "http_requests_total"
    }
    assert requests == {(("namespace", NS), ("pod", "a")): 10 + 20}
    assert not [labels for (_, labels) in metrics if ("pod", "b") in labels]


async def test_a_cpu_gauge_workload_also_exports_its_cpu_usage_now() -> None:
    clock = ManualClock()
    source = InMemoryPodSource([pod("a"), pod("b", ready=False), pod("c", phase="Pending")])
    async with WorkloadExporter(pod_source=source, clock=clock) as exporter:
        exporter.add_workload(dataclasses.replace(PROFILE, cpu_gauge=True), rps=30)
        await asyncio.sleep(0)
        clock.now_seconds += 10
        metrics = parse_metrics(exporter.metrics_text())

    gauge = {
        dict(labels)["pod"]: value
        for (name, labels), value in metrics.items()
        if name == "lab_container_cpu_usage_cores"
    }
    # a serves all 30 rps: 0.1 core + 30 * 20 ms; b is Running, not Ready: 0.1; c is not Running.
    assert gauge == {"a": 0.7, "b": 0.1}
    assert (
        series("lab_container_cpu_usage_cores", namespace=NS, pod="a", container="app", node=NODE)
        in metrics
    )


async def test_the_cpu_gauge_is_not_exported_without_the_profile_switch() -> None:
    clock = ManualClock()
    async with WorkloadExporter(pod_source=InMemoryPodSource([pod("a")]), clock=clock) as exporter:
        exporter.add_workload(PROFILE, rps=30)
        await asyncio.sleep(0)
        assert "lab_container_cpu_usage_cores" not in exporter.metrics_text()


# ---------------------------------------------------------------- control endpoint


async def test_post_load_changes_the_offered_load(http: aiohttp.ClientSession) -> None:
    clock = ManualClock()
    async with WorkloadExporter(
        pod_source=InMemoryPodSource([pod("a")]), clock=clock, workloads=[PROFILE]
    ) as exporter:
        await asyncio.sleep(0)
        body = {"namespace": NS, "workload": "web", "rps": 12.5, "ramp_seconds": 10}
        async with http.post(f"{exporter.url}/load", json=body) as response:
            assert response.status == 200
            answer = await response.json()
        assert answer["rps"] == 0
        assert answer["target_rps"] == 12.5
        clock.now_seconds += 5

        async with http.get(f"{exporter.url}/load") as response:
            (workload,) = (await response.json())["workloads"]

    assert workload["rps"] == 6.25
    assert workload["selector"] == LABELS
    assert workload["pods"] == [{"pod": "a", "serving": True, "load_share_rps": 6.25}]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"namespace": NS, "workload": "nope", "rps": 1}, 404, "unknown workload shop/nope"),
        ({"namespace": NS, "workload": "web", "rps": -1}, 400, "greater than or equal to 0"),
        ({"namespace": NS, "workload": "web"}, 400, "Field required"),
        ({"namespace": NS, "workload": "web", "rps": 1, "burst": 2}, 400, "Extra inputs"),
        ("not json", 400, "Invalid JSON"),
    ],
)
async def test_post_load_refuses_bad_requests(
    http: aiohttp.ClientSession, body: Any, status: int, message: str
) -> None:
    async with WorkloadExporter(workloads=[PROFILE]) as exporter:
        data = body if isinstance(body, str) else json.dumps(body)
        async with http.post(f"{exporter.url}/load", data=data) as response:
            assert response.status == status
            assert message in (await response.json())["error"]
        assert exporter.load(NS, "web") == 0


async def test_post_workloads_starts_watching_its_pods(http: aiohttp.ClientSession) -> None:
    source = InMemoryPodSource([pod("a"), pod("b", app="db")])
    async with WorkloadExporter(pod_source=source) as exporter:
        body = {"namespace": NS, "workload": "db", "selector": {"app": "db"}, "rps": 3}
        async with http.post(f"{exporter.url}/workloads", json=body) as response:
            assert response.status == 201
        await asyncio.sleep(0)

        samples = exporter.model.sample()

    assert [(sample.pod, float(sample.load_share_rps)) for sample in samples] == [("b", 3.0)]
    assert exporter.model.profile(NS, "db").base_cpu_milli == 10  # the documented default


async def test_put_series_serves_exactly_the_static_series(http: aiohttp.ClientSession) -> None:
    async with WorkloadExporter() as exporter:
        body = {
            "series": [
                {"name": "queue_depth", "labels": {"queue": "a", "namespace": NS}, "value": 3},
                {"name": "queue_depth", "labels": {"queue": "b"}, "value": 0.5},
            ]
        }
        async with http.put(f"{exporter.url}/series", json=body) as response:
            assert response.status == 200
        first = parse_metrics(exporter.metrics_text())
        async with http.put(f"{exporter.url}/series", json={"series": []}) as response:
            assert response.status == 200
        second = parse_metrics(exporter.metrics_text())
        async with http.put(f"{exporter.url}/series", json={"series": [{"name": "1x"}]}) as bad:
            assert bad.status == 400

    assert first[series("queue_depth", queue="a", namespace=NS)] == 3
    assert first[series("queue_depth", queue="b")] == 0.5
    assert not any(name == "queue_depth" for name, _ in second)


def test_workload_flag_parses_namespace_name_and_selector() -> None:
    profile = parse_workload("shop/web:app=web,tier=front")

    assert (profile.namespace, profile.workload) == ("shop", "web")
    assert profile.selector == {"app": "web", "tier": "front"}


# ---------------------------------------------------------------- pod watch (fake API server)


def api_pod(
    name: str,
    *,
    app: str = "web",
    ready: bool = True,
    resource_version: int = 1,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "labels": {"app": app},
        "resourceVersion": str(resource_version),
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": metadata,
        "spec": {"containers": [{"name": "app"}, {"name": "proxy"}], "nodeName": NODE},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_pod_state_follows_phase_ready_condition_and_deletion() -> None:
    assert pod_state_from_json(api_pod("a")).serving
    assert not pod_state_from_json(api_pod("a", ready=False)).serving
    assert pod_state_from_json(api_pod("a", ready=False)).running
    terminating = pod_state_from_json(api_pod("a", deleting=True))
    assert terminating.running
    assert not terminating.serving
    assert terminating.containers == ("app", "proxy")
    assert terminating.uid == "uid-a"
    assert terminating.node == NODE


class FakePodApi:
    """GET /api/v1/namespaces/{namespace}/pods: list, and watch streams fed by the test."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        self.resource_version = 10
        self.lists: list[dict[str, str]] = []
        self.watches: list[dict[str, str]] = []
        self._streams: list[asyncio.Queue[dict[str, Any] | None]] = []
        self.gone_on_next_watch = False

    def set_quietly(self, *pods: dict[str, Any]) -> None:
        """Change the stored pods without telling the watchers (what a relist must find)."""
        self.pods = {pod["metadata"]["name"]: pod for pod in pods}

    def emit(self, event_type: str, pod: dict[str, Any]) -> None:
        self.resource_version += 1
        pod["metadata"]["resourceVersion"] = str(self.resource_version)
        if event_type == "DELETED":
            self.pods.pop(pod["metadata"]["name"], None)
        else:
            self.pods[pod["metadata"]["name"]] = pod
        self._send({"type": event_type, "object": pod})

    def expire(self) -> None:
        """An ERROR event with 410 Gone, as when the watch cache dropped our version."""
        status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
        self._send({"type": "ERROR", "object": status})

    def _send(self, event: dict[str, Any]) -> None:
        for stream in self._streams:
            stream.put_nowait(event)

    @staticmethod
    def _selected(pod: dict[str, Any], selector: str) -> bool:
        wanted = dict(item.split("=", 1) for item in selector.split(",") if item)
        labels = pod["metadata"]["labels"]
        return all(labels.get(name) == value for name, value in wanted.items())

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert request.match_info["namespace"] == NS
        query = dict(request.query)
        selector = query.get("labelSelector", "")
        # The API server parses booleans like Go's strconv.ParseBool ("true", "True", "1").
        if query.get("watch", "").lower() not in ("true", "1"):
            self.lists.append(query)
            items = [pod for pod in self.pods.values() if self._selected(pod, selector)]
            return web.json_response(
                {"metadata": {"resourceVersion": str(self.resource_version)}, "items": items}
            )
        self.watches.append(query)
        if self.gone_on_next_watch:
            self.gone_on_next_watch = False
            return web.json_response({"kind": "Status", "code": 410}, status=410)
        response = web.StreamResponse()
        await response.prepare(request)
        stream: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._streams.append(stream)
        try:
            while (event := await stream.get()) is not None:
                if event["type"] == "ERROR" or self._selected(event["object"], selector):
                    await response.write(json.dumps(event).encode() + b"\n")
                if event["type"] == "ERROR":
                    break
        finally:
            self._streams.remove(stream)
        return response

    def close_streams(self) -> None:
        for stream in self._streams:
            stream.put_nowait(None)


@pytest.fixture
async def fake_api(tmp_path: Path) -> AsyncIterator[tuple[FakePodApi, Path]]:
    api = FakePodApi()
    app = web.Application()
    app.router.add_get("/api/v1/namespaces/{namespace}/pods", api.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "fake", "user": {}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                "current-context": "fake",
            }
        )
    )
    try:
        yield api, kubeconfig
    finally:
        api.close_streams()
        await runner.cleanup()


async def test_the_watch_follows_pods_and_relists_on_410_gone(
    fake_api: tuple[FakePodApi, Path],
) -> None:
    api, kubeconfig = fake_api
    api.set_quietly(api_pod("web-1"), api_pod("web-2", ready=False), api_pod("db-1", app="db"))
    source = KubernetesPodSource(kubeconfig, retry_seconds=0.05)
    async with WorkloadExporter(pod_source=source, workloads=[PROFILE]) as exporter:

        async def pods() -> list[tuple[str, bool]]:
            return [(sample.pod, sample.serving) for sample in exporter.model.sample()]

        # The list: only the selected pods, with their readiness.
        await wait_for(pods, lambda p: p == [("web-1", True), ("web-2", False)], timeout_seconds=5)
        assert api.lists[0]["labelSelector"] == "app=web"
        # The watch resumes from the list's resourceVersion, with bookmarks.

        async def watches() -> list[dict[str, str]]:
            return api.watches

        await wait_for(watches, bool, timeout_seconds=5)
        assert api.watches[0]["resourceVersion"] == "10"
        assert api.watches[0]["allowWatchBookmarks"].lower() == "true"

        # Watch events: a pod turns Ready, another is added, one is deleted.
        api.emit("MODIFIED", api_pod("web-2"))
        api.emit("ADDED", api_pod("web-3", ready=False))
        api.emit("DELETED", api_pod("web-1"))
        api.emit("ADDED", api_pod("db-2", app="db"))  # not selected: never reaches us
        await wait_for(pods, lambda p: p == [("web-2", True), ("web-3", False)], timeout_seconds=5)

        # 410 Gone as an event: the source lists again and finds what changed meanwhile.
        api.set_quietly(api_pod("web-4"))
        api.expire()
        await wait_for(pods, lambda p: p == [("web-4", True)], timeout_seconds=5)
        assert len(api.lists) == 2

        # 410 Gone as the watch's HTTP status: a relist too.
        api.gone_on_next_watch = True
        api.set_quietly(api_pod("web-5"))
        api.close_streams()  # the server ends the current watch; the next one gets 410
        await wait_for(pods, lambda p: p == [("web-5", True)], timeout_seconds=5)
        assert len(api.lists) == 3


async def test_the_exporter_watches_through_a_kubeconfig(
    fake_api: tuple[FakePodApi, Path], http: aiohttp.ClientSession
) -> None:
    api, kubeconfig = fake_api
    api.set_quietly(api_pod("web-1"))
    async with WorkloadExporter(kubeconfig=kubeconfig, workloads=[PROFILE]) as exporter:

        async def metrics() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
            async with http.get(f"{exporter.url}/metrics") as response:
                return parse_metrics(await response.text())

        request_series = series("http_requests_total", namespace=NS, pod="web-1")
        await wait_for(metrics, lambda m: request_series in m, timeout_seconds=5)


# ---------------------------------------------------------------- child process


@pytest.fixture
def exporter_process(tmp_path: Path) -> Iterator[ExporterProcess]:
    with ExporterProcess(workdir=tmp_path / "exporter", workloads=[PROFILE]) as process:
        yield process
    assert not process.running


def test_the_exporter_runs_as_a_process_steered_over_http(
    exporter_process: ExporterProcess,
) -> None:
    exporter_process.add_workload(
        WorkloadProfile(namespace=NS, workload="db", selector={"app": "db"}), rps=2
    )
    answer = exporter_process.set_load(NS, "web", 40)

    assert answer["target_rps"] == 40
    assert {(w["workload"], w["target_rps"]) for w in exporter_process.workloads()} == {
        ("web", 40),
        ("db", 2),
    }
    metrics = parse_metrics(exporter_process.metrics_text())
    assert metrics[series("lab_workload_offered_load_rps", namespace=NS, workload="web")] == 40
    with pytest.raises(RuntimeError, match="404"):
        exporter_process.set_load(NS, "missing", 1)


# ---------------------------------------------------------------- with a real Prometheus


async def test_prometheus_holds_exactly_the_live_pods_and_rates_follow_set_load(
    tmp_path: Path,
) -> None:
    source = InMemoryPodSource([pod("a"), pod("b")])
    async with WorkloadExporter(pod_source=source, workloads=[PROFILE]) as exporter:
        exporter.set_load(NS, "web", 10)
        with PrometheusServer(
            {"workloads": [exporter.scrape_target]}, workdir=tmp_path / "prometheus"
        ) as prometheus:

            async def live_pods() -> dict[str, set[str]]:
                found: dict[str, set[str]] = {}
                for name in (
                    "http_requests_total",
                    "container_cpu_usage_seconds_total",
                    "container_memory_working_set_bytes",
                ):
                    samples = await prometheus.query_async(f'{name}{{namespace="{NS}"}}')
                    found[name] = {sample.labels["pod"] for sample in samples}
                return found

            def exactly(*pods: str) -> Callable[[dict[str, set[str]]], bool]:
                return lambda found: all(value == set(pods) for value in found.values())

            async def rates() -> tuple[float, dict[str, float]]:
                total = await prometheus.query_async(
                    f'sum(rate(http_requests_total{{namespace="{NS}"}}[5s]))'
                )
                cpu = await prometheus.query_async(
                    f'rate(container_cpu_usage_seconds_total{{namespace="{NS}",container="app"}}[5s])'
                )
                return (
                    total[0].value if total else 0.0,
                    {sample.labels["pod"]: sample.value for sample in cpu},
                )

            def near(expected: float, value: float) -> bool:
                return abs(value - expected) <= 0.1 * expected

            # Prometheus discovers its static target within ~6 s of starting.
            await wait_for(live_pods, exactly("a", "b"), timeout_seconds=20, poll_seconds=0.25)

            # rate() follows set_load: 10 rps in total, then 40; CPU = 0.1 + share * 0.02.
            await wait_for(
                rates,
                lambda r: near(10, r[0]) and set(r[1]) == {"a", "b"},
                timeout_seconds=15,
                poll_seconds=0.25,
            )
            exporter.set_load(NS, "web", 40)
            _, cpu = await wait_for(
                rates,
                lambda r: near(40, r[0]) and all(near(0.5, v) for v in r[1].values()),
                timeout_seconds=15,
                poll_seconds=0.25,
            )
            assert set(cpu) == {"a", "b"}
            memory = await prometheus.query_async(
                f'container_memory_working_set_bytes{{namespace="{NS}",container="app"}}'
            )
            assert {sample.value for sample in memory} == {50_000_000 + 20 * 1_000_000}

            # Scaling: b goes away and c comes; Prometheus holds exactly a and c within 10 s.
            source.remove_pod(NS, "b")
            source.put_pod(pod("c"))
            await wait_for(live_pods, exactly("a", "c"), timeout_seconds=10, poll_seconds=0.25)
