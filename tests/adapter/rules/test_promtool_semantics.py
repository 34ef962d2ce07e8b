"""Rendered queries run in real Prometheus (``promtool test rules``) select exactly what they mean.

The fuzz proves structure with our own lexer; this checks semantics with Prometheus' own parser
and regex engine: queries built from hostile object names and namespaces are evaluated over
synthetic series, including decoys that an unescaped regex would also match (``a.b`` vs ``axb``)
and the same pods in another namespace. The expected result is exactly the requested objects.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from adapter.rules import (
    GroupResource,
    ResourceQueries,
    StaticRESTMapper,
    load_rules,
    namers_from_config,
    parse_metric_selector,
)
from adapter.rules.mapper import BUILTIN_KINDS, PODS
from adapter.rules.promql import go_quote
from tests.adapter.default_config import SHARED_DATA, TEST_DATA

PROMTOOL = "/usr/bin/promtool"

RULES = """
rules:
- seriesQuery: 'app_load{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""

HOSTILE_NAMES = [
    "a.b",
    'x"y',
    "back\\slash",
    "new\nline",
    "pipe|x",
    "(paren)",
    "star*",
    "中文",
    '"} or up{a="',
    "",
]
DECOYS = ["axb", "pipe", "x", "starrr", "paren", "new"]
NAMESPACE = 'ns"} or vector(1) or x{a="'


def series(namespace: str, pod: str) -> str:
    return f"app_load{{namespace={go_quote(namespace)},pod={go_quote(pod)}}}"


def test_hostile_names_select_exactly_their_series(tmp_path: Path) -> None:
    config = load_rules(RULES, source="t.yaml")
    namer = namers_from_config(config.rules, StaticRESTMapper.builtin())[0]
    pods = [*HOSTILE_NAMES, *DECOYS]
    values = {pod: index + 1 for index, pod in enumerate(pods)}
    input_series = [
        {"series": series(NAMESPACE, pod), "values": str(values[pod])} for pod in pods
    ] + [{"series": series("other", pod), "values": "1000"} for pod in pods]
    cases = []
    for requested in (HOSTILE_NAMES, ["a.b"], ['"} or up{a="'], ["star*", "(paren)"]):
        query = namer.query_for_series("app_load", PODS, namespace=NAMESPACE, names=requested)
        cases.append(
            {
                "expr": query,
                "eval_time": "0m",
                "exp_samples": [
                    # an empty label value is no label at all in Prometheus
                    {"labels": f"{{pod={go_quote(pod)}}}" if pod else "{}", "value": values[pod]}
                    for pod in dict.fromkeys(requested)
                ],
            }
        )
    selector = parse_metric_selector("tier notin (a.b)")
    query = namer.query_for_series(
        "app_load", PODS, namespace="other", names=["a.b"], metric_selector=selector
    )
    cases.append(
        {
            "expr": query,
            "eval_time": "0m",
            "exp_samples": [{"labels": '{pod="a.b"}', "value": 1000}],
        }
    )
    test_file = tmp_path / "test.yml"
    test_file.write_text(
        yaml.safe_dump(
            {
                "rule_files": [],
                "evaluation_interval": "1m",
                "tests": [
                    {"interval": "1m", "input_series": input_series, "promql_expr_test": cases}
                ],
            },
            allow_unicode=True,
        )
    )
    result = subprocess.run(
        [PROMTOOL, "test", "rules", str(test_file)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_shipped_rule_renders_a_query_prometheus_accepts(tmp_path: Path) -> None:
    """Sample config, chart defaults and the deploy ConfigMap: every rendered query parses."""
    mapper = StaticRESTMapper.from_kinds([*BUILTIN_KINDS, ("cheese.io", "Brand", False)])
    names = ["web-1", 'we"b.2']
    queries: list[str] = []
    sample = load_rules((SHARED_DATA / "sample-config.yaml").read_text(), source="sample")
    chart = load_rules((TEST_DATA / "helm-chart-default-rules.yaml").read_text(), source="chart")
    for config in (sample, chart):
        for namer in namers_from_config(config.rules, mapper):
            # every rule maps pods, except the sample's cheddar rule (brands.cheese.io)
            resource = (
                PODS if namer.resource_for_label("pod") else GroupResource("cheese.io", "brands")
            )
            queries.append(
                namer.query_for_series("some_metric_total", resource, namespace=None, names=names)
            )
    # (the sample's first external rule has no namespace label and cannot render at all)
    external = namers_from_config(sample.external_rules, mapper, kind="externalRules")[1]
    selector = parse_metric_selector("topic in (a.b,c)")
    queries.append(
        external.query_for_external_series("queue_depth", namespace="x", metric_selector=selector)
    )
    config_map = yaml.safe_load((SHARED_DATA / "deploy-config-map.yaml").read_text())
    deploy = load_rules(config_map["data"]["config.yaml"], source="deploy")
    assert deploy.resource_rules is not None
    resources = ResourceQueries.from_config(deploy.resource_rules, mapper)
    for query in (resources.cpu, resources.memory):
        queries.append(query.build_container_query(names, namespace="shop"))
        queries.append(query.build_node_query(names))
    assert len(queries) == 15
    test_file = tmp_path / "parse.yml"
    test_file.write_text(
        yaml.safe_dump(
            {
                "rule_files": [],
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": [{"series": "up", "values": "1"}],
                        "promql_expr_test": [
                            {"expr": query, "eval_time": "0m", "exp_samples": []}
                            for query in queries
                        ],
                    }
                ],
            },
            allow_unicode=True,
        )
    )
    result = subprocess.run(
        [PROMTOOL, "test", "rules", str(test_file)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
