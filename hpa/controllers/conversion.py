"""Conversions between the boundary models (``hpa.api``, ``hpa.kube`` records) and core values.

Upstream counterpart: none as such; upstream's controller works on the typed API objects
directly (``autoscalingv2.HorizontalPodAutoscaler``, ``v1.Pod``, ``autoscalingv1.Scale``). These
functions are the explicit model -> core (and core status -> JSON) steps ``ARCHITECTURE.md``
asks for. Quantities become exact milli-units with ``MilliValue()`` semantics (rounded up);
a behavior ``tolerance`` becomes a float with ``AsApproximateFloat64``, as upstream reads it.

The purely model -> core functions (:func:`spec_from_model`, :func:`status_from_model`,
:func:`label_selector_from_model`) belong next to the models in ``hpa.api`` eventually; they
live here until that package's owner takes them.

Deliberate deviations:

* a ``MetricTarget.type`` outside the three known values (API validation rejects it) is read
  from the fields that are set (value -> ``Value``, averageValue -> ``AverageValue``, else
  ``Utilization``) instead of failing the whole HPA;
* ``status.currentMetrics`` values are written with ``DecimalSI`` milli quantities
  (``resource.NewMilliQuantity(v, resource.DecimalSI)``, as upstream) in canonical form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpa.api.autoscaling_v2 import (
    HorizontalPodAutoscaler,
)
from hpa.api.autoscaling_v2 import (
    HorizontalPodAutoscalerSpec as SpecModel,
)
from hpa.api.autoscaling_v2 import (
    HorizontalPodAutoscalerStatus as StatusModel,
)
from hpa.api.autoscaling_v2 import (
    HPAScalingRules as RulesModel,
)
from hpa.api.autoscaling_v2 import (
    MetricIdentifier as IdentifierModel,
)
from hpa.api.autoscaling_v2 import (
    MetricSpec as MetricSpecModel,
)
from hpa.api.autoscaling_v2 import (
    MetricStatus as MetricStatusModel,
)
from hpa.api.autoscaling_v2 import (
    MetricTarget as TargetModel,
)
from hpa.api.autoscaling_v2 import (
    MetricValueStatus as ValueStatusModel,
)
from hpa.api.meta import LabelSelector as LabelSelectorModel
from hpa.api.types import format_time
from hpa.controllers.ports import HorizontalPodAutoscalerObject
from hpa.core.conditions import ConditionStatus, HorizontalPodAutoscalerCondition
from hpa.core.decision import (
    CurrentScale,
    HorizontalPodAutoscalerStatus,
    MetricStatus,
    MetricValueStatus,
)
from hpa.core.quantity import Quantity, parse_quantity
from hpa.core.selector import Selector, selector_from_label_selector
from hpa.core.spec import (
    ContainerResourceMetricSource,
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    LabelSelector,
    LabelSelectorRequirement,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
    ScalingPolicy,
    ScalingPolicySelect,
    ScalingPolicyType,
    ScalingRules,
)
from hpa.kube.scale import Scale

__all__ = [
    "current_scale",
    "hpa_from_dict",
    "label_selector_from_model",
    "label_selector_to_dict",
    "metric_selector",
    "spec_from_model",
    "status_from_model",
    "status_to_dict",
]


# ------------------------------------------------------------------------- model -> core


def _milli(text: str | None) -> int | None:
    return None if text is None else parse_quantity(text).milli_value()


def label_selector_from_model(model: LabelSelectorModel | None) -> LabelSelector | None:
    """``metav1.LabelSelector`` -> core (match labels sorted by key)."""
    if model is None:
        return None
    return LabelSelector(
        match_labels=tuple(sorted(model.match_labels.items())),
        match_expressions=tuple(
            LabelSelectorRequirement(req.key, req.operator, tuple(req.values))
            for req in model.match_expressions
        ),
    )


def _identifier(model: IdentifierModel) -> MetricIdentifier:
    return MetricIdentifier(model.name, label_selector_from_model(model.selector))


def _target(model: TargetModel) -> MetricTarget:
    try:
        kind = MetricTargetType(model.type)
    except ValueError:
        if model.value is not None:
            kind = MetricTargetType.VALUE
        elif model.average_value is not None:
            kind = MetricTargetType.AVERAGE_VALUE
        else:
            kind = MetricTargetType.UTILIZATION
    return MetricTarget(
        type=kind,
        value_milli=_milli(model.value),
        average_value_milli=_milli(model.average_value),
        average_utilization=model.average_utilization,
    )


def _reference(model: Any) -> CrossVersionObjectReference:
    return CrossVersionObjectReference(
        kind=model.kind, name=model.name, api_version=model.api_version
    )


def _metric_spec(model: MetricSpecModel) -> MetricSpec:
    return MetricSpec(
        type=model.type,
        resource=None
        if model.resource is None
        else ResourceMetricSource(model.resource.name, _target(model.resource.target)),
        container_resource=None
        if model.container_resource is None
        else ContainerResourceMetricSource(
            model.container_resource.name,
            model.container_resource.container,
            _target(model.container_resource.target),
        ),
        pods=None
        if model.pods is None
        else PodsMetricSource(_identifier(model.pods.metric), _target(model.pods.target)),
        object=None
        if model.object is None
        else ObjectMetricSource(
            _reference(model.object.described_object),
            _identifier(model.object.metric),
            _target(model.object.target),
        ),
        external=None
        if model.external is None
        else ExternalMetricSource(
            _identifier(model.external.metric), _target(model.external.target)
        ),
    )


def _rules(model: RulesModel | None) -> ScalingRules | None:
    if model is None:
        return None
    policies: tuple[ScalingPolicy, ...] | None = None
    if "policies" in model.model_fields_set:
        policies = tuple(
            ScalingPolicy(ScalingPolicyType(p.type), p.value, p.period_seconds)
            for p in model.policies
        )
    return ScalingRules(
        stabilization_window_seconds=model.stabilization_window_seconds,
        select_policy=None
        if model.select_policy is None
        else ScalingPolicySelect(model.select_policy),
        policies=policies,
        tolerance=None
        if model.tolerance is None
        else parse_quantity(model.tolerance).as_approximate_float64(),
    )


def spec_from_model(model: SpecModel) -> HorizontalPodAutoscalerSpec:
    """``autoscalingv2.HorizontalPodAutoscalerSpec`` -> core (not defaulted)."""
    behavior = None
    if model.behavior is not None:
        behavior = HorizontalPodAutoscalerBehavior(
            scale_up=_rules(model.behavior.scale_up),
            scale_down=_rules(model.behavior.scale_down),
        )
    return HorizontalPodAutoscalerSpec(
        scale_target_ref=_reference(model.scale_target_ref),
        max_replicas=model.max_replicas,
        min_replicas=model.min_replicas,
        metrics=tuple(_metric_spec(metric) for metric in model.metrics),
        behavior=behavior,
    )


def _value_status(model: ValueStatusModel) -> MetricValueStatus:
    return MetricValueStatus(
        value_milli=_milli(model.value),
        average_value_milli=_milli(model.average_value),
        average_utilization=model.average_utilization,
    )


def _metric_status(model: MetricStatusModel) -> MetricStatus:
    if model.resource is not None:
        return MetricStatus(
            type=model.type,
            name=model.resource.name,
            current=_value_status(model.resource.current),
        )
    if model.container_resource is not None:
        source = model.container_resource
        return MetricStatus(
            type=model.type,
            name=source.name,
            container=source.container,
            current=_value_status(source.current),
        )
    if model.pods is not None:
        return MetricStatus(
            type=model.type,
            metric=_identifier(model.pods.metric),
            current=_value_status(model.pods.current),
        )
    if model.object is not None:
        described = model.object.described_object
        return MetricStatus(
            type=model.type,
            metric=_identifier(model.object.metric),
            described_object=_reference(described) if described.kind or described.name else None,
            current=_value_status(model.object.current),
        )
    if model.external is not None:
        return MetricStatus(
            type=model.type,
            metric=_identifier(model.external.metric),
            current=_value_status(model.external.current),
        )
    return MetricStatus(type=model.type)


def status_from_model(model: StatusModel) -> HorizontalPodAutoscalerStatus:
    """``autoscalingv2.HorizontalPodAutoscalerStatus`` -> core (empty metrics read as ``None``)."""
    conditions = []
    for condition in model.conditions:
        try:
            status = ConditionStatus(condition.status)
        except ValueError:
            status = ConditionStatus.UNKNOWN
        conditions.append(
            HorizontalPodAutoscalerCondition(
                type=condition.type,
                status=status,
                reason=condition.reason,
                message=condition.message,
                last_transition_time=condition.last_transition_time,
            )
        )
    return HorizontalPodAutoscalerStatus(
        current_replicas=model.current_replicas,
        desired_replicas=model.desired_replicas,
        last_scale_time=model.last_scale_time,
        current_metrics=tuple(_metric_status(m) for m in model.current_metrics) or None,
        conditions=tuple(conditions),
    )


def hpa_from_dict(data: Mapping[str, Any]) -> HorizontalPodAutoscalerObject:
    """An ``autoscaling/v2`` HPA as JSON (informer cache, API answer) -> the controller's view.

    Raises ``pydantic.ValidationError`` or ``QuantityError`` / ``ValueError`` for an object the
    API server would not have accepted."""
    model = HorizontalPodAutoscaler.from_dict(data)
    meta = model.metadata
    return HorizontalPodAutoscalerObject(
        namespace=meta.namespace,
        name=meta.name,
        spec=spec_from_model(model.spec),
        status=status_from_model(model.status),
        uid=meta.uid,
        resource_version=meta.resource_version,
        generation=meta.generation,
        observed_generation=model.status.observed_generation,
        annotations=dict(meta.annotations),
    )


def current_scale(scale: Scale) -> CurrentScale:
    """The scale as the decision reads it."""
    return CurrentScale(
        spec_replicas=scale.spec_replicas,
        status_replicas=scale.status_replicas,
        selector=scale.selector,
    )


# ----------------------------------------------------------------------------- selectors


def label_selector_to_dict(selector: LabelSelector) -> dict[str, Any]:
    """Core ``LabelSelector`` -> its JSON form."""
    data: dict[str, Any] = {}
    if selector.match_labels:
        data["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        data["matchExpressions"] = [
            {"key": req.key, "operator": req.operator, "values": list(req.values)}
            for req in selector.match_expressions
        ]
    return data


def metric_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector`` of a metric's selector (``SelectorError`` when
    invalid). ``None`` is ``labels.Nothing()``, whose string form, like ``Everything()``'s, is
    empty."""
    if selector is None:
        return selector_from_label_selector(None)
    return selector_from_label_selector(label_selector_to_dict(selector))


