"""Running rendered queries: Prometheus errors to provider errors, and the staleness probe.

Upstream counterpart: prometheus-adapter ``prometheusProvider.buildQuery`` (any client error is
logged and answered 500 "unable to fetch metrics"; a non-vector result is an internal error).

Deliberate deviation (docs/adapter-values.md): when a staleness bound is set, each value query
runs together with a *probe* built from the same rule, series, namespace, object names and metric
selector: ``max by (<resource label>) (timestamp(<series>{<matchers>}))`` (for external metrics,
``max(timestamp(...))``). It tells, per object, when the newest raw sample of the underlying series
was scraped; ``evaluation time - that time`` is the sample's age on Prometheus's own clock.

For custom metrics the value query and its probe travel as one PromQL (``merged_query``): each
part is tagged with a ``hpa_adapter_part`` label (``value``/``probe``) by ``label_replace`` and
the two are joined with ``or`` (the tags differ, so ``or`` keeps every sample of both). One HTTP
request, one evaluation time for both parts, one answer to decode. External metrics keep two
concurrent queries (``run_with_probe``): their value query may return a scalar, which
``label_replace`` refuses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import structlog

from adapter.prometheus.client import QUERY_PATH
from adapter.prometheus.errors import PrometheusError, PrometheusTimeoutError
from adapter.prometheus.results import InstantResult, Sample, decode_part
from adapter.providers.errors import (
    InvalidRequestError,
    MetricFetchError,
    MetricFetchTimeoutError,
    MetricNotFoundError,
    MissingCause,
)
from adapter.providers.ports import PrometheusQuerier
from adapter.rules import BadQueryError, GroupResource, Requirement, parse_metric_selector
from adapter.rules.config import QUERY_TEMPLATE_ARGS
from adapter.rules.errors import RuleEvaluationError
from adapter.rules.gotemplate import parse_template
from adapter.rules.naming import MetricsQuery
from adapter.rules.registry import SeriesInfo

log = structlog.get_logger(__name__)

OBJECT_PROBE = parse_template(
    "max by (<<.GroupBy>>) (timestamp(<<.Series>>{<<.LabelMatchers>>}))",
    name="freshness-probe",
    root=QUERY_TEMPLATE_ARGS,
)
EXTERNAL_PROBE = parse_template(
    "max(timestamp(<<.Series>>{<<.LabelMatchers>>}))",
    name="freshness-probe",
    root=QUERY_TEMPLATE_ARGS,
)


PART_LABEL = "hpa_adapter_part"
"""The label ``merged_query`` tags each part's samples with (``value`` or ``probe``)."""
VALUE_PART = "value"
PROBE_PART = "probe"


def merged_query(query: str, probe: str) -> str:
    """The value query and its probe as one PromQL, each part's samples tagged with
    ``PART_LABEL``. The parts stand on lines of their own, so a ``#`` comment ending a rule's
    query cannot swallow the rest."""
    return (
        f'label_replace(\n{query}\n, "{PART_LABEL}", "{VALUE_PART}", "", "")\n'
        f'or label_replace(\n{probe}\n, "{PART_LABEL}", "{PROBE_PART}", "", "")'
    )


Point = tuple[float, str]
"""A value as answers are indexed by object (``adapter.providers.batch.index_answer``): the
sample's timestamp (Unix seconds) and its value text. A plain tuple, not a ``Sample``: a batched
snapshot keeps one per object, and the cyclic garbage collector stops tracking plain tuples of
numbers and strings, where it walks every named tuple at each full collection."""
Aged = tuple[float, float]
"""A probe answer indexed by object: the newest raw sample's Unix time, and its age at the
evaluation time (``Freshness`` as a plain tuple, for the same reason as ``Point``)."""


class Freshness(NamedTuple):
    """When the newest raw sample was scraped, and how old it was at evaluation (a named
    tuple: one is built per object per request)."""

    sample_time_seconds: float
    age_seconds: float


def parse_request_selector(text: str, *, what: str) -> tuple[Requirement, ...]:
    """``labels.Parse`` of a request's selector; a bad one is the caller's fault (400)."""
    try:
        return parse_metric_selector(text)
    except BadQueryError as exc:
        raise InvalidRequestError(f"invalid {what}: {exc}") from exc


def object_probe_query(
    entry: SeriesInfo,
    resource: GroupResource,
    *,
    namespace: str | None,
    names: Sequence[str],
    metric_selector: Iterable[Requirement],
) -> str:
    rule_query = entry.namer.metrics_query
    query = MetricsQuery(OBJECT_PROBE, rule_query.converter, namespaced=rule_query.namespaced)
    return query.build(
        entry.series_name,
        resource,
        namespace=namespace,
        names=names,
        metric_selector=metric_selector,
    )


