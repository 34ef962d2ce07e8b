"""The custom metrics provider (``custom.metrics.k8s.io``): values for named or selected objects.

Upstream counterpart: prometheus-adapter ``pkg/custom-provider/provider.go``
(``prometheusProvider.GetMetricByName``, ``GetMetricBySelector``, ``metricFor``, ``metricsFor``,
``buildQuery``) with custom-metrics-apiserver ``CustomMetricsProvider``.

As upstream: the rule renders one query for the requested names; samples are matched to names by
the rule's resource label; a named object with no matching sample is "the server could not find
the metric M for R NAME"; an unknown metric is "... for R"; list results keep the order of the
names.

Deliberate deviations (docs/adapter-values.md):

- pod names for ``*`` in a namespace come from the ``PodLister`` watch cache, not a LIST; other
  resources are LISTed per request through the ``ObjectNameLister`` as upstream does (without
  one, they cannot be listed by selector: 400);
- a selector request whose objects all lack a value is NotFound "... for R" (upstream: an empty
  list, which the HPA then rejects with "no metrics returned from custom metrics API");
- empty, stale and NaN/Inf values are missing, never 0 (see ``adapter.providers.values``); an
  object listed by selector whose value is missing is left out of the list;
- values carry the sample's real time and the rule's window instead of ``time.Now()`` and none;
- the value query and its staleness probe go to Prometheus as one PromQL, each part tagged
  (``adapter.providers.evaluation.merged_query``): one round trip per request;
- a probe answer that proved every value of its request fresh is reused for
  ``ValueSettings.probe_reuse_seconds`` (default 1 s) by later requests for the same objects,
  which then send the value query alone: each value's age is then measured from the reused
  probe's newest-sample time (an upper bound of the real age), a value it cannot vouch for sends
  a new merged query, and a series ended by a staleness marker is seen at most that much later;
  past ``REFRESH_AHEAD`` of the window a probe alone is sent in the background (one at a time)
  to renew it, while requests keep reusing the current one, so no request waits for a merged
  query while requests keep coming (docs/adapter-values.md, "Sharing the probe");
- the rendered value query and staleness probe are kept for the index they were rendered from,
  keyed by metric, namespace, object names and metric selector (``PLAN_CACHE_SIZE`` entries): an
  HPA asks the same question every sync, and rendering a 100-pod regex (Go ``%q`` quoting, rune
  by rune) cost more CPU than the rest of the request (``bench/adapter.py --profile``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

import structlog

from adapter.prometheus.results import Sample
from adapter.providers.batch import Batcher, BatchPlan, BatchSettings, index_answer
from adapter.providers.clock import SystemClock
from adapter.providers.errors import (
    InvalidRequestError,
    MetricNotFoundError,
    MissingCause,
    ObjectListError,
    ProviderError,
)
from adapter.providers.evaluation import (
    OBJECT_PROBE,
    Aged,
    Point,
    freshness_by_name,
    merged_query,
    object_probe_query,
    parse_request_selector,
    rule_errors_to_provider_errors,
    run_instant,
    vector_samples,
)
from adapter.providers.index import MetricIndex
from adapter.providers.objects import BuiltinKinds, KindMapper, ObjectReference
from adapter.providers.ports import Clock, ObjectNameLister, PodLister, PrometheusQuerier
from adapter.providers.telemetry import ProviderMetrics
from adapter.providers.values import (
    ValueSettings,
    milli_from_text,
    timestamp_from_seconds,
    window_from_query,
)
from adapter.rules import (
    NAMESPACES,
    PODS,
    BadQueryError,
    CustomMetricInfo,
    Requirement,
    format_selector,
)
from adapter.rules.batching import Batchability, BatchQuery, batchability, build_batch_query
from adapter.rules.errors import RuleEvaluationError
from adapter.rules.gotemplate import GoTemplate
from adapter.rules.naming import MetricNamer
from adapter.rules.registry import SeriesInfo
from hpa.core.quantity import Quantity

log = structlog.get_logger(__name__)

REFRESH_AHEAD = 0.75
"""A shared probe older than this fraction of ``probe_reuse_seconds`` is renewed in the
background, started by the next request (which, like the others, keeps reusing it meanwhile)."""

PLAN_CACHE_SIZE = 256
"""Rendered plans kept per index (the oldest is dropped first)."""

SELECTOR_CACHE_SIZE = 16384
"""Parsed request selectors kept by their text (``labelSelector``, ``metricLabelSelector``; the
oldest dropped first): each HPA asks with its own selector every sync, so the bound is above
the number of HPAs of a large fleet (10,000)."""

_PlanKey = tuple[CustomMetricInfo, str | None, tuple[str, ...], tuple[Requirement, ...]]
_RouteKey = tuple[CustomMetricInfo, str | None, tuple[Requirement, ...]]


class IndexSource(Protocol):
    """Where the current ``MetricIndex`` comes from (``MetricRelister``)."""

    @property
    def index(self) -> MetricIndex: ...


class CustomMetricValue(NamedTuple):
    """``custom_metrics.MetricValue``, version-neutral.

    value_milli: the value in thousandths (``value`` is it as a ``Quantity``, DecimalSI; the
        server writes its text with ``milli_text`` without building one: a value per object per
        request).
    metric_selector: the request's ``metricLabelSelector`` (``metric.selector`` in v1beta2,
        ``selector`` in v1beta1; None when it was empty, as upstream).
    window_seconds: None when unknown (``windowSeconds`` is then omitted).

    A named tuple, not a frozen dataclass: one is built per object per answer, and a tuple is
    built in half the time. Pass every field after ``metric`` by keyword.
    """

    described_object: ObjectReference
    metric: str
    value_milli: int
    timestamp: datetime
    window_seconds: int | None
    metric_selector: tuple[Requirement, ...] | None = None

    @property
    def value(self) -> Quantity:
        """``resource.NewMilliQuantity(value_milli, DecimalSI)``."""
        return Quantity.from_milli(self.value_milli)


@dataclass(kw_only=True)
class _Plan:
    """info: normalized; label: the resource's label in the answer; sent: the PromQL sent (the
    value query, or it merged with its probe)."""

    info: CustomMetricInfo
    entry: SeriesInfo
    query: str
    probe: str | None
    window_seconds: int | None
    label: str
    sent: str
    shared_probe: _SharedProbe | None = None
    """The newest probe answer that proved every value of its request fresh (replaced, never
    mutated; ``_evaluate`` reuses it within ``ValueSettings.probe_reuse_seconds``)."""
    refreshing: int = 0
    """Merged queries (value and probe) of this plan in flight."""
    renewal: asyncio.Task[None] | None = None
    """The background renewal of ``shared_probe`` in flight, if any."""
    requirements: tuple[Requirement, ...] = ()
    fallback: str | None = None
    """Why this plan is answered per request although batching is on (``per_request_rule``,
    ``per_request_selector``), or None when it is answered from a batched snapshot."""


class _SharedProbe(NamedTuple):
    """A probe answer kept for reuse: when it was sent (adapter monotonic seconds, taken before
    sending, so the reuse window is never longer than said) and its freshness by object name."""

    sent_monotonic: float
    freshness: Mapping[str, Aged]


_Judged = CustomMetricValue | MissingCause
"""An object's value, or why it has none."""


