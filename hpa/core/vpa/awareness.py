"""Which resources a VPA leaves alone because an HPA scales the same workload on them.

Upstream counterpart: none. The VPA design proposal ("Combining vertical and horizontal scaling")
names it future work: the HPA scales the group on the bottleneck resource, the VPA controls the
others. Upstream's documentation tells users not to combine the two on CPU or memory.

The rule, for one VPA and the HPAs of its namespace:

- an HPA counts when its ``scaleTargetRef`` names the VPA's ``targetRef`` workload: same kind,
  same name, same API group (the version may differ, as ``apps/v1`` and ``apps/v1beta2`` name the
  same Deployment);
- a ``Resource`` metric on a resource excludes that resource in every container; a
  ``ContainerResource`` metric excludes it in the named container only;
- an HPA with no metrics scales on cpu (upstream defaults the list to cpu at 80 %);
- ``Pods``, ``Object`` and ``External`` metrics exclude nothing (they do not measure the pods'
  requests, so a vertical change does not move the HPA's utilization);
- with ``--hpa-awareness=exclude`` (the default) an excluded resource is taken out of the
  container's controlled resources; ``warn`` keeps it controlled and reports the conflict;
  ``off`` ignores HPAs.

The recommender still computes a recommendation for an excluded resource (users want to see it);
the updater and the admission webhook change only the effective controlled resources.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from hpa.core.decision import HorizontalPodAutoscalerStatus
from hpa.core.spec import (
    CrossVersionObjectReference,
    HorizontalPodAutoscalerSpec,
    MetricSourceType,
    default_spec,
)

CONDITION_TYPE = "HorizontalScalingConflictAvoided"
REASON_EXCLUDED = "ResourcesExcluded"
REASON_WARNED = "ConflictNotAvoided"


class HpaAwareness(StrEnum):
    """``--hpa-awareness``."""

    EXCLUDE = "exclude"
    WARN = "warn"
    OFF = "off"


@dataclass(frozen=True, slots=True)
class HorizontalScaler:
    """An HPA as this rule needs it: where it is, and its spec in the core's shape; its status
    (the ``group-aware`` model reads the current metrics) when known."""

    namespace: str
    name: str
    spec: HorizontalPodAutoscalerSpec
    status: HorizontalPodAutoscalerStatus | None = None


@dataclass(frozen=True, slots=True, order=True)
class HorizontalConflict:
    """``resource`` is scaled horizontally by the HPA ``hpa`` (``namespace/name``), in every
    container (``container`` None, a ``Resource`` metric) or in one (``ContainerResource``)."""

    resource: str
    container: str | None
    hpa: str

    def applies_to(self, container: str) -> bool:
        return self.container is None or self.container == container

    def describe(self) -> str:
        where = "every container" if self.container is None else f"container {self.container}"
        kind = "Resource" if self.container is None else "ContainerResource"
        return f"{self.resource} in {where} (HPA {self.hpa}, {kind} metric)"


@dataclass(frozen=True, slots=True)
class ConflictCondition:
    """The VPA status condition that reports the conflicts (``status`` is "True" or "False")."""

    type: str
    status: str
    reason: str
    message: str


def api_group(api_version: str) -> str:
    """The group of ``group/version`` (``""`` for the core ``v1``)."""
    return api_version.rpartition("/")[0]


def same_workload(a: CrossVersionObjectReference, b: CrossVersionObjectReference) -> bool:
    return (
        a.kind == b.kind
        and a.name == b.name
        and api_group(a.api_version) == api_group(b.api_version)
    )


def horizontal_conflicts(
    namespace: str,
    target_ref: CrossVersionObjectReference,
    hpas: Iterable[HorizontalScaler],
) -> tuple[HorizontalConflict, ...]:
    """Every (resource, container) that an HPA of ``namespace`` scales ``target_ref`` on,
    sorted and without repeats."""
    found: set[HorizontalConflict] = set()
    for hpa in hpas:
        if hpa.namespace != namespace or not same_workload(hpa.spec.scale_target_ref, target_ref):
            continue
        who = f"{hpa.namespace}/{hpa.name}"
        for metric in default_spec(hpa.spec).metrics:
            if metric.type == MetricSourceType.RESOURCE and metric.resource is not None:
                found.add(HorizontalConflict(metric.resource.name, None, who))
            elif (
                metric.type == MetricSourceType.CONTAINER_RESOURCE
                and metric.container_resource is not None
            ):
                source = metric.container_resource
                found.add(HorizontalConflict(source.name, source.container, who))
    return tuple(sorted(found, key=lambda c: (c.resource, c.container or "", c.hpa)))


def effective_controlled_resources(
    container: str,
    controlled: Iterable[str],
    conflicts: Iterable[HorizontalConflict],
    *,
    awareness: HpaAwareness,
) -> frozenset[str]:
    """The resources of ``container`` the VPA may change: its policy's controlled resources,
    less those an HPA scales on when ``awareness`` is ``exclude``."""
    wanted = frozenset(controlled)
    if awareness is not HpaAwareness.EXCLUDE:
        return wanted
    excluded = {c.resource for c in conflicts if c.applies_to(container)}
    return wanted - excluded


def conflict_condition(
    conflicts: Iterable[HorizontalConflict], *, awareness: HpaAwareness
) -> ConflictCondition | None:
    """The condition to publish, or None when there is nothing to say (no conflict, or
    ``off``)."""
    listed = tuple(conflicts)
    if not listed or awareness is HpaAwareness.OFF:
        return None
    what = "; ".join(c.describe() for c in listed)
    if awareness is HpaAwareness.EXCLUDE:
        return ConflictCondition(
            CONDITION_TYPE,
            "True",
            REASON_EXCLUDED,
            f"scaled horizontally, left to the HPA: {what}",
        )
    return ConflictCondition(
        CONDITION_TYPE,
        "False",
        REASON_WARNED,
        f"scaled horizontally and still changed by this VPA (--hpa-awareness=warn): {what}",
    )
