"""One HorizontalPodAutoscaler decision from spec, observations, history and ``now``.

Upstream counterpart: ``reconcileAutoscaler`` of ``pkg/controller/podautoscaler/horizontal.go`` and
what it calls: ``computeReplicasForMetrics``, ``validateAndParseSelector``,
``computeReplicasForMetric``, ``computeStatusFor{Object,Pods,Resource,ContainerResource,External}
Metric``, ``computeStatusForResourceMetricGeneric``, ``getUnableComputeReplicaCountCondition``,
``recordInitialRecommendation``, ``normalizeDesiredReplicas(WithBehaviors)``, ``tolerancesForHpa``,
``setStatus`` / ``setCurrentReplicasAndMetricsInStatus``, and, for scale to zero, the KEP-2021
``ScaledToZero`` handling of the newest controller (``hasObjectOrExternalMetrics``,
``getScaledToZeroConditionStatus``, ``shouldComputeMetricsForZeroReplicas``).

The split: upstream fetches (scale, pods, metrics), decides and writes in one function. Here
:func:`decide` is pure: the controller passes the fetched scale, the selected pods and one
observation (or fetch error) per metric spec, and gets a frozen :class:`Decision` back: the desired
replicas, whether and why to rescale, the status to write (conditions with their transition times,
current metrics), the updated history, the events to record, the reconcile error and an
:class:`~hpa.core.explain.Explanation`. If the decision says rescale, the controller updates the
scale and hands the outcome to :func:`apply_rescale_result`, which produces the
``SucceededRescale`` / ``FailedUpdateScale`` condition, the ``SuccessfulRescale`` /
``FailedRescale`` event, the stored scale event, ``lastScaleTime`` and the ``ScaledToZero``
condition, as upstream does right after ``Scales().Update``.

Error texts are upstream's, including the wrapping each layer adds (e.g. ``failed to get cpu
resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: ...``)
and the argument-order slip of ``GetObjectMetricReplicas`` (``unable to get metric qps: Deployment
on ns name/<error>``).

Deliberate deviations (argued in ``docs/hpa-core.md`` and ``docs/scale-to-zero.md``):

* No fetching and no writing (the split above); one ``now`` for the whole reconcile where upstream
  calls ``time.Now()`` a few microseconds apart.
* The pod-overlap check of ``validateAndParseSelector`` needs every HPA's selector; the controller
  does it and passes the result in :class:`SelectorCheck` (the keys of the HPAs selecting the pods,
  printed in the given order where upstream prints a map's keys in random order).
* Feature gates are settings: ``HPAScaleToZero`` on (KEP-2021 semantics) or off (the pre-KEP
  controller, which evaluates metrics at zero replicas whenever ``minReplicas`` is 0, and which here
  also drops a stale ``ScaledToZero`` condition on the next successful rescale), and
  ``HPAConfigurableTolerance``.
* Metric statuses of failed metrics are ``MetricStatus(type="")``, Go's zero value that upstream
  writes in their place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from hpa.core.behavior import (
    Normalization,
    Recommendations,
    ScaleEvents,
    normalize_desired_replicas,
    normalize_desired_replicas_with_behaviors,
    record_initial_recommendation,
    store_scale_event,
)
from hpa.core.conditions import (
    Conditions,
    ConditionStatus,
    ConditionType,
    ConditionUpdates,
    Event,
    find_condition,
    remove_condition,
    set_condition,
)
from hpa.core.explain import Explanation, Stage, TraceEntry, TracePart, TraceValue
from hpa.core.replicas import (
    PodInfo,
    PodMetric,
    ReplicaCalculation,
    ReplicaCalculationError,
    Tolerances,
    get_external_metric_replicas,
    get_external_per_pod_metric_replicas,
    get_metric_replicas,
    get_object_metric_replicas,
    get_object_per_pod_metric_replicas,
    get_raw_resource_replicas,
    get_resource_replicas,
)
from hpa.core.spec import (
    CrossVersionObjectReference,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    HorizontalSettings,
    MetricIdentifier,
    MetricSourceType,
    MetricSpec,
    MetricTargetType,
    ResolvedRules,
    ScalingRules,
    default_behavior,
    default_spec,
    format_label_selector,
    resolve_behavior,
)

__all__ = [
    "CurrentScale",
    "Decision",
    "ExternalMetricObservation",
    "History",
    "HorizontalPodAutoscalerStatus",
    "MetricFetchError",
    "MetricObservation",
    "MetricStatus",
    "MetricValueStatus",
    "ObjectMetricObservation",
    "PodMetricsObservation",
    "ScaleFetchError",
    "SelectorCheck",
    "apply_rescale_result",
    "decide",
    "tolerances_for_hpa",
]

# ------------------------------------------------------------------------------------ inputs


@dataclass(frozen=True, slots=True)
class CurrentScale:
    """The target's ``autoscaling/v1`` Scale: ``spec.replicas``, ``status.replicas``, selector."""

    spec_replicas: int
    status_replicas: int
    selector: str
    """``status.selector`` as the scale reports it (``""`` when the target has none)."""


@dataclass(frozen=True, slots=True)
class ScaleFetchError:
    """The scale subresource (or its REST mapping) could not be read; ``message`` is the error."""

    message: str


@dataclass(frozen=True, slots=True)
class SelectorCheck:
    """What the controller learned while parsing the selector and listing its pods.

    ``parse_error`` is the ``labels.Parse`` error text (``None`` when it parsed);
    ``selecting_hpas`` are the keys (``namespace/name``) of every HPA whose selector matches at
    least one selected pod, this one included; more than one is ``AmbiguousSelector``.
    """

    parse_error: str | None = None
    selecting_hpas: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodMetricsObservation:
    """Per-pod samples (Resource, ContainerResource and Pods metrics) and their timestamp."""

    metrics: Mapping[str, PodMetric]
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class ObjectMetricObservation:
    """The described object's metric value, in milli-units."""

    value_milli: int
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class ExternalMetricObservation:
    """Every series the external metrics API returned, in milli-units."""

    values_milli: tuple[int, ...]
    timestamp: datetime | None = None


@dataclass(frozen=True, slots=True)
class MetricFetchError:
    """The metrics client's error for this metric (e.g. ``no metrics returned from ...``)."""

    message: str


MetricObservation = (
    PodMetricsObservation | ObjectMetricObservation | ExternalMetricObservation | MetricFetchError
)


