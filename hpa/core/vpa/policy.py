"""A VPA's resource policy as the model reads it: per-container bounds, controls and tuning.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1/types.go`` (``PodResourcePolicy``,
``ContainerResourcePolicy``, ``ContainerScalingMode``, ``ContainerControlledValues``) and
``pkg/utils/vpa/api.go`` (``GetContainerResourcePolicy``, ``GetContainerControlledValues``).
The per-VPA tuning fields are v1.8.1's ``PerVPAConfig`` ones (``oomBumpUpRatio``,
``oomMinBumpUp``, ``memoryAggregationIntervalSeconds``/``Count``) plus ``targetCPUPercentile`` and
``targetMemoryPercentile`` of upstream's main branch (kubernetes/autoscaler#10056: they override
the target percentile only, not the bounds).

The API models in :mod:`hpa.api.vpa` convert to these types once, at the edge
(:func:`hpa.api.vpa.pod_resource_policy_to_core`).

Deliberate deviations: none.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hpa.core.vpa.amount import NO_RESOURCES, ResourceName, Resources

__all__ = [
    "DEFAULT_CONTAINER_RESOURCE_POLICY",
    "DEFAULT_CONTROLLED_RESOURCES",
    "ContainerControlledValues",
    "ContainerResourcePolicy",
    "ContainerScalingMode",
    "PodResourcePolicy",
    "get_container_controlled_values",
    "get_container_resource_policy",
]

DEFAULT_CONTAINER_RESOURCE_POLICY = "*"
"""The ``containerName`` of the policy that applies to containers without their own."""

DEFAULT_CONTROLLED_RESOURCES = frozenset({ResourceName.CPU, ResourceName.MEMORY})


class ContainerScalingMode(StrEnum):
    AUTO = "Auto"
    OFF = "Off"


class ContainerControlledValues(StrEnum):
    REQUESTS_AND_LIMITS = "RequestsAndLimits"
    REQUESTS_ONLY = "RequestsOnly"


@dataclass(frozen=True, slots=True)
class ContainerResourcePolicy:
    """One ``containerPolicies[]`` entry. ``None`` means "not set" (upstream's nil pointer);
    ``controlled_resources`` set to an empty set controls nothing."""

    container_name: str = ""
    mode: ContainerScalingMode | None = None
    min_allowed: Resources = NO_RESOURCES
    max_allowed: Resources = NO_RESOURCES
    controlled_resources: frozenset[ResourceName] | None = None
    controlled_values: ContainerControlledValues | None = None
    oom_bump_up_ratio: float | None = None
    oom_min_bump_up_bytes: float | None = None
    memory_aggregation_interval_seconds: int | None = None
    memory_aggregation_interval_count: int | None = None
    target_cpu_percentile: float | None = None
    target_memory_percentile: float | None = None


@dataclass(frozen=True, slots=True)
class PodResourcePolicy:
    """``spec.resourcePolicy``: the container policies, ``"*"`` as the default entry."""

    container_policies: tuple[ContainerResourcePolicy, ...] = ()


def get_container_resource_policy(
    container_name: str, policy: PodResourcePolicy | None
) -> ContainerResourcePolicy | None:
    """The policy named after the container, else the ``"*"`` one, else ``None``
    (``GetContainerResourcePolicy``)."""
    if policy is None:
        return None
    default: ContainerResourcePolicy | None = None
    for container_policy in policy.container_policies:
        if container_policy.container_name == container_name:
            return container_policy
        if container_policy.container_name == DEFAULT_CONTAINER_RESOURCE_POLICY:
            default = container_policy
    return default


def get_container_controlled_values(
    container_name: str, policy: PodResourcePolicy | None
) -> ContainerControlledValues:
    """The container's ``controlledValues``, ``RequestsAndLimits`` when unset
    (``GetContainerControlledValues``)."""
    container_policy = get_container_resource_policy(container_name, policy)
    if container_policy is None or container_policy.controlled_values is None:
        return ContainerControlledValues.REQUESTS_AND_LIMITS
    return container_policy.controlled_values
