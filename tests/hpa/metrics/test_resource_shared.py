"""Shared namespace reads of the resource metrics client: concurrent reads of one namespace share
one list of the namespace, and every read shapes exactly what its own selective request would
have (``docs/controller-metrics.md``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import hypothesis
from hypothesis import strategies as st

from hpa.core.decision import MetricFetchError, PodMetricsObservation
from hpa.core.selector import parse_selector
from hpa.kube.client import ApiStatus, ServerError
from hpa.metrics.resource import ResourceMetricsClient

Result = PodMetricsObservation | MetricFetchError


@dataclass
class MetricsServer:
    """A fake ``metrics.k8s.io`` (a ``JsonGetter``) that filters on each ``PodMetrics``' labels
    as metrics-server does, and holds every answer until ``release`` while ``held``."""

    items: list[dict[str, Any]]
    held: bool = False
    failure: Exception | None = None
    requests: list[str] = field(default_factory=list)
    _gate: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self._gate.set()

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> Mapping[str, Any]:
        selector = (params or {}).get("labelSelector", "")
        self.requests.append(selector)
        if self.held:
            await self._gate.wait()
        if self.failure is not None:
            raise self.failure
        parsed = parse_selector(selector)
        return {
            "kind": "PodMetricsList",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": [
                item for item in self.items if parsed.matches(item["metadata"].get("labels", {}))
            ],
        }


def pod(name: str, labels: Mapping[str, str], usage: Mapping[str, Mapping[str, str]]) -> Any:
    return {
        "metadata": {"name": name, "namespace": "shop", "labels": dict(labels)},
        "timestamp": "2026-01-01T00:00:00Z",
        "window": "30s",
        "containers": [{"name": c, "usage": dict(u)} for c, u in usage.items()],
    }


def fleet(apps: int, pods_per_app: int) -> list[dict[str, Any]]:
    return [
        pod(f"app-{a}-{p}", {"app": f"app-{a}"}, {"main": {"cpu": f"{10 * a + p}m"}})
        for a in range(apps)
        for p in range(pods_per_app)
    ]


async def read_all(
    client: ResourceMetricsClient,
    server: MetricsServer,
    selectors: Sequence[str],
    *,
    resource: str = "cpu",
    container: str = "",
) -> list[Result]:
    """Start every read while the server holds its answers, then let them all finish."""
    server.held = True
    reads = [
        asyncio.ensure_future(
            client.get_resource_metric(resource, "shop", selector=s, container=container)
        )
        for s in selectors
    ]
    await asyncio.sleep(0)
    server.release()
    return list(await asyncio.gather(*reads))


async def upstream_reads(
    items: list[dict[str, Any]], selectors: Sequence[str], *, resource: str, container: str
) -> list[Result]:
    """Each read alone, with its own selective request (upstream)."""
    server = MetricsServer(items)
    client = ResourceMetricsClient(server)
    return [
        await client.get_resource_metric(resource, "shop", selector=s, container=container)
        for s in selectors
    ]


async def test_concurrent_reads_of_one_namespace_share_one_list() -> None:
    server = MetricsServer(fleet(100, 3))
    selectors = [f"app=app-{a}" for a in range(100)]
    shared = await read_all(
        ResourceMetricsClient(server, share_namespace_reads=True), server, selectors
    )
    # the first reads send upstream's selective requests; once 8 are in flight, the others
    # share one list of the namespace
    assert server.requests == [f"app=app-{a}" for a in range(8)] + [""]
    assert shared == await upstream_reads(server.items, selectors, resource="cpu", container="")
    assert isinstance(shared[7], PodMetricsObservation)
    assert {n: m.value_milli for n, m in shared[7].metrics.items()} == {
        "app-7-0": 70,
        "app-7-1": 71,
        "app-7-2": 72,
    }


async def test_without_sharing_every_read_sends_its_own_request() -> None:
    server = MetricsServer(fleet(10, 2))
    await read_all(ResourceMetricsClient(server), server, [f"app=app-{a}" for a in range(10)])
    assert server.requests == [f"app=app-{a}" for a in range(10)]


async def test_a_read_alone_in_its_namespace_sends_upstream_s_request() -> None:
    server = MetricsServer(fleet(3, 2))
    client = ResourceMetricsClient(server, share_namespace_reads=True)
    for a in range(3):
        await client.get_resource_metric("cpu", "shop", selector=f"app=app-{a}")
    assert server.requests == ["app=app-0", "app=app-1", "app=app-2"]


async def test_a_list_answers_only_the_reads_that_start_while_it_is_in_flight() -> None:
    server = MetricsServer(fleet(4, 2))
    client = ResourceMetricsClient(server, share_namespace_reads=True, share_after=1)
    first = await read_all(client, server, ["app=app-0", "app=app-1", "app=app-2"])
    assert server.requests == ["app=app-0", ""]
    assert first == await upstream_reads(
        server.items, ["app=app-0", "app=app-1", "app=app-2"], resource="cpu", container=""
    )
    await client.get_resource_metric("cpu", "shop", selector="app=app-3")
    assert server.requests == ["app=app-0", "", "app=app-3"]  # alone again: its own request


async def test_a_failed_list_fails_its_readers_and_answers_nobody_later() -> None:
    server = MetricsServer(fleet(3, 2))
    server.failure = ServerError(ApiStatus(503, "ServiceUnavailable", "metrics busy"))
    client = ResourceMetricsClient(server, share_namespace_reads=True, share_after=1)
    results = await read_all(client, server, ["app=app-0", "app=app-1", "app=app-2"])
    assert all(isinstance(r, MetricFetchError) for r in results)
    assert isinstance(results[2], MetricFetchError)
    assert results[2].message.startswith("unable to fetch metrics from resource metrics API: ")
    assert server.requests == ["app=app-0", ""]
    server.failure = None
    assert isinstance(
        await client.get_resource_metric("cpu", "shop", selector="app=app-1"),
        PodMetricsObservation,
    )
    assert server.requests == ["app=app-0", "", "app=app-1"]


async def test_a_list_with_labels_that_are_not_strings_leaves_each_read_to_its_request() -> None:
    items = fleet(3, 2)
    items.append(pod("odd", {}, {"main": {"cpu": "1"}}))
    items[-1]["metadata"]["labels"] = {"app": 7}
    server = MetricsServer(items)
    selectors = ["app=app-0", "app=app-1", "app=app-2"]
    results = await read_all(
        ResourceMetricsClient(server, share_namespace_reads=True, share_after=1), server, selectors
    )
    assert server.requests == ["app=app-0", "", "app=app-1", "app=app-2"]
    assert results == await upstream_reads(
        [i for i in items if i["metadata"]["name"] != "odd"],
        selectors,
        resource="cpu",
        container="",
    )


@dataclass
class UnlabelledServer:
    """A metrics server that filters on the pods' labels (``server``) but does not copy them
    onto its ``PodMetrics``."""

    server: MetricsServer

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> Mapping[str, Any]:
        answer = dict(await self.server.get(path, params=params))
        answer["items"] = [
            {**item, "metadata": {"name": item["metadata"]["name"]}} for item in answer["items"]
        ]
        return answer


async def test_a_list_without_any_labels_leaves_each_read_to_its_request() -> None:
    """Filtering such a server's namespace list here would select no pod at all."""
    server = MetricsServer(fleet(3, 2))
    selectors = ["app=app-0", "app=app-1", "app=app-2"]
    client = ResourceMetricsClient(
        UnlabelledServer(server), share_namespace_reads=True, share_after=1
    )
    results = await read_all(client, server, selectors)
    assert server.requests == ["app=app-0", "", "app=app-1", "app=app-2"]
    assert all(isinstance(r, PodMetricsObservation) and len(r.metrics) == 2 for r in results)


