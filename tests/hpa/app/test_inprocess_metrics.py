"""The in-process ``MetricsClient`` over ``adapter``'s real providers, Prometheus faked on the
wire (``tests/fakes/prometheus.py``): each port method's shaping, and each provider error as the
exact text the REST client would have produced from the adapter's ``metav1.Status``."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import MetricProviders, ValueSettings, build_providers
from adapter.rules import load_rules
from hpa.app import controller as controller_app
from hpa.app.inprocess_metrics import (
    ControllerPodNames,
    InProcessMetricsClient,
    add_flags,
    open_source,
    settings_from_args,
)
from hpa.core.decision import (
    ExternalMetricObservation,
    MetricFetchError,
    ObjectMetricObservation,
    PodMetricsObservation,
)
from hpa.core.replicas import PodInfo, PodMetric
from hpa.core.spec import CrossVersionObjectReference
from hpa.kube.client import KubeClient, RetryPolicy
from hpa.kube.clock import SystemClock
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer
from tests.fakes.pods import FakePodLister
from tests.fakes.prometheus import FakePrometheus, FakeSample
from tests.lab.prometheus import PrometheusServer

EVAL_SECONDS = 1_800_000_000.0
AT = datetime.fromtimestamp(EVAL_SECONDS, UTC)

RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'queue_depth{namespace!="",deployment!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      deployment: {group: apps, resource: deployment}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'namespace_load{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum(rate(cpu_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    nodeQuery: 'sum(rate(node_cpu_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  memory:
    containerQuery: 'sum(memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  window: 30s
"""

SERIES_BY_MATCH = {
    'http_requests_total{namespace!="",pod!=""}': [
        {"__name__": "http_requests_total", "namespace": "ns1", "pod": "web-1"},
        {"__name__": "http_requests_total", "namespace": "ns1", "pod": "web-2"},
    ],
    'queue_depth{namespace!="",deployment!=""}': [
        {"__name__": "queue_depth", "namespace": "ns1", "deployment": "worker"}
    ],
    'namespace_load{namespace!=""}': [{"__name__": "namespace_load", "namespace": "ns1"}],
    'queue_messages_ready{queue!=""}': [{"__name__": "queue_messages_ready", "queue": "orders"}],
}


@dataclass
class Tables:
    """What the fake Prometheus answers, by the series a query reads."""

    requests: dict[str, str] = field(default_factory=lambda: {"web-1": "2", "web-2": "0.5"})
    cpu: list[tuple[str, str, str]] = field(
        default_factory=lambda: [
            ("web-1", "app", "0.25"),
            ("web-1", "sidecar", "0.05"),
            ("web-2", "app", "0.5"),
        ]
    )
    queues: dict[str, str] = field(default_factory=lambda: {"orders": "12", "billing": "30.5"})

    def respond(self, query: str) -> list[FakeSample]:
        if "http_requests_total" in query:
            return [FakeSample({"pod": pod}, value) for pod, value in self.requests.items()]
        if "queue_depth" in query:
            return [FakeSample({"deployment": "worker"}, "42")]
        if "namespace_load" in query:
            return [FakeSample({"namespace": "ns1"}, "1.5")]
        if "queue_messages_ready" in query:
            return [FakeSample({"queue": q}, value) for q, value in self.queues.items()]
        if "cpu_total" in query:
            return [
                FakeSample({"pod": pod, "container": c}, v, timestamp_seconds=EVAL_SECONDS)
                for pod, c, v in self.cpu
            ]
        if "memory_bytes" in query:
            return [
                FakeSample({"pod": pod, "container": c}, "1048576", timestamp_seconds=EVAL_SECONDS)
                for pod, c, _ in self.cpu
            ]
        return []


@dataclass
class Setup:
    client: InProcessMetricsClient
    prometheus: FakePrometheus
    tables: Tables
    pods: FakePodLister
    providers: MetricProviders


