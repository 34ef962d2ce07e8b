"""The Prometheus history provider: upstream v1.8.1 ``history_provider_test.go`` ported case by
case (same config, same query strings, same answers, same histories), then the OOM history and
the error wording of ours."""

from __future__ import annotations

import dataclasses

import pytest

from hpa.controllers.vertical.history import (
    PrometheusHistoryConfig,
    PrometheusHistoryProvider,
    history_queries,
)
from hpa.controllers.vertical.ports import HistoryError, OomRecord, PodHistory, UsageSample
from hpa.core.vpa.cluster import PodId
from tests.fakes.clock import EPOCH, FakeClock
from tests.fakes.history import FakeRangeQuerier, FakeSeries

CPU_QUERY = (
    'rate(container_cpu_usage_seconds_total{job="kubernetes-cadvisor", pod_name=~".+", '
    'name!="POD", name!=""}[30s])'
)
MEMORY_QUERY = (
    'container_memory_working_set_bytes{job="kubernetes-cadvisor", pod_name=~".+", '
    'name!="POD", name!=""}'
)
LABELS_QUERY = 'up{job="kubernetes-pods"}'
CPU_NAMESPACED_QUERY = (
    'rate(container_cpu_usage_seconds_total{job="kubernetes-cadvisor", pod_name=~".+", '
    'name!="POD", name!="", namespace="kube-system"}[30s])'
)
MEMORY_NAMESPACED_QUERY = (
    'container_memory_working_set_bytes{job="kubernetes-cadvisor", pod_name=~".+", '
    'name!="POD", name!="", namespace="kube-system"}'
)
OOM_QUERY = 'kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}'
REQUESTS_QUERY = 'kube_pod_container_resource_requests{resource="memory"}'

SECOND_NS = 10**9


def upstream_test_config() -> PrometheusHistoryConfig:
    """``getDefaultPrometheusHistoryProviderConfigForTest`` (8d, 30s resolution)."""
    return PrometheusHistoryConfig(
        history_length_seconds=8 * 24 * 3600.0,
        history_resolution="30s",
        history_resolution_seconds=30.0,
        pod_label_prefix="pod_label_",
        pod_labels_metric_name='up{job="kubernetes-pods"}',
        pod_namespace_label="kubernetes_namespace",
        pod_name_label="kubernetes_pod_name",
        ctr_namespace_label="namespace",
        ctr_pod_name_label="pod_name",
        ctr_name_label="name",
        cadvisor_metrics_job_name="kubernetes-cadvisor",
        cpu_metric_name="container_cpu_usage_seconds_total",
        memory_metric_name="container_memory_working_set_bytes",
    )


def provider(
    querier: FakeRangeQuerier, config: PrometheusHistoryConfig | None = None
) -> PrometheusHistoryProvider:
    return PrometheusHistoryProvider(querier, config or upstream_test_config(), clock=FakeClock())


def container_series(namespace: str, value: str, *, at: float = 1.0) -> FakeSeries:
    return FakeSeries(
        {"namespace": namespace, "pod_name": "pod", "name": "container"}, [(at, value)]
    )


# ---------------------------------------------------------------- upstream's table


async def test_get_empty_cluster_history() -> None:
    """``TestGetEmptyClusterHistory``."""
    querier = FakeRangeQuerier()
    assert await provider(querier).get_cluster_history() == {}
    assert querier.queries[:3] == [CPU_QUERY, MEMORY_QUERY, LABELS_QUERY]


async def test_prometheus_error() -> None:
    """``TestPrometheusError``."""
    querier = FakeRangeQuerier(errors={CPU_QUERY: "bla", MEMORY_QUERY: "bla"})
    with pytest.raises(HistoryError):
        await provider(querier).get_cluster_history()


async def test_get_cpu_samples() -> None:
    """``TestGetCPUSamples``: 5.5 cores at t=1 s."""
    querier = FakeRangeQuerier(matrices={CPU_QUERY: [container_series("default", "5.5")]})
    assert await provider(querier).get_cluster_history() == {
        PodId("default", "pod"): PodHistory(
            last_labels={},
            last_seen_ns=0,
            samples={"container": (UsageSample(SECOND_NS, "cpu", 5500),)},
        )
    }


async def test_get_memory_samples() -> None:
    """``TestGetMemorySamples``: 12345 bytes at t=1 s."""
    querier = FakeRangeQuerier(matrices={MEMORY_QUERY: [container_series("default", "12345")]})
    assert await provider(querier).get_cluster_history() == {
        PodId("default", "pod"): PodHistory(
            last_labels={},
            last_seen_ns=0,
            samples={"container": (UsageSample(SECOND_NS, "memory", 12345),)},
        )
    }