LABEL_VALUES = st.sampled_from(["a", "b", "c"])
LABELS = st.dictionaries(st.sampled_from(["app", "tier", "track"]), LABEL_VALUES, max_size=3)
USAGE = st.dictionaries(
    st.sampled_from(["cpu", "memory"]), st.sampled_from(["0", "100m", "1", "2Gi", "250m"])
)
SELECTORS = st.sampled_from(
    [
        "app=a",
        "app=b,tier=c",
        "app in (a,b)",
        "app notin (a)",
        "tier",
        "!track",
        "app=a,track!=b",
        "app==c",
        "tier in (b)",
        "app=zzz",
    ]
)


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    pods=st.lists(
        st.tuples(LABELS, st.dictionaries(st.sampled_from(["main", "side"]), USAGE, max_size=2)),
        max_size=12,
    ),
    selectors=st.lists(SELECTORS, min_size=1, max_size=8),
    resource=st.sampled_from(["cpu", "memory"]),
    container=st.sampled_from(["", "main"]),
)
def test_a_shared_read_decides_on_what_its_own_request_would_have_returned(
    pods: list[tuple[dict[str, str], dict[str, dict[str, str]]]],
    selectors: list[str],
    resource: str,
    container: str,
) -> None:
    items = [pod(f"p{i}", labels, usage) for i, (labels, usage) in enumerate(pods)]

    async def both() -> tuple[list[Result], list[Result]]:
        server = MetricsServer(items)
        shared = await read_all(
            ResourceMetricsClient(server, share_namespace_reads=True, share_after=1),
            server,
            selectors,
            resource=resource,
            container=container,
        )
        alone = await upstream_reads(items, selectors, resource=resource, container=container)
        return shared, alone

    shared, alone = asyncio.run(both())
    assert shared == alone
