"""CPU startup boost: when the updater lowers a boosted container's CPU again.

Upstream counterparts (kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1, alpha feature
gate ``CPUStartupBoost``): ``pkg/utils/annotations/vpa_cpu_boost.go``
(``StartupCPUBoostAnnotationPrefix`` ``vpaCpuStartupBoost/``: one annotation per boosted container,
its value the container's original ``{"requests": ..., "limits": ...}``),
``pkg/utils/vpa/api.go`` (``GetExpiredStartupCPUBoostAnnotations``, ``GetBoostRemainingDuration``,
``getContainerCPUStartupBoostDuration``: the VPA's ``startupBoost.cpu.durationSeconds``, overridden
by the container policy's; ``PodHasCPUBoostInProgressAnnotation``) and
``pkg/updater/inplace/resource_updates.go`` (``getContainerResourcesForUnboost``: the container's
recommendation, or its original resources when there is none).

A boost expires once the pod has been Ready for longer than the duration (a duration of 0 expires
at once); nothing expires while the pod is not Ready. The admission webhook sets the annotation
when it raises CPU at creation.

Deliberate deviations: time is passed in; annotations are read in sorted order (upstream ranges
over a Go map).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.vpa.amount import ResourceName, Resources

__all__ = [
    "STARTUP_CPU_BOOST_ANNOTATION_PREFIX",
    "StartupBoostDurations",
    "boost_annotation_key",
    "boost_remaining",
    "expired_boost_annotations",
    "has_boost_in_progress",
    "original_resources",
]

STARTUP_CPU_BOOST_ANNOTATION_PREFIX = "vpaCpuStartupBoost/"


@dataclass(frozen=True, slots=True)
class StartupBoostDurations:
    """A VPA's boost durations in seconds: ``pod`` from ``spec.startupBoost.cpu``, ``containers``
    per container policy name (``*`` included; None where the policy sets no boost duration)."""

    pod: int | None = None
    containers: Mapping[str, int | None] = field(default_factory=dict)

    def for_container(self, container: str) -> int:
        """``getContainerCPUStartupBoostDuration``."""
        duration = self.pod or 0
        policy = container if container in self.containers else "*"
        override = self.containers.get(policy)
        if override is not None:
            duration = override
        return duration


def boost_annotation_key(container: str) -> str:
    """``GetStartupCPUBoostAnnotationKey``."""
    return STARTUP_CPU_BOOST_ANNOTATION_PREFIX + container


def has_boost_in_progress(annotations: Mapping[str, str]) -> bool:
    """``PodHasCPUBoostInProgressAnnotation``."""
    return any(key.startswith(STARTUP_CPU_BOOST_ANNOTATION_PREFIX) for key in annotations)


def _boosted(annotations: Mapping[str, str]) -> list[tuple[str, str]]:
    prefix = STARTUP_CPU_BOOST_ANNOTATION_PREFIX
    return sorted((k, k[len(prefix) :]) for k in annotations if k.startswith(prefix))


def expired_boost_annotations(
    annotations: Mapping[str, str],
    *,
    ready_since: datetime | None,
    now: datetime,
    durations: StartupBoostDurations,
) -> list[str]:
    """``GetExpiredStartupCPUBoostAnnotations``: the boost annotations whose container has been
    boosted past its duration since the pod became Ready (``ready_since`` None: not Ready)."""
    if ready_since is None:
        return []
    expired = []
    for key, container in _boosted(annotations):
        duration = durations.for_container(container)
        if duration == 0 or now - ready_since > timedelta(seconds=duration):
            expired.append(key)
    return expired


def boost_remaining(
    annotations: Mapping[str, str],
    *,
    ready_since: datetime | None,
    now: datetime,
    durations: StartupBoostDurations,
) -> timedelta:
    """``GetBoostRemainingDuration``: the shortest time until a boost expires, 0 when none."""
    if ready_since is None:
        return timedelta(0)
    remaining = [
        timedelta(seconds=durations.for_container(container)) - (now - ready_since)
        for _, container in _boosted(annotations)
    ]
    positive = [r for r in remaining if r > timedelta(0)]
    return min(positive, default=timedelta(0))


def _amounts(value: object, *, where: str) -> Resources:
    if value is None:
        return Resources()
    if not isinstance(value, dict):
        raise ValueError(f"{where} is not an object")
    amounts: dict[str, int] = {}
    for resource in (ResourceName.CPU, ResourceName.MEMORY):
        text = value.get(resource.value)
        if text is None:
            continue
        try:
            quantity = parse_quantity(str(text))
        except QuantityError as error:
            raise ValueError(f"{where}.{resource.value}: {error}") from None
        amounts[resource.value] = (
            quantity.milli_value() if resource is ResourceName.CPU else quantity.value()
        )
    return Resources(cpu=amounts.get("cpu"), memory=amounts.get("memory"))


def original_resources(value: str) -> tuple[Resources, Resources]:
    """``GetOriginalResourcesFromAnnotation``: the (requests, limits) a boost annotation saved;
    raises ``ValueError`` naming what does not read."""
    try:
        data = json.loads(value)
    except ValueError:
        raise ValueError("startup boost annotation is not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("startup boost annotation is not an object")
    return (
        _amounts(data.get("requests"), where="requests"),
        _amounts(data.get("limits"), where="limits"),
    )
