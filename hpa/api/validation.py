"""Validation like the API server's, for HorizontalPodAutoscaler (autoscaling/v2) and VPA objects.

Upstream counterparts:

* ``k8s.io/apimachinery/pkg/util/validation/field`` (``field.Error``: its types, paths and the
  ``Error()`` text, e.g. ``spec.maxReplicas: Invalid value: 3: must be greater than or equal to
  `minReplicas```) -> :class:`FieldError`; ``apierrors.NewInvalid`` -> :func:`invalid_status`.
* kubernetes/kubernetes ``pkg/apis/autoscaling/validation/validation.go``
  (``ValidateHorizontalPodAutoscaler``, ``...Update``, ``...StatusUpdate``, ``ValidateScale``,
  ``validateMetricSpec`` and the per-source rules, ``validateBehavior``/``validateScalingRules``/
  ``validateScalingPolicy``, the per-direction ``tolerance`` of KEP-4951), with the name rules of
  ``apimachinery/pkg/api/validation/path`` (``IsValidPathSegmentName``) and
  ``apimachinery/pkg/util/validation`` (DNS-1123 label/subdomain, qualified names), and
  ``pkg/apis/core/v1/validation.ValidateContainerResourceName``.
* kubernetes/autoscaler ``vertical-pod-autoscaler/pkg/admission-controller/resource/vpa``
  (``validateVPA`` and its options, ``allowCPUBoost``/``allowPerVPAConfig``/``allowInPlace``,
  the deprecation warning for ``Auto``) -> :func:`validate_vertical_pod_autoscaler`,
  :func:`warn_vertical_pod_autoscaler`, :func:`vertical_validation_options`; and the structural
  constraints of the VPA CRD's ``openAPIV3Schema`` (required fields, enums, minimums, the CEL
  rules of ``startupBoost.cpu``) with the API server's wording ->
  :func:`validate_vertical_pod_autoscaler_schema`.

Which metric source allows which target (upstream has no separate table; it is implied by the
per-source checks, and docs/api-validation.md spells it out):

=================  ==========================================  =====================================
source             needs                                       rejects
=================  ==========================================  =====================================
Object             ``value`` or ``averageValue``                -
Pods               ``averageValue``                             -
Resource           ``averageUtilization`` or ``averageValue``   both at once
ContainerResource  ``averageUtilization`` or ``averageValue``   both at once
External           ``value`` or ``averageValue``                both at once
=================  ==========================================  =====================================

Deliberate deviations (all documented in docs/api-validation.md):

* ``minReplicas: 0`` is allowed when at least one Object or External metric exists, i.e. as with
  upstream's ``HPAScaleToZero`` gate enabled (``HorizontalValidationOptions.scale_to_zero``).
* The per-direction ``tolerance`` is always allowed (upstream's ``HPAConfigurableTolerance`` gate,
  beta and on by default); a negative one is rejected.
* A bad Quantity is shown as its quoted string; upstream's ``field.Invalid`` prints a Go struct.
* The ``tolerance`` message (``must be greater or equal to zero``) follows upstream's test
  expectation; the Go source of that line was not available to compare.
* Object metadata checks are limited to ``name`` and ``namespace`` (labels, annotations, owner
  references and managed fields were already checked by the API server that served the object).
* Container resource names are checked against a fixed list of standard names (cpu, memory,
  ephemeral-storage, hugepages-*, quota names) rather than upstream's full helper tables.
* ``InPlaceOrRecreate`` is not gated: the newest admission controller's tests accept it with every
  gate off.
* Go iterates maps and sets in random order; we report in sorted order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum

from hpa.api.autoscaling_v1 import Scale
from hpa.api.autoscaling_v2 import (
    ContainerResourceMetricSource,
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscaler,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    HPAScalingPolicy,
    HPAScalingRules,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
)
from hpa.api.meta import ObjectMeta, Status, StatusCause, StatusDetails
from hpa.api.types import quantity_of
from hpa.api.vpa import (
    ContainerResourcePolicy,
    PodResourcePolicy,
    PodUpdatePolicy,
    StartupBoost,
    VerticalPodAutoscaler,
)
from hpa.core.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name
from hpa.core.vpa.update import TARGET_HIGHER_THAN_REQUESTS, TARGET_LOWER_THAN_REQUESTS

__all__ = [
    "MAX_PERIOD_SECONDS",
    "MAX_STABILIZATION_WINDOW_SECONDS",
    "ErrorType",
    "FieldError",
    "HorizontalValidationOptions",
    "Verbatim",
    "VerticalValidationOptions",
    "VpaFeatureGates",
    "format_go_float",
    "invalid_status",
    "validate_horizontal_pod_autoscaler",
    "validate_horizontal_pod_autoscaler_status_update",
    "validate_horizontal_pod_autoscaler_update",
    "validate_scale",
    "validate_vertical_pod_autoscaler",
    "validate_vertical_pod_autoscaler_schema",
    "vertical_validation_options",
    "warn_vertical_pod_autoscaler",
]

MAX_PERIOD_SECONDS = 1800
"""``MaxPeriodSeconds``: the largest scaling policy period."""

MAX_STABILIZATION_WINDOW_SECONDS = 3600
"""``MaxStabilizationWindowSeconds``: the largest stabilization window."""


# --------------------------------------------------------------------------- field errors


class ErrorType(StrEnum):
    """``field.ErrorType``; :attr:`cause_type` is the ``metav1.CauseType`` string."""

    NOT_FOUND = "NotFound"
    REQUIRED = "Required"
    DUPLICATE = "Duplicate"
    INVALID = "Invalid"
    NOT_SUPPORTED = "NotSupported"
    FORBIDDEN = "Forbidden"
    TOO_LONG = "TooLong"
    TOO_MANY = "TooMany"
    INTERNAL = "Internal"

    @property
    def description(self) -> str:
        """``ErrorType.String()``: ``Invalid value``, ``Required value``, ..."""
        return _DESCRIPTIONS[self]

    @property
    def cause_type(self) -> str:
        """``metav1.CauseType``: ``FieldValueInvalid``, ``FieldValueRequired``, ..."""
        return "InternalError" if self is ErrorType.INTERNAL else f"FieldValue{self.value}"


_DESCRIPTIONS = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
}
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


class Verbatim(str):
    """A bad value printed without quotes (Go values with a ``String()`` method)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class FieldError:
    """``field.Error``: one problem at one field path; ``str()`` is upstream's ``Error()``."""

    path: str
    type: ErrorType
    detail: str = ""
    bad_value: object = None

    @property
    def body(self) -> str:
        """``ErrorBody()``: the text after the path."""
        if self.type in _VALUELESS:
            text = self.type.description
        else:
            text = f"{self.type.description}: {_format_value(self.bad_value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.path}: {self.body}"


