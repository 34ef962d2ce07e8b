"""In-memory implementations of the horizontal controller's ports, backed by the workload model.

Upstream counterpart: the informer caches, ``/scale``, ``/status``, the event recorder and the
metrics clients that ``pkg/controller/podautoscaler`` talks to, here all answered from one
:class:`~hpa.sim.workload.Deployment` in virtual time. :class:`VirtualClock` is
``k8s.io/utils/clock`` with time set by the simulator, never read from the machine.

The simulator runs :class:`hpa.controllers.horizontal.HorizontalController` unchanged through
these ports, so a simulated decision is the decision ``hpa controller`` would make from the same
observations.

Deliberate deviations: every call answers at once (no latency, no conflicts, no failures); the
resource metrics port knows ``cpu`` only (manifests with other resources are rejected before the
run by :mod:`hpa.sim.manifest`); every Pods metric is the pod's served request rate and every
Object or External metric is the offered request rate, whatever the metric's name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from hpa.controllers.ports import (
    HorizontalPodAutoscalerObject,
)
from hpa.core.conditions import Event
from hpa.core.decision import (
    ExternalMetricObservation,
    HorizontalPodAutoscalerStatus,
    MetricFetchError,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.replicas import RESOURCE_CPU
from hpa.core.selector import Selector
from hpa.core.spec import CrossVersionObjectReference
from hpa.kube.records import PodRecord
from hpa.kube.scale import Scale, ScaleUpdated, ScaleUpdateResult
from hpa.kube.status import StatusWriteOutcome
from hpa.sim.workload import Deployment, moment

__all__ = [
    "RecordedEvent",
    "ReplayedMetricsClient",
    "SimEventRecorder",
    "SimHorizontalPodAutoscalers",
    "SimMetricsClient",
    "SimPodLister",
    "SimScaleClient",
    "VirtualClock",
]

_MONOTONIC_BASE_SECONDS = 1_000_000.0


class VirtualClock:
    """The controller's clock: ``t_seconds`` of virtual time, set by the simulator only."""

    def __init__(self) -> None:
        self.t_seconds = 0.0
        self._now = moment(0.0)

    def set(self, t_seconds: float) -> None:
        self.t_seconds = t_seconds
        self._now = moment(t_seconds)

    def monotonic(self) -> float:
        return _MONOTONIC_BASE_SECONDS + self.t_seconds

    def now(self) -> datetime:
        return self._now


class SimMetricsClient:
    """``MetricsClient`` over the Deployment's metric pipeline."""

    def __init__(self, deployment: Deployment, clock: VirtualClock) -> None:
        self._deployment = deployment
        self._clock = clock

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        if resource != RESOURCE_CPU:
            return MetricFetchError(f"the simulator has no {resource} metrics (cpu only)")
        samples, stamp = self._deployment.pod_samples(self._clock.t_seconds, cpu=True)
        if not samples:
            return MetricFetchError("no metrics returned from resource metrics API")
        return PodMetricsObservation(samples, stamp)

    async def get_raw_metric(
        self, metric_name: str, namespace: str, *, selector: str, metric_selector: str
    ) -> PodMetricsObservation | MetricFetchError:
        samples, stamp = self._deployment.pod_samples(self._clock.t_seconds, cpu=False)
        if not samples:
            return MetricFetchError("no metrics returned from custom metrics API")
        return PodMetricsObservation(samples, stamp)

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        value_milli, stamp = self._deployment.offered_average_milli(self._clock.t_seconds)
        return ObjectMetricObservation(value_milli, stamp)

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        value_milli, stamp = self._deployment.offered_average_milli(self._clock.t_seconds)
        return ExternalMetricObservation((value_milli,), stamp)


class ReplayedMetricsClient(SimMetricsClient):
    """``MetricsClient`` whose External and Object metrics answer recorded values, in order.

    The ``k``-th External or Object fetch gets ``values_milli[k]`` (what a cluster's metrics API
    served at its ``k``-th sync, e.g. the lab's scripted server in
    ``tests/e2e/test_sim_parity.py``); a fetch after the last value is an error. Resource and Pods
    metrics still come from the workload model."""

    def __init__(
        self, deployment: Deployment, clock: VirtualClock, *, values_milli: Sequence[int]
    ) -> None:
        super().__init__(deployment, clock)
        self._values = tuple(values_milli)
        self.fetches = 0

    def _next(self) -> int | None:
        index = self.fetches
        self.fetches += 1
        return self._values[index] if index < len(self._values) else None

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        value_milli = self._next()
        if value_milli is None:
            return MetricFetchError(f"the replay has no value for fetch {self.fetches}")
        return ObjectMetricObservation(value_milli, moment(self._clock.t_seconds))

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        value_milli = self._next()
        if value_milli is None:
            return MetricFetchError(f"the replay has no value for fetch {self.fetches}")
        return ExternalMetricObservation((value_milli,), moment(self._clock.t_seconds))


