"""Parity with prometheus-adapter's documented configurations and the queries it renders for them.

- ``docs/config-walkthrough.md`` "Per-pod HTTP Requests": discovery and the rendered query;
- ``docs/config.md`` "Querying": the ``pod1``/``pod2`` in ``somens`` example;
- ``docs/externalmetrics.md``: ``namespaced: false`` and the cross-namespace selector;
- ``docs/sample-config.yaml``, the default deploy ConfigMap (both in ../shared/data) and the
  prometheus-community chart's default rules (tests/adapter/data) rendered for typical requests.

Expected strings follow upstream's code (``Build``: selector matchers, namespace, resource), which
is what Prometheus receives. Two upstream docs print something else and are wrong about the code:
config.md lists ``pod=~"pod1|pod2",namespace="somens"`` (code puts the namespace first), and the
walkthrough's hand-written query omits ``[2m]`` and lists ``http_requests_total`` in discovery
(the rule's ``as`` makes it ``http_requests_per_second``).
"""

# ruff: noqa: E501  (expected PromQL strings stay on one line, as in the Go tables)

from __future__ import annotations

import pytest
import yaml

from adapter.rules import (
    CustomMetricInfo,
    ExternalSeriesRegistry,
    GroupResource,
    ResourceQueries,
    RuleEvaluationError,
    SeriesRegistry,
    StaticRESTMapper,
    load_rules,
    namers_from_config,
    parse_metric_selector,
)
from adapter.rules.mapper import BUILTIN_KINDS
from adapter.rules.naming import Series
from tests.adapter.default_config import SHARED_DATA, TEST_DATA

WALKTHROUGH_RULES = """
rules:
- seriesQuery: 'http_requests_total{kubernetes_namespace!="",kubernetes_pod_name!=""}'
  resources:
    overrides:
      kubernetes_namespace: {resource: "namespace"}
      kubernetes_pod_name: {resource: "pod"}
  name:
    matches: "^(.*)_total"
    as: "${1}_per_second"
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
"""


def test_config_walkthrough_per_pod_http_requests() -> None:
    config = load_rules(WALKTHROUGH_RULES, source="config-walkthrough.md")
    mapper = StaticRESTMapper.builtin()
    namers = namers_from_config(config.rules, mapper)
    found = Series(
        "http_requests_total",
        {
            "method": "GET",
            "kubernetes_namespace": "production",
            "kubernetes_pod_name": "frontend-server-abcd-0123",
        },
    )
    registry = SeriesRegistry.from_series([namers[0].filter_series([found])], namers, mapper)
    assert registry.list_all_metrics() == [
        CustomMetricInfo(GroupResource("", "namespaces"), False, "http_requests_per_second"),
        CustomMetricInfo(GroupResource("", "pods"), True, "http_requests_per_second"),
    ]
    query = registry.query_for_metric(
        CustomMetricInfo(GroupResource("", "pods"), True, "http_requests_per_second"),
        namespace="production",
        names=["frontend-server-abcd-0123", "fronted-server-abcd-4567"],
    )
    assert query == (
        'sum(rate(http_requests_total{kubernetes_namespace="production",'
        'kubernetes_pod_name=~"frontend-server-abcd-0123|fronted-server-abcd-4567"}[2m])) '
        "by (kubernetes_pod_name)"
    )


def test_config_md_querying_example() -> None:
    """``pods/http_request_per_second`` for ``pod1``, ``pod2`` in ``somens`` (config.md)."""
    config = load_rules(
        """
rules:
- seriesQuery: '{__name__=~"^http_requests_total$",namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod},
                          service: {resource: service}, ingress: {group: networking.k8s.io, resource: ingress}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: '<<.Series>> <<.LabelMatchers>> <<.GroupBy>>'
""",
        source="config.md",
    )
    namers = namers_from_config(config.rules, StaticRESTMapper.builtin())
    query = namers[0].query_for_series(
        "http_requests_total",
        GroupResource("", "pods"),
        namespace="somens",
        names=["pod1", "pod2"],
    )
    assert query == 'http_requests_total namespace="somens",pod=~"pod1|pod2" pod'


def _sample_config_mapper() -> StaticRESTMapper:
    return StaticRESTMapper.from_kinds([*BUILTIN_KINDS, ("cheese.io", "Brand", True)])


