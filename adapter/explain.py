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
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from adapter.prometheus.errors import PrometheusError
from adapter.providers import (
    MetricNotFoundError,
    MetricProviders,
    PodLister,
    PrometheusQuerier,
    ProviderError,
    custom_metric_request,
)
from adapter.rules import BadQueryError, CustomMetricInfo
from adapter.rules import parse_metric_selector as parse_selector
from adapter.rules.errors import RuleEvaluationError
from adapter.rules.registry import SeriesInfo

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
}

JsonObject = dict[str, Any]


def parse_metric_path(path: str) -> JsonObject:
    """Split an API path (with an optional query string) the way the server routes it."""
    split = urlsplit(path)
    query = dict(parse_qsl(split.query, keep_blank_values=True))
    parts = [unquote(p) for p in split.path.strip("/").split("/")]
    if len(parts) < 4 or parts[0] != "apis":
        raise ValueError(f"not a metrics API path: {path!r}")
    group, version, rest = parts[1], parts[2], parts[3:]
    out: JsonObject = {"group": group, "version": version, **_selectors(query)}
    if group == "external.metrics.k8s.io" and len(rest) == 3 and rest[0] == "namespaces":
        out.update(api="external", namespace=rest[1], metric=rest[2])
        return out
    if group != "custom.metrics.k8s.io":
        raise ValueError(f"only custom.metrics.k8s.io and external.metrics.k8s.io: {path!r}")
    if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "metrics":
        out.update(api="custom", namespace=rest[1], resource="metrics", name="", metric=rest[3])
    elif len(rest) == 5 and rest[0] == "namespaces":
        out.update(api="custom", namespace=rest[1], resource=rest[2], name=rest[3], metric=rest[4])
    elif len(rest) == 3:
        out.update(api="custom", namespace=None, resource=rest[0], name=rest[1], metric=rest[2])
    else:
        raise ValueError(f"not a custom metrics path form: {path!r}")
    return out


def _selectors(query: Mapping[str, str]) -> JsonObject:
    return {
        "labelSelector": query.get("labelSelector", ""),
        "metricLabelSelector": query.get("metricLabelSelector", ""),
    }


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
    path: str,
    *,
    querier: PrometheusQuerier,
    query: Mapping[str, str] | None = None,
    pod_lister: PodLister,
) -> JsonObject:
    """The explanation document for ``path`` (extra ``query`` parameters override the path's)."""
    if query:
        path = path + ("&" if "?" in path else "?") + "&".join(f"{k}={v}" for k, v in query.items())
    try:
        request = parse_metric_path(path)
    except ValueError as error:
        return {"request": {"path": path}, "verdict": str(error)}
    index = providers.relister.index
    doc: JsonObject = {
        "request": request,
        "index": {
            "generation": index.generation,
            "listedAt": index.listed_at.isoformat() if index.listed_at else None,
            "customMetrics": len(index.custom.info),
            "externalMetrics": len(index.external.info),
            "series": index.custom_series_count + index.external_series_count,
            "skippedSeries": [*index.custom.skipped, *index.external.skipped][:MAX_SAMPLES],
        },
    }
    if request["api"] == "external":
        await _explain_external(doc, providers, querier=querier, request=request)
    else:
        await _explain_custom(
            doc, providers, querier=querier, request=request, pod_lister=pod_lister
        )
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
    request: JsonObject,
    pod_lister: PodLister,
) -> None:
    wanted = custom_metric_request(
        namespace=request["namespace"],
        resource=request["resource"],
        name=request["name"],
        metric=request["metric"],
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
            names = list(
                await pod_lister.pods_for_selector(wanted.namespace or "", request["labelSelector"])
            )
        except Exception as error:  # noqa: BLE001 - shown to the user, not raised
            names = []
            doc["objectsError"] = str(error)
    else:
        names = [wanted.name]
    doc["objects"] = list(names)
    if entry is not None and names:
        try:
            promql = registry.query_for_metric(
                wanted.info,
                namespace=wanted.namespace if wanted.info.namespaced else None,
                names=names,
                metric_selector=parse_selector(request["metricLabelSelector"]),
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
                selector=request["labelSelector"],
                metric_selector=request["metricLabelSelector"],
            )
        else:
            values = [
                await providers.custom.get_metric_by_name(
                    wanted.info,
                    wanted.name,
                    namespace=wanted.namespace,
                    metric_selector=request["metricLabelSelector"],
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
    doc: JsonObject, providers: MetricProviders, *, querier: PrometheusQuerier, request: JsonObject
) -> None:
    registry = providers.relister.index.external
    entry = registry.info.get(request["metric"])
    metric_selector = request["labelSelector"]
    if entry is None:
        doc["rule"] = None
        doc["candidates"] = {
            "similarMetrics": difflib.get_close_matches(
                request["metric"], registry.list_all_metrics(), n=5, cutoff=0.6
            )
        }
    else:
        doc["rule"] = _rule(entry)
        try:
            promql = registry.query_for_metric(
                request["metric"],
                namespace=request["namespace"],
                metric_selector=parse_selector(metric_selector),
            )
        except (BadQueryError, RuleEvaluationError) as error:
            doc["query"] = {"error": str(error)}
        else:
            if promql is not None:
                await _run(doc, querier, promql=promql)
    try:
        values = await providers.external.get_external_metric(
            request["metric"], namespace=request["namespace"], metric_selector=metric_selector
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