class SimScaleClient:
    """``ScaleClient``: ``/scale`` of the simulated Deployment; an update creates or deletes
    pods at once."""

    def __init__(self, deployment: Deployment, clock: VirtualClock) -> None:
        self._deployment = deployment
        self._clock = clock
        self._version = 1
        self._version_text = "1"
        """``str(self._version)``, kept with it."""
        self._cached: Scale | None = None

    def _snapshot(self) -> Scale:
        deployment = self._deployment
        cached = self._cached
        if (
            cached is not None
            and cached.spec_replicas == deployment.spec_replicas
            and cached.status_replicas == len(deployment.pods)
            and cached.resource_version == self._version_text
        ):
            return cached  # immutable, and nothing it shows has changed
        self._cached = Scale(
            namespace="",
            name=deployment.name,
            spec_replicas=deployment.spec_replicas,
            status_replicas=len(deployment.pods),
            selector=deployment.selector,
            resource_version=self._version_text,
        )
        return self._cached

    async def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> Scale:
        return self._snapshot()

    async def update_scale(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        *,
        scale: Scale,
        replicas: int,
    ) -> ScaleUpdateResult:
        self._deployment.scale(replicas, self._clock.t_seconds)
        self._version += 1
        self._version_text = str(self._version)
        return ScaleUpdated(self._snapshot())


class SimPodLister:
    """``PodLister`` over the Deployment's pods as they are at the clock's time."""

    def __init__(self, deployment: Deployment, clock: VirtualClock) -> None:
        self._deployment = deployment
        self._clock = clock
        self._cached: tuple[int, float, float, tuple[PodRecord, ...]] | None = None
        """(Deployment version, from, until, pods): the listing holds while no pod was created
        or deleted and no pod changed state (Running, Ready) in ``[from, until)``."""

    def list_pods(self, namespace: str, selector: Selector) -> Sequence[PodRecord]:
        deployment = self._deployment
        if not selector.matches(deployment.labels):
            return []
        t_seconds = self._clock.t_seconds
        cached = self._cached
        if (
            cached is not None
            and cached[0] == deployment.version
            and cached[1] <= t_seconds < cached[2]
        ):
            return cached[3]
        labels = deployment.labels
        containers = deployment.containers
        listed = tuple(
            PodRecord(namespace=namespace, name=info.name, labels=labels, info=info)
            for info in (pod.info(t_seconds, containers) for pod in deployment.pods)
        )
        until = min(
            (
                moment_seconds
                for pod in deployment.pods
                for moment_seconds in (pod.running_at, pod.ready_at)
                if moment_seconds > t_seconds
            ),
            default=math.inf,
        )
        self._cached = (deployment.version, t_seconds, until, listed)
        return listed


class SimHorizontalPodAutoscalers:
    """The HPA cache and ``/status`` in one: a written status is what the next sync reads."""

    def __init__(self, hpa: HorizontalPodAutoscalerObject) -> None:
        self.hpa = hpa
        self.status_writes = 0
        self._version = 1

    def get(self, namespace: str, name: str) -> HorizontalPodAutoscalerObject | None:
        if (namespace, name) == (self.hpa.namespace, self.hpa.name):
            return self.hpa
        return None

    async def update_status(
        self,
        hpa: HorizontalPodAutoscalerObject,
        status: HorizontalPodAutoscalerStatus,
        *,
        observed_generation: int | None = None,
    ) -> StatusWriteOutcome:
        self._version += 1
        self.status_writes += 1
        old = self.hpa
        # the constructor, not dataclasses.replace (which looks the fields up on every call)
        self.hpa = HorizontalPodAutoscalerObject(
            old.namespace,
            old.name,
            spec=old.spec,
            status=status,
            uid=old.uid,
            resource_version=str(self._version),
            generation=old.generation,
            observed_generation=observed_generation,
            annotations=old.annotations,
        )
        return StatusWriteOutcome.WRITTEN


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An event the controller recorded, at ``t_seconds`` of virtual time."""

    t_seconds: float
    event: Event


class SimEventRecorder:
    """``EventRecorder`` that keeps every event with its virtual time."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self.events: list[RecordedEvent] = []

    def record(self, hpa: HorizontalPodAutoscalerObject, event: Event) -> None:
        self.events.append(RecordedEvent(self._clock.t_seconds, event))