@dataclass(frozen=True, slots=True)
class History:
    """The controller's per-HPA memory: the recommendation log and the scale events.

    ``recommendations`` is ``None`` before the first reconcile of this HPA (upstream's nil slice);
    the decision seeds it with the current replica count.
    """

    recommendations: Recommendations | None = None
    scale_up_events: ScaleEvents = ()
    scale_down_events: ScaleEvents = ()


@dataclass(frozen=True, slots=True)
class MetricValueStatus:
    """``autoscalingv2.MetricValueStatus`` in milli-units (utilization in percent)."""

    value_milli: int | None = None
    average_value_milli: int | None = None
    average_utilization: int | None = None


@dataclass(frozen=True, slots=True)
class MetricStatus:
    """``autoscalingv2.MetricStatus``; ``type == ""`` is the zero value written for a failed metric.

    ``name`` is the resource name (Resource, ContainerResource), ``container`` the container
    (ContainerResource), ``metric`` the identifier (Pods, Object, External), ``described_object``
    the object (Object with a Value target; upstream leaves it empty for AverageValue).
    """

    type: str
    current: MetricValueStatus = field(default_factory=MetricValueStatus)
    name: str | None = None
    container: str | None = None
    metric: MetricIdentifier | None = None
    described_object: CrossVersionObjectReference | None = None


@dataclass(frozen=True, slots=True)
class HorizontalPodAutoscalerStatus:
    """``autoscalingv2.HorizontalPodAutoscalerStatus`` (what the decision reads and writes)."""

    current_replicas: int = 0
    desired_replicas: int = 0
    last_scale_time: datetime | None = None
    current_metrics: tuple[MetricStatus, ...] | None = None
    conditions: Conditions = ()


# ----------------------------------------------------------------------------------- output


@dataclass(frozen=True, slots=True)
class _PendingRescale:
    """What :func:`apply_rescale_result` needs from the decision."""

    behavior: HorizontalPodAutoscalerBehavior | None
    min_replicas: int
    has_object_or_external_metrics: bool
    previous_desired_replicas: int
    scale_to_zero_enabled: bool


@dataclass(frozen=True, slots=True)
class Decision:
    """The frozen outcome of :func:`decide` (and of :func:`apply_rescale_result`).

    ``desired_replicas`` is what the scale should be set to when ``rescale`` is true; otherwise it
    equals ``current_replicas`` (upstream writes ``status.desiredReplicas = current`` then), except
    on the error paths, where the status keeps the previous ``desiredReplicas``. ``status`` is the
    status to write: final when ``rescale`` is false, pending the rescale result otherwise.
    ``error`` is what upstream's reconcile returns (logged, and the key is requeued with backoff);
    it can be set while scaling proceeds (some metrics failed, the others scale up).
    """

    desired_replicas: int
    rescale: bool
    rescale_reason: str
    current_replicas: int
    status: HorizontalPodAutoscalerStatus
    history: History
    events: tuple[Event, ...]
    error: str | None
    explanation: Explanation
    reference: str
    rescale_succeeded: bool | None = None
    """``None`` until :func:`apply_rescale_result` records the scale update's outcome."""
    metric_proposals: tuple[int | None, ...] = ()
    """Each evaluated metric's proposed replicas, in ``spec.metrics`` order (``None``: it failed);
    empty when no metric was evaluated (the trace's ``metric`` entries, as numbers)."""
    metric_failures: tuple[tuple[str, str] | None, ...] = ()
    """Each evaluated metric's failure as ``(reason, error)`` (``None``: it proposed), in the same
    order as :attr:`metric_proposals`."""
    _pending: _PendingRescale | None = None


# ------------------------------------------------------------------------------ helpers


def tolerances_for_hpa(
    behavior: HorizontalPodAutoscalerBehavior | None, settings: HorizontalSettings
) -> Tolerances:
    """``tolerancesForHpa``: the flag, overridden per direction by the behavior when gated on."""
    scale_down = scale_up = settings.tolerance
    if behavior is not None and settings.configurable_tolerance_enabled:
        if behavior.scale_down is not None and behavior.scale_down.tolerance is not None:
            scale_down = behavior.scale_down.tolerance
        if behavior.scale_up is not None and behavior.scale_up.tolerance is not None:
            scale_up = behavior.scale_up.tolerance
    return Tolerances(scale_down=scale_down, scale_up=scale_up)


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the plain strings a metric type can be."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _has_object_or_external_metrics(metrics: Sequence[MetricSpec]) -> bool:
    """``hasObjectOrExternalMetrics``."""
    for metric in metrics:
        if metric.type == MetricSourceType.OBJECT or metric.type == MetricSourceType.EXTERNAL:
            return True
    return False


class _MetricError(Exception):
    """A metric that yields no proposal: condition reason, condition/event error, returned error."""

    def __init__(self, reason: str, condition_error: str, returned_error: str) -> None:
        super().__init__(returned_error)
        self.reason = reason
        self.condition_error = condition_error
        self.returned_error = returned_error


# a scratch value inside one call: not frozen, which is several times cheaper to build
@dataclass(slots=True)
class _Proposal:
    replicas: int
    metric_name: str
    status: MetricStatus
    timestamp: datetime | None
    trace: TracePart


@dataclass(slots=True)
class _Context:
    """Mutable scratch state of one :func:`decide` call (never escapes it)."""

    updates: ConditionUpdates
    now: datetime
    events: list[Event] = field(default_factory=list)
    trace: list[TracePart] = field(default_factory=list)
    proposals: list[int | None] = field(default_factory=list)
    failures: list[tuple[str, str] | None] = field(default_factory=list)

    def set(self, condition_type: str, status: ConditionStatus, reason: str, message: str) -> None:
        self.updates.set(condition_type, status, reason, message)

    @property
    def conditions(self) -> Conditions:
        return self.updates.result()

    def warn(self, reason: str, message: str) -> None:
        self.events.append(Event("Warning", reason, message))


def _fetch_error_text(spec: MetricSpec, message: str, *, namespace: str) -> str:
    """The calculator's wrapping of a metrics-client error, per source type."""
    if spec.type == MetricSourceType.RESOURCE and spec.resource is not None:
        return f"unable to get metrics for resource {spec.resource.name}: {message}"
    if spec.type == MetricSourceType.CONTAINER_RESOURCE and spec.container_resource is not None:
        return f"unable to get metrics for resource {spec.container_resource.name}: {message}"
    if spec.type == MetricSourceType.PODS and spec.pods is not None:
        return f"unable to get metric {spec.pods.metric.name}: {message}"
    if spec.type == MetricSourceType.OBJECT and spec.object is not None:
        obj = spec.object
        # upstream's format arguments are out of order; reproduced as is
        return (
            f"unable to get metric {obj.metric.name}: {obj.described_object.kind} on "
            f"{namespace} {obj.described_object.name}/{message}"
        )
    if spec.type == MetricSourceType.EXTERNAL and spec.external is not None:
        ext = spec.external
        return (
            f"unable to get external metric {namespace}/{ext.metric.name}/"
            f"{format_label_selector(ext.metric.selector)}: {message}"
        )
    return message


