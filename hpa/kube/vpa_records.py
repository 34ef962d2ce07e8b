"""Informer records of the objects the vertical autoscaler reads: VerticalPodAutoscalers and
LimitRanges, converted to the core's shapes once, when they arrive.

Upstream counterparts: the VPA lister of ``pkg/client`` and ``limitrange.LimitRangeCalculator``'s
LimitRange lister, as the VPA's recommender, updater and admission controller read them.

A VPA whose spec the API server accepted but the model cannot use (a policy that fails
:mod:`hpa.api.validation`) keeps ``policy_error`` set and no policy; its users report it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hpa.api.vpa import (
    VerticalPodAutoscaler,
    conditions_to_core,
    eviction_requirements_to_core,
    pod_resource_policy_to_core,
    recommendation_to_core,
    resources_to_core,
)
from hpa.core.selector import Selector
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.boost import StartupBoostDurations
from hpa.core.vpa.cluster import VpaCondition
from hpa.core.vpa.limitrange import LimitRangeEntry
from hpa.core.vpa.matching import ControllerKey, VpaTarget
from hpa.core.vpa.policy import PodResourcePolicy
from hpa.core.vpa.recommender import RecommendedContainerResources
from hpa.core.vpa.update import EvictionRequirement

__all__ = ["LimitRangeRecord", "VpaRecord", "parse_limit_range", "parse_vpa"]

_EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")


@dataclass(frozen=True, slots=True)
class VpaRecord:
    namespace: str
    name: str
    resource_version: str
    labels: Mapping[str, str]
    created: datetime
    target: ControllerKey | None
    update_mode: str | None
    has_startup_boost: bool
    recommenders: tuple[str, ...]
    policy: PodResourcePolicy | None
    recommendation: tuple[RecommendedContainerResources, ...] | None
    policy_error: str = field(default="", compare=False)
    conditions: tuple[VpaCondition, ...] = ()
    """``status.conditions`` (the recommender starts each pass from them, as upstream)."""
    observed_generation: int | None = None
    """``status.observedGeneration``."""
    generation: int = 0
    annotations: Mapping[str, str] = field(default_factory=dict)
    api_version: str = "v1"
    """The version of ``apiVersion`` (``v1``, ``v1beta2``): a label of the objects-count metric."""
    min_replicas: int | None = None
    """``spec.updatePolicy.minReplicas``: overrides the updater's ``--min-replicas``."""
    startup_boost: StartupBoostDurations = field(default_factory=StartupBoostDurations)
    evict_after_oom_seconds: int | None = None
    """``spec.updatePolicy.evictAfterOOMSeconds`` (``PerVPAConfig``): overrides the updater's
    ``--evict-after-oom-threshold``."""
    eviction_requirements: tuple[EvictionRequirement, ...] = ()
    """``spec.updatePolicy.evictionRequirements``: the updater changes a pod only when they are
    met (:func:`hpa.core.vpa.update.admit_by_eviction_requirements`)."""

    def matching_target(self, target: ControllerKey, selector: Selector | None) -> VpaTarget:
        """The VPA as matching reads it (``target`` is its ``targetRef``, ``selector`` its
        target's selector, None when it cannot be read)."""
        return VpaTarget(
            namespace=self.namespace,
            name=self.name,
            created=self.created,
            target=target,
            update_mode=self.update_mode,
            has_startup_boost=self.has_startup_boost,
            selector=selector,
        )


def parse_vpa(data: Mapping[str, Any]) -> VpaRecord:
    """A VPA record; raises (and the informer skips the object) when it cannot be read at all."""
    vpa = VerticalPodAutoscaler.from_dict(data)
    metadata = vpa.metadata
    namespace = metadata.namespace or ""
    spec = vpa.spec
    target = None
    if spec.target_ref is not None:
        ref = spec.target_ref
        target = ControllerKey(namespace, ref.kind, ref.name, ref.api_version or "")
    policy: PodResourcePolicy | None = None
    policy_error = ""
    try:
        policy = pod_resource_policy_to_core(spec.resource_policy)
    except (ValueError, ValidationError) as error:
        policy_error = str(error)
    boost = spec.startup_boost is not None or any(
        p.startup_boost is not None
        for p in (spec.resource_policy.container_policies if spec.resource_policy else ())
    )
    status = vpa.status
    recommendation = (
        recommendation_to_core(status.recommendation)
        if status is not None and status.recommendation is not None
        else None
    )
    created = metadata.creation_timestamp
    boost_durations = StartupBoostDurations(
        pod=spec.startup_boost.cpu.duration_seconds
        if spec.startup_boost is not None and spec.startup_boost.cpu is not None
        else None,
        containers={
            p.container_name: p.startup_boost.cpu.duration_seconds
            if p.startup_boost is not None and p.startup_boost.cpu is not None
            else None
            for p in (spec.resource_policy.container_policies if spec.resource_policy else ())
        },
    )
    return VpaRecord(
        namespace=namespace,
        name=metadata.name or "",
        resource_version=metadata.resource_version or "",
        labels=dict(metadata.labels or {}),
        created=created if isinstance(created, datetime) else _EPOCH,
        target=target,
        update_mode=spec.update_policy.update_mode if spec.update_policy else None,
        has_startup_boost=boost,
        recommenders=tuple(r.name for r in spec.recommenders),
        policy=policy,
        recommendation=recommendation,
        policy_error=policy_error,
        conditions=conditions_to_core(status.conditions) if status is not None else (),
        observed_generation=status.observed_generation if status is not None else None,
        generation=metadata.generation or 0,
        annotations=dict(metadata.annotations or {}),
        api_version=(vpa.api_version or "autoscaling.k8s.io/v1").rpartition("/")[2],
        min_replicas=spec.update_policy.min_replicas if spec.update_policy else None,
        evict_after_oom_seconds=spec.update_policy.evict_after_oom_seconds
        if spec.update_policy
        else None,
        startup_boost=boost_durations,
        eviction_requirements=eviction_requirements_to_core(spec.update_policy),
    )


@dataclass(frozen=True, slots=True)
class LimitRangeRecord:
    namespace: str
    name: str
    resource_version: str
    labels: Mapping[str, str]
    entries: tuple[LimitRangeEntry, ...]


def _limits(value: Any) -> Resources | None:
    return None if value is None else resources_to_core(value)


def parse_limit_range(data: Mapping[str, Any]) -> LimitRangeRecord:
    metadata = data["metadata"]
    items = (data.get("spec") or {}).get("limits") or []
    return LimitRangeRecord(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata["name"]),
        resource_version=str(metadata.get("resourceVersion", "")),
        labels=dict(metadata.get("labels") or {}),
        entries=tuple(
            LimitRangeEntry(
                type=str(item.get("type", "")),
                min=_limits(item.get("min")),
                max=_limits(item.get("max")),
                default=_limits(item.get("default")),
            )
            for item in items
        ),
    )
