"""The event recorder: core/v1 Events like kube-controller-manager's, de-duplicated with counts.

Upstream counterparts: client-go ``tools/record`` — ``event.go`` (``recorder.generateEvent``: name
``<object>.<unix-nanos in hex>``, ``source.component``, first/last timestamps, count 1;
``EventBroadcaster`` writing asynchronously so the caller never blocks or fails) and
``events_cache.go`` (``EventCorrelator``'s ``eventLogger``: an event identical to one already
written — same object, type, reason, message and source — is written again as a PATCH that bumps
``count`` and ``lastTimestamp``). The HPA controller records with
``EventSource{Component: "horizontal-pod-autoscaler"}`` on the core/v1 API; so do we, with
upstream's reasons (``HpaEventReason``).

Deliberate deviations: no ``EventAggregator`` (grouping of similar events with different
messages) and no spam filter's token bucket per object: the client's QPS limit and the bounded
pending queue (oldest dropped first, counted) cap what we send. A PATCH that finds the Event gone
(404: events expire after an hour) creates a fresh one. Writes go through the leader fence.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter

from hpa.api.types import format_time
from hpa.core.conditions import Event
from hpa.kube.client import ApiError, KubeClient, NotFoundError, TransportError
from hpa.kube.clock import Clock
from hpa.kube.fence import Fence, NotLeaderError, Unfenced

log = structlog.get_logger("hpa.kube.events")

HPA_COMPONENT = "horizontal-pod-autoscaler"


class HpaEventReason(StrEnum):
    """The reasons ``horizontal.go`` records (``a.eventRecorder.Event(hpa, type, reason, msg)``)."""

    SUCCESSFUL_RESCALE = "SuccessfulRescale"
    FAILED_RESCALE = "FailedRescale"
    FAILED_GET_SCALE = "FailedGetScale"
    FAILED_COMPUTE_METRICS_REPLICAS = "FailedComputeMetricsReplicas"
    FAILED_UPDATE_STATUS = "FailedUpdateStatus"
    SELECTOR_REQUIRED = "SelectorRequired"
    INVALID_SELECTOR = "InvalidSelector"
    AMBIGUOUS_SELECTOR = "AmbiguousSelector"
    FAILED_GET_OBJECT_METRIC = "FailedGetObjectMetric"
    FAILED_GET_PODS_METRIC = "FailedGetPodsMetric"
    FAILED_GET_RESOURCE_METRIC = "FailedGetResourceMetric"
    FAILED_GET_CONTAINER_RESOURCE_METRIC = "FailedGetContainerResourceMetric"
    FAILED_GET_EXTERNAL_METRIC = "FailedGetExternalMetric"
    INVALID_METRIC_SOURCE_TYPE = "InvalidMetricSourceType"


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectReference:
    """``v1.ObjectReference`` of the object an event is about."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""

    def to_json(self) -> dict[str, str]:
        data = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }
        if self.uid:
            data["uid"] = self.uid
        if self.resource_version:
            data["resourceVersion"] = self.resource_version
        return data


def hpa_reference(
    namespace: str, name: str, *, uid: str = "", resource_version: str = ""
) -> ObjectReference:
    return ObjectReference(
        api_version="autoscaling/v2",
        kind="HorizontalPodAutoscaler",
        namespace=namespace,
        name=name,
        uid=uid,
        resource_version=resource_version,
    )


@dataclass(frozen=True, slots=True)
class _Pending:
    involved: ObjectReference
    event: Event


@dataclass(slots=True)
class _Seen:
    name: str
    count: int
    first_timestamp: str


class EventMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.recorded = Counter(
            "hpa_events_recorded_total",
            "Events written to the API server, by how (create or count bump).",
            ["action"],
            registry=registry,
        )
        self.dropped = Counter(
            "hpa_events_dropped_total",
            "Events not written, by why (queue_full, write_failed, not_leader).",
            ["cause"],
            registry=registry,
        )


class EventRecorder:
    """``record`` never blocks and never raises; ``run`` writes the events in the background."""

    def __init__(
        self,
        client: KubeClient,
        *,
        clock: Clock,
        component: str = HPA_COMPONENT,
        host: str = "",
        fence: Fence | None = None,
        max_pending: int = 1000,
        cache_size: int = 4096,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._component = component
        self._host = host
        self._fence = fence or Unfenced()
        self._pending: deque[_Pending] = deque()
        self._max_pending = max_pending
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._cache_size = cache_size
        self._metrics = EventMetrics(registry) if registry is not None else None

    def record(self, involved: ObjectReference, event: Event) -> None:
        """Queue ``event`` about ``involved`` for writing (``EventRecorder.Event``)."""
        try:
            if len(self._pending) >= self._max_pending:
                self._pending.popleft()
                self._count_dropped("queue_full")
            self._pending.append(_Pending(involved=involved, event=event))
            self._idle.clear()
            self._wakeup.set()
        except Exception as error:  # noqa: BLE001 - recording must never fail the caller
            log.error("event_record_failed", error=repr(error))

    def _count_dropped(self, cause: str) -> None:
        if self._metrics is not None:
            self._metrics.dropped.labels(cause=cause).inc()

    async def flush(self) -> None:
        """Wait until every queued event has been written (or dropped)."""
        await self._idle.wait()

    async def run(self) -> None:
        """Write queued events one by one until cancelled."""
        while True:
            if not self._pending:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            item = self._pending.popleft()
            try:
                await self._write(item)
            except NotLeaderError:
                self._count_dropped("not_leader")
            except (ApiError, TransportError) as error:
                self._count_dropped("write_failed")
                log.warning(
                    "event_write_failed",
                    reason=item.event.reason,
                    object=f"{item.involved.namespace}/{item.involved.name}",
                    error=str(error),
                )

    def _key(self, item: _Pending) -> tuple[str, ...]:
        ref = item.involved
        return (
            self._component,
            self._host,
            ref.kind,
            ref.namespace,
            ref.name,
            ref.uid,
            ref.api_version,
            item.event.type,
            item.event.reason,
            item.event.message,
        )

    async def _write(self, item: _Pending) -> None:
        now = format_time(self._clock.now())
        key = self._key(item)
        namespace = item.involved.namespace or "default"
        seen = self._seen.get(key)
        if seen is not None:
            self._fence.check()
            try:
                await self._client.patch(
                    f"/api/v1/namespaces/{namespace}/events/{seen.name}",
                    {"count": seen.count + 1, "lastTimestamp": now},
                )
            except NotFoundError:
                del self._seen[key]
            else:
                seen.count += 1
                self._seen.move_to_end(key)
                if self._metrics is not None:
                    self._metrics.recorded.labels(action="count_bump").inc()
                return
        body = self._event_body(item, now)
        self._fence.check()
        await self._client.post(f"/api/v1/namespaces/{namespace}/events", body)
        self._seen[key] = _Seen(name=body["metadata"]["name"], count=1, first_timestamp=now)
        while len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)
        if self._metrics is not None:
            self._metrics.recorded.labels(action="create").inc()

    def _event_body(self, item: _Pending, now: str) -> dict[str, Any]:
        ref = item.involved
        moment = self._clock.now()
        unix_nanos = int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
        source: dict[str, str] = {"component": self._component}
        if self._host:
            source["host"] = self._host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.name}.{unix_nanos:x}",
                "namespace": ref.namespace or "default",
            },
            "involvedObject": ref.to_json(),
            "reason": item.event.reason,
            "message": item.event.message,
            "type": item.event.type,
            "source": source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self._component,
            "reportingInstance": self._host,
        }