def _pod_details(calc: ReplicaCalculation) -> list[tuple[str, TraceValue]]:
    trace = calc.trace
    details: list[tuple[str, TraceValue]] = [
        ("usage ratio", trace.usage_ratio),
        ("tolerance", trace.tolerances),
        ("outcome", trace.outcome),
    ]
    if trace.ready_pod_count is not None:
        details.append(("ready pods", trace.ready_pod_count))
    if trace.ignored_pods:
        details.append(("set aside: ignored (deleted or failed)", trace.ignored_pods))
    if trace.unready_pods:
        treatment = "counted at 0 (scale-up)" if trace.unready_pods_counted_as_zero else "dropped"
        details.append(
            (
                f"set aside: unready (pending, not ready or sample predates readiness), "
                f"{treatment}",
                trace.unready_pods,
            )
        )
    if trace.missing_pods:
        if trace.missing_pods_fill_percent is not None:
            fill = f"assumed at {trace.missing_pods_fill_percent}% of request"
        elif trace.missing_pods_fill_milli is not None:
            fill = f"assumed at {trace.missing_pods_fill_milli}m"
        else:
            fill = "not filled (ratio exactly 1)"
        details.append((f"missing samples, {fill}", trace.missing_pods))
    if trace.superfluous_metrics:
        details.append(("samples of unselected pods", trace.superfluous_metrics))
    if trace.rebalanced_usage_ratio is not None:
        details.append(("re-balanced usage ratio", trace.rebalanced_usage_ratio))
    if trace.pod_count is not None:
        details.append(("multiplied by pod count", trace.pod_count))
    return details


def _metric_entry(
    metric_name: str,
    calc: ReplicaCalculation,
    inputs: Sequence[tuple[str, TraceValue | MetricValueStatus]],
) -> TraceEntry:
    return TraceEntry(
        Stage.METRIC,
        f"{metric_name}: proposes {calc.replica_count} replicas",
        (
            *[
                (key, _format_value_status(value) if type(value) is MetricValueStatus else value)
                for key, value in inputs
            ],
            *_pod_details(calc),
        ),
    )


def _metric_trace(
    metric_name: str,
    calc: ReplicaCalculation,
    inputs: Sequence[tuple[str, TraceValue | MetricValueStatus]],
) -> TracePart:
    """The metric's trace entry, deferred (a current value is formatted when it is read)."""
    return (_metric_entry, (metric_name, calc, inputs))


# ---------------------------------------------------------------- computeReplicasForMetric


def _compute_resource(
    spec: MetricSpec,
    observation: MetricObservation | None,
    *,
    scale: CurrentScale,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    settings: HorizontalSettings,
    namespace: str,
    now: datetime,
) -> _Proposal:
    """``computeStatusFor(Container)ResourceMetric`` + ``computeStatusForResourceMetricGeneric``."""
    container_scoped = spec.type == MetricSourceType.CONTAINER_RESOURCE
    if container_scoped:
        assert spec.container_resource is not None
        resource, container = spec.container_resource.name, spec.container_resource.container
        target = spec.container_resource.target
        reason = "FailedGetContainerResourceMetric"
        outer = f"failed to get {container} container metric value: "
    else:
        assert spec.resource is not None
        resource, container, target = spec.resource.name, "", spec.resource.target
        reason = "FailedGetResourceMetric"
        outer = f"failed to get {resource} resource metric value: "

    def fail(inner: str) -> _MetricError:
        return _MetricError(reason, inner, outer + inner)

    if target.average_value_milli is None and target.average_utilization is None:
        raise fail(
            "invalid resource metric source: neither an average utilization target nor an "
            "average value (usage) target was set"
        )
    what = "usage" if target.average_value_milli is not None else "utilization"
    if isinstance(observation, MetricFetchError):
        raise fail(
            f"failed to get {resource} {what}: "
            + _fetch_error_text(spec, observation.message, namespace=namespace)
        )
    if not isinstance(observation, PodMetricsObservation):
        raise fail(f"failed to get {resource} {what}: no per-pod samples were observed")
    try:
        if target.average_value_milli is not None:
            calc = get_raw_resource_replicas(
                scale.spec_replicas,
                target.average_value_milli,
                resource=resource,
                tolerances=tolerances,
                pods=pods,
                metrics=observation.metrics,
                timestamp=observation.timestamp,
                now=now,
                cpu_initialization_period_seconds=settings.cpu_initialization_period_seconds,
                initial_readiness_delay_seconds=settings.initial_readiness_delay_seconds,
            )
            metric_name = f"{resource} resource"
            current = MetricValueStatus(average_value_milli=calc.usage_milli)
            target_text = f"average value {target.average_value_milli}m"
        else:
            assert target.average_utilization is not None
            calc = get_resource_replicas(
                scale.spec_replicas,
                target.average_utilization,
                resource=resource,
                tolerances=tolerances,
                pods=pods,
                metrics=observation.metrics,
                timestamp=observation.timestamp,
                now=now,
                container=container,
                cpu_initialization_period_seconds=settings.cpu_initialization_period_seconds,
                initial_readiness_delay_seconds=settings.initial_readiness_delay_seconds,
                resize_aware=settings.resize_aware_utilization,
            )
            kind = "container resource" if container_scoped else "resource"
            metric_name = f"{resource} {kind} utilization (percentage of request)"
            current = MetricValueStatus(
                average_utilization=calc.utilization, average_value_milli=calc.usage_milli
            )
            target_text = f"{target.average_utilization}% of request"
    except ReplicaCalculationError as err:
        raise fail(f"failed to get {resource} {what}: {err}") from err
    status = MetricStatus(
        type=spec.type,
        name=resource,
        container=container if container_scoped else None,
        current=current,
    )
    inputs = [
        ("target", target_text),
        ("current", current),
        ("samples", len(observation.metrics)),
        ("selected pods", len(pods)),
    ]
    return _Proposal(
        calc.replica_count,
        metric_name,
        status,
        calc.timestamp,
        _metric_trace(metric_name, calc, inputs),
    )


