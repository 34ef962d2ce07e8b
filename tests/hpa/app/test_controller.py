"""``hpa controller`` wiring against the in-memory API server: informers -> reconcile ->
``/scale``, ``/status`` and events, behind leader election."""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import itertools
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from hpa.app.controller import (
    WORKLOAD_PATHS,
    ControllerAppSettings,
    HorizontalControllerApp,
    add_flags,
    build_app,
    from_args,
)
from hpa.controllers.api_ports import InformerScaleClient, KubeScaleClient
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.core.spec import CrossVersionObjectReference
from hpa.kube.client import KubeClient, RetryPolicy
from hpa.kube.informer import Informer
from hpa.kube.records import (
    WorkloadRecord,
    parse_workload,
)
from hpa.kube.scale import ResourceMapper, ScaleClient, ScaleConflict, ScaleUpdated
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo
from tests.fakes.clock import FakeClock

METRICS = ResourceInfo(prefix="/apis/metrics.k8s.io/v1beta1", plural="pods", kind="PodMetrics")
LONG_AGO = "2025-12-31T00:00:00Z"


@pytest.fixture
async def apiserver() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer((*DEFAULT_RESOURCES, METRICS))
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def kube(apiserver: FakeApiServer) -> AsyncIterator[KubeClient]:
    session = aiohttp.ClientSession()
    client = KubeClient(
        session,
        apiserver.url,
        clock=FakeClock(auto_advance=True),
        rng=random.Random(1),
        retry=RetryPolicy(max_attempts=2),
    )
    yield client
    await client.close()


async def seed(
    kube: KubeClient, *, cpu_usage: str, annotations: dict[str, str] | None = None
) -> None:
    """Create the objects through the API, as another client would."""
    await kube.post(
        "/apis/apps/v1/namespaces/default/deployments",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2},
        },
    )
    for index in range(2):
        name = f"web-{index}"
        await kube.post(
            "/api/v1/namespaces/default/pods",
            {
                "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {
                    "phase": "Running",
                    "startTime": LONG_AGO,
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": LONG_AGO}
                    ],
                },
            },
        )
        await kube.post(
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
            {
                "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
                "timestamp": "2026-01-01T00:00:00Z",
                "window": "30s",
                "containers": [{"name": "app", "usage": {"cpu": cpu_usage}}],
            },
        )
    await kube.post(
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "generation": 1,
                "annotations": annotations or {},
            },
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ],
            },
        },
    )


def settings(**horizontal: Any) -> ControllerAppSettings:
    return ControllerAppSettings(
        horizontal=HorizontalControllerSettings(**horizontal),
        port=0,
        leader_elect_resource_namespace="default",
    )


async def eventually(
    predicate: Callable[[], Awaitable[bool]], *, timeout_seconds: float = 5.0
) -> None:
    """Poll ``predicate`` (an API read) until it holds; each read is real HTTP I/O."""
    async with asyncio.timeout(timeout_seconds):
        for _ in itertools.count():
            if await predicate():
                return
            await asyncio.sleep(0)  # one loop turn: lets the controller's exchanges progress


async def replicas(kube: KubeClient) -> int:
    deployment = await kube.get("/apis/apps/v1/namespaces/default/deployments/web")
    return int(deployment["spec"]["replicas"])


async def hpa_status(kube: KubeClient) -> dict[str, Any]:
    hpa = await kube.get("/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web")
    return dict(hpa.get("status") or {})


async def event_reasons(kube: KubeClient) -> list[str]:
    events = await kube.list("/api/v1/namespaces/default/events")
    return [str(event["reason"]) for event in events.get("items") or ()]


async def lease_holder(kube: KubeClient) -> str:
    lease = await kube.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/hpa-controller")
    return str(lease["spec"].get("holderIdentity") or "")


