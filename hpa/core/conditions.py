"""HPA status conditions and controller events as immutable values.

Upstream counterparts: ``setCondition`` / ``setConditionInList`` in
``pkg/controller/podautoscaler/horizontal.go``, ``autoscalingv2.HorizontalPodAutoscalerCondition``
and the ``record.EventRecorder`` calls of the controller (an event is a type, a reason and a
message; the controller's I/O shell records it).

Semantics kept from upstream: setting a condition keeps its position in the list, a new type is
appended, and ``last_transition_time`` changes only when the status flips (a newly appended
condition always gets ``now``, because upstream appends it with an empty status first).

Deliberate deviations: none. :func:`remove_condition` has no counterpart in the versions of
``horizontal.go`` read for this port; it implements "the ``ScaledToZero`` condition is removed
when the ``HPAScaleToZero`` gate is off" (see ``docs/scale-to-zero.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal


class ConditionType(StrEnum):
    """``autoscalingv2.HorizontalPodAutoscalerConditionType``."""

    ABLE_TO_SCALE = "AbleToScale"
    SCALING_ACTIVE = "ScalingActive"
    SCALING_LIMITED = "ScalingLimited"
    SCALED_TO_ZERO = "ScaledToZero"


class ConditionStatus(StrEnum):
    """``v1.ConditionStatus``."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class HorizontalPodAutoscalerCondition:
    """``autoscalingv2.HorizontalPodAutoscalerCondition``."""

    type: str
    status: ConditionStatus
    reason: str
    message: str
    last_transition_time: datetime | None = None


Conditions = tuple[HorizontalPodAutoscalerCondition, ...]


def set_condition(
    conditions: Conditions,
    condition_type: str,
    status: ConditionStatus,
    *,
    reason: str,
    message: str,
    now: datetime,
) -> Conditions:
    """``setConditionInList``: replace in place (or append), stamping flips with ``now``."""
    for index, existing in enumerate(conditions):
        if existing.type == condition_type:
            if (
                existing.status == status
                and existing.reason == reason
                and existing.message == message
            ):
                return conditions  # the same condition again: nothing to replace
            transition = existing.last_transition_time if existing.status == status else now
            updated = HorizontalPodAutoscalerCondition(
                type=condition_type,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=transition,
            )
            return (*conditions[:index], updated, *conditions[index + 1 :])
    appended = HorizontalPodAutoscalerCondition(
        type=condition_type, status=status, reason=reason, message=message, last_transition_time=now
    )
    return (*conditions, appended)


class ConditionUpdates:
    """Several :func:`set_condition` calls on one list at one ``now``, applied at once.

    ``decide`` sets ``AbleToScale`` twice on every pass (``SucceededGetScale``, then the
    stabilization's reason), as upstream does; applying each set builds a condition and a tuple
    that the next set throws away. This keeps, per type, the last values set and whether the status
    flipped anywhere along the way (every flip is stamped with the same ``now``), and builds the
    list once in :meth:`result`: the same list, element for element and transition time for
    transition time, as the calls applied in order (property-tested against that), and the very
    ``previous`` tuple when nothing changed.
    """

    __slots__ = ("_now", "_previous", "_sets")

    def __init__(self, previous: Conditions, now: datetime) -> None:
        self._previous = previous
        self._now = now
        self._sets: dict[str, tuple[ConditionStatus, str, str, bool]] = {}

    def set(self, condition_type: str, status: ConditionStatus, reason: str, message: str) -> None:
        prior = self._sets.get(condition_type)
        if prior is None:
            existing = find_condition(self._previous, condition_type)
            flipped = existing is None or existing.status != status
        else:
            flipped = prior[3] or prior[0] != status
        self._sets[condition_type] = (status, reason, message, flipped)

    def result(self) -> Conditions:
        previous = self._previous
        sets = self._sets
        if not sets:
            return previous
        now = self._now
        out: list[HorizontalPodAutoscalerCondition] = []
        changed = False
        applied: set[str] = set()
        for existing in previous:
            condition_type = existing.type
            update = sets.get(condition_type) if condition_type not in applied else None
            if update is None:
                out.append(existing)  # not set, or a later duplicate that setting never reaches
                continue
            applied.add(condition_type)
            status, reason, message, flipped = update
            if not flipped and existing.reason == reason and existing.message == message:
                out.append(existing)
                continue
            out.append(
                HorizontalPodAutoscalerCondition(
                    type=condition_type,
                    status=status,
                    reason=reason,
                    message=message,
                    last_transition_time=now if flipped else existing.last_transition_time,
                )
            )
            changed = True
        for condition_type, (status, reason, message, _) in sets.items():
            if condition_type not in applied:
                out.append(
                    HorizontalPodAutoscalerCondition(
                        type=condition_type,
                        status=status,
                        reason=reason,
                        message=message,
                        last_transition_time=now,
                    )
                )
                changed = True
        return tuple(out) if changed else previous


def remove_condition(conditions: Conditions, condition_type: str) -> Conditions:
    """Drop every condition of ``condition_type`` (order of the others preserved)."""
    return tuple(condition for condition in conditions if condition.type != condition_type)


def find_condition(
    conditions: Conditions, condition_type: str
) -> HorizontalPodAutoscalerCondition | None:
    """The first condition of ``condition_type``, if any."""
    for condition in conditions:
        if condition.type == condition_type:
            return condition
    return None


EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True, slots=True)
class Event:
    """One event the controller records on the HPA object (``eventRecorder.Event``)."""

    type: EventType
    reason: str
    message: str
