"""The providers against a real Prometheus (Debian's, via tests/lab/prometheus.py) fed synthetic
series by ``promtool tsdb create-blocks-from openmetrics``.

The series are written from 5 minutes before the test module starts to 2 minutes after it, every
5 s, so "now" always has a sample at most 5 s old (fresh), while the ``legacy`` deployment's
series ends 3 minutes before the start (stale but still inside Prometheus's 5-minute lookback).
Expected values are the ones Prometheus holds: gauges exactly, rates of linear counters exactly
(the counters rise by whole multiples of the step).

Upstream counterparts: prometheus-adapter's provider tests (``provider_test.go``,
``resourceprovider/provider_test.go``) use a fake client; here the rule-rendered PromQL is
evaluated by Prometheus itself.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import (
    CUSTOM_V1BETA2,
    EXTERNAL_V1BETA1,
    MetricNotFoundError,
    MetricPolicy,
    MetricProviders,
    MissingCause,
    ValueSettings,
    build_providers,
    custom_metric_request,
)
from adapter.rules import CustomMetricInfo, load_rules
from tests.adapter.providers.fake_pods import FakePodLister
from tests.lab.prometheus import PrometheusServer

RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'queue_depth{namespace!="",deployment!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      deployment: {group: apps, resource: deployment}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'namespace_load{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'node_temperature_celsius{node!=""}'
  resources:
    overrides:
      node: {resource: node}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
resourceRules:
  cpu:
    containerQuery: >-
      sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m]))
      by (<<.GroupBy>>)
    nodeQuery: 'sum(rate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  memory:
    containerQuery: 'sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  window: 1m
"""

PODS = {
    "ns1": {
        "web-1": {"app": "web"},
        "web-2": {"app": "web"},
        "web-nan": {"app": "web"},
        "web-idle": {"app": "web"},
        "db-0": {"app": "db"},
    }
}
STEP_SECONDS = 5
HISTORY_SECONDS = 300
FUTURE_SECONDS = 180


@dataclass(frozen=True)
class Fed:
    prometheus: PrometheusServer
    start_seconds: int  # the "now" the series were written around


def _gauge(name: str, labels: str, *, value_at: object, until: int, start: int) -> list[str]:
    lines = []
    for t in range(start - HISTORY_SECONDS, until + 1, STEP_SECONDS):
        value = value_at(t - start + HISTORY_SECONDS) if callable(value_at) else value_at
        lines.append(f"{name}{{{labels}}} {value} {t}")
    return lines


def openmetrics(start: int) -> str:
    end = start + FUTURE_SECONDS
    out: list[str] = []

    def family(name: str, *series: tuple[str, object, int]) -> None:
        out.append(f"# TYPE {name} gauge")
        for labels, value, until in series:
            out.extend(_gauge(name, labels, value_at=value, until=until, start=start))

    family(
        "http_requests_total",
        ('namespace="ns1",pod="web-1",method="GET"', lambda s: 1.5 * s, end),
        ('namespace="ns1",pod="web-1",method="POST"', lambda s: 0.5 * s, end),
        ('namespace="ns1",pod="web-2",method="GET"', lambda s: 0.25 * s, end),
        ('namespace="ns1",pod="web-nan",method="GET"', "NaN", end),
    )
    family(
        "queue_depth",
        ('namespace="ns1",deployment="worker"', 42, end),
        ('namespace="ns1",deployment="legacy"', 7, start - 180),
    )
    family("namespace_load", ('namespace="ns1"', 1.5, end))
    family("node_temperature_celsius", ('node="node-a"', 55.25, end))
    family(
        "queue_messages_ready",
        ('queue="orders"', 12, end),
        ('queue="billing"', 30.5, end),
    )
    family(
        "container_cpu_usage_seconds_total",
        ('namespace="ns1",pod="web-1",container="app"', lambda s: 0.25 * s, end),
        ('namespace="ns1",pod="web-1",container="sidecar"', lambda s: 0.05 * s, end),
        ('namespace="ns1",pod="web-2",container="app"', lambda s: 0.5 * s, end),
    )
    family(
        "container_memory_working_set_bytes",
        ('namespace="ns1",pod="web-1",container="app"', 104857600, end),
        ('namespace="ns1",pod="web-1",container="sidecar"', 10485760, end),
        ('namespace="ns1",pod="web-2",container="app"', "NaN", end),
    )
    family("node_cpu_usage_seconds_total", ('node="node-a"', lambda s: 1.5 * s, end))
    family("node_memory_working_set_bytes", ('node="node-a"', 2147483648, end))
    out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def fed() -> Iterator[Fed]:
    start = int(time.time())
    server = PrometheusServer()
    server.backfill_openmetrics(openmetrics(start))
    with server:
        yield Fed(server, start)


