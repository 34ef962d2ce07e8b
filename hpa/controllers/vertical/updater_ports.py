"""Ports of the VPA updater: what it reads (informer stores) and how it acts on pods.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/updater/logic/updater.go`` (the VPA and pod listers, ``eventRecorder``, ``statusValidator``),
``pkg/updater/restriction/pods_eviction_restriction.go`` (``EvictV1``) and
``pods_inplace_restriction.go`` (``Patch(..., "resize")`` and the annotation patch).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from hpa.core.vpa.awareness import HorizontalScaler
from hpa.core.vpa.capacity import NodeCapacity
from hpa.core.vpa.update import ReplicaGroup
from hpa.kube.pod_actions import PodActionError
from hpa.kube.updater_records import UpdaterPodRecord
from hpa.kube.vpa_records import LimitRangeRecord, VpaRecord

__all__ = [
    "AdmissionStatus",
    "ClusterView",
    "PodActionError",
    "PodActions",
    "UpdaterEvents",
]


class ClusterView(Protocol):
    """The informers' stores, read at the start of each loop."""

    def vpas(self) -> Iterable[VpaRecord]: ...

    def pods(self) -> Iterable[UpdaterPodRecord]: ...

    def nodes(self) -> Iterable[NodeCapacity]: ...

    def limit_ranges(self, namespace: str) -> Iterable[LimitRangeRecord]: ...

    def hpas(self, namespace: str) -> Sequence[HorizontalScaler]: ...

    def replicas(self, group: ReplicaGroup) -> int | None:
        """The controller's configured replicas (``getReplicaCount``); None when unknown."""
        ...


class PodActions(Protocol):
    async def evict(self, namespace: str, name: str) -> None:
        """``POST pods/{name}/eviction`` (policy/v1); raises ``PodActionError`` (429 when a
        PodDisruptionBudget forbids it)."""
        ...

    async def resize(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        """JSON Patch on ``pods/{name}/resize``; raises ``PodActionError``."""
        ...

    async def patch(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        """JSON Patch on the pod itself (annotations); raises ``PodActionError``."""
        ...


class UpdaterEvents(Protocol):
    def pod_event(self, pod: UpdaterPodRecord, reason: str, message: str) -> None:
        """A ``Normal`` event on the pod."""
        ...

    def vpa_event(
        self, vpa: VpaRecord, reason: str, message: str, *, warning: bool = False
    ) -> None:
        """An event on the VPA."""
        ...


class AdmissionStatus(Protocol):
    async def is_valid(self) -> bool:
        """``statusValidator.IsStatusValid``: the admission controller's status Lease was renewed
        (or created) within the timeout. Raises ``PodActionError`` when it cannot be read."""
        ...
