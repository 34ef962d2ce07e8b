"""adapter.rules.config: loading prometheus-adapter rule files, strictly and with named errors."""

from __future__ import annotations

import pytest
import yaml

from adapter.rules import RuleConfigError, load_rules, parse_duration_milliseconds
from tests.adapter.default_config import SHARED_DATA, TEST_DATA


def test_sample_config_loads_unchanged_with_a_warning_per_invalid_line() -> None:
    text = (SHARED_DATA / "sample-config.yaml").read_text()
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)  # not YAML: upstream refuses it too (prometheus-adapter#697)
    config = load_rules(text, source="sample-config.yaml")
    assert [rule.series_query for rule in config.rules][3] == 'cheddar{sharp="true"}'
    assert config.rules[0].metrics_query == (
        'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[2m])) by (<<.GroupBy>>)'
    )
    assert [rule.name.effective_as for rule in config.rules] == [
        "$1",
        "$1",
        "$1",
        "cheesy_goodness",
    ]
    assert config.rules[1].series_filters[0].is_not == "^container_.*_seconds_total$"
    assert config.rules[2].resources.template == "<<.Resource>>"
    assert config.rules[3].resources.overrides["brand"].group == "cheese.io"
    assert [rule.namespaced for rule in config.external_rules] == [True, False]
    assert [warning.split(":")[0] for warning in config.warnings] == [
        "line 30",
        "line 42",
        "line 55",
    ]


def test_deploy_config_map_loads_unchanged() -> None:
    config_map = yaml.safe_load((SHARED_DATA / "deploy-config-map.yaml").read_text())
    config = load_rules(config_map["data"]["config.yaml"], source="adapter-config")
    assert config.warnings == ()
    rules = config.resource_rules
    assert rules is not None
    assert rules.window == "5m"
    assert rules.window_milliseconds == 300_000
    assert rules.cpu.container_label == "container"
    assert rules.memory.resources.overrides["node"].resource == "node"
    assert "irate" in rules.cpu.container_query


def test_helm_chart_default_rules_load_unchanged() -> None:
    config = load_rules((TEST_DATA / "helm-chart-default-rules.yaml").read_text(), source="chart")
    assert len(config.rules) == 6
    assert config.rules[3].name.matches == ""
    assert config.rules[3].name.effective_as == "$0"
    assert config.rules[0].metrics_query.endswith("by (<<.GroupBy>>)")  # folded plain scalar


def _rule(body: str) -> str:
    return "rules:\n- seriesQuery: 'http_requests_total{namespace!=\"\"}'\n" + body


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _rule('  metricsQuery: q\n  name: {matches: "(a)(b)"}\n'),
            "t.yaml: rules[0] (seriesQuery 'http_requests_total{namespace!=\"\"}'): name.as: "
            "must specify an 'as' value for name matcher \"(a)(b)\"",
        ),
        (
            _rule('  metricsQuery: q\n  name: {matches: "^(.*_total"}\n'),
            "rules[0] (seriesQuery 'http_requests_total{namespace!=\"\"}'): name.matches: "
            "error parsing regexp: missing closing ): `^(.*_total`",
        ),
        (
            _rule("  metricsQuery: '<<.Seres>>'\n"),
            "metricsQuery: unable to parse metrics query template: template: metrics-query:1: "
            "can't evaluate field Seres",
        ),
        (
            _rule('  metricsQuery: q\n  seriesFilters: [{is: "a"}, {isNot: "(?=x)"}]\n'),
            "seriesFilters[1].isNot: error parsing regexp",
        ),
        (_rule("  metricsQuery: q\n  seriesFilters: [{}]\n"), "seriesFilters[0]: must have either"),
        (
            _rule("  metricsQuery: q\n  resources: {template: 'kube_<<.Group>>'}\n"),
            "resources.template: must include at least `<<.Resource>>`",
        ),
        (
            _rule("  metricsQuery: q\n  resources: {template: '<<.Resource'}\n"),
            "resources.template: unable to parse label template",
        ),
        (
            _rule("  metricsQuery: q\n  resources: {overrides: {kube-pod: {resource: pod}}}\n"),
            "resources.overrides.kube-pod: override label is not a valid Prometheus label name",
        ),
        (
            _rule("  metricsQuery: q\n  labelValueReplacements: []\n"),
            "labelValueReplacements: unknown field",
        ),
        (_rule("  metricsQuery: ''\n"), "metricsQuery: must not be empty"),
        (_rule("  metricsQuery: [a]\n"), "metricsQuery: must be a string"),
        (
            "externalRules:\n- {seriesQuery: up, metricsQuery: q, resources: {namespaced: 'no'}}\n",
            "externalRules[0] (seriesQuery 'up'): resources.namespaced: must be a boolean",
        ),
        (
            "rules:\n- metricsQuery: q\n",
            "rules[0] (seriesQuery ''): seriesQuery: must not be empty",
        ),
        ("resourceRules:\n  window: 5m\n", "resourceRules.cpu: required"),
        (
            "resourceRules:\n  cpu: {containerQuery: a, nodeQuery: b, containerLabel: c}\n"
            "  memory: {containerQuery: a, nodeQuery: b, containerLabel: c}\n  window: 5x\n",
            "resourceRules.window: not a valid duration string",
        ),
        (
            "resourceRules:\n  cpu: {containerQuery: a, nodeQuery: b}\n"
            "  memory: {containerQuery: a, nodeQuery: b, containerLabel: c}\n",
            "resourceRules.cpu: containerLabel: must be a valid Prometheus label name",
        ),
        ("rules: []\nrules: []\n", "line 2: key 'rules' already set in map"),
        ("rules: [\n", "unable to parse metrics discovery config"),
        ("- a\n", "the rule file must be a YAML mapping"),
    ],
)
def test_invalid_files_name_the_rule_and_the_field(text: str, message: str) -> None:
    with pytest.raises(RuleConfigError) as info:
        load_rules(text, source="t.yaml")
    assert message in str(info.value)
    assert str(info.value).startswith("t.yaml: ")


def test_yaml_v2_decoding_rules() -> None:
    """Null is the zero value; string fields take a scalar's text; empty documents are empty."""
    config = load_rules(
        "rules:\n- seriesQuery: 1.50\n  metricsQuery: yes\n  name:\n  seriesFilters:\n", source="t"
    )
    assert config.rules[0].series_query == "1.50"
    assert config.rules[0].metrics_query == "yes"
    assert config.rules[0].name.matches == ""
    assert config.rules[0].series_filters == []
    assert load_rules("", source="empty").rules == []


def test_repair_only_applies_to_files_that_are_not_yaml() -> None:
    """A valid file with an escaped inner quote is read as YAML says, untouched."""
    config = load_rules(_rule('  metricsQuery: "a{b=\\"c\\"}"\n'), source="t")
    assert config.rules[0].metrics_query == 'a{b="c"}'
    assert config.warnings == ()


@pytest.mark.parametrize(
    ("text", "milliseconds"),
    [
        ("0", 0),
        ("5m", 300_000),
        ("1h30m", 5_400_000),
        ("1d", 86_400_000),
        ("250ms", 250),
        ("1y", 31_536_000_000),
    ],
)
def test_prometheus_durations(text: str, milliseconds: int) -> None:
    assert parse_duration_milliseconds(text) == milliseconds


@pytest.mark.parametrize("text", ["", "5", "1m5h", "1.5m", "-1m"])
def test_invalid_durations(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration_milliseconds(text)
