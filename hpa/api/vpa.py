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

The functions at the end convert, once, between these models and the VPA model's core types
(:mod:`hpa.core.vpa`): the resource policy, checkpoints (``v3``: bucket indexes as JSON string keys,
``null`` times for Go's zero time) and recommendations. Quantities become integers as upstream
reads them: CPU with ``MilliValue`` and memory with ``Value`` (both round up a fraction).

Deliberate deviations: none.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field

from hpa.api.autoscaling_v2 import CrossVersionObjectReference
from hpa.api.base import KubeModel
from hpa.api.meta import ListMeta, ObjectMeta, TypeMeta
from hpa.api.types import Quantity, ResourceList, Time, quantity_of
from hpa.core.vpa import aggregation as core_aggregation
from hpa.core.vpa import amount as core_amount
from hpa.core.vpa import cluster as core_cluster
from hpa.core.vpa import histogram as core_histogram
from hpa.core.vpa import policy as core_policy
from hpa.core.vpa import recommender as core_recommender
from hpa.core.vpa import update as core_update
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND, ZERO_TIME_NS

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
    "checkpoint_status_from_core",
    "checkpoint_status_to_core",
    "conditions_from_core",
    "conditions_to_core",
    "eviction_requirements_to_core",
    "format_time_ns",
    "histogram_checkpoint_from_core",
    "histogram_checkpoint_to_core",
    "pod_resource_policy_to_core",
    "recommendation_from_core",
    "recommendation_to_core",
    "resources_from_core",
    "resources_to_core",
    "status_from_core",
    "time_from_ns",
    "time_to_ns",
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


# -- conversion to and from the VPA model (hpa.core.vpa) -----------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_to_ns(value: datetime | None) -> int:
    """A ``metav1.Time`` as nanoseconds since the Unix epoch; ``null`` is Go's zero time."""
    if value is None:
        return ZERO_TIME_NS
    return (value - _EPOCH) // timedelta(microseconds=1) * 1000


def time_from_ns(value_ns: int) -> datetime | None:
    """Nanoseconds as a ``metav1.Time`` (whole seconds, as Go writes it); Go's zero time is
    ``null``."""
    if value_ns == ZERO_TIME_NS:
        return None
    return _EPOCH + timedelta(seconds=value_ns // NANOSECONDS_PER_SECOND)


def resources_to_core(resources: ResourceList) -> core_amount.Resources:
    """CPU in millicores (``MilliValue``) and memory in bytes (``Value``); others ignored."""
    cpu = resources.get("cpu")
    memory = resources.get("memory")
    return core_amount.Resources(
        cpu=quantity_of(cpu).milli_value() if cpu is not None else None,
        memory=quantity_of(memory).value() if memory is not None else None,
    )


def resources_from_core(resources: core_amount.Resources) -> ResourceList:
    """Canonical quantities as upstream writes them (``core_amount.quantity_text``), cpu first."""
    out: ResourceList = {}
    if resources.cpu is not None:
        out["cpu"] = core_amount.quantity_text(core_amount.ResourceName.CPU, resources.cpu)
    if resources.memory is not None:
        out["memory"] = core_amount.quantity_text(core_amount.ResourceName.MEMORY, resources.memory)
    return out


def _container_policy_to_core(
    policy: ContainerResourcePolicy,
) -> core_policy.ContainerResourcePolicy:
    def ratio(value: Quantity | None) -> float | None:
        return None if value is None else quantity_of(value).milli_value() / 1000.0

    controlled = policy.controlled_resources
    return core_policy.ContainerResourcePolicy(
        container_name=policy.container_name,
        mode=core_policy.ContainerScalingMode(policy.mode) if policy.mode else None,
        min_allowed=resources_to_core(policy.min_allowed),
        max_allowed=resources_to_core(policy.max_allowed),
        controlled_resources=(
            None
            if controlled is None
            else frozenset(
                core_amount.ResourceName(r) for r in controlled if r in {"cpu", "memory"}
            )
        ),
        controlled_values=(
            core_policy.ContainerControlledValues(policy.controlled_values)
            if policy.controlled_values
            else None
        ),
        oom_bump_up_ratio=ratio(policy.oom_bump_up_ratio),
        oom_min_bump_up_bytes=ratio(policy.oom_min_bump_up),
        memory_aggregation_interval_seconds=policy.memory_aggregation_interval_seconds,
        memory_aggregation_interval_count=policy.memory_aggregation_interval_count,
        target_cpu_percentile=ratio(policy.target_cpu_percentile),
        target_memory_percentile=ratio(policy.target_memory_percentile),
    )


def eviction_requirements_to_core(
    policy: PodUpdatePolicy | None,
) -> tuple[core_update.EvictionRequirement, ...]:
    """``spec.updatePolicy.evictionRequirements`` for the updater's rules (none without an
    ``updatePolicy``)."""
    return tuple(
        core_update.EvictionRequirement(tuple(r.resources), r.change_requirement)
        for r in (policy.eviction_requirements if policy is not None else ())
    )


def pod_resource_policy_to_core(
    policy: PodResourcePolicy | None,
) -> core_policy.PodResourcePolicy | None:
    """``spec.resourcePolicy`` for the model. Expects a VPA that passed
    :mod:`hpa.api.validation` (enumerations are checked there)."""
    if policy is None:
        return None
    return core_policy.PodResourcePolicy(
        tuple(_container_policy_to_core(p) for p in policy.container_policies)
    )


def histogram_checkpoint_to_core(
    checkpoint: HistogramCheckpoint,
) -> core_histogram.HistogramCheckpoint:
    """Bucket indexes from their JSON string keys; a key that is not an integer is an error."""
    weights: dict[int, int] = {}
    for key, weight in checkpoint.bucket_weights.items():
        try:
            weights[int(key)] = weight
        except ValueError as err:
            raise ValueError(f"checkpoint bucket index {key!r} is not an integer") from err
    return core_histogram.HistogramCheckpoint(
        total_weight=checkpoint.total_weight,
        bucket_weights=weights,
        reference_timestamp_ns=time_to_ns(checkpoint.reference_timestamp),
    )


def histogram_checkpoint_from_core(
    checkpoint: core_histogram.HistogramCheckpoint,
) -> HistogramCheckpoint:
    return HistogramCheckpoint(
        reference_timestamp=time_from_ns(checkpoint.reference_timestamp_ns),
        bucket_weights={str(k): v for k, v in sorted(checkpoint.bucket_weights.items())},
        total_weight=checkpoint.total_weight,
    )


def checkpoint_status_to_core(
    status: VerticalPodAutoscalerCheckpointStatus,
) -> core_aggregation.CheckpointStatus:
    return core_aggregation.CheckpointStatus(
        version=status.version,
        last_update_time_ns=time_to_ns(status.last_update_time),
        first_sample_start_ns=time_to_ns(status.first_sample_start),
        last_sample_start_ns=time_to_ns(status.last_sample_start),
        total_samples_count=status.total_samples_count,
        cpu_histogram=histogram_checkpoint_to_core(status.cpu_histogram),
        memory_histogram=histogram_checkpoint_to_core(status.memory_histogram),
    )


def checkpoint_status_from_core(
    status: core_aggregation.CheckpointStatus,
) -> VerticalPodAutoscalerCheckpointStatus:
    return VerticalPodAutoscalerCheckpointStatus(
        last_update_time=time_from_ns(status.last_update_time_ns),
        version=status.version,
        cpu_histogram=histogram_checkpoint_from_core(status.cpu_histogram),
        memory_histogram=histogram_checkpoint_from_core(status.memory_histogram),
        first_sample_start=time_from_ns(status.first_sample_start_ns),
        last_sample_start=time_from_ns(status.last_sample_start_ns),
        total_samples_count=status.total_samples_count,
    )


def recommendation_from_core(
    recommendation: core_recommender.RecommendedPodResources,
) -> RecommendedPodResources:
    """``status.recommendation`` from the model's result."""
    return RecommendedPodResources(
        container_recommendations=[
            RecommendedContainerResources(
                container_name=r.container_name,
                target=resources_from_core(r.target),
                lower_bound=resources_from_core(r.lower_bound),
                upper_bound=resources_from_core(r.upper_bound),
                uncapped_target=resources_from_core(r.uncapped_target),
            )
            for r in recommendation.container_recommendations
        ]
    )


def recommendation_to_core(
    recommendation: RecommendedPodResources,
) -> tuple[core_recommender.RecommendedContainerResources, ...]:
    """``status.recommendation`` as the capping and admission code reads it."""
    return tuple(
        core_recommender.RecommendedContainerResources(
            container_name=r.container_name,
            target=resources_to_core(r.target),
            lower_bound=resources_to_core(r.lower_bound),
            upper_bound=resources_to_core(r.upper_bound),
            uncapped_target=resources_to_core(r.uncapped_target),
        )
        for r in recommendation.container_recommendations
    )


def conditions_to_core(
    conditions: list[VerticalPodAutoscalerCondition],
) -> tuple[core_cluster.VpaCondition, ...]:
    """``status.conditions`` as the model keeps them (transition times in nanoseconds)."""
    return tuple(
        core_cluster.VpaCondition(
            type=c.type,
            status=c.status,
            reason=c.reason,
            message=c.message,
            last_transition_time_ns=time_to_ns(c.last_transition_time),
        )
        for c in conditions
    )


def conditions_from_core(
    conditions: tuple[core_cluster.VpaCondition, ...] | list[core_cluster.VpaCondition],
) -> list[VerticalPodAutoscalerCondition]:
    return [
        VerticalPodAutoscalerCondition(
            type=c.type,
            status=c.status,
            reason=c.reason,
            message=c.message,
            last_transition_time=time_from_ns(c.last_transition_time_ns),
        )
        for c in conditions
    ]


def _container_recommendation(r: core_recommender.RecommendedContainerResources) -> dict[str, Any]:
    target = resources_from_core(r.target)
    return {
        "containerName": r.container_name,
        "target": target,
        "lowerBound": resources_from_core(r.lower_bound),
        "upperBound": resources_from_core(r.upper_bound),
        # the target before capping: usually the target itself
        "uncappedTarget": dict(target)
        if r.uncapped_target == r.target
        else resources_from_core(r.uncapped_target),
    }


def status_from_core(
    recommendation: tuple[core_recommender.RecommendedContainerResources, ...] | None,
    conditions: tuple[core_cluster.VpaCondition, ...] | list[core_cluster.VpaCondition],
    *,
    observed_generation: int | None,
) -> dict[str, Any]:
    """``Vpa.AsStatus``: the recommender's whole status of one VPA as the JSON of
    :class:`VerticalPodAutoscalerStatus` (built directly: it is written for every VPA whose
    recommendation moved, every pass)."""
    status: dict[str, Any] = {}
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    if recommendation is not None:
        status["recommendation"] = (
            {"containerRecommendations": [_container_recommendation(r) for r in recommendation]}
            if recommendation
            else {}
        )
    status["conditions"] = [
        {
            "type": c.type,
            "status": c.status,
            "lastTransitionTime": None
            if c.last_transition_time_ns == ZERO_TIME_NS
            else format_time_ns(c.last_transition_time_ns),
            **({"reason": c.reason} if c.reason else {}),
            **({"message": c.message} if c.message else {}),
        }
        for c in conditions
    ]
    return status


def format_time_ns(value_ns: int) -> str:
    """A ``metav1.Time`` in its wire form (whole seconds, ``Z``)."""
    moment = time_from_ns(value_ns)
    assert moment is not None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
