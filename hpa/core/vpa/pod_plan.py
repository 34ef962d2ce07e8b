"""What the updater would set on one running pod: the capped recommendation it ranks the pod by,
the requests and limits of each container, the resize patch and the pod's new total requests.

Upstream counterparts (kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1):
``pkg/updater/priority/update_priority_calculator.go`` (``AddPod``: the recommendation goes
through the ``RecommendationProcessor``, i.e. capping, before the priority is computed),
``pkg/updater/inplace/resource_updates.go`` (``CalculatePatches``: per container the admission
rule's requests and proportional limits, written as ``add`` operations on the ``resize``
subresource; a boosted container whose boost has not expired is left alone; an expired one gets
the recommendation, or its original resources when the recommendation has none) and
``unboost_patch_calculator.go`` (the expired boost annotations are removed from the pod).

The per-container requests and limits are
:func:`hpa.core.vpa.admission.containers_resources_for_pod` (one rule with the webhook).
Before anything, the recommendation is restricted to the resources the updater may change
(``allowed``): the effective controlled resources of :mod:`hpa.core.vpa.awareness` and the
per-resource modes of :mod:`hpa.core.vpa.modes`; a resource outside them is neither ranked on nor
patched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from hpa.core.vpa.admission import (
    AdmissionContainer,
    ContainerResources,
    PatchOperation,
    cap_for_pod,
    container_patch,
    containers_resources_from_capped,
    escape_json_pointer,
)
from hpa.core.vpa.amount import ResourceName, Resources
from hpa.core.vpa.awareness import HpaAwareness
from hpa.core.vpa.boost import STARTUP_CPU_BOOST_ANNOTATION_PREFIX, original_resources
from hpa.core.vpa.capping import LimitRangeItem
from hpa.core.vpa.policy import PodResourcePolicy
from hpa.core.vpa.recommender import RecommendedContainerResources
from hpa.core.vpa.update import ContainerRecommendation

__all__ = [
    "PodPlan",
    "annotation_removal_patches",
    "milli_units",
    "plan_pod",
    "resize_patches",
    "restrict_recommendation",
]


def _only(resources: Resources, allowed: frozenset[str]) -> Resources:
    return resources.filtered(frozenset(r for r in ResourceName if r.value in allowed))


def restrict_recommendation(
    recommendation: Sequence[RecommendedContainerResources],
    allowed: Callable[[str], frozenset[str]],
) -> tuple[RecommendedContainerResources, ...]:
    """Each container's recommendation with only the resources ``allowed(container)``."""
    out = []
    for rec in recommendation:
        keep = allowed(rec.container_name)
        out.append(
            replace(
                rec,
                target=_only(rec.target, keep),
                lower_bound=_only(rec.lower_bound, keep),
                upper_bound=_only(rec.upper_bound, keep),
                uncapped_target=_only(rec.uncapped_target, keep),
            )
        )
    return tuple(out)


def milli_units(resources: Resources) -> dict[str, int]:
    """The VPA model's units (millicores, bytes) as milli-units (``MilliValue``)."""
    out: dict[str, int] = {}
    if resources.cpu is not None:
        out["cpu"] = resources.cpu
    if resources.memory is not None:
        out["memory"] = resources.memory * 1000
    return out


@dataclass(frozen=True, slots=True)
class PodPlan:
    """``ranked``: the capped recommendation in milli-units (for the update priority);
    ``resources``: per container (1-1 with the pod's) what to set; ``new_requests_milli``: the
    pod's total requests once that is set."""

    ranked: tuple[ContainerRecommendation, ...]
    resources: tuple[ContainerResources, ...]
    new_requests_milli: Mapping[str, int]


def plan_pod(
    containers: Sequence[AdmissionContainer],
    *,
    recommendation: Sequence[RecommendedContainerResources],
    policy: PodResourcePolicy | None,
    container_limit_range: LimitRangeItem | None = None,
    pod_limit_range: LimitRangeItem | None = None,
) -> PodPlan:
    """``recommendation`` is already restricted to the resources the updater may change."""
    capped = cap_for_pod(
        containers,
        recommendation,
        policy=policy,
        container_limit_range=container_limit_range,
        pod_limit_range=pod_limit_range,
    )
    ranked = tuple(
        ContainerRecommendation(
            r.container_name,
            milli_units(r.target),
            milli_units(r.lower_bound),
            milli_units(r.upper_bound),
        )
        for r in (capped.container_recommendations if capped is not None else ())
    )
    resources, _ = containers_resources_from_capped(
        containers,
        capped,
        update_mode_off=False,
        policy=policy,
        container_limit_range=container_limit_range,
        awareness=HpaAwareness.OFF,
    )
    total: dict[str, int] = {}
    for container, wanted in zip(containers, resources, strict=True):
        current = milli_units(container.requests)
        if wanted.requests is not None:
            current.update(milli_units(wanted.requests))
        for resource, amount in current.items():
            total[resource] = total.get(resource, 0) + amount
    return PodPlan(ranked, tuple(resources), total)


def resize_patches(
    containers: Sequence[AdmissionContainer],
    resources: Sequence[ContainerResources],
    *,
    annotations: Mapping[str, str],
    expired: Sequence[str] = (),
) -> list[PatchOperation]:
    """``resourcesInplaceUpdatesPatchCalculator.CalculatePatches``: the JSON Patch for the pod's
    ``resize`` subresource. ``annotations`` are the pod's; ``expired`` its expired boost
    annotations. Raises ``ValueError`` when an expired boost annotation does not read."""
    patches: list[PatchOperation] = []
    for index, (container, wanted) in enumerate(zip(containers, resources, strict=True)):
        key = STARTUP_CPU_BOOST_ANNOTATION_PREFIX + container.name
        target = wanted
        if key in expired:
            if wanted.requests is None and wanted.limits is None and key in annotations:
                requests, limits = original_resources(annotations[key])
                target = ContainerResources(requests, limits)
        elif key in annotations:
            continue
        ops, _ = container_patch(index, container, target, ())
        patches.extend(ops)
    return patches


def annotation_removal_patches(keys: Sequence[str]) -> list[PatchOperation]:
    """``GetRemoveAnnotationPatch`` for each key."""
    return [
        {"op": "remove", "path": f"/metadata/annotations/{escape_json_pointer(key)}"}
        for key in keys
    ]
