"""The updater's modes: which VPAs it acts on, and per-resource modes (our extension).

Upstream counterparts (kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1):
``pkg/updater/logic/updater.go`` (``RunOnce``: a VPA is processed in ``Recreate``, ``Auto``,
``InPlaceOrRecreate`` and ``InPlace``, or in any mode when it has a CPU startup boost; ``Off`` and
``Initial`` pods are never evicted or resized; ``Auto`` is deprecated and behaves as
``Recreate``) and ``pkg/utils/vpa/api.go`` (``GetUpdateMode``: unset is ``Recreate``).

Extension: per-resource update modes (kubernetes/autoscaler#7937). A VPA annotated

    vpa.hpa.dev/resource-update-modes: "cpu=InPlace,memory=Initial"

updates each listed resource with its own mode; unlisted resources use the VPA's mode. The rule:

- a resource whose mode is ``Off`` or ``Initial`` is never changed by the updater (it is taken
  out of the recommendation the updater applies, exactly as a resource an HPA scales on);
- the remaining resources are applied together, with the **least disruptive** of their modes:
  ``InPlace`` < ``InPlaceOrRecreate`` < ``Recreate`` (``Auto`` counts as ``Recreate``), so a
  resource that must never cause an eviction is honoured;
- an annotation that does not parse (unknown resource or mode, missing ``=``) is reported with a
  one-line error and ignored: the VPA's own mode applies to every resource.

The admission webhook does not read the annotation: at pod creation every controlled resource is
set (as upstream's ``Initial``); ``Off`` per resource therefore means "not changed on running
pods".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hpa.core.vpa.matching import UpdateMode, get_update_mode

__all__ = [
    "RESOURCE_UPDATE_MODES_ANNOTATION",
    "UPDATING_MODES",
    "UpdatePlan",
    "parse_resource_update_modes",
    "update_plan",
]

RESOURCE_UPDATE_MODES_ANNOTATION = "vpa.hpa.dev/resource-update-modes"

UPDATING_MODES = frozenset(
    {
        UpdateMode.RECREATE.value,
        UpdateMode.AUTO.value,
        UpdateMode.IN_PLACE_OR_RECREATE.value,
        UpdateMode.IN_PLACE.value,
    }
)
"""The modes in which the updater changes running pods."""

_KNOWN_RESOURCES = frozenset({"cpu", "memory"})
_DISRUPTION = {
    UpdateMode.IN_PLACE.value: 0,
    UpdateMode.IN_PLACE_OR_RECREATE.value: 1,
    UpdateMode.RECREATE.value: 2,
    UpdateMode.AUTO.value: 2,
}


def parse_resource_update_modes(text: str) -> dict[str, str]:
    """``cpu=InPlace,memory=Initial`` as a mapping; raises ``ValueError`` naming the bad part."""
    modes: dict[str, str] = {}
    for part in text.split(","):
        item = part.strip()
        if not item:
            continue
        resource, sep, mode = (piece.strip() for piece in item.partition("="))
        if not sep:
            raise ValueError(f"{RESOURCE_UPDATE_MODES_ANNOTATION}: {item!r} is not resource=mode")
        if resource not in _KNOWN_RESOURCES:
            raise ValueError(
                f"{RESOURCE_UPDATE_MODES_ANNOTATION}: unknown resource {resource!r} (cpu or memory)"
            )
        if mode not in {m.value for m in UpdateMode}:
            raise ValueError(f"{RESOURCE_UPDATE_MODES_ANNOTATION}: unknown mode {mode!r}")
        if resource in modes:
            raise ValueError(f"{RESOURCE_UPDATE_MODES_ANNOTATION}: {resource} is listed twice")
        modes[resource] = mode
    return modes


@dataclass(frozen=True, slots=True)
class UpdatePlan:
    """How the updater treats one VPA's pods: ``mode`` (None: it does not change running pods)
    and the resources it may change (``frozenset()`` when none)."""

    mode: str | None
    resources: frozenset[str]
    error: str = ""


def update_plan(
    vpa_mode: str | None,
    annotations: Mapping[str, str],
    *,
    resources: Iterable[str] = ("cpu", "memory"),
) -> UpdatePlan:
    """The VPA's mode (``GetUpdateMode``) combined with its per-resource modes."""
    mode = get_update_mode(vpa_mode)
    per_resource: dict[str, str] = {}
    error = ""
    text = annotations.get(RESOURCE_UPDATE_MODES_ANNOTATION)
    if text is not None:
        try:
            per_resource = parse_resource_update_modes(text)
        except ValueError as exc:
            error = str(exc)
    chosen = {r: per_resource.get(r, mode) for r in resources}
    updating = {r: m for r, m in chosen.items() if m in UPDATING_MODES}
    if not updating:
        return UpdatePlan(None, frozenset(), error)
    least = min(updating.values(), key=lambda m: _DISRUPTION[m])
    if least == UpdateMode.AUTO.value:
        least = UpdateMode.RECREATE.value
    return UpdatePlan(least, frozenset(updating), error)
