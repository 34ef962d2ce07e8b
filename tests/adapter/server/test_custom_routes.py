"""custom.metrics.k8s.io v1beta1/v1beta2: every path form, exact bodies, errors as Status."""

from __future__ import annotations

import orjson
import pytest

from adapter.providers import (
    InvalidRequestError,
    MetricFetchError,
    MetricFetchTimeoutError,
    MetricNotFoundError,
    MissingCause,
    ObjectListError,
)
from adapter.rules import CustomMetricInfo, GroupResource
from tests.adapter.server.harness import ALICE, FakeProviders, serve, value

BASE2 = "/apis/custom.metrics.k8s.io/v1beta2"
BASE1 = "/apis/custom.metrics.k8s.io/v1beta1"
PODS = GroupResource("", "pods")


async def test_pods_by_selector_v1beta2_body_is_the_reference_shape_byte_for_byte() -> None:
    providers = FakeProviders()
    providers.custom.by_selector = [value("web-5d9c-abcde", "metric", milli=850)]
    async with serve(providers) as h:
        response = await h.client.get(
            BASE2 + "/namespaces/x/pods/%2A/metric",
            params={"labelSelector": "app=web"},
            headers=ALICE,
        )
        body = await response.read()
    assert response.status == 200
    assert response.content_type == "application/json"
    expected = {
        "kind": "MetricValueList",
        "apiVersion": "custom.metrics.k8s.io/v1beta2",
        "metadata": {},
        "items": [
            {
                "describedObject": {
                    "kind": "Pod",
                    "namespace": "x",
                    "name": "web-5d9c-abcde",
                    "apiVersion": "/v1",
                },
                "metric": {"name": "metric", "selector": None},
                "timestamp": "2026-09-01T12:00:00Z",
                "windowSeconds": 60,
                "value": "850m",
            }
        ],
    }
    assert body == orjson.dumps(expected)
    kind, info, args = providers.custom.calls[0]
    assert kind == "selector"
    assert info == CustomMetricInfo(PODS, True, "metric")
    assert args == {"namespace": "x", "selector": "app=web", "metric_selector": ""}


async def test_pods_by_selector_v1beta1_uses_metric_name_window_and_top_level_selector() -> None:
    providers = FakeProviders()
    providers.custom.by_selector = [value("web-5d9c-abcde", "metric", milli=850)]
    async with serve(providers) as h:
        response = await h.client.get(BASE1 + "/namespaces/x/pods/*/metric", headers=ALICE)
        body = await response.read()
    expected = {
        "kind": "MetricValueList",
        "apiVersion": "custom.metrics.k8s.io/v1beta1",
        "metadata": {},
        "items": [
            {
                "describedObject": {
                    "kind": "Pod",
                    "namespace": "x",
                    "name": "web-5d9c-abcde",
                    "apiVersion": "/v1",
                },
                "metricName": "metric",
                "timestamp": "2026-09-01T12:00:00Z",
                "window": 60,
                "value": "850m",
                "selector": None,
            }
        ],
    }
    assert body == orjson.dumps(expected)


@pytest.mark.parametrize("base", [BASE1, BASE2])
async def test_named_object_answers_a_list_of_exactly_one(base: str) -> None:
    providers = FakeProviders()
    providers.custom.by_name[("deployments.apps", "x", "web", "queue_depth")] = value(
        "web", "queue_depth", milli=42_000, kind="Deployment", api_version="apps/v1"
    )
    async with serve(providers) as h:
        body = await h.get_json(base + "/namespaces/x/deployments.apps/web/queue_depth")
    assert len(body["items"]) == 1
    item = body["items"][0]
    assert item["describedObject"] == {
        "kind": "Deployment",
        "namespace": "x",
        "name": "web",
        "apiVersion": "apps/v1",
    }
    assert item["value"] == "42"
    kind, info, args = providers.custom.calls[0]
    assert (kind, info) == (
        "name",
        CustomMetricInfo(GroupResource("apps", "deployments"), True, "queue_depth"),
    )
    assert (args["name"], args["namespace"]) == ("web", "x")


async def test_namespace_object_path_asks_for_the_namespace_itself() -> None:
    providers = FakeProviders()
    providers.custom.by_name[("namespaces", None, "x", "http_requests")] = value(
        "x", "http_requests", milli=5000, namespace="", kind="Namespace"
    )
    async with serve(providers) as h:
        body = await h.get_json(BASE2 + "/namespaces/x/metrics/http_requests")
    assert body["items"][0]["describedObject"] == {
        "kind": "Namespace",
        "name": "x",
        "apiVersion": "/v1",
    }
    kind, info, args = providers.custom.calls[0]
    assert kind == "name"
    assert info == CustomMetricInfo(GroupResource("", "namespaces"), False, "http_requests")
    assert args == {"name": "x", "namespace": None, "metric_selector": ""}


