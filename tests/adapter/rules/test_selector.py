"""adapter.rules.selector: the Kubernetes selector grammar and its PromQL matchers."""

from __future__ import annotations

import pytest

from adapter.rules import (
    InvalidLabelNameError,
    InvalidSelectorError,
    MalformedQueryError,
    Operator,
    Requirement,
    UnsupportedOperatorError,
    format_selector,
    parse_selector,
)
from adapter.rules.selector import QueryPart, check_user_label, render_query_part


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", []),
        ("x=a", [Requirement("x", Operator.EQUALS, ("a",))]),
        ("x==a", [Requirement("x", Operator.DOUBLE_EQUALS, ("a",))]),
        ("x!=a", [Requirement("x", Operator.NOT_EQUALS, ("a",))]),
        ("x", [Requirement("x", Operator.EXISTS)]),
        ("!x", [Requirement("x", Operator.DOES_NOT_EXIST)]),
        ("x in (b,a,b)", [Requirement("x", Operator.IN, ("a", "b"))]),  # sorted set
        ("x notin (a)", [Requirement("x", Operator.NOT_IN, ("a",))]),
        ("x in ()", [Requirement("x", Operator.IN, ("",))]),
        ("x in (,a)", [Requirement("x", Operator.IN, ("", "a"))]),
        ("x=", [Requirement("x", Operator.EQUALS, ("",))]),
        ("x>1", [Requirement("x", Operator.GREATER_THAN, ("1",))]),
        ("in in (in)", [Requirement("in", Operator.IN, ("in",))]),
        (
            "z=1, a!=2 ,m in (x,y),!b",  # requirements sorted by key
            [
                Requirement("a", Operator.NOT_EQUALS, ("2",)),
                Requirement("b", Operator.DOES_NOT_EXIST),
                Requirement("m", Operator.IN, ("x", "y")),
                Requirement("z", Operator.EQUALS, ("1",)),
            ],
        ),
        (
            "app.kubernetes.io/name=web",
            [Requirement("app.kubernetes.io/name", Operator.EQUALS, ("web",))],
        ),
    ],
)
def test_parse(selector: str, expected: list[Requirement]) -> None:
    assert list(parse_selector(selector)) == expected


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("x=a,", "found '', expected: identifier after ','"),
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x =! a", "unable to parse requirement: found '!', expected: identifier"),
        ("x=a=b", "found '=', expected: ',' or 'end of string'"),
        ('x="a"', 'values[0][x]: Invalid value: "\\"a\\"": a valid label must be'),
        ("_x=a", ': Invalid value: "_x": name part must consist of alphanumeric'),
        ("x>a", "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("a=b\x00,c", "NUL"),
    ],
)
def test_grammar_errors(selector: str, message: str) -> None:
    with pytest.raises(InvalidSelectorError) as info:
        parse_selector(selector)
    assert message in str(info.value)


def test_format_round_trips() -> None:
    text = "a!=2,!b,m in (x,y),z=1,e,g>3"
    assert format_selector(parse_selector(text)) == "a!=2,!b,e,g>3,m in (x,y),z=1"


@pytest.mark.parametrize(
    ("part", "expression", "values"),
    [
        (QueryPart("a", ("x",), Operator.EQUALS), 'a="x"', "x"),
        (QueryPart("a", ("x",), Operator.NOT_EQUALS), 'a!="x"', "x"),
        (
            QueryPart("a", ("x.y",), Operator.IN),
            'a=~"x\\\\.y"',
            "x\\\\.y",
        ),  # escaped, unlike upstream
        (QueryPart("a", ("x", "y"), Operator.NOT_IN), 'a!~"x|y"', "x|y"),
        (QueryPart("a", (), Operator.EXISTS), 'a!=""', ""),
        (QueryPart("a", (), Operator.DOES_NOT_EXIST), 'a=""', ""),
        (QueryPart("a", ('q"',), Operator.EQUALS), 'a="q\\""', 'q\\"'),
    ],
)
def test_render_query_part(part: QueryPart, expression: str, values: str) -> None:
    assert render_query_part(part) == (expression, values)


def test_render_refusals() -> None:
    with pytest.raises(UnsupportedOperatorError):
        render_query_part(QueryPart("a", ("1",), Operator.GREATER_THAN))
    with pytest.raises(MalformedQueryError, match="requires values"):
        render_query_part(QueryPart("a", (), Operator.IN))
    with pytest.raises(MalformedQueryError, match="does not support values"):
        render_query_part(QueryPart("a", ("x",), Operator.EXISTS))


@pytest.mark.parametrize("key", ["app.kubernetes.io/name", "x-y", "__name__", "__meta_x", ""])
def test_user_label_keys_must_be_plain_prometheus_labels(key: str) -> None:
    with pytest.raises(InvalidLabelNameError):
        check_user_label(key)


# k8s.io/apimachinery/pkg/labels/selector_test.go TestSelectorParse / TestDeterministicParse
@pytest.mark.parametrize(
    "selector",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
)
def test_upstream_good_strings_restring(selector: str) -> None:
    assert format_selector(parse_selector(selector)) == selector.replace(" ", "")


@pytest.mark.parametrize("selector", ["x=a||y=b", "x==a==b", "!x=a", "x<a"])
def test_upstream_bad_strings(selector: str) -> None:
    with pytest.raises(InvalidSelectorError):
        parse_selector(selector)


def test_deterministic_parse() -> None:
    assert format_selector(parse_selector("x=a,a=x")) == format_selector(parse_selector("a=x,x=a"))
