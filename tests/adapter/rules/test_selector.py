"""adapter.rules.selector: a caller's selector within limits, and its PromQL matchers."""

from __future__ import annotations

import pytest

from adapter.rules import (
    MAX_SELECTOR_BYTES,
    MAX_SET_VALUES,
    InvalidLabelNameError,
    InvalidSelectorError,
    MalformedQueryError,
    Operator,
    SelectorTooLargeError,
    TooManyValuesError,
    UnsupportedOperatorError,
    parse_metric_selector,
)
from adapter.rules.selector import QueryPart, check_user_label, render_query_part


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


def test_a_caller_s_selector_errors_are_bad_queries_with_upstream_s_message() -> None:
    with pytest.raises(InvalidSelectorError, match="expected: identifier after ','"):
        parse_metric_selector("x=a,")


def test_a_caller_s_selector_is_refused_beyond_the_limits() -> None:
    with pytest.raises(SelectorTooLargeError):
        parse_metric_selector("x=" + "a" * MAX_SELECTOR_BYTES)
    values = ",".join(f"v{i}" for i in range(MAX_SET_VALUES + 1))
    with pytest.raises(TooManyValuesError):
        parse_metric_selector(f"x in ({values})")
    assert len(parse_metric_selector("x notin ()")) == 1