async def test_get_namespaced_memory_samples() -> None:
    """``TestGetNamespacedMemorySamples``: the namespace matcher in both queries."""
    config = dataclasses.replace(upstream_test_config(), namespace="kube-system")
    querier = FakeRangeQuerier(
        matrices={
            CPU_NAMESPACED_QUERY: [],
            MEMORY_NAMESPACED_QUERY: [container_series("kube-system", "12345")],
            LABELS_QUERY: [],
        },
        strict=True,
    )
    querier.matrices[OOM_QUERY.replace('"}', '", namespace="kube-system"}')] = []
    querier.matrices[REQUESTS_QUERY.replace('"}', '", namespace="kube-system"}')] = []
    assert await provider(querier, config).get_cluster_history() == {
        PodId("kube-system", "pod"): PodHistory(
            last_labels={},
            last_seen_ns=0,
            samples={"container": (UsageSample(SECOND_NS, "memory", 12345),)},
        )
    }


async def test_get_labels() -> None:
    """``TestGetLabels``: the newest of a pod's label series wins, prefix stripped."""
    querier = FakeRangeQuerier(
        matrices={
            LABELS_QUERY: [
                FakeSeries(
                    {
                        "kubernetes_namespace": "default",
                        "kubernetes_pod_name": "pod",
                        "pod_label_x": "y",
                    },
                    [(1.0, "12345")],
                ),
                FakeSeries(
                    {
                        "kubernetes_namespace": "default",
                        "kubernetes_pod_name": "pod",
                        "pod_label_x": "z",
                    },
                    [(20.0, "12345")],
                ),
            ]
        }
    )
    assert await provider(querier).get_cluster_history() == {
        PodId("default", "pod"): PodHistory(
            last_labels={"x": "z"}, last_seen_ns=20 * SECOND_NS, samples={}
        )
    }


# ---------------------------------------------------------------- queries and window


def test_default_queries_are_upstreams() -> None:
    """The flags' defaults: 1h resolution, ``pod_name``/``name`` labels, the cadvisor job."""
    queries = history_queries(PrometheusHistoryConfig())
    assert queries.cpu == CPU_QUERY.replace("[30s]", "[1h]")
    assert queries.memory == MEMORY_QUERY
    assert queries.labels == LABELS_QUERY
    assert queries.oom == OOM_QUERY
    assert queries.oom_memory_requests == REQUESTS_QUERY


def test_no_job_name_drops_the_job_matcher_and_metric_names_are_configurable() -> None:
    config = dataclasses.replace(
        PrometheusHistoryConfig(),
        cadvisor_metrics_job_name="",
        ctr_pod_name_label="pod",
        ctr_name_label="container",
        cpu_metric_name="cpu_seconds",
        memory_metric_name="rss_bytes",
        history_resolution="5m",
    )
    queries = history_queries(config)
    assert queries.cpu == 'rate(cpu_seconds{pod=~".+", container!="POD", container!=""}[5m])'
    assert queries.memory == 'rss_bytes{pod=~".+", container!="POD", container!=""}'


async def test_the_window_is_history_length_back_from_now_at_the_resolution() -> None:
    querier = FakeRangeQuerier()
    config = dataclasses.replace(upstream_test_config(), query_timeout_seconds=42.0)
    await provider(querier, config).get_cluster_history()
    now = EPOCH.timestamp()
    assert {
        (c.start_seconds, c.end_seconds, c.step_seconds, c.timeout_seconds) for c in querier.calls
    } == {(now - 8 * 24 * 3600, now, 30.0, 42.0)}
    assert querier.queries == [CPU_QUERY, MEMORY_QUERY, LABELS_QUERY, OOM_QUERY, REQUESTS_QUERY]


# ---------------------------------------------------------------- shaping


async def test_samples_of_a_container_are_in_time_order_cpu_and_memory_together() -> None:
    labels = {"namespace": "shop", "pod_name": "web-1", "name": "app"}
    querier = FakeRangeQuerier(
        matrices={
            CPU_QUERY: [FakeSeries(labels, [(60.0, "0.25"), (120.0, "0.5")])],
            MEMORY_QUERY: [FakeSeries(labels, [(30.0, "1048576"), (120.0, "2097152.7")])],
        }
    )
    history = await provider(querier).get_cluster_history()
    assert history[PodId("shop", "web-1")].samples["app"] == (
        UsageSample(30 * SECOND_NS, "memory", 1048576),
        UsageSample(60 * SECOND_NS, "cpu", 250),
        UsageSample(120 * SECOND_NS, "cpu", 500),
        UsageSample(120 * SECOND_NS, "memory", 2097152),  # MemoryAmountFromBytes truncates
    )


async def test_millisecond_times_and_non_finite_points() -> None:
    labels = {"namespace": "shop", "pod_name": "web-1", "name": "app"}
    querier = FakeRangeQuerier(
        matrices={CPU_QUERY: [FakeSeries(labels, [(1.5, "NaN"), (2.125, "0.0015"), (3.0, "+Inf")])]}
    )
    history = await provider(querier).get_cluster_history()
    assert history[PodId("shop", "web-1")].samples["app"] == (
        UsageSample(2_125_000_000, "cpu", 1),  # CPUAmountFromCores truncates 1.5 m
    )


