"""Metrics API types: the documented wire shapes and round-trip properties."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings

from hpa.api.base import KubeModel
from hpa.api.metrics import (
    ExternalMetricValueList,
    MetricValueListV1Beta1,
    MetricValueListV1Beta2,
    NodeMetrics,
    NodeMetricsList,
    PodMetrics,
    PodMetricsList,
)
from tests.hpa.api.strategies import assert_round_trip, wire_objects

DESCRIBED = {"kind": "Pod", "namespace": "x", "name": "web-5d9c-abcde", "apiVersion": "/v1"}
V1BETA2 = {
    "kind": "MetricValueList",
    "apiVersion": "custom.metrics.k8s.io/v1beta2",
    "metadata": {},
    "items": [
        {
            "describedObject": DESCRIBED,
            "metric": {"name": "metric", "selector": None},
            "timestamp": "2026-09-01T12:00:00Z",
            "windowSeconds": 60,
            "value": "850m",
        }
    ],
}
V1BETA1 = {
    "kind": "MetricValueList",
    "apiVersion": "custom.metrics.k8s.io/v1beta1",
    "metadata": {},
    "items": [
        {
            "describedObject": DESCRIBED,
            "metricName": "metric",
            "timestamp": "2026-09-01T12:00:00Z",
            "window": 60,
            "value": "850m",
            "selector": None,
        }
    ],
}
EXTERNAL = {
    "kind": "ExternalMetricValueList",
    "apiVersion": "external.metrics.k8s.io/v1beta1",
    "metadata": {},
    "items": [
        {
            "metricName": "queue_consumer_lag",
            "metricLabels": {"name": "worker_tasks"},
            "timestamp": "2026-09-01T12:00:00Z",
            "window": 60,
            "value": "42",
        }
    ],
}
POD_METRICS = {
    "kind": "PodMetrics",
    "apiVersion": "metrics.k8s.io/v1beta1",
    "metadata": {"name": "web-1", "namespace": "shop", "creationTimestamp": "2026-09-01T12:00:05Z"},
    "timestamp": "2026-09-01T12:00:00Z",
    "window": "30s",
    "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "120Mi"}}],
}


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (MetricValueListV1Beta2, V1BETA2),
        (MetricValueListV1Beta1, V1BETA1),
        (ExternalMetricValueList, EXTERNAL),
        (PodMetrics, POD_METRICS),
    ],
)
def test_documented_shapes_round_trip(model: type[KubeModel], data: dict[str, Any]) -> None:
    assert_round_trip(model, data)


def test_custom_metric_values_are_read_per_version() -> None:
    v2 = MetricValueListV1Beta2.from_dict(V1BETA2).items[0]
    v1 = MetricValueListV1Beta1.from_dict(V1BETA1).items[0]
    assert (v2.metric.name, v2.window_seconds, v2.value) == ("metric", 60, "850m")
    assert (v1.metric_name, v1.window_seconds, v1.value) == ("metric", 60, "850m")
    assert v1.timestamp == v2.timestamp == datetime(2026, 9, 1, 12, tzinfo=UTC)
    assert v2.described_object.name == "web-5d9c-abcde"
    external = ExternalMetricValueList.from_dict(EXTERNAL).items[0]
    assert external.metric_labels == {"name": "worker_tasks"}


def test_adapter_writes_null_selector_only_when_set() -> None:
    from hpa.api.metrics import MetricIdentifierV1Beta2

    assert MetricIdentifierV1Beta2(name="m").to_dict() == {"name": "m"}
    assert MetricIdentifierV1Beta2(name="m", selector=None).to_dict() == {
        "name": "m",
        "selector": None,
    }


@pytest.mark.parametrize(
    "model",
    [
        MetricValueListV1Beta2,
        MetricValueListV1Beta1,
        ExternalMetricValueList,
        PodMetrics,
        PodMetricsList,
        NodeMetrics,
        NodeMetricsList,
    ],
)
def test_any_metrics_object_round_trips(model: type[KubeModel]) -> None:
    @settings(max_examples=300, deadline=None)
    @given(wire_objects(model))
    def round_trip(data: dict[str, Any]) -> None:
        assert_round_trip(model, data)

    round_trip()