def pods() -> FakePodLister:
    lister = FakePodLister()
    for name, app in (("web-1", "web"), ("web-2", "web"), ("db-0", "db")):
        lister.add("ns1", PodInfo(name=name), labels={"app": app})
    return lister


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    tables = Tables()
    async with (
        FakePrometheus(
            series_by_match=dict(SERIES_BY_MATCH),
            responder=tables.respond,
            eval_time_seconds=EVAL_SECONDS,
        ) as fake,
        PrometheusClient(PrometheusConnection(fake.url, timeout_seconds=5.0)) as prometheus,
    ):
        lister = pods()
        providers = build_providers(
            load_rules(RULES, source="test"),
            prometheus,
            pod_lister=ControllerPodNames(lister),
            settings=ValueSettings(max_sample_age_seconds=None),  # no staleness probes here
            registry=CollectorRegistry(),
        )
        await providers.relister.relist()
        yield Setup(InProcessMetricsClient(providers, pods=lister), fake, tables, lister, providers)


async def test_resource_metric_sums_containers_per_selected_pod(setup: Setup) -> None:
    observed = await setup.client.get_resource_metric("cpu", "ns1", selector="app=web")
    assert isinstance(observed, PodMetricsObservation)
    assert observed.metrics == {
        "web-1": PodMetric(value_milli=300, timestamp=AT, window_seconds=30.0),
        "web-2": PodMetric(value_milli=500, timestamp=AT, window_seconds=30.0),
    }
    assert observed.timestamp == AT
    assert ("ns1", "app=web") in setup.pods.calls  # the pods come from the controller's lister


async def test_container_resource_metric_reads_the_named_container(setup: Setup) -> None:
    observed = await setup.client.get_resource_metric(
        "cpu", "ns1", selector="app=web", container="sidecar"
    )
    # web-2 has no sidecar: the whole call fails, as upstream's getContainerMetrics
    assert observed == MetricFetchError(
        "failed to get container metrics: container sidecar not present in metrics for pod "
        "ns1/web-2"
    )
    only_app = await setup.client.get_resource_metric(
        "memory", "ns1", selector="app=web", container="app"
    )
    assert isinstance(only_app, PodMetricsObservation)
    assert {name: m.value_milli for name, m in only_app.metrics.items()} == {
        "web-1": 1048576000,
        "web-2": 1048576000,
    }


async def test_resource_metric_of_no_pod_is_no_metrics_returned(setup: Setup) -> None:
    observed = await setup.client.get_resource_metric("cpu", "ns1", selector="app=nothing")
    assert observed == MetricFetchError("no metrics returned from resource metrics API")


async def test_resource_metric_when_prometheus_fails_is_the_adapters_500_text(
    setup: Setup,
) -> None:
    setup.prometheus.fail_api(
        "/api/v1/query", status=422, error_type="execution", error="query failed"
    )
    observed = await setup.client.get_resource_metric("cpu", "ns1", selector="app=web")
    assert observed == MetricFetchError(
        "unable to fetch metrics from resource metrics API: unable to fetch metrics"
    )


async def test_raw_metric_values_per_pod_with_the_rule_window(setup: Setup) -> None:
    observed = await setup.client.get_raw_metric(
        "http_requests_per_second", "ns1", selector="app=web", metric_selector=""
    )
    assert isinstance(observed, PodMetricsObservation)
    assert {name: (m.value_milli, m.window_seconds) for name, m in observed.metrics.items()} == {
        "web-1": (2000, 120.0),
        "web-2": (500, 120.0),
    }


async def test_unknown_raw_metric_is_the_adapters_not_found_text(setup: Setup) -> None:
    observed = await setup.client.get_raw_metric(
        "nope", "ns1", selector="app=web", metric_selector=""
    )
    assert observed == MetricFetchError(
        "unable to fetch metrics from custom metrics API: the server could not find the metric "
        "nope for pods"
    )


async def test_raw_metric_with_no_value_for_any_pod_is_not_found(setup: Setup) -> None:
    setup.tables.requests = {}
    observed = await setup.client.get_raw_metric(
        "http_requests_per_second", "ns1", selector="app=web", metric_selector=""
    )
    assert observed == MetricFetchError(
        "unable to fetch metrics from custom metrics API: the server could not find the metric "
        "http_requests_per_second for pods"
    )


