"""Go duration strings: the ``PodMetrics.window`` values and the duration flags."""

from __future__ import annotations

import argparse

import pytest

from hpa.core.duration import DurationError, format_duration, parse_duration_seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("30s", 30.0),
        ("1m0s", 60.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("10.044s", 10.044),
        ("1500ms", 1.5),
        ("250us", 0.00025),
        ("2\u00b5s", 0.000002),
        ("-1.5h", -5400.0),
        ("+15s", 15.0),
        (".5s", 0.5),
    ],
)
def test_go_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert parse_duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("15", 'time: missing unit in duration "15"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("s", 'time: invalid duration "s"'),
        ("1m 2s", 'time: unknown unit "m " in duration "1m 2s"'),
    ],
)
def test_bad_durations_fail_with_go_s_message(text: str, message: str) -> None:
    with pytest.raises(DurationError) as raised:
        parse_duration_seconds(text)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("seconds", "text"), [(15.0, "15s"), (300.0, "5m0s"), (3600.0, "1h0m0s"), (90.5, "1m30.5s")]
)
def test_durations_print_like_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration_seconds(text) == seconds


def test_a_duration_error_is_an_argparse_type_error_so_flags_print_go_s_message() -> None:
    with pytest.raises(
        argparse.ArgumentTypeError, match='unknown unit " minutes" in duration "10 minutes"'
    ):
        parse_duration_seconds("10 minutes")
