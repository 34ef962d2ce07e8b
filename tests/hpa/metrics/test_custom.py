"""The custom metrics client: version discovery (v1beta2 preferred, v1beta1 fallback), paths,
v1beta1 conversion, per-pod shaping and upstream's error texts."""

from __future__ import annotations

from typing import Any

import pytest

from hpa.core.decision import MetricFetchError, ObjectMetricObservation, PodMetricsObservation
from hpa.core.spec import CrossVersionObjectReference
from hpa.kube.client import ApiStatus, NotFoundError
from hpa.metrics.custom import (
    CustomMetricsClient,
    CustomMetricsVersions,
    DiscoveryResourceResolver,
    MetricsApiError,
)
from tests.fakes.metrics import FakeJsonGetter

GROUP = "/apis/custom.metrics.k8s.io"
T0 = "2026-01-01T00:00:00Z"


def group_document(*versions: str, preferred: str | None = None) -> dict[str, Any]:
    return {
        "kind": "APIGroup",
        "name": "custom.metrics.k8s.io",
        "versions": [
            {"groupVersion": f"custom.metrics.k8s.io/{v}", "version": v} for v in versions
        ],
        "preferredVersion": {
            "groupVersion": f"custom.metrics.k8s.io/{preferred or versions[0]}",
            "version": preferred or versions[0],
        },
    }


def v1beta2_list(*items: tuple[str, str, int | None]) -> dict[str, Any]:
    return {
        "kind": "MetricValueList",
        "apiVersion": "custom.metrics.k8s.io/v1beta2",
        "items": [
            {
                "describedObject": {"kind": "Pod", "namespace": "shop", "name": name},
                "metric": {"name": "rps", "selector": None},
                "timestamp": T0,
                **({} if window is None else {"windowSeconds": window}),
                "value": value,
            }
            for name, value, window in items
        ],
    }


def v1beta1_list(*items: tuple[str, str, int | None]) -> dict[str, Any]:
    return {
        "kind": "MetricValueList",
        "apiVersion": "custom.metrics.k8s.io/v1beta1",
        "items": [
            {
                "describedObject": {"kind": "Pod", "namespace": "shop", "name": name},
                "metricName": "rps",
                "timestamp": T0,
                **({} if window is None else {"window": window}),
                "value": value,
                "selector": None,
            }
            for name, value, window in items
        ],
    }


class Clock:
    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


def client(getter: FakeJsonGetter, clock: Clock | None = None) -> CustomMetricsClient:
    versions = CustomMetricsVersions(getter, monotonic=clock or Clock())
    return CustomMetricsClient(
        getter, versions=versions, resolver=DiscoveryResourceResolver(getter)
    )


async def test_pods_metrics_come_from_the_preferred_v1beta2(getter: FakeJsonGetter) -> None:
    getter.routes[GROUP] = group_document("v1beta2", "v1beta1")
    path = f"{GROUP}/v1beta2/namespaces/shop/pods/*/rps"
    getter.routes[path] = v1beta2_list(("a", "1500m", 30), ("b", "2", None))

    result = await client(getter).get_raw_metric(
        "rps", "shop", selector="app=shop", metric_selector="verb=GET"
    )

    assert isinstance(result, PodMetricsObservation)
    assert {n: (m.value_milli, m.window_seconds) for n, m in result.metrics.items()} == {
        "a": (1500, 30.0),
        "b": (2000, 60.0),
    }, "a sample without a window gets upstream's 60 s default"
    assert getter.requests[-1].path == path
    assert getter.requests[-1].params == {
        "labelSelector": "app=shop",
        "metricLabelSelector": "verb=GET",
    }


async def test_an_adapter_serving_only_v1beta1_is_read_and_converted(
    getter: FakeJsonGetter,
) -> None:
    getter.routes[GROUP] = group_document("v1beta1")
    getter.routes[f"{GROUP}/v1beta1/namespaces/shop/pods/*/rps"] = v1beta1_list(("a", "7", 15))

    result = await client(getter).get_raw_metric("rps", "shop", selector="", metric_selector="")

    assert isinstance(result, PodMetricsObservation)
    assert result.metrics["a"].value_milli == 7000
    assert result.metrics["a"].window_seconds == 15.0
    assert getter.requests[-1].params == {}


def test_version_choice_follows_discovery_go() -> None:
    choose = CustomMetricsVersions.choose_version
    assert choose(group_document("v1beta1", "v1beta2", preferred="v1beta1")) == "v1beta1"
    assert choose(group_document("v1beta3", "v1beta1", preferred="v1beta3")) == "v1beta1"
    with pytest.raises(MetricsApiError, match="no known available metric versions found"):
        choose(group_document("v2"))


async def test_a_missing_group_is_no_custom_metrics_api_registered(
    getter: FakeJsonGetter,
) -> None:
    result = await client(getter).get_raw_metric("rps", "shop", selector="", metric_selector="")
    assert result == MetricFetchError(
        "unable to fetch metrics from custom metrics API: "
        "no custom metrics API (custom.metrics.k8s.io) registered"
    )


