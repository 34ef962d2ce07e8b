"""The external metrics provider (``external.metrics.k8s.io``): values for a metric selector.

Upstream counterparts: prometheus-adapter ``pkg/external-provider/provider.go``
(``GetExternalMetric``, ``ListAllExternalMetrics``, ``selectGroupResource``) and
``metric_converter.go`` (one item per vector sample with all its labels and its timestamp; a
scalar becomes one unlabelled item).

Deliberate deviations (docs/adapter-values.md):

- an empty result is NotFound "the server could not find the metric M for namespaces" (upstream
  answers an empty list, which the HPA rejects as "no metrics returned from external metrics
  API"; KEDA#3065 shows why silently reading it as 0 is dangerous) unless the metric opts in with
  ``empty_is_zero``, which answers one item of value 0;
- the NotFound message names ``namespaces`` for every namespace (upstream: only for ``default``,
  an empty resource otherwise);
- NaN/+-Inf samples are left out; if nothing is left the metric is NotFound;
- when the newest raw sample of the rule's series under the selector is older than the staleness
  bound, the whole answer is NotFound (``STALE``);
- items carry the rule's window when known;
- as for custom metrics (docs/adapter-values.md, "Sharing the probe"), a probe answer that proved
  the newest sample fresh is shared for ``ValueSettings.probe_reuse_seconds`` (default 1 s) by
  later requests with the same probe (the same series and matchers), which then send the value
  query alone: the values' age is measured from the shared probe's newest-sample time to their
  own evaluation time (an upper bound of the real age); a value it cannot vouch for sends both
  queries again, and that answer decides; past ``REFRESH_AHEAD`` of the window the probe alone is
  renewed in the background (one at a time per probe).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import NamedTuple, NoReturn

import structlog

from adapter.prometheus.results import InstantResult
from adapter.providers.clock import SystemClock
from adapter.providers.custom import REFRESH_AHEAD, IndexSource
from adapter.providers.errors import MetricNotFoundError, MissingCause, ProviderError
from adapter.providers.evaluation import (
    Freshness,
    external_probe_query,
    freshness_of,
    parse_request_selector,
    rule_errors_to_provider_errors,
    run_instant,
    run_with_probe,
)
from adapter.providers.ports import Clock, PrometheusQuerier
from adapter.providers.telemetry import ProviderMetrics
from adapter.providers.values import (
    ValueSettings,
    milli_from_text,
    timestamp_from_seconds,
    window_from_query,
)
from adapter.rules import NAMESPACES, BadQueryError, GroupResource
from adapter.rules.errors import RuleEvaluationError
from hpa.core.quantity import Quantity

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ExternalMetricValue:
    """``external_metrics.ExternalMetricValue``."""

    metric: str
    labels: Mapping[str, str]
    _: KW_ONLY
    value: Quantity
    timestamp: datetime
    window_seconds: int | None


SHARED_PROBES_SIZE = 256
"""Shared probe answers kept (by probe PromQL; all dropped when full)."""


class _SharedProbe(NamedTuple):
    """A probe answer that proved the newest sample fresh: when it was sent (adapter monotonic
    seconds, taken before sending) and what it found."""

    sent_monotonic: float
    freshness: Freshness


def not_found_resource(namespace: str) -> GroupResource:
    """prometheus-adapter's ``selectGroupResource`` for its NotFound: ``namespaces`` for the
    ``default`` namespace, else the empty group-resource (the message then ends in "for ")."""
    return NAMESPACES if namespace == "default" else GroupResource("", "")


class ExternalMetricsProvider:
    def __init__(
        self,
        querier: PrometheusQuerier,
        indexes: IndexSource,
        *,
        settings: ValueSettings | None = None,
        clock: Clock | None = None,
        metrics: ProviderMetrics | None = None,
    ) -> None:
        self._querier = querier
        self._indexes = indexes
        self.settings = settings if settings is not None else ValueSettings()
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._metrics = metrics
        self._shared: dict[str, _SharedProbe] = {}
        self._renewals: dict[str, asyncio.Task[None]] = {}

    async def wait_for_renewals(self) -> None:
        """Until the background renewals of shared probes in flight have finished."""
        while self._renewals:
            await asyncio.wait(set(self._renewals.values()))

    def list_all_metrics(self) -> list[str]:
        """``ListAllExternalMetrics`` from the current index (sorted names)."""
        return self._indexes.index.external.list_all_metrics()

    async def get_external_metric(
        self,
        metric: str,
        *,
        namespace: str,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[ExternalMetricValue]:
        """``GetExternalMetric``: the series ``metric_selector`` selects (the HPA sums them).

        ``namespace`` is always in the path; rules with ``namespaced: false`` ignore it.
        Raises ``MetricNotFoundError``, ``InvalidRequestError``, ``MetricFetchError``.
        """
        requirements = parse_request_selector(metric_selector, what="metric label selector")
        registry = self._indexes.index.external
        entry = registry.info.get(metric)
        try:
            query = registry.query_for_metric(
                metric, namespace=namespace, metric_selector=requirements
            )
            if query is None or entry is None:
                self._missing(metric, namespace, MissingCause.UNKNOWN_METRIC)
            probe = None
            if self.settings.max_sample_age_seconds is not None:
                probe = external_probe_query(
                    entry, namespace=namespace, metric_selector=requirements
                )
        except (BadQueryError, RuleEvaluationError) as exc:
            if isinstance(exc, RuleEvaluationError):
                self._missing(metric, namespace, MissingCause.UNRENDERABLE, detail=str(exc))
            raise rule_errors_to_provider_errors(exc, resource=NAMESPACES, metric=metric) from exc
        if timeout_seconds is None:
            timeout_seconds = self.settings.query_timeout_seconds
        result, fresh = await self._run(query, probe, timeout_seconds=timeout_seconds)
        policy = self.settings.policy(metric)
        window = policy.window_seconds
        if window is None:
            window = window_from_query(entry.namer.rule.metrics_query)
        if not result.samples:
            if policy.empty_is_zero:
                return [
                    ExternalMetricValue(
                        metric,
                        {},
                        value=Quantity.from_milli(0),
                        timestamp=self._clock.now(),
                        window_seconds=window,
                    )
                ]
            self._missing(metric, namespace, MissingCause.EMPTY_RESULT)
        newest: float | None = None
        bound = self.settings.max_sample_age_seconds
        if probe is not None and bound is not None:
            if fresh is None or fresh.age_seconds > bound:
                self._missing(metric, namespace, MissingCause.STALE)
            newest = fresh.sample_time_seconds
        values = []
        for sample in result.samples:
            milli = milli_from_text(sample.value_text)
            if milli is None:
                continue
            timestamp = sample.timestamp_seconds if newest is None else newest
            values.append(
                ExternalMetricValue(
                    metric,
                    dict(sample.labels),
                    value=Quantity.from_milli(milli),
                    timestamp=timestamp_from_seconds(timestamp),
                    window_seconds=window,
                )
            )
        if not values:
            self._missing(metric, namespace, MissingCause.NOT_FINITE)
        return values

    async def _run(
        self, query: str, probe: str | None, *, timeout_seconds: float | None
    ) -> tuple[InstantResult, Freshness | None]:
        """The value query's answer and the freshness of the newest sample under the probe (None
        without a probe, or when the probe found no sample). Within the window of a shared
        probe the value query goes alone, judged by it: ``age_seconds`` is then the values'
        evaluation time minus the shared newest-sample time, an upper bound of the real age."""
        bound = self.settings.max_sample_age_seconds
        reuse = self.settings.probe_reuse_seconds
        shared = self._shared.get(probe) if probe is not None and reuse > 0 else None
        if probe is not None and bound is not None and shared is not None:
            age = self._clock.monotonic() - shared.sent_monotonic
            if age <= reuse:
                if age > REFRESH_AHEAD * reuse and probe not in self._renewals:
                    self._renew_probe(probe, timeout_seconds=timeout_seconds)
                result = await run_instant(self._querier, query, timeout_seconds=timeout_seconds)
                newest = shared.freshness.sample_time_seconds
                evaluated = max(
                    (sample.timestamp_seconds for sample in result.samples), default=newest
                )
                if evaluated - newest <= bound:
                    return result, Freshness(newest, max(0.0, evaluated - newest))
                # the shared probe cannot vouch for these values: both queries decide
        sent_monotonic = self._clock.monotonic()
        result, probed = await run_with_probe(
            self._querier, query, probe=probe, timeout_seconds=timeout_seconds
        )
        fresh = freshness_of(probed.samples[0]) if probed is not None and probed.samples else None
        if probe is not None:
            self._share(probe, sent_monotonic, fresh)
        return result, fresh

    def _share(self, probe: str, sent_monotonic: float, fresh: Freshness | None) -> None:
        """Keep a probe answer that proved the newest sample fresh (unless a probe sent later
        is kept already); one that did not removes the shared one."""
        bound = self.settings.max_sample_age_seconds
        latest = self._shared.get(probe)
        if latest is not None and latest.sent_monotonic > sent_monotonic:
            return
        if fresh is None or bound is None or fresh.age_seconds > bound:
            self._shared.pop(probe, None)
            return
        if len(self._shared) >= SHARED_PROBES_SIZE and probe not in self._shared:
            self._shared.clear()
        self._shared[probe] = _SharedProbe(sent_monotonic, fresh)

    def _renew_probe(self, probe: str, *, timeout_seconds: float | None) -> None:
        """Send ``probe`` alone, as a named background task, and share its answer."""

        async def renew() -> None:
            sent_monotonic = self._clock.monotonic()
            try:
                probed = await run_instant(self._querier, probe, timeout_seconds=timeout_seconds)
            except ProviderError as error:
                log.warning("staleness_probe_renewal_failed", probe=probe, error=str(error))
                return
            self._share(
                probe, sent_monotonic, freshness_of(probed.samples[0]) if probed.samples else None
            )

        task = asyncio.create_task(renew(), name="external staleness probe renewal")
        self._renewals[probe] = task

        def done(finished: asyncio.Task[None]) -> None:
            if self._renewals.get(probe) is finished:
                del self._renewals[probe]
            if not finished.cancelled() and finished.exception() is not None:
                log.error(
                    "staleness_probe_renewal_crashed", probe=probe, error=repr(finished.exception())
                )

        task.add_done_callback(done)

    def _missing(
        self, metric: str, namespace: str, cause: MissingCause, *, detail: str = ""
    ) -> NoReturn:
        if self._metrics is not None:
            self._metrics.missing.labels("external", cause.value).inc()
        raise MetricNotFoundError(not_found_resource(namespace), metric, cause=cause, detail=detail)