def test_sample_config_custom_rules() -> None:
    text = (SHARED_DATA / "sample-config.yaml").read_text()
    config = load_rules(text, source="sample-config.yaml")
    mapper = _sample_config_mapper()
    namers = namers_from_config(config.rules, mapper, source="sample-config.yaml")
    cadvisor = {"namespace": "default", "pod": "web-1", "container": "app"}
    series = [
        [Series("container_cpu_usage_seconds_total", cadvisor)],
        [Series("container_network_receive_bytes_total", cadvisor)],
        [Series("http_requests_total", {"namespace": "default", "pod": "web-1", "service": "web"})],
        [Series("cheddar", {"brand": "gouda", "sharp": "true"})],
    ]
    filtered = [namer.filter_series(found) for namer, found in zip(namers, series, strict=True)]
    registry = SeriesRegistry.from_series(filtered, namers, mapper)
    pods = GroupResource("", "pods")

    def query(metric: str, resource: GroupResource = pods) -> str | None:
        info = CustomMetricInfo(resource, True, metric)
        return registry.query_for_metric(info, namespace="default", names=["web-1", "web-2"])

    assert query("cpu_usage") == (
        'sum(rate(container_cpu_usage_seconds_total{namespace="default",pod=~"web-1|web-2",'
        'container!="POD"}[2m])) by (pod)'
    )
    assert query("network_receive_bytes") == (
        'sum(rate(container_network_receive_bytes_total{namespace="default",pod=~"web-1|web-2",'
        'container!="POD"}[2m])) by (pod)'
    )
    assert query("http_requests", GroupResource("", "services")) == (
        'sum(rate(http_requests_total{namespace="default",service=~"web-1|web-2",'
        'container!="POD"}[2m])) by (service)'
    )
    # The cheddar rule maps only `brand`; its other label makes upstream list it as namespaced,
    # and it has no namespace label, so only a request without a namespace can render it.
    brands = CustomMetricInfo(GroupResource("cheese.io", "brands"), True, "cheesy_goodness")
    assert brands in registry.list_all_metrics()
    assert registry.query_for_metric(brands, namespace=None, names=["gouda"]) == (
        'count(cheddar{sharp="true"})'
    )


def test_sample_config_external_rules() -> None:
    text = (SHARED_DATA / "sample-config.yaml").read_text()
    config = load_rules(text, source="sample-config.yaml")
    namers = namers_from_config(
        config.external_rules, StaticRESTMapper.builtin(), kind="externalRules"
    )
    registry = ExternalSeriesRegistry.from_series(
        [
            [Series("queue_consumer_lag", {"name": "worker_tasks"})],
            [Series("queue_depth", {"topic": "orders", "name": "q", "namespace": "queue"})],
        ],
        namers,
    )
    assert registry.list_all_metrics() == ["queue_consumer_lag", "queue_depth"]
    # docs/externalmetrics.md: matchLabels {namespace: queue, name: my-sample-queue}
    selector = parse_metric_selector("name=my-sample-queue,namespace=queue")
    assert registry.query_for_metric(
        "queue_depth", namespace="default", metric_selector=selector
    ) == ('sum(queue_depth{name="my-sample-queue",namespace="queue"}) by (name)')
    # The first external rule is namespaced (the default) but maps no label to namespaces:
    # upstream fails the same way ("unable to convert resource namespaces into label").
    with pytest.raises(
        RuleEvaluationError, match="unable to convert resource namespaces into label"
    ):
        registry.query_for_metric("queue_consumer_lag", namespace="default")


def test_deploy_config_map_resource_rules() -> None:
    config_map = yaml.safe_load((SHARED_DATA / "deploy-config-map.yaml").read_text())
    config = load_rules(config_map["data"]["config.yaml"], source="deploy-config-map.yaml")
    assert config.rules == []
    assert config.resource_rules is not None
    queries = ResourceQueries.from_config(config.resource_rules, StaticRESTMapper.builtin())
    assert queries.window_milliseconds == 300_000
    assert queries.cpu.build_container_query(["web-1", "web-2"], namespace="shop") == (
        "sum by (pod,container) (\n"
        "  irate (\n"
        '      container_cpu_usage_seconds_total{namespace="shop",pod=~"web-1|web-2",'
        'container!="",pod!=""}[4m]\n'
        "  )\n"
        ")\n"
    )
    assert queries.memory.build_node_query(["kind-control-plane"]) == (
        'sum by (node) (\n  node_memory_working_set_bytes{node="kind-control-plane"}\n)\n'
    )


def test_helm_chart_default_rules() -> None:
    text = (TEST_DATA / "helm-chart-default-rules.yaml").read_text()
    config = load_rules(text, source="helm-chart-default-rules.yaml")
    assert len(config.rules) == 6
    assert config.warnings == ()
    mapper = StaticRESTMapper.builtin()
    namers = namers_from_config(config.rules, mapper)
    labels = {"namespace": "shop", "pod": "web-1", "container": "app"}
    found = [
        Series("container_cpu_usage_seconds_total", labels),
        Series("container_memory_working_set_bytes", labels),
        Series("http_requests_total", {"namespace": "shop", "pod": "web-1", "job": "web"}),
        Series("queue_length", {"namespace": "shop", "service": "web"}),
    ]
    registry = SeriesRegistry.from_series(
        [namer.filter_series(found) for namer in namers], namers, mapper
    )
    pods = GroupResource("", "pods")

    def query(metric: str, resource: GroupResource = pods) -> str | None:
        return registry.query_for_metric(
            CustomMetricInfo(resource, True, metric), namespace="shop", names=["web-1"]
        )

    assert query("cpu_usage") == (
        'sum(rate(container_cpu_usage_seconds_total{namespace="shop",pod="web-1",'
        'container!="POD"}[5m])) by (pod)'
    )
    assert query("memory_working_set_bytes") == (
        'sum(container_memory_working_set_bytes{namespace="shop",pod="web-1",container!="POD"}) '
        "by (pod)"
    )
    assert query("http_requests") == (
        'sum(rate(http_requests_total{namespace="shop",pod="web-1"}[5m])) by (pod)'
    )
    assert query("queue_length", GroupResource("", "services")) == (
        'sum(queue_length{namespace="shop",service="web-1"}) by (service)'
    )
