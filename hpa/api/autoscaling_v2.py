"""``autoscaling/v2`` HorizontalPodAutoscaler, in full.

Upstream counterpart: ``k8s.io/api/autoscaling/v2/types.go`` (``HorizontalPodAutoscaler``, its
spec with the five metric sources and ``MetricTarget``, ``HorizontalPodAutoscalerBehavior`` with
``HPAScalingRules`` - policies, ``selectPolicy``, ``stabilizationWindowSeconds`` and the
per-direction ``tolerance`` of KEP-4951 - and the status with ``currentMetrics`` and conditions).

Enumerated strings (metric source type, target type, policy type, select policy) are plain ``str``
here, exactly like Go's string types: parsing never rejects a value, and
:mod:`hpa.api.validation` reports unsupported ones with upstream's messages. The serialized
``autoscaling/v2beta2`` test object has the same metric shapes and parses through these models;
its pre-release ``spec.constraints`` block is kept as an unknown field.

Deliberate deviations: none.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from hpa.api.base import KubeModel
from hpa.api.meta import LabelSelector, ListMeta, ObjectMeta, TypeMeta
from hpa.api.types import Quantity, Time

__all__ = [
    "ContainerResourceMetricSource",
    "ContainerResourceMetricStatus",
    "CrossVersionObjectReference",
    "ExternalMetricSource",
    "ExternalMetricStatus",
    "HPAScalingPolicy",
    "HPAScalingRules",
    "HorizontalPodAutoscaler",
    "HorizontalPodAutoscalerBehavior",
    "HorizontalPodAutoscalerCondition",
    "HorizontalPodAutoscalerList",
    "HorizontalPodAutoscalerSpec",
    "HorizontalPodAutoscalerStatus",
    "MetricIdentifier",
    "MetricSpec",
    "MetricStatus",
    "MetricTarget",
    "MetricValueStatus",
    "ObjectMetricSource",
    "ObjectMetricStatus",
    "PodsMetricSource",
    "PodsMetricStatus",
    "ResourceMetricSource",
    "ResourceMetricStatus",
]


class CrossVersionObjectReference(KubeModel):
    """``CrossVersionObjectReference``: the scale target or a described object."""

    kind: str = ""
    name: str = ""
    api_version: str = ""


class MetricIdentifier(KubeModel):
    """``MetricIdentifier``: a metric name and an optional label selector."""

    name: str = ""
    selector: LabelSelector | None = None


class MetricTarget(KubeModel):
    """``MetricTarget``: ``type`` is ``Utilization``, ``Value`` or ``AverageValue``."""

    type: str = ""
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


class MetricValueStatus(KubeModel):
    """``MetricValueStatus``: the current value of a metric."""

    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


class ObjectMetricSource(KubeModel):
    """``ObjectMetricSource``: a metric describing one Kubernetes object."""

    described_object: CrossVersionObjectReference = Field(
        default_factory=CrossVersionObjectReference
    )
    target: MetricTarget = Field(default_factory=MetricTarget)
    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)


class PodsMetricSource(KubeModel):
    """``PodsMetricSource``: a per-pod metric, averaged."""

    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)
    target: MetricTarget = Field(default_factory=MetricTarget)


class ResourceMetricSource(KubeModel):
    """``ResourceMetricSource``: a resource (cpu, memory) of each pod."""

    name: str = ""
    target: MetricTarget = Field(default_factory=MetricTarget)


class ContainerResourceMetricSource(KubeModel):
    """``ContainerResourceMetricSource``: a resource of one named container in each pod."""

    name: str = ""
    target: MetricTarget = Field(default_factory=MetricTarget)
    container: str = ""


class ExternalMetricSource(KubeModel):
    """``ExternalMetricSource``: a metric not tied to any Kubernetes object."""

    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)
    target: MetricTarget = Field(default_factory=MetricTarget)


class MetricSpec(KubeModel):
    """``MetricSpec``: ``type`` names which one of the five sources is set."""

    type: str = ""
    object: ObjectMetricSource | None = None
    pods: PodsMetricSource | None = None
    resource: ResourceMetricSource | None = None
    container_resource: ContainerResourceMetricSource | None = None
    external: ExternalMetricSource | None = None


class HPAScalingPolicy(KubeModel):
    """``HPAScalingPolicy``: ``type`` is ``Pods`` or ``Percent``."""

    type: str = ""
    value: int = 0
    period_seconds: int = 0


class HPAScalingRules(KubeModel):
    """``HPAScalingRules``: the behavior of one scaling direction."""

    stabilization_window_seconds: int | None = None
    select_policy: str | None = None
    policies: list[HPAScalingPolicy] = Field(default_factory=list)
    tolerance: Quantity | None = None


class HorizontalPodAutoscalerBehavior(KubeModel):
    """``HorizontalPodAutoscalerBehavior``."""

    scale_up: HPAScalingRules | None = None
    scale_down: HPAScalingRules | None = None


class HorizontalPodAutoscalerSpec(KubeModel):
    """``HorizontalPodAutoscalerSpec``."""

    scale_target_ref: CrossVersionObjectReference = Field(
        default_factory=CrossVersionObjectReference
    )
    min_replicas: int | None = None
    max_replicas: int = 0
    metrics: list[MetricSpec] = Field(default_factory=list)
    behavior: HorizontalPodAutoscalerBehavior | None = None


class ObjectMetricStatus(KubeModel):
    """``ObjectMetricStatus``."""

    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)
    current: MetricValueStatus = Field(default_factory=MetricValueStatus)
    described_object: CrossVersionObjectReference = Field(
        default_factory=CrossVersionObjectReference
    )


class PodsMetricStatus(KubeModel):
    """``PodsMetricStatus``."""

    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)
    current: MetricValueStatus = Field(default_factory=MetricValueStatus)


class ResourceMetricStatus(KubeModel):
    """``ResourceMetricStatus``."""

    name: str = ""
    current: MetricValueStatus = Field(default_factory=MetricValueStatus)


class ContainerResourceMetricStatus(KubeModel):
    """``ContainerResourceMetricStatus``."""

    name: str = ""
    current: MetricValueStatus = Field(default_factory=MetricValueStatus)
    container: str = ""


class ExternalMetricStatus(KubeModel):
    """``ExternalMetricStatus``."""

    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)
    current: MetricValueStatus = Field(default_factory=MetricValueStatus)


class MetricStatus(KubeModel):
    """``MetricStatus``: one entry of ``status.currentMetrics``."""

    type: str = ""
    object: ObjectMetricStatus | None = None
    pods: PodsMetricStatus | None = None
    resource: ResourceMetricStatus | None = None
    container_resource: ContainerResourceMetricStatus | None = None
    external: ExternalMetricStatus | None = None


class HorizontalPodAutoscalerCondition(KubeModel):
    """``HorizontalPodAutoscalerCondition`` (``AbleToScale``, ``ScalingActive``, ...)."""

    type: str = ""
    status: str = ""
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class HorizontalPodAutoscalerStatus(KubeModel):
    """``HorizontalPodAutoscalerStatus``."""

    observed_generation: int | None = None
    last_scale_time: Time | None = None
    current_replicas: int = 0
    desired_replicas: int = 0
    current_metrics: list[MetricStatus] = Field(default_factory=list)
    conditions: list[HorizontalPodAutoscalerCondition] = Field(default_factory=list)

    @field_validator("current_metrics", mode="before")
    @classmethod
    def _nil_slice(cls, value: Any) -> Any:
        """``json:"currentMetrics"`` has no ``omitempty``: the API server sends the nil slice of
        every new HPA as ``null`` (found in the lab); it reads as ``[]``."""
        return [] if value is None else value


class HorizontalPodAutoscaler(TypeMeta):
    """``autoscaling/v2`` ``HorizontalPodAutoscaler``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: HorizontalPodAutoscalerSpec = Field(default_factory=HorizontalPodAutoscalerSpec)
    status: HorizontalPodAutoscalerStatus = Field(default_factory=HorizontalPodAutoscalerStatus)


class HorizontalPodAutoscalerList(TypeMeta):
    """``HorizontalPodAutoscalerList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[HorizontalPodAutoscaler] = Field(default_factory=list)
