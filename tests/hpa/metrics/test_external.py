"""The external metrics client and the combined REST client."""

from __future__ import annotations

from typing import Any

from hpa.core.decision import (
    ExternalMetricObservation,
    MetricFetchError,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.spec import CrossVersionObjectReference
from hpa.metrics.external import ExternalMetricsClient
from hpa.metrics.rest import RESTMetricsClient
from tests.fakes.metrics import FakeJsonGetter

PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_lag"


def external_list(*values: str) -> dict[str, Any]:
    return {
        "kind": "ExternalMetricValueList",
        "apiVersion": "external.metrics.k8s.io/v1beta1",
        "items": [
            {
                "metricName": "queue_lag",
                "metricLabels": {"queue": f"q{i}"},
                "timestamp": "2026-01-01T00:00:00Z",
                "window": 60,
                "value": value,
            }
            for i, value in enumerate(values)
        ],
    }


async def test_every_series_is_returned_in_milli_units(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = external_list("42", "500m", "1k")
    result = await ExternalMetricsClient(getter).get_external_metric(
        "queue_lag", "shop", metric_selector="queue in (q0,q1)"
    )
    assert isinstance(result, ExternalMetricObservation)
    assert result.values_milli == (42_000, 500, 1_000_000)
    assert getter.requests[0].params == {"labelSelector": "queue in (q0,q1)"}


async def test_an_empty_external_list_is_no_metrics_returned(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = external_list()
    result = await ExternalMetricsClient(getter).get_external_metric(
        "queue_lag", "shop", metric_selector=""
    )
    assert result == MetricFetchError("no metrics returned from external metrics API")


async def test_an_unregistered_external_api_is_wrapped(getter: FakeJsonGetter) -> None:
    result = await ExternalMetricsClient(getter).get_external_metric(
        "queue_lag", "shop", metric_selector=""
    )
    assert result == MetricFetchError(
        "unable to fetch metrics from external metrics API: "
        "the server could not find the requested resource"
    )


async def test_the_rest_client_answers_all_four_port_methods(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = external_list("1")
    getter.routes["/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods"] = {
        "items": [
            {
                "metadata": {"name": "a", "namespace": "shop"},
                "timestamp": "2026-01-01T00:00:00Z",
                "window": "30s",
                "containers": [{"name": "app", "usage": {"cpu": "10m"}}],
            }
        ]
    }
    getter.routes["/apis/custom.metrics.k8s.io"] = {
        "versions": [{"groupVersion": "custom.metrics.k8s.io/v1beta2"}],
        "preferredVersion": {"groupVersion": "custom.metrics.k8s.io/v1beta2"},
    }
    item = {
        "describedObject": {"kind": "Pod", "name": "a"},
        "metric": {"name": "m"},
        "timestamp": "2026-01-01T00:00:00Z",
        "value": "3",
    }
    getter.routes["/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/m"] = {
        "items": [item]
    }
    getter.routes["/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/metrics/m"] = {
        "items": [item]
    }
    metrics = RESTMetricsClient(getter, monotonic=lambda: 0.0)

    resource = await metrics.get_resource_metric("cpu", "shop", selector="app=a")
    raw = await metrics.get_raw_metric("m", "shop", selector="", metric_selector="")
    namespace = CrossVersionObjectReference("Namespace", "shop", "v1")
    obj = await metrics.get_object_metric(
        "m", "shop", described_object=namespace, metric_selector=""
    )
    external = await metrics.get_external_metric("queue_lag", "shop", metric_selector="")

    assert isinstance(resource, PodMetricsObservation)
    assert resource.metrics["a"].value_milli == 10
    assert isinstance(raw, PodMetricsObservation)
    assert raw.metrics["a"].value_milli == 3000
    assert isinstance(obj, ObjectMetricObservation)
    assert obj.value_milli == 3000
    assert isinstance(external, ExternalMetricObservation)
    assert external.values_milli == (1000,)