@pytest.fixture
async def providers(fed: Fed) -> AsyncIterator[MetricProviders]:
    async with PrometheusClient(
        PrometheusConnection(fed.prometheus.url, timeout_seconds=10.0)
    ) as client:
        built = build_providers(
            load_rules(RULES, source="test-rules"),
            client,
            pod_lister=FakePodLister(PODS),
            settings=ValueSettings(
                max_sample_age_seconds=60.0,
                policies={"queue_idle": MetricPolicy(empty_is_zero=True)},
            ),
            registry=CollectorRegistry(),
            max_age_seconds=600.0,
        )
        await built.relister.relist()
        yield built


def pods_metric(metric: str) -> CustomMetricInfo:
    return custom_metric_request(namespace="ns1", resource="pods", name="*", metric=metric).info


# ---------------------------------------------------------------- discovery


async def test_relist_discovers_every_rule_and_prebuilds_discovery(
    providers: MetricProviders,
) -> None:
    names = {f"{info.group_resource}/{info.metric}" for info in providers.custom.list_all_metrics()}
    assert {
        "pods/http_requests_per_second",
        "namespaces/http_requests_per_second",
        "deployments.apps/queue_depth",
        "namespaces/namespace_load",
        "nodes/node_temperature_celsius",
    } <= names
    assert providers.external.list_all_metrics() == ["queue_messages_ready"]
    custom = providers.discovery(CUSTOM_V1BETA2)
    external = providers.discovery(EXTERNAL_V1BETA1)
    assert custom is not None
    assert external is not None
    assert b'"name":"pods/http_requests_per_second","singularName":"","namespaced":true' in custom
    assert b'"name":"nodes/node_temperature_celsius","singularName":"","namespaced":false' in (
        custom
    )
    assert b'"name":"queue_messages_ready"' in external


# ---------------------------------------------------------------- custom metrics, every path form


async def test_pods_by_label_selector_come_from_the_pod_lister(
    providers: MetricProviders,
) -> None:
    values = await providers.custom.get_metric_by_selector(
        pods_metric("http_requests_per_second"), namespace="ns1", selector="app=web"
    )
    # web-nan (NaN) and web-idle (no series) are left out; the order is the lister's.
    assert [(v.described_object.name, str(v.value)) for v in values] == [
        ("web-1", "2"),
        ("web-2", "250m"),
    ]
    first = values[0]
    assert (first.described_object.kind, first.described_object.api_version) == ("Pod", "/v1")
    assert first.described_object.namespace == "ns1"
    assert first.window_seconds == 120
    assert abs(first.timestamp - datetime.now(UTC)) < timedelta(seconds=30)


async def test_metric_label_selector_narrows_the_series(providers: MetricProviders) -> None:
    values = await providers.custom.get_metric_by_selector(
        pods_metric("http_requests_per_second"),
        namespace="ns1",
        selector="app=web",
        metric_selector="method=GET",
    )
    assert [(v.described_object.name, str(v.value)) for v in values] == [
        ("web-1", "1500m"),
        ("web-2", "250m"),
    ]
    assert values[0].metric_selector is not None


async def test_named_namespaced_object(providers: MetricProviders) -> None:
    request = custom_metric_request(
        namespace="ns1", resource="deployments.apps", name="worker", metric="queue_depth"
    )
    assert request.name == "worker"
    value = await providers.custom.get_metric_by_name(
        request.info, request.name, namespace=request.namespace
    )
    assert str(value.value) == "42"
    assert (value.described_object.kind, value.described_object.api_version) == (
        "Deployment",
        "apps/v1",
    )
    assert value.window_seconds is None


async def test_the_namespace_object_itself(providers: MetricProviders) -> None:
    request = custom_metric_request(
        namespace="ns1", resource="metrics", name="namespace_load", metric=""
    )
    assert request.name == "ns1"
    value = await providers.custom.get_metric_by_name(request.info, request.name)
    assert str(value.value) == "1500m"
    assert value.described_object.kind == "Namespace"
    assert value.described_object.namespace == ""


async def test_root_scoped_node(providers: MetricProviders) -> None:
    request = custom_metric_request(
        namespace=None, resource="nodes", name="node-a", metric="node_temperature_celsius"
    )
    assert request.name is not None
    value = await providers.custom.get_metric_by_name(request.info, request.name)
    assert str(value.value) == "55250m"
    assert (value.described_object.kind, value.described_object.namespace) == ("Node", "")


# ---------------------------------------------------------------- missing values


async def test_a_pod_without_series_is_not_found_with_upstream_message(
    providers: MetricProviders,
) -> None:
    with pytest.raises(MetricNotFoundError) as caught:
        await providers.custom.get_metric_by_name(
            pods_metric("http_requests_per_second"), "web-idle", namespace="ns1"
        )
    assert caught.value.message == (
        "the server could not find the metric http_requests_per_second for pods web-idle"
    )
    assert caught.value.cause is MissingCause.EMPTY_RESULT
    assert (caught.value.code, caught.value.reason) == (404, "NotFound")


