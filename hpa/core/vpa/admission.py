"""The admission webhook's answer for a new pod: the JSON Patch that sets its containers' requests
(and limits) to the VPA's capped recommendation.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/admission-controller/resource/pod``: ``handler.go`` (``GetPatches``: an empty
``/metadata/annotations`` first when the pod has none, then the calculators in order),
``recommendation/recommendation_provider.go`` (``GetContainersResourcesForPod``,
``GetContainersResources`` with ``addAll`` false: the capped target as requests, proportional
limits for ``RequestsAndLimits``), ``patch/resource_updates.go`` (``CalculatePatches``,
``getContainerPatch``, ``appendPatchesAndAnnotations``: an empty ``resources``,
``resources/requests`` or ``resources/limits`` object where the pod has none, one ``add`` per
resource, and the ``vpaUpdates`` annotation ``Pod resources updated by NAME: container 0: cpu
request, ...``), ``patch/observed_containers.go`` (``vpaObservedContainers``) and
``patch/util.go`` (RFC 6901 escaping of annotation names).

With ``updateMode: Off`` the recommendation is not applied (upstream keeps matching such a VPA only
for its CPU startup boost). Capping is :func:`hpa.core.vpa.capping.apply_capping`.

Deliberate deviations and extensions:

- resources an HPA scales the workload on (``hpa.core.vpa.awareness``) are taken out of the
  capped targets before anything is patched, so the webhook never changes them;
- within a container, cpu is patched and annotated before memory (upstream ranges over a Go map,
  in random order); the resulting pod is the same;
- quantities are written canonically (cpu in ``DecimalSI``, memory in ``BinarySI``), so
  ``262144k`` from a status may be written as ``256000Ki``: the same amount;
- the alpha CPU startup boost (feature gate ``CPUStartupBoost``, off upstream by default) is not
  applied here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hpa.core.vpa.amount import NO_RESOURCES, ResourceName, Resources, quantity_text
from hpa.core.vpa.awareness import HorizontalConflict, HpaAwareness, effective_controlled_resources
from hpa.core.vpa.capping import (
    CappedRecommendation,
    LimitRangeItem,
    PodContainer,
    apply_capping,
    get_proportional_limit,
)
from hpa.core.vpa.policy import (
    ContainerControlledValues,
    PodResourcePolicy,
    get_container_controlled_values,
)
from hpa.core.vpa.recommender import RecommendedContainerResources

__all__ = [
    "OBSERVED_CONTAINERS_ANNOTATION",
    "OBSERVED_CONTAINERS_SEPARATOR",
    "RESOURCE_UPDATES_ANNOTATION",
    "AdmissionContainer",
    "ContainerResources",
    "PatchOperation",
    "admission_patches",
    "apply_patch",
    "cap_for_pod",
    "container_patch",
    "containers_resources_for_pod",
    "containers_resources_from_capped",
    "default_update_policy_patches",
    "escape_json_pointer",
    "resource_update_patches",
]

DEFAULT_UPDATE_MODE = "Recreate"
"""The mode written into a VPA created without ``updatePolicy`` (``Auto`` before v1.7)."""
RESOURCE_UPDATES_ANNOTATION = "vpaUpdates"
OBSERVED_CONTAINERS_ANNOTATION = "vpaObservedContainers"
OBSERVED_CONTAINERS_SEPARATOR = ", "
"""``vpaObservedContainers`` lists the pod's containers joined by this (``listSeparator``)."""
_RESOURCES = (ResourceName.CPU, ResourceName.MEMORY)

PatchOperation = dict[str, Any]
"""One RFC 6902 operation: ``op``, ``path`` and (for ``add``) ``value``."""


@dataclass(frozen=True, slots=True)
class AdmissionContainer:
    """A container of the pod being created: its cpu and memory requests and limits, and whether
    its ``resources.requests``/``resources.limits`` objects exist at all (``has_*``)."""

    name: str
    requests: Resources = NO_RESOURCES
    limits: Resources = NO_RESOURCES
    has_requests: bool = False
    has_limits: bool = False


@dataclass(frozen=True, slots=True)
class ContainerResources:
    """``vpa_api_util.ContainerResources``: what to set; None leaves the field alone."""

    requests: Resources | None = None
    limits: Resources | None = None


def escape_json_pointer(segment: str) -> str:
    """RFC 6901: ``~`` as ``~0``, ``/`` as ``~1``."""
    return segment.replace("~", "~0").replace("/", "~1")


def _add(path: str, value: Any) -> PatchOperation:
    return {"op": "add", "path": path, "value": value}


def _annotation(name: str, value: str) -> PatchOperation:
    return _add(f"/metadata/annotations/{escape_json_pointer(name)}", value)


