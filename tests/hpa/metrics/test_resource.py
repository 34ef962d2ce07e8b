"""The resource metrics client: per-pod shaping exactly as upstream ``metrics/client.go``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hpa.core.decision import MetricFetchError, PodMetricsObservation
from hpa.kube.client import ApiStatus, ForbiddenError
from hpa.metrics.resource import ResourceMetricsClient
from tests.fakes.metrics import FakeJsonGetter

PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods"
T0 = "2026-01-01T00:00:00Z"


def pod_metrics(name: str, containers: dict[str, dict[str, str]], *, window: str = "30s") -> Any:
    return {
        "metadata": {"name": name, "namespace": "shop"},
        "timestamp": T0,
        "window": window,
        "containers": [{"name": c, "usage": usage} for c, usage in containers.items()],
    }


def listing(*items: Any) -> dict[str, Any]:
    return {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "items": list(items)}


async def test_a_pod_value_is_the_sum_over_its_containers(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(
        pod_metrics("a", {"app": {"cpu": "250m"}, "sidecar": {"cpu": "0.1"}}, window="10.5s"),
        pod_metrics("b", {"app": {"cpu": "1"}}),
    )
    result = await ResourceMetricsClient(getter).get_resource_metric(
        "cpu", "shop", selector="app=shop"
    )
    assert isinstance(result, PodMetricsObservation)
    assert {name: m.value_milli for name, m in result.metrics.items()} == {"a": 350, "b": 1000}
    assert result.metrics["a"].window_seconds == 10.5
    assert result.timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    assert getter.requests[0].params == {"labelSelector": "app=shop"}


async def test_a_pod_lacking_the_resource_in_any_container_is_missing(
    getter: FakeJsonGetter,
) -> None:
    getter.routes[PATH] = listing(
        pod_metrics("a", {"app": {"cpu": "250m"}, "sidecar": {"memory": "1Mi"}}),
        pod_metrics("empty", {}),
        pod_metrics("b", {"app": {"cpu": "100m", "memory": "1Mi"}}),
    )
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert isinstance(result, PodMetricsObservation)
    assert set(result.metrics) == {"b"}
    assert getter.requests[0].params == {}, "an empty selector is not sent"


async def test_a_container_metric_is_that_container_s_value(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(
        pod_metrics("a", {"app": {"cpu": "250m"}, "sidecar": {"cpu": "900m"}}),
        pod_metrics("b", {"app": {"memory": "1Mi"}}),
    )
    result = await ResourceMetricsClient(getter).get_resource_metric(
        "cpu", "shop", selector="", container="app"
    )
    assert isinstance(result, PodMetricsObservation)
    assert {name: m.value_milli for name, m in result.metrics.items()} == {"a": 250}


async def test_a_pod_without_the_named_container_fails_the_call(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(pod_metrics("a", {"other": {"cpu": "1"}}))
    result = await ResourceMetricsClient(getter).get_resource_metric(
        "cpu", "shop", selector="", container="app"
    )
    assert result == MetricFetchError(
        "failed to get container metrics: container app not present in metrics for pod shop/a"
    )


async def test_an_empty_list_is_no_metrics_returned(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing()
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert result == MetricFetchError("no metrics returned from resource metrics API")


async def test_a_failed_request_is_wrapped_with_the_status_message(
    getter: FakeJsonGetter,
) -> None:
    getter.routes[PATH] = ForbiddenError(
        ApiStatus(403, "Forbidden", 'pods.metrics.k8s.io is forbidden: User "x" cannot list')
    )
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert result == MetricFetchError(
        "unable to fetch metrics from resource metrics API: "
        'pods.metrics.k8s.io is forbidden: User "x" cannot list'
    )


async def test_an_unparsable_answer_is_an_error_not_a_crash(getter: FakeJsonGetter) -> None:
    getter.routes[PATH] = listing(pod_metrics("a", {"app": {"cpu": "lots"}}))
    result = await ResourceMetricsClient(getter).get_resource_metric("cpu", "shop", selector="")
    assert isinstance(result, MetricFetchError)
    assert result.message.startswith("unable to fetch metrics from resource metrics API: ")
