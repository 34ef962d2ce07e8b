"""Wire helpers: Go durations and times, label selectors as metav1.LabelSelector."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from adapter.providers import CustomMetricValue
from adapter.providers.objects import ObjectReference
from adapter.rules import parse_metric_selector
from adapter.server.wire import (
    custom_item_v1beta2,
    custom_value_list,
    format_go_duration,
    label_selector,
)
from hpa.api.types import format_time


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
    assert label_selector(parse_metric_selector("a=1,!b,c,d notin (x)")) == {
        "matchLabels": {"a": "1"},
        "matchExpressions": [
            {"key": "b", "operator": "DoesNotExist"},
            {"key": "c", "operator": "Exists"},
            {"key": "d", "operator": "NotIn", "values": ["x"]},
        ],
    }


def test_a_value_list_formats_each_item_with_its_own_time_and_selector() -> None:
    """Items of one list share formatted times and selectors only when they are equal."""
    first = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    selector = parse_metric_selector("method=GET")
    values = [
        CustomMetricValue(
            ObjectReference("v1", "Pod", name=name, namespace="ns1"),
            "m",
            value_milli=milli,
            timestamp=first + timedelta(seconds=offset),
            window_seconds=120,
            metric_selector=chosen,
        )
        for name, milli, offset, chosen in [
            ("a", 1500, 0, selector),
            ("b", 2000, 0, selector),
            ("c", 250, 7, None),
        ]
    ]
    body = custom_value_list("v1beta2", values)
    assert body["items"] == [custom_item_v1beta2(value) for value in values]
    assert [item["timestamp"] for item in body["items"]] == [
        "2026-01-02T03:04:05Z",
        "2026-01-02T03:04:05Z",
        "2026-01-02T03:04:12Z",
    ]
    assert [item["metric"]["selector"] for item in body["items"]] == [
        {"matchLabels": {"method": "GET"}},
        {"matchLabels": {"method": "GET"}},
        None,
    ]
    assert [item["value"] for item in body["items"]] == ["1500m", "2", "250m"]


def test_value_lists_keep_each_object_and_window_apart_across_answers() -> None:
    """``describedObject`` bodies are reused per reference across answers: a reference built
    anew (another object, or the same one for another namespace) never gets another's body,
    and a value without a window has no ``windowSeconds``."""
    stamp = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def value(ref: ObjectReference, *, window: int | None = 60) -> CustomMetricValue:
        return CustomMetricValue(ref, "m", value_milli=1, timestamp=stamp, window_seconds=window)

    web = ObjectReference("v1", "Pod", name="web", namespace="a")
    first = custom_value_list("v1beta2", [value(web)])
    again = custom_value_list("v1beta2", [value(web)])
    others = [
        ObjectReference("v1", "Pod", name="web", namespace="b"),
        ObjectReference("apps/v1", "Deployment", name="web", namespace="a"),
        ObjectReference("v1", "Node", name="web"),
    ]
    listed = custom_value_list("v1beta2", [value(ref, window=None) for ref in others])
    assert first == again
    assert first["items"][0]["describedObject"] == {
        "kind": "Pod",
        "namespace": "a",
        "name": "web",
        "apiVersion": "v1",
    }
    assert [item["describedObject"] for item in listed["items"]] == [
        {"kind": "Pod", "namespace": "b", "name": "web", "apiVersion": "v1"},
        {"kind": "Deployment", "namespace": "a", "name": "web", "apiVersion": "apps/v1"},
        {"kind": "Node", "name": "web", "apiVersion": "v1"},
    ]
    assert ["windowSeconds" in item for item in listed["items"]] == [False, False, False]
    assert first["items"][0]["windowSeconds"] == 60
