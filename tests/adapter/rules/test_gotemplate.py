"""adapter.rules.gotemplate: the text/template subset with << >> delimiters."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter.rules import RuleEvaluationError, TemplateError
from adapter.rules.config import GROUP_RESOURCE_ARGS, QUERY_TEMPLATE_ARGS
from adapter.rules.gotemplate import StructValue, Value, parse_template


def query_args(
    *,
    series: str = "http_requests_total",
    matchers: str = 'namespace="ns",pod=~"a|b"',
    group_by: tuple[str, ...] = ("pod",),
) -> StructValue:
    values: dict[str, Value] = {"namespace": "ns", "pod": "a|b"}
    group_by_slice: list[Value] = list(group_by)
    return StructValue(
        "naming.queryTemplateArgs",
        (
            ("Series", series),
            ("LabelMatchers", matchers),
            ("LabelValuesByName", values),
            ("GroupBy", ",".join(group_by)),
            ("GroupBySlice", group_by_slice),
        ),
    )


def render(source: str, args: StructValue | None = None) -> str:
    template = parse_template(source, name="metrics-query", root=QUERY_TEMPLATE_ARGS)
    return template.execute(args or query_args())


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
            'sum(rate(http_requests_total{namespace="ns",pod=~"a|b"}[2m])) by (pod)',
        ),
        ("<<.GroupBySlice>>", "[pod]"),
        ("<<.LabelValuesByName>>", "map[namespace:ns pod:a|b]"),
        ('<<index .LabelValuesByName "pod">>', "a|b"),
        ('<<index .LabelValuesByName "missing">>.', "."),  # index of a missing key: ""
        ("<<.LabelValuesByName.missing>>", "<no value>"),  # field of a missing key
        ("<<.LabelValuesByName.pod>>", "a|b"),
        ("a  <<- .Series ->>  b", "ahttp_requests_totalb"),
        ("a <</* comment */>> b", "a  b"),
        ("<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>><<$l>><<end>>", "pod"),
        ("<<range .GroupBySlice>>[<<.>>]<<else>>none<<end>>", "[pod]"),
        ("<<range $k, $v := .LabelValuesByName>><<$k>>=<<$v>>;<<end>>", "namespace=ns;pod=a|b;"),
        ('<<if eq .GroupBy "pod">>pods<<else if .Series>>other<<else>>none<<end>>', "pods"),
        ("<<with .Series>><<.>><<end>>", "http_requests_total"),
        (
            '<<printf "%s{%s}" .Series .LabelMatchers>>',
            'http_requests_total{namespace="ns",pod=~"a|b"}',
        ),
        ("<<len .GroupBySlice>> <<len .Series>>", "1 19"),
        ('<<.Series | printf "%q">>', '"http_requests_total"'),
        ("<<$x := .GroupBy>><<$x>>", "pod"),
        ('<<and .Series "">>|<<or "" .GroupBy>>|<<not .Series>>', "|pod|false"),
        ("<<`raw\\n`>> <<'a'>> <<3>> <<true>>", "raw\\n 97 3 true"),
        ('<<print "a" 1 2 "b">>', "a1 2b"),
        ("<<(index .GroupBySlice 0)>>", "pod"),
        (
            "<<.>>",
            '{http_requests_total namespace="ns",pod=~"a|b" map[namespace:ns pod:a|b] pod [pod]}',
        ),
    ],
)
def test_render(source: str, expected: str) -> None:
    assert render(source) == expected


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("<<.Seres>>", "can't evaluate field Seres in type naming.queryTemplateArgs"),
        ('<<join .GroupBySlice ",">>', 'function "join" not defined'),
        ("<<.Series.Name>>", "can't evaluate field Name in type string"),
        ("<<range .Series>><<end>>", "range can't iterate over string"),
        ("<<range .GroupBySlice>><<.Foo>><<end>>", "can't evaluate field Foo in type string"),
        ("<<if .Series>>x", "unexpected EOF"),
        ("<<end>>", "unexpected {{end}}"),
        ('<<template "x">>', "not supported"),
        ("<<html .Series>>", "not supported"),
        ("<<$y>>", "undefined variable"),
        ("<<.Series", "unclosed action"),
        ('<<"a" | "b">>', "non executable command"),
        ("<<.Series .GroupBy>>", "cannot be invoked"),
        ("<<nil>>", "nil is not a command"),
        ('<<"unterminated>>', "unterminated quoted string"),
        ("<</* open", "unclosed comment"),
    ],
)
def test_load_time_errors(source: str, message: str) -> None:
    with pytest.raises(
        TemplateError, match="template: metrics-query:1: .*" + message.replace("(", ".")
    ):
        parse_template(source, name="metrics-query", root=QUERY_TEMPLATE_ARGS)


def test_execution_errors_are_rule_evaluation_errors() -> None:
    with pytest.raises(RuleEvaluationError, match="index out of range"):
        render("<<index .GroupBySlice 5>>")
    with pytest.raises(RuleEvaluationError, match="not supported"):
        render('<<printf "%5.2f" 1>>')


def test_resource_label_template() -> None:
    template = parse_template(
        "kube_<<.Group>>_<<.Resource>>", name="resource-label", root=GROUP_RESOURCE_ARGS
    )
    args = StructValue("schema.GroupResource", (("Group", "apps"), ("Resource", "deployment")))
    assert template.execute(args) == "kube_apps_deployment"
    with pytest.raises(TemplateError, match="can't evaluate field Series"):
        parse_template("<<.Series>>", name="resource-label", root=GROUP_RESOURCE_ARGS)


@settings(max_examples=500, deadline=None)
@given(source=st.text(alphabet="<>-. $:=|()\"`'/*abdefGilnorsuxy019,", max_size=30))
def test_any_source_parses_or_is_refused_cleanly(source: str) -> None:
    try:
        template = parse_template(source, name="metrics-query", root=QUERY_TEMPLATE_ARGS)
    except TemplateError:
        return
    with contextlib.suppress(RuleEvaluationError):
        template.execute(query_args())
