"""adapter.rules.promql: Go-compatible quoting, regex escaping and name grammar."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter.rules import InvalidLabelNameError, InvalidValueError
from adapter.rules.promql import (
    alternation,
    go_quote,
    is_valid_label_name,
    is_valid_metric_name,
    label_eq,
    label_matches,
    quote_meta,
)
from tests.adapter.promql_lexer import STRING, literal_alternation, tokenize


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("plain", '"plain"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("line\nbreak\ttab\r", '"line\\nbreak\\ttab\\r"'),
        ("\x00\x07\x1b\x7f", '"\\x00\\a\\x1b\\x7f"'),
        ("é中😀", '"é中😀"'),  # printable Unicode stays literal, as strconv.Quote
        ("\u2028\ufeff\u0085", '"\\u2028\\ufeff\\u0085"'),  # separators and format chars escaped
        ("\U000e0001", '"\\U000e0001"'),
        ("a\ufffdb", '"a\\ufffdb"'),  # escaped (a raw U+FFFD fails Prometheus's lexer)
        ("", '""'),
    ],
)
def test_go_quote_matches_strconv_quote(value: str, quoted: str) -> None:
    assert go_quote(value) == quoted


def test_lone_surrogates_cannot_be_quoted() -> None:
    with pytest.raises(InvalidValueError, match="surrogate"):
        go_quote("a\ud800")


def test_quote_meta_escapes_exactly_go_metacharacters() -> None:
    assert quote_meta("a.b*c+d?e(f)g|h[i]j{k}l^m$n\\o") == (
        "a\\.b\\*c\\+d\\?e\\(f\\)g\\|h\\[i\\]j\\{k\\}l\\^m\\$n\\\\o"
    )
    assert quote_meta("-_/:#\"' ") == "-_/:#\"' "


@settings(max_examples=300)
@given(values=st.lists(st.text(), min_size=1, max_size=4))
def test_alternation_matches_exactly_its_values(values: list[str]) -> None:
    """Prometheus anchors regexes as ^(?:...)$: each value matches, escaped metas stay literal."""
    regex = alternation(values)
    assert literal_alternation(regex) == values
    compiled = re.compile("(?:" + regex + ")", re.DOTALL)
    for value in values:
        assert compiled.fullmatch(value)


@settings(max_examples=300)
@given(value=st.text())
def test_quoted_values_decode_back_to_the_input(value: str) -> None:
    tokens = tokenize(go_quote(value))
    assert len(tokens) == 1
    assert tokens[0].kind == STRING
    assert tokens[0].value == value


def test_label_and_metric_name_grammar() -> None:
    assert is_valid_label_name("kube_pod")
    assert is_valid_label_name("_x")
    assert not is_valid_label_name("kube-pod")
    assert not is_valid_label_name("1a")
    assert not is_valid_label_name("")
    assert is_valid_metric_name("node:cpu:rate5m")
    assert not is_valid_label_name("node:cpu")


def test_matchers_refuse_invalid_label_names() -> None:
    assert label_eq("pod", 'x"') == 'pod="x\\""'
    assert label_matches("pod", "a|b") == 'pod=~"a|b"'
    with pytest.raises(InvalidLabelNameError):
        label_eq('pod="x",evil', "v")