async def test_nan_is_not_a_value(providers: MetricProviders) -> None:
    with pytest.raises(MetricNotFoundError) as caught:
        await providers.custom.get_metric_by_name(
            pods_metric("http_requests_per_second"), "web-nan", namespace="ns1"
        )
    assert caught.value.cause is MissingCause.NOT_FINITE


async def test_a_stale_sample_counts_as_missing(providers: MetricProviders, fed: Fed) -> None:
    info = custom_metric_request(
        namespace="ns1", resource="deployments.apps", name="legacy", metric="queue_depth"
    ).info
    # Prometheus still returns the 3-minute-old sample (5-minute lookback)...
    raw = await fed.prometheus.query_async('sum(queue_depth{namespace="ns1",deployment="legacy"})')
    assert [sample.value for sample in raw] == [7.0]
    # ...but the adapter refuses it.
    with pytest.raises(MetricNotFoundError) as caught:
        await providers.custom.get_metric_by_name(info, "legacy", namespace="ns1")
    assert caught.value.cause is MissingCause.STALE
    assert caught.value.message == (
        "the server could not find the metric queue_depth for deployments.apps legacy"
    )


async def test_a_selector_with_no_values_is_not_found(providers: MetricProviders) -> None:
    with pytest.raises(MetricNotFoundError) as caught:
        await providers.custom.get_metric_by_selector(
            pods_metric("http_requests_per_second"), namespace="ns1", selector="app=db"
        )
    assert caught.value.message == (
        "the server could not find the metric http_requests_per_second for pods"
    )
    with pytest.raises(MetricNotFoundError) as nobody:
        await providers.custom.get_metric_by_selector(
            pods_metric("http_requests_per_second"), namespace="ns1", selector="app=nothing"
        )
    assert nobody.value.cause is MissingCause.NO_OBJECTS


async def test_an_unknown_metric_is_not_found(providers: MetricProviders) -> None:
    with pytest.raises(MetricNotFoundError) as caught:
        await providers.custom.get_metric_by_name(
            pods_metric("no_such_metric"), "web-1", namespace="ns1"
        )
    assert caught.value.message == "the server could not find the metric no_such_metric for pods"
    assert caught.value.cause is MissingCause.UNKNOWN_METRIC


# ---------------------------------------------------------------- external metrics


async def test_external_metric_with_a_selector_on_a_non_namespaced_rule(
    providers: MetricProviders,
) -> None:
    values = await providers.external.get_external_metric(
        "queue_messages_ready", namespace="any-namespace", metric_selector="queue=orders"
    )
    assert [(dict(v.labels), str(v.value)) for v in values] == [({"queue": "orders"}, "12")]
    everything = await providers.external.get_external_metric(
        "queue_messages_ready", namespace="default"
    )
    assert sorted(str(v.value) for v in everything) == ["12", "30500m"]


async def test_external_empty_result_is_not_found(providers: MetricProviders) -> None:
    with pytest.raises(MetricNotFoundError) as caught:
        await providers.external.get_external_metric(
            "queue_messages_ready", namespace="default", metric_selector="queue=nothing"
        )
    assert caught.value.cause is MissingCause.EMPTY_RESULT
    assert caught.value.message == (
        "the server could not find the metric queue_messages_ready for namespaces"
    )


# ---------------------------------------------------------------- resource metrics


async def test_pod_and_node_resource_metrics(providers: MetricProviders) -> None:
    assert providers.resource is not None
    pods = await providers.resource.get_pod_metrics([("ns1", "web-1"), ("ns1", "web-2")])
    # web-2's memory is NaN: no complete data, left out.
    assert [pod.name for pod in pods] == ["web-1"]
    (web_1,) = pods
    assert web_1.window_milliseconds == 60_000
    usage = {c.name: (str(c.cpu), str(c.memory)) for c in web_1.containers}
    assert usage == {"app": ("250m", "100Mi"), "sidecar": ("50m", "10Mi")}
    nodes = await providers.resource.get_node_metrics(["node-a", "node-missing"])
    assert [(n.name, str(n.cpu), str(n.memory)) for n in nodes] == [("node-a", "1500m", "2Gi")]


# ---------------------------------------------------------------- history


async def test_custom_metric_history_is_a_range_query(providers: MetricProviders, fed: Fed) -> None:
    start = datetime.fromtimestamp(fed.start_seconds - 100, UTC)
    history = await providers.history.custom_metric_history(
        pods_metric("http_requests_per_second"),
        namespace="ns1",
        names=["web-1", "web-2"],
        start=start,
        end=start + timedelta(seconds=60),
        step_seconds=20,
    )
    assert [point.value_milli for point in history["web-1"].points] == [2000, 2000, 2000, 2000]
    assert [point.value_milli for point in history["web-2"].points] == [250, 250, 250, 250]
    assert history["web-1"].points[0].timestamp == start
