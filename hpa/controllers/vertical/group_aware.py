"""The recommender's side of the ``group-aware`` model (:mod:`hpa.core.vpa.group_aware`): the
usage samples of each ``group-aware`` VPA, each with the replica count of the VPA's target when it
was taken, and the pass that applies the model to the plain recommendation.

The replica count is the target's ``spec.replicas`` in the controller informers' cache (no API
call); a target the cache does not hold (an object known only through ``/scale``) records no
samples, and the VPA keeps the plain model. The per-pod load is ``1 / replicas`` and the target
load ``1 / current replicas`` (what the HPA holds the workload at now). Samples are kept per VPA,
container name and resource, the last ``capacity`` (720: half a day at the default one-minute
interval) of each, in memory only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

import structlog

from hpa.core.explain import TraceEntry
from hpa.core.vpa.amount import ResourceName, Resources, scale_resource
from hpa.core.vpa.awareness import HorizontalConflict
from hpa.core.vpa.cluster import ClusterState, PodState, VpaId, VpaState
from hpa.core.vpa.group_aware import (
    GROUP_AWARE_RECOMMENDER_NAME,
    GroupSample,
    apply_group_size_model,
)
from hpa.core.vpa.matching import ControllerKey
from hpa.core.vpa.policy import PodResourcePolicy
from hpa.core.vpa.recommender import apply_vpa_policy
from hpa.kube.targets import ControllerLookup

__all__ = ["DEFAULT_CAPACITY", "MODEL_GROUP_AWARE", "GroupSizeHistory"]

log = structlog.get_logger("hpa.controllers.vertical.group_aware")

MODEL_GROUP_AWARE = GROUP_AWARE_RECOMMENDER_NAME
DEFAULT_CAPACITY = 720

_Key = tuple[str, ResourceName]


class GroupSizeHistory:
    """Samples with group sizes for the ``group-aware`` VPAs a process serves."""

    def __init__(self, controllers: ControllerLookup, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._controllers = controllers
        self._capacity = capacity
        self._targets: dict[VpaId, ControllerKey] = {}
        self._samples: dict[VpaId, dict[_Key, deque[GroupSample]]] = {}

    def sync(self, targets: Mapping[VpaId, ControllerKey | None]) -> None:
        """The ``group-aware`` VPAs now served, with their target; the samples of the others are
        dropped."""
        self._targets = {vpa_id: t for vpa_id, t in targets.items() if t is not None}
        for vpa_id in list(self._samples):
            if vpa_id not in self._targets:
                del self._samples[vpa_id]

    def replicas(self, vpa_id: VpaId) -> int | None:
        """The target's replica count in the informers' cache (None when not cached)."""
        target = self._targets.get(vpa_id)
        if target is None:
            return None
        record = self._controllers.get(target.kind, target.namespace, target.name)
        return None if record is None else record.replicas

    def record(
        self, cluster: ClusterState, pod: PodState, container: str, resource: str, amount: int
    ) -> None:
        """One usage sample of ``pod``'s ``container`` (millicores or bytes), for each
        ``group-aware`` VPA that selects the pod."""
        if not self._targets or resource not in ("cpu", "memory"):
            return
        labels = cluster.label_set_map.get(pod.label_set_key, {})
        for vpa_id in self._targets:
            vpa = cluster.vpas.get(vpa_id)
            if vpa is None or vpa_id.namespace != pod.id.namespace:
                continue
            if vpa.pod_selector is None or not vpa.pod_selector.matches(labels):
                continue
            replicas = self.replicas(vpa_id)
            if not replicas:
                continue
            by_key = self._samples.setdefault(vpa_id, {})
            key = (container, ResourceName(resource))
            window = by_key.get(key)
            if window is None:
                window = by_key[key] = deque(maxlen=self._capacity)
            window.append(GroupSample(float(amount), replicas))

    def samples(self, vpa_id: VpaId) -> Mapping[_Key, Sequence[GroupSample]]:
        return self._samples.get(vpa_id, {})

    def apply(
        self,
        vpa: VpaState,
        conflicts: Sequence[HorizontalConflict],
        *,
        safety_margin_fraction: float,
        pod_minimum: Resources,
        policy: PodResourcePolicy | None,
    ) -> tuple[TraceEntry, ...]:
        """Replace ``vpa``'s plain recommendation by the group-size model's where it answers,
        at least each container's share of ``pod_minimum`` (cpu millicores, memory bytes) and capped
        by the VPA's policy; the trace says, per container and resource, which model
        answered and why."""
        if not vpa.recommendation:
            return ()
        replicas = self.replicas(vpa.id)
        share = 1.0 / len(vpa.recommendation)
        minimum = Resources(
            cpu=scale_resource(pod_minimum.cpu or 0, share),
            memory=scale_resource(pod_minimum.memory or 0, share),
        )

        def excluded(container: str, resource: ResourceName) -> bool:
            return any(c.resource == resource.value and c.applies_to(container) for c in conflicts)

        adjusted, entries = apply_group_size_model(
            vpa.recommendation,
            self.samples(vpa.id),
            target_load=None if not replicas else 1.0 / replicas,
            excluded=excluded,
            safety_margin_fraction=safety_margin_fraction,
            minimum=minimum,
        )
        capped, capping = apply_vpa_policy(adjusted, policy)
        vpa.update_recommendation(capped)
        for entry in entries:
            log.debug(
                "group_size_model",
                vpa=f"{vpa.id.namespace}/{vpa.id.vpa_name}",
                verdict=entry.summary,
                details={key: str(value) for key, value in entry.details},
            )
        return (*entries, *capping)
