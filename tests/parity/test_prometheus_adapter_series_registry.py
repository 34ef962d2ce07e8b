"""Parity with prometheus-adapter ``pkg/custom-provider/series_registry_test.go``.

``Describe("Series Registry")`` / ``Context("with the default configuration rules")``: the 12
"should build a query for ..." cases and "should list all metrics", over
``config.DefaultConfig(1*time.Minute, "kube_")`` and the test's RESTMapper.
"""

# ruff: noqa: E501  (expected PromQL strings stay on one line, as in the Go tables)

from __future__ import annotations

from dataclasses import dataclass

import pytest

from adapter.rules import (
    CustomMetricInfo,
    GroupResource,
    Operator,
    Requirement,
    SeriesRegistry,
    load_rules,
    namers_from_config,
)
from adapter.rules.naming import Series
from tests.adapter.default_config import default_config_yaml, series_registry_rest_mapper

CONTAINER_LABELS = {"pod": "somepod", "namespace": "somens", "container": "somecont"}

SERIES_REGISTRY_TEST_SERIES = [
    [Series("container_some_time_seconds_total", CONTAINER_LABELS)],
    [Series("container_some_count_total", CONTAINER_LABELS)],
    [Series("container_some_usage", CONTAINER_LABELS)],
    [
        Series("node_gigawatts", {"kube_node": "somenode"}),
        Series("service_proxy_packets", {"kube_service": "somesvc", "kube_namespace": "somens"}),
    ],
    [
        Series(
            "ingress_hits_total",
            {
                "kube_ingress": "someingress",
                "kube_service": "somesvc",
                "kube_pod": "backend1",
                "kube_namespace": "somens",
            },
        ),
        Series(
            "ingress_hits_total",
            {
                "kube_ingress": "someingress",
                "kube_service": "somesvc",
                "kube_pod": "backend2",
                "kube_namespace": "somens",
            },
        ),
        Series("volume_claims_total", {"kube_persistentvolume": "somepv"}),
    ],
    [
        Series(
            "work_queue_wait_seconds_total",
            {"kube_deployment": "somedep", "kube_namespace": "somens"},
        ),
        Series("node_fan_seconds_total", {"kube_node": "somenode"}),
    ],
]


@pytest.fixture
def registry() -> SeriesRegistry:
    config = load_rules(default_config_yaml("1m", "kube_"), source="DefaultConfig(1m, kube_)")
    mapper = series_registry_rest_mapper()
    namers = namers_from_config(config.rules, mapper)
    return SeriesRegistry.from_series(SERIES_REGISTRY_TEST_SERIES, namers, mapper)


def info(resource: str, namespaced: bool, metric: str, group: str = "") -> CustomMetricInfo:
    return CustomMetricInfo(GroupResource(group, resource), namespaced, metric)


@dataclass(frozen=True)
class RegCase:
    title: str
    info: CustomMetricInfo
    names: tuple[str, ...]
    expected_query: str
    namespace: str | None = None
    selector: tuple[Requirement, ...] = ()


