"""Fake metrics in the user's terms: pods with requests, usage, readiness and start times; Pods,
Object and External metric values; the target's scale; the controller's sync history.

Upstream counterpart: none; this is what ``horizontal_test.go``'s fake clients answer, built
from a few chained calls instead of reactors. The builder is immutable: every method returns a
new :class:`FakeMetrics`, so one base can be shared by many tests.

What the builder produces is what the controller's ports would hand the decision
(:func:`hpa.core.decision.decide`): the selected pods (``PodInfo``), one observation per metric
spec, the scale, the selector check and the history. Per-pod resource usage goes through the
resource metrics client's own shaping (:func:`hpa.metrics.resource.shape_pod_metrics`: a pod's
value is the sum of its containers', a pod with a container lacking the resource is left out);
an empty answer is the clients' ``no metrics returned from ... API`` error. Times are relative
("this long ago") and resolved against the sync's ``now``.

Deliberate deviations: Object and External values are looked up by metric name only (not by
described object or metric selector); a metric spec without a value or an error is a
:class:`ValueError` naming it (a test that forgot a value should fail loudly, not decide on a
fetch error).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from hpa.api.metrics import PodMetrics
from hpa.core.behavior import TimestampedRecommendation, TimestampedScaleEvent
from hpa.core.conditions import ConditionStatus
from hpa.core.decision import (
    CurrentScale,
    ExternalMetricObservation,
    History,
    MetricFetchError,
    MetricObservation,
    ObjectMetricObservation,
    PodMetricsObservation,
    ScaleFetchError,
    SelectorCheck,
)
from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.replicas import ContainerInfo, PodCondition, PodInfo, PodMetric, PodPhase
from hpa.core.selector import SelectorError, parse_selector
from hpa.core.spec import HorizontalPodAutoscalerSpec, MetricSourceType, MetricSpec
from hpa.metrics.resource import shape_pod_metrics
from hpa.sim.trace import TraceError, parse_duration

__all__ = [
    "DEFAULT_SELECTOR",
    "Ago",
    "FakeContainer",
    "FakeMetrics",
    "FakePod",
    "Quantity",
    "container",
]

Quantity = str | int | float
"""A Kubernetes quantity: ``"500m"``, ``"1Gi"``, ``"2k"``, or a number of whole units."""
Ago = float | int | str | timedelta
"""How long before the sync: seconds, a duration (``"90s"``, ``"5m"``, ``"2d"``) or a
``timedelta``."""

DEFAULT_SELECTOR = "app=workload"
"""The target's ``status.selector`` unless :meth:`FakeMetrics.selector` sets another."""
RESOURCE_WINDOW_SECONDS = 15.0
"""The window of a resource sample (metrics-server's default resolution)."""
CUSTOM_WINDOW_SECONDS = 60.0
"""The window of a custom-metrics sample (upstream's ``metricServerDefaultMetricWindow``)."""

_KNOWN_SOURCES = frozenset(
    {
        MetricSourceType.RESOURCE,
        MetricSourceType.CONTAINER_RESOURCE,
        MetricSourceType.PODS,
        MetricSourceType.OBJECT,
        MetricSourceType.EXTERNAL,
    }
)


def milli(value: Quantity, *, what: str) -> int:
    """``MilliValue()`` of a quantity; ``ValueError`` naming ``what`` when it does not parse."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{what}: expected a quantity such as '500m' or 2, got {value!r}")
    try:
        return parse_quantity(str(value)).milli_value()
    except QuantityError as error:
        raise ValueError(f"{what}: invalid quantity {value!r}: {error}") from error


def quantity_text(value: Quantity, *, what: str) -> str:
    """The quantity as a wire string (checked)."""
    milli(value, what=what)
    return str(value)


def seconds(value: Ago, *, what: str) -> float:
    """Seconds of an :data:`Ago` (``ValueError`` naming ``what`` when it does not parse);
    strings are read as ``hpa simulate`` reads durations (``90s``, ``5m``, ``1h30m``, ``2d``)."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{what}: expected seconds or a duration such as '5m', got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    try:
        return parse_duration(value)
    except TraceError as error:
        raise ValueError(
            f"{what}: invalid duration {value!r}: use e.g. 30, '90s', '5m' or '2d'"
        ) from (error)


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeContainer:
    """One container: its requests and its current usage (resource name -> quantity). A pod
    whose containers have no usage at all has no sample (metrics-server does not list it); a
    container without usage for one resource leaves the pod out of that resource's metric."""

    name: str
    requests: Mapping[str, Quantity] = field(default_factory=dict)
    usage: Mapping[str, Quantity] = field(default_factory=dict)


