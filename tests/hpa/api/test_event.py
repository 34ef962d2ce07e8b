"""events.k8s.io/v1 Event."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from hpa.api.event import Event
from tests.hpa.api.strategies import assert_round_trip, wire_objects


def test_rescale_event_round_trips() -> None:
    event = assert_round_trip(
        Event,
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"generateName": "web.", "namespace": "shop"},
            "eventTime": "2026-01-01T00:00:00.000001Z",
            "reportingController": "hpa",
            "reportingInstance": "hpa-0",
            "action": "Rescale",
            "reason": "SuccessfulRescale",
            "regarding": {
                "kind": "HorizontalPodAutoscaler",
                "namespace": "shop",
                "name": "web",
                "apiVersion": "autoscaling/v2",
            },
            "note": "New size: 4; reason: cpu resource utilization (percentage of request) above "
            "target",
            "type": "Normal",
            "deprecatedCount": 1,
            "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
        },
    )
    assert isinstance(event, Event)
    assert event.regarding.kind == "HorizontalPodAutoscaler"


@settings(max_examples=300, deadline=None)
@given(wire_objects(Event))
def test_any_event_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(Event, data)
