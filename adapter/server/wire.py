"""JSON bodies of the metrics APIs, with keys in Go's field order (byte-compatible shapes).

Upstream counterparts (kubernetes ``staging/src/k8s.io/metrics/pkg/apis``):
``custom_metrics/v1beta2`` (``MetricValue{describedObject, metric{name, selector}, timestamp,
windowSeconds, value}``), ``custom_metrics/v1beta1`` (``metricName``, ``window``, top-level
``selector``), ``external_metrics/v1beta1`` (``metricName``, ``metricLabels``, ``timestamp``,
``window``, ``value``) and ``metrics/v1beta1`` (``PodMetrics``/``NodeMetrics`` with a Go duration
``window``), as metrics-server and custom-metrics-apiserver serve them; plus prometheus-adapter's
``metricFor`` (``metav1.ParseToLabelSelector`` of the metric selector, nil when it has none).

The shapes follow ``hpa.api.metrics`` (the pydantic models ``hpa`` reads these bodies with); we
build plain dicts here because the wire needs Go's key order and ``"selector": null``.

Deliberate deviations: ``describedObject.apiVersion`` is the real ``group/version`` (``/v1`` for
core objects) instead of prometheus-adapter's historical ``/__internal``; a window unknown to the
provider is omitted (``omitempty``) rather than written as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from adapter.providers import (
    CustomMetricValue,
    ExternalMetricValue,
    NodeUsage,
    PodUsage,
    label_selector_json,
    milli_text,
)
from adapter.rules import Requirement
from hpa.api.types import format_time

CUSTOM_GROUP = "custom.metrics.k8s.io"
EXTERNAL_GROUP = "external.metrics.k8s.io"
RESOURCE_GROUP = "metrics.k8s.io"

JsonObject = dict[str, Any]


def format_go_duration(milliseconds: int) -> str:
    """``time.Duration.String`` for whole milliseconds: ``30s``, ``1m0s``, ``1.5s``, ``500ms``."""
    if milliseconds == 0:
        return "0s"
    sign = "-" if milliseconds < 0 else ""
    ms = abs(milliseconds)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    second_text = str(seconds)
    if millis:
        second_text += "." + f"{millis:03d}".rstrip("0")
    text = second_text + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def label_selector(requirements: Sequence[Requirement] | None) -> JsonObject | None:
    """``metav1.ParseToLabelSelector(selector.String())`` (the providers' ``label_selector_json``);
    None when there is no selector or it has no label-selector form, as prometheus-adapter then
    leaves it nil."""
    if not requirements:
        return None
    try:
        return label_selector_json(requirements)
    except ValueError:
        return None


def _described_object(value: CustomMetricValue) -> JsonObject:
    ref = value.described_object
    body: JsonObject = {"kind": ref.kind}
    if ref.namespace:
        body["namespace"] = ref.namespace
    body["name"] = ref.name
    body["apiVersion"] = ref.api_version
    return body


def custom_item_v1beta2(value: CustomMetricValue) -> JsonObject:
    return _custom_item_v1beta2(
        value,
        time_text=format_time(value.timestamp),
        selector=label_selector(value.metric_selector),
    )


def _custom_item_v1beta2(
    value: CustomMetricValue, *, time_text: str, selector: JsonObject | None
) -> JsonObject:
    item: JsonObject = {
        "describedObject": _described_object(value),
        "metric": {"name": value.metric, "selector": selector},
        "timestamp": time_text,
    }
    if value.window_seconds is not None:
        item["windowSeconds"] = value.window_seconds
    item["value"] = milli_text(value.value_milli)
    return item


def custom_item_v1beta1(value: CustomMetricValue) -> JsonObject:
    item: JsonObject = {
        "describedObject": _described_object(value),
        "metricName": value.metric,
        "timestamp": format_time(value.timestamp),
    }
    if value.window_seconds is not None:
        item["window"] = value.window_seconds
    item["value"] = milli_text(value.value_milli)
    item["selector"] = label_selector(value.metric_selector)
    return item


def custom_value_list(version: str, values: Sequence[CustomMetricValue]) -> JsonObject:
    """``MetricValueList`` of ``custom.metrics.k8s.io/<version>`` (v1beta1 or v1beta2).

    The items of one list mostly share their timestamp (one scrape), and always their metric
    and metric selector, so in v1beta2 each distinct time text and ``metric`` object is made
    once per list: what is left per item is its ``describedObject``, one dict and its value
    text."""
    if version != "v1beta2":
        items = [custom_item_v1beta1(value) for value in values]
    else:
        times: dict[datetime, str] = {}
        metrics: dict[tuple[str, tuple[Requirement, ...] | None], JsonObject] = {}
        items = []
        append = items.append
        for value in values:
            time_text = times.get(value.timestamp)
            if time_text is None:
                time_text = times[value.timestamp] = format_time(value.timestamp)
            metric_key = (value.metric, value.metric_selector)
            metric = metrics.get(metric_key)
            if metric is None:
                selector = label_selector(value.metric_selector)
                metric = metrics[metric_key] = {"name": value.metric, "selector": selector}
            window = value.window_seconds
            item: JsonObject
            if window is None:
                item = {
                    "describedObject": _described_object(value),
                    "metric": metric,
                    "timestamp": time_text,
                    "value": milli_text(value.value_milli),
                }
            else:
                item = {
                    "describedObject": _described_object(value),
                    "metric": metric,
                    "timestamp": time_text,
                    "windowSeconds": window,
                    "value": milli_text(value.value_milli),
                }
            append(item)
    return {
        "kind": "MetricValueList",
        "apiVersion": f"{CUSTOM_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }


def external_value_list(values: Sequence[ExternalMetricValue]) -> JsonObject:
    items = []
    for value in values:
        item: JsonObject = {
            "metricName": value.metric,
            "metricLabels": dict(value.labels),
            "timestamp": format_time(value.timestamp),
        }
        if value.window_seconds is not None:
            item["window"] = value.window_seconds
        item["value"] = str(value.value)
        items.append(item)
    return {
        "kind": "ExternalMetricValueList",
        "apiVersion": f"{EXTERNAL_GROUP}/v1beta1",
        "metadata": {},
        "items": items,
    }


def _object_meta(
    name: str, namespace: str, *, created: datetime, labels: Mapping[str, str]
) -> JsonObject:
    meta: JsonObject = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["creationTimestamp"] = format_time(created)
    if labels:
        meta["labels"] = dict(labels)
    return meta


def pod_metrics(usage: PodUsage, *, labels: Mapping[str, str], created: datetime) -> JsonObject:
    """``metrics.k8s.io/v1beta1`` ``PodMetrics`` (metrics-server sets ``creationTimestamp`` to
    the time of the request)."""
    return {
        "kind": "PodMetrics",
        "apiVersion": f"{RESOURCE_GROUP}/v1beta1",
        "metadata": _object_meta(usage.name, usage.namespace, created=created, labels=labels),
        "timestamp": format_time(usage.timestamp),
        "window": format_go_duration(usage.window_milliseconds),
        "containers": [
            {"name": c.name, "usage": {"cpu": str(c.cpu), "memory": str(c.memory)}}
            for c in usage.containers
        ],
    }


def node_metrics(usage: NodeUsage, *, labels: Mapping[str, str], created: datetime) -> JsonObject:
    return {
        "kind": "NodeMetrics",
        "apiVersion": f"{RESOURCE_GROUP}/v1beta1",
        "metadata": _object_meta(usage.name, "", created=created, labels=labels),
        "timestamp": format_time(usage.timestamp),
        "window": format_go_duration(usage.window_milliseconds),
        "usage": {"cpu": str(usage.cpu), "memory": str(usage.memory)},
    }


def resource_list(kind: str, items: Sequence[JsonObject]) -> JsonObject:
    """``PodMetricsList`` / ``NodeMetricsList``. As metrics-server (and prometheus-adapter)
    serve them, the items carry no ``kind``/``apiVersion`` of their own."""
    return {
        "kind": kind,
        "apiVersion": f"{RESOURCE_GROUP}/v1beta1",
        "metadata": {},
        "items": [
            {key: value for key, value in item.items() if key not in ("kind", "apiVersion")}
            for item in items
        ],
    }
