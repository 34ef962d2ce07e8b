"""Request attributes (``RequestInfoFactory``) for every path form the adapter serves."""

from __future__ import annotations

import pytest

from adapter.server.requestinfo import RequestAttributes, request_attributes

CM = "custom.metrics.k8s.io"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x/pods/*/m",
            ("get", CM, "x", "pods", "*", "m"),
        ),
        (
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x/metrics/m",
            ("get", CM, "x", "metrics", "m", ""),
        ),
        ("/apis/custom.metrics.k8s.io/v1beta1/nodes/n1/m", ("get", CM, "", "nodes", "n1", "m")),
        (
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/d/lag",
            ("list", "external.metrics.k8s.io", "d", "lag", "", ""),
        ),
        (
            "/apis/metrics.k8s.io/v1beta1/namespaces/d/pods",
            ("list", "metrics.k8s.io", "d", "pods", "", ""),
        ),
        ("/apis/metrics.k8s.io/v1beta1/nodes/n1", ("get", "metrics.k8s.io", "", "nodes", "n1", "")),
        (
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/x",
            ("get", CM, "x", "namespaces", "x", ""),
        ),
    ],
)
def test_resource_requests(path: str, expected: tuple[str, ...]) -> None:
    a = request_attributes("GET", path, query={})
    assert a.is_resource_request
    assert (a.verb, a.api_group, a.namespace, a.resource, a.name, a.subresource) == expected


@pytest.mark.parametrize(
    "path",
    [
        "/apis",
        "/apis/custom.metrics.k8s.io",
        "/apis/custom.metrics.k8s.io/v1beta2",
        "/openapi/v2",
        "/metrics",
    ],
)
def test_discovery_and_other_paths_are_non_resource(path: str) -> None:
    assert request_attributes("GET", path, query={}) == RequestAttributes(path=path, verb="get")


def test_watch_parameter_makes_a_watch() -> None:
    a = request_attributes("GET", "/apis/metrics.k8s.io/v1beta1/pods", query={"watch": "true"})
    assert a.verb == "watch"
