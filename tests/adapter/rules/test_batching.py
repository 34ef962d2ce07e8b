# ruff: noqa: E501  (queries stay on one line, as users write them)
"""The batchability rule and the batched query, with prometheus-adapter's own configs as cases."""

from __future__ import annotations

import pytest
import yaml

from adapter.rules import (
    NODES,
    PODS,
    InvalidValueError,
    StaticRESTMapper,
    load_rules,
    namers_from_config,
    parse_metric_selector,
)
from adapter.rules.batching import batchability, build_batch_query
from adapter.rules.config import QUERY_TEMPLATE_ARGS
from adapter.rules.gotemplate import parse_template
from adapter.rules.mapper import BUILTIN_KINDS
from adapter.rules.resource import ResourceQueries
from tests.adapter.default_config import SHARED_DATA, TEST_DATA, default_config_yaml


def _verdicts(text: str, source: str) -> list[tuple[str, bool]]:
    config = load_rules(text, source=source)
    return [
        (rule.metrics_query.strip(), batchability(rule.metrics_query_template).batchable)
        for rule in (*config.rules, *config.external_rules)
    ]


def test_sample_config_custom_rules_batch_and_the_fixed_or_name_grouped_ones_do_not() -> None:
    verdicts = _verdicts((SHARED_DATA / "sample-config.yaml").read_text(), "sample-config.yaml")
    assert verdicts == [
        ('sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[2m])) by (<<.GroupBy>>)', True),
        ('sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[2m])) by (<<.GroupBy>>)', True),
        ('sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[2m])) by (<<.GroupBy>>)', True),
        ('count(cheddar{sharp="true"})', False),  # no object matcher, no grouping
        ("sum(<<.Series>>{<<.LabelMatchers>>}) by (name)", False),  # external: grouped by name
        ("sum(<<.Series>>{<<.LabelMatchers>>}) by (name)", False),
    ]


def test_helm_chart_and_default_config_rules_all_batch() -> None:
    for text, source in (
        ((TEST_DATA / "helm-chart-default-rules.yaml").read_text(), "helm"),
        (default_config_yaml("5m", ""), "default"),
    ):
        verdicts = _verdicts(text, source)
        assert verdicts
        assert all(batchable for _, batchable in verdicts), verdicts


def test_deploy_config_map_resource_rules_batch() -> None:
    config_map = yaml.safe_load((SHARED_DATA / "deploy-config-map.yaml").read_text())
    config = load_rules(config_map["data"]["config.yaml"], source="deploy-config-map.yaml")
    assert config.resource_rules is not None
    for rule in (config.resource_rules.cpu, config.resource_rules.memory):
        assert batchability(rule.container_query_template).batchable
        assert batchability(rule.node_query_template).batchable


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (
            "histogram_quantile(0.9, sum by (le, <<.GroupBy>>) (rate(<<.Series>>{<<.LabelMatchers>>}[5m])))",
            "without 'by",
        ),
        ("rate(<<.Series>>{<<.LabelMatchers>>}[1m])", "outside an aggregation"),
        ("sum(<<.Series>>{<<.LabelMatchers>>})", "without 'by"),
        (
            "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>) / on() group_left scalar(sum(up))",
            "mixes objects",
        ),
        (
            "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>) / sum(kube_pod_info) by (<<.GroupBy>>)",
            "'kube_pod_info' without .LabelMatchers",
        ),
        (
            "sum(<<.Series>>{<<.LabelMatchers>>} * on (pod) kube_pod_info) by (<<.GroupBy>>)",
            "mixes",
        ),
        ("sum(<<.Series>>{<<.LabelMatchers>>} > bool 1) by (<<.GroupBy>>, x)", "without 'by"),
        ("topk by (<<.GroupBy>>) (1, <<.Series>>{<<.LabelMatchers>>})", "not batched"),
        (
            'sum(<<.Series>>{<<index .LabelValuesByName "pod">>}) by (<<.GroupBy>>)',
            "LabelValuesByName",
        ),
        (
            "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>) * <<len .GroupBySlice>>",
            "GroupBySlice",
        ),
        (
            'label_replace(sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>), "pod", "x", "", "")',
            "mixes objects",
        ),
        ("sum without (container) (<<.Series>>{<<.LabelMatchers>>})", "mixes objects"),
    ],
)
def test_templates_that_are_answered_per_request(query: str, reason: str) -> None:
    template = parse_template(query, name="metricsQuery", root=QUERY_TEMPLATE_ARGS)
    verdict = batchability(template)
    assert not verdict.batchable
    assert reason in verdict.reason


@pytest.mark.parametrize(
    "query",
    [
        "sum by (<<.GroupBy>>) (rate(<<.Series>>{<<.LabelMatchers>>}[1m]))",
        "sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>) / "
        'sum(rate(<<.Series>>{<<.LabelMatchers>>,code=~"5.."}[1m])) by (<<.GroupBy>>) * 100 > 0',
        "max_over_time(avg by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})[5m:1m])  # peak",
    ],
)
def test_templates_that_batch(query: str) -> None:
    template = parse_template(query, name="metricsQuery", root=QUERY_TEMPLATE_ARGS)
    assert batchability(template).batchable


def test_batched_query_covers_every_object_grouped_by_namespace_and_resource() -> None:
    config = load_rules((SHARED_DATA / "sample-config.yaml").read_text(), source="sample")
    mapper = StaticRESTMapper.from_kinds([*BUILTIN_KINDS, ("cheese.io", "Brand", True)])
    namer = namers_from_config(config.rules, mapper)[0]
    everywhere = build_batch_query(
        namer.metrics_query,
        "container_cpu_usage_seconds_total",
        PODS,
        namespace=None,
        across_namespaces=True,
    )
    assert everywhere.query == (
        'sum(rate(container_cpu_usage_seconds_total{namespace!="",container!="POD"}[2m]))'
        " by (namespace,pod)"
    )
    assert (everywhere.namespace_label, everywhere.resource_label) == ("namespace", "pod")
    one = build_batch_query(
        namer.metrics_query,
        "container_cpu_usage_seconds_total",
        PODS,
        namespace="web",
        across_namespaces=False,
        metric_selector=parse_metric_selector("cpu=total"),
    )
    assert one.query == (
        'sum(rate(container_cpu_usage_seconds_total{cpu="total",namespace="web",'
        'container!="POD"}[2m])) by (pod)'
    )
    assert one.namespace_label is None
    with pytest.raises(InvalidValueError, match="not batched"):
        build_batch_query(
            namer.metrics_query,
            "x",
            PODS,
            namespace=None,
            across_namespaces=True,
            metric_selector=parse_metric_selector("pod=a"),
        )


def test_batched_resource_queries_for_all_pods_and_nodes() -> None:
    config_map = yaml.safe_load((SHARED_DATA / "deploy-config-map.yaml").read_text())
    config = load_rules(config_map["data"]["config.yaml"], source="deploy-config-map.yaml")
    assert config.resource_rules is not None
    queries = ResourceQueries.from_config(config.resource_rules, StaticRESTMapper.builtin())
    pods = build_batch_query(
        queries.memory.container_query,
        "",
        PODS,
        namespace=None,
        across_namespaces=True,
        extra_group_by=(queries.memory.container_label,),
    )
    assert "by (namespace,pod,container)" in " ".join(pods.query.split())
    nodes = build_batch_query(
        queries.memory.node_query, "", NODES, namespace=None, across_namespaces=False
    )
    assert nodes.namespace_label is None
    assert "by (node)" in " ".join(nodes.query.split())
