"""The recommender's side of the ``group-aware`` model (:mod:`hpa.core.vpa.group_aware`): the
usage samples of each ``group-aware`` VPA, each with the replica count of the VPA's target and the
per-pod load when it was taken, and the pass that applies the model to the plain recommendation.

Everything comes from the informers' caches (no API call):

* the replica count is the target's ``spec.replicas`` in the controller informers' cache; a
  target the cache does not hold (an object known only through ``/scale``) records no samples,
  and the VPA keeps the plain model;
* the per-pod load is the per-pod value of the metric the HPA scaling the target is scaling on
  (:func:`hpa.core.vpa.group_aware.hpa_load`: the HPA's ``status.currentMetrics``, the metric
  with the highest usage ratio; a ``Utilization`` target is turned into a per-pod value with the
  sampled pod's requests), and the target load is that metric's ``spec.metrics`` target per pod.
  For a ``Resource`` / ``ContainerResource`` metric the load is the pod's own usage of the
  resource in the same metrics sample as the recorded usage (``record``'s ``usage``), the load
  of the same instant; for the others it is the HPA's status, assumed at most one HPA sync period
  old (the HPA writes no sync time).
  The HPA is the one in the VPA's namespace whose ``scaleTargetRef`` has the target's kind and
  name (the first by name if several do).
* With no such HPA, or no current value for any of its metrics (no status yet, every metric
  failing), the sample's load is ``1 / replicas`` and the target load ``1 / current replicas``.

The model is fitted on the samples of the metric the HPA is scaling on now (a sample taken while
another metric decided is in another unit), or on all samples with the ``1 / replicas`` load when
no HPA metric is known now. Samples are kept per VPA, container name and resource: every pod's
samples of the last ``passes`` passes (720: half a day at the default one-minute interval), at
most ``max_samples`` (50,000) of each, in memory only; equal samples recorded one after the other
in a pass (pods alike) are kept as one of their summed weight.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import structlog

from hpa.core.explain import TraceEntry
from hpa.core.vpa.amount import ResourceName, Resources, scale_resource
from hpa.core.vpa.awareness import HorizontalConflict, HorizontalScaler
from hpa.core.vpa.cluster import ClusterState, PodState, VpaId, VpaState
from hpa.core.vpa.group_aware import (
    GROUP_AWARE_RECOMMENDER_NAME,
    GroupSample,
    HpaLoad,
    apply_group_size_model,
    hpa_load,
)
from hpa.core.vpa.matching import ControllerKey
from hpa.core.vpa.policy import PodResourcePolicy
from hpa.core.vpa.recommender import apply_vpa_policy
from hpa.kube.targets import ControllerLookup

__all__ = [
    "DEFAULT_MAX_SAMPLES",
    "DEFAULT_PASSES",
    "MODEL_GROUP_AWARE",
    "GroupSizeHistory",
    "PodUsage",
]

log = structlog.get_logger("hpa.controllers.vertical.group_aware")

MODEL_GROUP_AWARE = GROUP_AWARE_RECOMMENDER_NAME
DEFAULT_PASSES = 720
"""Passes whose samples are kept: half a day at the default one-minute interval."""
DEFAULT_MAX_SAMPLES = 50_000
"""Samples kept per VPA, container and resource at most (the oldest go first)."""

_Key = tuple[str, ResourceName]
PodUsage = Mapping[str, Mapping[str, float]]
"""A pod's usage in one metrics sample: per container, per resource (cpu millicores, memory
bytes)."""
_Window = deque[tuple[int, str | None, GroupSample]]
"""Samples with the pass that took them and the name of the HPA metric their load is a value of
(None: no load)."""


class GroupSizeHistory:
    """Samples with group sizes and per-pod loads for the ``group-aware`` VPAs a process serves
    (``hpas``: the HPAs of a namespace, from the informers' cache, with their status)."""

    def __init__(
        self,
        controllers: ControllerLookup,
        *,
        hpas: Callable[[str], Sequence[HorizontalScaler]] | None = None,
        passes: int = DEFAULT_PASSES,
        max_samples: int = DEFAULT_MAX_SAMPLES,
    ) -> None:
        self._controllers = controllers
        self._hpas = hpas
        self._passes = passes
        self._max_samples = max_samples
        self._pass = 0
        self._targets: dict[VpaId, ControllerKey] = {}
        self._scalers: dict[VpaId, HorizontalScaler] = {}
        self._now: dict[VpaId, HpaLoad] = {}
        self._samples: dict[VpaId, dict[_Key, _Window]] = {}

    def sync(self, targets: Mapping[VpaId, ControllerKey | None]) -> None:
        """The ``group-aware`` VPAs now served, with their target, and the HPA scaling each
        target now; the samples of the others are dropped. Called once per pass, before the
        samples are recorded."""
        self._targets = {vpa_id: t for vpa_id, t in targets.items() if t is not None}
        self._pass += 1
        oldest = self._pass - self._passes
        for vpa_id in list(self._samples):
            if vpa_id not in self._targets:
                del self._samples[vpa_id]
                continue
            for window in self._samples[vpa_id].values():
                while window and window[0][0] <= oldest:
                    window.popleft()
        self._now = {}
        self._scalers = {}
        if self._hpas is None:
            return
        listed: dict[str, Sequence[HorizontalScaler]] = {}
        for vpa_id, target in self._targets.items():
            if target.namespace not in listed:
                listed[target.namespace] = self._hpas(target.namespace)
            scaling = sorted(
                (
                    h
                    for h in listed[target.namespace]
                    if h.spec.scale_target_ref.kind == target.kind
                    and h.spec.scale_target_ref.name == target.name
                ),
                key=lambda h: h.name,
            )
            if scaling:
                self._scalers[vpa_id] = scaling[0]

    def replicas(self, vpa_id: VpaId) -> int | None:
        """The target's replica count in the informers' cache (None when not cached)."""
        target = self._targets.get(vpa_id)
        if target is None:
            return None
        record = self._controllers.get(target.kind, target.namespace, target.name)
        return None if record is None else record.replicas

    def load(self, vpa_id: VpaId, pod: PodState, usage: PodUsage | None = None) -> HpaLoad | None:
        """The per-pod load of the metric the VPA's HPA is scaling on, with ``pod``'s requests
        for a ``Utilization`` target (None when no HPA metric is known); for a ``Resource`` or
        ``ContainerResource`` metric, ``pod``'s own usage in ``usage`` (the same metrics sample)
        where it has it."""
        scaler = self._scalers.get(vpa_id)
        if scaler is None:
            return None

        def request(resource: str, container: str | None) -> float | None:
            return _request(pod, resource, container)

        def own(resource: str, container: str | None) -> float | None:
            return None if usage is None else _usage(pod, usage, resource, container)

        return hpa_load(scaler.spec, scaler.status, request=request, usage=own)

    def record(
        self,
        cluster: ClusterState,
        pod: PodState,
        container: str,
        resource: str,
        amount: int,
        *,
        usage: PodUsage | None = None,
    ) -> None:
        """One usage sample of ``pod``'s ``container`` (millicores or bytes), for each
        ``group-aware`` VPA that selects the pod; ``usage``: the usage of ``pod``'s containers in
        the same metrics sample (container, then resource: millicores or bytes), whose value of
        the HPA's resource is the sample's load (see :meth:`load`)."""
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
            load = self.load(vpa_id, pod, usage)
            if load is not None:
                self._now[vpa_id] = load
            by_key = self._samples.setdefault(vpa_id, {})
            key = (container, ResourceName(resource))
            window = by_key.get(key)
            if window is None:
                window = by_key[key] = deque(maxlen=self._max_samples)
            metric = None if load is None else load.metric
            sample = (
                GroupSample(float(amount), replicas)
                if load is None
                else GroupSample(float(amount), replicas, load.load, target=load.target)
            )
            if window and window[-1][:2] == (self._pass, metric) and _same(window[-1][2], sample):
                # equal to the previous sample of this pass (pods alike): one sample of the
                # summed weight, the same fit and percentile
                last = window.pop()[2]
                sample = replace(last, weight=last.weight + sample.weight)
            window.append((self._pass, metric, sample))

    def samples(self, vpa_id: VpaId) -> Mapping[_Key, Sequence[GroupSample]]:
        """Every sample kept for ``vpa_id``, oldest first."""
        windows = self._samples.get(vpa_id, {})
        return {key: [s for _, _, s in window] for key, window in windows.items()}

    def fitted(self, vpa_id: VpaId) -> tuple[Mapping[_Key, Sequence[GroupSample]], float | None]:
        """The samples the model is fitted on and the target load: those of the metric the HPA
        is scaling on now and its target per pod, or every sample with the ``1 / replicas`` load
        and ``1 / current replicas`` when no HPA metric is known now."""
        windows = self._samples.get(vpa_id, {})
        now = self._now.get(vpa_id)
        if now is not None:
            return (
                {
                    key: [s for _, metric, s in window if metric == now.metric]
                    for key, window in windows.items()
                },
                now.target,
            )
        replicas = self.replicas(vpa_id)
        return (
            {key: [replace(s, load=None) for *_, s in window] for key, window in windows.items()},
            None if not replicas else 1.0 / replicas,
        )

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
        samples, target_load = self.fitted(vpa.id)
        share = 1.0 / len(vpa.recommendation)
        minimum = Resources(
            cpu=scale_resource(pod_minimum.cpu or 0, share),
            memory=scale_resource(pod_minimum.memory or 0, share),
        )

        def excluded(container: str, resource: ResourceName) -> bool:
            return any(c.resource == resource.value and c.applies_to(container) for c in conflicts)

        adjusted, entries = apply_group_size_model(
            vpa.recommendation,
            samples,
            target_load=target_load,
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


def _same(a: GroupSample, b: GroupSample) -> bool:
    return (a.usage, a.replicas, a.load, a.target) == (b.usage, b.replicas, b.load, b.target)


def _usage(pod: PodState, usage: PodUsage, resource: str, container: str | None) -> float | None:
    """``pod``'s usage of ``resource`` in ``usage`` in cores or bytes: of ``container``, or summed
    over its containers; None when the sample lacks one of them."""
    if resource not in ("cpu", "memory"):
        return None
    names = list(pod.requests) if container is None else [container]
    if not names:
        return None
    total = 0.0
    for name in names:
        amount = usage.get(name, {}).get(resource)
        if amount is None:
            return None
        total += amount
    return total / 1000 if resource == "cpu" else total


def _request(pod: PodState, resource: str, container: str | None) -> float | None:
    """``pod``'s request of ``resource`` in cores or bytes: of ``container``, or summed over its
    containers; None when one of them has none (as the HPA, which then cannot compute
    utilization)."""
    if resource not in ("cpu", "memory"):
        return None
    requests = pod.requests if container is None else {container: pod.requests.get(container)}
    total = 0.0
    for resources in requests.values():
        amount = None if resources is None else resources.get(ResourceName(resource))
        if amount is None:
            return None
        total += amount
    if not requests:
        return None
    return total / 1000 if resource == "cpu" else total
