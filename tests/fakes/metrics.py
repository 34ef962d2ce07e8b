"""A data-driven fake of ``hpa.controllers.ports.MetricsClient`` that records its calls.

Tests (and the simulator, if it likes) set what each metric answers: per-pod values, an object
value, external series, or an error; a metric can also be told to hang until its deadline.
Keys are what identifies a metric in upstream's ``MetricsClient`` calls: the namespace, the
resource or metric name, and the container / described object.

``FakeJsonGetter`` is the fake of the one port the API-backed clients of ``hpa.metrics`` use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Any

from hpa.core.decision import (
    ExternalMetricObservation,
    MetricFetchError,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.replicas import PodMetric
from hpa.core.spec import CrossVersionObjectReference

MetricKey = tuple[str, ...]
Answer = (
    PodMetricsObservation | ObjectMetricObservation | ExternalMetricObservation | MetricFetchError
)


@dataclass(frozen=True, slots=True)
class MetricsCall:
    """One recorded call: ``method`` is the port method, ``key`` the metric's key."""

    method: str
    key: MetricKey
    _: KW_ONLY
    selector: str = ""
    metric_selector: str = ""


class FakeMetricsClient:
    """Answers from tables; unknown metrics answer upstream's "no metrics returned" errors."""

    def __init__(self) -> None:
        self.answers: dict[MetricKey, Answer] = {}
        self.hanging: set[MetricKey] = set()
        self.suspending: dict[MetricKey, asyncio.Event] = {}
        """Metrics that answer only once their event is set, yielding to the loop until then."""
        self.cancelled: list[MetricKey] = []
        """Calls cancelled while suspended or hanging (the caller's deadline, a shutdown)."""
        self.raising: dict[MetricKey, Exception] = {}
        self.calls: list[MetricsCall] = []

    # ------------------------------------------------------------------ setting answers

    def set_pod_values(
        self,
        namespace: str,
        resource_or_metric: str,
        *,
        values_milli: Mapping[str, int],
        container: str = "",
        timestamp: datetime | None = None,
        window_seconds: float = 30.0,
        custom: bool = False,
        selector: str = "",
    ) -> None:
        """Per-pod samples of a resource (``custom=False``) or a Pods metric (``custom=True``);
        with ``selector`` they answer only calls for that pod selector (several workloads in
        one namespace), without they answer any selector."""
        kind = "raw" if custom else "resource"
        key: MetricKey = (kind, namespace, resource_or_metric, container)
        if selector:
            key = (*key, selector)
        self.answers[key] = PodMetricsObservation(
            metrics={
                pod: PodMetric(value, timestamp=timestamp, window_seconds=window_seconds)
                for pod, value in values_milli.items()
            },
            timestamp=timestamp,
        )

    def set_object_value(
        self,
        namespace: str,
        metric: str,
        *,
        described_object: CrossVersionObjectReference,
        value_milli: int,
        timestamp: datetime | None = None,
    ) -> None:
        self.answers[self._object_key(namespace, metric, described=described_object)] = (
            ObjectMetricObservation(value_milli, timestamp)
        )

    def set_external_values(
        self,
        namespace: str,
        metric: str,
        *,
        values_milli: tuple[int, ...],
        timestamp: datetime | None = None,
    ) -> None:
        self.answers[("external", namespace, metric)] = ExternalMetricObservation(
            values_milli, timestamp
        )

    def set_error(self, key: MetricKey, message: str) -> None:
        """Answer ``MetricFetchError(message)`` for ``key`` (see the ``*_key`` helpers)."""
        self.answers[key] = MetricFetchError(message)

    @staticmethod
    def resource_key(namespace: str, resource: str, *, container: str = "") -> MetricKey:
        return ("resource", namespace, resource, container)

    @staticmethod
    def raw_key(namespace: str, metric: str) -> MetricKey:
        return ("raw", namespace, metric, "")

    @staticmethod
    def _object_key(
        namespace: str, metric: str, *, described: CrossVersionObjectReference
    ) -> MetricKey:
        return ("object", namespace, metric, described.kind, described.name)

    def object_key(
        self, namespace: str, metric: str, *, described: CrossVersionObjectReference
    ) -> MetricKey:
        return self._object_key(namespace, metric, described=described)

    @staticmethod
    def external_key(namespace: str, metric: str) -> MetricKey:
        return ("external", namespace, metric)

    # ------------------------------------------------------------------ the port

    async def _answer(self, key: MetricKey, missing: str, *, selector: str = "") -> Answer:
        hang = key in self.hanging
        gate = self.suspending.get(key)
        requested = key
        if selector and (*key, selector) in self.answers:
            key = (*key, selector)
        try:
            if hang or key in self.hanging:
                await asyncio.Event().wait()  # until the caller's deadline cancels it
            while gate is not None and not gate.is_set():  # noqa: ASYNC110 - deliberate
                await asyncio.sleep(0)  # a bare yield: a cancellation is thrown in here
        except asyncio.CancelledError:
            self.cancelled.append(requested)
            raise
        if key in self.raising:
            raise self.raising[key]
        return self.answers.get(key, MetricFetchError(missing))

    async def get_resource_metric(
        self, resource: str, namespace: str, *, selector: str, container: str = ""
    ) -> PodMetricsObservation | MetricFetchError:
        key = self.resource_key(namespace, resource, container=container)
        self.calls.append(MetricsCall("get_resource_metric", key, selector=selector))
        answer = await self._answer(
            key, "no metrics returned from resource metrics API", selector=selector
        )
        assert isinstance(answer, PodMetricsObservation | MetricFetchError)
        return answer

    async def get_raw_metric(
        self, metric_name: str, namespace: str, *, selector: str, metric_selector: str
    ) -> PodMetricsObservation | MetricFetchError:
        key = self.raw_key(namespace, metric_name)
        self.calls.append(
            MetricsCall("get_raw_metric", key, selector=selector, metric_selector=metric_selector)
        )
        answer = await self._answer(
            key, "no metrics returned from custom metrics API", selector=selector
        )
        assert isinstance(answer, PodMetricsObservation | MetricFetchError)
        return answer

    async def get_object_metric(
        self,
        metric_name: str,
        namespace: str,
        *,
        described_object: CrossVersionObjectReference,
        metric_selector: str,
    ) -> ObjectMetricObservation | MetricFetchError:
        key = self._object_key(namespace, metric_name, described=described_object)
        self.calls.append(MetricsCall("get_object_metric", key, metric_selector=metric_selector))
        answer = await self._answer(
            key,
            "unable to fetch metrics from custom metrics API: the server could not find the "
            f"metric {metric_name} for {described_object.kind} {described_object.name}",
        )
        assert isinstance(answer, ObjectMetricObservation | MetricFetchError)
        return answer

    async def get_external_metric(
        self, metric_name: str, namespace: str, *, metric_selector: str
    ) -> ExternalMetricObservation | MetricFetchError:
        key = self.external_key(namespace, metric_name)
        self.calls.append(MetricsCall("get_external_metric", key, metric_selector=metric_selector))
        answer = await self._answer(key, "no metrics returned from external metrics API")
        assert isinstance(answer, ExternalMetricObservation | MetricFetchError)
        return answer


@dataclass(frozen=True, slots=True)
class JsonRequest:
    path: str
    params: Mapping[str, str]


class FakeJsonGetter:
    """A fake ``hpa.metrics.transport.JsonGetter``: answers by path, records every request.

    ``routes`` maps a path to a JSON document or to an exception to raise; an unknown path raises
    ``missing(path)`` (a 404 by default, like the aggregator for an unregistered group)."""

    def __init__(self, missing: Callable[[str], Exception]) -> None:
        self.routes: dict[str, Mapping[str, Any] | Exception] = {}
        self.requests: list[JsonRequest] = []
        self._missing = missing

    def paths(self) -> list[str]:
        return [request.path for request in self.requests]

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> Mapping[str, Any]:
        self.requests.append(JsonRequest(path, dict(params or {})))
        answer = self.routes.get(path)
        if answer is None:
            raise self._missing(path)
        if isinstance(answer, Exception):
            raise answer
        return answer