async def test_root_scoped_object_by_name_and_by_selector() -> None:
    providers = FakeProviders()
    providers.custom.by_name[("nodes", None, "n1", "load")] = value(
        "n1", "load", milli=1500, namespace="", kind="Node"
    )
    providers.custom.by_selector = [value("n2", "load", milli=500, namespace="", kind="Node")]
    async with serve(providers) as h:
        named = await h.get_json(BASE2 + "/nodes/n1/load")
        listed = await h.get_json(BASE2 + "/nodes/*/load", labelSelector="role=web")
    assert named["items"][0]["value"] == "1500m"
    assert listed["items"][0]["describedObject"]["name"] == "n2"
    (_, by_name, name_args), (_, by_selector, selector_args) = providers.custom.calls
    assert by_name == CustomMetricInfo(GroupResource("", "nodes"), False, "load")
    assert name_args["namespace"] is None
    assert by_selector == by_name
    assert selector_args == {"namespace": None, "selector": "role=web", "metric_selector": ""}


async def test_metric_label_selector_reaches_the_provider_and_the_body() -> None:
    providers = FakeProviders()
    providers.custom.by_selector = [
        value("web-1", "requests", milli=2000, metric_selector="verb=GET,code in (200,201)")
    ]
    async with serve(providers) as h:
        v2 = await h.get_json(
            BASE2 + "/namespaces/x/pods/*/requests",
            metricLabelSelector="verb=GET,code in (200,201)",
        )
        v1 = await h.get_json(
            BASE1 + "/namespaces/x/pods/*/requests",
            metricLabelSelector="verb=GET,code in (200,201)",
        )
    selector = {
        "matchLabels": {"verb": "GET"},
        "matchExpressions": [{"key": "code", "operator": "In", "values": ["200", "201"]}],
    }
    assert v2["items"][0]["metric"] == {"name": "requests", "selector": selector}
    assert v1["items"][0]["selector"] == selector
    assert providers.custom.calls[0][2]["metric_selector"] == "verb=GET,code in (200,201)"


async def test_unknown_window_is_omitted() -> None:
    providers = FakeProviders()
    providers.custom.by_selector = [value("web-1", "m", milli=1, window_seconds=None)]
    async with serve(providers) as h:
        body = await h.get_json(BASE2 + "/namespaces/x/pods/*/m")
    assert "windowSeconds" not in body["items"][0]


STATUS_CASES = [
    (
        MetricNotFoundError(PODS, "http_requests", cause=MissingCause.UNKNOWN_METRIC),
        404,
        "NotFound",
        "the server could not find the metric http_requests for pods",
    ),
    (
        MetricNotFoundError(PODS, "http_requests", name="web-1", cause=MissingCause.STALE),
        404,
        "NotFound",
        "the server could not find the metric http_requests for pods web-1",
    ),
    (InvalidRequestError("bad selector"), 400, "BadRequest", "bad selector"),
    (
        MetricFetchError(detail="connection refused"),
        500,
        "InternalError",
        "unable to fetch metrics",
    ),
    (MetricFetchTimeoutError(), 504, "Timeout", "unable to fetch metrics"),
    (
        ObjectListError(detail="cache down"),
        500,
        "InternalError",
        "unable to list matching resources",
    ),
]


@pytest.mark.parametrize(("error", "code", "reason", "message"), STATUS_CASES)
async def test_provider_errors_become_status_with_upstream_reason_code_message(
    error: Exception, code: int, reason: str, message: str
) -> None:
    providers = FakeProviders()
    providers.custom.error = error  # type: ignore[assignment]
    async with serve(providers) as h:
        response = await h.client.get(
            BASE2 + "/namespaces/x/pods/web-1/http_requests", headers=ALICE
        )
        body = await response.read()
    assert response.status == code
    assert body == orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )
    assert "connection refused" not in body.decode()


@pytest.mark.parametrize(
    "path",
    [
        "/apis/custom.metrics.k8s.io/v1alpha1/namespaces/x/pods/*/m",
        BASE2 + "/namespaces/x/pods/m",  # too few segments
        BASE2 + "/namespaces/x/pods/a/b/c",
        "/nonsense",
    ],
)
async def test_unknown_paths_are_not_found_status(path: str) -> None:
    async with serve() as h:
        body = await h.get_json(path, status=404)
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server could not find the requested resource",
        "reason": "NotFound",
        "details": {},
        "code": 404,
    }


async def test_write_verbs_are_refused() -> None:
    async with serve() as h:
        response = await h.client.post(BASE2 + "/namespaces/x/pods/a/m", headers=ALICE)
        body = await response.json()
    assert response.status == 405
    assert body["reason"] == "MethodNotAllowed"
