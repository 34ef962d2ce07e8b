"""``hpa vpa recommender`` wired to an API server (the in-memory one of ``tests.fakes``): real
informers, status patches and checkpoint writes over HTTP, counted."""

from __future__ import annotations

import argparse
import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from hpa.api.types import format_time
from hpa.app.recommender import (
    RecommenderApp,
    RecommenderAppSettings,
    add_flags,
    build_app,
    main,
    settings_from_args,
)
from hpa.core.quantity import parse_quantity
from hpa.core.vpa.cluster import PodId
from hpa.kube.client import KubeClient
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo, running
from tests.fakes.clock import FakeClock
from tests.fakes.vertical import FakeContainerMetrics
from tests.hpa.app.test_webhook import EXTRA
from tests.hpa.controllers.vertical.harness import (
    MIB,
    NS,
    deployment_json,
    eviction_json,
    hpa_json,
    pod_json,
    replica_set_json,
    vpa_json,
)

VPA_GROUP = "/apis/autoscaling.k8s.io/v1"
CHECKPOINTS = ResourceInfo(
    prefix=VPA_GROUP,
    plural="verticalpodautoscalercheckpoints",
    kind="VerticalPodAutoscalerCheckpoint",
)


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeApiServer, KubeClient]]:
    async with running((*DEFAULT_RESOURCES, *EXTRA, CHECKPOINTS)) as pair:
        yield pair


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return parser.parse_args(argv)


