"""Parity with prometheus-adapter ``pkg/resourceprovider/provider_test.go`` (the queries it asks).

The Go test ("Resource Metrics Provider") registers fake Prometheus answers under the exact
selectors ``contQuery.Build("", pods, ns, [containerLabel], Everything, names...)`` and
``nodeQuery.Build("", nodes, "", nil, Everything, names...)`` over
``config.DefaultConfig(1*time.Minute, "")``; the provider only gets data if it asks those exact
strings. These are those strings, rendered by hand from ``DefaultConfig`` and ``Build`` (namespace
matcher, then resource matcher; group-by resource label then container label), for each ``It``:
"list metrics pods across different namespaces", "missing pods", "NaN or negative values" (same
queries), "list metrics for nodes", "missing nodes".
"""

# ruff: noqa: E501  (expected PromQL strings stay on one line, as in the Go tables)

from __future__ import annotations

import pytest

from adapter.rules import ResourceQueries, load_rules
from tests.adapter.default_config import default_config_yaml, resource_provider_rest_mapper


@pytest.fixture
def queries() -> ResourceQueries:
    config = load_rules(default_config_yaml("1m", ""), source="DefaultConfig(1m, '')")
    assert config.resource_rules is not None
    return ResourceQueries.from_config(config.resource_rules, resource_provider_rest_mapper())


POD_CASES = [
    (
        "some-ns",
        ("pod1", "pod3"),
        'sum(rate(container_cpu_usage_seconds_total{namespace="some-ns",pod=~"pod1|pod3"}[1m])) by (pod,container)',
        'sum(container_memory_working_set_bytes{namespace="some-ns",pod=~"pod1|pod3"}) by (pod,container)',
    ),
    (
        "other-ns",
        ("pod27",),
        'sum(rate(container_cpu_usage_seconds_total{namespace="other-ns",pod="pod27"}[1m])) by (pod,container)',
        'sum(container_memory_working_set_bytes{namespace="other-ns",pod="pod27"}) by (pod,container)',
    ),
    (
        "some-ns",
        ("pod1", "pod-nonexistant"),
        'sum(rate(container_cpu_usage_seconds_total{namespace="some-ns",pod=~"pod1|pod-nonexistant"}[1m])) by (pod,container)',
        'sum(container_memory_working_set_bytes{namespace="some-ns",pod=~"pod1|pod-nonexistant"}) by (pod,container)',
    ),
]


@pytest.mark.parametrize(("namespace", "pods", "cpu", "memory"), POD_CASES)
def test_pod_queries(
    queries: ResourceQueries, namespace: str, pods: tuple[str, ...], cpu: str, memory: str
) -> None:
    assert queries.cpu.build_container_query(pods, namespace=namespace) == cpu
    assert queries.memory.build_container_query(pods, namespace=namespace) == memory


NODE_CASES = [
    (
        ("node1", "node2"),
        "sum(rate(container_cpu_usage_seconds_total{instance=~\"node1|node2\", id='/'}[1m])) by (instance)",
        "sum(container_memory_working_set_bytes{instance=~\"node1|node2\",id='/'}) by (instance)",
    ),
    (
        ("node1", "node2", "node3"),
        "sum(rate(container_cpu_usage_seconds_total{instance=~\"node1|node2|node3\", id='/'}[1m])) by (instance)",
        "sum(container_memory_working_set_bytes{instance=~\"node1|node2|node3\",id='/'}) by (instance)",
    ),
]


@pytest.mark.parametrize(("nodes", "cpu", "memory"), NODE_CASES)
def test_node_queries(
    queries: ResourceQueries, nodes: tuple[str, ...], cpu: str, memory: str
) -> None:
    assert queries.cpu.build_node_query(nodes) == cpu
    assert queries.memory.build_node_query(nodes) == memory


def test_window_and_result_labels(queries: ResourceQueries) -> None:
    """``Window: time.Minute``; results are keyed by the pod/node label and ``containerLabel``."""
    assert queries.window_milliseconds == 60_000
    assert queries.cpu.container_label == "container"
    assert queries.cpu.pod_label() == "pod"
    assert queries.memory.node_label() == "instance"