async def test_a_bad_metric_selector_is_the_adapters_bad_request_text(setup: Setup) -> None:
    observed = await setup.client.get_raw_metric(
        "http_requests_per_second", "ns1", selector="app=web", metric_selector="a in (("
    )
    assert isinstance(observed, MetricFetchError)
    assert observed.message.startswith("unable to fetch metrics from custom metrics API: ")


async def test_object_metric_of_a_deployment(setup: Setup) -> None:
    observed = await setup.client.get_object_metric(
        "queue_depth",
        "ns1",
        described_object=CrossVersionObjectReference(
            kind="Deployment", name="worker", api_version="apps/v1"
        ),
        metric_selector="",
    )
    assert isinstance(observed, ObjectMetricObservation)
    assert observed.value_milli == 42000


async def test_object_metric_of_the_namespace_is_the_root_scoped_namespace(setup: Setup) -> None:
    observed = await setup.client.get_object_metric(
        "namespace_load",
        "ns1",
        described_object=CrossVersionObjectReference(
            kind="Namespace", name="ns1", api_version="v1"
        ),
        metric_selector="",
    )
    assert isinstance(observed, ObjectMetricObservation)
    assert observed.value_milli == 1500


async def test_object_metric_of_another_object_is_named_not_found(setup: Setup) -> None:
    observed = await setup.client.get_object_metric(
        "queue_depth",
        "ns1",
        described_object=CrossVersionObjectReference(
            kind="Deployment", name="other", api_version="apps/v1"
        ),
        metric_selector="",
    )
    assert observed == MetricFetchError(
        "unable to fetch metrics from custom metrics API: the server could not find the metric "
        "queue_depth for deployments.apps other"
    )


async def test_external_metric_every_series(setup: Setup) -> None:
    observed = await setup.client.get_external_metric(
        "queue_messages_ready", "ns1", metric_selector=""
    )
    assert isinstance(observed, ExternalMetricObservation)
    assert sorted(observed.values_milli) == [12000, 30500]


async def test_external_metric_empty_is_not_found(setup: Setup) -> None:
    setup.tables.queues = {}
    observed = await setup.client.get_external_metric(
        "queue_messages_ready", "ns1", metric_selector=""
    )
    assert observed == MetricFetchError(
        "unable to fetch metrics from external metrics API: the server could not find the "
        "metric queue_messages_ready for "  # prometheus-adapter's wording outside `default`
    )


async def test_without_resource_rules_resource_metrics_are_not_served() -> None:
    async with (
        FakePrometheus(series_by_match=dict(SERIES_BY_MATCH)) as fake,
        PrometheusClient(PrometheusConnection(fake.url)) as prometheus,
    ):
        lister = pods()
        providers = build_providers(
            load_rules(RULES.split("resourceRules:")[0], source="test"),
            prometheus,
            pod_lister=ControllerPodNames(lister),
        )
        client = InProcessMetricsClient(providers, pods=lister)
        observed = await client.get_resource_metric("cpu", "ns1", selector="app=web")
    assert observed == MetricFetchError(
        "unable to fetch metrics from resource metrics API: the server could not find the "
        "requested resource (get pods.metrics.k8s.io)"
    )


async def test_custom_metrics_wait_for_the_first_relist_instead_of_not_found(
    setup: Setup,
) -> None:
    async with PrometheusClient(PrometheusConnection(setup.prometheus.url)) as prometheus:
        fresh = build_providers(
            load_rules(RULES, source="test"),
            prometheus,
            pod_lister=ControllerPodNames(setup.pods),
            settings=ValueSettings(max_sample_age_seconds=None),
        )
        client = InProcessMetricsClient(fresh, pods=setup.pods)
        asking = asyncio.create_task(
            client.get_raw_metric(
                "http_requests_per_second", "ns1", selector="app=web", metric_selector=""
            )
        )
        for _ in range(10):
            await asyncio.sleep(0)  # loop turns, no time passes
        assert not asking.done()  # the index is still empty: no "not found" answer yet
        await fresh.relister.relist()
        observed = await asking
    assert isinstance(observed, PodMetricsObservation)
    assert set(observed.metrics) == {"web-1", "web-2"}