async def start(app: HorizontalControllerApp) -> asyncio.Task[None]:
    return asyncio.create_task(app.run(), name="app")


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_the_leader_scales_writes_status_and_records_the_event(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, cpu_usage="1")  # 100 % of the request, target 50 %
    app = build_app(
        settings(), kube, clock=FakeClock(), registry=CollectorRegistry(), identity="me"
    )
    task = await start(app)
    try:

        async def scaled() -> bool:
            return await replicas(kube) == 4

        async def status_written() -> bool:
            return (await hpa_status(kube)).get("desiredReplicas") == 4

        async def event_written() -> bool:
            return "SuccessfulRescale" in await event_reasons(kube)

        await eventually(scaled)
        await eventually(status_written)
        await eventually(event_written)
        assert await lease_holder(kube) == "me"
        status = await hpa_status(kube)
        assert status["currentReplicas"] == 2
        assert status["observedGeneration"] == 1
        conditions = {c["type"]: c["reason"] for c in status["conditions"]}
        assert conditions["AbleToScale"] == "SucceededRescale"
        assert app.ready()
        metrics_reads = [
            r
            for r in apiserver.requests
            if r.method == "GET" and r.path.startswith("/apis/metrics.k8s.io")
        ]
        assert metrics_reads[0].query == {"labelSelector": "app=web"}
    finally:
        await stop(task)
    assert await lease_holder(kube) == "", "the Lease is released on shutdown"


async def test_no_cyclic_collection_until_every_hpa_was_reconciled_once_then_a_frozen_heap(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, cpu_usage="1")
    enabled = gc.isenabled()
    gc.enable()
    gc.unfreeze()
    app = build_app(
        settings(), kube, clock=FakeClock(), registry=CollectorRegistry(), identity="me"
    )
    task = await start(app)
    try:

        async def paused() -> bool:
            return not gc.isenabled()

        async def first_pass_done() -> bool:
            return app.first_pass.done.is_set()

        await eventually(paused)
        assert not app.first_pass.done.is_set()
        assert gc.get_freeze_count() == 0

        async def collector_back_and_heap_frozen() -> bool:
            return gc.isenabled() and gc.get_freeze_count() > 0

        await eventually(first_pass_done)
        assert (await hpa_status(kube)).get("desiredReplicas") == 4
        await eventually(collector_back_and_heap_frozen)
    finally:
        await stop(task)
        gc.unfreeze()
        if not enabled:
            gc.disable()
    assert gc.isenabled() or not enabled


async def test_a_dry_run_hpa_is_never_written(apiserver: FakeApiServer, kube: KubeClient) -> None:
    await seed(kube, cpu_usage="1", annotations={"hpa.dry-run/enabled": "true"})
    app = build_app(
        settings(), kube, clock=FakeClock(), registry=CollectorRegistry(), identity="me"
    )
    task = await start(app)
    try:

        async def dry_run_event() -> bool:
            return "DryRun" in await event_reasons(kube)

        await eventually(dry_run_event)
        assert await replicas(kube) == 2
        assert await hpa_status(kube) == {}
        scale_path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
        assert apiserver.requests_to("PUT", scale_path) == []
        debug = app.controller.debug_state()["default/web"]
        assert debug["dryRun"] is True
        assert debug["desiredReplicas"] == 4
    finally:
        await stop(task)


def test_process_flags_are_parsed_with_the_controller_s() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    parsed = from_args(
        parser.parse_args(
            [
                "--leader-elect=false",
                "--leader-elect-lease-duration=30s",
                "--leader-elect-renew-deadline=20s",
                "--port=0",
                "--horizontal-pod-autoscaler-sync-period=30s",
            ]
        )
    )
    assert parsed.leader_elect is False
    assert parsed.leader_elect_lease_duration_seconds == 30
    assert parsed.leader_elect_renew_deadline_seconds == 20.0
    assert parsed.port == 0
    assert parsed.horizontal.sync_period_seconds == 30.0


