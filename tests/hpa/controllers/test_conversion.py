"""Conversions: HPA JSON -> core spec and status, core status -> JSON, pod records -> PodInfo."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hpa.api.autoscaling_v2 import HorizontalPodAutoscaler
from hpa.controllers.conversion import (
    hpa_from_dict,
    metric_selector,
    status_from_model,
    status_to_dict,
)
from hpa.core.conditions import ConditionStatus
from hpa.core.selector import SelectorError
from hpa.core.spec import (
    LabelSelector,
    LabelSelectorRequirement,
    MetricTargetType,
    ScalingPolicySelect,
    ScalingPolicyType,
)

TESTDATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "k8s-testdata"

HPA: dict[str, Any] = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "annotations": {"hpa.dry-run/enabled": "true"},
    },
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 20,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60},
                },
            },
            {
                "type": "ContainerResource",
                "containerResource": {
                    "name": "memory",
                    "container": "app",
                    "target": {"type": "AverageValue", "averageValue": "512Mi"},
                },
            },
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
                    "target": {"type": "AverageValue", "averageValue": "100m"},
                },
            },
            {
                "type": "Object",
                "object": {
                    "describedObject": {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "Ingress",
                        "name": "main",
                    },
                    "metric": {"name": "hits"},
                    "target": {"type": "Value", "value": "10k"},
                },
            },
            {
                "type": "External",
                "external": {
                    "metric": {
                        "name": "lag",
                        "selector": {
                            "matchExpressions": [
                                {"key": "queue", "operator": "In", "values": ["b", "a"]}
                            ]
                        },
                    },
                    "target": {"type": "AverageValue", "averageValue": "30"},
                },
            },
        ],
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 60,
                "selectPolicy": "Min",
                "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}],
                "tolerance": "0.05",
            },
            "scaleUp": {"selectPolicy": "Disabled"},
        },
    },
    "status": {
        "observedGeneration": 2,
        "lastScaleTime": "2026-01-01T00:00:00Z",
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": 75, "averageValue": "750m"},
                },
            },
            {
                "type": "Object",
                "object": {
                    "metric": {"name": "hits"},
                    "describedObject": {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "Ingress",
                        "name": "main",
                    },
                    "current": {"value": "12k"},
                },
            },
            {"type": ""},
        ],
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "ReadyForNewScale",
                "message": "recommended size matches current size",
            }
        ],
    },
}


def test_an_hpa_becomes_the_controller_s_view_with_exact_values() -> None:
    hpa = hpa_from_dict(HPA)
    assert (hpa.key, hpa.uid, hpa.resource_version, hpa.generation) == ("shop/web", "u-1", "42", 3)
    assert hpa.observed_generation == 2
    assert hpa.annotations == {"hpa.dry-run/enabled": "true"}
    spec = hpa.spec
    assert (spec.min_replicas, spec.max_replicas) == (2, 20)
    resource, container, pods, obj, external = spec.metrics
    assert resource.resource is not None
    assert resource.resource.target.average_utilization == 60
    assert container.container_resource is not None
    assert container.container_resource.container == "app"
    assert container.container_resource.target.average_value_milli == 512 * 2**20 * 1000
    assert pods.pods is not None
    assert pods.pods.target.average_value_milli == 100
    assert pods.pods.metric.selector == LabelSelector(match_labels=(("verb", "GET"),))
    assert obj.object is not None
    assert obj.object.target.type is MetricTargetType.VALUE
    assert obj.object.target.value_milli == 10_000_000
    assert obj.object.described_object.api_version == "networking.k8s.io/v1"
    assert external.external is not None
    assert external.external.metric.selector == LabelSelector(
        match_expressions=(LabelSelectorRequirement("queue", "In", ("b", "a")),)
    )
    assert spec.behavior is not None
    down, up = spec.behavior.scale_down, spec.behavior.scale_up
    assert down is not None
    assert up is not None
    assert down.select_policy is ScalingPolicySelect.MIN
    assert down.policies is not None
    assert down.policies[0].type is ScalingPolicyType.PERCENT
    assert down.tolerance == 0.05
    assert up.select_policy is ScalingPolicySelect.DISABLED
    assert up.policies is None, "unset policies stay unset (defaulted later)"


def test_status_reads_and_writes_back_the_same_values() -> None:
    hpa = hpa_from_dict(HPA)
    status = hpa.status
    assert (status.current_replicas, status.desired_replicas) == (3, 4)
    assert status.last_scale_time == datetime(2026, 1, 1, tzinfo=UTC)
    assert status.current_metrics is not None
    assert status.current_metrics[0].current.average_value_milli == 750
    assert status.current_metrics[2].type == "", "a failed metric's zero value"
    assert status.conditions[0].status is ConditionStatus.TRUE

    written = status_to_dict(status, observed_generation=2)
    again = status_from_model(HorizontalPodAutoscaler.from_dict({"status": written}).status)
    assert again == status
    assert written["currentMetrics"][1]["object"]["current"] == {"value": "12k"}
    assert written["observedGeneration"] == 2
    assert written["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_upstream_serialization_fixture_status_converts() -> None:
    data = json.loads((TESTDATA / "autoscaling.v2.HorizontalPodAutoscaler.json").read_text())
    model = HorizontalPodAutoscaler.from_dict(data)
    status = status_from_model(model.status)
    assert (status.current_replicas, status.desired_replicas) == (3, 4)
    assert status.conditions[0].status is ConditionStatus.UNKNOWN, "statusValue is not a status"
    with pytest.raises(ValueError, match="is not a valid Scaling"):
        hpa_from_dict(data)  # API validation would have rejected this spec


def test_an_unknown_target_type_is_read_from_the_fields_set() -> None:
    data = json.loads(json.dumps(HPA))
    data["spec"]["metrics"][3]["object"]["target"]["type"] = "value"
    hpa = hpa_from_dict(data)
    assert hpa.spec.metrics[3].object is not None
    assert hpa.spec.metrics[3].object.target.type is MetricTargetType.VALUE


def test_metric_selectors_render_in_upstream_string_form() -> None:
    selector = LabelSelector(
        match_labels=(("verb", "GET"),),
        match_expressions=(LabelSelectorRequirement("queue", "In", ("b", "a")),),
    )
    assert metric_selector(selector).to_string() == "queue in (a,b),verb=GET"
    assert metric_selector(None).to_string() == ""
    with pytest.raises(SelectorError):
        metric_selector(
            LabelSelector(match_expressions=(LabelSelectorRequirement("q", "Near", ("a",)),))
        )
