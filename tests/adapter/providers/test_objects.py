"""Request path forms, described-object kinds and ``metric.selector`` JSON.

Upstream counterparts: custom-metrics-apiserver ``reststorage.go`` (``List``: the
``namespaces/{ns}/metrics/{metric}`` rewrite, ``*``), ``helpers.ReferenceFor`` (``group/version``,
``/v1`` for core) and apimachinery ``ParseToLabelSelector``.
"""

from __future__ import annotations

import pytest

from adapter.providers import (
    BuiltinKinds,
    MetricFetchError,
    custom_metric_request,
    label_selector_json,
    parse_group_resource,
)
from adapter.rules import NAMESPACES, PODS, CustomMetricInfo, GroupResource, parse_metric_selector


def test_path_forms() -> None:
    by_selector = custom_metric_request(namespace="ns", resource="pods", name="*", metric="m")
    assert (by_selector.info, by_selector.namespace, by_selector.name) == (
        CustomMetricInfo(PODS, True, "m"),
        "ns",
        None,
    )
    named = custom_metric_request(
        namespace="ns", resource="deployments.apps", name="web", metric="m"
    )
    assert named.info.group_resource == GroupResource("apps", "deployments")
    assert named.name == "web"
    namespace_itself = custom_metric_request(
        namespace="ns", resource="metrics", name="m", metric=""
    )
    assert (namespace_itself.info, namespace_itself.namespace, namespace_itself.name) == (
        CustomMetricInfo(NAMESPACES, False, "m"),
        None,
        "ns",
    )
    root = custom_metric_request(namespace=None, resource="nodes", name="n1", metric="m")
    assert (root.info.namespaced, root.namespace, root.name) == (False, None, "n1")


def test_parse_group_resource_splits_at_the_first_dot() -> None:
    assert parse_group_resource("ingresses.networking.k8s.io") == GroupResource(
        "networking.k8s.io", "ingresses"
    )
    assert parse_group_resource("pods") == PODS


def test_builtin_kinds() -> None:
    kinds = BuiltinKinds()
    assert kinds.kind_for(PODS) == ("/v1", "Pod")
    assert kinds.kind_for(GroupResource("apps", "statefulsets")) == ("apps/v1", "StatefulSet")
    assert kinds.kind_for(GroupResource("networking.k8s.io", "ingresses")) == (
        "networking.k8s.io/v1",
        "Ingress",
    )
    with pytest.raises(MetricFetchError):
        kinds.kind_for(GroupResource("example.com", "widgets"))


def test_label_selector_json() -> None:
    requirements = parse_metric_selector("method=GET,code in (200,201),!canary,tier,zone!=a")
    assert label_selector_json(requirements) == {
        "matchLabels": {"method": "GET"},
        "matchExpressions": [
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "code", "operator": "In", "values": ["200", "201"]},
            {"key": "tier", "operator": "Exists"},
            {"key": "zone", "operator": "NotIn", "values": ["a"]},
        ],
    }
    assert label_selector_json(()) == {}