def container(
    name: str,
    *,
    cpu: Quantity | None = None,
    memory: Quantity | None = None,
    cpu_request: Quantity | None = None,
    memory_request: Quantity | None = None,
) -> FakeContainer:
    """A container with cpu/memory usage and requests (for pods with several containers)."""
    usage = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests = {
        k: v for k, v in (("cpu", cpu_request), ("memory", memory_request)) if v is not None
    }
    return FakeContainer(name=name, requests=requests, usage=usage)


@dataclass(frozen=True, slots=True, kw_only=True)
class FakePod:
    """One pod the target's selector selects.

    ``ready`` is the ``Ready`` condition (``None``: the pod has none), which flipped
    ``ready_since_ago`` before the sync (default: when the pod started). ``missing`` leaves the
    pod out of every metric answer (metrics-server has no sample for it yet). ``metrics`` are
    its Pods-metric values by metric name."""

    name: str
    containers: tuple[FakeContainer, ...] = ()
    ready: bool | None = True
    started_ago: Ago = 3600.0
    started_at: datetime | None = None
    """An absolute start time, instead of ``started_ago``."""
    ready_since_ago: Ago | None = None
    phase: str = "Running"
    deleting: bool = False
    missing: bool = False
    metrics: Mapping[str, Quantity] = field(default_factory=dict)
    listed: bool = True
    """``False``: the metrics APIs report the pod but the pod lister does not show it (a pod
    that was deleted, or that the target's selector no longer selects)."""


def _events(entries: Iterable[tuple[int, Ago]], *, now: datetime, what: str) -> tuple[Any, ...]:
    return tuple(
        (
            n,
            now
            - (ago if isinstance(ago, timedelta) else timedelta(seconds=seconds(ago, what=what))),
        )
        for n, ago in entries
    )


