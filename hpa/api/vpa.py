"""``autoscaling.k8s.io/v1`` VerticalPodAutoscaler and VerticalPodAutoscalerCheckpoint.

Upstream counterpart: kubernetes/autoscaler
``vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1/types.go`` and the generated CRD
``deploy/vpa-v1-crd-gen.yaml`` (recent master: update modes up to ``InPlace``, per-VPA
configuration - ``evictAfterOOMSeconds``, ``oomBumpUpRatio``, ``oomMinBumpUp``, memory aggregation
intervals, target percentiles - and ``startupBoost``). The model's field set equals the CRD's
``openAPIV3Schema`` properties (a test checks it).

``autoscaling.k8s.io/v1beta2`` objects (e.g. upstream's ``redis.yaml`` example) have the same shape
for every field they use and parse through these models, keeping their ``apiVersion``. Fields that
the CRD does not define (e.g. ``spec.podLabelSelector`` of the ``hamster-labelselectors.yaml``
example) are kept as unknown fields.

Enumerated strings (update mode, container scaling mode, controlled values, ...) are plain
``str``; :mod:`hpa.api.validation` checks them like the admission controller does.

Deliberate deviations: none.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.autoscaling_v2 import CrossVersionObjectReference
from hpa.api.base import KubeModel
from hpa.api.meta import ListMeta, ObjectMeta, TypeMeta
from hpa.api.types import Quantity, ResourceList, Time

__all__ = [
    "ContainerResourcePolicy",
    "EvictionRequirement",
    "GenericStartupBoost",
    "HistogramCheckpoint",
    "PodResourcePolicy",
    "PodUpdatePolicy",
    "RecommendedContainerResources",
    "RecommendedPodResources",
    "StartupBoost",
    "VerticalPodAutoscaler",
    "VerticalPodAutoscalerCheckpoint",
    "VerticalPodAutoscalerCheckpointList",
    "VerticalPodAutoscalerCheckpointSpec",
    "VerticalPodAutoscalerCheckpointStatus",
    "VerticalPodAutoscalerCondition",
    "VerticalPodAutoscalerList",
    "VerticalPodAutoscalerRecommenderSelector",
    "VerticalPodAutoscalerSpec",
    "VerticalPodAutoscalerStatus",
]


class EvictionRequirement(KubeModel):
    """``EvictionRequirement``: evict only when the target moved in this direction."""

    resources: list[str] = Field(default_factory=list)
    change_requirement: str = ""


class PodUpdatePolicy(KubeModel):
    """``PodUpdatePolicy``."""

    update_mode: str | None = None
    min_replicas: int | None = None
    eviction_requirements: list[EvictionRequirement] = Field(default_factory=list)
    evict_after_oom_seconds: int | None = Field(default=None, alias="evictAfterOOMSeconds")


class GenericStartupBoost(KubeModel):
    """``GenericStartupBoost``: ``type`` is ``Factor`` or ``Quantity``."""

    type: str = ""
    factor: int | None = None
    quantity: Quantity | None = None
    duration_seconds: int | None = None


class StartupBoost(KubeModel):
    """``StartupBoost``."""

    cpu: GenericStartupBoost | None = None


class ContainerResourcePolicy(KubeModel):
    """``ContainerResourcePolicy``: per container (or ``*``) bounds and controls.

    ``controlled_resources`` is ``None`` when absent (upstream default: cpu and memory), which is
    not the same as an empty list (control nothing).
    """

    container_name: str = ""
    mode: str | None = None
    min_allowed: ResourceList = Field(default_factory=dict)
    max_allowed: ResourceList = Field(default_factory=dict)
    controlled_resources: list[str] | None = None
    controlled_values: str | None = None
    oom_bump_up_ratio: Quantity | None = None
    oom_min_bump_up: Quantity | None = None
    memory_aggregation_interval_count: int | None = None
    memory_aggregation_interval_seconds: int | None = None
    target_cpu_percentile: Quantity | None = Field(default=None, alias="targetCPUPercentile")
    target_memory_percentile: Quantity | None = None
    startup_boost: StartupBoost | None = None


class PodResourcePolicy(KubeModel):
    """``PodResourcePolicy``."""

    container_policies: list[ContainerResourcePolicy] = Field(default_factory=list)


class VerticalPodAutoscalerRecommenderSelector(KubeModel):
    """``VerticalPodAutoscalerRecommenderSelector``: which recommender serves this VPA."""

    name: str = ""


class VerticalPodAutoscalerSpec(KubeModel):
    """``VerticalPodAutoscalerSpec``."""

    target_ref: CrossVersionObjectReference | None = None
    update_policy: PodUpdatePolicy | None = None
    resource_policy: PodResourcePolicy | None = None
    recommenders: list[VerticalPodAutoscalerRecommenderSelector] = Field(default_factory=list)
    startup_boost: StartupBoost | None = None


class RecommendedContainerResources(KubeModel):
    """``RecommendedContainerResources``."""

    container_name: str = ""
    target: ResourceList = Field(default_factory=dict)
    lower_bound: ResourceList = Field(default_factory=dict)
    upper_bound: ResourceList = Field(default_factory=dict)
    uncapped_target: ResourceList = Field(default_factory=dict)


class RecommendedPodResources(KubeModel):
    """``RecommendedPodResources``."""

    container_recommendations: list[RecommendedContainerResources] = Field(default_factory=list)


class VerticalPodAutoscalerCondition(KubeModel):
    """``VerticalPodAutoscalerCondition`` (``RecommendationProvided``, ``LowConfidence``, ...)."""

    type: str = ""
    status: str = ""
    observed_generation: int | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class VerticalPodAutoscalerStatus(KubeModel):
    """``VerticalPodAutoscalerStatus``."""

    observed_generation: int | None = None
    recommendation: RecommendedPodResources | None = None
    conditions: list[VerticalPodAutoscalerCondition] = Field(default_factory=list)


class VerticalPodAutoscaler(TypeMeta):
    """``autoscaling.k8s.io/v1`` ``VerticalPodAutoscaler``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: VerticalPodAutoscalerSpec = Field(default_factory=VerticalPodAutoscalerSpec)
    status: VerticalPodAutoscalerStatus = Field(default_factory=VerticalPodAutoscalerStatus)


