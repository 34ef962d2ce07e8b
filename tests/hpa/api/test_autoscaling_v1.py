"""autoscaling/v1: the upstream v1 HPA fixtures parse through the v1 model; Scale round-trips."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from hpa.api.autoscaling_v1 import HorizontalPodAutoscalerV1, Scale
from hpa.api.base import unknown_fields
from tests.hpa.api.data import K8S_TESTDATA, load_json, load_yaml_documents
from tests.hpa.api.strategies import assert_round_trip, wire_objects


@pytest.mark.parametrize(
    "name",
    ["autoscaling.v1.HorizontalPodAutoscaler.json", "autoscaling.v1.HorizontalPodAutoscaler.yaml"],
)
def test_v1_fixture_round_trips_through_the_v1_model(name: str) -> None:
    path = K8S_TESTDATA / name
    data = load_json(path) if path.suffix == ".json" else load_yaml_documents(path)[0]
    hpa = assert_round_trip(HorizontalPodAutoscalerV1, data)
    assert isinstance(hpa, HorizontalPodAutoscalerV1)
    assert hpa.spec.target_cpu_utilization_percentage == -1300313567
    assert hpa.status.current_cpu_utilization_percentage == 757808475
    assert hpa.metadata.creation_timestamp is None
    assert hpa.to_dict()["metadata"]["creationTimestamp"] is None  # explicit null is kept
    assert hpa.metadata.owner_references[0].uid == "Dz廔ȇ{sŊƏp"
    assert unknown_fields(hpa) == {"metadata.clusterName": "15"}


def test_scale_subresource_reads_replicas_and_selector() -> None:
    scale = Scale.from_json(
        b'{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web",'
        b'"namespace":"default","resourceVersion":"42"},"spec":{"replicas":3},'
        b'"status":{"replicas":2,"selector":"app=web"}}'
    )
    assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (3, 2, "app=web")
    scale.spec.replicas = 5
    assert scale.to_dict()["spec"] == {"replicas": 5}
    assert scale.to_dict()["metadata"]["resourceVersion"] == "42"


@settings(max_examples=300, deadline=None)
@given(wire_objects(Scale))
def test_any_scale_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(Scale, data)


@settings(max_examples=300, deadline=None)
@given(wire_objects(HorizontalPodAutoscalerV1))
def test_any_v1_hpa_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(HorizontalPodAutoscalerV1, data)
