"""adapter.rules.goregex: Go RE2 syntax and semantics on Python's re, and ExpandString."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter.rules import GoRegexError
from adapter.rules.goregex import compile_go_regex


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^container_(.*)_seconds_total$", "container_cpu_usage_seconds_total", True),
        ("^(.*)_total$", "http_requests_total\n", False),  # Go's $ is end of text only
        ("(?m)^(.*)_total$", "a_total\nb", True),
        ("x\\z", "x", True),
        ("x{,3}", "x{,3}", True),  # not a repeat in Go: literal
        ("x{,3}", "xxx", False),
        ("a{2}", "aa", True),
        ("\\101", "A", True),  # octal escape, not a backreference
        ("\\x{1F600}", "😀", True),
        ("[[:alpha:]]+[[:digit:]]", "abc1", True),
        ("\\Qa.b\\E", "a.b", True),
        ("\\Qa.b\\E", "axb", False),
        ("\\d", "٣", False),  # ASCII-only digits, as RE2
        ("\\s", "\v", False),  # RE2's \s is [\t\n\f\r ]
        ("(?i)ABC", "abc", True),
        ("(?P<name>x)(?<other>y)", "xy", True),
        ("a#b c", "a#b c", True),
        ("[a&&b]", "&", True),
    ],
)
def test_re2_semantics(pattern: str, text: str, matches: bool) -> None:
    assert compile_go_regex(pattern).match_string(text) is matches


@pytest.mark.parametrize(
    "pattern",
    [
        "(",
        "a)",
        "*a",
        "a**",
        "a*+",
        "(?=a)",
        "(?!a)",
        "(?<=a)b",
        "(a)\\1",
        "\\e",
        "a{1001}",
        "a{3,2}",
        "\\pL",
        "[[:^alpha:]]",
        "a(?i)b",
        "(?U)a*",
        "[a",
        "\\",
    ],
)
def test_invalid_or_unsupported_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(GoRegexError, match="error parsing regexp"):
        compile_go_regex(pattern)


@pytest.mark.parametrize(
    ("pattern", "template", "name", "expanded"),
    [
        ("^(.*)_total$", "$1", "http_requests_total", "http_requests"),
        ("^(.*)_total$", "${1}_per_second", "http_requests_total", "http_requests_per_second"),
        ("^(.*)_total$", "$1_per_second", "http_requests_total", ""),  # $1_per_second is a name
        ("^(.*)_total$", "$0", "x_total", "x_total"),
        ("^(?P<base>.*)_total$", "${base}/s", "x_total", "x/s"),
        ("^(.*)_total$", "$$1", "x_total", "$1"),
        ("^(.*)_total$", "cost $", "x_total", "cost $"),
        ("^(.*)_total$", "${1", "x_total", "${1"),
        ("^(.*)_total$", "$7", "x_total", ""),
        (".*", "cheesy_goodness", "cheddar", "cheesy_goodness"),
    ],
)
def test_expand_string_like_go(pattern: str, template: str, name: str, expanded: str) -> None:
    assert compile_go_regex(pattern).expand_string(template, name) == expanded


def test_no_match_expands_to_none() -> None:
    assert compile_go_regex("^a$").expand_string("$0", "b") is None


def test_subexp_count() -> None:
    assert compile_go_regex("a").subexp_count == 0
    assert compile_go_regex("(a)(?:b)(?P<c>c)").subexp_count == 2


@settings(max_examples=500, deadline=None)
@given(pattern=st.text(alphabet="ab.*+?()[]{}^$|\\-,:=!<>&~019PQEpzxu ", max_size=14))
def test_any_pattern_compiles_or_is_refused_cleanly(pattern: str) -> None:
    """No crash, no Python warning (warnings are errors here): a GoRegexp or a GoRegexError."""
    try:
        compiled = compile_go_regex(pattern)
    except GoRegexError:
        return
    compiled.match_string("ab.()")


def test_dash_runs_in_classes_keep_go_ranges() -> None:
    assert compile_go_regex("[+--]").match_string(",")
    assert not compile_go_regex("[+--]").match_string("a")
