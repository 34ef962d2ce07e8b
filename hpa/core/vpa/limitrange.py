"""The LimitRange item capping reads for a namespace, merged over its LimitRanges.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/utils/limitrange/limit_range_calculator.go`` (``getLimitRangeItem``): among the items of
the wanted type (``Container`` or ``Pod``) that set a min, max or default, the lowest max and the
highest min win per resource, and the last item's default wins; no such item gives None.

Deliberate deviation: LimitRanges are read in name order (upstream reads them in the lister's
order, which is unspecified), so "the last default" is reproducible.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hpa.core.vpa.amount import NO_RESOURCES, Resources
from hpa.core.vpa.capping import LimitRangeItem

__all__ = ["LimitRangeEntry", "merge_limit_range_items"]


@dataclass(frozen=True, slots=True)
class LimitRangeEntry:
    """One ``spec.limits[]`` item (None where the item does not set the list)."""

    type: str
    min: Resources | None = None
    max: Resources | None = None
    default: Resources | None = None


def _pick(current: int | None, new: int | None, *, lower: bool) -> int | None:
    if new is None:
        return current
    if current is None:
        return new
    return min(current, new) if lower else max(current, new)


def _merge(current: Resources | None, new: Resources | None, *, lower: bool) -> Resources | None:
    if new is None:
        return current
    if current is None:
        return new
    return Resources(
        cpu=_pick(current.cpu, new.cpu, lower=lower),
        memory=_pick(current.memory, new.memory, lower=lower),
    )


def merge_limit_range_items(
    entries: Iterable[LimitRangeEntry], limit_type: str
) -> LimitRangeItem | None:
    """``getLimitRangeItem`` over the entries of a namespace's LimitRanges, in name order."""
    minimum: Resources | None = None
    maximum: Resources | None = None
    default: Resources | None = None
    for entry in entries:
        if entry.type != limit_type or (
            entry.min is None and entry.max is None and entry.default is None
        ):
            continue
        if entry.default is not None:
            default = entry.default
        maximum = _merge(maximum, entry.max, lower=True)
        minimum = _merge(minimum, entry.min, lower=False)
    if minimum is None and maximum is None and default is None:
        return None
    return LimitRangeItem(
        min=minimum or NO_RESOURCES, max=maximum or NO_RESOURCES, default=default or NO_RESOURCES
    )