def _compute_pods(
    spec: MetricSpec,
    observation: MetricObservation | None,
    *,
    scale: CurrentScale,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    namespace: str,
    now: datetime,
) -> _Proposal:
    """``computeStatusForPodsMetric``."""
    assert spec.pods is not None
    source = spec.pods

    def fail(inner: str) -> _MetricError:
        return _MetricError(
            "FailedGetPodsMetric", inner, f"failed to get pods metric value: {inner}"
        )

    if isinstance(observation, MetricFetchError):
        raise fail(_fetch_error_text(spec, observation.message, namespace=namespace))
    if not isinstance(observation, PodMetricsObservation):
        raise fail(f"unable to get metric {source.metric.name}: no per-pod samples were observed")
    target = source.target.average_value_milli or 0
    try:
        calc = get_metric_replicas(
            scale.spec_replicas,
            target,
            tolerances=tolerances,
            pods=pods,
            metrics=observation.metrics,
            timestamp=observation.timestamp,
            now=now,
        )
    except ReplicaCalculationError as err:
        raise fail(str(err)) from err
    current = MetricValueStatus(average_value_milli=calc.usage_milli)
    metric_name = f"pods metric {source.metric.name}"
    inputs = [
        ("target", f"average value {target}m"),
        ("current", current),
        ("samples", len(observation.metrics)),
        ("selected pods", len(pods)),
    ]
    return _Proposal(
        calc.replica_count,
        metric_name,
        MetricStatus(type=spec.type, metric=source.metric, current=current),
        calc.timestamp,
        _metric_trace(metric_name, calc, inputs),
    )


def _compute_object(
    spec: MetricSpec,
    observation: MetricObservation | None,
    *,
    scale: CurrentScale,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    namespace: str,
) -> _Proposal:
    """``computeStatusForObjectMetric``."""
    assert spec.object is not None
    source = spec.object
    target = source.target
    wrap = "failed to get object metric value: "
    if target.type == MetricTargetType.VALUE and target.value_milli is not None:
        per_pod = False
    elif target.type == MetricTargetType.AVERAGE_VALUE and target.average_value_milli is not None:
        per_pod = True
    else:
        inner = (
            "invalid object metric source: neither a value target nor an average value target "
            "was set"
        )
        raise _MetricError("FailedGetObjectMetric", inner, wrap + inner)

    def fail(inner: str) -> _MetricError:
        returned = (
            f"failed to get {source.metric.name} object metric: {inner}" if per_pod else inner
        )
        return _MetricError("FailedGetObjectMetric", inner, wrap + returned)

    if isinstance(observation, MetricFetchError):
        raise fail(_fetch_error_text(spec, observation.message, namespace=namespace))
    if not isinstance(observation, ObjectMetricObservation):
        raise fail(f"unable to get metric {source.metric.name}: no object value was observed")
    try:
        if per_pod:
            assert target.average_value_milli is not None
            calc = get_object_per_pod_metric_replicas(
                scale.status_replicas,
                target.average_value_milli,
                usage=observation.value_milli,
                timestamp=observation.timestamp,
                tolerances=tolerances,
            )
            current = MetricValueStatus(average_value_milli=calc.usage_milli)
            status = MetricStatus(type=spec.type, metric=source.metric, current=current)
            # sic: upstream names Object AverageValue metrics "external metric"
            metric_name = (
                f"external metric {source.metric.name}"
                f"({format_label_selector(source.metric.selector)})"
            )
            target_text = f"average value {target.average_value_milli}m per replica"
        else:
            assert target.value_milli is not None
            calc = get_object_metric_replicas(
                scale.spec_replicas,
                target.value_milli,
                usage=observation.value_milli,
                tolerances=tolerances,
                pods=pods,
            )
            current = MetricValueStatus(value_milli=calc.usage_milli)
            status = MetricStatus(
                type=spec.type,
                metric=source.metric,
                described_object=source.described_object,
                current=current,
            )
            metric_name = f"{source.described_object.kind} metric {source.metric.name}"
            target_text = f"value {target.value_milli}m"
    except ReplicaCalculationError as err:
        raise fail(str(err)) from err
    inputs = [
        ("object", f"{source.described_object.kind}/{source.described_object.name}"),
        ("target", target_text),
        ("current", current),
    ]
    if per_pod:
        inputs.append(("scale status.replicas", str(scale.status_replicas)))
    return _Proposal(
        calc.replica_count,
        metric_name,
        status,
        calc.timestamp,
        _metric_trace(metric_name, calc, inputs),
    )


def _compute_external(
    spec: MetricSpec,
    observation: MetricObservation | None,
    *,
    scale: CurrentScale,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    namespace: str,
) -> _Proposal:
    """``computeStatusForExternalMetric``."""
    assert spec.external is not None
    source = spec.external
    target = source.target
    name = source.metric.name
    wrap = f"failed to get {name} external metric value: "
    if target.average_value_milli is not None:
        per_pod = True
    elif target.value_milli is not None:
        per_pod = False
    else:
        inner = (
            "invalid external metric source: neither a value target nor an average value target "
            "was set"
        )
        raise _MetricError("FailedGetExternalMetric", inner, wrap + inner)

    def fail(inner: str) -> _MetricError:
        middle = (
            f"failed to get {name} external metric: "
            if per_pod
            else f"failed to get external metric {name}: "
        )
        return _MetricError("FailedGetExternalMetric", inner, wrap + middle + inner)

    if isinstance(observation, MetricFetchError):
        raise fail(_fetch_error_text(spec, observation.message, namespace=namespace))
    if not isinstance(observation, ExternalMetricObservation):
        raise fail(f"unable to get external metric {namespace}/{name}: no values were observed")
    try:
        if per_pod:
            assert target.average_value_milli is not None
            calc = get_external_per_pod_metric_replicas(
                scale.status_replicas,
                target.average_value_milli,
                values=observation.values_milli,
                timestamp=observation.timestamp,
                tolerances=tolerances,
            )
            current = MetricValueStatus(average_value_milli=calc.usage_milli)
            target_text = f"average value {target.average_value_milli}m per replica"
        else:
            assert target.value_milli is not None
            calc = get_external_metric_replicas(
                scale.spec_replicas,
                target.value_milli,
                values=observation.values_milli,
                tolerances=tolerances,
                pods=pods,
            )
            current = MetricValueStatus(value_milli=calc.usage_milli)
            target_text = f"value {target.value_milli}m"
    except ReplicaCalculationError as err:
        raise fail(str(err)) from err
    metric_name = f"external metric {name}({format_label_selector(source.metric.selector)})"
    inputs = [
        ("target", target_text),
        ("current", current),
        ("series", len(observation.values_milli)),
    ]
    if per_pod:
        inputs.append(("scale status.replicas", str(scale.status_replicas)))
    return _Proposal(
        calc.replica_count,
        metric_name,
        MetricStatus(type=spec.type, metric=source.metric, current=current),
        calc.timestamp,
        _metric_trace(metric_name, calc, inputs),
    )