def external_probe_query(
    entry: SeriesInfo, *, namespace: str | None, metric_selector: Iterable[Requirement]
) -> str:
    rule_query = entry.namer.metrics_query
    query = MetricsQuery(EXTERNAL_PROBE, rule_query.converter, namespaced=rule_query.namespaced)
    return query.build_external(
        entry.series_name, namespace=namespace, metric_selector=metric_selector
    )


def rule_errors_to_provider_errors(
    exc: Exception, *, resource: GroupResource, metric: str
) -> Exception:
    """A bad selector is the caller's 400. A rule that cannot render the request is 404, as
    prometheus-adapter's ``QueryForMetric`` answers "not found" when ``QueryForSeries`` fails."""
    if isinstance(exc, BadQueryError):
        return InvalidRequestError(str(exc))
    if isinstance(exc, RuleEvaluationError):
        return MetricNotFoundError(
            resource,
            metric,
            cause=MissingCause.UNRENDERABLE,
            detail=f"the rule cannot render this request: {exc}",
        )
    return exc


async def run_instant(
    querier: PrometheusQuerier,
    query: str,
    *,
    timeout_seconds: float | None,
    time_seconds: float | None = None,
    in_parts: bool = False,
) -> InstantResult:
    """One instant query (at ``time_seconds``, or Prometheus's now), errors as provider errors
    (``in_parts``: see ``PrometheusClient.query``)."""
    try:
        return await querier.query(
            query, time_seconds=time_seconds, timeout_seconds=timeout_seconds, in_parts=in_parts
        )
    except PrometheusTimeoutError as exc:
        log.warning("metrics_query_failed", query=query, error=exc.message)
        raise MetricFetchTimeoutError(
            "unable to fetch metrics: timed out", detail=exc.message
        ) from exc
    except PrometheusError as exc:
        log.warning("metrics_query_failed", query=query, error=exc.message)
        raise MetricFetchError(detail=exc.message) from exc


async def run_with_probe(
    querier: PrometheusQuerier,
    query: str,
    *,
    probe: str | None,
    timeout_seconds: float | None,
    time_seconds: float | None = None,
    in_parts: bool = False,
) -> tuple[InstantResult, InstantResult | None]:
    """The value query and (if any) its probe, concurrently (at ``time_seconds`` when given, the
    same evaluation time for both; ``in_parts`` as ``run_instant``); either failing cancels the
    other."""

    def run(promql: str) -> asyncio.Future[InstantResult]:
        return asyncio.ensure_future(
            run_instant(
                querier,
                promql,
                timeout_seconds=timeout_seconds,
                time_seconds=time_seconds,
                in_parts=in_parts,
            )
        )

    value_task = run(query)
    probe_task = run(probe) if probe is not None else None
    try:
        value = await value_task
        probed = await probe_task if probe_task is not None else None
    except BaseException:
        value_task.cancel()
        if probe_task is not None:
            probe_task.cancel()
            await asyncio.gather(probe_task, return_exceptions=True)
        await asyncio.gather(value_task, return_exceptions=True)
        raise
    return value, probed


def part_samples(part: bytes) -> list[Sample]:
    """The samples of one undecoded part of a vector (``InstantResult.parts``)."""
    try:
        return decode_part(part, endpoint=QUERY_PATH)
    except PrometheusError as exc:
        log.warning("metrics_answer_undecodable", error=exc.message)
        raise MetricFetchError(detail=exc.message) from exc


def vector_samples(result: InstantResult) -> tuple[Sample, ...]:
    if result.result_type != "vector":
        raise MetricFetchError(
            detail=f"expected a vector, Prometheus returned a {result.result_type}"
        )
    return result.samples


def age_of(sample: Sample) -> Aged | None:
    """A probe sample's value is the raw sample's Unix time; its timestamp the evaluation time."""
    try:
        sample_time = float(sample.value_text)
    except ValueError:
        return None
    return (sample_time, sample.timestamp_seconds - sample_time)


def freshness_of(sample: Sample) -> Freshness | None:
    aged = age_of(sample)
    return None if aged is None else Freshness(*aged)


def freshness_by_name(samples: Iterable[Sample], label: str) -> Mapping[str, Freshness]:
    out: dict[str, Freshness] = {}
    for sample in samples:
        fresh = freshness_of(sample)
        if fresh is not None:
            out[sample.labels.get(label, "")] = fresh
    return out
