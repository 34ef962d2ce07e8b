"""``autoscaling/v1``: the Scale subresource and the v1 HorizontalPodAutoscaler.

Upstream counterpart: ``k8s.io/api/autoscaling/v1/types.go`` (``Scale``, ``ScaleSpec``,
``ScaleStatus``, ``HorizontalPodAutoscaler`` with ``targetCPUUtilizationPercentage``).

The v1 HorizontalPodAutoscaler is modelled so that v1 objects (and the upstream v1 serialization
fixture) parse and write back without loss; the controller itself works on ``autoscaling/v2``.
The multi-metric v1 annotations (``autoscaling.alpha.kubernetes.io/...``) stay plain annotations.

Deliberate deviations: none.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.autoscaling_v2 import CrossVersionObjectReference
from hpa.api.base import KubeModel
from hpa.api.meta import ObjectMeta, TypeMeta
from hpa.api.types import Time

__all__ = [
    "HorizontalPodAutoscalerV1",
    "HorizontalPodAutoscalerV1Spec",
    "HorizontalPodAutoscalerV1Status",
    "Scale",
    "ScaleSpec",
    "ScaleStatus",
]


class ScaleSpec(KubeModel):
    """``ScaleSpec``: the desired replica count."""

    replicas: int = 0


class ScaleStatus(KubeModel):
    """``ScaleStatus``: the observed replica count and the pod selector in string form."""

    replicas: int = 0
    selector: str = ""


class Scale(TypeMeta):
    """``autoscaling/v1`` ``Scale`` (the ``/scale`` subresource of any scalable resource)."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ScaleSpec = Field(default_factory=ScaleSpec)
    status: ScaleStatus = Field(default_factory=ScaleStatus)


class HorizontalPodAutoscalerV1Spec(KubeModel):
    """``autoscaling/v1`` ``HorizontalPodAutoscalerSpec``."""

    scale_target_ref: CrossVersionObjectReference = Field(
        default_factory=CrossVersionObjectReference
    )
    min_replicas: int | None = None
    max_replicas: int = 0
    target_cpu_utilization_percentage: int | None = Field(
        default=None, alias="targetCPUUtilizationPercentage"
    )


class HorizontalPodAutoscalerV1Status(KubeModel):
    """``autoscaling/v1`` ``HorizontalPodAutoscalerStatus``."""

    observed_generation: int | None = None
    last_scale_time: Time | None = None
    current_replicas: int = 0
    desired_replicas: int = 0
    current_cpu_utilization_percentage: int | None = Field(
        default=None, alias="currentCPUUtilizationPercentage"
    )


class HorizontalPodAutoscalerV1(TypeMeta):
    """``autoscaling/v1`` ``HorizontalPodAutoscaler``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: HorizontalPodAutoscalerV1Spec = Field(default_factory=HorizontalPodAutoscalerV1Spec)
    status: HorizontalPodAutoscalerV1Status = Field(default_factory=HorizontalPodAutoscalerV1Status)