async def test_controller_pod_names_answer_from_the_controllers_lister() -> None:
    names = ControllerPodNames(pods())
    assert list(await names.pods_for_selector("ns1", "app=web")) == ["web-1", "web-2"]
    assert list(await names.pods_for_selector("ns1", "")) == ["web-1", "web-2", "db-0"]


def test_the_controller_reads_the_adapters_flags_only_with_metrics_source_inprocess(
    tmp_path: Path,
) -> None:
    parser = argparse.ArgumentParser()
    controller_app.add_flags(parser)
    plain = controller_app.from_args(parser.parse_args([]))
    assert plain.horizontal.metrics_source == "api"
    assert plain.inprocess_metrics is None
    with pytest.raises(ValueError, match="needs --config"):
        controller_app.from_args(parser.parse_args(["--metrics-source=inprocess"]))
    config = tmp_path / "rules.yaml"
    config.write_text(RULES)
    chosen = controller_app.from_args(
        parser.parse_args(
            [
                "--metrics-source=inprocess",
                f"--config={config}",
                "--prometheus-url=http://prometheus:9090",
                "--metrics-relist-interval=30s",
                "--prometheus-header=X-Scope-OrgID=team-a",
            ]
        )
    )
    assert chosen.horizontal.metrics_source == "inprocess"
    assert chosen.inprocess_metrics is not None
    assert chosen.inprocess_metrics.config == config
    assert chosen.inprocess_metrics.prometheus_url == "http://prometheus:9090"
    assert chosen.inprocess_metrics.metrics_relist_interval_seconds == 30.0
    assert chosen.inprocess_metrics.prometheus_headers == (("X-Scope-OrgID", "team-a"),)
    config.write_text("rules: [{bad: 1}]")
    with pytest.raises(ValueError, match=str(config)):
        settings_from_args(parser.parse_args(["--metrics-source=inprocess", f"--config={config}"]))


def test_add_flags_uses_the_adapters_defaults() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    args = parser.parse_args([])
    assert args.prometheus_url == "https://localhost"
    assert args.metrics_relist_interval == 600.0
    assert args.prometheus_query_timeout == 30.0


def test_a_prometheus_header_with_cr_or_lf_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--prometheus-header=X-Scope-OrgID=a\r\nX-Injected: 1"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --prometheus-header: value of header 'X-Scope-OrgID' contains CR" in error


# ------------------------------------------- the controller, in-process, against real Prometheus

REAL_RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
resourceRules:
  cpu:
    containerQuery: >-
      sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
    nodeQuery: 'sum(rate(node_cpu_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  memory:
    containerQuery: 'sum(container_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(node_memory_working_set_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  window: 1m