REG_CASES = [
    RegCase(
        "container metrics gauge / multiple resource names",
        info("pods", True, "some_usage"),
        ("somepod1", "somepod2"),
        'sum(container_some_usage{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}) by (pod)',
        namespace="somens",
    ),
    RegCase(
        "container metrics counter",
        info("pods", True, "some_count"),
        ("somepod1", "somepod2"),
        'sum(rate(container_some_count_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
        namespace="somens",
    ),
    RegCase(
        "container metrics seconds counter",
        info("pods", True, "some_time"),
        ("somepod1", "somepod2"),
        'sum(rate(container_some_time_seconds_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
        namespace="somens",
    ),
    RegCase(
        "namespaced metrics counter / multidimensional (service)",
        info("service", True, "ingress_hits"),
        ("somesvc",),
        'sum(rate(ingress_hits_total{kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
        namespace="somens",
    ),
    RegCase(
        "namespaced metrics counter /  multidimensional (service) / selection using labels",
        info("service", True, "ingress_hits"),
        ("somesvc",),
        'sum(rate(ingress_hits_total{param1="value1",kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
        namespace="somens",
        selector=(Requirement.of("param1", Operator.EQUALS, ["value1"]),),
    ),
    RegCase(
        "namespaced metrics counter / multidimensional (ingress)",
        info("ingress", True, "ingress_hits", group="extensions"),
        ("someingress",),
        'sum(rate(ingress_hits_total{kube_namespace="somens",kube_ingress="someingress"}[1m])) by (kube_ingress)',
        namespace="somens",
    ),
    RegCase(
        "namespaced metrics counter / multidimensional (pod)",
        info("pod", True, "ingress_hits"),
        ("somepod",),
        'sum(rate(ingress_hits_total{kube_namespace="somens",kube_pod="somepod"}[1m])) by (kube_pod)',
        namespace="somens",
    ),
    RegCase(
        "namespaced metrics gauge",
        info("service", True, "service_proxy_packets"),
        ("somesvc",),
        'sum(service_proxy_packets{kube_namespace="somens",kube_service="somesvc"}) by (kube_service)',
        namespace="somens",
    ),
    RegCase(
        "namespaced metrics seconds counter",
        info("deployment", True, "work_queue_wait", group="extensions"),
        ("somedep",),
        'sum(rate(work_queue_wait_seconds_total{kube_namespace="somens",kube_deployment="somedep"}[1m])) by (kube_deployment)',
        namespace="somens",
    ),
    RegCase(
        "root scoped metrics gauge",
        info("node", False, "node_gigawatts"),
        ("somenode",),
        'sum(node_gigawatts{kube_node="somenode"}) by (kube_node)',
    ),
    RegCase(
        "root scoped metrics counter",
        info("persistentvolume", False, "volume_claims"),
        ("somepv",),
        'sum(rate(volume_claims_total{kube_persistentvolume="somepv"}[1m])) by (kube_persistentvolume)',
    ),
    RegCase(
        "root scoped metrics seconds counter",
        info("node", False, "node_fan"),
        ("somenode",),
        'sum(rate(node_fan_seconds_total{kube_node="somenode"}[1m])) by (kube_node)',
    ),
]


@pytest.mark.parametrize("case", REG_CASES, ids=lambda case: case.title)
def test_should_build_a_query_for(registry: SeriesRegistry, case: RegCase) -> None:
    query = registry.query_for_metric(
        case.info, namespace=case.namespace, names=case.names, metric_selector=case.selector
    )
    assert query == case.expected_query


def test_should_list_all_metrics(registry: SeriesRegistry) -> None:
    assert set(registry.list_all_metrics()) == {
        info("pods", True, "some_count"),
        info("namespaces", False, "some_count"),
        info("pods", True, "some_time"),
        info("namespaces", False, "some_time"),
        info("pods", True, "some_usage"),
        info("namespaces", False, "some_usage"),
        info("services", True, "ingress_hits"),
        info("ingresses", True, "ingress_hits", group="extensions"),
        info("pods", True, "ingress_hits"),
        info("namespaces", False, "ingress_hits"),
        info("services", True, "service_proxy_packets"),
        info("namespaces", False, "service_proxy_packets"),
        info("deployments", True, "work_queue_wait", group="extensions"),
        info("namespaces", False, "work_queue_wait"),
        info("nodes", False, "node_gigawatts"),
        info("persistentvolumes", False, "volume_claims"),
        info("nodes", False, "node_fan"),
    }
    assert len(registry.list_all_metrics()) == 17


def test_unknown_metric_is_not_found(registry: SeriesRegistry) -> None:
    """``QueryForMetric`` answers ``found == false`` for a metric no series produced."""
    unknown = info("pods", True, "no_such_metric")
    assert registry.query_for_metric(unknown, namespace="somens", names=["p"]) is None
