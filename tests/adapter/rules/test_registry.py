"""adapter.rules.registry: registry snapshots the providers swap in after each relist."""

from __future__ import annotations

import pytest

from adapter.rules import (
    CustomMetricInfo,
    ExternalSeriesRegistry,
    GroupResource,
    SeriesRegistry,
    StaticRESTMapper,
    load_rules,
    namers_from_config,
)
from adapter.rules.naming import Series

RULES = """
rules:
- seriesQuery: '{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__=~"queue_.*"}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
- seriesQuery: '{__name__=~"queue_.*"}'
  resources: {namespaced: false}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>})'
"""
MAPPER = StaticRESTMapper.builtin()
CONFIG = load_rules(RULES, source="t.yaml")
NAMERS = namers_from_config(CONFIG.rules, MAPPER)
PODS = GroupResource("", "pods")
LABELS = {"namespace": "shop", "pod": "web-1"}


def test_registry_skips_unnamable_and_invalid_series() -> None:
    found = [
        Series("http_requests_total", LABELS),
        Series("http_requests", LABELS),
        Series("a.b_total", LABELS),
    ]
    registry = SeriesRegistry.from_series([found], NAMERS, MAPPER)
    assert registry.list_all_metrics() == [
        CustomMetricInfo(GroupResource("", "namespaces"), False, "http_requests"),
        CustomMetricInfo(PODS, True, "http_requests"),
    ]
    assert registry.skipped == ("http_requests", "a.b_total")


def test_query_normalizes_the_requested_resource() -> None:
    registry = SeriesRegistry.from_series([[Series("http_requests_total", LABELS)]], NAMERS, MAPPER)
    info = CustomMetricInfo(GroupResource("", "pod"), True, "http_requests")
    assert registry.query_for_metric(info, namespace="shop", names=["web-1"]) == (
        'sum(rate(http_requests_total{namespace="shop",pod="web-1"}[1m])) by (pod)'
    )
    unknown_resource = CustomMetricInfo(GroupResource("", "widgets"), True, "http_requests")
    assert registry.query_for_metric(unknown_resource, namespace="shop", names=["a"]) is None
    assert registry.query_for_metric(info, namespace="shop", names=[]) is None


def test_match_values_to_names() -> None:
    registry = SeriesRegistry.from_series([[Series("http_requests_total", LABELS)]], NAMERS, MAPPER)
    info = CustomMetricInfo(PODS, True, "http_requests")
    samples = [({"pod": "web-1"}, 1.5), ({"pod": "web-2"}, 2.0)]
    assert registry.match_values_to_names(info, samples) == {"web-1": 1.5, "web-2": 2.0}
    assert registry.match_values_to_names(CustomMetricInfo(PODS, True, "nope"), samples) is None


def test_external_registry_last_rule_wins_and_unknown_is_none() -> None:
    namers = namers_from_config(CONFIG.external_rules, MAPPER, kind="externalRules")
    depth = Series("queue_depth", {"topic": "t"})
    registry = ExternalSeriesRegistry.from_series([[depth], [depth]], namers)
    assert registry.list_all_metrics() == ["queue_depth"]
    assert registry.query_for_metric("queue_depth", namespace="default") == "max(queue_depth{})"
    assert registry.query_for_metric("queue_lag", namespace="default") is None


def test_one_series_list_per_namer() -> None:
    with pytest.raises(ValueError, match="one set of series per namer"):
        SeriesRegistry.from_series([], NAMERS, MAPPER)