def _without_horizontal(
    recommendations: Sequence[RecommendedContainerResources],
    conflicts: Sequence[HorizontalConflict],
    awareness: HpaAwareness,
) -> tuple[RecommendedContainerResources, ...]:
    """Drop from each target the resources an HPA scales the workload on."""
    kept = []
    for recommendation in recommendations:
        allowed = effective_controlled_resources(
            recommendation.container_name,
            (r.value for r in _RESOURCES),
            conflicts,
            awareness=awareness,
        )
        target = Resources(
            cpu=recommendation.target.cpu if ResourceName.CPU in allowed else None,
            memory=recommendation.target.memory if ResourceName.MEMORY in allowed else None,
        )
        kept.append(replace(recommendation, target=target))
    return tuple(kept)


def _containers_resources(
    containers: Sequence[AdmissionContainer],
    recommendations: Sequence[RecommendedContainerResources],
    annotations: dict[str, list[str]],
    *,
    policy: PodResourcePolicy | None,
    default_limit: Resources,
) -> list[ContainerResources]:
    """``GetContainersResources`` with ``addAll`` false."""
    by_name = {r.container_name: r for r in recommendations}
    out = []
    for container in containers:
        recommendation = by_name.get(container.name)
        if recommendation is None:
            out.append(ContainerResources())
            continue
        requests = recommendation.target
        limits = None
        controlled = get_container_controlled_values(container.name, policy)
        if controlled is ContainerControlledValues.REQUESTS_AND_LIMITS:
            limits, limit_annotations = get_proportional_limit(
                container.limits, container.requests, requests, default_limit
            )
            if limits is not None and limit_annotations:
                annotations.setdefault(container.name, []).extend(limit_annotations)
        out.append(ContainerResources(requests, limits))
    return out


def container_patch(
    index: int,
    container: AdmissionContainer,
    resources: ContainerResources,
    annotations: Sequence[str],
) -> tuple[list[PatchOperation], str]:
    """``getContainerPatch``."""
    patches: list[PatchOperation] = []
    if not container.has_requests and not container.has_limits:
        patches.append(_add(f"/spec/containers/{index}/resources", {}))
    listed = list(annotations)
    for field, word, present, wanted in (
        ("requests", "request", container.has_requests, resources.requests),
        ("limits", "limit", container.has_limits, resources.limits),
    ):
        items = wanted.items() if wanted is not None else ()
        if not present and items:
            patches.append(_add(f"/spec/containers/{index}/resources/{field}", {}))
        for resource, amount in items:
            patches.append(
                _add(
                    f"/spec/containers/{index}/resources/{field}/{escape_json_pointer(resource)}",
                    quantity_text(resource, amount),
                )
            )
            listed.append(f"{resource} {word}")
    return patches, f"container {index}: " + ", ".join(listed)


def cap_for_pod(
    containers: Sequence[AdmissionContainer],
    recommendation: Sequence[RecommendedContainerResources] | None,
    *,
    policy: PodResourcePolicy | None,
    container_limit_range: LimitRangeItem | None = None,
    pod_limit_range: LimitRangeItem | None = None,
) -> CappedRecommendation | None:
    """The recommendation capped for this pod (``RecommendationProcessor.Apply``); None when the
    VPA has no recommendation."""
    if recommendation is None:
        return None
    return apply_capping(
        recommendation,
        policy=policy,
        containers=[PodContainer(c.name, c.requests, c.limits) for c in containers],
        container_limit_range=container_limit_range,
        pod_limit_range=pod_limit_range,
    )


def containers_resources_from_capped(
    containers: Sequence[AdmissionContainer],
    capped: CappedRecommendation | None,
    *,
    update_mode_off: bool,
    policy: PodResourcePolicy | None,
    container_limit_range: LimitRangeItem | None = None,
    conflicts: Sequence[HorizontalConflict] = (),
    awareness: HpaAwareness = HpaAwareness.EXCLUDE,
) -> tuple[list[ContainerResources], dict[str, list[str]]]:
    """``GetContainersResources`` over an already capped recommendation (see
    :func:`containers_resources_for_pod`)."""
    capped_targets: tuple[RecommendedContainerResources, ...] = ()
    annotations: dict[str, list[str]] = {}
    if capped is not None:
        capped_targets = capped.container_recommendations
        annotations = {name: list(notes) for name, notes in capped.annotations.items()}
    capped_targets = _without_horizontal(capped_targets, conflicts, awareness)
    default_limit = container_limit_range.default if container_limit_range else NO_RESOURCES
    resources = _containers_resources(
        containers,
        capped_targets,
        annotations,
        policy=None if update_mode_off else policy,
        default_limit=default_limit,
    )
    return resources, annotations


