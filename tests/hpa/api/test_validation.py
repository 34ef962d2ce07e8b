"""API-server-like validation: upstream's HPA and VPA test tables, ported case by case.

HPA cases come from kubernetes/kubernetes ``pkg/apis/autoscaling/validation/validation_test.go``
(``TestValidateBehavior``, ``TestValidateHorizontalPodAutoscaler``, the scale-to-zero and
configurable-tolerance tests). VPA cases come from kubernetes/autoscaler
``vertical-pod-autoscaler/pkg/admission-controller/resource/vpa/validation_test.go``
(``TestValidateVPA``, ``TestVeryInvalidateVPA``) plus the VPA CRD's schema constraints. Each
invalid case names the exact error (path, type and upstream wording) it must produce.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpa.api.autoscaling_v1 import Scale
from hpa.api.autoscaling_v2 import HorizontalPodAutoscaler
from hpa.api.validation import (
    ErrorType,
    FieldError,
    HorizontalValidationOptions,
    VerticalValidationOptions,
    VpaFeatureGates,
    format_go_float,
    invalid_status,
    validate_horizontal_pod_autoscaler,
    validate_horizontal_pod_autoscaler_status_update,
    validate_horizontal_pod_autoscaler_update,
    validate_scale,
    validate_vertical_pod_autoscaler,
    validate_vertical_pod_autoscaler_schema,
    vertical_validation_options,
    warn_vertical_pod_autoscaler,
)
from hpa.api.vpa import VerticalPodAutoscaler

# ------------------------------------------------------------------------------------------ HPA

CPU_70 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
}
RC = {"kind": "ReplicationController", "name": "myrc"}
LABEL = {"matchLabels": {"label": "value"}}
POLICIES = [
    {"type": "Percent", "value": 10, "periodSeconds": 1},
    {"type": "Pods", "value": 1, "periodSeconds": 1800},
]


def _hpa(spec: dict[str, Any] | None = None, **overrides: Any) -> HorizontalPodAutoscaler:
    base: dict[str, Any] = {
        "scaleTargetRef": RC,
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [CPU_70],
    }
    base.update(spec or {})
    base.update(overrides)
    return HorizontalPodAutoscaler.from_dict(
        {"metadata": {"name": "myautoscaler", "namespace": "default"}, "spec": base}
    )


def _metric(source: str, body: dict[str, Any]) -> dict[str, Any]:
    key = source[0].lower() + source[1:]
    return {"type": source, key: body}


def _resource(target: dict[str, Any], name: str = "cpu") -> dict[str, Any]:
    body: dict[str, Any] = {"target": target}
    if name:
        body["name"] = name
    return _metric("Resource", body)


def _container(
    target: dict[str, Any], name: str = "cpu", container: str = "test-application"
) -> dict[str, Any]:
    body: dict[str, Any] = {"target": target}
    if name:
        body["name"] = name
    if container:
        body["container"] = container
    return _metric("ContainerResource", body)


def _external(target: dict[str, Any], name: str = "somemetric") -> dict[str, Any]:
    metric: dict[str, Any] = {"selector": LABEL}
    if name:
        metric["name"] = name
    return _metric("External", {"metric": metric, "target": target})


def _object(
    target: dict[str, Any], described: dict[str, Any] = RC, name: str = "somemetric"
) -> dict[str, Any]:
    metric = {"name": name} if name else {}
    return _metric("Object", {"describedObject": described, "metric": metric, "target": target})


def _pods(target: dict[str, Any], name: str = "somemetric") -> dict[str, Any]:
    metric = {"name": name} if name else {}
    return _metric("Pods", {"metric": metric, "target": target})


UTIL_70 = {"type": "Utilization", "averageUtilization": 70}
AVG_300M = {"type": "AverageValue", "averageValue": "300m"}
VALUE_300M = {"type": "Value", "value": "300m"}
SOURCES = "must populate information for the given metric source"

HPA_INVALID: list[tuple[str, HorizontalPodAutoscaler, str]] = [
    (
        "scaleTargetRef kind missing",
        _hpa(scaleTargetRef={"name": "myrc"}),
        "spec.scaleTargetRef.kind: Required value",
    ),
    (
        "scaleTargetRef kind missing, container metric",
        _hpa(scaleTargetRef={"name": "myrc"}, metrics=[_container(UTIL_70)]),
        "spec.scaleTargetRef.kind: Required value",
    ),
    (
        "scaleTargetRef kind ..",
        _hpa(scaleTargetRef={"kind": "..", "name": "myrc"}),
        "spec.scaleTargetRef.kind: Invalid value: \"..\": may not be '..'",
    ),
    (
        "scaleTargetRef name missing",
        _hpa(scaleTargetRef={"kind": "ReplicationController"}),
        "spec.scaleTargetRef.name: Required value",
    ),
    (
        "scaleTargetRef name ..",
        _hpa(scaleTargetRef={"kind": "ReplicationController", "name": ".."}),
        "spec.scaleTargetRef.name: Invalid value: \"..\": may not be '..'",
    ),
    (
        "scaleTargetRef name with /",
        _hpa(scaleTargetRef={"kind": "Deployment", "name": "a/b%"}),
        "spec.scaleTargetRef.name: Invalid value: \"a/b%\": may not contain '/'",
    ),
    (
        "minReplicas negative",
        _hpa(minReplicas=-1, maxReplicas=5, metrics=[]),
        "spec.minReplicas: Invalid value: -1: must be greater than or equal to 0",
    ),
    (
        "minReplicas above maxReplicas",
        _hpa(minReplicas=7, maxReplicas=5),
        "spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`",
    ),
    (
        "maxReplicas zero",
        _hpa(minReplicas=None, maxReplicas=0),
        "spec.maxReplicas: Invalid value: 0: must be greater than 0",
    ),
    (
        "resource: utilization and value",
        _hpa(
            metrics=[
                _resource({"type": "Utilization", "averageUtilization": 70, "averageValue": "300m"})
            ]
        ),
        "spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw "
        "value and a target utilization",
    ),
    (
        "containerResource: utilization and value",
        _hpa(
            metrics=[
                _container(
                    {"type": "Utilization", "averageUtilization": 70, "averageValue": "300m"}
                )
            ]
        ),
        "spec.metrics[0].containerResource.target.averageValue: Forbidden: may not set both a "
        "target raw value and a target utilization",
    ),
    (
        "resource: no name",
        _hpa(metrics=[_resource(UTIL_70, name="")]),
        "spec.metrics[0].resource.name: Required value: must specify a resource name",
    ),
    (
        "containerResource: no name",
        _hpa(metrics=[_container(UTIL_70, name="")]),
        "spec.metrics[0].containerResource.name: Required value: must specify a resource name",
    ),
    (
        "containerResource: non-standard name",
        _hpa(metrics=[_container(UTIL_70, name="InvalidResource")]),
        "spec.metrics[0].containerResource.name: Invalid value: InvalidResource: must be a "
        "standard resource type or fully qualified",
    ),
    (
        "resource: utilization -10",
        _hpa(metrics=[_resource({"type": "Utilization", "averageUtilization": -10})]),
        "spec.metrics[0].resource.target.averageUtilization: Invalid value: -10: must be greater "
        "than 0",
    ),
    (
        "containerResource: utilization -10",
        _hpa(metrics=[_container({"type": "Utilization", "averageUtilization": -10})]),
        "spec.metrics[0].containerResource.target.averageUtilization: Invalid value: -10: must "
        "be greater than 0",
    ),
    (
        "containerResource: no container",
        _hpa(metrics=[_container(UTIL_70, container="")]),
        "spec.metrics[0].containerResource.container: Required value: must specify a container",
    ),
    (
        "containerResource: bad container name",
        _hpa(metrics=[_container(UTIL_70, container="---***")]),
        'spec.metrics[0].containerResource.container: Invalid value: "---***": a lowercase RFC '
        "1123 label must consist of lower case alphanumeric characters or '-', and must start "
        "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ),
    (
        "resource: Value target (not allowed for Resource)",
        _hpa(metrics=[_resource({"type": "Value", "value": "1"})]),
        "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a "
        "target raw value or a target utilization",
    ),
    (
        "containerResource: no target value",
        _hpa(metrics=[_container({"type": "Value"})]),
        "spec.metrics[0].containerResource.target.averageUtilization: Required value: must set "
        "either a target raw value or a target utilization",
    ),
    (
        "pods: no metric name",
        _hpa(metrics=[_pods({"type": "Value", "averageValue": "100m"}, name="")]),
        "spec.metrics[0].pods.metric.name: Required value: must specify a metric name",
    ),
    (
        "pods: Value target (not allowed for Pods)",
        _hpa(metrics=[_pods({"type": "Value", "value": "1"})]),
        "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive "
        "target averageValue",
    ),
    (
        "pods: Utilization target (not allowed for Pods)",
        _hpa(metrics=[_pods(UTIL_70)]),
        "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive "
        "target averageValue",
    ),
    (
        "object: no value",
        _hpa(metrics=[_object({"type": "Value"})]),
        "spec.metrics[0].object.target.averageValue: Required value: must set either a target "
        "value or averageValue",
    ),
    (
        "object: Utilization target (not allowed for Object)",
        _hpa(metrics=[_object(UTIL_70)]),
        "spec.metrics[0].object.target.averageValue: Required value: must set either a target "
        "value or averageValue",
    ),
    (
        "object: describedObject kind missing",
        _hpa(metrics=[_object({"type": "Value", "value": "100m"}, described={"name": "myrc"})]),
        "spec.metrics[0].object.describedObject.kind: Required value",
    ),
    (
        "object: no metric name",
        _hpa(metrics=[_object({"type": "Value", "value": "100m"}, name="")]),
        "spec.metrics[0].object.metric.name: Required value: must specify a metric name",
    ),
    (
        "external: no metric name",
        _hpa(metrics=[_external(VALUE_300M, name="")]),
        "spec.metrics[0].external.metric.name: Required value: must specify a metric name",
    ),
    (
        "external: metric name with /",
        _hpa(metrics=[_external(VALUE_300M, name="foo/../")]),
        "spec.metrics[0].external.metric.name: Invalid value: \"foo/../\": may not contain '/'",
    ),
    (
        "external: no value",
        _hpa(metrics=[_external({"type": "Value"})]),
        "spec.metrics[0].external.target.averageValue: Required value: must set either a target "
        "value for metric or a per-pod target",
    ),
    (
        "external: negative value",
        _hpa(metrics=[_external({"type": "Value", "value": "-300m"})]),
        'spec.metrics[0].external.target.value: Invalid value: "-300m": must be positive',
    ),
    (
        "external: negative averageValue",
        _hpa(metrics=[_external({"type": "Value", "averageValue": "-300m"})]),
        'spec.metrics[0].external.target.averageValue: Invalid value: "-300m": must be positive',
    ),
    (
        "external: value and averageValue",
        _hpa(metrics=[_external({"type": "Value", "value": "300m", "averageValue": "300m"})]),
        "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for "
        "metric and a per-pod target",
    ),
    (
        "external: Utilization target (not allowed for External)",
        _hpa(metrics=[_external(UTIL_70)]),
        "spec.metrics[0].external.target.averageValue: Required value: must set either a target "
        "value for metric or a per-pod target",
    ),
    (
        "external: unknown target type",
        _hpa(metrics=[_external({"type": "boogity", "value": "300m"})]),
        'spec.metrics[0].external.target.type: Invalid value: "boogity": must be either '
        "Utilization, Value, or AverageValue",
    ),
    (
        "external: no target type",
        _hpa(metrics=[_external({"value": "300m"})]),
        "spec.metrics[0].external.target.type: Required value: must specify a metric target type",
    ),
    (
        "external: no target",
        _hpa(
            metrics=[
                {
                    "type": "External",
                    "external": {"metric": {"name": "somemetric", "selector": LABEL}},
                }
            ]
        ),
        "spec.metrics[0].external.target.type: Required value: must specify a metric target type",
    ),
    (
        "metric: empty",
        _hpa(metrics=[{}]),
        "spec.metrics[0].type: Required value: must specify a metric source type",
    ),
    (
        "metric: unknown source type",
        _hpa(metrics=[{"type": "InvalidType"}]),
        'spec.metrics[0].type: Unsupported value: "InvalidType": supported values: '
        '"ContainerResource", "External", "Object", "Pods", "Resource"',
    ),
    (
        "metric: two sources",
        _hpa(metrics=[{**_resource(AVG_300M), "pods": _pods(AVG_300M)["pods"]}]),
        "spec.metrics[0].pods: Forbidden: must populate the given metric source only",
    ),
    (
        "metric: type without its source",
        _hpa(metrics=[{"type": "Pods", "resource": _resource(AVG_300M)["resource"]}]),
        f"spec.metrics[0].pods: Required value: {SOURCES}",
    ),
    (
        "scale to zero without Object or External metric",
        _hpa(minReplicas=0),
        "spec.metrics: Forbidden: must specify at least one Object or External metric to support "
        "scaling to zero replicas",
    ),
    (
        "scaleUp: no policies",
        _hpa(behavior={"scaleUp": {"selectPolicy": "Min"}}),
        "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
    ),
    (
        "scaleUp: empty policy list",
        _hpa(behavior={"scaleUp": {"policies": []}}),
        "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
    ),
    (
        "scaleUp: window 3601",
        _hpa(
            behavior={
                "scaleUp": {
                    "stabilizationWindowSeconds": 3601,
                    "selectPolicy": "Min",
                    "policies": POLICIES,
                }
            }
        ),
        "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 3601: must be less "
        "than or equal to 3600",
    ),
    (
        "scaleUp: window -1",
        _hpa(behavior={"scaleUp": {"stabilizationWindowSeconds": -1, "policies": POLICIES}}),
        "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: -1: must be greater "
        "than or equal to zero",
    ),
    (
        "scaleUp: period 1801",
        _hpa(
            behavior={
                "scaleUp": {"policies": [{"type": "Pods", "value": 7, "periodSeconds": 1801}]}
            }
        ),
        "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than "
        "or equal to 1800",
    ),
    (
        "scaleUp: bad selectPolicy",
        _hpa(
            behavior={
                "scaleUp": {
                    "selectPolicy": "incorrect",
                    "policies": [{"type": "Pods", "value": 7, "periodSeconds": 8}],
                }
            }
        ),
        'spec.behavior.scaleUp.selectPolicy: Unsupported value: "incorrect": supported values: '
        '"Disabled", "Max", "Min"',
    ),
    (
        "scaleUp: bad policy type",
        _hpa(behavior={"scaleUp": {"policies": [{"type": "hm", "value": 7, "periodSeconds": 8}]}}),
        'spec.behavior.scaleUp.policies[0].type: Unsupported value: "hm": supported values: '
        '"Percent", "Pods"',
    ),
    (
        "scaleUp: period 0",
        _hpa(behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 8}]}}),
        "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 0: must be greater than "
        "zero",
    ),
    (
        "scaleUp: value 0",
        _hpa(behavior={"scaleUp": {"policies": [{"type": "Pods", "periodSeconds": 8}]}}),
        "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
    ),
    (
        "scaleUp: period -1",
        _hpa(
            behavior={"scaleUp": {"policies": [{"type": "Pods", "periodSeconds": -1, "value": 1}]}}
        ),
        "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: -1: must be greater "
        "than zero",
    ),
    (
        "scaleUp: value -1",
        _hpa(
            behavior={"scaleUp": {"policies": [{"type": "Pods", "periodSeconds": 1, "value": -1}]}}
        ),
        "spec.behavior.scaleUp.policies[0].value: Invalid value: -1: must be greater than zero",
    ),
    (
        "scaleDown: no policies",
        _hpa(behavior={"scaleDown": {"selectPolicy": "Min"}}),
        "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
    ),
    (
        "scaleDown: window 3601",
        _hpa(
            behavior={
                "scaleDown": {
                    "stabilizationWindowSeconds": 3601,
                    "selectPolicy": "Min",
                    "policies": POLICIES,
                }
            }
        ),
        "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: must be less "
        "than or equal to 3600",
    ),
    (
        "scaleDown: period 1801",
        _hpa(
            behavior={
                "scaleDown": {"policies": [{"type": "Percent", "value": 7, "periodSeconds": 1801}]}
            }
        ),
        "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less "
        "than or equal to 1800",
    ),
    (
        "scaleDown: bad selectPolicy",
        _hpa(
            behavior={
                "scaleDown": {
                    "selectPolicy": "incorrect",
                    "policies": [{"type": "Pods", "value": 7, "periodSeconds": 8}],
                }
            }
        ),
        'spec.behavior.scaleDown.selectPolicy: Unsupported value: "incorrect": supported values: '
        '"Disabled", "Max", "Min"',
    ),
    (
        "scaleDown: bad policy type",
        _hpa(
            behavior={"scaleDown": {"policies": [{"type": "hm", "value": 7, "periodSeconds": 8}]}}
        ),
        'spec.behavior.scaleDown.policies[0].type: Unsupported value: "hm": supported values: '
        '"Percent", "Pods"',
    ),
    (
        "scaleDown: period 0",
        _hpa(behavior={"scaleDown": {"policies": [{"type": "Pods", "value": 8}]}}),
        "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 0: must be greater "
        "than zero",
    ),
    (
        "scaleDown: value 0",
        _hpa(behavior={"scaleDown": {"policies": [{"type": "Pods", "periodSeconds": 8}]}}),
        "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
    ),
    (
        "scaleDown: period -1",
        _hpa(
            behavior={
                "scaleDown": {"policies": [{"type": "Pods", "periodSeconds": -1, "value": 1}]}
            }
        ),
        "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: -1: must be greater "
        "than zero",
    ),
    (
        "scaleDown: value -1",
        _hpa(
            behavior={
                "scaleDown": {"policies": [{"type": "Pods", "periodSeconds": 1, "value": -1}]}
            }
        ),
        "spec.behavior.scaleDown.policies[0].value: Invalid value: -1: must be greater than zero",
    ),
    (
        "scaleUp: tolerance -0.001",
        _hpa(behavior={"scaleUp": {"policies": POLICIES[1:], "tolerance": "-0.001"}}),
        'spec.behavior.scaleUp.tolerance: Invalid value: "-0.001": must be greater or equal to '
        "zero",
    ),
    (
        "scaleUp: tolerance -10m",
        _hpa(behavior={"scaleUp": {"policies": POLICIES[1:], "tolerance": "-10m"}}),
        'spec.behavior.scaleUp.tolerance: Invalid value: "-10m": must be greater or equal to zero',
    ),
    (
        "scaleUp: tolerance without policies",
        _hpa(behavior={"scaleUp": {"tolerance": "1m", "stabilizationWindowSeconds": 60}}),
        "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
    ),
    (
        "metadata: no name",
        HorizontalPodAutoscaler.from_dict(
            {"metadata": {"namespace": "default"}, "spec": {"scaleTargetRef": RC, "maxReplicas": 1}}
        ),
        "metadata.name: Required value: name or generateName is required",
    ),
    (
        "metadata: no namespace",
        HorizontalPodAutoscaler.from_dict(
            {"metadata": {"name": "a"}, "spec": {"scaleTargetRef": RC, "maxReplicas": 1}}
        ),
        "metadata.namespace: Required value",
    ),
]


@pytest.mark.parametrize(("case", "hpa", "expected"), HPA_INVALID, ids=[c[0] for c in HPA_INVALID])
def test_invalid_hpa_is_rejected_with_upstreams_error(
    case: str, hpa: HorizontalPodAutoscaler, expected: str
) -> None:
    errors = validate_horizontal_pod_autoscaler(hpa)
    assert errors, case
    assert str(errors[0]) == expected


HPA_VALID = [
    _hpa(),
    _hpa(metrics=[]),
    _hpa(metrics=[_resource(AVG_300M)]),
    _hpa(metrics=[_pods(AVG_300M)]),
    _hpa(metrics=[_container(UTIL_70, container="test-container")]),
    _hpa(metrics=[_container(AVG_300M, container="test-container")]),
    _hpa(metrics=[_object(VALUE_300M)]),
    _hpa(metrics=[_external(VALUE_300M)]),
    _hpa(metrics=[_external(AVG_300M)]),
    _hpa(behavior={}),
    _hpa(
        behavior={
            "scaleUp": {
                "stabilizationWindowSeconds": 3600,
                "selectPolicy": "Min",
                "policies": POLICIES,
            },
            "scaleDown": {
                "stabilizationWindowSeconds": 0,
                "selectPolicy": "Disabled",
                "policies": POLICIES,
            },
        }
    ),
    *[
        _hpa(behavior={"scaleDown": {"policies": POLICIES[1:], "tolerance": t}})
        for t in ("0.1", "10", "0", "100m", "1m")
    ],
    _hpa(minReplicas=0, metrics=[_object(VALUE_300M)]),
    _hpa(minReplicas=0, metrics=[_external(AVG_300M)]),
    _hpa(minReplicas=0, metrics=[CPU_70, _external(AVG_300M)]),
]


@pytest.mark.parametrize("hpa", HPA_VALID)
def test_valid_hpa_is_accepted(hpa: HorizontalPodAutoscaler) -> None:
    assert validate_horizontal_pod_autoscaler(hpa) == []


SOURCE_SPECS = {
    "Resource": _resource(AVG_300M),
    "ContainerResource": _container(AVG_300M),
    "Pods": _pods(AVG_300M),
    "Object": _object(VALUE_300M),
}


@pytest.mark.parametrize(
    ("declared", "given"),
    [(d, g) for d in SOURCE_SPECS for g in SOURCE_SPECS if d != g],
)
def test_metric_type_must_match_its_source(declared: str, given: str) -> None:
    metric = {**copy.deepcopy(SOURCE_SPECS[given]), "type": declared}
    errors = validate_horizontal_pod_autoscaler(_hpa(metrics=[metric]))
    assert SOURCES in errors[0].detail
    assert errors[0].type is ErrorType.REQUIRED


def test_min_replicas_zero_needs_the_scale_to_zero_allowance() -> None:
    gate_off = HorizontalValidationOptions(scale_to_zero=False)
    for metric in (_object(VALUE_300M), _external(AVG_300M)):
        zero, one = _hpa(minReplicas=0, metrics=[metric]), _hpa(minReplicas=1, metrics=[metric])
        errors = validate_horizontal_pod_autoscaler(zero, options=gate_off)
        assert (
            str(errors[0])
            == "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"
        )
        assert validate_horizontal_pod_autoscaler(one, options=gate_off) == []
        # an update keeps an existing zero allowed even with the gate off
        assert validate_horizontal_pod_autoscaler_update(zero, zero, options=gate_off) == []
        assert validate_horizontal_pod_autoscaler_update(one, zero, options=gate_off) == []
        assert str(validate_horizontal_pod_autoscaler_update(zero, one, options=gate_off)[0]) == (
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"
        )


def test_negative_tolerance_is_the_only_error() -> None:
    errors = validate_horizontal_pod_autoscaler(
        _hpa(behavior={"scaleUp": {"policies": POLICIES, "tolerance": "-0.001"}})
    )
    assert [e.path for e in errors] == ["spec.behavior.scaleUp.tolerance"]


def test_status_update_and_scale() -> None:
    hpa = HorizontalPodAutoscaler.from_dict(
        {"status": {"currentReplicas": -1, "desiredReplicas": -2}}
    )
    assert [str(e) for e in validate_horizontal_pod_autoscaler_status_update(hpa)] == [
        "status.currentReplicas: Invalid value: -1: must be greater than or equal to 0",
        "status.desiredReplicas: Invalid value: -2: must be greater than or equal to 0",
    ]
    scale = Scale.from_dict(
        {"metadata": {"name": "frontend", "namespace": "default"}, "spec": {"replicas": -1}}
    )
    assert [str(e) for e in validate_scale(scale)] == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    ]
    for replicas in (0, 1, 10):
        scale.spec.replicas = replicas
        assert validate_scale(scale) == []


def test_errors_become_an_invalid_status() -> None:
    errors = validate_horizontal_pod_autoscaler(_hpa(minReplicas=7, maxReplicas=5))
    status = invalid_status(
        errors, kind="HorizontalPodAutoscaler", name="myautoscaler", group="autoscaling"
    )
    assert status.code == 422
    assert status.reason == "Invalid"
    assert status.message == (
        'HorizontalPodAutoscaler.autoscaling "myautoscaler" is invalid: '
        "spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"
    )
    assert status.details is not None
    cause = status.details.causes[0]
    assert (cause.reason, cause.field) == ("FieldValueInvalid", "spec.maxReplicas")


# ------------------------------------------------------------------------------------------ VPA

TARGET = {"kind": "Deployment", "name": "my-app"}
NO_GATES = VerticalValidationOptions(is_create=False)  # upstream's zero VPAValidationOptions{}
CREATE = VerticalValidationOptions(is_create=True)
BOOST = VerticalValidationOptions(is_create=True, allow_cpu_startup_boost=True)
PER_VPA = VerticalValidationOptions(is_create=True, allow_per_vpa_config=True)


def _vpa(spec: dict[str, Any]) -> VerticalPodAutoscaler:
    return VerticalPodAutoscaler.from_dict({"spec": spec})


def _policy(**policy: Any) -> dict[str, Any]:
    return {
        "targetRef": TARGET,
        "updatePolicy": {"updateMode": "Off"},
        "resourcePolicy": {"containerPolicies": [policy]},
    }


def _limits(min_allowed: dict[str, str], max_allowed: dict[str, str]) -> dict[str, Any]:
    return {
        "targetRef": TARGET,
        "resourcePolicy": {
            "containerPolicies": [
                {"containerName": "loot box", "minAllowed": min_allowed, "maxAllowed": max_allowed}
            ]
        },
    }


P0 = "spec.resourcePolicy.containerPolicies[0]"
BOOST_GATE = (
    "in order to use startupBoost, you must enable feature gate CPUStartupBoost in the "
    "admission-controller args"
)
PER_VPA_GATE = "not supported when feature flag PerVPAConfig is disabled"

VPA_INVALID: list[tuple[str, dict[str, Any], VerticalValidationOptions, str]] = [
    (
        "empty create",
        {},
        CREATE,
        "spec.targetRef: Required value: If you're using v1beta1 version of the API, please "
        "migrate to v1",
    ),
    (
        "no update mode",
        {"targetRef": TARGET, "updatePolicy": {}},
        NO_GATES,
        "spec.updatePolicy.updateMode: Required value: updateMode is required if UpdatePolicy is "
        "used",
    ),
    (
        "bad update mode",
        {"targetRef": TARGET, "updatePolicy": {"updateMode": "bad"}},
        NO_GATES,
        'spec.updatePolicy.updateMode: Unsupported value: "bad": supported values: "InPlace", '
        '"InPlaceOrRecreate", "Initial", "Off", "Recreate"',
    ),
    (
        "zero minReplicas",
        {"targetRef": TARGET, "updatePolicy": {"minReplicas": 0, "updateMode": "Off"}},
        NO_GATES,
        "spec.updatePolicy.minReplicas: Invalid value: 0: minReplicas has to be positive",
    ),
    (
        "no policy name",
        {"targetRef": TARGET, "resourcePolicy": {"containerPolicies": [{}]}},
        NO_GATES,
        f"{P0}.containerName: Required value",
    ),
    (
        "invalid scaling mode",
        {
            "targetRef": TARGET,
            "resourcePolicy": {"containerPolicies": [{"containerName": "loot box", "mode": "bad"}]},
        },
        NO_GATES,
        f'{P0}.mode: Unsupported value: "bad": supported values: "Auto", "Off"',
    ),
    (
        "more than one recommender",
        {
            "targetRef": TARGET,
            "updatePolicy": {"updateMode": "Off"},
            "recommenders": [{"name": "test1"}, {"name": "test2"}],
        },
        NO_GATES,
        "spec.recommenders: Too many: 2: must have at most 1 item",
    ),
    (
        "bad limits",
        _limits({"cpu": "100"}, {"cpu": "10"}),
        NO_GATES,
        f'{P0}.maxAllowed[cpu]: Invalid value: "10": max resource for cpu is lower than min of '
        '"100"',
    ),
    (
        "bad minAllowed cpu value",
        _limits({"cpu": "187500u"}, {"cpu": "275m"}),
        NO_GATES,
        f'{P0}.minAllowed[cpu]: Invalid value: "187500u": must be a whole number of milli CPUs',
    ),
    (
        "bad minAllowed memory value",
        _limits({"cpu": "1m", "memory": "100m"}, {"cpu": "275m", "memory": "500M"}),
        NO_GATES,
        f'{P0}.minAllowed[memory]: Invalid value: "100m": must be a whole number of bytes',
    ),
    (
        "bad maxAllowed cpu value",
        _limits({}, {"cpu": "187500u"}),
        NO_GATES,
        f'{P0}.maxAllowed[cpu]: Invalid value: "187500u": must be a whole number of milli CPUs',
    ),
    (
        "bad maxAllowed memory value",
        _limits({"cpu": "1m"}, {"cpu": "275m", "memory": "500m"}),
        NO_GATES,
        f'{P0}.maxAllowed[memory]: Invalid value: "500m": must be a whole number of bytes',
    ),
    (
        "scaling off with controlled values requests and limits",
        {
            "targetRef": TARGET,
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "loot box",
                        "mode": "Off",
                        "controlledValues": "RequestsAndLimits",
                    }
                ]
            },
        },
        NO_GATES,
        f"{P0}.controlledValues: Forbidden: controlledValues shouldn't be specified if container "
        "scaling mode is off",
    ),
    (
        "top-level startupBoost with feature gate disabled",
        {"targetRef": TARGET, "startupBoost": {"cpu": {"factor": 2}}},
        CREATE,
        f"spec.startupBoost: Forbidden: {BOOST_GATE}",
    ),
    (
        "container startupBoost with feature gate disabled",
        {
            "targetRef": TARGET,
            "resourcePolicy": {
                "containerPolicies": [
                    {"containerName": "loot box", "startupBoost": {"cpu": {"factor": 2}}}
                ]
            },
        },
        CREATE,
        f"{P0}.startupBoost: Forbidden: {BOOST_GATE}",
    ),
    (
        "top-level startupBoost with bad factor",
        {"targetRef": TARGET, "startupBoost": {"cpu": {"type": "Factor", "factor": 0}}},
        BOOST,
        "spec.startupBoost.cpu.factor: Invalid value: 0: must be >= 1 for type Factor",
    ),
    (
        "container startupBoost with bad factor",
        {
            "targetRef": TARGET,
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "loot box",
                        "startupBoost": {"cpu": {"type": "Factor", "factor": 0}},
                    }
                ]
            },
        },
        BOOST,
        f"{P0}.startupBoost.cpu.factor: Invalid value: 0: must be >= 1 for type Factor",
    ),
    (
        "top-level startupBoost with bad quantity",
        {"targetRef": TARGET, "startupBoost": {"cpu": {"type": "Quantity", "quantity": "187500u"}}},
        BOOST,
        'spec.startupBoost.cpu.quantity: Invalid value: "187500u": must be a whole number of '
        "milli CPUs",
    ),
    (
        "top-level startupBoost with bad type",
        {"targetRef": TARGET, "startupBoost": {"cpu": {"type": "bad"}}},
        BOOST,
        'spec.startupBoost.cpu.type: Unsupported value: "bad": supported values: "Factor", '
        '"Quantity"',
    ),
    (
        "container startupBoost with empty type",
        {
            "targetRef": TARGET,
            "resourcePolicy": {
                "containerPolicies": [{"containerName": "loot box", "startupBoost": {"cpu": {}}}]
            },
        },
        BOOST,
        f"{P0}.startupBoost.cpu.type: Required value: must be either Factor or Quantity",
    ),
    (
        "oomBumpUpRatio negative",
        _policy(containerName="*", mode="Auto", oomBumpUpRatio="-1", oomMinBumpUp="104857600"),
        PER_VPA,
        f"{P0}.oomBumpUpRatio: Invalid value: -1: must be greater than or equal to 1.0",
    ),
    (
        "oomBumpUpRatio below 1",
        _policy(containerName="*", mode="Auto", oomBumpUpRatio="0.5", oomMinBumpUp="104857600"),
        PER_VPA,
        f"{P0}.oomBumpUpRatio: Invalid value: 0.5: must be greater than or equal to 1.0",
    ),
    (
        "targetCPUPercentile above 1",
        _policy(containerName="*", mode="Auto", targetCPUPercentile="1500m"),
        PER_VPA,
        f"{P0}.targetCPUPercentile: Invalid value: 1.5: must be greater than 0 and less than or "
        "equal to 1",
    ),
    (
        "targetMemoryPercentile with PerVPAConfig disabled",
        _policy(containerName="*", mode="Auto", targetMemoryPercentile="900m"),
        CREATE,
        f"{P0}.targetMemoryPercentile: Forbidden: {PER_VPA_GATE}",
    ),
    (
        "oomMinBumpUp negative",
        _policy(containerName="*", mode="Auto", oomBumpUpRatio="2", oomMinBumpUp="-1"),
        PER_VPA,
        f"{P0}.oomMinBumpUp: Invalid value: -1: must be greater than or equal to 0",
    ),
    (
        "oomMinBumpUp with PerVPAConfig disabled",
        _policy(
            containerName="loot box",
            mode="Auto",
            minAllowed={"cpu": "10"},
            maxAllowed={"cpu": "100"},
            oomMinBumpUp="2",
        ),
        CREATE,
        f"{P0}.oomMinBumpUp: Forbidden: {PER_VPA_GATE}",
    ),
    (
        "memoryAggregationIntervalSeconds with PerVPAConfig disabled",
        _policy(containerName="loot box", mode="Auto", memoryAggregationIntervalSeconds=3600),
        CREATE,
        f"{P0}.memoryAggregationIntervalSeconds: Forbidden: {PER_VPA_GATE}",
    ),
    (
        "memoryAggregationIntervalCount with PerVPAConfig disabled",
        _policy(containerName="loot box", mode="Auto", memoryAggregationIntervalCount=10),
        CREATE,
        f"{P0}.memoryAggregationIntervalCount: Forbidden: {PER_VPA_GATE}",
    ),
    (
        "memoryAggregationIntervalSeconds zero",
        _policy(containerName="loot box", mode="Auto", memoryAggregationIntervalSeconds=0),
        PER_VPA,
        f"{P0}.memoryAggregationIntervalSeconds: Invalid value: 0: must be greater than or equal "
        "to 1",
    ),
    (
        "memoryAggregationIntervalSeconds negative",
        _policy(containerName="loot box", mode="Auto", memoryAggregationIntervalSeconds=-5),
        PER_VPA,
        f"{P0}.memoryAggregationIntervalSeconds: Invalid value: -5: must be greater than or equal "
        "to 1",
    ),
    (
        "memoryAggregationIntervalCount zero",
        _policy(containerName="loot box", mode="Auto", memoryAggregationIntervalCount=0),
        PER_VPA,
        f"{P0}.memoryAggregationIntervalCount: Invalid value: 0: must be greater than or equal to "
        "1",
    ),
    (
        "memoryAggregationIntervalCount negative",
        _policy(containerName="loot box", mode="Auto", memoryAggregationIntervalCount=-3),
        PER_VPA,
        f"{P0}.memoryAggregationIntervalCount: Invalid value: -3: must be greater than or equal "
        "to 1",
    ),
    (
        "InPlace update mode with its gate disabled",
        {"targetRef": TARGET, "updatePolicy": {"updateMode": "InPlace"}},
        CREATE,
        "spec.updatePolicy.updateMode: Forbidden: in order to use UpdateMode InPlace, you must "
        "enable feature gate InPlace in the admission-controller args",
    ),
    (
        "evictAfterOOMSeconds with PerVPAConfig disabled",
        {"targetRef": TARGET, "updatePolicy": {"updateMode": "Off", "evictAfterOOMSeconds": 600}},
        CREATE,
        f"spec.updatePolicy.evictAfterOOMSeconds: Forbidden: {PER_VPA_GATE}",
    ),
    (
        "evictAfterOOMSeconds zero",
        {"targetRef": TARGET, "updatePolicy": {"updateMode": "Off", "evictAfterOOMSeconds": 0}},
        PER_VPA,
        "spec.updatePolicy.evictAfterOOMSeconds: Invalid value: 0: must be greater than or equal "
        "to 1",
    ),
    (
        "unsupported controlledResources entry on create",
        {
            "targetRef": TARGET,
            "resourcePolicy": {
                "containerPolicies": [
                    {"containerName": "loot box", "controlledResources": ["cpu", "broken"]}
                ]
            },
        },
        CREATE,
        f'{P0}.controlledResources[1]: Unsupported value: "broken": supported values: "cpu", '
        '"memory"',
    ),
]


@pytest.mark.parametrize(
    ("case", "spec", "options", "expected"), VPA_INVALID, ids=[c[0] for c in VPA_INVALID]
)
def test_invalid_vpa_is_rejected_with_upstreams_error(
    case: str, spec: dict[str, Any], options: VerticalValidationOptions, expected: str
) -> None:
    errors = validate_vertical_pod_autoscaler(_vpa(spec), options=options)
    assert [str(e) for e in errors] == [expected], case


VPA_VALID: list[tuple[dict[str, Any], VerticalValidationOptions]] = [
    ({}, NO_GATES),
    ({"targetRef": TARGET, "updatePolicy": {"updateMode": "InPlaceOrRecreate"}}, NO_GATES),
    (
        _policy(
            containerName="loot box",
            mode="Auto",
            minAllowed={"cpu": "10"},
            maxAllowed={"cpu": "100"},
        )
        | {"updatePolicy": {"updateMode": "Off", "minReplicas": 1}},
        NO_GATES,
    ),
    (
        {
            "targetRef": TARGET,
            "startupBoost": {"cpu": {"type": "Factor", "factor": 2}},
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "loot box",
                        "startupBoost": {"cpu": {"type": "Quantity", "quantity": "100m"}},
                    }
                ]
            },
        },
        BOOST,
    ),
    (
        _policy(containerName="loot box", mode="Auto", oomBumpUpRatio="2")
        | {"updatePolicy": {"updateMode": "Off", "evictAfterOOMSeconds": 600}},
        PER_VPA,
    ),
    (
        _policy(
            containerName="*", mode="Auto", targetCPUPercentile="950m", targetMemoryPercentile="1"
        ),
        PER_VPA,
    ),
    (
        _policy(
            containerName="loot box",
            mode="Auto",
            memoryAggregationIntervalSeconds=3600,
            memoryAggregationIntervalCount=10,
        ),
        PER_VPA,
    ),
    (
        {"targetRef": TARGET, "updatePolicy": {"updateMode": "InPlace", "minReplicas": 1}},
        VerticalValidationOptions(allow_in_place=True),
    ),
    (_limits({"cpu": "10m", "memory": "100Mi"}, {"cpu": "1000m", "memory": "1Gi"}), CREATE),
]


@pytest.mark.parametrize(("spec", "options"), VPA_VALID)
def test_valid_vpa_is_accepted(spec: dict[str, Any], options: VerticalValidationOptions) -> None:
    assert validate_vertical_pod_autoscaler(_vpa(spec), options=options) == []


def test_very_invalid_vpa_reports_every_problem() -> None:
    vpa = _vpa(
        {
            "resourcePolicy": {
                "containerPolicies": [
                    {
                        "containerName": "loot box",
                        "startupBoost": {"cpu": {}},
                        "controlledResources": ["cpu", "memory", "broken"],
                    }
                ]
            },
            "startupBoost": {},
            "updatePolicy": {"minReplicas": -1, "updateMode": "bad", "evictAfterOOMSeconds": -1},
            "recommenders": [{"name": "test1"}, {"name": "test2"}],
        }
    )
    errors = validate_vertical_pod_autoscaler(vpa, options=CREATE)
    assert [e.path for e in errors] == [
        "spec.targetRef",
        "spec.updatePolicy.updateMode",
        "spec.updatePolicy.minReplicas",
        "spec.updatePolicy.evictAfterOOMSeconds",
        f"{P0}.startupBoost",
        f"{P0}.controlledResources[2]",
        "spec.startupBoost",
        "spec.recommenders",
    ]


def test_warnings_for_auto_mode_and_tolerated_controlled_resources() -> None:
    auto = _vpa({"targetRef": TARGET, "updatePolicy": {"updateMode": "Auto"}})
    assert validate_vertical_pod_autoscaler(auto, options=NO_GATES) == []
    assert warn_vertical_pod_autoscaler(auto) == [
        'spec.updatePolicy: "Auto" mode is deprecated and will be removed in a future API version. '
        "Use explicit update modes like: [InPlace InPlaceOrRecreate Initial Off Recreate]. "
        "See https://github.com/kubernetes/autoscaler/issues/8424 for more details."
    ]
    broken = _vpa(
        {
            "targetRef": TARGET,
            "resourcePolicy": {
                "containerPolicies": [
                    {"containerName": "loot box", "controlledResources": ["cpu", "broken"]}
                ]
            },
        }
    )
    old = vertical_validation_options(broken)
    assert old.existing_controlled_resources == frozenset({"cpu", "broken"})
    assert validate_vertical_pod_autoscaler(broken, options=old) == []
    assert warn_vertical_pod_autoscaler(broken, options=old) == [
        f'{P0}.controlledResources[1]: unsupported value "broken" is allowed only because it is '
        'present in the existing VPA object; supported values: "cpu", "memory"'
    ]


def test_features_already_in_use_stay_allowed_on_update() -> None:
    old = _vpa(
        {
            "targetRef": TARGET,
            "updatePolicy": {"updateMode": "InPlace", "evictAfterOOMSeconds": 600},
            "startupBoost": {"cpu": {"type": "Factor", "factor": 2}},
        }
    )
    options = vertical_validation_options(old)
    assert (
        options.is_create,
        options.allow_in_place,
        options.allow_per_vpa_config,
        options.allow_cpu_startup_boost,
    ) == (False, True, True, True)
    fresh = vertical_validation_options(None)
    assert (
        fresh.is_create,
        fresh.allow_in_place,
        fresh.allow_per_vpa_config,
        fresh.allow_cpu_startup_boost,
    ) == (True, False, False, False)
    gated = vertical_validation_options(None, VpaFeatureGates(per_vpa_config=True))
    assert gated.allow_per_vpa_config


VPA_SCHEMA_INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("no targetRef", {}, "spec.targetRef: Required value"),
    (
        "targetRef without name",
        {"targetRef": {"kind": "Deployment"}},
        "spec.targetRef.name: Required value",
    ),
    (
        "updateMode enum",
        {"targetRef": TARGET, "updatePolicy": {"updateMode": "Sometimes"}},
        'spec.updatePolicy.updateMode: Unsupported value: "Sometimes": supported values: "Off", '
        '"Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto"',
    ),
    (
        "controlledValues enum",
        {
            "targetRef": TARGET,
            "resourcePolicy": {
                "containerPolicies": [{"containerName": "*", "controlledValues": "LimitsOnly"}]
            },
        },
        f'{P0}.controlledValues: Unsupported value: "LimitsOnly": supported values: '
        '"RequestsAndLimits", "RequestsOnly"',
    ),
    (
        "container mode enum",
        {
            "targetRef": TARGET,
            "resourcePolicy": {"containerPolicies": [{"containerName": "*", "mode": "On"}]},
        },
        f'{P0}.mode: Unsupported value: "On": supported values: "Auto", "Off"',
    ),
    (
        "evictAfterOOMSeconds minimum",
        {"targetRef": TARGET, "updatePolicy": {"evictAfterOOMSeconds": 0}},
        "spec.updatePolicy.evictAfterOOMSeconds: Invalid value: 0: "
        "spec.updatePolicy.evictAfterOOMSeconds in body should be greater than or equal to 1",
    ),
    (
        "memoryAggregationIntervalCount minimum",
        {
            "targetRef": TARGET,
            "resourcePolicy": {"containerPolicies": [{"memoryAggregationIntervalCount": 0}]},
        },
        f"{P0}.memoryAggregationIntervalCount: Invalid value: 0: "
        f"{P0}.memoryAggregationIntervalCount in body should be greater than or equal to 1",
    ),
    (
        "recommender without name",
        {"targetRef": TARGET, "recommenders": [{}]},
        "spec.recommenders[0].name: Required value",
    ),
    (
        "changeRequirement enum",
        {
            "targetRef": TARGET,
            "updatePolicy": {
                "evictionRequirements": [{"resources": ["cpu"], "changeRequirement": "Always"}]
            },
        },
        "spec.updatePolicy.evictionRequirements[0].changeRequirement: Unsupported value: "
        '"Always": supported values: "TargetHigherThanRequests", "TargetLowerThanRequests"',
    ),
    (
        "eviction requirement without resources",
        {
            "targetRef": TARGET,
            "updatePolicy": {
                "evictionRequirements": [{"changeRequirement": "TargetHigherThanRequests"}]
            },
        },
        "spec.updatePolicy.evictionRequirements[0].resources: Required value",
    ),
    (
        "Factor boost without factor",
        {"targetRef": TARGET, "startupBoost": {"cpu": {"type": "Factor"}}},
        "spec.startupBoost.cpu: Invalid value: object: factor is required when type is Factor "
        "and forbidden otherwise",
    ),
    (
        "Quantity boost with a factor",
        {
            "targetRef": TARGET,
            "startupBoost": {"cpu": {"type": "Quantity", "quantity": "1", "factor": 2}},
        },
        "spec.startupBoost.cpu: Invalid value: object: factor is required when type is Factor "
        "and forbidden otherwise",
    ),
]


@pytest.mark.parametrize(
    ("case", "spec", "expected"), VPA_SCHEMA_INVALID, ids=[c[0] for c in VPA_SCHEMA_INVALID]
)
def test_crd_schema_constraints(case: str, spec: dict[str, Any], expected: str) -> None:
    assert [str(e) for e in validate_vertical_pod_autoscaler_schema(_vpa(spec))] == [expected], case


def test_field_error_text_matches_go() -> None:
    assert str(FieldError("a.b", ErrorType.REQUIRED, "x", bad_value=3)) == "a.b: Required value: x"
    assert str(FieldError("a", ErrorType.INVALID, "", bad_value=None)) == "a: Invalid value: null"
    assert (
        str(FieldError("a", ErrorType.INVALID, "d", bad_value=True)) == "a: Invalid value: true: d"
    )
    assert [format_go_float(v) for v in (1.5, -1.0, 0.5, 1e6, 123456.0, 1e-5, 0.0001)] == [
        "1.5",
        "-1",
        "0.5",
        "1e+06",
        "123456",
        "1e-05",
        "0.0001",
    ]
    assert ErrorType.NOT_SUPPORTED.cause_type == "FieldValueNotSupported"


_policy_values = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Pods", "Percent", "hm"]),
        "value": st.integers(-3, 10),
        "periodSeconds": st.integers(-3, 2000),
    }
)


@settings(max_examples=300, deadline=None)
@given(
    window=st.none() | st.integers(-10, 4000),
    select=st.none() | st.sampled_from(["Max", "Min", "Disabled", "Sometimes"]),
    policies=st.lists(_policy_values, max_size=3),
    tolerance=st.none() | st.sampled_from(["0", "0.05", "-0.01", "10", "-1m"]),
)
def test_behavior_errors_are_exactly_the_out_of_range_fields(
    window: int | None,
    select: str | None,
    policies: list[dict[str, Any]],
    tolerance: str | None,
) -> None:
    rules: dict[str, Any] = {"policies": policies}
    for key, value in (
        ("stabilizationWindowSeconds", window),
        ("selectPolicy", select),
        ("tolerance", tolerance),
    ):
        if value is not None:
            rules[key] = value
    path = "spec.behavior.scaleDown"
    expected = set()
    if window is not None and not 0 <= window <= 3600:
        expected.add(f"{path}.stabilizationWindowSeconds")
    if select == "Sometimes":
        expected.add(f"{path}.selectPolicy")
    if not policies:
        expected.add(f"{path}.policies")
    for i, policy in enumerate(policies):
        if policy["type"] == "hm":
            expected.add(f"{path}.policies[{i}].type")
        if policy["value"] <= 0:
            expected.add(f"{path}.policies[{i}].value")
        if not 1 <= policy["periodSeconds"] <= 1800:
            expected.add(f"{path}.policies[{i}].periodSeconds")
    if tolerance is not None and tolerance.startswith("-"):
        expected.add(f"{path}.tolerance")
    errors = validate_horizontal_pod_autoscaler(_hpa(behavior={"scaleDown": rules}))
    assert {e.path for e in errors} == expected
