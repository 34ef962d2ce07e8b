"""ResourceMetricsProvider against the fake Prometheus: assembly rules and failure handling.

Upstream counterpart: prometheus-adapter ``pkg/resourceprovider/provider_test.go`` (pods grouped
by namespace, containers by label, a missing CPU or memory result drops the pod, earliest
timestamp, nodes need both). Deviations (NaN dropped, all-failed raises) are pinned here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import MetricFetchError, ResourceMetricsProvider
from adapter.rules import ResourceQueries, StaticRESTMapper, load_rules
from tests.fakes.prometheus import FakePrometheus, FakeSample

RULES = """
resourceRules:
  cpu:
    containerQuery: 'sum(rate(cpu_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    nodeQuery: 'sum(rate(node_cpu_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum(memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  window: 30s
"""  # noqa: E501

CPU = {
    "a": [("p1", "app", "0.5", 100.0), ("p1", "side", "-0.1", 90.0), ("p2", "app", "NaN", 100.0)],
    "b": [("q1", "app", "1", 100.0)],
}
MEMORY = {
    "a": [("p1", "app", "1048576", 95.0), ("p2", "app", "1024", 100.0)],
    "b": [("q1", "app", "2048", 100.0)],
}


def respond(query: str) -> list[FakeSample]:
    table = CPU if query.startswith("sum(rate(cpu_total") else MEMORY
    for namespace, rows in table.items():
        if f'namespace="{namespace}"' in query:
            return [
                FakeSample({"pod": pod, "container": container}, value, timestamp_seconds=timestamp)
                for pod, container, value, timestamp in rows
            ]
    if "node" in query:
        value = "2.5" if "cpu" in query else "4294967296"
        return [FakeSample({"node": "n1"}, value, timestamp_seconds=100.0)]
    return []


@pytest.fixture
async def fake() -> AsyncIterator[FakePrometheus]:
    async with FakePrometheus(responder=respond) as prometheus:
        yield prometheus


def provider(client: PrometheusClient) -> ResourceMetricsProvider:
    rules = load_rules(RULES, source="test").resource_rules
    assert rules is not None
    return ResourceMetricsProvider(
        client, ResourceQueries.from_config(rules, StaticRESTMapper.builtin())
    )


async def test_pods_are_assembled_per_namespace(fake: FakePrometheus) -> None:
    async with PrometheusClient(PrometheusConnection(fake.url)) as client:
        pods = await provider(client).get_pod_metrics([("a", "p1"), ("a", "p2"), ("b", "q1")])
    # p2's only CPU sample is NaN: no CPU result, so no metrics (upstream would report 0).
    assert [(p.namespace, p.name) for p in pods] == [("a", "p1"), ("b", "q1")]
    p1 = pods[0]
    assert p1.timestamp == datetime.fromtimestamp(90.0, UTC)
    assert p1.window_milliseconds == 30_000
    # A negative rate reads 0; a container with CPU only gets 0 memory.
    assert {c.name: (str(c.cpu), str(c.memory)) for c in p1.containers} == {
        "app": ("500m", "1Mi"),
        "side": ("0", "0"),
    }
    assert len(fake.requests) == 4  # CPU and memory for each of the two namespaces


async def test_a_failed_namespace_is_skipped_but_all_failed_raises(fake: FakePrometheus) -> None:
    async with PrometheusClient(PrometheusConnection(fake.url)) as client:
        fake.fail_api("/api/v1/query", status=422, error_type="execution", error="boom")
        partial = await provider(client).get_pod_metrics([("a", "p1"), ("b", "q1")])
        fake.fail_api(
            "/api/v1/query",
            status=422,
            error_type="execution",
            error="boom",
        )
        fake.fail_api("/api/v1/query", status=422, error_type="execution", error="boom")
        with pytest.raises(MetricFetchError):
            await provider(client).get_pod_metrics([("a", "p1")])
    assert len(partial) == 1


async def test_nodes(fake: FakePrometheus) -> None:
    async with PrometheusClient(PrometheusConnection(fake.url)) as client:
        nodes = await provider(client).get_node_metrics(["n1", "n2"])
        assert await provider(client).get_node_metrics([]) == []
    assert [(n.name, str(n.cpu), str(n.memory)) for n in nodes] == [("n1", "2500m", "4Gi")]