# ---------------------------------------------------------------------------- core -> JSON


def _quantity(value_milli: int) -> str:
    return str(Quantity.from_milli(value_milli))


def _value_status_dict(current: MetricValueStatus) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if current.value_milli is not None:
        data["value"] = _quantity(current.value_milli)
    if current.average_value_milli is not None:
        data["averageValue"] = _quantity(current.average_value_milli)
    if current.average_utilization is not None:
        data["averageUtilization"] = current.average_utilization
    return data


def _identifier_dict(identifier: MetricIdentifier | None) -> dict[str, Any]:
    if identifier is None:
        return {"name": ""}
    data: dict[str, Any] = {"name": identifier.name}
    if identifier.selector is not None:
        data["selector"] = label_selector_to_dict(identifier.selector)
    return data


def _metric_status_dict(status: MetricStatus) -> dict[str, Any]:
    current = _value_status_dict(status.current)
    match status.type:
        case "Resource":
            return {"type": status.type, "resource": {"name": status.name, "current": current}}
        case "ContainerResource":
            return {
                "type": status.type,
                "containerResource": {
                    "name": status.name,
                    "container": status.container or "",
                    "current": current,
                },
            }
        case "Pods":
            return {
                "type": status.type,
                "pods": {"metric": _identifier_dict(status.metric), "current": current},
            }
        case "Object":
            described = status.described_object
            return {
                "type": status.type,
                "object": {
                    "metric": _identifier_dict(status.metric),
                    "current": current,
                    "describedObject": {}
                    if described is None
                    else {
                        "kind": described.kind,
                        "name": described.name,
                        "apiVersion": described.api_version,
                    },
                },
            }
        case "External":
            return {
                "type": status.type,
                "external": {"metric": _identifier_dict(status.metric), "current": current},
            }
    return {"type": status.type}


def status_to_dict(
    status: HorizontalPodAutoscalerStatus, *, observed_generation: int | None = None
) -> dict[str, Any]:
    """Core status -> the ``status`` JSON of an ``autoscaling/v2`` HPA."""
    data: dict[str, Any] = {}
    if observed_generation is not None:
        data["observedGeneration"] = observed_generation
    if status.last_scale_time is not None:
        data["lastScaleTime"] = format_time(status.last_scale_time)
    data["currentReplicas"] = status.current_replicas
    data["desiredReplicas"] = status.desired_replicas
    if status.current_metrics:
        data["currentMetrics"] = [_metric_status_dict(m) for m in status.current_metrics]
    if status.conditions:
        data["conditions"] = [
            {
                "type": condition.type,
                "status": str(condition.status),
                "lastTransitionTime": None
                if condition.last_transition_time is None
                else format_time(condition.last_transition_time),
                "reason": condition.reason,
                "message": condition.message,
            }
            for condition in status.conditions
        ]
    return data