def _format_value(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Verbatim):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_go_float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def format_go_float(value: float) -> str:
    """Go's ``%v`` of a float64: ``strconv.FormatFloat(v, 'g', -1, 64)``."""
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # Go's digs.dp: digits before the decimal point
    exp = point - 1
    minus = "-" if sign else ""
    if exp < -4 or exp >= 6:  # shortest formatting uses eprec = 6
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{minus}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{minus}{digits}{'0' * (point - len(digits))}"
    return f"{minus}{digits[:point]}.{digits[point:]}"


def _required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, ErrorType.REQUIRED, detail)


def _forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, ErrorType.FORBIDDEN, detail)


def _invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, ErrorType.INVALID, detail, value)


def _not_supported(path: str, value: object, supported: Iterable[str]) -> FieldError:
    quoted = ", ".join(json.dumps(v) for v in supported)
    detail = f"supported values: {quoted}" if quoted else ""
    return FieldError(path, ErrorType.NOT_SUPPORTED, detail, value)


def _too_many(path: str, actual: int, maximum: int) -> FieldError:
    noun = "item" if maximum == 1 else "items"
    return FieldError(path, ErrorType.TOO_MANY, f"must have at most {maximum} {noun}", actual)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _key(path: str, key: str) -> str:
    return f"{path}[{key}]"


def invalid_status(
    errors: Sequence[FieldError], *, kind: str, name: str, group: str = ""
) -> Status:
    """``apierrors.NewInvalid``: the 422 ``metav1.Status`` an API server answers with."""
    qualified = f"{kind}.{group}" if group else kind
    if len(errors) == 1:
        aggregate = str(errors[0])
    else:
        aggregate = "[" + ", ".join(str(e) for e in errors) + "]"
    return Status(
        kind="Status",
        api_version="v1",
        status="Failure",
        message=f"{qualified} {json.dumps(name)} is invalid: {aggregate}",
        reason="Invalid",
        details=StatusDetails(
            name=name,
            group=group,
            kind=kind,
            causes=[
                StatusCause(reason=e.type.cause_type, message=e.body, field=e.path) for e in errors
            ],
        ),
        code=422,
    )


# --------------------------------------------------------------------------- names