@dataclass(frozen=True, slots=True)
class FakeMetrics:
    """What the cluster and the metrics APIs answer for one sync. Build it by chaining::

        metrics = (
            FakeMetrics()
            .pods(3, cpu="400m", cpu_request="500m")
            .pod("web-new", cpu="50m", cpu_request="500m", ready=False, started_ago="20s")
            .external_metric("queue_length", 30)
        )

    The target's replicas default to the number of pods; pods are named ``pod-0``, ``pod-1``, ...
    unless named."""

    pod_list: tuple[FakePod, ...] = ()
    object_values: Mapping[str, Quantity] = field(default_factory=dict)
    external_values: Mapping[str, tuple[Quantity, ...]] = field(default_factory=dict)
    metric_errors: Mapping[str, str] = field(default_factory=dict)
    current_replicas: int | None = None
    status_replicas: int | None = None
    scale_selector: str = DEFAULT_SELECTOR
    scale_read_error: str | None = None
    scale_update_error: str | None = None
    selecting_hpas: tuple[str, ...] = ()
    recommendations: tuple[tuple[int, Ago], ...] | None = None
    scale_up_events: tuple[tuple[int, Ago], ...] = ()
    scale_down_events: tuple[tuple[int, Ago], ...] = ()
    sample_window_seconds: float | None = None
    sample_age: Ago = 0.0
    scaled_to_zero: bool = False

    # ------------------------------------------------------------------ building

    def pod(
        self,
        name: str | None = None,
        *,
        cpu: Quantity | None = None,
        memory: Quantity | None = None,
        cpu_request: Quantity | None = None,
        memory_request: Quantity | None = None,
        containers: Sequence[FakeContainer] | None = None,
        ready: bool | None = True,
        started_ago: Ago = 3600.0,
        started_at: datetime | None = None,
        ready_since_ago: Ago | None = None,
        phase: str = "Running",
        deleting: bool = False,
        missing: bool = False,
        metrics: Mapping[str, Quantity] | None = None,
        listed: bool = True,
    ) -> FakeMetrics:
        """Add one pod: ``cpu``/``memory`` usage and requests of its one container ``app``, or
        ``containers`` (see :func:`container`). No usage for a resource: no sample for it."""
        if containers is None:
            containers = (
                container(
                    "app",
                    cpu=cpu,
                    memory=memory,
                    cpu_request=cpu_request,
                    memory_request=memory_request,
                ),
            )
        elif any(v is not None for v in (cpu, memory, cpu_request, memory_request)):
            raise ValueError("pod: give either containers or cpu/memory, not both")
        pod = FakePod(
            name=name if name is not None else f"pod-{len(self.pod_list)}",
            containers=tuple(containers),
            ready=ready,
            started_ago=started_ago,
            started_at=started_at,
            ready_since_ago=ready_since_ago,
            phase=phase,
            deleting=deleting,
            missing=missing,
            metrics=dict(metrics or {}),
            listed=listed,
        )
        PodPhase(pod.phase)  # an unknown phase fails here, naming the value
        if any(p.name == pod.name for p in self.pod_list):
            raise ValueError(f"pod: a pod named {pod.name!r} was already added")
        return replace(self, pod_list=(*self.pod_list, pod))

    def pods(self, count: int, /, **pod: Any) -> FakeMetrics:
        """Add ``count`` identical pods (the keyword arguments of :meth:`pod`, without a name)."""
        built = self
        for _ in range(count):
            built = built.pod(**pod)
        return built

    def object_metric(self, name: str, value: Quantity) -> FakeMetrics:
        """The value of an ``Object`` metric (by metric name)."""
        milli(value, what=f"object metric {name}")
        return replace(self, object_values={**self.object_values, name: value})

    def external_metric(self, name: str, *values: Quantity) -> FakeMetrics:
        """The series of an ``External`` metric (by metric name); no value: an empty answer."""
        for value in values:
            milli(value, what=f"external metric {name}")
        return replace(self, external_values={**self.external_values, name: tuple(values)})

    def metric_error(self, name: str, message: str) -> FakeMetrics:
        """The metrics client fails for this metric (a resource name such as ``cpu``, or a
        metric name) with ``message``, e.g. ``unable to fetch metrics from external metrics
        API: the server is currently unable to handle the request``."""
        return replace(self, metric_errors={**self.metric_errors, name: message})

    def replicas(self, spec: int, *, status: int | None = None) -> FakeMetrics:
        """The target's ``spec.replicas`` (and ``status.replicas``, default the same), when it
        is not the number of pods."""
        return replace(self, current_replicas=spec, status_replicas=status)

    def selector(self, text: str) -> FakeMetrics:
        """The target's ``status.selector`` (``""``: the target has none)."""
        return replace(self, scale_selector=text)

    def scale_read_fails(self, message: str) -> FakeMetrics:
        """Reading the target's ``/scale`` fails with ``message``."""
        return replace(self, scale_read_error=message)

    def scale_update_fails(self, message: str) -> FakeMetrics:
        """Writing the target's ``/scale`` fails with ``message``."""
        return replace(self, scale_update_error=message)

    def also_selected_by(self, *hpa_keys: str) -> FakeMetrics:
        """Other HPAs (``namespace/name``) select these pods too (``AmbiguousSelector``)."""
        return replace(self, selecting_hpas=(*self.selecting_hpas, *hpa_keys))

    def recommendation(self, replicas: int, ago: Ago) -> FakeMetrics:
        """A recommendation the controller made ``ago`` (the stabilization window reads them)."""
        return replace(self, recommendations=(*(self.recommendations or ()), (replicas, ago)))

    def no_recommendations(self) -> FakeMetrics:
        """The controller has synced this HPA before but kept no recommendation (without
        this or :meth:`recommendation`, the sync is the HPA's first: the log is seeded)."""
        return replace(self, recommendations=())

    def scale_up_event(self, change: int, ago: Ago) -> FakeMetrics:
        """A scale-up by ``change`` pods ``ago`` (the scale-up policies' periods read them)."""
        return replace(self, scale_up_events=(*self.scale_up_events, (change, ago)))

    def scale_down_event(self, change: int, ago: Ago) -> FakeMetrics:
        """A scale-down by ``change`` pods ``ago`` (the scale-down policies' periods read them)."""
        return replace(self, scale_down_events=(*self.scale_down_events, (change, ago)))

    def sample_window(self, window: Ago) -> FakeMetrics:
        """The window every pod sample covers (default 15 s resource, 60 s custom)."""
        return replace(self, sample_window_seconds=seconds(window, what="sample window"))

    def samples_taken(self, ago: Ago) -> FakeMetrics:
        """When the samples were taken (default: at the sync)."""
        seconds(ago, what="sample age")
        return replace(self, sample_age=ago)

    def was_scaled_to_zero(self) -> FakeMetrics:
        """The HPA's status says ``ScaledToZero=True`` (it put the target at zero itself)."""
        return replace(self, scaled_to_zero=True)

    # ------------------------------------------------------------------ what the ports answer

    def spec_replicas(self) -> int:
        """The target's ``spec.replicas`` (the number of listed pods unless :meth:`replicas`
        says)."""
        if self.current_replicas is not None:
            return self.current_replicas
        return sum(1 for pod in self.pod_list if pod.listed)

    def scale(self) -> CurrentScale | ScaleFetchError:
        """The target's Scale (or the error reading it)."""
        if self.scale_read_error is not None:
            return ScaleFetchError(self.scale_read_error)
        spec = self.spec_replicas()
        status = spec if self.status_replicas is None else self.status_replicas
        return CurrentScale(
            spec_replicas=spec, status_replicas=status, selector=self.scale_selector
        )

    def selector_check(self, hpa_key: str) -> SelectorCheck:
        """What ``validateAndParseSelector`` finds (as the controller computes it)."""
        if self.scale_selector == "":
            return SelectorCheck()
        try:
            parse_selector(self.scale_selector)
        except SelectorError as error:
            return SelectorCheck(parse_error=str(error))
        return SelectorCheck(selecting_hpas=tuple(sorted({hpa_key, *self.selecting_hpas})))

    def history(self, *, now: datetime) -> History:
        """The recommendation log and scale events (``None`` log: the HPA's first sync)."""
        recommendations = None
        if self.recommendations is not None:
            recommendations = tuple(
                TimestampedRecommendation(n, at)
                for n, at in _events(self.recommendations, now=now, what="recommendation")
            )
        return History(
            recommendations=recommendations,
            scale_up_events=tuple(
                TimestampedScaleEvent(n, at)
                for n, at in _events(self.scale_up_events, now=now, what="scale-up event")
            ),
            scale_down_events=tuple(
                TimestampedScaleEvent(n, at)
                for n, at in _events(self.scale_down_events, now=now, what="scale-down event")
            ),
        )

    def _ago(self, now: datetime, value: Ago, *, what: str) -> datetime:
        if isinstance(value, timedelta):
            return now - value  # exact, however far back
        return now - timedelta(seconds=seconds(value, what=what))

    def pod_infos(self, *, now: datetime) -> tuple[PodInfo, ...]:
        """The selected pods as the pod lister shows them."""
        infos = []
        for pod in self.pod_list:
            if not pod.listed:
                continue
            where = f"pod {pod.name}"
            started = pod.started_at or self._ago(now, pod.started_ago, what=f"{where}: started")
            since = (
                started
                if pod.ready_since_ago is None
                else self._ago(now, pod.ready_since_ago, what=f"{where}: ready since")
            )
            condition = None
            if pod.ready is not None:
                status = ConditionStatus.TRUE if pod.ready else ConditionStatus.FALSE
                condition = PodCondition(status, since)
            infos.append(
                PodInfo(
                    name=pod.name,
                    phase=PodPhase(pod.phase),
                    ready_condition=condition,
                    start_time=started,
                    deletion_timestamp=now if pod.deleting else None,
                    containers=tuple(
                        ContainerInfo(
                            c.name,
                            {
                                resource: milli(q, what=f"{where}: {c.name}: {resource} request")
                                for resource, q in c.requests.items()
                            },
                        )
                        for c in pod.containers
                    ),
                )
            )
        return tuple(infos)

    def _resource(
        self, resource: str, *, container_name: str, now: datetime, namespace: str
    ) -> MetricObservation:
        sampled = self._ago(now, self.sample_age, what="sample age")
        window = self.sample_window_seconds or RESOURCE_WINDOW_SECONDS
        items = [
            PodMetrics.from_dict(
                {
                    "metadata": {"name": pod.name, "namespace": namespace},
                    "timestamp": sampled.isoformat().replace("+00:00", "Z"),
                    "window": f"{window:g}s",
                    "containers": [
                        {
                            "name": c.name,
                            "usage": {
                                r: quantity_text(q, what=f"pod {pod.name}: {c.name}: {r} usage")
                                for r, q in c.usage.items()
                            },
                        }
                        for c in pod.containers
                    ],
                }
            )
            for pod in self.pod_list
            if not pod.missing and any(c.usage for c in pod.containers)
        ]
        if not items:
            return MetricFetchError("no metrics returned from resource metrics API")
        try:
            shaped = shape_pod_metrics(items, resource, container=container_name)
        except ValueError as error:
            return MetricFetchError(f"failed to get container metrics: {error}")
        return PodMetricsObservation(metrics=shaped, timestamp=items[0].timestamp)

    def _pods_metric(self, name: str, *, now: datetime) -> MetricObservation:
        sampled = self._ago(now, self.sample_age, what="sample age")
        window = self.sample_window_seconds or CUSTOM_WINDOW_SECONDS
        values = {
            pod.name: PodMetric(
                value_milli=milli(pod.metrics[name], what=f"pod {pod.name}: metric {name}"),
                timestamp=sampled,
                window_seconds=window,
            )
            for pod in self.pod_list
            if not pod.missing and name in pod.metrics
        }
        if not values:
            return MetricFetchError("no metrics returned from custom metrics API")
        return PodMetricsObservation(metrics=values, timestamp=sampled)

    def observations(
        self, spec: HorizontalPodAutoscalerSpec, *, now: datetime, namespace: str
    ) -> list[MetricObservation | None]:
        """One observation (or fetch error) per ``spec.metrics`` entry, in order; ``None`` for
        an unknown source type (the decision reports ``InvalidMetricSourceType``)."""
        found: list[MetricObservation | None] = []
        sampled = self._ago(now, self.sample_age, what="sample age")
        for index, metric in enumerate(spec.metrics):
            name = metric_name(metric)
            error = self.metric_errors.get(name)
            if error is not None and metric.type in _KNOWN_SOURCES:
                found.append(MetricFetchError(error))
            elif metric.type == MetricSourceType.RESOURCE and metric.resource is not None:
                found.append(self._resource(name, container_name="", now=now, namespace=namespace))
            elif metric.type == MetricSourceType.CONTAINER_RESOURCE and metric.container_resource:
                found.append(
                    self._resource(
                        name,
                        container_name=metric.container_resource.container,
                        now=now,
                        namespace=namespace,
                    )
                )
            elif metric.type == MetricSourceType.PODS and metric.pods is not None:
                found.append(self._pods_metric(name, now=now))
            elif metric.type == MetricSourceType.OBJECT and metric.object is not None:
                if name not in self.object_values:
                    raise ValueError(_no_value("Object", name, index, "object_metric"))
                value = milli(self.object_values[name], what=f"object metric {name}")
                found.append(ObjectMetricObservation(value, timestamp=sampled))
            elif metric.type == MetricSourceType.EXTERNAL and metric.external is not None:
                if name not in self.external_values:
                    raise ValueError(_no_value("External", name, index, "external_metric"))
                values = tuple(
                    milli(v, what=f"external metric {name}") for v in self.external_values[name]
                )
                if not values:
                    found.append(MetricFetchError("no metrics returned from external metrics API"))
                else:
                    found.append(ExternalMetricObservation(values, timestamp=sampled))
            else:
                found.append(None)
        return found


def metric_name(metric: MetricSpec) -> str:
    """The name a metric is known by: its resource (``cpu``) or its metric name (``qps``)."""
    source = metric.resource or metric.container_resource
    if source is not None:
        return source.name
    named = metric.pods or metric.object or metric.external
    return named.metric.name if named is not None else str(metric.type)


def _no_value(kind: str, name: str, index: int, method: str) -> str:
    return (
        f"fake metrics: no value for the {kind} metric {name!r} (spec.metrics[{index}]): give "
        f"one with .{method}({name!r}, ...) or an error with .metric_error({name!r}, ...)"
    )
