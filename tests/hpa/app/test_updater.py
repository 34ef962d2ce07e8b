"""``hpa vpa updater`` wired to an API server (the in-memory one of ``tests.fakes``): real
informers list VPAs, pods, nodes, LimitRanges, HPAs and controllers; evictions go through
``pods/{name}/eviction`` (a PodDisruptionBudget answers 429), resizes through
``pods/{name}/resize``; the admission controller's status Lease guards every loop."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from hpa.app.updater import UpdaterApp, UpdaterSettings, add_flags, build_app, settings_from_args
from hpa.kube.client import KubeClient
from hpa.kube.informer import wait_all_synced
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo, running
from tests.fakes.clock import FakeClock
from tests.fakes.vpa_updater import NS, deployment, node, pod, replica_set, vpa

EXTRA = (
    ResourceInfo(
        prefix="/apis/autoscaling.k8s.io/v1",
        plural="verticalpodautoscalers",
        kind="VerticalPodAutoscaler",
        subresources=("status",),
    ),
    ResourceInfo(prefix="/api/v1", plural="limitranges", kind="LimitRange"),
    ResourceInfo(prefix="/api/v1", plural="nodes", kind="Node", namespaced=False),
    ResourceInfo(prefix="/api/v1", plural="replicationcontrollers", kind="ReplicationController"),
    ResourceInfo(prefix="/apis/apps/v1", plural="daemonsets", kind="DaemonSet"),
    ResourceInfo(prefix="/apis/batch/v1", plural="jobs", kind="Job"),
    ResourceInfo(prefix="/apis/batch/v1", plural="cronjobs", kind="CronJob"),
    ResourceInfo(
        prefix="/apis/policy/v1", plural="poddisruptionbudgets", kind="PodDisruptionBudget"
    ),
)
LEASE = "/apis/coordination.k8s.io/v1"


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeApiServer, KubeClient]]:
    async with running((*DEFAULT_RESOURCES, *EXTRA)) as pair:
        yield pair


def seed(
    server: FakeApiServer, *, mode: str = "Recreate", lease_renewed: str | None = None
) -> None:
    server.put_object("/apis/apps/v1", "deployments", deployment())
    server.put_object("/apis/apps/v1", "replicasets", replica_set())
    server.put_object("/api/v1", "nodes", node())
    for i in range(3):
        server.put_object("/api/v1", "pods", pod(f"web-{i}"))
    server.put_object("/apis/autoscaling.k8s.io/v1", "verticalpodautoscalers", vpa(mode=mode))
    server.put_object(
        LEASE,
        "leases",
        {
            "metadata": {
                "namespace": "kube-system",
                "name": "vpa-admission-controller",
                "creationTimestamp": "2025-01-01T00:00:00Z",
            },
            "spec": {
                "holderIdentity": "webhook",
                "renewTime": lease_renewed or "2026-01-01T00:00:00.000000Z",
            },
        },
    )


async def started(
    server: FakeApiServer, client: KubeClient
) -> tuple[UpdaterApp, asyncio.Future[list[Any]]]:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    settings = settings_from_args(parser.parse_args([]))
    app = build_app(settings, client, clock=FakeClock(), registry=CollectorRegistry())
    tasks = asyncio.gather(*(informer.run() for informer in app.informers), app.events.run())
    await wait_all_synced(app.informers)
    return app, tasks


async def stop(task: asyncio.Future[list[Any]]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def evictions(server: FakeApiServer) -> list[str]:
    return [
        r.path.rsplit("/", 2)[1]
        for r in server.requests
        if r.method == "POST" and r.path.endswith("/eviction")
    ]


async def test_recreate_evicts_through_the_eviction_api(
    served: tuple[FakeApiServer, KubeClient],
) -> None:
    server, client = served
    seed(server)
    app, tasks = await started(server, client)
    try:
        await app.updater.run_once()
        assert evictions(server) == ["web-0"]
        body = server.requests_to("POST", f"/api/v1/namespaces/{NS}/pods/web-0/eviction")[0].body
        assert body["apiVersion"] == "policy/v1"
        assert body["kind"] == "Eviction"
        assert server.get_object("/api/v1", "pods", NS, "web-0") is None
        await app.events.flush()
        reasons = [
            (o["involvedObject"]["kind"], o["reason"], o["source"]["component"])
            for (_, plural, _, _), o in server.objects.items()
            if plural == "events"
        ]
        assert sorted(reasons) == [
            ("Pod", "EvictedByVPA", "vpa-updater"),
            ("VerticalPodAutoscaler", "EvictedPod", "vpa-updater"),
        ]
    finally:
        await stop(tasks)


async def test_a_disruption_budget_429_is_a_normal_outcome_retried_next_loop(
    served: tuple[FakeApiServer, KubeClient],
) -> None:
    server, client = served
    seed(server)
    server.put_object(
        "/apis/policy/v1",
        "poddisruptionbudgets",
        {
            "metadata": {"namespace": NS, "name": "web"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    app, tasks = await started(server, client)
    try:
        await app.updater.run_once()
        assert evictions(server) == ["web-0", "web-1", "web-2"]  # each refused once, no retry
        assert all(server.get_object("/api/v1", "pods", NS, f"web-{i}") for i in range(3))
        server.delete_object("/apis/policy/v1", "poddisruptionbudgets", NS, "web")
        await app.updater.run_once()
        assert server.get_object("/api/v1", "pods", NS, "web-0") is None
    finally:
        await stop(tasks)


async def test_a_stale_admission_lease_stops_every_eviction(
    served: tuple[FakeApiServer, KubeClient],
) -> None:
    server, client = served
    seed(server, lease_renewed="2025-12-31T23:58:00.000000Z")  # two minutes before the clock
    app, tasks = await started(server, client)
    try:
        await app.updater.run_once()
        assert evictions(server) == []
    finally:
        await stop(tasks)


async def test_in_place_or_recreate_resizes_through_pods_resize(
    served: tuple[FakeApiServer, KubeClient],
) -> None:
    server, client = served
    seed(server, mode="InPlaceOrRecreate")
    app, tasks = await started(server, client)
    try:
        await app.updater.run_once()
        resized = server.get_object("/api/v1", "pods", NS, "web-0")
        assert resized is not None
        assert resized["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": "500m",
            "memory": "512Mi",
        }
        assert resized["metadata"]["annotations"] == {"vpaInPlaceUpdated": "true"}
        assert len(server.requests_to("PATCH", f"/api/v1/namespaces/{NS}/pods/web-0/resize")) == 1
        assert evictions(server) == []
    finally:
        await stop(tasks)


async def test_operations_endpoints(served: tuple[FakeApiServer, KubeClient]) -> None:
    server, client = served
    seed(server)
    app, tasks = await started(server, client)
    try:
        await app.updater.run_once()
        async with TestClient(TestServer(app.operations)) as http:
            assert (await http.get("/healthz")).status == 200
            assert (await http.get("/readyz")).status == 200
            text = await (await http.get("/metrics")).text()
        assert 'vpa_updater_evicted_pods_total{update_mode="Recreate",vpa_name="web"' in text
        assert "vpa_updater_execution_latency_seconds_bucket" in text
    finally:
        await stop(tasks)


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--eviction-tolerance", "1.5"], "--eviction-tolerance: 1.5 is not in [0, 1]"),
        (["--min-replicas", "0"], "--min-replicas: 0 is less than 1"),
        (["--eviction-rate-burst", "0"], "--eviction-rate-burst: 0 is less than 1"),
        (["--address", "nowhere"], "--address: 'nowhere' is not host:port"),
        (["--updater-interval", "0s"], "--updater-interval: must be positive"),
    ],
)
def test_flags_are_checked_with_a_one_line_error(argv: list[str], error: str) -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    with pytest.raises(ValueError, match="^" + error.replace("[", r"\[").replace("]", r"\]") + "$"):
        settings_from_args(parser.parse_args(argv))


def test_upstream_defaults() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    settings = settings_from_args(parser.parse_args([]))
    assert settings.updater_interval_seconds == 60
    assert settings.loop.min_replicas == 2
    assert settings.loop.eviction_tolerance == 0.5
    assert settings.loop.update.min_change_priority == 0.1
    assert settings.eviction_rate_limit == -1
    assert settings.eviction_rate_burst == 1
    assert settings.address == ":8943"
    assert settings.leader.resource_name == "vpa-updater"
    assert settings.leader.leader_elect is False
    assert settings.status_lease_name == "vpa-admission-controller"
    assert settings.loop.in_place_skip_disruption_budget is False
    assert isinstance(settings, UpdaterSettings)


def test_the_skip_disruption_budget_flag_reaches_the_loop() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    args = parser.parse_args(["--in-place-skip-disruption-budget=true"])
    assert settings_from_args(args).loop.in_place_skip_disruption_budget is True


class ParkingClock(FakeClock):
    """Tells when the loop parks on its interval."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        if seconds == 60.0:
            self.parked.set()
        await super().sleep(seconds)

    async def wait_parked(self) -> None:
        await asyncio.wait_for(self.parked.wait(), 5)
        self.parked.clear()