def containers_resources_for_pod(
    containers: Sequence[AdmissionContainer],
    *,
    update_mode_off: bool,
    recommendation: Sequence[RecommendedContainerResources] | None,
    policy: PodResourcePolicy | None,
    container_limit_range: LimitRangeItem | None = None,
    pod_limit_range: LimitRangeItem | None = None,
    conflicts: Sequence[HorizontalConflict] = (),
    awareness: HpaAwareness = HpaAwareness.EXCLUDE,
) -> tuple[list[ContainerResources], dict[str, list[str]]]:
    """``GetContainersResourcesForPod``: per container (1-1 with ``containers``) the requests and
    limits to set, and the capping annotations per container name. ``recommendation`` is the
    VPA's ``status.recommendation`` (None when it has none)."""
    capped = cap_for_pod(
        containers,
        recommendation,
        policy=policy,
        container_limit_range=container_limit_range,
        pod_limit_range=pod_limit_range,
    )
    return containers_resources_from_capped(
        containers,
        capped,
        update_mode_off=update_mode_off,
        policy=policy,
        container_limit_range=container_limit_range,
        conflicts=conflicts,
        awareness=awareness,
    )


def resource_update_patches(
    containers: Sequence[AdmissionContainer],
    resources: Sequence[ContainerResources],
    annotations: Mapping[str, Sequence[str]],
    *,
    vpa_name: str,
    update_mode_off: bool,
) -> list[PatchOperation]:
    """``resourcesUpdatesPatchCalculator.CalculatePatches`` (without the alpha startup boost)."""
    if update_mode_off:
        resources = [ContainerResources() for _ in resources]
        annotations = {}
    patches: list[PatchOperation] = []
    updates = []
    for index, (container, wanted) in enumerate(zip(containers, resources, strict=True)):
        container_patches, note = container_patch(
            index, container, wanted, annotations.get(container.name, ())
        )
        if container_patches:
            patches.extend(container_patches)
            updates.append(note)
    if updates:
        value = f"Pod resources updated by {vpa_name}: " + "; ".join(updates)
        patches.append(_annotation(RESOURCE_UPDATES_ANNOTATION, value))
    return patches


def admission_patches(
    containers: Sequence[AdmissionContainer],
    *,
    vpa_name: str,
    update_mode_off: bool,
    recommendation: Sequence[RecommendedContainerResources] | None,
    policy: PodResourcePolicy | None,
    pod_has_annotations: bool,
    container_limit_range: LimitRangeItem | None = None,
    pod_limit_range: LimitRangeItem | None = None,
    conflicts: Sequence[HorizontalConflict] = (),
    awareness: HpaAwareness = HpaAwareness.EXCLUDE,
) -> list[PatchOperation]:
    """The whole patch for a pod that the VPA ``vpa_name`` matches (``GetPatches``): empty
    annotations if the pod has none, the resource updates, the observed containers."""
    patches: list[PatchOperation] = []
    if not pod_has_annotations:
        patches.append(_add("/metadata/annotations", {}))
    resources, annotations = containers_resources_for_pod(
        containers,
        update_mode_off=update_mode_off,
        recommendation=recommendation,
        policy=policy,
        container_limit_range=container_limit_range,
        pod_limit_range=pod_limit_range,
        conflicts=conflicts,
        awareness=awareness,
    )
    patches.extend(
        resource_update_patches(
            containers, resources, annotations, vpa_name=vpa_name, update_mode_off=update_mode_off
        )
    )
    patches.append(
        _annotation(
            OBSERVED_CONTAINERS_ANNOTATION,
            OBSERVED_CONTAINERS_SEPARATOR.join(c.name for c in containers),
        )
    )
    return patches


def default_update_policy_patches(*, has_update_policy: bool) -> list[PatchOperation]:
    """``resource/vpa/handler.go`` ``GetPatches``: a valid VPA without ``spec.updatePolicy`` gets
    ``{updateMode: Recreate}`` (on create and update alike)."""
    if has_update_policy:
        return []
    return [_add("/spec/updatePolicy", {"updateMode": DEFAULT_UPDATE_MODE})]


def apply_patch(document: Mapping[str, Any], patches: Sequence[PatchOperation]) -> dict[str, Any]:
    """Apply RFC 6902 ``add``, ``replace`` and ``remove`` operations to a copy of ``document``,
    as an API server would (used to compare the resulting pods, and by the test API server).
    A path that does not resolve raises ``KeyError`` or ``IndexError``; another operation
    raises ``ValueError``."""
    result: dict[str, Any] = copy.deepcopy(dict(document))
    for operation in patches:
        op = operation["op"]
        if op not in ("add", "replace", "remove"):
            raise ValueError(f"unsupported patch operation {op!r}")
        *parents, last = [
            part.replace("~1", "/").replace("~0", "~") for part in operation["path"].split("/")[1:]
        ]
        node: Any = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if op == "remove":
            if isinstance(node, list):
                node.pop(int(last))
            else:
                del node[last]
        elif isinstance(node, list):
            index = int(last)
            if op == "replace":
                node[index] = copy.deepcopy(operation["value"])
            else:
                node.insert(index, copy.deepcopy(operation["value"]))
        else:
            if op == "replace" and last not in node:
                raise KeyError(last)
            node[last] = copy.deepcopy(operation["value"])
    return result
