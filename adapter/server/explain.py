"""Explain one metrics API request: which rule matched, the PromQL sent, what came back, and why a
value is missing.

Upstream counterpart: none. prometheus-adapter users debug with ``--v=6`` logs and guesswork
(prometheus-adapter#209 "how to debug which query was made", #495 "the server could not find the
metric", #237 "metric not found although series exist"). ``hpa adapter explain <path>`` and the
server's authorized ``/debug/explain?path=<path>`` answer with one JSON document:

- ``request``: the path parsed the way the server routes it (group/version, namespace, resource,
  name or ``*``, metric, selectors);
- ``index``: relist generation and time, how many metrics and series discovery knows;
- ``rule``: the rule that produced the metric (``seriesQuery``, ``name``, ``resources``,
  ``metricsQuery``) and the series name behind it, or, when none did, ``candidates``: the same
  metric on other resources and similarly named metrics;
- ``objects``: the object names the query is rendered for (from the pod cache for ``*``);
- ``query``: the PromQL exactly as the provider renders it, and ``result``: what Prometheus
  answered to it (up to 20 samples);
- ``answer``: what the API answers (the values, or the ``metav1.Status`` code/reason/message);
- ``verdict``: one sentence on why a value is missing (``MissingCause``) or that it is served.

Deliberate deviations: none (it only reads; the query is run once more than the provider runs it).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from adapter.prometheus.errors import PrometheusError
from adapter.providers import (
    MetricNotFoundError,
    MetricProviders,
    PrometheusQuerier,
    ProviderError,
    custom_metric_request,
)
from adapter.rules import BadQueryError, CustomMetricInfo
from adapter.rules import parse_metric_selector as parse_selector
from adapter.rules.errors import RuleEvaluationError
from adapter.rules.registry import SeriesInfo
from adapter.server.routing import CustomMetricTarget, ExternalMetricTarget, MetricRequest

MAX_SAMPLES = 20

VERDICTS = {
    "unknown_metric": "the metric is not in the relisted index: no rule's seriesQuery found a "
    "series that is named so (or not for this resource); check the rule's seriesQuery, "
    "name.matches/as and resources, and that Prometheus has the series within --metrics-max-age",
    "empty_result": "the rule's query returned no sample for the object(s): the series exist but "
    "not with these labels (namespace/resource label values), or the query filters them out",
    "stale": "the newest sample is older than the staleness bound: the target stopped being "
    "scraped",
    "not_finite": "the query returned NaN or Inf (e.g. a division by zero in a ratio)",
    "no_objects": "the label selector matched no object in the namespace",
    "unrenderable": "the rule's templates cannot render a query for this request (for example a "
    "resource with no label in the rule's resources.overrides or template): check the rule's "
    "resources and metricsQuery",
}

JsonObject = dict[str, Any]


def _request_document(request: MetricRequest) -> JsonObject:
    """The ``request`` part: the path as the server parses and routes it."""
    target = request.target
    attributes = request.info.attributes
    out: JsonObject = {
        "group": attributes.api_group,
        "version": target.version,
        "labelSelector": request.label_selector,
        "metricLabelSelector": request.metric_label_selector,
    }
    if isinstance(target, ExternalMetricTarget):
        out.update(api="external", namespace=target.namespace, metric=target.metric)
    else:
        out.update(
            api="custom",
            namespace=target.namespace,
            resource=target.resource,
            name=target.name,
            metric=target.metric,
        )
    return out


def _rule(entry: SeriesInfo) -> JsonObject:
    rule = entry.namer.rule
    return {
        "seriesName": entry.series_name,
        "seriesQuery": rule.series_query,
        "name": {"matches": rule.name.matches, "as": rule.name.as_},
        "resources": rule.resources.model_dump(by_alias=True, exclude_defaults=True),
        "metricsQuery": rule.metrics_query,
    }


def _samples(result: Any) -> list[JsonObject]:
    return [
        {"labels": dict(s.labels), "value": s.value_text, "timestamp": s.timestamp_seconds}
        for s in result.samples[:MAX_SAMPLES]
    ]


def _error(error: ProviderError) -> JsonObject:
    out: JsonObject = {"code": error.code, "reason": error.reason, "message": error.message}
    if error.detail:
        out["detail"] = error.detail
    if isinstance(error, MetricNotFoundError):
        out["cause"] = error.cause.value
    return out


async def explain(
    providers: MetricProviders,
    request: MetricRequest,
    *,
    querier: PrometheusQuerier,
) -> JsonObject:
    """The explanation document for one parsed metric request."""
    index = providers.relister.index
    doc: JsonObject = {
        "request": _request_document(request),
        "index": {
            "generation": index.generation,
            "listedAt": index.listed_at.isoformat() if index.listed_at else None,
            "customMetrics": len(index.custom.info),
            "externalMetrics": len(index.external.info),
            "series": index.custom_series_count + index.external_series_count,
            "skippedSeries": [*index.custom.skipped, *index.external.skipped][:MAX_SAMPLES],
        },
    }
    target = request.target
    if isinstance(target, ExternalMetricTarget):
        await _explain_external(doc, providers, querier=querier, target=target, request=request)
    else:
        await _explain_custom(doc, providers, querier=querier, target=target, request=request)
    return doc


async def _run(doc: JsonObject, querier: PrometheusQuerier, *, promql: str) -> None:
    doc["query"] = promql
    try:
        result = await querier.query(promql)
    except PrometheusError as error:
        doc["result"] = {"error": str(error)}
        return
    doc["result"] = {"resultType": result.result_type, "samples": _samples(result)}


def _verdict(doc: JsonObject) -> str:
    answer = doc.get("answer", {})
    if "error" not in answer:
        return "served"
    cause = answer["error"].get("cause")
    if cause in VERDICTS:
        return str(VERDICTS[cause])
    return str(answer["error"]["message"])


async def _explain_custom(
    doc: JsonObject,
    providers: MetricProviders,
    *,
    querier: PrometheusQuerier,
    target: CustomMetricTarget,
    request: MetricRequest,
) -> None:
    wanted = custom_metric_request(
        namespace=target.namespace,
        resource=target.resource,
        name=target.name,
        metric=target.metric,
    )
    registry = providers.relister.index.custom
    normalized = registry.normalized(wanted.info)
    entry = registry.info.get(normalized) if normalized is not None else None
    if normalized is None:
        doc["rule"] = None
        doc["candidates"] = {"reason": f"the resource {wanted.info.group_resource} is unknown"}
    elif entry is None:
        doc["rule"] = None
        doc["candidates"] = _custom_candidates(registry.list_all_metrics(), normalized)
    else:
        doc["rule"] = _rule(entry)
    names: Sequence[str]
    if wanted.name is None:
        try:
            names = await providers.custom.object_names(
                wanted.info, namespace=wanted.namespace, selector=request.label_selector
            )
        except ProviderError as error:  # shown to the user, not raised
            names = []
            doc["objectsError"] = ": ".join(part for part in (error.message, error.detail) if part)
    else:
        names = [wanted.name]
    doc["objects"] = list(names)
    if entry is not None and names:
        try:
            promql = registry.query_for_metric(
                wanted.info,
                namespace=wanted.namespace if wanted.info.namespaced else None,
                names=names,
                metric_selector=parse_selector(request.metric_label_selector),
            )
        except (BadQueryError, RuleEvaluationError) as error:
            doc["query"] = {"error": str(error)}
        else:
            if promql is not None:
                await _run(doc, querier, promql=promql)
    try:
        if wanted.name is None:
            values = await providers.custom.get_metric_by_selector(
                wanted.info,
                namespace=wanted.namespace,
                selector=request.label_selector,
                metric_selector=request.metric_label_selector,
            )
        else:
            values = [
                await providers.custom.get_metric_by_name(
                    wanted.info,
                    wanted.name,
                    namespace=wanted.namespace,
                    metric_selector=request.metric_label_selector,
                )
            ]
    except ProviderError as error:
        doc["answer"] = {"error": _error(error)}
    else:
        doc["answer"] = {
            "items": [
                {
                    "name": v.described_object.name,
                    "value": str(v.value),
                    "timestamp": v.timestamp.isoformat(),
                    "windowSeconds": v.window_seconds,
                }
                for v in values
            ]
        }
    doc["verdict"] = _verdict(doc)


def _custom_candidates(known: Sequence[CustomMetricInfo], wanted: CustomMetricInfo) -> JsonObject:
    same_name = [str(info) for info in known if info.metric == wanted.metric]
    names = sorted({info.metric for info in known})
    similar = difflib.get_close_matches(wanted.metric, names, n=5, cutoff=0.6)
    return {"sameMetricOtherResources": same_name, "similarMetrics": similar}


async def _explain_external(
    doc: JsonObject,
    providers: MetricProviders,
    *,
    querier: PrometheusQuerier,
    target: ExternalMetricTarget,
    request: MetricRequest,
) -> None:
    registry = providers.relister.index.external
    entry = registry.info.get(target.metric)
    metric_selector = request.label_selector
    if entry is None:
        doc["rule"] = None
        doc["candidates"] = {
            "similarMetrics": difflib.get_close_matches(
                target.metric, registry.list_all_metrics(), n=5, cutoff=0.6
            )
        }
    else:
        doc["rule"] = _rule(entry)
        try:
            promql = registry.query_for_metric(
                target.metric,
                namespace=target.namespace,
                metric_selector=parse_selector(metric_selector),
            )
        except (BadQueryError, RuleEvaluationError) as error:
            doc["query"] = {"error": str(error)}
        else:
            if promql is not None:
                await _run(doc, querier, promql=promql)
    try:
        values = await providers.external.get_external_metric(
            target.metric, namespace=target.namespace, metric_selector=metric_selector
        )
    except ProviderError as error:
        doc["answer"] = {"error": _error(error)}
    else:
        doc["answer"] = {
            "items": [
                {
                    "labels": dict(v.labels),
                    "value": str(v.value),
                    "timestamp": v.timestamp.isoformat(),
                }
                for v in values
            ]
        }
    doc["verdict"] = _verdict(doc)