class VerticalPodAutoscalerList(TypeMeta):
    """``VerticalPodAutoscalerList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[VerticalPodAutoscaler] = Field(default_factory=list)


class HistogramCheckpoint(KubeModel):
    """``HistogramCheckpoint``: bucket index (as a string key) to weight, plus the reference."""

    reference_timestamp: Time | None = None
    bucket_weights: dict[str, int] = Field(default_factory=dict)
    total_weight: float = 0.0


class VerticalPodAutoscalerCheckpointSpec(KubeModel):
    """``VerticalPodAutoscalerCheckpointSpec``."""

    vpa_object_name: str = ""
    container_name: str = ""


class VerticalPodAutoscalerCheckpointStatus(KubeModel):
    """``VerticalPodAutoscalerCheckpointStatus``."""

    last_update_time: Time | None = None
    version: str = ""
    cpu_histogram: HistogramCheckpoint = Field(default_factory=HistogramCheckpoint)
    memory_histogram: HistogramCheckpoint = Field(default_factory=HistogramCheckpoint)
    first_sample_start: Time | None = None
    last_sample_start: Time | None = None
    total_samples_count: int = 0


class VerticalPodAutoscalerCheckpoint(TypeMeta):
    """``autoscaling.k8s.io/v1`` ``VerticalPodAutoscalerCheckpoint``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: VerticalPodAutoscalerCheckpointSpec = Field(
        default_factory=VerticalPodAutoscalerCheckpointSpec
    )
    status: VerticalPodAutoscalerCheckpointStatus = Field(
        default_factory=VerticalPodAutoscalerCheckpointStatus
    )


class VerticalPodAutoscalerCheckpointList(TypeMeta):
    """``VerticalPodAutoscalerCheckpointList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[VerticalPodAutoscalerCheckpoint] = Field(default_factory=list)