def test_flags_have_upstreams_names_and_defaults() -> None:
    settings = settings_from_args(parse())
    assert settings.loop.interval_seconds == 60
    assert settings.loop.checkpoints_timeout_seconds == 60
    assert settings.loop.checkpoints_gc_interval_seconds == 600
    assert settings.loop.min_checkpoints == 10
    assert settings.recommender_name == "default"
    assert settings.recommendation.target_cpu_percentile == 0.9
    assert settings.recommendation.pod_min_memory_mb == 250
    assert settings.address == ":8942"
    assert settings.leader.resource_name == "vpa-recommender-lease"
    assert settings.leader.leader_elect is False
    assert settings.metrics_source == "api"
    assert (settings.kube_api_qps, settings.kube_api_burst) == (50, 100)
    tuned = settings_from_args(
        parse("--recommender-interval", "30s", "--target-cpu-percentile", "0.95", "--memory-saver")
    )
    assert tuned.loop.interval_seconds == 30
    assert tuned.recommendation.target_cpu_percentile == 0.95
    assert tuned.memory_saver
    assert settings.ignored_vpa_object_namespaces == frozenset()
    ignoring = settings_from_args(parse("--ignored-vpa-object-namespaces", "kube-system,,infra"))
    assert ignoring.ignored_vpa_object_namespaces == {"kube-system", "infra"}
    assert settings_from_args(parse("--vpa-object-namespace", "shop")).vpa_object_namespace == (
        "shop"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--address", "nope"), "--address"),
        (("--target-cpu-percentile", "2"), "target_cpu_percentile"),
        (("--checkpoints-timeout", "0s"), "--checkpoints-timeout"),
        (("--kube-api-burst", "0"), "--kube-api-burst"),
        (
            ("--vpa-object-namespace", "a", "--ignored-vpa-object-namespaces", "b"),
            "mutually exclusive",
        ),
    ],
)
def test_bad_flags_are_one_line_errors(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        settings_from_args(parse(*argv))


def test_main_refuses_the_inprocess_source_without_a_rule_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(parse("--metrics-source=inprocess")) == 2
    captured = capsys.readouterr()
    assert "--metrics-source=inprocess needs --config" in captured.out + captured.err


def seed(apiserver: FakeApiServer) -> None:
    apiserver.put_object("/apis/apps/v1", "deployments", deployment_json())
    apiserver.put_object("/apis/apps/v1", "replicasets", replica_set_json("web-1", owner="web"))
    apiserver.put_object("/api/v1", "pods", pod_json("web-0"))
    apiserver.put_object(VPA_GROUP, "verticalpodautoscalers", vpa_json())
    apiserver.put_object("/apis/autoscaling/v2", "horizontalpodautoscalers", hpa_json("web-hpa"))
    broken = vpa_json("broken")
    broken["spec"]["targetRef"] = "not an object"
    apiserver.put_object(VPA_GROUP, "verticalpodautoscalers", broken)


async def synced(app: RecommenderApp) -> list[asyncio.Task[None]]:
    tasks = [asyncio.create_task(i.run()) for i in app.all_informers()]
    for informer in app.all_informers():
        await informer.wait_synced()
    return tasks


async def test_eviction_events_reach_the_model_over_http(
    served: tuple[FakeApiServer, KubeClient],
) -> None:
    """The Event informer lists Events with ``fieldSelector=reason=Evicted`` (as upstream's
    watch); an eviction naming a container starved of memory bumps its memory target at the next
    pass."""
    apiserver, kube = served
    seed(apiserver)
    clock = FakeClock()
    metrics = FakeContainerMetrics()
    app = build_app(
        RecommenderAppSettings(), kube, clock=clock, registry=CollectorRegistry(), metrics=metrics
    )
    apiserver.put_object(
        "/api/v1", "events", eviction_json("e1", at=format_time(clock.now()), usage="700Mi")
    )
    tasks = await synced(app)
    tasks.append(asyncio.create_task(app.event_informer.run()))
    try:
        await app.event_informer.wait_synced()
        listed = apiserver.requests_to("GET", "/api/v1/events")
        assert listed
        assert listed[0].query.get("fieldSelector") == "reason=Evicted"
        now_ns = app.recommender.now_ns()
        metrics.set(PodId(NS, "web-0"), "app", time_ns=now_ns, cpu=250, memory=300 * MIB)
        await app.recommender.init_from_checkpoints()
        await app.recommender.run_once()
        stored: dict[str, Any] = (
            apiserver.get_object(VPA_GROUP, "verticalpodautoscalers", NS, "web") or {}
        )
        recommended = stored["status"]["recommendation"]["containerRecommendations"][0]
        assert parse_quantity(recommended["target"]["memory"]).value() >= 800 * MIB
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_one_pass_over_http(served: tuple[FakeApiServer, KubeClient]) -> None:
    apiserver, kube = served
    seed(apiserver)
    clock = FakeClock()
    metrics = FakeContainerMetrics()
    registry = CollectorRegistry()
    app = build_app(RecommenderAppSettings(), kube, clock=clock, registry=registry, metrics=metrics)
    tasks = await synced(app)
    try:
        assert app.ready()
        now_ns = app.recommender.now_ns()
        metrics.set(PodId(NS, "web-0"), "app", time_ns=now_ns, cpu=250, memory=300 * MIB)
        await app.recommender.init_from_checkpoints()
        await app.recommender.run_once()
        status_path = f"{VPA_GROUP}/namespaces/{NS}/verticalpodautoscalers/web/status"
        assert len(apiserver.requests_to("PATCH", status_path)) == 1
        stored: dict[str, Any] = (
            apiserver.get_object(VPA_GROUP, "verticalpodautoscalers", NS, "web") or {}
        )
        conditions = {c["type"]: c for c in stored["status"]["conditions"]}
        assert conditions["RecommendationProvided"]["status"] == "True"
        assert "HPA shop/web-hpa" in conditions["HorizontalScalingConflictAvoided"]["message"]
        recommended = stored["status"]["recommendation"]["containerRecommendations"][0]
        assert set(recommended["target"]) == {"cpu", "memory"}
        checkpoint = apiserver.get_object(
            VPA_GROUP, "verticalpodautoscalercheckpoints", NS, "web-app"
        )
        assert checkpoint is not None
        assert checkpoint["status"]["version"] == "v3"
        # the informer sees our write; the next pass with nothing new writes no status
        for _ in range(50):
            record = app.informers.vpas.store.get_by_name(NS, "web")
            if record is not None and record.conditions:
                break
            await asyncio.sleep(0.01)
        await clock.advance(60)
        await app.recommender.run_once()
        assert len(apiserver.requests_to("PATCH", status_path)) == 1
        async with TestClient(TestServer(app.operations)) as client:
            body = await (await client.get("/metrics")).text()
            assert "vpa_recommender_execution_latency_seconds_bucket" in body
            assert 'vpa_recommender_vpa_objects_count{api="v1"' in body
            assert "vpa_recommender_aggregate_container_states_count 1.0" in body
            assert (await client.get("/readyz")).status == 200
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _until(check: Callable[[], bool]) -> None:
    """Until the informers have delivered what ``check`` looks for (watch events are async)."""
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("the informers did not catch up")


def _seen(app: RecommenderApp, replicas: int, hpa_version: int) -> bool:
    """The informers hold the Deployment at ``replicas`` and the HPA's status written last."""
    hpa = app.informers.hpas.store.get_by_name(NS, "web-hpa")
    deployment = app.informers.lookup.get("Deployment", NS, "web")
    return (
        hpa is not None
        and int(hpa.resource_version) >= hpa_version
        and deployment is not None
        and deployment.replicas == replicas
    )


def _hpa_with_cpu(average_milli: int, replicas: int) -> dict[str, Any]:
    """``web-hpa`` (cpu at 60 % of the pods' 100m) as its controller last wrote it."""
    hpa = hpa_json("web-hpa")
    hpa["status"] = {
        "currentReplicas": replicas,
        "desiredReplicas": replicas,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {
                        "averageValue": f"{average_milli}m",
                        "averageUtilization": average_milli,  # of 100m
                    },
                },
            }
        ],
    }
    return hpa