def _format_value_status(current: MetricValueStatus) -> str:
    parts = []
    if current.average_utilization is not None:
        parts.append(f"{current.average_utilization}% of request")
    if current.average_value_milli is not None:
        parts.append(f"average {current.average_value_milli}m")
    if current.value_milli is not None:
        parts.append(f"value {current.value_milli}m")
    return ", ".join(parts) or "-"


def _compute_replicas_for_metric(
    spec: MetricSpec,
    observation: MetricObservation | None,
    *,
    scale: CurrentScale,
    pods: Sequence[PodInfo],
    tolerances: Tolerances,
    settings: HorizontalSettings,
    namespace: str,
    now: datetime,
) -> _Proposal:
    """``computeReplicasForMetric``: dispatch on the source type."""
    kind = spec.type
    if kind in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE) and (
        spec.resource is not None or spec.container_resource is not None
    ):
        return _compute_resource(
            spec,
            observation,
            scale=scale,
            pods=pods,
            tolerances=tolerances,
            settings=settings,
            namespace=namespace,
            now=now,
        )
    if kind == MetricSourceType.PODS and spec.pods is not None:
        return _compute_pods(
            spec,
            observation,
            scale=scale,
            pods=pods,
            tolerances=tolerances,
            namespace=namespace,
            now=now,
        )
    if kind == MetricSourceType.OBJECT and spec.object is not None:
        return _compute_object(
            spec, observation, scale=scale, pods=pods, tolerances=tolerances, namespace=namespace
        )
    if kind == MetricSourceType.EXTERNAL and spec.external is not None:
        return _compute_external(
            spec, observation, scale=scale, pods=pods, tolerances=tolerances, namespace=namespace
        )
    message = f"unknown metric source type {_go_quote(kind)}"
    raise _MetricError("InvalidMetricSourceType", message, message)


# a scratch value inside one call: not frozen, which is several times cheaper to build
@dataclass(slots=True)
class _MetricsResult:
    replicas: int  # -1 when the HPA cannot scale at all
    metric_name: str
    statuses: tuple[MetricStatus, ...] | None
    error: str | None


def _selector_entry(scale: CurrentScale, pod_count: int) -> TraceEntry:
    return TraceEntry(
        Stage.SELECTOR,
        f"selector {scale.selector!r} selects {pod_count} pods",
        (
            ("scale spec.replicas", str(scale.spec_replicas)),
            ("scale status.replicas", str(scale.status_replicas)),
        ),
    )


def _proposal_entry(replicas: int, metric_name: str, invalid_count: int) -> TraceEntry:
    details: tuple[tuple[str, TraceValue], ...] = ()
    if invalid_count:
        details = (("failed metrics (scale-up allowed)", str(invalid_count)),)
    return TraceEntry(
        Stage.PROPOSAL, f"largest proposal: {replicas} replicas from {metric_name}", details
    )


def _compute_replicas_for_metrics(
    ctx: _Context,
    spec: HorizontalPodAutoscalerSpec,
    *,
    scale: CurrentScale,
    observations: Sequence[MetricObservation | None],
    pods: Sequence[PodInfo],
    selector_check: SelectorCheck,
    tolerances: Tolerances,
    settings: HorizontalSettings,
    namespace: str,
) -> _MetricsResult:
    """``computeReplicasForMetrics`` (with ``validateAndParseSelector``)."""
    scaling_active = ConditionType.SCALING_ACTIVE
    if scale.selector == "":
        ctx.warn("SelectorRequired", "selector is required")
        ctx.set(
            scaling_active,
            ConditionStatus.FALSE,
            "InvalidSelector",
            "the HPA target's scale is missing a selector",
        )
        ctx.trace.append(TraceEntry(Stage.SELECTOR, "the target's scale has no selector"))
        return _MetricsResult(-1, "", None, "selector is required")
    if selector_check.parse_error is not None:
        message = (
            "couldn't convert selector into a corresponding internal selector object: "
            f"{selector_check.parse_error}"
        )
        ctx.warn("InvalidSelector", message)
        ctx.set(scaling_active, ConditionStatus.FALSE, "InvalidSelector", message)
        ctx.trace.append(
            TraceEntry(Stage.SELECTOR, "the selector does not parse", (("error", message),))
        )
        return _MetricsResult(-1, "", None, message)
    if len(selector_check.selecting_hpas) > 1:
        message = (
            f"pods by selector {scale.selector} are controlled by multiple HPAs: "
            f"[{' '.join(selector_check.selecting_hpas)}]"
        )
        ctx.warn("AmbiguousSelector", message)
        ctx.set(scaling_active, ConditionStatus.FALSE, "AmbiguousSelector", message)
        ctx.trace.append(
            TraceEntry(Stage.SELECTOR, "pods are selected by several HPAs", (("error", message),))
        )
        return _MetricsResult(-1, "", None, message)
    ctx.trace.append((_selector_entry, (scale, len(pods))))

    metric_count = len(spec.metrics)
    statuses: list[MetricStatus] = []
    replicas = 0
    metric_name = ""
    invalid_count = 0
    first_failure: _MetricError | None = None
    for index, metric_spec in enumerate(spec.metrics):
        observation = observations[index] if index < len(observations) else None
        try:
            proposal = _compute_replicas_for_metric(
                metric_spec,
                observation,
                scale=scale,
                pods=pods,
                tolerances=tolerances,
                settings=settings,
                namespace=namespace,
                now=ctx.now,
            )
        except _MetricError as failure:
            # getUnableComputeReplicaCountCondition records the event
            ctx.warn(failure.reason, failure.condition_error)
            ctx.trace.append(
                TraceEntry(
                    Stage.METRIC,
                    f"metric {index + 1} ({metric_spec.type}) failed: {failure.reason}",
                    (("error", failure.returned_error),),
                )
            )
            statuses.append(MetricStatus(type=""))
            ctx.proposals.append(None)
            ctx.failures.append((failure.reason, failure.returned_error))
            if invalid_count == 0:
                first_failure = failure
            invalid_count += 1
            continue
        statuses.append(proposal.status)
        ctx.proposals.append(proposal.replicas)
        ctx.failures.append(None)
        ctx.trace.append(proposal.trace)
        if replicas == 0 or proposal.replicas > replicas:
            replicas = proposal.replicas
            metric_name = proposal.metric_name

    error: str | None = None
    if first_failure is not None:
        error = (
            f"invalid metrics ({invalid_count} invalid out of {metric_count}), first error is: "
            f"{first_failure.returned_error}"
        )
    if first_failure is not None and (
        invalid_count >= metric_count or replicas < scale.spec_replicas
    ):
        ctx.set(
            scaling_active,
            ConditionStatus.FALSE,
            first_failure.reason,
            f"the HPA was unable to compute the replica count: {first_failure.condition_error}",
        )
        summary = (
            "every metric failed"
            if invalid_count >= metric_count
            else f"some metrics failed and the valid ones propose {replicas} < current "
            f"{scale.spec_replicas}: no scale-down while a metric is failing"
        )
        ctx.trace.append(TraceEntry(Stage.PROPOSAL, summary, (("error", error or ""),)))
        return _MetricsResult(-1, "", tuple(statuses), error)
    ctx.set(
        scaling_active,
        ConditionStatus.TRUE,
        "ValidMetricFound",
        f"the HPA was able to successfully calculate a replica count from {metric_name}",
    )
    ctx.trace.append((_proposal_entry, (replicas, metric_name, invalid_count)))
    return _MetricsResult(replicas, metric_name, tuple(statuses), error)


