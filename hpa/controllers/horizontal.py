"""The horizontal controller: fetch (scale, pods, metrics) -> decide (``hpa.core``) -> write.

Upstream counterpart: ``pkg/controller/podautoscaler/horizontal.go``: ``reconcileKey`` (a deleted
HPA drops its recommendations and scale events), ``reconcileAutoscaler`` (the order of reads and
writes, the events and their upstream reasons and messages), ``validateAndParseSelector`` with
``hpa_selector_store.go`` (``AmbiguousSelector`` from a per-namespace selector store: no global
lock, read-only overlap queries), ``updateStatusIfNeeded`` / ``updateStatus``
(``FailedUpdateStatus``), ``recordInitialRecommendation`` (first reconcile after start seeds the
stabilization log with the current replica count, so no scale-down happens before the window has
elapsed) and ``monitor/metrics.go`` (the ``reconciliations_*``, ``metric_computation_*`` and
``desired_replicas`` families). The decision itself is :func:`hpa.core.decision.decide`; this
module only does I/O through the ports of :mod:`hpa.controllers.ports`, so ``hpa controller`` and
the simulator run exactly this code.

Deliberate deviations (see ``docs/controller-status.md`` for the status rule):

* **Scale conflicts.** The scale update carries the resourceVersion it was read at. On 409 the
  controller re-decides once from the fresh Scale the port returned (same metrics, same history)
  and writes again only if that decision still rescales; a second conflict is ``FailedRescale``.
  A write is only ever repeated after a conflict, i.e. after the first one did not happen, so
  one decision never scales twice.
* **Status writes** skip changes smaller than ``status_value_tolerance`` in metric values
  (0 is upstream's semantic equality); any other change is written.
* **Each metric call has its own deadline** (``metric_timeout_seconds``); a missed deadline is
  that metric's fetch error (``... API: context deadline exceeded``), others go on. Metrics of one
  HPA are fetched concurrently. Metrics are not fetched when the decision will not read them
  (target at zero in maintenance mode, replicas outside ``[min, max]``, selector problems).
* **Errors do not requeue with backoff.** Upstream requeues every key after the resync period
  whether or not it failed (``NewDefaultHPARateLimiter(resyncPeriod)``); here a reconcile that
  ends in an upstream error returns normally (logged, counted, reported) and the periodic resync
  brings the key back. Only an unexpected exception escapes, and the work queue backs that key
  off while every other HPA goes on.
* **Dry run** (``--dry-run`` or the annotation ``hpa.dry-run/enabled: "true"``): everything is
  computed, nothing is written to ``/scale`` or ``/status``; every event the real run would
  record is recorded with reason ``DryRun`` (``<reason>: <message>``), plus one ``DryRun`` event
  ``would rescale <ref> from <n> to <m>; reason: <r>``; the recommendation log is kept, scale
  events are not (nothing scaled). ``dry_run_rescales_total`` counts would-be rescales.
* ``metric_computation_*`` observe the duration of each metric's fetch; the per-metric action
  (the metric's own proposal against the current replicas) is read from the decision's trace.
* ``AmbiguousSelector`` lists every overlapping HPA (sorted), this one included even before it
  was registered by the informer.
* The last report of each HPA is kept for ``/debug/hpa`` with its trace rendered as text
  (:meth:`HorizontalController.last_explanation`): a third of the trace objects' memory at
  10,000 HPAs; ``reconcile_key`` still returns the whole report.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from hpa.controllers.conversion import current_scale, metric_selector
from hpa.controllers.ports import (
    Clock,
    EventRecorder,
    HorizontalPodAutoscalerLister,
    HorizontalPodAutoscalerObject,
    HorizontalPodAutoscalerStatusWriter,
    HPASelectorIndex,
    MetricsClient,
    PodLister,
    ScaleClient,
)
from hpa.controllers.settings import DRY_RUN_ANNOTATION, HorizontalControllerSettings
from hpa.core.conditions import (
    ConditionStatus,
    ConditionType,
    Event,
    HorizontalPodAutoscalerCondition,
    find_condition,
)
from hpa.core.decision import (
    Decision,
    History,
    HorizontalPodAutoscalerStatus,
    MetricFetchError,
    MetricObservation,
    MetricStatus,
    ScaleFetchError,
    SelectorCheck,
    apply_rescale_result,
    decide,
)
from hpa.core.explain import Explanation
from hpa.core.selector import NOTHING, Selector, SelectorError, parse_selector
from hpa.core.spec import (
    HorizontalPodAutoscalerSpec,
    MetricSourceType,
    MetricSpec,
    default_spec,
)
from hpa.kube.records import PodRecord
from hpa.kube.scale import Scale, ScaleConflict
from hpa.kube.status import StatusWriteOutcome
from hpa.metrics.transport import error_text

__all__ = [
    "METRIC_PREFIX",
    "UPSTREAM_METRIC_PREFIX",
    "HPASelectorStore",
    "HorizontalController",
    "HorizontalControllerMetrics",
    "ReconcileReport",
    "status_needs_write",
]

log = structlog.get_logger("hpa.controllers.horizontal")


def _debug_enabled() -> bool:
    """Whether structlog's configuration passes debug events, so that the per-reconcile debug
    line costs one lookup when it would be dropped (binding the lazy logger to find out took a
    fortieth of a simulated reconcile). ``make_filtering_bound_logger``'s classes answer
    ``is_enabled_for`` from their level alone; the configured class is read each time, so a
    reconfiguration (the CLI's ``--log-level``, a test's ``capture_logs``) takes effect at once."""
    check = getattr(structlog.get_config()["wrapper_class"], "is_enabled_for", None)
    return True if check is None else bool(check(None, logging.DEBUG))


UPSTREAM_METRIC_PREFIX = "horizontal_pod_autoscaler_controller_"
"""kube-controller-manager's HPA metrics (``pkg/controller/podautoscaler/monitor/metrics.go``):
same names, labels and buckets, so upstream's dashboards and alerts read ours."""
METRIC_PREFIX = "hpa_horizontal_controller_"
"""Our prefix, for the controller's metrics that upstream has no counterpart for."""


