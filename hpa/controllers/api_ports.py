"""The horizontal controller's ports backed by the API server, beside the ports they implement.

Upstream counterparts: the listers of client-go's shared informers (``HorizontalPodAutoscalers``,
``Pods``), ``scaleclient.ScalesGetter``, ``HorizontalPodAutoscalers(ns).UpdateStatus`` and
``record.EventRecorder``, as ``pkg/controller/podautoscaler/horizontal.go`` uses them.

Each class adapts one part of ``hpa.kube`` (informer stores, ``/scale``, ``/status``, events) to
one protocol of :mod:`hpa.controllers.ports`; ``hpa.app.controller`` only wires them together.

Deliberate deviations:

* converted HPAs are cached per ``resourceVersion`` so a reconcile converts only what changed,
  and pod lists are kept per namespace and selector until a pod of that namespace changes;
* the Scale of a built-in target (``apps`` Deployment, StatefulSet, ReplicaSet) is read from
  informers of those kinds (:class:`InformerScaleClient`), so a steady HPA costs no API request;
  writes still go through ``/scale`` with the object's resourceVersion, and a stale read ends in
  409 and a fresh ``GET /scale`` (the controller's conflict path). Upstream GETs ``/scale`` every
  sync.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hpa.controllers.conversion import hpa_from_dict, status_to_dict
from hpa.controllers.ports import HorizontalPodAutoscalerObject
from hpa.core.conditions import Event
from hpa.core.decision import HorizontalPodAutoscalerStatus
from hpa.core.selector import Selector
from hpa.core.spec import CrossVersionObjectReference
from hpa.kube import scale as kube_scale
from hpa.kube import status as kube_status
from hpa.kube.events import EventRecorder, hpa_reference
from hpa.kube.informer import Informer, Store
from hpa.kube.records import HpaRecord, PodRecord, ScaleTargetRef, WorkloadRecord
from hpa.kube.scale import Scale, ScaleUpdateResult
from hpa.kube.status import StatusWriteOutcome

__all__ = [
    "InformerHPALister",
    "InformerPodLister",
    "InformerScaleClient",
    "KubeEventRecorder",
    "KubeScaleClient",
    "KubeStatusWriter",
    "scale_from_workload",
]


class InformerHPALister:
    """``HorizontalPodAutoscalerLister`` over the HPA informer's store (converted once per
    resourceVersion)."""

    def __init__(self, store: Store[HpaRecord]) -> None:
        self._store = store
        self._cache: dict[str, tuple[str, HorizontalPodAutoscalerObject]] = {}

    def get(self, namespace: str, name: str) -> HorizontalPodAutoscalerObject | None:
        record = self._store.get_by_name(namespace, name)
        key = f"{namespace}/{name}"
        if record is None:
            self._cache.pop(key, None)
            return None
        cached = self._cache.get(key)
        if cached is not None and cached[0] == record.resource_version:
            return cached[1]
        converted = hpa_from_dict(record.raw)
        self._cache[key] = (record.resource_version, converted)
        return converted


class InformerPodLister:
    """``PodLister`` over the pod informer's store.

    The records already carry the replica calculator's pod shape (built when each pod arrived).
    The answer for one namespace and selector is kept until a pod of that namespace changes
    (``Store.namespace_version``), so a steady reconcile lists its pods with one lookup."""

    def __init__(self, store: Store[PodRecord], *, max_lists: int = 65536) -> None:
        self._store = store
        self._lists: dict[tuple[str, Selector], tuple[int, tuple[PodRecord, ...]]] = {}
        self._max_lists = max_lists

    def list_pods(self, namespace: str, selector: Selector) -> Sequence[PodRecord]:
        version = self._store.namespace_version(namespace)
        known = self._lists.get((namespace, selector))
        if known is not None and known[0] == version:
            return known[1]
        if len(self._lists) >= self._max_lists:
            self._lists.clear()  # selectors of deleted HPAs go too; live ones come back
        answer = tuple(self._store.select(namespace, selector))
        self._lists[namespace, selector] = (version, answer)
        return answer


def _target(ref: CrossVersionObjectReference) -> ScaleTargetRef:
    return ScaleTargetRef(api_version=ref.api_version, kind=ref.kind, name=ref.name)


class KubeScaleClient:
    """``ScaleClient`` over ``hpa.kube.scale.ScaleClient``."""

    def __init__(self, scales: kube_scale.ScaleClient) -> None:
        self._scales = scales

    async def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> Scale:
        return await self._scales.get(namespace, _target(target))

    async def update_scale(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        *,
        scale: Scale,
        replicas: int,
    ) -> ScaleUpdateResult:
        return await self._scales.update(namespace, _target(target), scale, replicas=replicas)


class _WorkloadScaleDocument(Mapping[str, Any]):
    """The Scale JSON of a workload record, built only when read (a write needs it; a steady
    HPA never does), so 10,000 cached Scales hold no dicts."""

    __slots__ = ("_record", "_selector")

    def __init__(self, record: WorkloadRecord, selector: str) -> None:
        self._record = record
        self._selector = selector

    def _document(self) -> dict[str, Any]:
        record = self._record
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {
                "name": record.name,
                "namespace": record.namespace,
                "resourceVersion": record.resource_version,
            },
            "spec": {"replicas": record.spec_replicas},
            "status": {"replicas": record.status_replicas, "selector": self._selector},
        }

    def __getitem__(self, key: str) -> Any:
        return self._document()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(("apiVersion", "kind", "metadata", "spec", "status"))

    def __len__(self) -> int:
        return 5


def scale_from_workload(record: WorkloadRecord) -> Scale:
    """The ``autoscaling/v1`` Scale the API server would answer for a Deployment, StatefulSet or
    ReplicaSet: ``spec.replicas``, ``status.replicas``, the selector in string form and the
    object's resourceVersion (a subresource shares its object's)."""
    selector = record.selector.to_string()
    return Scale(
        namespace=record.namespace,
        name=record.name,
        resource_version=record.resource_version,
        spec_replicas=record.spec_replicas,
        status_replicas=record.status_replicas,
        selector=selector,
        raw=_WorkloadScaleDocument(record, selector),
    )


class InformerScaleClient:
    """``ScaleClient`` reading built-in targets from workload informers, writing via ``/scale``.

    ``informers`` maps a kind of group ``apps`` to its informer. A target of another group or
    kind, one not in the cache, one whose selector does not parse, or any target while its
    kind's informer is not current (not synced yet, or its watch failed and has delivered
    nothing since: the copy may miss changes, as after a network fault) is read with
    ``GET /scale`` through ``live``, as kube-controller-manager reads every target. Updates
    always go through ``live`` (``PUT /scale`` guarded by the read's resourceVersion).
    """

    def __init__(
        self, informers: Mapping[str, Informer[WorkloadRecord]], live: KubeScaleClient
    ) -> None:
        self._informers = informers
        self._live = live
        self._snapshots: dict[tuple[str, str, str], tuple[WorkloadRecord, Scale]] = {}
        self.cached_reads = 0
        self.live_reads = 0

    def _cached(self, namespace: str, target: CrossVersionObjectReference) -> Scale | None:
        group, _, _ = target.api_version.rpartition("/")
        if group != "apps":
            return None
        informer = self._informers.get(target.kind)
        if informer is None or not informer.is_current():
            return None
        record = informer.store.get_by_name(namespace, target.name)
        key = (target.kind, namespace, target.name)
        if record is None or record.selector.matches_nothing:
            self._snapshots.pop(key, None)
            return None
        known = self._snapshots.get(key)
        if known is not None and known[0] is record:
            return known[1]  # the informer's record is unchanged: so is its Scale
        snapshot = scale_from_workload(record)
        self._snapshots[key] = (record, snapshot)
        return snapshot

    async def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> Scale:
        cached = self._cached(namespace, target)
        if cached is not None:
            self.cached_reads += 1
            return cached
        self.live_reads += 1
        return await self._live.get_scale(namespace, target)

    async def update_scale(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        *,
        scale: Scale,
        replicas: int,
    ) -> ScaleUpdateResult:
        return await self._live.update_scale(namespace, target, scale=scale, replicas=replicas)


class KubeStatusWriter:
    """``HorizontalPodAutoscalerStatusWriter`` over ``hpa.kube.status.StatusWriter`` (which
    sends the informer's raw object back, unknown fields included)."""

    def __init__(self, writer: kube_status.StatusWriter, store: Store[HpaRecord]) -> None:
        self._writer = writer
        self._store = store

    async def update_status(
        self,
        hpa: HorizontalPodAutoscalerObject,
        status: HorizontalPodAutoscalerStatus,
        *,
        observed_generation: int | None = None,
    ) -> StatusWriteOutcome:
        record = self._store.get_by_name(hpa.namespace, hpa.name)
        if record is None or record.resource_version != hpa.resource_version:
            return StatusWriteOutcome.CONFLICT
        result = await self._writer.write(
            record, status_to_dict(status, observed_generation=observed_generation)
        )
        if result.outcome == StatusWriteOutcome.CONFLICT:
            return StatusWriteOutcome.CONFLICT
        return StatusWriteOutcome.WRITTEN  # an unchanged status counts as written


class KubeEventRecorder:
    """``EventRecorder`` over ``hpa.kube.events.EventRecorder``."""

    def __init__(self, recorder: EventRecorder) -> None:
        self._recorder = recorder

    def record(self, hpa: HorizontalPodAutoscalerObject, event: Event) -> None:
        self._recorder.record(
            hpa_reference(
                hpa.namespace, hpa.name, uid=hpa.uid, resource_version=hpa.resource_version
            ),
            event,
        )