# ----------------------------------------------------------------------------------- decide


def _format_policies(rules: ScalingRules) -> str:
    """``Max of [Pods 4 per 15s, Percent 100 per 15s]``."""
    policies = ", ".join(
        f"{p.type} {p.value} per {p.period_seconds}s" for p in rules.policies or ()
    )
    return f"{rules.select_policy} of [{policies}]"


def _normalization_trace(
    norm: Normalization,
    rules: ResolvedRules | None,
    settings: HorizontalSettings,
    min_replicas: int,
    max_replicas: int,
) -> list[TraceEntry]:
    entries: list[TraceEntry] = []
    windows: tuple[tuple[str, TraceValue], ...]
    if rules is None:
        windows = (("down window (flag)", f"{settings.downscale_stabilization_seconds}s"),)
    else:
        windows = (
            ("up window", f"{rules.scale_up_stabilization_window_seconds}s"),
            ("down window", f"{rules.scale_down_stabilization_window_seconds}s"),
        )
    details = (*windows, ("recommendations in the window", norm.window_recommendations))
    if norm.stabilized_replicas != norm.prenormalized_desired_replicas:
        summary = (
            f"{norm.able_to_scale_reason}: {norm.prenormalized_desired_replicas} -> "
            f"{norm.stabilized_replicas}"
        )
    else:
        summary = f"not clipped: {norm.stabilized_replicas}"
    entries.append(TraceEntry(Stage.STABILIZATION, summary, details))
    limits: list[tuple[str, TraceValue]] = [("min", min_replicas), ("max", max_replicas)]
    if norm.scale_up_limit is not None:
        if rules is None:
            limits.append(("scale-up limit max(factor*current, minimum)", norm.scale_up_limit))
        else:
            limits.append(("scale-up policies", _format_policies(rules.scale_up)))
            limits.append(("scale-up policy limit", norm.scale_up_limit))
    if norm.scale_down_limit is not None and rules is not None:
        limits.append(("scale-down policies", _format_policies(rules.scale_down)))
        limits.append(("scale-down policy limit", norm.scale_down_limit))
    stage = (
        Stage.POLICY if norm.limit.reason in ("ScaleUpLimit", "ScaleDownLimit") else Stage.BOUNDS
    )
    if norm.scaling_limited:
        entries.append(
            TraceEntry(
                stage,
                f"{norm.limit.reason}: {norm.stabilized_replicas} -> {norm.desired_replicas}",
                (*limits, ("message", norm.limit.message)),
            )
        )
    else:
        entries.append(
            TraceEntry(Stage.BOUNDS, f"within range: {norm.desired_replicas}", tuple(limits))
        )
    return entries


def _scale_entry(
    current_replicas: int, min_replicas: int, max_replicas: int, has_behavior: bool
) -> TraceEntry:
    return TraceEntry(
        Stage.SCALE,
        f"current replicas {current_replicas} (min {min_replicas}, max {max_replicas})",
        (("behavior", "set" if has_behavior else "none (legacy normalization)"),),
    )


def _rescale_entry(current_replicas: int, desired_replicas: int, reason: str) -> TraceEntry:
    return TraceEntry(
        Stage.DECISION, f"rescale {current_replicas} -> {desired_replicas}", (("reason", reason),)
    )


def _steady_entry(current_replicas: int) -> TraceEntry:
    return TraceEntry(Stage.DECISION, f"no rescale: replicas stay at {current_replicas}")


def _reference(spec: HorizontalPodAutoscalerSpec, namespace: str) -> str:
    return f"{spec.scale_target_ref.kind}/{namespace}/{spec.scale_target_ref.name}"


