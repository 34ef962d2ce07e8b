"""Wire helpers: Go durations and times, label selectors as metav1.LabelSelector."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from adapter.rules import parse_selector
from adapter.server.wire import format_go_duration, format_time, label_selector


@pytest.mark.parametrize(
    ("milliseconds", "text"),
    [
        (0, "0s"),
        (500, "500ms"),
        (1000, "1s"),
        (1500, "1.5s"),
        (30_000, "30s"),
        (60_000, "1m0s"),
        (90_000, "1m30s"),
        (3_600_000, "1h0m0s"),
        (3_725_250, "1h2m5.25s"),
    ],
)
def test_go_duration_strings(milliseconds: int, text: str) -> None:
    assert format_go_duration(milliseconds) == text


def test_times_are_utc_rfc3339_seconds() -> None:
    moment = datetime(2026, 9, 1, 14, 0, 0, 750_000, tzinfo=timezone(timedelta(hours=2)))
    assert format_time(moment) == "2026-09-01T12:00:00Z"
    assert format_time(datetime(2026, 9, 1, 12, 0, tzinfo=UTC)) == "2026-09-01T12:00:00Z"


def test_label_selector_forms() -> None:
    assert label_selector(None) is None
    assert label_selector(()) is None
    assert label_selector(parse_selector("a=1,!b,c,d notin (x)")) == {
        "matchLabels": {"a": "1"},
        "matchExpressions": [
            {"key": "b", "operator": "DoesNotExist"},
            {"key": "c", "operator": "Exists"},
            {"key": "d", "operator": "NotIn", "values": ["x"]},
        ],
    }
