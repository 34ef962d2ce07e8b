"""autoscaling/v2 HorizontalPodAutoscaler: upstream fixtures and round-trip properties.

The v2 fixtures parse through :class:`HorizontalPodAutoscaler`; so do the v2beta2 ones (same metric
shapes), whose pre-release ``spec.constraints`` block survives as an unknown field.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings

from hpa.api.autoscaling_v2 import HorizontalPodAutoscaler, HorizontalPodAutoscalerList
from hpa.api.base import unknown_fields
from tests.hpa.api.data import K8S_TESTDATA, load_json, load_yaml_documents
from tests.hpa.api.strategies import assert_round_trip, wire_objects


def _fixture(name: str) -> dict[str, Any]:
    path = K8S_TESTDATA / name
    if path.suffix == ".json":
        data: dict[str, Any] = load_json(path)
        return data
    (doc,) = load_yaml_documents(path)
    return dict(doc)


@pytest.mark.parametrize(
    ("name", "unknown"),
    [
        (
            "autoscaling.v2.HorizontalPodAutoscaler.json",
            {"spec.selectionStrategy": "selectionStrategyValue"},
        ),
        (
            "autoscaling.v2.HorizontalPodAutoscaler.yaml",
            {"metadata.clusterName": "clusterNameValue"},
        ),
    ],
)
def test_v2_fixture_round_trips_with_every_field_typed(name: str, unknown: dict[str, Any]) -> None:
    hpa = assert_round_trip(HorizontalPodAutoscaler, _fixture(name))
    assert isinstance(hpa, HorizontalPodAutoscaler)
    assert unknown_fields(hpa) == unknown
    (metric,) = hpa.spec.metrics
    assert metric.container_resource is not None
    assert metric.container_resource.container == "containerValue"
    assert metric.object is not None
    assert metric.object.target.average_utilization == 4
    assert metric.external is not None
    assert metric.external.metric.selector is not None
    assert metric.external.metric.selector.match_expressions[0].values == ["valuesValue"]
    assert hpa.spec.behavior is not None
    assert hpa.spec.behavior.scale_down is not None
    assert hpa.spec.behavior.scale_down.policies[0].period_seconds == 3
    assert hpa.status.conditions[0].last_transition_time == datetime(
        2003, 1, 1, 1, 1, 1, tzinfo=UTC
    )
    assert hpa.status.current_metrics[0].pods is not None
    assert hpa.status.current_metrics[0].pods.current.average_utilization == 3
    assert hpa.metadata.deletion_timestamp == datetime(2009, 1, 1, 1, 1, 1, tzinfo=UTC)


def test_v2_json_fixture_carries_tolerance_and_observed_generation() -> None:
    hpa = HorizontalPodAutoscaler.from_dict(_fixture("autoscaling.v2.HorizontalPodAutoscaler.json"))
    assert hpa.spec.behavior is not None
    assert hpa.spec.behavior.scale_up is not None
    assert hpa.spec.behavior.scale_up.tolerance == "0"
    assert hpa.status.observed_generation == 1


def test_v2_yaml_fixture_predates_tolerance() -> None:
    hpa = HorizontalPodAutoscaler.from_dict(_fixture("autoscaling.v2.HorizontalPodAutoscaler.yaml"))
    assert hpa.spec.behavior is not None
    assert hpa.spec.behavior.scale_up is not None
    assert hpa.spec.behavior.scale_up.tolerance is None
    assert "tolerance" not in hpa.to_dict()["spec"]["behavior"]["scaleUp"]


@pytest.mark.parametrize(
    "name",
    [
        "autoscaling.v2beta2.HorizontalPodAutoscaler.json",
        "autoscaling.v2beta2.HorizontalPodAutoscaler.yaml",
    ],
)
def test_v2beta2_fixture_round_trips_through_the_v2_model(name: str) -> None:
    data = _fixture(name)
    hpa = assert_round_trip(HorizontalPodAutoscaler, data)
    assert isinstance(hpa, HorizontalPodAutoscaler)
    assert hpa.api_version == "autoscaling/v2beta2"
    assert unknown_fields(hpa) == {
        "metadata.clusterName": "15",
        "spec.constraints": data["spec"]["constraints"],
    }
    (metric,) = hpa.spec.metrics
    assert metric.resource is not None
    assert metric.resource.target.average_value == "404"
    assert hpa.status.current_metrics[0].external is not None
    assert hpa.status.current_metrics[0].external.current.value == "386"
    assert hpa.spec.max_replicas == -1971381490  # fuzz values parse; validation is separate


def test_json_and_yaml_twins_hold_the_same_object_except_documented_fields() -> None:
    json_doc = _fixture("autoscaling.v2beta2.HorizontalPodAutoscaler.json")
    yaml_doc = _fixture("autoscaling.v2beta2.HorizontalPodAutoscaler.yaml")
    assert HorizontalPodAutoscaler.from_dict(json_doc) == HorizontalPodAutoscaler.from_dict(
        yaml_doc
    )


def test_written_hpa_does_not_invent_fields() -> None:
    hpa = HorizontalPodAutoscaler.from_dict(
        {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}
    )
    hpa.status.desired_replicas = 2
    assert hpa.to_dict() == {
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
        "status": {"desiredReplicas": 2},
    }


@settings(max_examples=300, deadline=None)
@given(wire_objects(HorizontalPodAutoscaler))
def test_any_hpa_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(HorizontalPodAutoscaler, data)


@settings(max_examples=100, deadline=None)
@given(wire_objects(HorizontalPodAutoscalerList))
def test_any_hpa_list_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(HorizontalPodAutoscalerList, data)