def _path_segment_messages(name: str) -> list[str]:
    """``path.IsValidPathSegmentName``."""
    for illegal in (".", ".."):
        if name == illegal:
            return [f"may not be '{illegal}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = _STANDARD_CONTAINER_RESOURCES | frozenset(
    {
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _container_resource_name_errors(name: str, path: str) -> list[FieldError]:
    """``corev1 validation.ValidateContainerResourceName`` (via ``ValidateResourceName``)."""
    shown = Verbatim(name)  # v1.ResourceName has a String() method: printed unquoted
    errors = [_invalid(path, shown, m) for m in is_qualified_name(name)]
    if errors:
        return errors
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not name.startswith(
            ("hugepages-", "requests.hugepages-")
        ):
            errors.append(
                _invalid(path, shown, "must be a standard resource type or fully qualified")
            )
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errors.append(_invalid(path, shown, "must be a standard resource for containers"))
    elif "kubernetes.io/" not in name and (
        # not native: it must be an extended resource, usable as the quota name requests.<name>
        name.startswith("requests.") or is_qualified_name("requests." + name)
    ):
        errors.append(_invalid(path, shown, "doesn't follow extended resource name standard"))
    return errors


def _object_meta_errors(meta: ObjectMeta, *, requires_namespace: bool) -> list[FieldError]:
    """The ``name``/``namespace`` part of ``ValidateObjectMeta`` (DNS-subdomain names)."""
    errors: list[FieldError] = []
    if meta.generate_name:
        for m in is_dns1123_subdomain(_mask_trailing_dash(meta.generate_name)):
            errors.append(_invalid("metadata.generateName", meta.generate_name, m))
    if not meta.name:
        if not meta.generate_name:
            errors.append(_required("metadata.name", "name or generateName is required"))
    else:
        for m in is_dns1123_subdomain(meta.name):
            errors.append(_invalid("metadata.name", meta.name, m))
    if requires_namespace:
        if not meta.namespace:
            errors.append(_required("metadata.namespace"))
        else:
            for m in is_dns1123_label(meta.namespace):
                errors.append(_invalid("metadata.namespace", meta.namespace, m))
    elif meta.namespace:
        errors.append(_forbidden("metadata.namespace", "not allowed on this type"))
    return errors


def _mask_trailing_dash(name: str) -> str:
    """``maskTrailingDash``: a generateName prefix may end with '-'."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


# --------------------------------------------------------------------------- HPA


@dataclass(frozen=True, kw_only=True, slots=True)
class HorizontalValidationOptions:
    """Upstream's feature gates that change HPA validation.

    ``scale_to_zero`` is ``HPAScaleToZero``: with it, ``minReplicas`` may be 0 when at least one
    Object or External metric exists. The project enables it (docs/api-validation.md).
    """

    scale_to_zero: bool = True


_VALID_METRIC_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_VALID_SELECT_POLICIES = ("Disabled", "Max", "Min")
_VALID_POLICY_TYPES = ("Percent", "Pods")
_VALID_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
_SOURCE_FIELD = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}


def validate_horizontal_pod_autoscaler(
    hpa: HorizontalPodAutoscaler,
    *,
    options: HorizontalValidationOptions | None = None,
) -> list[FieldError]:
    """``ValidateHorizontalPodAutoscaler``: errors for a new object (empty when valid)."""
    opts = options or HorizontalValidationOptions()
    errors = _object_meta_errors(hpa.metadata, requires_namespace=True)
    lower_bound = 0 if opts.scale_to_zero else 1
    return errors + _spec_errors(hpa.spec, "spec", min_replicas_lower_bound=lower_bound)


def validate_horizontal_pod_autoscaler_update(
    new: HorizontalPodAutoscaler,
    old: HorizontalPodAutoscaler,
    *,
    options: HorizontalValidationOptions | None = None,
) -> list[FieldError]:
    """``ValidateHorizontalPodAutoscalerUpdate``: an existing ``minReplicas: 0`` stays allowed."""
    opts = options or HorizontalValidationOptions()
    keeps_zero = old.spec.min_replicas is not None and old.spec.min_replicas == 0
    lower_bound = 0 if opts.scale_to_zero or keeps_zero else 1
    return _spec_errors(new.spec, "spec", min_replicas_lower_bound=lower_bound)


def validate_horizontal_pod_autoscaler_status_update(
    new: HorizontalPodAutoscaler,
) -> list[FieldError]:
    """``ValidateHorizontalPodAutoscalerStatusUpdate``: replica counts are non-negative."""
    errors: list[FieldError] = []
    for name, value in (
        ("currentReplicas", new.status.current_replicas),
        ("desiredReplicas", new.status.desired_replicas),
    ):
        if value < 0:
            errors.append(_invalid(f"status.{name}", value, "must be greater than or equal to 0"))
    return errors


def validate_scale(scale: Scale) -> list[FieldError]:
    """``ValidateScale``."""
    errors = _object_meta_errors(scale.metadata, requires_namespace=True)
    if scale.spec.replicas < 0:
        errors.append(
            _invalid("spec.replicas", scale.spec.replicas, "must be greater than or equal to 0")
        )
    return errors


def _spec_errors(
    spec: HorizontalPodAutoscalerSpec, path: str, *, min_replicas_lower_bound: int
) -> list[FieldError]:
    """``validateHorizontalPodAutoscalerSpec``."""
    errors: list[FieldError] = []
    if spec.min_replicas is not None and spec.min_replicas < min_replicas_lower_bound:
        errors.append(
            _invalid(
                _child(path, "minReplicas"),
                spec.min_replicas,
                f"must be greater than or equal to {min_replicas_lower_bound}",
            )
        )
    if spec.max_replicas < 1:
        errors.append(
            _invalid(_child(path, "maxReplicas"), spec.max_replicas, "must be greater than 0")
        )
    if spec.min_replicas is not None and spec.max_replicas < spec.min_replicas:
        errors.append(
            _invalid(
                _child(path, "maxReplicas"),
                spec.max_replicas,
                "must be greater than or equal to `minReplicas`",
            )
        )
    errors += _cross_version_object_reference_errors(
        spec.scale_target_ref, _child(path, "scaleTargetRef")
    )
    errors += _metrics_errors(spec.metrics, _child(path, "metrics"), spec.min_replicas)
    errors += _behavior_errors(spec.behavior, _child(path, "behavior"))
    return errors


def _cross_version_object_reference_errors(
    ref: CrossVersionObjectReference, path: str
) -> list[FieldError]:
    """``ValidateCrossVersionObjectReference``."""
    errors: list[FieldError] = []
    for name, value in (("kind", ref.kind), ("name", ref.name)):
        if not value:
            errors.append(_required(_child(path, name)))
        else:
            errors += [
                _invalid(_child(path, name), value, m) for m in _path_segment_messages(value)
            ]
    return errors


def _metrics_errors(
    metrics: Sequence[MetricSpec], path: str, min_replicas: int | None
) -> list[FieldError]:
    """``validateMetrics``, including the scale-to-zero requirement."""
    errors: list[FieldError] = []
    for i, metric in enumerate(metrics):
        errors += _metric_spec_errors(metric, _index(path, i))
    if (
        min_replicas is not None
        and min_replicas == 0
        and not any(m.type in ("Object", "External") for m in metrics)
    ):
        errors.append(
            _forbidden(
                path,
                "must specify at least one Object or External metric to support scaling to "
                "zero replicas",
            )
        )
    return errors


def _metric_spec_errors(spec: MetricSpec, path: str) -> list[FieldError]:
    """``validateMetricSpec``."""
    errors: list[FieldError] = []
    type_path = _child(path, "type")
    if not spec.type:
        errors.append(_required(type_path, "must specify a metric source type"))
    if spec.type not in _VALID_METRIC_SOURCE_TYPES:
        errors.append(_not_supported(type_path, spec.type, _VALID_METRIC_SOURCE_TYPES))

    present: list[str] = []
    if spec.object is not None:
        present.append("object")
        if len(present) == 1:
            errors += _object_source_errors(spec.object, _child(path, "object"))
    if spec.external is not None:
        present.append("external")
        if len(present) == 1:
            errors += _external_source_errors(spec.external, _child(path, "external"))
    if spec.pods is not None:
        present.append("pods")
        if len(present) == 1:
            errors += _pods_source_errors(spec.pods, _child(path, "pods"))
    if spec.resource is not None:
        present.append("resource")
        if len(present) == 1:
            errors += _resource_source_errors(spec.resource, _child(path, "resource"))
    if spec.container_resource is not None:
        present.append("containerResource")
        if len(present) == 1:
            errors += _container_resource_source_errors(
                spec.container_resource, _child(path, "containerResource")
            )

    expected = _SOURCE_FIELD.get(spec.type, "")
    if expected:
        if expected not in present:
            errors.append(
                _required(
                    _child(path, expected), "must populate information for the given metric source"
                )
            )
    else:
        errors.append(_not_supported(type_path, spec.type, _VALID_METRIC_SOURCE_TYPES))
    if len(present) != 1:
        for typ in sorted(set(present) - {expected}):
            errors.append(
                _forbidden(_child(path, typ), "must populate the given metric source only")
            )
    return errors


def _object_source_errors(src: ObjectMetricSource, path: str) -> list[FieldError]:
    errors = _cross_version_object_reference_errors(
        src.described_object, _child(path, "describedObject")
    )
    errors += _metric_identifier_errors(src.metric, _child(path, "metric"))
    target_path = _child(path, "target")
    errors += _metric_target_errors(src.target, target_path)
    if src.target.value is None and src.target.average_value is None:
        errors.append(
            _required(
                _child(target_path, "averageValue"),
                "must set either a target value or averageValue",
            )
        )
    return errors


def _external_source_errors(src: ExternalMetricSource, path: str) -> list[FieldError]:
    errors = _metric_identifier_errors(src.metric, _child(path, "metric"))
    target_path = _child(path, "target")
    errors += _metric_target_errors(src.target, target_path)
    if src.target.value is None and src.target.average_value is None:
        errors.append(
            _required(
                _child(target_path, "averageValue"),
                "must set either a target value for metric or a per-pod target",
            )
        )
    if src.target.value is not None and src.target.average_value is not None:
        errors.append(
            _forbidden(
                _child(target_path, "value"),
                "may not set both a target value for metric and a per-pod target",
            )
        )
    return errors


def _pods_source_errors(src: PodsMetricSource, path: str) -> list[FieldError]:
    errors = _metric_identifier_errors(src.metric, _child(path, "metric"))
    target_path = _child(path, "target")
    errors += _metric_target_errors(src.target, target_path)
    if src.target.average_value is None:
        errors.append(
            _required(
                _child(target_path, "averageValue"), "must specify a positive target averageValue"
            )
        )
    return errors


def _utilization_or_value_errors(target: MetricTarget, target_path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if target.average_utilization is None and target.average_value is None:
        errors.append(
            _required(
                _child(target_path, "averageUtilization"),
                "must set either a target raw value or a target utilization",
            )
        )
    if target.average_utilization is not None and target.average_value is not None:
        errors.append(
            _forbidden(
                _child(target_path, "averageValue"),
                "may not set both a target raw value and a target utilization",
            )
        )
    return errors


def _container_resource_source_errors(
    src: ContainerResourceMetricSource, path: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    if not src.name:
        errors.append(_required(_child(path, "name"), "must specify a resource name"))
    else:
        errors += _container_resource_name_errors(src.name, _child(path, "name"))
    if not src.container:
        errors.append(_required(_child(path, "container"), "must specify a container"))
    else:
        errors += [
            _invalid(_child(path, "container"), src.container, m)
            for m in is_dns1123_label(src.container)
        ]
    target_path = _child(path, "target")
    errors += _metric_target_errors(src.target, target_path)
    return errors + _utilization_or_value_errors(src.target, target_path)


def _resource_source_errors(src: ResourceMetricSource, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not src.name:
        errors.append(_required(_child(path, "name"), "must specify a resource name"))
    target_path = _child(path, "target")
    errors += _metric_target_errors(src.target, target_path)
    return errors + _utilization_or_value_errors(src.target, target_path)


def _metric_target_errors(target: MetricTarget, path: str) -> list[FieldError]:
    """``validateMetricTarget``."""
    errors: list[FieldError] = []
    if not target.type:
        errors.append(_required(_child(path, "type"), "must specify a metric target type"))
    if target.type not in _VALID_TARGET_TYPES:
        errors.append(
            _invalid(
                _child(path, "type"),
                target.type,
                "must be either Utilization, Value, or AverageValue",
            )
        )
    for name, value in (("value", target.value), ("averageValue", target.average_value)):
        if value is not None and quantity_of(value).sign() != 1:
            errors.append(_invalid(_child(path, name), value, "must be positive"))
    if target.average_utilization is not None and target.average_utilization < 1:
        errors.append(
            _invalid(
                _child(path, "averageUtilization"),
                target.average_utilization,
                "must be greater than 0",
            )
        )
    return errors


def _metric_identifier_errors(metric: MetricIdentifier, path: str) -> list[FieldError]:
    """``validateMetricIdentifier``."""
    name_path = _child(path, "name")
    if not metric.name:
        return [_required(name_path, "must specify a metric name")]
    return [_invalid(name_path, metric.name, m) for m in _path_segment_messages(metric.name)]


def _behavior_errors(
    behavior: HorizontalPodAutoscalerBehavior | None, path: str
) -> list[FieldError]:
    """``validateBehavior``."""
    if behavior is None:
        return []
    return _scaling_rules_errors(
        behavior.scale_up, _child(path, "scaleUp")
    ) + _scaling_rules_errors(behavior.scale_down, _child(path, "scaleDown"))


def _scaling_rules_errors(rules: HPAScalingRules | None, path: str) -> list[FieldError]:
    """``validateScalingRules``, with KEP-4951's ``tolerance >= 0``."""
    if rules is None:
        return []
    errors: list[FieldError] = []
    window = rules.stabilization_window_seconds
    window_path = _child(path, "stabilizationWindowSeconds")
    if window is not None and window < 0:
        errors.append(_invalid(window_path, window, "must be greater than or equal to zero"))
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errors.append(
            _invalid(
                window_path,
                window,
                f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
            )
        )
    if rules.select_policy is not None and rules.select_policy not in _VALID_SELECT_POLICIES:
        errors.append(
            _not_supported(
                _child(path, "selectPolicy"), rules.select_policy, _VALID_SELECT_POLICIES
            )
        )
    policies_path = _child(path, "policies")
    if not rules.policies:
        errors.append(_required(policies_path, "must specify at least one Policy"))
    for i, policy in enumerate(rules.policies):
        errors += _scaling_policy_errors(policy, _index(policies_path, i))
    if rules.tolerance is not None and quantity_of(rules.tolerance).sign() < 0:
        errors.append(
            _invalid(_child(path, "tolerance"), rules.tolerance, "must be greater or equal to zero")
        )
    return errors


def _scaling_policy_errors(policy: HPAScalingPolicy, path: str) -> list[FieldError]:
    """``validateScalingPolicy``."""
    errors: list[FieldError] = []
    if policy.type not in _VALID_POLICY_TYPES:
        errors.append(_not_supported(_child(path, "type"), policy.type, _VALID_POLICY_TYPES))
    if policy.value <= 0:
        errors.append(_invalid(_child(path, "value"), policy.value, "must be greater than zero"))
    period_path = _child(path, "periodSeconds")
    if policy.period_seconds <= 0:
        errors.append(_invalid(period_path, policy.period_seconds, "must be greater than zero"))
    if policy.period_seconds > MAX_PERIOD_SECONDS:
        errors.append(
            _invalid(
                period_path,
                policy.period_seconds,
                f"must be less than or equal to {MAX_PERIOD_SECONDS}",
            )
        )
    return errors


# --------------------------------------------------------------------------- VPA (admission)


@dataclass(frozen=True, kw_only=True, slots=True)
class VpaFeatureGates:
    """The admission controller's feature gates that change validation.

    Defaults are upstream's at the version read: ``CPUStartupBoost``, ``PerVPAConfig`` and
    ``InPlace`` are alpha (off). ``InPlaceOrRecreate`` is no longer gated in the newest admission
    controller (its tests accept it with every gate off), so it has no switch here.
    """

    cpu_startup_boost: bool = False
    per_vpa_config: bool = False
    in_place: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class VerticalValidationOptions:
    """``VPAValidationOptions``."""

    is_create: bool = True
    allow_cpu_startup_boost: bool = False
    allow_per_vpa_config: bool = False
    allow_in_place: bool = False
    existing_controlled_resources: frozenset[str] = field(default_factory=frozenset)


def vertical_validation_options(
    old: VerticalPodAutoscaler | None, gates: VpaFeatureGates | None = None
) -> VerticalValidationOptions:
    """``getValidationOptionsForVPA``: a feature in use by the old object stays allowed."""
    g = gates or VpaFeatureGates()
    policies = _container_policies(old)
    update_policy = old.spec.update_policy if old is not None else None
    boost_in_use = old is not None and (
        (old.spec.startup_boost is not None and old.spec.startup_boost.cpu is not None)
        or any(p.startup_boost is not None for p in policies)
    )
    per_vpa_in_use = (
        update_policy is not None and update_policy.evict_after_oom_seconds is not None
    ) or any(p.oom_bump_up_ratio is not None or p.oom_min_bump_up is not None for p in policies)
    in_place_in_use = update_policy is not None and update_policy.update_mode == "InPlace"
    existing = frozenset(r for p in policies for r in (p.controlled_resources or ()))
    return VerticalValidationOptions(
        is_create=old is None,
        allow_cpu_startup_boost=g.cpu_startup_boost or boost_in_use,
        allow_per_vpa_config=g.per_vpa_config or per_vpa_in_use,
        allow_in_place=g.in_place or in_place_in_use,
        existing_controlled_resources=existing,
    )


def _container_policies(vpa: VerticalPodAutoscaler | None) -> list[ContainerResourcePolicy]:
    if vpa is None or vpa.spec.resource_policy is None:
        return []
    return vpa.spec.resource_policy.container_policies


_UPDATE_MODES = ("Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto")
_UPDATE_MODES_LIST = ("InPlace", "InPlaceOrRecreate", "Initial", "Off", "Recreate")
_SCALING_MODES = ("Auto", "Off")
_CONTROLLED_RESOURCES = ("cpu", "memory")
_BOOST_TYPES = ("Factor", "Quantity")
_PER_VPA_FORBIDDEN = "not supported when feature flag PerVPAConfig is disabled"


def validate_vertical_pod_autoscaler(
    vpa: VerticalPodAutoscaler,
    *,
    options: VerticalValidationOptions | None = None,
) -> list[FieldError]:
    """``validateVPA``: the admission controller's errors (empty when valid)."""
    opts = options or VerticalValidationOptions()
    spec = vpa.spec
    errors: list[FieldError] = []
    if spec.target_ref is None and opts.is_create:
        errors.append(
            _required(
                "spec.targetRef", "If you're using v1beta1 version of the API, please migrate to v1"
            )
        )
    if spec.update_policy is not None:
        errors += _update_policy_errors(spec.update_policy, "spec.updatePolicy", opts)
    if spec.resource_policy is not None:
        errors += _resource_policy_errors(spec.resource_policy, "spec.resourcePolicy", opts)[0]
    if spec.startup_boost is not None:
        errors += _startup_boost_errors(spec.startup_boost, "spec.startupBoost", opts)
    if len(spec.recommenders) > 1:
        errors.append(_too_many("spec.recommenders", len(spec.recommenders), 1))
    return errors


def warn_vertical_pod_autoscaler(
    vpa: VerticalPodAutoscaler,
    *,
    options: VerticalValidationOptions | None = None,
) -> list[str]:
    """The admission warnings of ``validateVPA`` (deprecated ``Auto`` mode, tolerated values)."""
    opts = options or VerticalValidationOptions()
    warnings: list[str] = []
    update_policy = vpa.spec.update_policy
    if update_policy is not None and update_policy.update_mode == "Auto":
        warnings.append(
            'spec.updatePolicy: "Auto" mode is deprecated and will be removed in a future API '
            f"version. Use explicit update modes like: [{' '.join(_UPDATE_MODES_LIST)}]. "
            "See https://github.com/kubernetes/autoscaler/issues/8424 for more details."
        )
    if vpa.spec.resource_policy is not None:
        warnings += _resource_policy_errors(vpa.spec.resource_policy, "spec.resourcePolicy", opts)[
            1
        ]
    return warnings


def _update_policy_errors(
    policy: PodUpdatePolicy, path: str, opts: VerticalValidationOptions
) -> list[FieldError]:
    errors: list[FieldError] = []
    mode_path = _child(path, "updateMode")
    mode = policy.update_mode
    if mode is None:
        errors.append(_required(mode_path, "updateMode is required if UpdatePolicy is used"))
    else:
        if mode not in _UPDATE_MODES:
            errors.append(_not_supported(mode_path, mode, _UPDATE_MODES_LIST))
        if mode == "InPlace" and not opts.allow_in_place:
            errors.append(
                _forbidden(
                    mode_path,
                    "in order to use UpdateMode InPlace, you must enable feature gate InPlace in "
                    "the admission-controller args",
                )
            )
    if policy.min_replicas is not None and policy.min_replicas <= 0:
        errors.append(
            _invalid(
                _child(path, "minReplicas"), policy.min_replicas, "minReplicas has to be positive"
            )
        )
    if policy.evict_after_oom_seconds is not None:
        oom_path = _child(path, "evictAfterOOMSeconds")
        if not opts.allow_per_vpa_config:
            errors.append(_forbidden(oom_path, _PER_VPA_FORBIDDEN))
        elif policy.evict_after_oom_seconds < 1:
            errors.append(
                _invalid(
                    oom_path, policy.evict_after_oom_seconds, "must be greater than or equal to 1"
                )
            )
    return errors


def _resource_policy_errors(
    resource_policy: PodResourcePolicy, path: str, opts: VerticalValidationOptions
) -> tuple[list[FieldError], list[str]]:
    errors: list[FieldError] = []
    warnings: list[str] = []
    for i, policy in enumerate(resource_policy.container_policies):
        policy_path = _index(_child(path, "containerPolicies"), i)
        policy_errors, policy_warnings = _container_policy_errors(policy, policy_path, opts)
        errors += policy_errors
        warnings += policy_warnings
    return errors, warnings


def _container_policy_errors(
    policy: ContainerResourcePolicy, path: str, opts: VerticalValidationOptions
) -> tuple[list[FieldError], list[str]]:
    errors: list[FieldError] = []
    warnings: list[str] = []
    if not policy.container_name:
        errors.append(_required(_child(path, "containerName")))
    if policy.mode is not None and policy.mode not in _SCALING_MODES:
        errors.append(_not_supported(_child(path, "mode"), policy.mode, _SCALING_MODES))

    min_path, max_path = _child(path, "minAllowed"), _child(path, "maxAllowed")
    for resource in sorted(policy.min_allowed):
        minimum = quantity_of(policy.min_allowed[resource])
        errors += _resource_resolution_errors(
            _key(min_path, resource), resource, policy.min_allowed[resource]
        )
        if resource in policy.max_allowed:
            maximum = quantity_of(policy.max_allowed[resource])
            if maximum < minimum:
                errors.append(
                    _invalid(
                        _key(max_path, resource),
                        str(maximum),
                        f'max resource for {resource} is lower than min of "{minimum}"',
                    )
                )
    for resource in sorted(policy.max_allowed):
        errors += _resource_resolution_errors(
            _key(max_path, resource), resource, policy.max_allowed[resource]
        )

    if (
        policy.mode == "Off"
        and policy.controlled_values is not None
        and policy.controlled_values == "RequestsAndLimits"
    ):
        errors.append(
            _forbidden(
                _child(path, "controlledValues"),
                "controlledValues shouldn't be specified if container scaling mode is off",
            )
        )

    ratio_path = _child(path, "oomBumpUpRatio")
    if policy.oom_bump_up_ratio is not None:
        if not opts.allow_per_vpa_config:
            errors.append(_forbidden(ratio_path, _PER_VPA_FORBIDDEN))
        else:
            ratio = quantity_of(policy.oom_bump_up_ratio).milli_value() / 1000.0
            if ratio < 1.0:
                errors.append(_invalid(ratio_path, ratio, "must be greater than or equal to 1.0"))
    bump_path = _child(path, "oomMinBumpUp")
    if policy.oom_min_bump_up is not None:
        if not opts.allow_per_vpa_config:
            errors.append(_forbidden(bump_path, _PER_VPA_FORBIDDEN))
        else:
            bump = quantity_of(policy.oom_min_bump_up).value()
            if bump < 0:
                errors.append(_invalid(bump_path, bump, "must be greater than or equal to 0"))
    for name, percentile in (
        ("targetCPUPercentile", policy.target_cpu_percentile),
        ("targetMemoryPercentile", policy.target_memory_percentile),
    ):
        if percentile is None:
            continue
        if not opts.allow_per_vpa_config:
            errors.append(_forbidden(_child(path, name), _PER_VPA_FORBIDDEN))
            continue
        value = quantity_of(percentile).milli_value() / 1000.0
        if value <= 0 or value > 1:
            errors.append(
                _invalid(
                    _child(path, name),
                    value,
                    "must be greater than 0 and less than or equal to 1",
                )
            )
    for name, interval in (
        ("memoryAggregationIntervalSeconds", policy.memory_aggregation_interval_seconds),
        ("memoryAggregationIntervalCount", policy.memory_aggregation_interval_count),
    ):
        if interval is None:
            continue
        if not opts.allow_per_vpa_config:
            errors.append(_forbidden(_child(path, name), _PER_VPA_FORBIDDEN))
        elif interval < 1:
            errors.append(
                _invalid(_child(path, name), interval, "must be greater than or equal to 1")
            )
    if policy.startup_boost is not None:
        errors += _startup_boost_errors(policy.startup_boost, _child(path, "startupBoost"), opts)
    for i, resource in enumerate(policy.controlled_resources or ()):
        if resource in _CONTROLLED_RESOURCES:
            continue
        item_path = _index(_child(path, "controlledResources"), i)
        if resource in opts.existing_controlled_resources:
            supported = ", ".join(json.dumps(r) for r in _CONTROLLED_RESOURCES)
            warnings.append(
                f"{item_path}: unsupported value {json.dumps(resource)} is allowed only because "
                f"it is present in the existing VPA object; supported values: {supported}"
            )
        else:
            errors.append(_not_supported(item_path, resource, _CONTROLLED_RESOURCES))
    return errors, warnings


def _startup_boost_errors(
    boost: StartupBoost, path: str, opts: VerticalValidationOptions
) -> list[FieldError]:
    """``validateVPASpecStartupBoost``."""
    if not opts.allow_cpu_startup_boost:
        return [
            _forbidden(
                path,
                "in order to use startupBoost, you must enable feature gate CPUStartupBoost in "
                "the admission-controller args",
            )
        ]
    cpu = boost.cpu
    if cpu is None:
        return []
    cpu_path = _child(path, "cpu")
    if not cpu.type:
        return [_required(_child(cpu_path, "type"), "must be either Factor or Quantity")]
    if cpu.type == "Factor":
        if cpu.factor is None:
            return [_required(_child(cpu_path, "factor"), "required when type is Factor")]
        if cpu.factor < 1:
            return [
                _invalid(_child(cpu_path, "factor"), cpu.factor, "must be >= 1 for type Factor")
            ]
        return []
    if cpu.type == "Quantity":
        if cpu.quantity is None:
            return [_required(_child(cpu_path, "quantity"), "required when type is Quantity")]
        return _cpu_resolution_errors(cpu.quantity, _child(cpu_path, "quantity"))
    return [_not_supported(_child(cpu_path, "type"), cpu.type, _BOOST_TYPES)]


def _resource_resolution_errors(path: str, resource: str, text: str) -> list[FieldError]:
    """``validateResourceResolution``: whole milli-CPUs and whole bytes."""
    if resource == "cpu":
        return _cpu_resolution_errors(text, path)
    if resource == "memory":
        quantity = quantity_of(text)
        if not quantity.round_up(0)[1]:
            return [_invalid(path, str(quantity), "must be a whole number of bytes")]
    return []


def _cpu_resolution_errors(text: str, path: str) -> list[FieldError]:
    quantity = quantity_of(text)
    if not quantity.round_up(-3)[1]:
        return [_invalid(path, str(quantity), "must be a whole number of milli CPUs")]
    return []


# --------------------------------------------------------------------------- VPA (CRD schema)

_CHANGE_REQUIREMENTS = (TARGET_HIGHER_THAN_REQUESTS, TARGET_LOWER_THAN_REQUESTS)
_CONTROLLED_VALUES = ("RequestsAndLimits", "RequestsOnly")
_SCHEMA_UPDATE_MODES = ("Off", "Initial", "Recreate", "InPlaceOrRecreate", "InPlace", "Auto")


def validate_vertical_pod_autoscaler_schema(vpa: VerticalPodAutoscaler) -> list[FieldError]:
    """The VPA CRD's structural constraints, as the API server reports them.

    Required fields (``spec.targetRef`` with ``kind`` and ``name``, recommender ``name``,
    eviction requirement fields, ``startupBoost.cpu.type``), enums (update mode, container mode,
    controlled values, change requirement, boost type), minimums (``evictAfterOOMSeconds``,
    memory aggregation interval and count) and the two CEL rules of ``startupBoost.cpu``.
    """
    errors: list[FieldError] = []
    spec = vpa.spec
    if spec.target_ref is None:
        errors.append(_required("spec.targetRef"))
    else:
        for name in ("kind", "name"):
            if name not in spec.target_ref.model_fields_set:
                errors.append(_required(f"spec.targetRef.{name}"))
    for i, recommender in enumerate(spec.recommenders):
        if "name" not in recommender.model_fields_set:
            errors.append(_required(f"spec.recommenders[{i}].name"))
    if spec.update_policy is not None:
        errors += _schema_update_policy_errors(spec.update_policy)
    if spec.startup_boost is not None:
        errors += _schema_startup_boost_errors(spec.startup_boost, "spec.startupBoost")
    for i, policy in enumerate(_container_policies(vpa)):
        path = f"spec.resourcePolicy.containerPolicies[{i}]"
        if policy.mode is not None and policy.mode not in _SCALING_MODES:
            errors.append(_not_supported(f"{path}.mode", policy.mode, _SCALING_MODES))
        if (
            policy.controlled_values is not None
            and policy.controlled_values not in _CONTROLLED_VALUES
        ):
            errors.append(
                _not_supported(
                    f"{path}.controlledValues", policy.controlled_values, _CONTROLLED_VALUES
                )
            )
        for name, value in (
            ("memoryAggregationIntervalCount", policy.memory_aggregation_interval_count),
            ("memoryAggregationIntervalSeconds", policy.memory_aggregation_interval_seconds),
        ):
            errors += _schema_minimum_errors(f"{path}.{name}", value, 1)
        if policy.startup_boost is not None:
            errors += _schema_startup_boost_errors(policy.startup_boost, f"{path}.startupBoost")
    return errors


def _schema_minimum_errors(path: str, value: int | None, minimum: int) -> list[FieldError]:
    if value is None or value >= minimum:
        return []
    return [_invalid(path, value, f"{path} in body should be greater than or equal to {minimum}")]


def _schema_update_policy_errors(policy: PodUpdatePolicy) -> list[FieldError]:
    path = "spec.updatePolicy"
    errors: list[FieldError] = []
    if policy.update_mode is not None and policy.update_mode not in _SCHEMA_UPDATE_MODES:
        errors.append(
            _not_supported(f"{path}.updateMode", policy.update_mode, _SCHEMA_UPDATE_MODES)
        )
    errors += _schema_minimum_errors(
        f"{path}.evictAfterOOMSeconds", policy.evict_after_oom_seconds, 1
    )
    for i, requirement in enumerate(policy.eviction_requirements):
        item = f"{path}.evictionRequirements[{i}]"
        fields = requirement.model_fields_set
        if "change_requirement" not in fields:
            errors.append(_required(f"{item}.changeRequirement"))
        elif requirement.change_requirement not in _CHANGE_REQUIREMENTS:
            errors.append(
                _not_supported(
                    f"{item}.changeRequirement",
                    requirement.change_requirement,
                    _CHANGE_REQUIREMENTS,
                )
            )
        if "resources" not in fields:
            errors.append(_required(f"{item}.resources"))
    return errors


def _schema_startup_boost_errors(boost: StartupBoost, path: str) -> list[FieldError]:
    cpu = boost.cpu
    if cpu is None:
        return []
    cpu_path = f"{path}.cpu"
    errors: list[FieldError] = []
    if "type" not in cpu.model_fields_set:
        errors.append(_required(f"{cpu_path}.type"))
    elif cpu.type not in _BOOST_TYPES:
        errors.append(_not_supported(f"{cpu_path}.type", cpu.type, _BOOST_TYPES))
    if (cpu.type == "Factor") != (cpu.factor is not None):
        errors.append(
            _invalid(
                cpu_path,
                Verbatim("object"),
                "factor is required when type is Factor and forbidden otherwise",
            )
        )
    if (cpu.type == "Quantity") != (cpu.quantity is not None):
        errors.append(
            _invalid(
                cpu_path,
                Verbatim("object"),
                "quantity is required when type is Quantity and forbidden otherwise",
            )
        )
    return errors