@pytest.mark.parametrize("missing", ["namespace", "pod_name", "name"])
async def test_a_series_without_a_container_label_fails_the_history(missing: str) -> None:
    labels = {"namespace": "shop", "pod_name": "web-1", "name": "app"}
    del labels[missing]
    querier = FakeRangeQuerier(matrices={MEMORY_QUERY: [FakeSeries(labels, [(1.0, "1")])]})
    with pytest.raises(HistoryError) as raised:
        await provider(querier).get_cluster_history()
    assert str(raised.value).startswith(
        "cannot get usage history: cannot get container ID from labels: {"
    )


async def test_a_label_series_without_pod_labels_fails_the_history() -> None:
    querier = FakeRangeQuerier(
        matrices={LABELS_QUERY: [FakeSeries({"kubernetes_namespace": "x"}, [(1.0, "1")])]}
    )
    with pytest.raises(HistoryError, match=r"^cannot read last labels: .*no kubernetes_pod_name"):
        await provider(querier).get_cluster_history()


async def test_an_empty_prefix_takes_no_labels() -> None:
    config = dataclasses.replace(upstream_test_config(), pod_label_prefix="")
    labels = {"kubernetes_namespace": "a", "kubernetes_pod_name": "b", "app": "web"}
    querier = FakeRangeQuerier(matrices={LABELS_QUERY: [FakeSeries(labels, [(5.0, "1")])]})
    history = await provider(querier, config).get_cluster_history()
    assert history[PodId("a", "b")] == PodHistory(last_labels={}, last_seen_ns=5 * SECOND_NS)


@pytest.mark.parametrize(
    ("query", "prefix"),
    [
        (CPU_QUERY, "cannot get usage history: cannot get timeseries for cpu: "),
        (MEMORY_QUERY, "cannot get usage history: cannot get timeseries for memory: "),
        (LABELS_QUERY, "cannot read last labels: cannot get timeseries for labels: "),
        (OOM_QUERY, "cannot read OOM history: cannot get timeseries for OOM kills: "),
    ],
)
async def test_errors_are_one_line_with_upstreams_wrapping(query: str, prefix: str) -> None:
    cause = "cannot reach Prometheus at http://prometheus:9090: connection refused"
    querier = FakeRangeQuerier(errors={query: cause})
    with pytest.raises(HistoryError) as raised:
        await provider(querier).get_cluster_history()
    assert str(raised.value) == prefix + cause


# ---------------------------------------------------------------- OOM history (ours)

KSM = {"namespace": "shop", "pod": "web-1", "container": "app", "job": "kube-state-metrics"}


async def test_an_oom_is_where_the_oomkilled_series_appears_with_the_request_then() -> None:
    oom_labels = {**KSM, "reason": "OOMKilled"}
    querier = FakeRangeQuerier(
        matrices={
            OOM_QUERY: [
                # OOMKilled at 300 s, still the last reason at 330 s; gone; again at 600 s
                FakeSeries(oom_labels, [(300.0, "1"), (330.0, "1"), (600.0, "1")]),
            ],
            REQUESTS_QUERY: [
                FakeSeries(
                    {**KSM, "resource": "memory", "unit": "byte"},
                    [(0.0, "134217728"), (450.0, "268435456")],
                )
            ],
        }
    )
    history = await provider(querier).get_cluster_history()
    assert history[PodId("shop", "web-1")].ooms == (
        OomRecord("app", 300 * SECOND_NS, 134217728),
        OomRecord("app", 600 * SECOND_NS, 268435456),
    )


async def test_an_oom_without_a_request_series_has_request_zero_and_duplicates_merge() -> None:
    oom_labels = {**KSM, "reason": "OOMKilled"}
    querier = FakeRangeQuerier(
        matrices={
            OOM_QUERY: [
                FakeSeries({**oom_labels, "instance": "ksm-0"}, [(90.0, "1")]),
                FakeSeries({**oom_labels, "instance": "ksm-1"}, [(90.0, "1")]),
                FakeSeries({"reason": "OOMKilled"}, [(90.0, "1")]),  # no pod labels: skipped
                FakeSeries({**oom_labels, "container": "side"}, [(60.0, "0")]),  # not OOMKilled
            ]
        }
    )
    history = await provider(querier).get_cluster_history()
    assert history == {
        PodId("shop", "web-1"): PodHistory(
            last_labels={}, last_seen_ns=0, ooms=(OomRecord("app", 90 * SECOND_NS, 0),)
        )
    }


async def test_oom_history_can_be_turned_off() -> None:
    querier = FakeRangeQuerier(errors={OOM_QUERY: "would fail"})
    config = dataclasses.replace(upstream_test_config(), oom_history=False)
    assert await provider(querier, config).get_cluster_history() == {}
    assert OOM_QUERY not in querier.queries
