"""Which VPA controls a pod.

Upstream counterparts (kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1):
``pkg/utils/vpa/api.go`` (``GetUpdateMode``: unset or empty is ``Recreate``; ``HasStartupBoost``;
``PodMatchesVPA``/``PodLabelsMatchVPA``: same namespace and the target's selector matches the
pod's labels; ``Stronger``: the older VPA wins, then the smaller name) and
``pkg/admission-controller/resource/vpa/matcher.go`` (``GetMatchingVPA``: VPAs whose
``targetRef`` names the pod's top-most controller, by namespace, kind and name; a VPA in mode
``Off`` is skipped unless it has a startup boost).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from hpa.core.selector import Selector

__all__ = [
    "ControllerKey",
    "UpdateMode",
    "VpaTarget",
    "get_update_mode",
    "matching_vpa",
    "pod_matches_vpa",
    "stronger",
]


class UpdateMode(StrEnum):
    """``UpdateMode`` of ``spec.updatePolicy.updateMode``."""

    OFF = "Off"
    INITIAL = "Initial"
    RECREATE = "Recreate"
    IN_PLACE_OR_RECREATE = "InPlaceOrRecreate"
    IN_PLACE = "InPlace"
    AUTO = "Auto"


def get_update_mode(mode: str | None) -> str:
    """``GetUpdateMode``: an unset or empty mode is ``Recreate``; others as written."""
    return mode or UpdateMode.RECREATE.value


@dataclass(frozen=True, slots=True)
class ControllerKey:
    """``ControllerKeyWithAPIVersion``: a controller in a namespace."""

    namespace: str
    kind: str
    name: str
    api_version: str = ""

    def index_key(self) -> tuple[str, str, str]:
        """``TargetRefIndexKey``: namespace, kind and name (the API version does not count)."""
        return (self.namespace, self.kind, self.name)


@dataclass(frozen=True, slots=True)
class VpaTarget:
    """A VPA as matching reads it, with its target's selector (None when it cannot be read)."""

    namespace: str
    name: str
    created: datetime
    target: ControllerKey
    update_mode: str | None = None
    has_startup_boost: bool = False
    selector: Selector | None = None


def pod_matches_vpa(namespace: str, labels: Mapping[str, str], vpa: VpaTarget) -> bool:
    """``PodMatchesVPA``."""
    return vpa.selector is not None and namespace == vpa.namespace and vpa.selector.matches(labels)


def stronger(a: VpaTarget, b: VpaTarget | None) -> bool:
    """``Stronger``: the older VPA controls the pod; equal times fall back to the name."""
    if b is None:
        return True
    if a.created != b.created:
        return a.created < b.created
    return a.name < b.name


def matching_vpa(
    namespace: str,
    labels: Mapping[str, str],
    parent: ControllerKey | None,
    vpas: Iterable[VpaTarget],
    *,
    skip_off: bool = True,
) -> VpaTarget | None:
    """``GetMatchingVPA`` for a pod whose top-most controller is ``parent``."""
    if parent is None:
        return None
    chosen: VpaTarget | None = None
    for vpa in vpas:
        if vpa.target.index_key() != parent.index_key():
            continue
        mode = get_update_mode(vpa.update_mode)
        if skip_off and mode == UpdateMode.OFF and not vpa.has_startup_boost:
            continue
        if pod_matches_vpa(namespace, labels, vpa) and stronger(vpa, chosen):
            chosen = vpa
    return chosen