async def test_the_scale_adapter_turns_a_409_into_a_conflict_with_a_fresh_read(
    kube: KubeClient,
) -> None:
    await seed(kube, cpu_usage="1")
    scales = KubeScaleClient(ScaleClient(kube, ResourceMapper(kube, clock=FakeClock())))
    web = CrossVersionObjectReference("Deployment", "web", "apps/v1")
    snapshot = await scales.get_scale("default", web)
    assert (snapshot.spec_replicas, snapshot.selector) == (2, "app=web")
    deployment = await kube.get("/apis/apps/v1/namespaces/default/deployments/web")
    deployment["spec"]["replicas"] = 3  # another writer
    await kube.put("/apis/apps/v1/namespaces/default/deployments/web", deployment)

    result = await scales.update_scale("default", web, scale=snapshot, replicas=5)

    assert isinstance(result, ScaleConflict)
    assert result.current.spec_replicas == 3
    assert await replicas(kube) == 3, "nothing was written"
    written = await scales.update_scale("default", web, scale=result.current, replicas=5)
    assert isinstance(written, ScaleUpdated)
    assert await replicas(kube) == 5


SCALE_PATH = "/apis/apps/v1/namespaces/default/deployments/web/scale"
WEB = CrossVersionObjectReference("Deployment", "web", "apps/v1")


async def test_a_steady_hpa_costs_no_api_request_per_sync(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, cpu_usage="500m")  # 50 % of the request: at target, nothing to do
    clock = FakeClock()
    app = build_app(settings(), kube, clock=clock, registry=CollectorRegistry(), identity="me")
    task = await start(app)
    try:

        async def status_written() -> bool:
            return (await hpa_status(kube)).get("desiredReplicas") == 2

        await eventually(status_written)
        first = app.controller.last_report("default/web")
        assert first is not None
        apiserver.requests.clear()
        await clock.advance(15.0)  # one sync period: the resync comes back

        async def resynced() -> bool:
            report = app.controller.last_report("default/web")
            return report is not None and report.at > first.at

        await eventually(resynced)
        await app.events.flush()
        writes_and_reads = [
            (r.method, r.path)
            for r in apiserver.requests
            if not r.path.startswith("/apis/metrics.k8s.io")
            and "/leases" not in r.path
            and r.query.get("watch") != "true"
        ]
        assert writes_and_reads == [], "no /scale GET, no status write, no event"
        report = app.controller.last_report("default/web")
        assert report is not None
        assert (report.current_replicas, report.desired_replicas) == (2, 2)
    finally:
        await stop(task)


async def synced_deployments(kube: KubeClient) -> Informer[WorkloadRecord]:
    """A Deployment informer that listed once and stopped watching (its cache goes stale)."""
    informer: Informer[WorkloadRecord] = Informer(
        kube,
        WORKLOAD_PATHS["Deployment"],
        parse=functools.partial(parse_workload, kind="Deployment"),
        clock=FakeClock(),
    )
    running = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 5.0)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    return informer


def live_scales(kube: KubeClient) -> KubeScaleClient:
    return KubeScaleClient(ScaleClient(kube, ResourceMapper(kube, clock=FakeClock())))


