"""adapter.rules.naming: resource labels, series names and the safety rules of rendering."""

# ruff: noqa: E501  (rule files and expected PromQL stay on one line)

from __future__ import annotations

import pytest

from adapter.rules import (
    GroupResource,
    InvalidLabelNameError,
    InvalidValueError,
    NamespaceOverrideError,
    RuleConfigError,
    RuleEvaluationError,
    StaticRESTMapper,
    load_rules,
    namers_from_config,
    parse_metric_selector,
)
from adapter.rules.naming import MetricNamer, Series

PODS = GroupResource("", "pods")


def namer(body: str) -> MetricNamer:
    config = load_rules("rules:\n- seriesQuery: 'x{namespace!=\"\"}'\n" + body, source="t.yaml")
    return namers_from_config(config.rules, StaticRESTMapper.builtin(), source="t.yaml")[0]


TEMPLATED = namer(
    "  resources: {template: 'kube_<<.Group>>_<<.Resource>>', overrides: {ns: {resource: namespaces}}}\n"
    "  name: {matches: '^(.*)_total$', as: '${1}_per_second'}\n"
    "  seriesFilters: [{isNot: '^skip_'}]\n"
    "  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'\n"
)


def test_label_template_and_overrides() -> None:
    assert (
        TEMPLATED.label_for_resource(GroupResource("apps", "deployments")) == "kube_apps_deployment"
    )
    assert TEMPLATED.label_for_resource(GroupResource("networking.k8s.io", "ingresses")) == (
        "kube_networking_k8s_io_ingress"
    )
    assert TEMPLATED.label_for_resource(GroupResource("", "namespaces")) == "ns"
    assert TEMPLATED.resource_for_label("kube_apps_statefulset") == GroupResource(
        "apps", "statefulsets"
    )
    assert TEMPLATED.resource_for_label("ns") == GroupResource("", "namespaces")
    assert TEMPLATED.resource_for_label("kube_nope_widget") is None
    assert TEMPLATED.resource_for_label("pod") is None


def test_resources_for_series() -> None:
    resources, namespaced = TEMPLATED.resources_for_series(
        Series("x_total", {"kube_apps_deployment": "web", "ns": "shop", "kube__nonsense": "a"})
    )
    assert sorted(resources) == [
        GroupResource("", "namespaces"),
        GroupResource("apps", "deployments"),
    ]
    assert namespaced


def test_filters_and_names() -> None:
    found = [Series("http_requests_total"), Series("skip_requests_total"), Series("http_requests")]
    assert TEMPLATED.filter_series(found) == [Series("http_requests_total")]
    assert (
        TEMPLATED.metric_name_for_series(Series("http_requests_total"))
        == "http_requests_per_second"
    )
    with pytest.raises(RuleEvaluationError, match="did not match expected pattern"):
        TEMPLATED.metric_name_for_series(Series("http_requests"))


def test_names_and_selector_values_are_escaped() -> None:
    query = TEMPLATED.query_for_series(
        "http_requests_total",
        GroupResource("apps", "deployments"),
        namespace='sh"op',
        names=["web.1", 'a"}|b'],
        metric_selector=parse_metric_selector("tier in (a.b,c)"),
    )
    assert query == (
        'sum(rate(http_requests_total{tier=~"a\\\\.b|c",ns="sh\\"op",'
        'kube_apps_deployment=~"web\\\\.1|a\\"\\\\}\\\\|b"}[1m])) by (kube_apps_deployment)'
    )


def test_the_namespace_cannot_be_overridden_by_the_selector() -> None:
    with pytest.raises(NamespaceOverrideError, match="'ns'"):
        TEMPLATED.query_for_series(
            "x_total",
            PODS,
            namespace="shop",
            names=["a"],
            metric_selector=parse_metric_selector("ns=kube-system"),
        )


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"namespace": "", "names": ["a"]}, InvalidValueError),
        ({"namespace": "shop", "names": []}, InvalidValueError),
        ({"namespace": "shop", "names": ["\ud800"]}, InvalidValueError),
    ],
)
def test_refused_requests(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        TEMPLATED.query_for_series("x_total", PODS, **kwargs)  # type: ignore[arg-type]


def test_selector_keys_must_be_prometheus_labels() -> None:
    with pytest.raises(InvalidLabelNameError):
        TEMPLATED.query_for_series(
            "x_total",
            PODS,
            namespace="shop",
            names=["a"],
            metric_selector=parse_metric_selector("app.kubernetes.io/name=web"),
        )


def test_a_rule_without_a_namespace_label_cannot_render_namespaced_queries() -> None:
    no_namespace = namer("  resources: {overrides: {pod: {resource: pod}}}\n  metricsQuery: q\n")
    with pytest.raises(RuleEvaluationError, match="no generic resource label form"):
        no_namespace.query_for_series("x", PODS, namespace="shop", names=["a"])
    assert no_namespace.query_for_series("x", PODS, namespace=None, names=["a"]) == "q"


def test_namespaces_are_not_namespaced() -> None:
    ns_rule = namer(
        "  resources: {overrides: {namespace: {resource: namespace}}}\n  metricsQuery: q\n"
    )
    with pytest.raises(InvalidValueError, match="not a namespaced resource"):
        ns_rule.query_for_series("x", GroupResource("", "namespaces"), namespace="a", names=["a"])


def test_unknown_override_resource_is_a_config_error_naming_the_label() -> None:
    with pytest.raises(
        RuleConfigError, match=r"t\.yaml: rules\[0\] .*resources\.overrides\.brand: "
    ):
        namer(
            "  resources: {overrides: {brand: {group: cheese.io, resource: brand}}}\n  metricsQuery: q\n"
        )


def test_external_namespacing() -> None:
    namespaced = namer(
        "  resources: {overrides: {namespace: {resource: namespace}}}\n"
        "  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'\n"
    )
    assert namespaced.query_for_external_series("q", namespace="a") == 'sum(q{namespace="a"})'
    with pytest.raises(InvalidValueError):
        namespaced.query_for_external_series("q", namespace=None)
    free = namer(
        "  resources: {namespaced: false}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'\n"
    )
    selector = parse_metric_selector("namespace=other")
    assert free.query_for_external_series("q", namespace="a", metric_selector=selector) == (
        'sum(q{namespace="other"})'
    )