@pytest.mark.parametrize("leader_elect", [False, True])
async def test_the_loop_runs_every_interval_only_while_leading(
    served: tuple[FakeApiServer, KubeClient], leader_elect: bool
) -> None:
    server, client = served
    seed(server)
    parser = argparse.ArgumentParser()
    add_flags(parser)
    settings = settings_from_args(parser.parse_args(["--leader-elect", str(leader_elect)]))
    clock = ParkingClock()
    app = build_app(settings, client, clock=clock, registry=CollectorRegistry(), identity="me")
    informers = asyncio.gather(*(informer.run() for informer in app.informers))
    loop = asyncio.create_task(app.loop())
    try:
        await wait_all_synced(app.informers)
        await clock.wait_parked()
        assert app.loops == (0 if leader_elect else 1)
        await clock.advance(60)
        await clock.wait_parked()
        assert app.loops == (0 if leader_elect else 2)
        assert app.leading() is not leader_elect
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await stop(informers)


async def test_healthz_fails_once_the_loop_has_stalled_for_five_intervals(
    served: tuple[FakeApiServer, KubeClient],
) -> None:
    _, client = served
    parser = argparse.ArgumentParser()
    add_flags(parser)
    settings = settings_from_args(parser.parse_args(["--updater-interval", "1m"]))
    clock = FakeClock()
    app = build_app(settings, client, clock=clock, registry=CollectorRegistry())
    async with TestClient(TestServer(app.operations)) as http:
        assert (await http.get("/healthz")).status == 200  # no loop yet: still starting
        app.last_loop_monotonic = clock.monotonic()
        await clock.advance(300)
        assert (await http.get("/healthz")).status == 200
        await clock.advance(1)
        response = await http.get("/healthz")
        assert response.status == 500
        assert await response.text() == "[-]stalled\n"
