"""Capping a VPA's recommendation for one pod: LimitRanges, the policy, container limits.

Upstream counterpart: kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/utils/vpa/capping.go`` (``cappingRecommendationProcessor.Apply``,
used by the updater and the admission controller) and ``limit_and_request_scaling.go``
(``GetProportionalLimit``, ``GetBoundaryRequest``, the proportional scaling helpers).

For a pod, in this order:

1. With a pod-level LimitRange: containers of the pod without a recommendation but with requests
   get one (target = their requests); then upper bound, target and lower bound, CPU then memory,
   are scaled so the pod's sums fit the LimitRange's min and max (``applyPodLimitRange``).
2. Per recommended container present in the pod (others are dropped), for the target (with
   annotations) and the bounds: the container LimitRange's min and max, translated to requests
   through the container's limit-to-request ratio (``GetBoundaryRequest``); then the policy's
   ``minAllowed``/``maxAllowed``; then, with ``controlledValues: RequestsOnly``, the container's
   current limit.

Amounts are integers (CPU millicores, memory bytes), as upstream compares CPU in milli-units and
scales memory in whole bytes (floor). Annotations use upstream's wording ("cpu capped to
maxAllowed", "memory capped to fit Min in container LimitRange", ...), CPU first.

Deliberate deviations:

* The pod's containers come in as :class:`PodContainer` with their effective requests and limits
  already chosen (the container status's when present, else the spec's:
  ``ContainerRequestsAndLimits``).
* Upstream's ``maxLimitRequestRatio`` of a LimitRange is not used by v1.8.1's capping, so it is not
  an input here.
* Where upstream would panic (a pod container without a recommendation or requests while a pod
  LimitRange scales limits; a zero memory sum as divisor) the value is left unchanged.
* Annotations list CPU before memory (upstream iterates a Go map, in random order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hpa.core.explain import Stage, TraceEntry
from hpa.core.vpa.amount import NO_RESOURCES, ResourceName, Resources
from hpa.core.vpa.gomath import MAX_INT64
from hpa.core.vpa.policy import (
    ContainerControlledValues,
    ContainerResourcePolicy,
    PodResourcePolicy,
    get_container_controlled_values,
    get_container_resource_policy,
)
from hpa.core.vpa.recommender import RecommendedContainerResources, format_amount

__all__ = [
    "CappedRecommendation",
    "LimitRangeItem",
    "PodContainer",
    "apply_capping",
    "apply_pod_limit_range",
    "get_boundary_request",
    "get_proportional_limit",
]

_RESOURCES = (ResourceName.CPU, ResourceName.MEMORY)
_BOUNDS = ("upper_bound", "target", "lower_bound")


@dataclass(frozen=True, slots=True)
class LimitRangeItem:
    """The parts of a ``LimitRangeItem`` capping reads (merged over the namespace's LimitRanges)."""

    min: Resources = NO_RESOURCES
    max: Resources = NO_RESOURCES
    default: Resources = NO_RESOURCES


@dataclass(frozen=True, slots=True)
class PodContainer:
    """A pod's container with its effective requests and limits."""

    name: str
    requests: Resources = NO_RESOURCES
    limits: Resources = NO_RESOURCES


@dataclass(frozen=True, slots=True)
class CappedRecommendation:
    """The capped recommendation for the pod, the capping annotations per container name (for the
    admission controller's ``vpaUpdates``), and the trace."""

    container_recommendations: tuple[RecommendedContainerResources, ...]
    annotations: dict[str, tuple[str, ...]]
    trace: tuple[TraceEntry, ...]


def _scale_cpu(scaled: int, base: int, result: int, *, round_up: bool) -> tuple[int, bool]:
    """``scaleQuantityProportionallyCPU`` in millicores: ``scaled * result / base``, floored
    (ceiled with ``round_up``); True when it saturated at int64."""
    if base == 0:
        return scaled, False
    quotient, remainder = divmod(scaled * result, base)
    if quotient > MAX_INT64:
        return MAX_INT64, True
    if remainder != 0 and round_up:
        quotient += 1
    return quotient, False


def _scale_memory(scaled: int, base: int, result: int) -> tuple[int, bool]:
    """``scaleQuantityProportionallyMem`` in bytes, floored; True when it saturated at int64."""
    if base == 0:
        return scaled, False
    quotient = (scaled * result) // base
    if quotient > MAX_INT64:
        return MAX_INT64, True
    return quotient, False


def _scale(
    resource: ResourceName, scaled: int, base: int, result: int, *, round_up: bool = False
) -> tuple[int, bool]:
    if resource is ResourceName.CPU:
        return _scale_cpu(scaled, base, result, round_up=round_up)
    return _scale_memory(scaled, base, result)


def _proportional_resource_limit(
    resource: ResourceName,
    original_limit: int,
    original_request: int,
    recommended_request: int,
    default_limit: int,
) -> tuple[int | None, str]:
    """``getProportionalResourceLimit``: the limit keeping the original limit/request ratio."""
    if original_limit == 0:
        original_limit = default_limit
    if original_limit == 0:
        return None, f"{resource}: limit NOT set since originalLimit is nil or 0"
    if recommended_request == 0:
        return None, f"{resource}: limit NOT set since recommendedRequest is nil or 0"
    if original_request == 0 or original_request == original_limit:
        return recommended_request, ""
    limit, capped = _scale(resource, original_limit, original_request, recommended_request)
    if capped:
        return limit, f"{resource}: failed to keep limit to request ratio; capping limit to int64"
    return limit, ""


def get_proportional_limit(
    original_limit: Resources,
    original_request: Resources,
    recommendation: Resources,
    default_limit: Resources,
) -> tuple[Resources | None, tuple[str, ...]]:
    """Limits that keep the container's limit-to-request ratios at the recommended requests
    (``GetProportionalLimit``); ``None`` and no annotations when neither resource gets one."""
    limits: dict[ResourceName, int | None] = {}
    annotations: list[str] = []
    for resource in _RESOURCES:
        limit, annotation = _proportional_resource_limit(
            resource,
            original_limit.get(resource) or 0,
            original_request.get(resource) or 0,
            recommendation.get(resource) or 0,
            default_limit.get(resource) or 0,
        )
        limits[resource] = limit
        if annotation:
            annotations.append(annotation)
    if limits[ResourceName.CPU] is None and limits[ResourceName.MEMORY] is None:
        return None, ()
    return Resources(cpu=limits[ResourceName.CPU], memory=limits[ResourceName.MEMORY]), tuple(
        annotations
    )


def get_boundary_request(
    resource: ResourceName,
    original_request: int,
    original_limit: int,
    boundary_limit: int,
    default_limit: int,
) -> int:
    """The request whose proportional limit equals ``boundary_limit`` (``GetBoundaryRequest``);
    0 (no boundary) when the container has no limit."""
    if original_limit == 0:
        original_limit = default_limit
    if original_limit == 0:
        return 0
    if original_request == 0:
        return boundary_limit
    return _scale(resource, original_request, original_limit, boundary_limit)[0]


def _with(resources: Resources, resource: ResourceName, value: int) -> Resources:
    if resource is ResourceName.CPU:
        return Resources(cpu=value, memory=resources.memory)
    return Resources(cpu=resources.cpu, memory=value)


def _with_field(
    r: RecommendedContainerResources, field_name: str, resources: Resources
) -> RecommendedContainerResources:
    return RecommendedContainerResources(
        container_name=r.container_name,
        target=resources if field_name == "target" else r.target,
        lower_bound=resources if field_name == "lower_bound" else r.lower_bound,
        upper_bound=resources if field_name == "upper_bound" else r.upper_bound,
        uncapped_target=r.uncapped_target,
    )


def _find(recommendations: Sequence[RecommendedContainerResources], name: str) -> int | None:
    for index, r in enumerate(recommendations):
        if r.container_name == name:
            return index
    return None


def apply_pod_limit_range(
    recommendations: Sequence[RecommendedContainerResources],
    containers: Sequence[PodContainer],
    limit_range: LimitRangeItem,
    resource: ResourceName,
    field_name: str,
) -> tuple[RecommendedContainerResources, ...]:
    """``applyPodLimitRange``: scale one field (``target``, ``lower_bound``, ``upper_bound``) of
    one resource so the pod's sums fit the pod LimitRange's min and max."""
    result = list(recommendations)
    _fit_pod_limit_range(result, containers, limit_range, resource, field_name)
    return tuple(result)


def _fit_pod_limit_range(
    recommendations: list[RecommendedContainerResources],
    containers: Sequence[PodContainer],
    limit_range: LimitRangeItem,
    resource: ResourceName,
    field_name: str,
) -> None:
    min_limit = limit_range.min.get(resource) or 0
    max_limit = limit_range.max.get(resource) or 0
    default_limit = limit_range.default.get(resource) or 0
    zipped = [(c, _find(recommendations, c.name)) for c in containers]
    sum_limit = 0
    sum_recommendation = 0
    for container, index in zipped:
        request = container.requests.get(resource) or 0
        if index is None:
            recommendation = request
        else:
            recommendation = getattr(recommendations[index], field_name).get(resource) or 0
        container_limit, _ = _proportional_resource_limit(
            resource,
            container.limits.get(resource) or 0,
            request,
            recommendation,
            default_limit,
        )
        if container_limit is not None:
            sum_limit += container_limit
        sum_recommendation += recommendation
    if (
        min_limit <= sum_limit
        and min_limit <= sum_recommendation
        and (max_limit == 0 or max_limit >= sum_limit)
    ):
        return
    if min_limit > sum_recommendation and sum_limit != 0:
        for _, index in zipped:
            if index is None:
                continue
            r = recommendations[index]
            current: Resources = getattr(r, field_name)
            scaled, _ = _scale(
                resource, current.get(resource) or 0, sum_recommendation, min_limit, round_up=True
            )
            recommendations[index] = _with_field(r, field_name, _with(current, resource, scaled))
        return
    if sum_limit == 0:
        return
    target_total_limit = 0
    if min_limit > sum_limit:
        target_total_limit = min_limit
    if max_limit != 0 and max_limit < sum_limit:
        target_total_limit = max_limit
    for _, index in zipped:
        if index is None:
            continue
        r = recommendations[index]
        current = getattr(r, field_name)
        scaled, _ = _scale(resource, current.get(resource) or 0, sum_limit, target_total_limit)
        recommendations[index] = _with_field(r, field_name, _with(current, resource, scaled))


def _boundary(
    container: PodContainer, boundary: Resources, default: Resources, resource: ResourceName
) -> int:
    return get_boundary_request(
        resource,
        container.requests.get(resource) or 0,
        container.limits.get(resource) or 0,
        boundary.get(resource) or 0,
        default.get(resource) or 0,
    )


def _cap_container(
    resources: Resources,
    container: PodContainer,
    container_policy: ContainerResourcePolicy | None,
    controlled_values: ContainerControlledValues,
    limit_range: LimitRangeItem | None,
) -> tuple[Resources, list[tuple[str, int, int]]]:
    """One field of one container: LimitRange, policy, container limit. Returns the capped
    amounts and ``(annotation, before, after)`` for each cap that applied."""
    applied: list[tuple[str, int, int]] = []
    for resource, value in resources.items():
        if limit_range is not None:
            max_request = _boundary(container, limit_range.max, limit_range.default, resource)
            min_request = max(
                _boundary(container, limit_range.min, limit_range.default, resource),
                limit_range.min.get(resource) or 0,
            )
            if min_request != 0 and value < min_request:
                applied.append(
                    (f"{resource} capped to fit Min in container LimitRange", value, min_request)
                )
                value = min_request
            if max_request != 0 and value > max_request:
                applied.append(
                    (f"{resource} capped to fit Max in container LimitRange", value, max_request)
                )
                value = max_request
        resources = _with(resources, resource, value)
    for resource, value in resources.items():
        if container_policy is None:
            break
        minimum = container_policy.min_allowed.get(resource)
        maximum = container_policy.max_allowed.get(resource)
        if minimum is not None and minimum != 0 and value < minimum:
            applied.append((f"{resource} capped to minAllowed", value, minimum))
            value = minimum
        if maximum is not None and maximum != 0 and value > maximum:
            applied.append((f"{resource} capped to maxAllowed", value, maximum))
            value = maximum
        resources = _with(resources, resource, value)
    if controlled_values is ContainerControlledValues.REQUESTS_ONLY:
        for resource, limit in container.limits.items():
            value_or_none = resources.get(resource)
            if value_or_none is not None and value_or_none > limit:
                applied.append((f"{resource} capped to container limit", value_or_none, limit))
                resources = _with(resources, resource, limit)
    return resources, applied


def apply_capping(
    recommendations: Sequence[RecommendedContainerResources] | None,
    *,
    policy: PodResourcePolicy | None,
    containers: Sequence[PodContainer],
    container_limit_range: LimitRangeItem | None = None,
    pod_limit_range: LimitRangeItem | None = None,
) -> CappedRecommendation | None:
    """The VPA's recommendation capped for a pod (``cappingRecommendationProcessor.Apply``);
    ``None`` when there is neither a recommendation nor a policy."""
    if recommendations is None and policy is None:
        return None
    working = list(recommendations or ())
    if pod_limit_range is not None:
        for container in containers:
            if _find(working, container.name) is None and container.requests.items():
                working.append(
                    RecommendedContainerResources(
                        container.name,
                        container.requests,
                        NO_RESOURCES,
                        NO_RESOURCES,
                        NO_RESOURCES,
                    )
                )
        for field_name in _BOUNDS:
            for resource in _RESOURCES:
                _fit_pod_limit_range(working, containers, pod_limit_range, resource, field_name)
    result: list[RecommendedContainerResources] = []
    annotations: dict[str, tuple[str, ...]] = {}
    trace: list[TraceEntry] = []
    by_name = {c.name: c for c in reversed(containers)}
    for r in working:
        pod_container = by_name.get(r.container_name)
        if pod_container is None:
            continue
        container = pod_container
        container_policy = get_container_resource_policy(container.name, policy)
        controlled_values = get_container_controlled_values(container.name, policy)
        capped = r
        for field_name in ("target", "lower_bound", "upper_bound"):
            new, applied = _cap_container(
                getattr(r, field_name),
                container,
                container_policy,
                controlled_values,
                container_limit_range,
            )
            capped = _with_field(capped, field_name, new)
            if field_name == "target" and applied:
                annotations[container.name] = tuple(a for a, _, _ in applied)
            for annotation, before, after in applied:
                resource = ResourceName(annotation.split(" ", 1)[0])
                trace.append(
                    TraceEntry(
                        Stage.CAPPING,
                        f"container {container.name} {field_name}: {annotation}",
                        (
                            ("before", format_amount(resource, before)),
                            ("after", format_amount(resource, after)),
                        ),
                    )
                )
        result.append(capped)
    return CappedRecommendation(tuple(result), annotations, tuple(trace))