class CustomMetricsProvider:
    """Answers custom-metrics requests from the current index and Prometheus.

    Both methods take the request's selectors as text (``labelSelector``,
    ``metricLabelSelector``) and raise ``ProviderError`` subclasses only.
    """

    def __init__(
        self,
        querier: PrometheusQuerier,
        indexes: IndexSource,
        *,
        pod_lister: PodLister,
        object_lister: ObjectNameLister | None = None,
        kinds: KindMapper | None = None,
        settings: ValueSettings | None = None,
        clock: Clock | None = None,
        metrics: ProviderMetrics | None = None,
        batching: BatchSettings | None = None,
    ) -> None:
        """batching: batched evaluation settings (None or a zero max age: every request sends
        its own query)."""
        self._querier = querier
        self._indexes = indexes
        self._pod_lister = pod_lister
        self._object_lister = object_lister
        self._kinds: KindMapper = kinds if kinds is not None else BuiltinKinds()
        self.settings = settings if settings is not None else ValueSettings()
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._metrics = metrics
        self._plans: dict[_PlanKey, _Plan] = {}
        self._plans_index: MetricIndex | None = None
        self._renewals: set[asyncio.Task[None]] = set()
        self._verdicts: dict[MetricNamer, Batchability] = {}
        self._routes: dict[_RouteKey, _Plan] = {}
        self._selectors: dict[tuple[str, str], tuple[tuple[Requirement, ...], str]] = {}
        self.batcher: Batcher | None = None
        if batching is not None and batching.enabled:
            self.batcher = Batcher(
                querier,
                settings=batching,
                clock=self._clock,
                api="custom",
                metrics=metrics,
                max_sample_age_seconds=self.settings.max_sample_age_seconds,
                probe_reuse_seconds=self.settings.probe_reuse_seconds,
            )

    async def wait_for_renewals(self) -> None:
        """Until the background renewals of shared probes and batched re-evaluations in flight
        have finished."""
        while self._renewals:
            await asyncio.wait(set(self._renewals))
        if self.batcher is not None:
            await self.batcher.wait_for_refreshes()

    def list_all_metrics(self) -> list[CustomMetricInfo]:
        """``ListAllMetrics`` from the current index (sorted)."""
        return self._indexes.index.custom.list_all_metrics()

    async def get_metric_by_name(
        self,
        info: CustomMetricInfo,
        name: str,
        *,
        namespace: str | None = None,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> CustomMetricValue:
        """``GetMetricByName``: the value for one object (namespaced when ``namespace`` is set).

        Raises ``MetricNotFoundError`` ("... for R NAME" when the object has no usable value),
        ``InvalidRequestError``, ``MetricFetchError``.
        """
        requirements = self._parsed(metric_selector, what="metric label selector")
        judged = await self._values(
            info,
            [name],
            namespace=namespace,
            timeout_seconds=timeout_seconds,
            requirements=requirements,
        )
        result = judged[name]
        if isinstance(result, MissingCause):
            self._count_missing(result)
            raise MetricNotFoundError(info.group_resource, info.metric, name=name, cause=result)
        return result

    async def get_metric_by_selector(
        self,
        info: CustomMetricInfo,
        *,
        namespace: str | None = None,
        selector: str = "",
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[CustomMetricValue]:
        """``GetMetricBySelector``: values for the objects matching ``selector`` (``*``).

        Pods in a namespace come from the ``PodLister``, other objects from the
        ``ObjectNameLister`` (without one: 400). Objects without a usable value are left out;
        when none is left, raises ``MetricNotFoundError`` ("... for R").
        """
        _, label_selector = self._parsed_with_text(selector, what="label selector")
        requirements = self._parsed(metric_selector, what="metric label selector")
        names = await self._names_for_selector(info, namespace, selector=label_selector)
        if not names:
            self._count_missing(MissingCause.NO_OBJECTS)
            raise MetricNotFoundError(
                info.group_resource,
                info.metric,
                cause=MissingCause.NO_OBJECTS,
                detail=f"no {info.group_resource} match the label selector {selector!r}",
            )
        judged = await self._values(
            info,
            names,
            namespace=namespace,
            timeout_seconds=timeout_seconds,
            requirements=requirements,
        )
        values: list[CustomMetricValue] = []
        causes: list[MissingCause] = []
        for name in names:
            result = judged[name]
            if isinstance(result, MissingCause):
                causes.append(result)
            else:
                values.append(result)
        for cause in causes:
            self._count_missing(cause)
        if not values:
            cause = _dominant(causes)
            raise MetricNotFoundError(info.group_resource, info.metric, cause=cause)
        return values

    async def object_names(
        self, info: CustomMetricInfo, *, namespace: str | None, selector: str = ""
    ) -> list[str]:
        """The names ``get_metric_by_selector`` would ask values for (``ListObjectNames``);
        raises as it does for an unknown metric, a bad selector or a failed list."""
        _, canonical = self._parsed_with_text(selector, what="label selector")
        return await self._names_for_selector(info, namespace, selector=canonical)

    # ------------------------------------------------------------------ internals

    def _parsed(self, text: str, *, what: str) -> tuple[Requirement, ...]:
        """``parse_request_selector``, remembered by text (a bad selector is parsed, and
        refused, every time)."""
        return self._parsed_with_text(text, what=what)[0]

    def _parsed_with_text(self, text: str, *, what: str) -> tuple[tuple[Requirement, ...], str]:
        """``_parsed`` and the selector's canonical text (``format_selector``)."""
        if not text:
            return (), ""
        key = (what, text)
        found = self._selectors.get(key)
        if found is None:
            requirements = parse_request_selector(text, what=what)
            found = (requirements, format_selector(requirements))
            if len(self._selectors) >= SELECTOR_CACHE_SIZE:
                del self._selectors[next(iter(self._selectors))]
            self._selectors[key] = found
        return found

    async def _names_for_selector(
        self,
        info: CustomMetricInfo,
        namespace: str | None,
        *,
        selector: str,
    ) -> list[str]:
        """``selector``: the label selector's canonical text (``format_selector``)."""
        index = self._indexes.index
        normalized = index.custom.normalized(info)
        resource = normalized.group_resource if normalized is not None else info.group_resource
        if normalized is None or normalized not in index.custom.info:
            self._count_missing(MissingCause.UNKNOWN_METRIC)
            raise MetricNotFoundError(
                info.group_resource, info.metric, cause=MissingCause.UNKNOWN_METRIC
            )
        if (resource != PODS or namespace is None) and self._object_lister is None:
            raise InvalidRequestError(
                f"listing {resource} by label selector is not supported: only pods in a "
                "namespace can be selected"
            )
        try:
            if resource == PODS and namespace is not None:
                found = await self._pod_lister.pods_for_selector(namespace, selector)
            else:
                assert self._object_lister is not None
                found = await self._object_lister.names_for_selector(resource, namespace, selector)
        except Exception as exc:
            log.warning("pod_list_failed", namespace=namespace, error=str(exc))
            raise ObjectListError(detail=str(exc)) from exc
        return list(dict.fromkeys(found))

    def _current_index(self) -> MetricIndex:
        """The current index; the caches of an older one are dropped."""
        index = self._indexes.index
        if index is not self._plans_index:
            self._plans = {}
            self._routes = {}
            self._verdicts = {}
            self._plans_index = index
            if self.batcher is not None:
                self.batcher.reset()
        return index

    def _batched_plan(
        self, info: CustomMetricInfo, *, namespace: str | None, requirements: Sequence[Requirement]
    ) -> _Plan | None:
        """The plan answering from a batched snapshot (its ``fallback`` says why not when the
        rule or selector cannot batch), or None with batching off. Kept per metric, namespace
        and selector: the per-request query it also renders (for a placeholder object) is never
        sent."""
        if self.batcher is None:
            return None
        index = self._current_index()
        key = (info, namespace, tuple(requirements))
        plan = self._routes.get(key)
        if plan is None:
            plan = self._render_plan(
                index, info, namespace=namespace, names=["batch"], requirements=requirements
            )
            self._routes[key] = plan
        return plan

    def _plan(
        self,
        info: CustomMetricInfo,
        *,
        namespace: str | None,
        names: Sequence[str],
        requirements: Sequence[Requirement],
    ) -> _Plan:
        """The rendered queries for this request, from the cache of the current index."""
        index = self._current_index()
        key: _PlanKey = (info, namespace, tuple(names), tuple(requirements))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._render_plan(
                index, info, namespace=namespace, names=names, requirements=requirements
            )
            if len(self._plans) >= PLAN_CACHE_SIZE:
                del self._plans[next(iter(self._plans))]
            self._plans[key] = plan
        return plan

    def _render_plan(
        self,
        index: MetricIndex,
        info: CustomMetricInfo,
        *,
        namespace: str | None,
        names: Sequence[str],
        requirements: Sequence[Requirement],
    ) -> _Plan:
        registry = index.custom
        if info.namespaced and not namespace:
            raise InvalidRequestError("a namespaced metric needs a namespace")
        if not info.namespaced:
            namespace = None
        try:
            query = registry.query_for_metric(
                info, namespace=namespace, names=names, metric_selector=requirements
            )
            normalized = registry.normalized(info)
            entry = registry.info.get(normalized) if normalized is not None else None
            if query is None or normalized is None or entry is None:
                self._count_missing(MissingCause.UNKNOWN_METRIC)
                raise MetricNotFoundError(
                    info.group_resource, info.metric, cause=MissingCause.UNKNOWN_METRIC
                )
            probe = None
            if self.settings.max_sample_age_seconds is not None:
                probe = object_probe_query(
                    entry,
                    normalized.group_resource,
                    namespace=namespace,
                    names=names,
                    metric_selector=requirements,
                )
        except (BadQueryError, RuleEvaluationError) as exc:
            if isinstance(exc, RuleEvaluationError):
                self._count_missing(MissingCause.UNRENDERABLE)
            raise rule_errors_to_provider_errors(
                exc, resource=info.group_resource, metric=info.metric
            ) from exc
        policy = self.settings.policy(info.metric)
        window = policy.window_seconds
        if window is None:
            window = window_from_query(entry.namer.rule.metrics_query)
        fallback = None
        if self.batcher is not None:
            fallback = self._fallback(entry, normalized, requirements)
        return _Plan(
            info=normalized,
            entry=entry,
            query=query,
            probe=probe,
            window_seconds=window,
            label=entry.namer.label_for_resource(normalized.group_resource),
            sent=query if probe is None else merged_query(query, probe),
            requirements=tuple(requirements),
            fallback=fallback,
        )

    def _fallback(
        self, entry: SeriesInfo, info: CustomMetricInfo, requirements: Sequence[Requirement]
    ) -> str | None:
        """Why requests of this plan cannot be answered from a batch, or None."""
        namer = entry.namer
        verdict = self._verdicts.get(namer)
        if verdict is None:
            verdict = self._verdicts[namer] = batchability(namer.metrics_query.template)
            if not verdict.batchable:
                log.info("rule_not_batched", series=entry.series_name, reason=verdict.reason)
        if not verdict.batchable:
            return "per_request_rule"
        try:
            labels = {
                namer.label_for_resource(info.group_resource),
                namer.label_for_resource(NAMESPACES),
            }
        except RuleEvaluationError:
            return "per_request_rule"
        if any(requirement.key in labels for requirement in requirements):
            return "per_request_selector"
        return None

    def _batch_plan(self, plan: _Plan, namespace: str | None) -> BatchPlan:
        """The batched query for ``plan``: across namespaces, or for ``namespace`` alone when
        given (``max_series``), or cluster-wide for a cluster-scoped metric."""
        entry, resource = plan.entry, plan.info.group_resource
        across = plan.info.namespaced and namespace is None

        def build(template: GoTemplate | None = None) -> BatchQuery:
            return build_batch_query(
                entry.namer.metrics_query,
                entry.series_name,
                resource,
                namespace=namespace,
                across_namespaces=across,
                metric_selector=plan.requirements,
                template=template,
            )

        query = build()
        return BatchPlan(
            query.query,
            False,
            query.resource_label,
            query.namespace_label,
            namespace,
            probe=None if plan.probe is None else build(OBJECT_PROBE).query,
        )

    async def _from_batch(
        self,
        batcher: Batcher,
        plan: _Plan,
        names: Sequence[str],
        *,
        namespace: str | None,
        timeout_seconds: float | None,
    ) -> dict[str, _Judged] | None:
        """Each name's value from the batch's snapshot, or None when its renewal is late past
        ``LATE_LIMIT`` (the request is then answered per request)."""
        family = (plan.info, plan.requirements)
        scope = namespace if plan.info.namespaced and family in batcher.too_large else None
        key = (family, scope)
        try:
            snapshot = await batcher.snapshot_unless_late(
                key,
                lambda: self._batch_plan(plan, scope),
                family=family,
                timeout_seconds=timeout_seconds,
            )
        except (BadQueryError, RuleEvaluationError) as exc:
            raise rule_errors_to_provider_errors(
                exc, resource=plan.info.group_resource, metric=plan.info.metric
            ) from exc
        if snapshot is None:
            return None
        judged, _ = self._judge(
            plan,
            names,
            snapshot.values_in(namespace),
            snapshot.freshness_in(namespace),
            namespace=namespace,
            requirements=plan.requirements,
        )
        return judged

    async def _values(
        self,
        info: CustomMetricInfo,
        names: Sequence[str],
        *,
        namespace: str | None,
        timeout_seconds: float | None,
        requirements: tuple[Requirement, ...],
    ) -> dict[str, _Judged]:
        """Each name's value (or why it has none): from a batched snapshot when the rule and
        selector batch and the snapshot is not late, else per request (counted by path)."""
        if timeout_seconds is None:
            timeout_seconds = self.settings.query_timeout_seconds
        batcher = self.batcher
        if batcher is not None:
            batched = self._batched_plan(info, namespace=namespace, requirements=requirements)
            assert batched is not None
            if batched.fallback is None:
                judged = await self._from_batch(
                    batcher, batched, names, namespace=namespace, timeout_seconds=timeout_seconds
                )
                if judged is not None:
                    return judged
                batcher.count_answer("per_request_late")
            else:
                batcher.count_answer(batched.fallback)
        plan = self._plan(info, namespace=namespace, names=names, requirements=requirements)
        return await self._evaluate(
            plan,
            names,
            namespace=namespace,
            timeout_seconds=timeout_seconds,
            requirements=requirements,
        )

    async def _evaluate(
        self,
        plan: _Plan,
        names: Sequence[str],
        *,
        namespace: str | None,
        timeout_seconds: float | None,
        requirements: tuple[Requirement, ...],
    ) -> dict[str, _Judged]:
        """Each name's value, judged (or why it has none). With a probe: the value query alone
        when a shared probe younger than ``probe_reuse_seconds`` proves every value fresh, else
        (or when it does not) the value query merged with a new probe, whose answer then
        decides."""
        shared = plan.shared_probe if self.settings.probe_reuse_seconds > 0 else None
        if plan.probe is not None and shared is not None:
            reuse = self.settings.probe_reuse_seconds
            age = self._clock.monotonic() - shared.sent_monotonic
            if age <= reuse:
                # past REFRESH_AHEAD of the window a probe alone renews it in the background
                # (one at a time, none while a merged query is in flight) while requests keep
                # reusing it, so they rarely find it expired and wait for a merged query
                if age > REFRESH_AHEAD * reuse and plan.renewal is None and not plan.refreshing:
                    self._renew_probe(plan, timeout_seconds=timeout_seconds)
                result = await run_instant(
                    self._querier, plan.query, timeout_seconds=timeout_seconds
                )
                by_name, _ = _by_name(plan, vector_samples(result), probed=False)
                judged, proven = self._judge(
                    plan,
                    names,
                    by_name,
                    shared.freshness,
                    namespace=namespace,
                    requirements=requirements,
                )
                if proven:
                    return judged
                # a value the shared probe cannot vouch for: a new probe decides, as without reuse
        sent_monotonic = self._clock.monotonic()
        plan.refreshing += 1
        try:
            result = await run_instant(self._querier, plan.sent, timeout_seconds=timeout_seconds)
        finally:
            plan.refreshing -= 1
        by_name, freshness = _by_name(plan, vector_samples(result), probed=plan.probe is not None)
        judged, proven = self._judge(
            plan, names, by_name, freshness, namespace=namespace, requirements=requirements
        )
        if freshness is not None:
            latest = plan.shared_probe
            if latest is None or latest.sent_monotonic <= sent_monotonic:
                plan.shared_probe = _SharedProbe(sent_monotonic, freshness) if proven else None
        return judged

    def _renew_probe(self, plan: _Plan, *, timeout_seconds: float | None) -> None:
        """Send the plan's probe alone, as a named background task, and share its answer."""
        task = asyncio.create_task(
            self._probe_for_sharing(plan, timeout_seconds=timeout_seconds),
            name=f"staleness probe renewal for {plan.info.metric}",
        )
        plan.renewal = task
        self._renewals.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._renewals.discard(finished)
            if plan.renewal is finished:
                plan.renewal = None
            if not finished.cancelled() and finished.exception() is not None:
                log.error(
                    "staleness_probe_renewal_crashed",
                    metric=plan.info.metric,
                    error=repr(finished.exception()),
                )

        task.add_done_callback(done)

    async def _probe_for_sharing(self, plan: _Plan, *, timeout_seconds: float | None) -> None:
        """A probe answer replaces the shared one unless a newer probe did already; one that
        finds any object stale is not shared, so the next request sends a merged query that
        decides (as a merged answer with a stale value is not shared). A failure is logged and
        leaves the shared probe to expire."""
        assert plan.probe is not None
        sent_monotonic = self._clock.monotonic()
        try:
            result = await run_instant(self._querier, plan.probe, timeout_seconds=timeout_seconds)
            freshness = dict(freshness_by_name(vector_samples(result), plan.label))
        except ProviderError as error:
            log.warning("staleness_probe_renewal_failed", metric=plan.info.metric, error=str(error))
            return
        latest = plan.shared_probe
        if latest is not None and latest.sent_monotonic > sent_monotonic:
            return
        bound = self.settings.max_sample_age_seconds
        if bound is not None and any(fresh.age_seconds > bound for fresh in freshness.values()):
            plan.shared_probe = None
        else:
            plan.shared_probe = _SharedProbe(sent_monotonic, freshness)

    def _judge(
        self,
        plan: _Plan,
        names: Sequence[str],
        by_name: Mapping[str, Point],
        freshness: Mapping[str, Aged] | None,
        *,
        namespace: str | None,
        requirements: tuple[Requirement, ...],
    ) -> tuple[dict[str, _Judged], bool]:
        """The value of each name (or why it has none), and whether ``freshness`` proved every
        value that Prometheus returned fresh (no ``STALE``). A value's age is its evaluation time
        (the value sample's timestamp, Prometheus's clock) minus the probe's newest-sample time:
        for a probe of an earlier evaluation that is an upper bound of the real age.

        The ``CustomMetricValue``s are built here, in the one loop over the names (a value per
        object per request: no intermediate judgement per object)."""
        bound = self.settings.max_sample_age_seconds
        empty_is_zero = self.settings.policy(plan.info.metric).empty_is_zero
        kind_of: tuple[str, str] | None = None  # looked up with the first value (it may fail)
        metric = plan.info.metric
        window_seconds = plan.window_seconds
        metric_selector = requirements or None
        times: dict[float, datetime] = {}  # the samples of one scrape share their time
        judged: dict[str, _Judged] = {}
        proven = True
        for name in names:
            point = by_name.get(name)
            if point is None:
                if not empty_is_zero:
                    judged[name] = MissingCause.EMPTY_RESULT
                    continue
                milli = 0
                timestamp = self._clock.now()
            else:
                timestamp_seconds, value_text = point
                parsed = milli_from_text(value_text)
                if parsed is None:
                    judged[name] = MissingCause.NOT_FINITE
                    continue
                milli = parsed
                if freshness is not None and bound is not None:
                    fresh = freshness.get(name)
                    if (
                        fresh is None
                        or timestamp_seconds - fresh[0] > bound  # (sample time, age)
                        or fresh[1] > bound
                    ):
                        judged[name] = MissingCause.STALE
                        proven = False
                        continue
                    timestamp_seconds = fresh[0]
                found = times.get(timestamp_seconds)
                if found is None:
                    found = times[timestamp_seconds] = timestamp_from_seconds(timestamp_seconds)
                timestamp = found
            if kind_of is None:
                kind_of = self._kinds.kind_for(plan.info.group_resource)
            # built per answer, not kept: 100,000 kept references (one per pod) were walked by
            # every full collection, a pause of about 100 ms at 100,000 pods
            judged[name] = CustomMetricValue(
                ObjectReference(kind_of[0], kind_of[1], name=name, namespace=namespace or ""),
                metric,
                value_milli=milli,
                timestamp=timestamp,
                window_seconds=window_seconds,
                metric_selector=metric_selector,
            )
        return judged, proven

    def _count_missing(self, cause: MissingCause) -> None:
        if self._metrics is not None:
            self._metrics.missing.labels("custom", cause.value).inc()


def _by_name(
    plan: _Plan, samples: Sequence[Sample], *, probed: bool
) -> tuple[Mapping[str, Point], Mapping[str, Aged] | None]:
    """One request's answer by object name: its values and (``probed``: a ``merged_query``
    answer, every sample tagged with its part) the probe's freshness, shaped as batched
    snapshots are (``index_answer``)."""
    values, freshness = index_answer(
        BatchPlan(plan.sent, probed, plan.label, namespace_label=None, namespace=None), samples
    )
    return values.get("", {}), None if freshness is None else freshness.get("", {})


def _dominant(causes: Sequence[MissingCause]) -> MissingCause:
    """The cause to report for a list with no value: the most frequent one."""
    if not causes:
        return MissingCause.EMPTY_RESULT
    return max(set(causes), key=lambda cause: (causes.count(cause), cause.value))