async def test_a_404_on_v1beta2_falls_back_to_v1beta1_after_rediscovery(
    getter: FakeJsonGetter,
) -> None:
    clock = Clock()
    metrics = client(getter, clock)
    getter.routes[GROUP] = group_document("v1beta2", "v1beta1")
    getter.routes[f"{GROUP}/v1beta1/namespaces/shop/pods/*/rps"] = v1beta1_list(("a", "3", 60))

    first = await metrics.get_raw_metric("rps", "shop", selector="", metric_selector="")
    assert first == MetricFetchError(
        "unable to fetch metrics from custom metrics API: "
        "the server could not find the requested resource"
    )
    getter.routes[GROUP] = group_document("v1beta1")  # the adapter now serves v1beta1 only
    clock.seconds = 6.0  # past the minimum re-discovery interval
    second = await metrics.get_raw_metric("rps", "shop", selector="", metric_selector="")

    assert isinstance(second, PodMetricsObservation)
    assert second.metrics["a"].value_milli == 3000
    assert getter.paths().count(GROUP) == 2


async def test_the_version_is_cached_between_calls(getter: FakeJsonGetter) -> None:
    getter.routes[GROUP] = group_document("v1beta2")
    getter.routes[f"{GROUP}/v1beta2/namespaces/shop/pods/*/rps"] = v1beta2_list(("a", "1", 60))
    metrics = client(getter)
    for _ in range(3):
        await metrics.get_raw_metric("rps", "shop", selector="", metric_selector="")
    assert getter.paths().count(GROUP) == 1


async def test_an_empty_pods_list_is_no_metrics_returned(getter: FakeJsonGetter) -> None:
    getter.routes[GROUP] = group_document("v1beta2")
    getter.routes[f"{GROUP}/v1beta2/namespaces/shop/pods/*/rps"] = v1beta2_list()
    result = await client(getter).get_raw_metric("rps", "shop", selector="", metric_selector="")
    assert result == MetricFetchError("no metrics returned from custom metrics API")


async def test_an_object_metric_maps_the_kind_to_its_qualified_resource(
    getter: FakeJsonGetter,
) -> None:
    getter.routes[GROUP] = group_document("v1beta2")
    getter.routes["/apis/apps/v1"] = {
        "resources": [
            {"name": "deployments", "kind": "Deployment", "namespaced": True},
            {"name": "deployments/scale", "kind": "Scale", "namespaced": True},
        ]
    }
    path = f"{GROUP}/v1beta2/namespaces/shop/deployments.apps/web/queue"
    getter.routes[path] = v1beta2_list(("web", "42", 60))
    web = CrossVersionObjectReference("Deployment", "web", "apps/v1")

    result = await client(getter).get_object_metric(
        "queue", "shop", described_object=web, metric_selector="q=jobs"
    )

    assert isinstance(result, ObjectMetricObservation)
    assert result.value_milli == 42_000
    assert getter.requests[-1].params == {"metricLabelSelector": "q=jobs"}


async def test_a_namespace_object_is_root_scoped(getter: FakeJsonGetter) -> None:
    getter.routes[GROUP] = group_document("v1beta2")
    getter.routes[f"{GROUP}/v1beta2/namespaces/shop/metrics/queue"] = v1beta2_list(
        ("shop", "5", 60)
    )
    namespace = CrossVersionObjectReference("Namespace", "ignored", "v1")
    result = await client(getter).get_object_metric(
        "queue", "shop", described_object=namespace, metric_selector=""
    )
    assert isinstance(result, ObjectMetricObservation)
    assert result.value_milli == 5000


async def test_an_object_metric_must_return_exactly_one_value(getter: FakeJsonGetter) -> None:
    getter.routes[GROUP] = group_document("v1beta2")
    getter.routes["/api/v1"] = {"resources": [{"name": "services", "kind": "Service"}]}
    getter.routes[f"{GROUP}/v1beta2/namespaces/shop/services/front/hits"] = v1beta2_list(
        ("front", "1", 60), ("front", "2", 60)
    )
    front = CrossVersionObjectReference("Service", "front", "v1")
    result = await client(getter).get_object_metric(
        "hits", "shop", described_object=front, metric_selector=""
    )
    assert result == MetricFetchError(
        "unable to fetch metrics from custom metrics API: the custom metrics API server "
        "returned 2 results when we asked for exactly one"
    )


async def test_an_unknown_kind_cannot_be_mapped(getter: FakeJsonGetter) -> None:
    getter.routes[GROUP] = group_document("v1beta2")
    getter.routes["/apis/example.com/v1"] = {"resources": []}
    widget = CrossVersionObjectReference("Widget", "w", "example.com/v1")
    result = await client(getter).get_object_metric(
        "hits", "shop", described_object=widget, metric_selector=""
    )
    assert isinstance(result, MetricFetchError)
    assert result.message.startswith(
        "unable to fetch metrics from custom metrics API: unable to map kind Widget.example.com "
        "to resource: "
    )


async def test_an_adapter_404_for_one_metric_reports_its_message(getter: FakeJsonGetter) -> None:
    getter.routes[GROUP] = group_document("v1beta2")
    getter.routes[f"{GROUP}/v1beta2/namespaces/shop/pods/*/nope"] = NotFoundError(
        ApiStatus(404, "NotFound", "the server could not find the metric nope for pods")
    )
    result = await client(getter).get_raw_metric("nope", "shop", selector="", metric_selector="")
    assert result == MetricFetchError(
        "unable to fetch metrics from custom metrics API: "
        "the server could not find the metric nope for pods"
    )
