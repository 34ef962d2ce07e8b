"""prometheus-adapter's ``DefaultConfig`` as a rule file, and the RESTMappers of its tests.

Ports ``cmd/config-gen/utils/default.go`` (``DefaultConfig(rateInterval, labelPrefix)``) to the YAML
it is equivalent to, so upstream's test fixtures (series registry, resource provider) load through
``load_rules`` exactly as a user's file would.
"""

# ruff: noqa: E501  (expected PromQL strings stay on one line, as in the Go tables)

from __future__ import annotations

from pathlib import Path

from adapter.rules import StaticRESTMapper

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO / ".." / "shared" / "data" / "prometheus-adapter"
TEST_DATA = Path(__file__).resolve().parent / "data"


def default_config_yaml(rate_interval: str, label_prefix: str) -> str:
    """``DefaultConfig``: cAdvisor rules, ``<prefix><<.Resource>>`` rules, and resource rules."""
    container_query = (
        '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'  # MatchSeries(...)
    )
    normal_query = f'{{{label_prefix}namespace!="",__name__!~"^container_.*"}}'
    overrides = "{namespace: {resource: namespace}, pod: {resource: pod}}"
    resource_overrides = (
        "{namespace: {resource: namespace}, pod: {resource: pod}, instance: {resource: node}}"
    )
    rate = rate_interval
    return f"""
rules:
- seriesQuery: '{container_query}'
  resources: {{overrides: {overrides}}}
  name: {{matches: "^container_(.*)_seconds_total$"}}
  metricsQuery: 'sum(rate(<<.Series>>{{<<.LabelMatchers>>,container!="POD"}}[{rate}])) by (<<.GroupBy>>)'
- seriesQuery: '{container_query}'
  seriesFilters: [{{isNot: "^container_.*_seconds_total$"}}]
  resources: {{overrides: {overrides}}}
  name: {{matches: "^container_(.*)_total$"}}
  metricsQuery: 'sum(rate(<<.Series>>{{<<.LabelMatchers>>,container!="POD"}}[{rate}])) by (<<.GroupBy>>)'
- seriesQuery: '{container_query}'
  seriesFilters: [{{isNot: "^container_.*_total$"}}]
  resources: {{overrides: {overrides}}}
  name: {{matches: "^container_(.*)$"}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>,container!="POD"}}) by (<<.GroupBy>>)'
- seriesQuery: '{normal_query}'
  seriesFilters: [{{isNot: ".*_total$"}}]
  resources: {{template: "{label_prefix}<<.Resource>>"}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
- seriesQuery: '{normal_query}'
  seriesFilters: [{{isNot: ".*_seconds_total"}}]
  name: {{matches: "^(.*)_total$"}}
  resources: {{template: "{label_prefix}<<.Resource>>"}}
  metricsQuery: 'sum(rate(<<.Series>>{{<<.LabelMatchers>>}}[{rate}])) by (<<.GroupBy>>)'
- seriesQuery: '{normal_query}'
  name: {{matches: "^(.*)_seconds_total$"}}
  resources: {{template: "{label_prefix}<<.Resource>>"}}
  metricsQuery: 'sum(rate(<<.Series>>{{<<.LabelMatchers>>}}[{rate}])) by (<<.GroupBy>>)'
resourceRules:
  cpu:
    containerQuery: 'sum(rate(container_cpu_usage_seconds_total{{<<.LabelMatchers>>}}[{rate}])) by (<<.GroupBy>>)'
    nodeQuery: "sum(rate(container_cpu_usage_seconds_total{{<<.LabelMatchers>>, id='/'}}[{rate}])) by (<<.GroupBy>>)"
    resources: {{overrides: {resource_overrides}}}
    containerLabel: {label_prefix}container
  memory:
    containerQuery: 'sum(container_memory_working_set_bytes{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
    nodeQuery: "sum(container_memory_working_set_bytes{{<<.LabelMatchers>>,id='/'}}) by (<<.GroupBy>>)"
    resources: {{overrides: {resource_overrides}}}
    containerLabel: {label_prefix}container
  window: {rate}
"""


def series_registry_rest_mapper() -> StaticRESTMapper:
    """``restMapper()`` of ``series_registry_test.go``."""
    return StaticRESTMapper.from_kinds(
        [
            ("", "Pod", True),
            ("", "Service", True),
            ("extensions", "Ingress", True),
            ("extensions", "Deployment", True),
            ("", "Node", False),
            ("", "PersistentVolume", False),
            ("", "Namespace", False),
        ]
    )


def resource_provider_rest_mapper() -> StaticRESTMapper:
    """``restMapper()`` of ``resourceprovider/provider_test.go``."""
    return StaticRESTMapper.from_kinds(
        [("", "Pod", True), ("", "Node", False), ("", "Namespace", False)]
    )