"""
STEP_SECONDS = 5


def backfill(start: int) -> str:
    """2 pods of ns1/web from 5 minutes before ``start`` to 3 minutes after: 0.9 cores each
    (counter +4.5 per 5 s), 1.5 requests/s each, 64 MiB."""
    lines = ["# TYPE container_cpu_usage_seconds_total gauge"]
    times = range(start - 300, start + 181, STEP_SECONDS)
    for pod_name in ("web-0", "web-1"):
        labels = f'namespace="ns1",pod="{pod_name}",container="app"'
        lines += [
            f"container_cpu_usage_seconds_total{{{labels}}} {0.9 * (t - start + 300)} {t}"
            for t in times
        ]
    lines.append("# TYPE container_memory_working_set_bytes gauge")
    for pod_name in ("web-0", "web-1"):
        labels = f'namespace="ns1",pod="{pod_name}",container="app"'
        lines += [f"container_memory_working_set_bytes{{{labels}}} 67108864 {t}" for t in times]
    lines.append("# TYPE http_requests_total gauge")
    for pod_name in ("web-0", "web-1"):
        labels = f'namespace="ns1",pod="{pod_name}"'
        lines += [f"http_requests_total{{{labels}}} {1.5 * (t - start + 300)} {t}" for t in times]
    return "\n".join([*lines, "# EOF"]) + "\n"


@pytest.fixture(scope="module")
def real_prometheus() -> Iterator[PrometheusServer]:
    server = PrometheusServer()
    server.backfill_openmetrics(backfill(int(time.time())))
    with server:
        yield server


@pytest.fixture
async def apiserver() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer(DEFAULT_RESOURCES)  # no metrics APIs: the metrics come in-process
    await server.start()
    yield server
    await server.close()


async def seed_world(kube: KubeClient) -> None:
    await kube.post(
        "/apis/apps/v1/namespaces/ns1/deployments",
        {
            "metadata": {"name": "web", "namespace": "ns1"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2},
        },
    )
    for pod_name in ("web-0", "web-1"):
        since = "2025-01-01T00:00:00Z"
        await kube.post(
            "/api/v1/namespaces/ns1/pods",
            {
                "metadata": {"name": pod_name, "namespace": "ns1", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {
                    "phase": "Running",
                    "startTime": since,
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": since}
                    ],
                },
            },
        )
    await kube.post(
        "/apis/autoscaling/v2/namespaces/ns1/horizontalpodautoscalers",
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "ns1", "generation": 1},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    },
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": "http_requests_per_second"},
                            "target": {"type": "AverageValue", "averageValue": "1"},
                        },
                    },
                ],
            },
        },
    )


async def test_the_controller_scales_on_real_prometheus_through_the_inprocess_source(
    real_prometheus: PrometheusServer, apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """``hpa controller --metrics-source=inprocess`` wiring (build_app with the source's
    factory, the relist loop in the TaskGroup) reconciles against real Prometheus: cpu at 90 %
    of the request (target 50 %) proposes 4, 1.5 requests/s per pod (target 1) proposes 3;
    the deployment is scaled 2 -> 4 and the status carries both metrics' values."""
    session = aiohttp.ClientSession()
    kube = KubeClient(session, apiserver.url, retry=RetryPolicy(max_attempts=2))
    config = tmp_path / "rules.yaml"
    config.write_text(REAL_RULES)
    parser = argparse.ArgumentParser()
    controller_app.add_flags(parser)
    settings = controller_app.from_args(
        parser.parse_args(
            [
                "--metrics-source=inprocess",
                f"--config={config}",
                f"--prometheus-url={real_prometheus.url}",
                "--metrics-max-age=10m",
                "--horizontal-pod-autoscaler-sync-period=1s",
                "--leader-elect=false",
                "--port=0",
            ]
        )
    )
    assert settings.inprocess_metrics is not None
    registry = CollectorRegistry()
    source = open_source(settings.inprocess_metrics, registry=registry)
    app = controller_app.build_app(
        settings, kube, clock=SystemClock(), registry=registry, metrics_factory=source.factory
    )
    assert [name for name, _ in app.metric_jobs] == ["metrics-relist"]
    await seed_world(kube)
    task = asyncio.create_task(app.run(), name="app")
    try:
        async with asyncio.timeout(30):
            while True:
                deployment = await kube.get("/apis/apps/v1/namespaces/ns1/deployments/web")
                hpa = await kube.get(
                    "/apis/autoscaling/v2/namespaces/ns1/horizontalpodautoscalers/web"
                )
                current = hpa.get("status", {}).get("currentMetrics") or []
                if deployment["spec"]["replicas"] == 4 and len(current) == 2:
                    break
                await asyncio.sleep(0.2)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await kube.close()
        await source.aclose()
    assert source.providers is not None
    assert source.providers.relister.ready  # the relist loop ran in the app's TaskGroup
    metrics = {m["type"]: m for m in hpa["status"]["currentMetrics"]}
    assert metrics["Resource"]["resource"]["current"]["averageUtilization"] == 90
    assert metrics["Resource"]["resource"]["current"]["averageValue"] == "900m"
    assert metrics["Pods"]["pods"]["current"]["averageValue"] == "1500m"
    assert hpa["status"]["desiredReplicas"] == 4
