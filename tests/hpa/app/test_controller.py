"""``hpa controller`` wiring against the in-memory API server: informers -> reconcile ->
``/scale``, ``/status`` and events, behind leader election."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from hpa.app.controller import (
    ControllerAppSettings,
    HorizontalControllerApp,
    InformerHPALister,
    add_flags,
    build_app,
    from_args,
)
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.kube.client import KubeClient, RetryPolicy
from hpa.kube.informer import Store
from hpa.kube.records import HpaRecord, parse_hpa
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo
from tests.fakes.clock import FakeClock

METRICS = ResourceInfo("/apis/metrics.k8s.io/v1beta1", "pods", "PodMetrics")
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


def seed(
    apiserver: FakeApiServer, *, cpu_usage: str, annotations: dict[str, str] | None = None
) -> None:
    apiserver.put_object(
        "/apis/apps/v1",
        "deployments",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2},
        },
    )
    for index in range(2):
        name = f"web-{index}"
        apiserver.put_object(
            "/api/v1",
            "pods",
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
        apiserver.put_object(
            "/apis/metrics.k8s.io/v1beta1",
            "pods",
            {
                "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
                "timestamp": "2026-01-01T00:00:00Z",
                "window": "30s",
                "containers": [{"name": "app", "usage": {"cpu": cpu_usage}}],
            },
        )
    apiserver.put_object(
        "/apis/autoscaling/v2",
        "horizontalpodautoscalers",
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


async def eventually(predicate: Callable[[], bool], *, timeout_seconds: float = 5.0) -> None:
    """Yield to the loop until ``predicate`` holds (the fake API server is real HTTP I/O)."""
    async with asyncio.timeout(timeout_seconds):
        for _ in itertools.count():
            if predicate():
                return
            await asyncio.sleep(0)  # one loop turn: lets the HTTP exchanges progress


def replicas(apiserver: FakeApiServer) -> int:
    deployment = apiserver.get_object("/apis/apps/v1", "deployments", "default", "web")
    assert deployment is not None
    return int(deployment["spec"]["replicas"])


def hpa_status(apiserver: FakeApiServer) -> dict[str, Any]:
    hpa = apiserver.get_object("/apis/autoscaling/v2", "horizontalpodautoscalers", "default", "web")
    assert hpa is not None
    return dict(hpa.get("status") or {})


def event_reasons(apiserver: FakeApiServer) -> list[str]:
    return [
        obj["reason"]
        for (prefix, plural, _, _), obj in apiserver.objects.items()
        if (prefix, plural) == ("/api/v1", "events")
    ]


async def start(app: HorizontalControllerApp) -> asyncio.Task[None]:
    return asyncio.create_task(app.run(), name="app")


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_the_leader_scales_writes_status_and_records_the_event(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    seed(apiserver, cpu_usage="1")  # 100 % of the request, target 50 %
    app = build_app(
        settings(), kube, clock=FakeClock(), registry=CollectorRegistry(), identity="me"
    )
    task = await start(app)
    try:
        await eventually(lambda: replicas(apiserver) == 4)
        await eventually(lambda: hpa_status(apiserver).get("desiredReplicas") == 4)
        await eventually(lambda: "SuccessfulRescale" in event_reasons(apiserver))
        lease = apiserver.get_object(
            "/apis/coordination.k8s.io/v1", "leases", "default", "hpa-controller"
        )
        assert lease is not None
        assert lease["spec"]["holderIdentity"] == "me"
        status = hpa_status(apiserver)
        assert status["currentReplicas"] == 2
        assert status["observedGeneration"] == 1
        conditions = {c["type"]: c["reason"] for c in status["conditions"]}
        assert conditions["AbleToScale"] == "SucceededRescale"
        assert app.ready()
        metrics_pages = [r for r in apiserver.requests if r.path.startswith("/apis/metrics.k8s.io")]
        assert metrics_pages[0].query == {"labelSelector": "app=web"}
    finally:
        await stop(task)
    lease = apiserver.get_object(
        "/apis/coordination.k8s.io/v1", "leases", "default", "hpa-controller"
    )
    assert lease is not None
    assert lease["spec"].get("holderIdentity", "") == "", "the Lease is released on shutdown"


async def test_a_dry_run_hpa_is_never_written(apiserver: FakeApiServer, kube: KubeClient) -> None:
    seed(apiserver, cpu_usage="1", annotations={"hpa.dry-run/enabled": "true"})
    app = build_app(
        settings(), kube, clock=FakeClock(), registry=CollectorRegistry(), identity="me"
    )
    task = await start(app)
    try:
        await eventually(lambda: "DryRun" in event_reasons(apiserver))
        assert replicas(apiserver) == 2
        assert hpa_status(apiserver) == {}
        assert (
            apiserver.requests_to("PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale")
            == []
        )
        debug = app.controller.debug_state()["default/web"]
        assert debug["dryRun"] is True
        assert debug["desiredReplicas"] == 4
    finally:
        await stop(task)


def test_the_hpa_lister_converts_once_per_resource_version() -> None:
    store: Store[HpaRecord] = Store()
    record = parse_hpa(
        {
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
        }
    )
    store.put("default/web", record)
    lister = InformerHPALister(store)
    first = lister.get("default", "web")
    assert first is not None
    assert first.spec.max_replicas == 3
    assert lister.get("default", "web") is first
    store.delete("default/web")
    assert lister.get("default", "web") is None


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
