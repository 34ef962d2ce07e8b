"""adapter.rules.resource: resourceRules queries for metrics.k8s.io."""

# ruff: noqa: E501  (rule files and expected PromQL stay on one line)

from __future__ import annotations

import pytest

from adapter.rules import (
    InvalidValueError,
    ResourceQueries,
    RuleConfigError,
    StaticRESTMapper,
    load_rules,
)

RULES = """
resourceRules:
  cpu:
    containerQuery: 'sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[3m])) by (<<.GroupBy>>)'
    nodeQuery: 'sum(rate(node_cpu_seconds_total{mode!="idle",<<.LabelMatchers>>}[3m])) by (<<.GroupBy>>)'
    resources: {overrides: {node: {resource: node}, namespace: {resource: namespace}, pod: {resource: pod}}}
    containerLabel: container
  memory:
    containerQuery: 'sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_MemTotal_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {instance: {resource: node}, namespace: {resource: namespace}, pod: {resource: pod}}}
    containerLabel: container
  window: 3m
"""


def queries() -> ResourceQueries:
    config = load_rules(RULES, source="chart")
    assert config.resource_rules is not None
    return ResourceQueries.from_config(config.resource_rules, StaticRESTMapper.builtin())


def test_container_and_node_queries() -> None:
    rules = queries()
    assert rules.window_milliseconds == 180_000
    assert rules.cpu.build_container_query(["web-1"], namespace="shop") == (
        'sum(rate(container_cpu_usage_seconds_total{namespace="shop",pod="web-1",container!=""}[3m]))'
        " by (pod,container)"
    )
    assert rules.memory.build_node_query(["n1", "n.2"]) == (
        'sum(node_memory_MemTotal_bytes{instance=~"n1|n\\\\.2"}) by (instance)'
    )


def test_no_pods_is_refused() -> None:
    with pytest.raises(InvalidValueError):
        queries().cpu.build_container_query([], namespace="shop")


def test_unknown_resource_in_overrides_names_the_rule() -> None:
    config = load_rules(
        RULES.replace("{node: {resource: node}", "{node: {resource: nodez}"), source="chart"
    )
    assert config.resource_rules is not None
    with pytest.raises(
        RuleConfigError, match=r"chart: resourceRules\.cpu: resources\.overrides\.node"
    ):
        ResourceQueries.from_config(
            config.resource_rules, StaticRESTMapper.builtin(), source="chart"
        )