def decide(
    spec: HorizontalPodAutoscalerSpec,
    *,
    current: CurrentScale | ScaleFetchError,
    observations: Sequence[MetricObservation | None],
    pods: Sequence[PodInfo],
    history: History,
    previous_status: HorizontalPodAutoscalerStatus,
    now: datetime,
    settings: HorizontalSettings,
    selector_check: SelectorCheck = SelectorCheck(),
    namespace: str = "",
) -> Decision:
    """One ``reconcileAutoscaler`` pass, without the I/O.

    ``observations`` line up with ``spec.metrics`` (after defaulting: an empty metric list is the
    cpu 80 % metric). ``pods`` are the pods the scale's selector selects. Returns a
    :class:`Decision`; when ``decision.rescale`` is true, feed the scale update's outcome to
    :func:`apply_rescale_result`.
    """
    spec = default_spec(spec) if not spec.metrics or spec.min_replicas is None else spec
    reference = _reference(spec, namespace)
    ctx = _Context(ConditionUpdates(previous_status.conditions, now), now)

    if isinstance(current, ScaleFetchError):
        ctx.warn("FailedGetScale", current.message)
        ctx.set(
            ConditionType.ABLE_TO_SCALE,
            ConditionStatus.FALSE,
            "FailedGetScale",
            f"the HPA controller was unable to get the target's current scale: {current.message}",
        )
        ctx.trace.append(
            TraceEntry(
                Stage.SCALE, "could not read the target's scale", (("error", current.message),)
            )
        )
        return Decision(
            desired_replicas=previous_status.desired_replicas,
            rescale=False,
            rescale_reason="",
            current_replicas=previous_status.current_replicas,
            status=replace(previous_status, conditions=ctx.conditions),
            history=history,
            events=tuple(ctx.events),
            error=f"failed to query scale subresource for {reference}: {current.message}",
            explanation=Explanation(tuple(ctx.trace)),
            reference=reference,
        )

    ctx.set(
        ConditionType.ABLE_TO_SCALE,
        ConditionStatus.TRUE,
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
    )
    current_replicas = current.spec_replicas
    recommendations = record_initial_recommendation(
        history.recommendations, current_replicas, now=now
    )
    min_replicas = spec.min_replicas if spec.min_replicas is not None else 1
    max_replicas = spec.max_replicas
    behavior = spec.behavior
    has_object_or_external = _has_object_or_external_metrics(spec.metrics)
    scaled_to_zero_condition = False
    if settings.scale_to_zero_enabled:
        found = find_condition(previous_status.conditions, ConditionType.SCALED_TO_ZERO)
        scaled_to_zero_condition = found is not None and found.status == ConditionStatus.TRUE
        needs_metrics_at_zero = (min_replicas != 0 and scaled_to_zero_condition) or (
            scaled_to_zero_condition and has_object_or_external
        )
    else:
        needs_metrics_at_zero = min_replicas == 0
    ctx.trace.append(
        (_scale_entry, (current_replicas, min_replicas, max_replicas, behavior is not None))
    )

    desired_replicas = 0
    rescale_reason = ""
    rescale = True
    metric_statuses: tuple[MetricStatus, ...] | None = None
    error: str | None = None

    drop_scaled_to_zero = False
    if current_replicas == 0 and not needs_metrics_at_zero:
        desired_replicas = 0
        rescale = False
        ctx.set(
            ConditionType.SCALING_ACTIVE,
            ConditionStatus.FALSE,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        )
        # with the gate off, a ScaledToZero condition left from a run with the gate on is removed
        drop_scaled_to_zero = not settings.scale_to_zero_enabled
        ctx.trace.append(
            TraceEntry(
                Stage.SCALE_TO_ZERO,
                "ScalingDisabled: the target is at zero replicas and the HPA did not put it "
                "there (maintenance mode)",
            )
        )
    elif current_replicas != 0 and current_replicas > max_replicas:
        rescale_reason = "Current number of replicas above Spec.MaxReplicas"
        desired_replicas = max_replicas
        ctx.trace.append(TraceEntry(Stage.BOUNDS, f"{rescale_reason}: -> {max_replicas}"))
    elif current_replicas != 0 and current_replicas < min_replicas:
        rescale_reason = "Current number of replicas below Spec.MinReplicas"
        desired_replicas = min_replicas
        ctx.trace.append(TraceEntry(Stage.BOUNDS, f"{rescale_reason}: -> {min_replicas}"))
    else:
        if current_replicas == 0:
            ctx.trace.append(
                TraceEntry(
                    Stage.SCALE_TO_ZERO,
                    "evaluating metrics at zero replicas"
                    + (" (ScaledToZero=True)" if scaled_to_zero_condition else " (minReplicas 0)"),
                )
            )
        tolerances = tolerances_for_hpa(behavior, settings)
        result = _compute_replicas_for_metrics(
            ctx,
            spec,
            scale=current,
            observations=observations,
            pods=pods,
            selector_check=selector_check,
            tolerances=tolerances,
            settings=settings,
            namespace=namespace,
        )
        metric_statuses = result.statuses
        if result.error is not None and result.replicas == -1:
            ctx.warn("FailedComputeMetricsReplicas", result.error)
            ctx.trace.append(
                TraceEntry(
                    Stage.DECISION,
                    f"no scaling: replicas stay at {current_replicas}",
                    (("error", result.error),),
                )
            )
            return Decision(
                desired_replicas=previous_status.desired_replicas,
                rescale=False,
                rescale_reason="",
                current_replicas=current_replicas,
                status=HorizontalPodAutoscalerStatus(
                    current_replicas=current_replicas,
                    desired_replicas=previous_status.desired_replicas,
                    last_scale_time=previous_status.last_scale_time,
                    current_metrics=metric_statuses,
                    conditions=ctx.conditions,
                ),
                history=History(
                    recommendations, history.scale_up_events, history.scale_down_events
                ),
                events=tuple(ctx.events),
                error=(
                    "failed to compute desired number of replicas based on listed metrics for "
                    f"{reference}: {result.error}"
                ),
                explanation=Explanation(tuple(ctx.trace)),
                metric_proposals=tuple(ctx.proposals),
                metric_failures=tuple(ctx.failures),
                reference=reference,
            )
        error = result.error
        rescale_metric = ""
        if result.replicas > desired_replicas:
            desired_replicas = result.replicas
            rescale_metric = result.metric_name
        if desired_replicas > current_replicas:
            rescale_reason = f"{rescale_metric} above target"
        if desired_replicas < current_replicas:
            rescale_reason = "All metrics below target"
        rules = resolve_behavior(behavior, settings) if behavior is not None else None
        if rules is None:
            norm = normalize_desired_replicas(
                recommendations,
                desired_replicas,
                current_replicas=current_replicas,
                min_replicas=min_replicas,
                max_replicas=max_replicas,
                downscale_stabilization_window_seconds=settings.downscale_stabilization_seconds,
                scale_up_limit_factor=settings.scale_up_limit_factor,
                scale_up_limit_minimum=settings.scale_up_limit_minimum,
                now=now,
            )
        else:
            norm = normalize_desired_replicas_with_behaviors(
                recommendations,
                desired_replicas,
                rules=rules,
                current_replicas=current_replicas,
                min_replicas=min_replicas,
                max_replicas=max_replicas,
                scale_up_events=history.scale_up_events,
                scale_down_events=history.scale_down_events,
                now=now,
            )
        recommendations = norm.recommendations
        ctx.set(
            ConditionType.ABLE_TO_SCALE,
            ConditionStatus.TRUE,
            norm.able_to_scale_reason,
            norm.able_to_scale_message,
        )
        ctx.set(
            ConditionType.SCALING_LIMITED,
            ConditionStatus.TRUE if norm.scaling_limited else ConditionStatus.FALSE,
            norm.limit.reason,
            norm.limit.message,
        )
        ctx.trace.append(
            (_normalization_trace, (norm, rules, settings, min_replicas, max_replicas))
        )
        desired_replicas = norm.desired_replicas
        if (
            settings.scale_to_zero_enabled
            and current_replicas == 0
            and min_replicas != 0
            and scaled_to_zero_condition
            and desired_replicas < min_replicas
        ):
            desired_replicas = min_replicas
            if not rescale_reason:
                rescale_reason = "Current number of replicas below Spec.MinReplicas"
            ctx.trace.append(
                TraceEntry(
                    Stage.SCALE_TO_ZERO,
                    f"waking from zero: raised to minReplicas {min_replicas}",
                )
            )
        rescale = desired_replicas != current_replicas

    if rescale:
        ctx.trace.append((_rescale_entry, (current_replicas, desired_replicas, rescale_reason)))
        pending: _PendingRescale | None = _PendingRescale(
            behavior=behavior,
            min_replicas=min_replicas,
            has_object_or_external_metrics=has_object_or_external,
            previous_desired_replicas=previous_status.desired_replicas,
            scale_to_zero_enabled=settings.scale_to_zero_enabled,
        )
    else:
        desired_replicas = current_replicas
        ctx.trace.append((_steady_entry, (current_replicas,)))
        pending = None
    conditions = ctx.conditions
    if drop_scaled_to_zero:
        conditions = remove_condition(conditions, ConditionType.SCALED_TO_ZERO)
    return Decision(
        desired_replicas=desired_replicas,
        rescale=rescale,
        rescale_reason=rescale_reason,
        current_replicas=current_replicas,
        status=HorizontalPodAutoscalerStatus(
            current_replicas=current_replicas,
            desired_replicas=desired_replicas,
            last_scale_time=previous_status.last_scale_time,
            current_metrics=metric_statuses,
            conditions=conditions,
        ),
        history=History(recommendations, history.scale_up_events, history.scale_down_events),
        events=tuple(ctx.events),
        error=error,
        explanation=Explanation(tuple(ctx.trace)),
        reference=reference,
        metric_proposals=tuple(ctx.proposals),
        metric_failures=tuple(ctx.failures),
        _pending=pending,
    )