async def test_while_the_deployment_watch_is_down_the_scale_is_read_from_the_api_server(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    """A network fault cuts the informer's watch and the target is scaled meanwhile (by this
    controller before the fault, or by anyone): until the reopened watch delivers, the cached
    copy may be stale, so the scale is read with ``GET /scale`` as kube-controller-manager reads
    it at every sync, and a decision is not skipped on an old replica count."""
    await seed(kube, cpu_usage="1")
    clock = FakeClock()
    informer: Informer[WorkloadRecord] = Informer(
        kube,
        WORKLOAD_PATHS["Deployment"],
        parse=functools.partial(parse_workload, kind="Deployment"),
        clock=clock,
    )
    running = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 5.0)
        await apiserver.wait_for_watches()
        scales = InformerScaleClient({"Deployment": informer}, live_scales(kube))
        assert (await scales.get_scale("default", WEB)).spec_replicas == 2
        apiserver.close_watches()  # the watch fails; the informer backs off on its clock

        async def backing_off() -> bool:
            return clock.sleeper_count > 0

        await eventually(backing_off)
        deployment = await kube.get("/apis/apps/v1/namespaces/default/deployments/web")
        deployment["spec"]["replicas"] = 1
        await kube.put("/apis/apps/v1/namespaces/default/deployments/web", deployment)

        assert (await scales.get_scale("default", WEB)).spec_replicas == 1
        assert scales.live_reads == 1
        assert len(apiserver.requests_to("GET", SCALE_PATH)) == 1

        await clock.advance(60.0)  # the backoff ends: the watch resumes and delivers the change
        await apiserver.wait_for_watches()

        async def caught_up() -> bool:
            return informer.is_current()

        await eventually(caught_up)
        assert (await scales.get_scale("default", WEB)).spec_replicas == 1
        assert scales.live_reads == 1, "read from the cache again"
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_a_stale_cached_scale_is_refused_and_the_conflict_carries_a_fresh_read(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, cpu_usage="1")
    scales = InformerScaleClient({"Deployment": await synced_deployments(kube)}, live_scales(kube))
    cached = await scales.get_scale("default", WEB)
    assert (cached.spec_replicas, cached.status_replicas, cached.selector) == (2, 2, "app=web")
    assert apiserver.requests_to("GET", SCALE_PATH) == []
    deployment = await kube.get("/apis/apps/v1/namespaces/default/deployments/web")
    deployment["spec"]["replicas"] = 3  # another writer; the stopped informer does not see it
    await kube.put("/apis/apps/v1/namespaces/default/deployments/web", deployment)

    result = await scales.update_scale("default", WEB, scale=cached, replicas=5)

    assert isinstance(result, ScaleConflict)
    assert result.current.spec_replicas == 3
    assert await replicas(kube) == 3, "nothing was written"
    written = await scales.update_scale("default", WEB, scale=result.current, replicas=5)
    assert isinstance(written, ScaleUpdated)
    assert await replicas(kube) == 5


async def test_a_fresh_cached_scale_is_written_through_the_scale_subresource(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, cpu_usage="1")
    scales = InformerScaleClient({"Deployment": await synced_deployments(kube)}, live_scales(kube))
    cached = await scales.get_scale("default", WEB)
    written = await scales.update_scale("default", WEB, scale=cached, replicas=4)
    assert isinstance(written, ScaleUpdated)
    assert await replicas(kube) == 4
    assert len(apiserver.requests_to("PUT", SCALE_PATH)) == 1


async def test_targets_the_informers_cannot_answer_are_read_with_get_scale(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, cpu_usage="1")
    never_synced: Informer[WorkloadRecord] = Informer(
        kube,
        WORKLOAD_PATHS["Deployment"],
        parse=functools.partial(parse_workload, kind="Deployment"),
        clock=FakeClock(),
    )
    unsynced = InformerScaleClient({"Deployment": never_synced}, live_scales(kube))
    assert (await unsynced.get_scale("default", WEB)).spec_replicas == 2
    assert (unsynced.live_reads, unsynced.cached_reads) == (1, 0)

    synced = InformerScaleClient({"Deployment": await synced_deployments(kube)}, live_scales(kube))
    missing = CrossVersionObjectReference("Deployment", "gone", "apps/v1")
    with pytest.raises(Exception, match="not found"):
        await synced.get_scale("default", missing)
    assert (synced.live_reads, synced.cached_reads) == (1, 0)
    assert len(apiserver.requests_to("GET", SCALE_PATH)) == 1


async def test_a_cached_scale_follows_the_deployment_informer(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, cpu_usage="1")
    informer: Informer[WorkloadRecord] = Informer(
        kube,
        WORKLOAD_PATHS["Deployment"],
        parse=functools.partial(parse_workload, kind="Deployment"),
        clock=FakeClock(),
    )
    running = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 5.0)
        scales = InformerScaleClient({"Deployment": informer}, live_scales(kube))
        assert (await scales.get_scale("default", WEB)).spec_replicas == 2
        deployment = await kube.get("/apis/apps/v1/namespaces/default/deployments/web")
        deployment["spec"]["replicas"] = 6
        await kube.put("/apis/apps/v1/namespaces/default/deployments/web", deployment)

        async def followed() -> bool:
            return (await scales.get_scale("default", WEB)).spec_replicas == 6

        await eventually(followed)
        assert scales.live_reads == 0
        assert apiserver.requests_to("GET", SCALE_PATH) == []
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