Action = Literal["scale_up", "scale_down", "none"]
ErrorLabel = Literal["spec", "internal", "none"]

_NO_EXPLANATION = Explanation()
_NO_SELECTOR_CHECK = SelectorCheck()
_BUCKETS = tuple(0.001 * 2**i for i in range(15))  # metrics.ExponentialBuckets(0.001, 2, 15)
_SPEC_REASONS = ("InvalidMetricSourceType",)
_API_OF_SOURCE: dict[str, str] = {
    MetricSourceType.RESOURCE: "resource metrics API",
    MetricSourceType.CONTAINER_RESOURCE: "resource metrics API",
    MetricSourceType.PODS: "custom metrics API",
    MetricSourceType.OBJECT: "custom metrics API",
    MetricSourceType.EXTERNAL: "external metrics API",
}


# ----------------------------------------------------------------------------- selector store


class HPASelectorStore:
    """``hpaSelectorStore``: per-namespace map of HPA key -> last known selector.

    Upstream guards it with a read/write lock because workers are threads; here every call is
    synchronous on the event loop, so reads and writes never interleave and no lock is needed.
    The answer for one pod label set is cached per namespace until a selector of that namespace
    changes (a steady reconcile re-puts the same selector, which changes nothing), so a query
    costs a lookup per distinct pod label set; a miss costs (HPAs of that namespace) matches.
    """

    def __init__(self) -> None:
        self._namespaces: dict[str, dict[str, Selector]] = {}
        self._matches: dict[str, dict[tuple[tuple[str, str], ...], frozenset[str]]] = {}
        self._by_term: dict[str, dict[tuple[str, str] | None, set[str]]] = {}
        """Per namespace, the HPA keys by the first ``key=value`` term of their selector
        (``None``: selectors without one): only those a label set has can match it."""

    def __len__(self) -> int:
        return sum(len(selectors) for selectors in self._namespaces.values())

    @staticmethod
    def _term(selector: Selector) -> tuple[str, str] | None:
        return next(iter(selector.equality_terms().items()), None)

    def _put(self, namespace: str, key: str, selector: Selector, old: Selector | None) -> None:
        self._namespaces.setdefault(namespace, {})[key] = selector
        by_term = self._by_term.setdefault(namespace, {})
        if old is not None:
            by_term[self._term(old)].discard(key)
        by_term.setdefault(self._term(selector), set()).add(key)
        self._matches.pop(namespace, None)

    def put_if_absent(self, namespace: str, key: str, *, selector: Selector) -> bool:
        if key in self._namespaces.get(namespace, ()):
            return False
        self._put(namespace, key, selector, None)
        return True

    def put_if_present(self, namespace: str, key: str, *, selector: Selector) -> bool:
        selectors = self._namespaces.get(namespace)
        if selectors is None or key not in selectors:
            return False
        current = selectors[key]
        if current is not selector and current != selector:
            self._put(namespace, key, selector, current)
        return True

    def delete(self, namespace: str, key: str) -> None:
        selectors = self._namespaces.get(namespace)
        if selectors is None:
            return
        old = selectors.pop(key, None)
        if old is not None:
            self._by_term[namespace][self._term(old)].discard(key)
            self._matches.pop(namespace, None)
        if not selectors:
            del self._namespaces[namespace]
            del self._by_term[namespace]

    def _matching(
        self, namespace: str, selectors: Mapping[str, Selector], labels: Mapping[str, str]
    ) -> frozenset[str]:
        cache = self._matches.setdefault(namespace, {})
        label_set = tuple(sorted(labels.items()))
        found = cache.get(label_set)
        if found is None:
            by_term = self._by_term[namespace]
            candidates = [*by_term.get(None, ())]
            for term in label_set:
                candidates.extend(by_term.get(term, ()))
            found = frozenset(key for key in candidates if selectors[key].matches(labels))
            cache[label_set] = found
        return found

    def hpas_matching_pods(
        self, namespace: str, pod_labels: Iterable[Mapping[str, str]], *, limit: int = 0
    ) -> tuple[str, ...]:
        selectors = self._namespaces.get(namespace)
        if not selectors:
            return ()
        if len(selectors) == 1:  # the common namespace: one HPA, so one matching pod settles it
            ((only, selector),) = selectors.items()
            return (only,) if any(selector.matches(labels) for labels in pod_labels) else ()
        found: set[str] = set()
        for labels in pod_labels:
            found |= self._matching(namespace, selectors, labels)
        ordered = tuple(sorted(found))
        return ordered[:limit] if limit > 0 else ordered