def apply_rescale_result(
    decision: Decision, *, succeeded: bool, error: str | None = None, now: datetime
) -> Decision:
    """What upstream does right after ``Scales().Update``, as a new :class:`Decision`.

    On failure: Warning ``FailedRescale`` (``New size: n; reason: r; error: e``),
    ``AbleToScale=False/FailedUpdateScale``, the previous ``desiredReplicas`` in the status and the
    reconcile error ``failed to rescale <ref>: e``. On success: ``AbleToScale=True/
    SucceededRescale``, Normal ``SuccessfulRescale`` (``New size: n; reason: r``), the scale event
    stored (with a behavior), ``lastScaleTime = now`` and the ``ScaledToZero`` condition refreshed
    (or removed when the gate is off). A decision that does not rescale is returned unchanged.
    """
    pending = decision._pending
    if not decision.rescale or pending is None:
        return decision
    desired = decision.desired_replicas
    reason = decision.rescale_reason
    status = decision.status
    conditions = status.conditions
    trace = decision.explanation
    if not succeeded:
        message = error or "unknown error"
        conditions = set_condition(
            conditions,
            ConditionType.ABLE_TO_SCALE,
            ConditionStatus.FALSE,
            reason="FailedUpdateScale",
            message=f"the HPA controller was unable to update the target scale: {message}",
            now=now,
        )
        return replace(
            decision,
            rescale_succeeded=False,
            status=replace(
                status,
                desired_replicas=pending.previous_desired_replicas,
                conditions=conditions,
            ),
            events=(
                *decision.events,
                Event(
                    "Warning",
                    "FailedRescale",
                    f"New size: {desired}; reason: {reason}; error: {message}",
                ),
            ),
            error=f"failed to rescale {decision.reference}: {message}",
            explanation=trace.with_entry(
                TraceEntry(Stage.RESCALE, "the scale update failed", (("error", message),))
            ),
            _pending=None,
        )
    conditions = set_condition(
        conditions,
        ConditionType.ABLE_TO_SCALE,
        ConditionStatus.TRUE,
        reason="SucceededRescale",
        message=f"the HPA controller was able to update the target scale to {desired}",
        now=now,
    )
    if pending.scale_to_zero_enabled:
        if (
            decision.current_replicas > 0
            and desired == 0
            and pending.min_replicas == 0
            and pending.has_object_or_external_metrics
        ):
            conditions = set_condition(
                conditions,
                ConditionType.SCALED_TO_ZERO,
                ConditionStatus.TRUE,
                reason="ScaledToZero",
                message="the HPA controller scaled the workload to zero",
                now=now,
            )
        else:
            conditions = set_condition(
                conditions,
                ConditionType.SCALED_TO_ZERO,
                ConditionStatus.FALSE,
                reason="NotScaledToZero",
                message="the HPA controller did not scale the workload to zero",
                now=now,
            )
    else:
        conditions = remove_condition(conditions, ConditionType.SCALED_TO_ZERO)
    history = decision.history
    behavior = pending.behavior
    if behavior is not None:
        up, down = store_scale_event(
            default_behavior(behavior),
            history.scale_up_events,
            history.scale_down_events,
            prev_replicas=decision.current_replicas,
            new_replicas=desired,
            now=now,
        )
        history = History(history.recommendations, up, down)
    return Decision(
        desired_replicas=desired,
        rescale=True,
        rescale_reason=reason,
        current_replicas=decision.current_replicas,
        status=HorizontalPodAutoscalerStatus(
            current_replicas=status.current_replicas,
            desired_replicas=status.desired_replicas,
            last_scale_time=now,
            current_metrics=status.current_metrics,
            conditions=conditions,
        ),
        history=history,
        error=decision.error,
        reference=decision.reference,
        rescale_succeeded=True,
        events=(
            *decision.events,
            Event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}"),
        ),
        explanation=trace.with_entry(
            TraceEntry(Stage.RESCALE, f"scaled {decision.current_replicas} -> {desired}")
        ),
        metric_proposals=decision.metric_proposals,
        metric_failures=decision.metric_failures,
        _pending=None,
    )
