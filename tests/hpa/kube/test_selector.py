"""Label selector semantics, after apimachinery's labels/selector_test.go and helpers_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from hpa.kube.selector import (
    EVERYTHING,
    NOTHING,
    Operator,
    SelectorError,
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
        "x in ()",
        "x notin ()",
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