async def test_group_aware_reads_the_hpas_metric_per_pod_from_the_informers(
    served: tuple[FakeApiServer, KubeClient],
) -> None:
    """Per-pod memory is 200Mi + 1000Mi per core of the HPA's cpu per pod, which the HPA keeps
    near its target whatever the replica count: the model fits it on the HPA's
    ``status.currentMetrics`` (read from the informer, no extra request; the load of each sample
    is the pod's own cpu of the same metrics sample) and recommends memory at the HPA's target,
    60 % of 100m, times the headroom: the 95th percentile of the per-pod cpu over the target is
    90m / 60m, so (200 + 90) Mi plus the 15 % margin."""
    apiserver, kube = served
    seed(apiserver)
    apiserver.put_object(
        VPA_GROUP, "verticalpodautoscalers", vpa_json("web", recommenders=["group-aware"])
    )
    clock = FakeClock()
    metrics = FakeContainerMetrics()
    app = build_app(
        RecommenderAppSettings(), kube, clock=clock, registry=CollectorRegistry(), metrics=metrics
    )
    tasks = await synced(app)
    day = [(2, 50), (3, 70), (5, 40), (8, 90), (6, 55), (4, 65), (3, 45), (2, 80)] * 2
    try:
        await app.recommender.init_from_checkpoints()
        for replicas, cpu_milli in day:
            deployment = deployment_json()
            deployment["spec"]["replicas"] = replicas
            apiserver.put_object("/apis/apps/v1", "deployments", deployment)
            apiserver.put_object(
                "/apis/autoscaling/v2",
                "horizontalpodautoscalers",
                _hpa_with_cpu(cpu_milli, replicas),
            )
            await _until(functools.partial(_seen, app, replicas, apiserver.resource_version))
            memory = 200 * MIB + 1000 * MIB * cpu_milli // 1000
            metrics.set(
                PodId(NS, "web-0"),
                "app",
                time_ns=app.recommender.now_ns(),
                cpu=cpu_milli,
                memory=memory,
            )
            await app.recommender.run_once()
            await clock.advance(60)
        hpa_reads = apiserver.requests_to(
            "GET", f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/web-hpa"
        )
        assert hpa_reads == []  # the informer's copy, never a GET of its own
        stored: dict[str, Any] = (
            apiserver.get_object(VPA_GROUP, "verticalpodautoscalers", NS, "web") or {}
        )
        recommended = stored["status"]["recommendation"]["containerRecommendations"][0]
        memory_target = parse_quantity(recommended["target"]["memory"]).value()
        assert memory_target == pytest.approx(290 * MIB * 1.15, rel=0.01)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