# ---------------------------------------------------------------------------------- metrics


class _Unobserved:
    """A metric family, and each of its children, that records nothing."""

    def labels(self, *values: str, **labels: str) -> _Unobserved:
        return self

    def inc(self, amount: float = 1) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def remove(self, *values: str) -> None:
        pass


_UNOBSERVED = _Unobserved()


class HorizontalControllerMetrics:
    """Upstream's ``monitor`` family under :data:`UPSTREAM_METRIC_PREFIX`, plus ours under
    :data:`METRIC_PREFIX`, on one registry."""

    observed: bool = True
    """False for :meth:`unobserved` families: callers may skip computing label values."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        upstream_prefix: str = UPSTREAM_METRIC_PREFIX,
        prefix: str = METRIC_PREFIX,
    ) -> None:
        self.reconciliations = Counter(
            f"{upstream_prefix}reconciliations_total",
            "Reconciliations, by action (scale_up, scale_down, none) and error (spec, internal, "
            "none).",
            ["action", "error"],
            registry=registry,
        )
        self.reconciliation_duration = Histogram(
            f"{upstream_prefix}reconciliation_duration_seconds",
            "Seconds one reconciliation took, by action and error.",
            ["action", "error"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.metric_computations = Counter(
            f"{upstream_prefix}metric_computation_total",
            "Metric computations, by action, error and metric_type (spec.metrics[*].type).",
            ["action", "error", "metric_type"],
            registry=registry,
        )
        self.metric_computation_duration = Histogram(
            f"{upstream_prefix}metric_computation_duration_seconds",
            "Seconds one metric took to fetch, by action, error and metric_type.",
            ["action", "error", "metric_type"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.desired_replicas = Gauge(
            f"{upstream_prefix}desired_replicas",
            "Desired replica count of each HPA (what a dry run would set, in dry run).",
            ["namespace", "hpa_name"],
            registry=registry,
        )
        self.num_hpas = Gauge(
            f"{upstream_prefix}num_horizontal_pod_autoscalers",
            "HPA objects this controller has state for.",
            registry=registry,
        )
        self.queue_depth = Gauge(
            f"{prefix}queue_depth", "HPA keys waiting in the work queue.", registry=registry
        )
        self.sync_interval = Histogram(
            f"{prefix}sync_interval_seconds",
            "Effective seconds between two reconciles of the same HPA.",
            buckets=(1, 5, 10, 15, 20, 30, 45, 60, 120, 300, 600),
            registry=registry,
        )
        self.dry_run_rescales = Counter(
            f"{prefix}dry_run_rescales_total",
            "Rescales a dry run would have made, by action (scale_up, scale_down).",
            ["action"],
            registry=registry,
        )
        self._children: dict[tuple[Counter | Histogram, tuple[str, ...]], Any] = {}
        self.status_writes = Counter(
            f"{prefix}status_writes_total",
            "Status writes, by outcome (written, conflict, skipped, failed, dry_run).",
            ["outcome"],
            registry=registry,
        )

    @classmethod
    def unobserved(cls) -> HorizontalControllerMetrics:
        """Families that record nothing: for embedders without a ``/metrics`` endpoint, such as
        the simulator (each metric update takes a lock; a simulated week makes a million)."""
        metrics = cls.__new__(cls)
        for name in (
            "reconciliations",
            "reconciliation_duration",
            "metric_computations",
            "metric_computation_duration",
            "desired_replicas",
            "num_hpas",
            "queue_depth",
            "sync_interval",
            "dry_run_rescales",
            "status_writes",
        ):
            setattr(metrics, name, _UNOBSERVED)
        metrics._children = {}
        metrics.observed = False
        return metrics

    def observe_queue_depth(self, depth: int) -> None:
        """Hook for ``WorkQueue(on_depth=...)``."""
        self.queue_depth.set(depth)

    def child(self, family: Counter | Histogram, *values: str) -> Any:
        """``family.labels(*values)``, looked up once per label set (families with a closed
        label set only: the cache is never pruned)."""
        key = (family, values)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = family.labels(*values)
        return found


# ----------------------------------------------------------------------------- status rule


def _seconds(moment: datetime | None) -> datetime | None:
    """The API stores ``metav1.Time`` in whole seconds."""
    if moment is None or moment.microsecond == 0:
        return moment
    return moment.replace(microsecond=0)


def _conditions_equal(
    old: Sequence[HorizontalPodAutoscalerCondition], new: Sequence[HorizontalPodAutoscalerCondition]
) -> bool:
    if len(old) != len(new):
        return False
    return all(
        a is b
        or (a.type, a.status, a.reason, a.message, _seconds(a.last_transition_time))
        == (b.type, b.status, b.reason, b.message, _seconds(b.last_transition_time))
        for a, b in zip(old, new, strict=True)
    )


_Ratio = tuple[int, int]
_ratios: dict[float, _Ratio] = {}


def _ratio(value: float) -> _Ratio:
    """``value`` as written (``0.05`` is 5/100, not the binary float's 3602879701896397/2**56),
    as an exact ``(numerator, denominator)``; cached per flag value."""
    found = _ratios.get(value)
    if found is None:
        numerator, denominator = Decimal(str(value)).as_integer_ratio()
        found = _ratios[value] = (numerator, denominator)
    return found


def _value_close(old: int | None, new: int | None, tolerance: _Ratio) -> bool:
    """``|new - old| <= tolerance * |old|``, in exact integer arithmetic."""
    if old == new:
        return True
    if old is None or new is None:
        return False
    numerator, denominator = tolerance
    return abs(new - old) * denominator <= numerator * abs(old)


def _metric_close(old: MetricStatus, new: MetricStatus, tolerance: _Ratio) -> bool:
    if (old.type, old.name, old.container) != (new.type, new.name, new.container):
        return False
    if old.metric is not new.metric and old.metric != new.metric:
        return False
    if old.described_object is not new.described_object and (
        old.described_object != new.described_object
    ):
        return False
    a, b = old.current, new.current
    return (
        _value_close(a.value_milli, b.value_milli, tolerance)
        and _value_close(a.average_value_milli, b.average_value_milli, tolerance)
        and _value_close(a.average_utilization, b.average_utilization, tolerance)
    )


def status_needs_write(
    old: HorizontalPodAutoscalerStatus,
    new: HorizontalPodAutoscalerStatus,
    *,
    value_tolerance: float = 0.0,
    old_observed_generation: int | None = None,
    new_observed_generation: int | None = None,
) -> bool:
    """Whether ``new`` differs meaningfully from the stored ``old`` (``docs/controller-status.md``).

    Everything compares exactly (times at the API's whole-second precision; absent and empty
    ``currentMetrics`` are equal) except metric values: ``value``, ``averageValue`` and
    ``averageUtilization`` count as unchanged while ``|new - old| <= value_tolerance * |old|``.
    """
    if new_observed_generation is not None and new_observed_generation != old_observed_generation:
        return True
    if (old.current_replicas, old.desired_replicas) != (new.current_replicas, new.desired_replicas):
        return True
    if old.last_scale_time is not new.last_scale_time and _seconds(old.last_scale_time) != _seconds(
        new.last_scale_time
    ):
        return True
    if old.conditions is not new.conditions and not _conditions_equal(
        old.conditions, new.conditions
    ):
        return True
    old_metrics = old.current_metrics or ()
    new_metrics = new.current_metrics or ()
    if len(old_metrics) != len(new_metrics):
        return True
    tolerance = _ratio(value_tolerance)
    for a, b in zip(old_metrics, new_metrics, strict=True):
        if a is not b and not _metric_close(a, b, tolerance):
            return True
    return False


# ------------------------------------------------------------------------------ the controller


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcileReport:
    """What one reconcile did: for logs, the debug endpoint, tests and the simulator."""

    key: str
    at: datetime
    dry_run: bool
    current_replicas: int
    desired_replicas: int
    rescale: bool
    rescale_reason: str
    scaled: bool
    """A scale write went through (never in dry run)."""
    status_written: bool
    conflict_retried: bool
    """The first scale write met a 409 and the controller re-decided from the fresh Scale."""
    error: str | None
    action: Action
    error_label: ErrorLabel
    events: tuple[Event, ...]
    explanation: Explanation = field(repr=False, compare=False)
    """The decision's trace (rendered on demand: ``str(report.explanation)``)."""
    status: HorizontalPodAutoscalerStatus = field(repr=False, compare=False)

    def to_dict(self, *, explanation: str | None = None) -> dict[str, Any]:
        """JSON-ready (for the debug endpoint); ``explanation`` is the rendered trace when the
        report no longer holds it (the controller keeps its last reports that way)."""
        return {
            "key": self.key,
            "at": self.at.isoformat(),
            "dryRun": self.dry_run,
            "currentReplicas": self.current_replicas,
            "desiredReplicas": self.desired_replicas,
            "rescale": self.rescale,
            "rescaleReason": self.rescale_reason,
            "scaled": self.scaled,
            "statusWritten": self.status_written,
            "conflictRetried": self.conflict_retried,
            "error": self.error,
            "action": self.action,
            "events": [
                {"type": e.type, "reason": e.reason, "message": e.message} for e in self.events
            ],
            "explanation": self.explanation.render() if explanation is None else explanation,
        }


def _split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.rpartition("/")
    return namespace, name


def _metric_actions(decision: Decision, metrics: Sequence[MetricSpec]) -> list[Action]:
    """Each metric's own proposal against the current replicas."""
    proposals = decision.metric_proposals
    current = decision.current_replicas
    actions: list[Action] = []
    for index in range(len(metrics)):
        proposal = proposals[index] if index < len(proposals) else None
        if proposal is None or proposal == current:
            actions.append("none")
        else:
            actions.append("scale_up" if proposal > current else "scale_down")
    return actions


def _metric_error_labels(decision: Decision, metrics: Sequence[MetricSpec]) -> list[ErrorLabel]:
    failures = decision.metric_failures
    labels: list[ErrorLabel] = []
    for index in range(len(metrics)):
        failure = failures[index] if index < len(failures) else None
        if failure is None:
            labels.append("none")
            continue
        reason, text = failure
        invalid_source = "invalid" in text and "metric source" in text
        labels.append("spec" if reason in _SPEC_REASONS or invalid_source else "internal")
    return labels


class HorizontalController:
    """Reconciles one HPA key at a time through the ports; keeps per-HPA history in memory.

    ``reconcile`` is what the work queue calls. ``track`` / ``forget`` are what the HPA
    informer's add and delete handlers call (upstream's ``enqueueHPA`` / ``deleteHPA``
    registering in and removing from the selector store).
    """

    def __init__(
        self,
        settings: HorizontalControllerSettings,
        *,
        hpas: HorizontalPodAutoscalerLister,
        scales: ScaleClient,
        metrics: MetricsClient,
        pods: PodLister,
        status_writer: HorizontalPodAutoscalerStatusWriter,
        events: EventRecorder,
        clock: Clock,
        selector_index: HPASelectorIndex | None = None,
        registry: CollectorRegistry | None = None,
        on_sync_interval: Callable[[str, float], None] | None = None,
        render_explanations: bool = True,
        observe: bool = True,
    ) -> None:
        """``on_sync_interval(key, seconds)`` is called with each effective sync interval (the
        seconds between the starts of two reconciles of ``key``), the value the
        ``sync_interval_seconds`` histogram observes; benchmarks use it for exact percentiles.

        ``render_explanations=False`` keeps each HPA's last report as returned, its trace not
        rendered (``last_explanation`` renders it on demand): for embedders that reconcile a few
        HPAs many times and read the returned reports, such as the simulator. The default keeps
        the trace as text, which is what 10,000 HPAs can afford (see :meth:`reconcile_key`).
        ``observe=False`` records no Prometheus metrics (:meth:`HorizontalControllerMetrics.
        unobserved`; ``registry`` is then unused)."""
        self.settings = settings
        self._render_explanations = render_explanations
        self._on_sync_interval = on_sync_interval
        self._horizontal = settings.horizontal
        self._hpas = hpas
        self._scales = scales
        self._metrics_client = metrics
        self._pods = pods
        self._status_writer = status_writer
        self._events = events
        self._clock = clock
        self.selector_index: HPASelectorIndex = (
            selector_index if selector_index is not None else HPASelectorStore()
        )
        self.metrics = (
            HorizontalControllerMetrics(registry or CollectorRegistry())
            if observe
            else HorizontalControllerMetrics.unobserved()
        )
        self._histories: dict[str, History] = {}
        self._last_sync: dict[str, float] = {}
        """Per HPA: the last pod listing (held, so its identity is not reused) and its infos."""
        self._selectors: dict[str, tuple[str, Selector, str, SelectorCheck]] = {}
        """Per HPA: the scale's selector text, parsed, in canonical form (sent to metrics), and
        the (immutable) check saying that this HPA alone selects its pods, the usual outcome."""
        self._reports: dict[str, ReconcileReport] = {}
        self._explanations: dict[str, str] = {}
        self._desired_gauges: dict[str, Any] = {}

    # ------------------------------------------------------------------ informer hooks

    def track(self, key: str) -> None:
        """``enqueueHPA``'s registration: known HPA, selector not yet known (matches nothing)."""
        namespace, _ = _split_key(key)
        self.selector_index.put_if_absent(namespace, key, selector=NOTHING)

    def forget(self, key: str) -> None:
        """``deleteHPA`` / the deleted branch of ``reconcileKey``: drop every trace of ``key``."""
        namespace, name = _split_key(key)
        self.selector_index.delete(namespace, key)
        self._histories.pop(key, None)
        self._last_sync.pop(key, None)
        self._reports.pop(key, None)
        self._explanations.pop(key, None)
        self._selectors.pop(key, None)
        self._desired_gauges.pop(key, None)
        with contextlib.suppress(KeyError):  # never reconciled: no series to remove
            self.metrics.desired_replicas.remove(namespace, name)
        self.metrics.num_hpas.set(len(self._histories))

    # ------------------------------------------------------------------ read-only views

    def history(self, key: str) -> History | None:
        """The stabilization history kept for ``key`` (``None`` before its first reconcile)."""
        return self._histories.get(key)

    def last_report(self, key: str) -> ReconcileReport | None:
        """The last reconcile of ``key``; its trace is kept rendered (:meth:`last_explanation`),
        so ``explanation`` of a kept report is empty (unless ``render_explanations=False``)."""
        return self._reports.get(key)

    def last_explanation(self, key: str) -> str | None:
        """The rendered trace of the last reconcile of ``key``."""
        if not self._render_explanations:
            report = self._reports.get(key)
            return None if report is None else report.explanation.render()
        return self._explanations.get(key)

    def debug_state(self) -> dict[str, Any]:
        """Every HPA's last reconcile, JSON-ready (served by the debug endpoint)."""
        return {
            key: report.to_dict(explanation=self.last_explanation(key) or "")
            for key, report in sorted(self._reports.items())
        }

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, key: str) -> None:
        """The work queue's entry point (see :meth:`reconcile_key`)."""
        await self.reconcile_key(key)

    async def reconcile_key(self, key: str) -> ReconcileReport | None:
        """``reconcileKey``: reconcile the cached HPA, or forget a deleted one (``None``)."""
        namespace, name = _split_key(key)
        hpa = self._hpas.get(namespace, name)
        if hpa is None:
            log.info("hpa_deleted", hpa=key)
            self.forget(key)
            return None
        started = self._clock.monotonic()
        previous = self._last_sync.get(key)
        if previous is not None:
            interval = max(0.0, started - previous)
            if self.metrics.observed:
                self.metrics.sync_interval.observe(interval)
            if self._on_sync_interval is not None:
                self._on_sync_interval(key, interval)
        self._last_sync[key] = started
        try:
            report = await self._reconcile_autoscaler(hpa, key)
        except asyncio.CancelledError:
            raise  # shutdown or lost lease: not a reconciliation outcome
        except Exception:
            self._observe_reconciliation("none", "internal", started=started)
            raise
        self._observe_reconciliation(report.action, report.error_label, started=started)
        if self._render_explanations:
            # kept for the debug endpoint as text: a third of the trace's objects, for 10,000 HPAs
            self._explanations[key] = report.explanation.render()
            self._reports[key] = dataclasses.replace(report, explanation=_NO_EXPLANATION)
        else:
            self._reports[key] = report
        return report

    def _observe_reconciliation(self, action: Action, error: ErrorLabel, *, started: float) -> None:
        if not self.metrics.observed:
            return
        elapsed = max(0.0, self._clock.monotonic() - started)
        self.metrics.child(self.metrics.reconciliations, action, error).inc()
        self.metrics.child(self.metrics.reconciliation_duration, action, error).observe(elapsed)

    def _dry_run(self, hpa: HorizontalPodAutoscalerObject) -> bool:
        return self.settings.dry_run or hpa.annotations.get(DRY_RUN_ANNOTATION) == "true"

    async def _get_scale(self, hpa: HorizontalPodAutoscalerObject) -> Scale | str:
        try:
            return await self._scales.get_scale(hpa.namespace, hpa.spec.scale_target_ref)
        except Exception as error:  # noqa: BLE001 - upstream's FailedGetScale path
            return error_text(error)

    def _metrics_needed(
        self,
        spec: HorizontalPodAutoscalerSpec,
        scale: Scale,
        *,
        previous: HorizontalPodAutoscalerStatus,
    ) -> bool:
        """Whether ``decide`` will evaluate the metrics (mirrors ``reconcileAutoscaler``)."""
        min_replicas = spec.min_replicas if spec.min_replicas is not None else 1
        current = scale.spec_replicas
        if current == 0:
            if not self._horizontal.scale_to_zero_enabled:
                return min_replicas == 0
            found = find_condition(previous.conditions, ConditionType.SCALED_TO_ZERO)
            scaled_to_zero = found is not None and found.status == ConditionStatus.TRUE
            object_or_external = any(
                m.type in (MetricSourceType.OBJECT, MetricSourceType.EXTERNAL) for m in spec.metrics
            )
            return scaled_to_zero and (min_replicas != 0 or object_or_external)
        return min_replicas <= current <= spec.max_replicas

    def _check_selector(
        self, hpa: HorizontalPodAutoscalerObject, key: str, *, text: str
    ) -> tuple[SelectorCheck, Selector | None, Sequence[PodRecord], str]:
        """``validateAndParseSelector``: parse, refresh the store, list pods, find overlaps.
        Also returns the selector's canonical text (what the metrics calls are given)."""
        if text == "":
            return _NO_SELECTOR_CHECK, None, (), ""
        cached = self._selectors.get(key)
        if cached is not None and cached[0] == text:
            # the target's selector rarely changes: parse and print it once
            _, selector, canonical, alone = cached
        else:
            try:
                selector = parse_selector(text)
            except SelectorError as error:
                return SelectorCheck(parse_error=str(error)), None, (), ""
            canonical = selector.to_string()
            alone = SelectorCheck(selecting_hpas=(key,))
            self._selectors[key] = (text, selector, canonical, alone)
        self.selector_index.put_if_present(hpa.namespace, key, selector=selector)
        pods = self._pods.list_pods(hpa.namespace, selector)
        matching = self.selector_index.hpas_matching_pods(hpa.namespace, (p.labels for p in pods))
        if not matching or matching == (key,):
            return alone, selector, pods, canonical
        selecting = {*matching, key}
        return SelectorCheck(selecting_hpas=tuple(sorted(selecting))), selector, pods, canonical

    async def _fetch_metric(
        self, spec: MetricSpec, namespace: str, *, selector: str
    ) -> tuple[MetricObservation | None, float]:
        """One metric's observation (or fetch error) and how long fetching took, in seconds."""
        started = self._clock.monotonic()
        try:
            call = self._call_metrics(spec, namespace, selector=selector)
            if call is None:
                observation = None  # unknown source type: the decision reports it
            else:
                async with asyncio.timeout(self.settings.metric_timeout_seconds):
                    observation = await call
        except TimeoutError:
            api = _API_OF_SOURCE.get(spec.type, "")  # a StrEnum key: the plain string finds it
            observation = MetricFetchError(
                f"unable to fetch metrics from {api}: context deadline exceeded "
                f"(after {self.settings.metric_timeout_seconds:g}s)"
            )
        except SelectorError as error:
            observation = MetricFetchError(str(error))
        except Exception as error:  # noqa: BLE001 - one metric's failure is that metric's error
            log.warning("metrics_client_raised", error=repr(error), metric_type=spec.type)
            api = _API_OF_SOURCE.get(spec.type, "")
            observation = MetricFetchError(
                f"unable to fetch metrics from {api}: {error_text(error)}"
            )
        return observation, max(0.0, self._clock.monotonic() - started)

    def _call_metrics(
        self, spec: MetricSpec, namespace: str, *, selector: str
    ) -> Coroutine[Any, Any, MetricObservation] | None:
        """The metrics client's call for ``spec`` (not yet started), or ``None`` for an unknown
        source type (the decision reports ``InvalidMetricSourceType``)."""
        client = self._metrics_client
        if spec.type == MetricSourceType.RESOURCE and spec.resource is not None:
            return client.get_resource_metric(spec.resource.name, namespace, selector=selector)
        if spec.type == MetricSourceType.CONTAINER_RESOURCE and spec.container_resource:
            source = spec.container_resource
            return client.get_resource_metric(
                source.name, namespace, selector=selector, container=source.container
            )
        if spec.type == MetricSourceType.PODS and spec.pods is not None:
            metric = spec.pods.metric
            return client.get_raw_metric(
                metric.name,
                namespace,
                selector=selector,
                metric_selector=metric_selector(metric.selector).to_string(),
            )
        if spec.type == MetricSourceType.OBJECT and spec.object is not None:
            metric = spec.object.metric
            return client.get_object_metric(
                metric.name,
                namespace,
                described_object=spec.object.described_object,
                metric_selector=metric_selector(metric.selector).to_string(),
            )
        if spec.type == MetricSourceType.EXTERNAL and spec.external is not None:
            metric = spec.external.metric
            return client.get_external_metric(
                metric.name,
                namespace,
                metric_selector=metric_selector(metric.selector).to_string(),
            )
        return None

    async def _update_scale(
        self, hpa: HorizontalPodAutoscalerObject, scale: Scale, *, replicas: int
    ) -> Scale | ScaleConflict | str:
        """The written Scale, a conflict, or the failure's text."""
        try:
            result = await self._scales.update_scale(
                hpa.namespace, hpa.spec.scale_target_ref, scale=scale, replicas=replicas
            )
        except Exception as error:  # noqa: BLE001 - upstream's FailedRescale path
            return error_text(error)
        if isinstance(result, ScaleConflict):
            return result
        return result.scale

    async def _reconcile_autoscaler(
        self, hpa: HorizontalPodAutoscalerObject, key: str
    ) -> ReconcileReport:
        """``reconcileAutoscaler``."""
        dry_run = self._dry_run(hpa)
        now = self._clock.now()
        spec = hpa.spec
        if not spec.metrics or spec.min_replicas is None:
            spec = default_spec(spec)
        history = self._histories.get(key)
        if history is None:
            history = History()

        scale = await self._get_scale(hpa)
        selector_check = _NO_SELECTOR_CHECK
        pods: Sequence[PodRecord] = ()
        observations: list[MetricObservation | None] = []
        durations: list[float] = []
        if isinstance(scale, Scale) and self._metrics_needed(spec, scale, previous=hpa.status):
            selector_check, selector, pods, selector_text = self._check_selector(
                hpa, key, text=scale.selector
            )
            if selector is not None and len(selector_check.selecting_hpas) <= 1:
                if len(spec.metrics) == 1:  # no task to wrap a lone fetch in
                    observation, seconds = await self._fetch_metric(
                        spec.metrics[0], hpa.namespace, selector=selector_text
                    )
                    observations = [observation]
                    durations = [seconds]
                else:
                    fetched = await asyncio.gather(
                        *(
                            self._fetch_metric(metric, hpa.namespace, selector=selector_text)
                            for metric in spec.metrics
                        )
                    )
                    observations = [observation for observation, _ in fetched]
                    durations = [seconds for _, seconds in fetched]

        pod_infos = tuple(pod.info for pod in pods)

        def decide_from(current: Scale | str) -> Decision:
            return decide(
                spec,
                current=current_scale(current)
                if isinstance(current, Scale)
                else ScaleFetchError(current),
                observations=observations,
                pods=pod_infos,
                history=history,
                previous_status=hpa.status,
                now=now,
                settings=self._horizontal,
                selector_check=selector_check,
                namespace=hpa.namespace,
            )

        decision = decide_from(scale)
        first_decision = decision
        scaled = False
        conflict_retried = False
        if decision.rescale and not dry_run and isinstance(scale, Scale):
            written = await self._update_scale(hpa, scale, replicas=decision.desired_replicas)
            if isinstance(written, ScaleConflict):
                # nothing was written: re-decide once from the fresh Scale, write at most once
                conflict_retried = True
                log.info(
                    "scale_conflict_redecide",
                    hpa=key,
                    desired=decision.desired_replicas,
                    fresh_replicas=written.current.spec_replicas,
                )
                decision = decide_from(written.current)
                if decision.rescale:
                    written = await self._update_scale(
                        hpa, written.current, replicas=decision.desired_replicas
                    )
            if not decision.rescale:
                pass  # the fresh Scale already matches the re-decided replicas
            elif isinstance(written, ScaleConflict):
                decision = apply_rescale_result(
                    decision,
                    succeeded=False,
                    error=f"Operation cannot be fulfilled: {written.message}",
                    now=self._clock.now(),
                )
            elif isinstance(written, str):
                decision = apply_rescale_result(
                    decision, succeeded=False, error=written, now=self._clock.now()
                )
            else:
                decision = apply_rescale_result(decision, succeeded=True, now=self._clock.now())
                scaled = True

        self._histories[key] = decision.history
        observed = self.metrics.observed
        if observed:
            self.metrics.num_hpas.set(len(self._histories))

        events = list(decision.events)
        status_written = False
        error = decision.error
        if dry_run:
            events = [Event(e.type, "DryRun", f"{e.reason}: {e.message}") for e in events]
            if decision.rescale:
                direction: Action = (
                    "scale_up"
                    if decision.desired_replicas > decision.current_replicas
                    else "scale_down"
                )
                self.metrics.dry_run_rescales.labels(action=direction).inc()
                events.append(
                    Event(
                        "Normal",
                        "DryRun",
                        f"would rescale {decision.reference} from {decision.current_replicas} "
                        f"to {decision.desired_replicas}; reason: {decision.rescale_reason}",
                    )
                )
            if observed:
                self.metrics.child(self.metrics.status_writes, "dry_run").inc()
        else:
            status_error = await self._write_status(hpa, decision.status)
            if status_error is None:
                status_written = True
            elif status_error:
                events.append(Event("Warning", "FailedUpdateStatus", status_error))
                error = f"failed to update status for {hpa.name}: {status_error}"
        for event in events:
            self._events.record(hpa, event)

        desired = decision.desired_replicas
        if observed:
            gauge = self._desired_gauges.get(key)
            if gauge is None:
                gauge = self._desired_gauges[key] = self.metrics.desired_replicas.labels(
                    namespace=hpa.namespace, hpa_name=hpa.name
                )
            gauge.set(desired)
        action: Action = "none"
        if scaled:
            action = "scale_up" if desired > decision.current_replicas else "scale_down"
        error_label: ErrorLabel = "none"
        if error is not None:
            error_label = "spec" if _is_spec_error(hpa) else "internal"
        self._observe_metric_computations(first_decision, spec.metrics, durations=durations)

        report = ReconcileReport(
            key=key,
            at=now,
            dry_run=dry_run,
            current_replicas=decision.current_replicas,
            desired_replicas=desired,
            rescale=decision.rescale,
            rescale_reason=decision.rescale_reason,
            scaled=scaled,
            status_written=status_written,
            conflict_retried=conflict_retried,
            error=error,
            action=action,
            error_label=error_label,
            events=tuple(events),
            explanation=decision.explanation,
            status=decision.status,
        )
        if error is not None:
            log.warning(
                "reconcile_error",
                hpa=key,
                at=now.isoformat(),
                error=error,
                current=decision.current_replicas,
                desired=desired,
                dry_run=dry_run,
            )
        elif _debug_enabled():
            log.debug(
                "reconciled",
                hpa=key,
                at=now.isoformat(),
                current=decision.current_replicas,
                desired=desired,
                rescale=decision.rescale,
                scaled=scaled,
                dry_run=dry_run,
            )
        if scaled:
            log.info(
                "rescaled",
                hpa=key,
                current=decision.current_replicas,
                desired=desired,
                reason=decision.rescale_reason,
            )
        return report

    async def _write_status(
        self, hpa: HorizontalPodAutoscalerObject, status: HorizontalPodAutoscalerStatus
    ) -> str | None:
        """``updateStatusIfNeeded``: ``None`` when written, ``""`` when not needed (or a
        conflict), else the failure's text."""
        if not status_needs_write(
            hpa.status,
            status,
            value_tolerance=self.settings.status_value_tolerance,
            old_observed_generation=hpa.observed_generation,
            new_observed_generation=hpa.generation or None,
        ):
            if self.metrics.observed:
                self.metrics.child(self.metrics.status_writes, "skipped").inc()
            return ""
        try:
            outcome = await self._status_writer.update_status(
                hpa, status, observed_generation=hpa.generation or None
            )
        except Exception as error:  # noqa: BLE001 - upstream's FailedUpdateStatus path
            self.metrics.child(self.metrics.status_writes, "failed").inc()
            return error_text(error)
        if self.metrics.observed:
            self.metrics.child(self.metrics.status_writes, str(outcome)).inc()
        if outcome == StatusWriteOutcome.CONFLICT:
            return ""
        return None

    def _observe_metric_computations(
        self, decision: Decision, metrics: Sequence[MetricSpec], *, durations: Sequence[float]
    ) -> None:
        if not durations or not self.metrics.observed:
            return
        actions = _metric_actions(decision, metrics)
        errors = _metric_error_labels(decision, metrics)
        for index, metric in enumerate(metrics):
            labels = (actions[index], errors[index], str(metric.type))
            self.metrics.child(self.metrics.metric_computations, *labels).inc()
            self.metrics.child(self.metrics.metric_computation_duration, *labels).observe(
                durations[index]
            )


def _is_spec_error(hpa: HorizontalPodAutoscalerObject) -> bool:
    """``errSpec``: the scale target's ``apiVersion`` does not parse as a group version."""
    return hpa.spec.scale_target_ref.api_version.count("/") > 1
