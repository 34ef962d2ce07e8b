"""KubeModel: read-then-write loses nothing and adds nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from hpa.api.autoscaling_v2 import HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec
from hpa.api.base import from_dict, from_json, to_dict, to_json, unknown_fields
from hpa.api.pod import Container, ContainerStateTerminated, Pod


def test_unknown_fields_survive_at_every_level() -> None:
    data = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "futureTopLevel": {"a": [1, 2]},
        "spec": {
            "maxReplicas": 4,
            "newSpecField": "x",
            "metrics": [{"type": "Pods", "pods": {"metric": {"name": "m", "extra": True}}}],
        },
    }
    hpa = HorizontalPodAutoscaler.from_dict(data)
    assert hpa.to_dict() == data
    assert unknown_fields(hpa) == {
        "futureTopLevel": {"a": [1, 2]},
        "spec.newSpecField": "x",
        "spec.metrics[0].pods.metric.extra": True,
    }


def test_reading_goes_by_wire_name_only() -> None:
    # a snake_case key is not our field: it is an unknown field and is written back verbatim
    hpa = HorizontalPodAutoscaler.from_dict({"spec": {"max_replicas": 9, "maxReplicas": 2}})
    assert hpa.spec.max_replicas == 2
    assert hpa.to_dict() == {"spec": {"max_replicas": 9, "maxReplicas": 2}}


def test_python_code_builds_models_by_attribute_name() -> None:
    spec = HorizontalPodAutoscalerSpec(max_replicas=3, min_replicas=1)
    assert spec.to_dict() == {"maxReplicas": 3, "minReplicas": 1}


def test_in_place_changes_to_defaults_are_written() -> None:
    pod = Pod.from_dict({"metadata": {"name": "p"}})
    pod.metadata.labels["app"] = "web"
    pod.status.conditions = []
    pod.spec.containers.append(Container(name="c"))
    written = pod.to_dict()
    assert written["metadata"] == {"name": "p", "labels": {"app": "web"}}
    assert written["status"] == {"conditions": []}
    assert written["spec"] == {"containers": [{"name": "c"}]}


def test_function_forms_match_methods() -> None:
    raw = b'{"spec":{"maxReplicas":1}}'
    hpa = from_json(HorizontalPodAutoscaler, raw)
    assert to_dict(hpa) == {"spec": {"maxReplicas": 1}}
    assert to_json(hpa) == b'{"spec":{"maxReplicas":1}}'
    assert from_dict(HorizontalPodAutoscaler, to_dict(hpa)) == hpa


def test_assignments_are_validated() -> None:
    terminated = ContainerStateTerminated()
    with pytest.raises(ValidationError):
        terminated.finished_at = datetime(2026, 1, 1)  # noqa: DTZ001 - naive on purpose
    terminated.finished_at = datetime(2026, 1, 1, 0, 0, 0, 700000, tzinfo=UTC)
    assert terminated.to_dict() == {"finishedAt": "2026-01-01T00:00:00Z"}
