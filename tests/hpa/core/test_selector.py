"""Label selector semantics, after apimachinery's labels/selector_test.go and helpers_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from hpa.core.selector import (
    EVERYTHING,
    NOTHING,
    Operator,
    Requirement,
    SelectorError,
    format_selector,
    parse_selector,
    selector_from_label_selector,
    selector_from_labels,
)

LABELS = {"app": "web", "tier": "frontend", "track": "stable", "replicas": "3"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),  # != matches objects without the key
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("missing notin (db)", True),
        ("app notin (web)", False),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=frontend", True),
        ("app=web,tier=backend", False),
        ("  app = web ,  track in ( stable , canary )  ", True),
        ("replicas>2", True),
        ("replicas>3", False),
        ("replicas<4", True),
        ("app>1", False),  # a non-integer label never satisfies gt/lt
        ("missing<10", False),
        ("tier=", False),  # an empty value
        ("x in (a,)", False),
        ("x in ()", False),  # the empty set holds the empty value, as upstream
        ("x notin ()", True),
        ("app notin ()", True),
        ("app in ()", False),
    ],
)
def test_string_selectors_match_like_upstream(text: str, matches: bool) -> None:
    assert parse_selector(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    "text",
    [
        "x=a,",
        ",x=a",
        "x in",
        "x in (a",
        "!x=a",
        "x=a b",
        "x>a",
        "x y",
        "-x=a",
        "x=a&b",
        "a/b/c=d",
        "x in (a b)",
        "=a",
        "x=" + "v" * 64,
    ],
)
def test_malformed_selectors_are_rejected(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(text)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("b=2,a=1", "a=1,b=2"),
        ("x in (c,a,b)", "x in (a,b,c)"),
        ("!b,a", "a,!b"),
        ("example.com/app==web", "example.com/app==web"),
        ("x notin (b,a)", "x notin (a,b)"),
        ("n>5,m<3", "m<3,n>5"),
    ],
)
def test_string_form_round_trips_sorted(text: str, canonical: str) -> None:
    selector = parse_selector(text)
    assert selector.to_string() == canonical
    assert parse_selector(canonical) == selector


@pytest.mark.parametrize(
    ("label_selector", "matches"),
    [
        ({}, True),  # empty selects everything
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "db"}}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["frontend"]}]}, True),
        (
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["frontend"]}]},
            False,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}],
            },
            True,
        ),
    ],
)
def test_label_selector_objects(label_selector: dict[str, Any], matches: bool) -> None:
    assert selector_from_label_selector(label_selector).matches(LABELS) is matches


def test_a_nil_label_selector_matches_nothing_and_an_empty_one_everything() -> None:
    assert selector_from_label_selector(None) is NOTHING
    assert not NOTHING.matches({})
    assert selector_from_label_selector({"matchLabels": {}}) == EVERYTHING
    assert EVERYTHING.matches({})
    assert EVERYTHING.is_empty


@pytest.mark.parametrize(
    "label_selector",
    [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchLabels": {"bad key": "x"}},
    ],
)
def test_invalid_label_selectors_are_rejected(label_selector: dict[str, Any]) -> None:
    with pytest.raises(SelectorError):
        selector_from_label_selector(label_selector)


def test_equality_terms_feed_the_label_index() -> None:
    selector = parse_selector("app=web,tier in (frontend),track in (a,b),x!=y")
    assert selector.equality_terms() == {"app": "web", "tier": "frontend"}
    assert selector_from_labels({"a": "1"}).requirements[0].operator is Operator.EQUALS


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
    assert list(parse_selector(selector).requirements) == expected


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
    with pytest.raises(SelectorError) as info:
        parse_selector(selector)
    assert message in str(info.value)


def test_format_round_trips() -> None:
    text = "a!=2,!b,m in (x,y),z=1,e,g>3"
    assert parse_selector(text).to_string() == "a!=2,!b,e,g>3,m in (x,y),z=1"


# k8s.io/apimachinery/pkg/labels/selector_test.go TestSelectorParse / TestDeterministicParse
@pytest.mark.parametrize(
    "selector",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
)
def test_upstream_good_strings_restring(selector: str) -> None:
    assert parse_selector(selector).to_string() == selector.replace(" ", "")


@pytest.mark.parametrize("selector", ["x=a||y=b", "x==a==b", "!x=a", "x<a"])
def test_upstream_bad_strings(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(selector)


def test_deterministic_parse() -> None:
    assert parse_selector("x=a,a=x").to_string() == parse_selector("a=x,x=a").to_string()


def test_format_selector_is_the_string_form_of_requirements() -> None:
    requirements = parse_selector("b in (y,x),a").requirements
    assert format_selector(requirements) == "a,b in (x,y)"
