"""The horizontal controller's ports: what it needs from the world, as small protocols.

Upstream counterparts, one per port: ``metricsclient.MetricsClient``
(``pkg/controller/podautoscaler/metrics/interfaces.go``: ``GetResourceMetric``, ``GetRawMetric``,
``GetObjectMetric``, ``GetExternalMetric``), ``scaleclient.ScalesGetter`` (``Get``/``Update`` of
``/scale``), the HPA lister and ``HorizontalPodAutoscalers(ns).UpdateStatus``,
``record.EventRecorder``, the pod lister (``podLister.Pods(ns).List(selector)``), the selector
store of ``hpa_selector_store.go`` (``hpaSelectorTracker``) and ``k8s.io/utils/clock``.

The controller owns these protocols; two families implement them: :mod:`hpa.controllers.api_ports`
adapts ``hpa.kube`` (informer caches, ``/scale``, ``/status``, events) and ``hpa.metrics`` the
aggregated metrics APIs, and the simulator keeps everything in memory. No protocol mentions
kubernetes_asyncio or pydantic: arguments and results are ``hpa.core`` values, strings, the small
frozen records defined here, and ``hpa.kube``'s ``Scale`` with its update results
(``ScaleUpdated``, ``ScaleConflict``) and ``StatusWriteOutcome``, each defined once there.

Deliberate deviations from upstream's interfaces:

* metrics calls return the observation *or* a :class:`~hpa.core.decision.MetricFetchError`
  (upstream returns ``(value, timestamp, error)``); an implementation should not raise for an
  expected failure, and the controller turns anything raised into a fetch error of that metric;
* selectors cross the metrics port as strings in ``labels.Selector.String()`` form (what the
  aggregated APIs take as ``labelSelector`` / ``metricLabelSelector``);
* the scale update returns a conflict as a value carrying a fresh read (``ScaleConflict``), so the
  controller can re-decide once without a second GET, and never retries a write by itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Protocol

from hpa.core.conditions import Event
from hpa.core.decision import (
    ExternalMetricObservation,
    HorizontalPodAutoscalerStatus,
    MetricFetchError,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.selector import Selector
from hpa.core.spec import CrossVersionObjectReference, HorizontalPodAutoscalerSpec
from hpa.kube.records import PodRecord
from hpa.kube.scale import Scale, ScaleUpdateResult
from hpa.kube.status import StatusWriteOutcome

__all__ = [
    "Clock",
    "EventRecorder",
    "HPASelectorIndex",
    "HorizontalPodAutoscalerLister",
    "HorizontalPodAutoscalerObject",
    "HorizontalPodAutoscalerStatusWriter",
    "MetricsClient",
    "PodLister",
    "ScaleClient",
]


# ------------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class HorizontalPodAutoscalerObject:
    """One ``autoscaling/v2`` HPA as the controller reads it from the cache.

    ``spec`` and ``status`` are core values (converted once per resourceVersion by the lister);
    ``generation`` feeds ``status.observedGeneration``; ``annotations`` carry the per-HPA dry-run
    switch (``hpa.dry-run/enabled: "true"``).
    """

    namespace: str
    name: str
    _: KW_ONLY
    spec: HorizontalPodAutoscalerSpec
    status: HorizontalPodAutoscalerStatus = field(default_factory=HorizontalPodAutoscalerStatus)
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    observed_generation: int | None = None
    """``status.observedGeneration`` as stored (``None`` when absent)."""
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``namespace/name`` (``cache.MetaNamespaceKeyFunc``)."""
        return f"{self.namespace}/{self.name}"


# --------------------------------------------------------------------------------- ports


class MetricsClient(Protocol):
    """``MetricsClient``: four reads, each answering an observation or a fetch error."""

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        """``GetResourceMetric``: per-pod usage (milli-units) of ``resource`` for the pods
        ``selector`` selects; the sum over containers, or the ``container``'s value."""
        ...

    async def get_raw_metric(
        self, metric_name: str, namespace: str, *, selector: str, metric_selector: str
    ) -> PodMetricsObservation | MetricFetchError:
        """``GetRawMetric``: per-pod values of a custom metric for the selected pods."""
        ...

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        """``GetObjectMetric``: the value of a custom metric describing one object."""
        ...

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        """``GetExternalMetric``: every series of an external metric the selector selects."""
        ...


class ScaleClient(Protocol):
    """``ScalesGetter``: read and update ``/scale`` of the HPA's target."""

    async def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> Scale:
        """The target's Scale; raises on failure (its text becomes ``FailedGetScale``)."""
        ...

    async def update_scale(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        *,
        scale: Scale,
        replicas: int,
    ) -> ScaleUpdateResult:
        """Set ``spec.replicas`` under ``scale.resource_version``. A conflict is a value
        (never retried here); other failures raise (their text becomes ``FailedRescale``)."""
        ...


class HorizontalPodAutoscalerLister(Protocol):
    """The HPA informer cache."""

    def get(self, namespace: str, name: str) -> HorizontalPodAutoscalerObject | None:
        """The cached HPA, ``None`` once it is deleted."""
        ...


class HorizontalPodAutoscalerStatusWriter(Protocol):
    """``UpdateStatus`` of an HPA (the controller decides *whether* to write)."""

    async def update_status(
        self,
        hpa: HorizontalPodAutoscalerObject,
        status: HorizontalPodAutoscalerStatus,
        *,
        observed_generation: int | None = None,
    ) -> StatusWriteOutcome:
        """PUT ``status`` (guarded by ``hpa.resource_version``); raises on failure (its text
        becomes ``FailedUpdateStatus``)."""
        ...


class EventRecorder(Protocol):
    """``record.EventRecorder``: never blocks, never raises."""

    def record(self, hpa: HorizontalPodAutoscalerObject, event: Event) -> None:
        """Record ``event`` about ``hpa``."""
        ...


class PodLister(Protocol):
    """``podLister.Pods(namespace).List(selector)`` on the pod informer cache."""

    def list_pods(self, namespace: str, selector: Selector) -> Sequence[PodRecord]:
        """The cached pods of ``namespace`` whose labels ``selector`` matches (each with the
        replica calculator's pod shape, ``info``, built when the pod arrived)."""
        ...


class HPASelectorIndex(Protocol):
    """``hpaSelectorTracker``: every known HPA's last selector, per namespace.

    ``put_if_absent`` registers an HPA when the informer first sees it (with ``NOTHING``);
    ``put_if_present`` refreshes its selector during a reconcile without resurrecting a deleted
    HPA; ``hpas_matching_pods`` is the read-only overlap query.
    """

    def put_if_absent(self, namespace: str, key: str, *, selector: Selector) -> bool: ...

    def put_if_present(self, namespace: str, key: str, *, selector: Selector) -> bool: ...

    def delete(self, namespace: str, key: str) -> None: ...

    def hpas_matching_pods(
        self, namespace: str, pod_labels: Iterable[Mapping[str, str]], *, limit: int = 0
    ) -> tuple[str, ...]:
        """Keys of the HPAs whose selector matches at least one label set (sorted; at most
        ``limit`` when ``limit > 0``)."""
        ...


class Clock(Protocol):
    """``clock.Clock``, as much as a reconcile needs (``hpa.kube.clock.Clock`` satisfies it)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (durations, deadlines)."""
        ...

    def now(self) -> datetime:
        """Aware UTC wall time (stabilization history, condition and scale timestamps)."""
        ...
