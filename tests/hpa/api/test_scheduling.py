"""scheduling.k8s.io/v1 PriorityClass."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from hpa.api.scheduling import PriorityClass
from tests.hpa.api.strategies import assert_round_trip, wire_objects


def test_priority_class_round_trips() -> None:
    pc = assert_round_trip(
        PriorityClass,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000000,
            "globalDefault": False,
            "preemptionPolicy": "Never",
        },
    )
    assert isinstance(pc, PriorityClass)
    assert (pc.value, pc.preemption_policy) == (1000000, "Never")


@settings(max_examples=300, deadline=None)
@given(wire_objects(PriorityClass))
def test_any_priority_class_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(PriorityClass, data)
