"""KubeModel: read-then-write loses nothing and adds nothing."""

from __future__ import annotations

from hpa.api.autoscaling_v2 import HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec
from hpa.api.base import from_dict, from_json, to_dict, to_json, unknown_fields
from hpa.api.pod import Pod


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
    written = pod.to_dict()
    assert written["metadata"] == {"name": "p", "labels": {"app": "web"}}
    assert written["status"] == {"conditions": []}


def test_function_forms_match_methods() -> None:
    raw = b'{"spec":{"maxReplicas":1}}'
    hpa = from_json(HorizontalPodAutoscaler, raw)
    assert to_dict(hpa) == {"spec": {"maxReplicas": 1}}
    assert to_json(hpa) == b'{"spec":{"maxReplicas":1}}'
    assert from_dict(HorizontalPodAutoscaler, to_dict(hpa)) == hpa
