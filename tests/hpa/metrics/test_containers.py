"""The VPA's live container source over ``metrics.k8s.io`` against the fake API server, with
metrics-server-shaped PodMetrics bodies; upstream's ``metrics_client_test.go`` cases first."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from hpa.core.vpa.cluster import PodId
from hpa.core.vpa.gomath import ZERO_TIME_NS
from hpa.core.vpa.usage import ContainerMetricsSnapshot, MetricsSourceError
from hpa.metrics.containers import MetricsApiContainerSource
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo, running

PREFIX = "/apis/metrics.k8s.io/v1beta1"
RESOURCES = (*DEFAULT_RESOURCES, ResourceInfo(prefix=PREFIX, plural="pods", kind="PodMetrics"))
T0 = "2026-01-01T00:00:00Z"
T0_NS = 1_767_225_600 * 10**9


def pod_metrics(
    namespace: str,
    name: str,
    containers: dict[str, dict[str, str]],
    *,
    timestamp: str | None = T0,
    window: str = "1.234µs",
) -> dict[str, Any]:
    """A PodMetrics as metrics-server writes it (labels, creationTimestamp, window)."""
    body: dict[str, Any] = {
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": "2026-01-01T00:00:05Z",
            "labels": {"app": name.lower()},
        },
        "window": window,
        "containers": [{"name": c, "usage": usage} for c, usage in containers.items()],
    }
    if timestamp is not None:
        body["timestamp"] = timestamp
    return body


def put(server: FakeApiServer, *items: dict[str, Any]) -> None:
    for item in items:
        server.put_object(PREFIX, "pods", item)


def snapshot(
    namespace: str, pod: str, container: str, cpu: int, memory: int, *, window_ns: int = 1234
) -> ContainerMetricsSnapshot:
    return ContainerMetricsSnapshot(
        pod_id=PodId(namespace, pod),
        container=container,
        snapshot_time_ns=T0_NS,
        window_ns=window_ns,
        usage={"cpu": cpu, "memory": memory},
    )


async def test_an_empty_list_is_no_snapshots() -> None:
    """``TestGetContainersMetricsReturnsEmptyList``."""
    async with running(RESOURCES) as (_, client):
        assert await MetricsApiContainerSource(client).containers_metrics() == []


async def test_every_container_of_every_pod_is_one_snapshot() -> None:
    """``TestGetContainersMetricsReturnsResults``: the test's quantities (cpu as
    ``FloatString(3)`` cores, memory as plain bytes) come back as the snapshots they encode."""
    async with running(RESOURCES) as (server, client):
        put(
            server,
            pod_metrics(
                "test-namespace",
                "Pod1",
                {
                    "Name1": {"cpu": "0.400", "memory": "333"},
                    "Name2": {"cpu": "0.800", "memory": "666"},
                },
            ),
            pod_metrics(
                "test-namespace",
                "Pod2",
                {
                    "Name1": {"cpu": "0.401", "memory": "334"},
                    "Name2": {"cpu": "0.801", "memory": "667"},
                },
            ),
        )
        snapshots = await MetricsApiContainerSource(client).containers_metrics()
    assert sorted(snapshots, key=lambda s: (s.pod_id.pod_name, s.container)) == [
        snapshot("test-namespace", "Pod1", "Name1", 400, 333),
        snapshot("test-namespace", "Pod1", "Name2", 800, 666),
        snapshot("test-namespace", "Pod2", "Name1", 401, 334),
        snapshot("test-namespace", "Pod2", "Name2", 801, 667),
    ]
    assert [r.path for r in server.requests] == [f"{PREFIX}/pods"]


@pytest.mark.parametrize(
    ("usage", "cpu", "memory"),
    [
        ({"cpu": "250m", "memory": "64Mi"}, 250, 64 * 2**20),
        ({"cpu": "1500u", "memory": "1.5"}, 2, 2),  # MilliValue() and Value() round up
        ({"cpu": "123456n", "memory": "1k"}, 1, 1000),
        ({"memory": "1Gi"}, 0, 2**30),  # an absent resource is Go's zero Quantity
        ({"cpu": "2"}, 2000, 0),
        ({}, 0, 0),
    ],
)
async def test_quantities_convert_as_calculate_usage(
    usage: dict[str, str], cpu: int, memory: int
) -> None:
    async with running(RESOURCES) as (server, client):
        put(server, pod_metrics("shop", "web-1", {"app": usage}, window="30s"))
        snapshots = await MetricsApiContainerSource(client).containers_metrics()
    assert snapshots == [snapshot("shop", "web-1", "app", cpu, memory, window_ns=30 * 10**9)]


async def test_timestamp_and_window_are_nanoseconds() -> None:
    async with running(RESOURCES) as (server, client):
        put(
            server,
            pod_metrics("shop", "a", {"app": {"cpu": "1"}}, timestamp=T0, window="1m0.5s"),
            pod_metrics("shop", "b", {"app": {"cpu": "1"}}, timestamp=None, window=""),
        )
        snapshots = await MetricsApiContainerSource(client).containers_metrics()
    by_pod = {s.pod_id.pod_name: s for s in snapshots}
    assert (by_pod["a"].snapshot_time_ns, by_pod["a"].window_ns) == (T0_NS, 60_500_000_000)
    assert (by_pod["b"].snapshot_time_ns, by_pod["b"].window_ns) == (ZERO_TIME_NS, 0)


async def test_one_namespace_lists_only_there() -> None:
    """``--vpa-object-namespace``: the namespaced list path."""
    async with running(RESOURCES) as (server, client):
        put(
            server,
            pod_metrics("shop", "a", {"app": {"cpu": "1", "memory": "1"}}),
            pod_metrics("other", "b", {"app": {"cpu": "1", "memory": "1"}}),
        )
        snapshots = await MetricsApiContainerSource(client, namespace="shop").containers_metrics()
    assert [s.pod_id for s in snapshots] == [PodId("shop", "a")]
    assert [r.path for r in server.requests] == [f"{PREFIX}/namespaces/shop/pods"]


async def test_ignored_namespaces_are_dropped() -> None:
    """``--ignored-vpa-object-namespaces``."""
    async with running(RESOURCES) as (server, client):
        put(
            server,
            pod_metrics("kube-system", "dns", {"dns": {"cpu": "1", "memory": "1"}}),
            pod_metrics("shop", "a", {"app": {"cpu": "1", "memory": "1"}}),
        )
        source = MetricsApiContainerSource(client, ignored_namespaces=["kube-system"])
        snapshots = await source.containers_metrics()
    assert [s.pod_id for s in snapshots] == [PodId("shop", "a")]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"containers": [{"name": "app", "usage": {"cpu": "lots"}}]}, "lots"),
        ({"window": "thirty seconds"}, "invalid duration"),
        ({"timestamp": "yesterday"}, "does not decode"),
        ({"containers": "app"}, "does not decode"),
    ],
)
async def test_a_malformed_item_is_skipped_with_a_log(bad: dict[str, Any], reason: str) -> None:
    async with running(RESOURCES) as (server, client):
        broken = pod_metrics("shop", "broken", {"app": {"cpu": "1"}})
        broken.update(bad)
        put(server, broken, pod_metrics("shop", "fine", {"app": {"cpu": "1", "memory": "2"}}))
        with capture_logs() as logs:
            snapshots = await MetricsApiContainerSource(client).containers_metrics()
    assert snapshots == [snapshot("shop", "fine", "app", 1000, 2)]
    skipped = [entry for entry in logs if entry["event"] == "pod_metrics_skipped"]
    assert [entry["pod"] for entry in skipped] == ["shop/broken"]
    assert reason in skipped[0]["error"]


async def test_an_unavailable_api_is_a_one_line_error_naming_it() -> None:
    async with running(RESOURCES, max_attempts=1) as (server, client):
        server.fail("GET", f"{PREFIX}/pods", status=503, reason="ServiceUnavailable")
        with pytest.raises(MetricsSourceError) as raised:
            await MetricsApiContainerSource(client).containers_metrics()
    message = str(raised.value)
    assert message.startswith("cannot list pods.metrics.k8s.io/v1beta1: ")
    assert "scripted" in message
    assert "\n" not in message


async def test_an_api_nobody_serves_is_a_one_line_error_naming_it() -> None:
    async with running() as (_, client):  # no metrics.k8s.io at all: 404
        with pytest.raises(
            MetricsSourceError, match=r"^cannot list pods\.metrics\.k8s\.io/v1beta1"
        ):
            await MetricsApiContainerSource(client).containers_metrics()


def test_the_port_re_exports_the_snapshot_the_sources_build() -> None:
    from hpa.controllers.vertical import ports

    assert ports.ContainerMetricsSnapshot is ContainerMetricsSnapshot
    assert ports.MetricsSourceError is MetricsSourceError
