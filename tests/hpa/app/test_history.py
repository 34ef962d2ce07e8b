"""The recommender's inputs wired to I/O: the history flags, the history provider over the metrics
layer's Prometheus client (on the wire, against the fake Prometheus: queries, credentials and
tenant headers, errors and timeouts), and the two live sources giving the same snapshots."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers.resource import PodUsage
from adapter.server.wire import pod_metrics, resource_list
from hpa.app import history, inprocess_metrics
from hpa.controllers.vertical.history import history_queries
from hpa.controllers.vertical.ports import HistoryError, PodHistory, UsageSample
from hpa.core.vpa.cluster import PodId
from hpa.core.vpa.usage import ContainerMetricsSnapshot, MetricsSourceError
from hpa.kube.client import ApiStatus, NotFoundError
from hpa.metrics.containers import MetricsApiContainerSource
from tests.fakes.clock import EPOCH, FakeClock
from tests.fakes.metrics import FakeJsonGetter
from tests.fakes.prometheus import FakePrometheus, FakeSample
from tests.hpa.app.test_inprocess_metrics import RULES

EVAL_SECONDS = 1_800_000_000.0
RESOURCE_RULES = "resourceRules:" + RULES.split("resourceRules:")[1]


def parser() -> argparse.ArgumentParser:
    """The recommender's parser: the adapter's connection flags and the history flags."""
    parser = argparse.ArgumentParser()
    inprocess_metrics.add_flags(parser)
    history.add_flags(parser)
    return parser


# ---------------------------------------------------------------- flags


def test_checkpoints_are_the_default_and_need_no_prometheus() -> None:
    assert history.settings_from_args(parser().parse_args([])) is None
    assert history.settings_from_args(parser().parse_args(["--storage=checkpoint"])) is None
    assert history.settings_from_args(parser().parse_args(["--storage="])) is None


def test_storage_prometheus_takes_upstreams_defaults() -> None:
    settings = history.settings_from_args(
        parser().parse_args(["--storage=prometheus"]), namespace="shop"
    )
    assert settings is not None
    config = settings.config
    assert (config.history_length_seconds, config.history_resolution_seconds) == (691200.0, 3600.0)
    assert config.history_resolution == "1h"
    assert config.namespace == "shop"
    assert settings.connection.prometheus_url == "https://localhost"
    assert history_queries(config).cpu == (
        'rate(container_cpu_usage_seconds_total{job="kubernetes-cadvisor", pod_name=~".+", '
        'name!="POD", name!="", namespace="shop"}[1h])'
    )


def test_every_history_flag_reaches_the_config(tmp_path: Path) -> None:
    token = tmp_path / "token"
    args = parser().parse_args(
        [
            "--storage=prometheus",
            "--history-length=2w",
            "--history-resolution=5m",
            "--prometheus-cadvisor-job-name=",
            "--history-cpu-metric=cpu_seconds",
            "--history-memory-metric=rss_bytes",
            "--pod-label-prefix=label_",
            "--pod-labels-metric-name=kube_pod_labels",
            "--pod-namespace-label=namespace",
            "--pod-name-label=pod",
            "--container-namespace-label=ns",
            "--container-pod-name-label=pod",
            "--container-name-label=container",
            "--history-oom=false",
            "--prometheus-address=http://prometheus.monitoring.svc:9090",
            f"--prometheus-bearer-token-file={token}",
            "--prometheus-query-timeout=2m",
            "--prometheus-header=X-Scope-OrgID=tenant-a",
        ]
    )
    settings = history.settings_from_args(args)
    assert settings is not None
    config = settings.config
    assert (config.history_length_seconds, config.history_resolution_seconds) == (
        14 * 86400.0,
        300.0,
    )
    assert (config.cadvisor_metrics_job_name, config.cpu_metric_name) == ("", "cpu_seconds")
    assert (config.memory_metric_name, config.pod_label_prefix) == ("rss_bytes", "label_")
    assert (config.pod_labels_metric_name, config.pod_namespace_label) == (
        "kube_pod_labels",
        "namespace",
    )
    assert (config.pod_name_label, config.ctr_namespace_label) == ("pod", "ns")
    assert (config.ctr_pod_name_label, config.ctr_name_label) == ("pod", "container")
    assert (config.oom_history, config.query_timeout_seconds) == (False, 120.0)
    assert settings.connection.prometheus_url == "http://prometheus.monitoring.svc:9090"
    assert settings.connection.prometheus_token_file == token
    assert settings.connection.prometheus_headers == (("X-Scope-OrgID", "tenant-a"),)


@pytest.mark.parametrize("flag", ["--history-length=8 days", "--history-resolution=0"])
def test_a_bad_duration_is_refused_by_the_parser(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--storage=prometheus", flag])
    assert "duration" in capsys.readouterr().err


# ---------------------------------------------------------------- the provider on the wire


def settings_for(url: str, *extra: str) -> history.HistorySettings:
    args = parser().parse_args(["--storage=prometheus", f"--prometheus-url={url}", *extra])
    settings = history.settings_from_args(args)
    assert settings is not None
    return settings


async def test_the_history_comes_from_prometheus_with_credentials_and_tenant_header(
    tmp_path: Path,
) -> None:
    """Upstream's ``TestPrometheusAuth`` (bearer token) with our tenant header: every query
    carries both, and the answers become the history."""
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    async with FakePrometheus() as fake:
        settings = settings_for(
            fake.url, f"--prometheus-token-file={token}", "--prometheus-header=X-Scope-OrgID=t1"
        )
        queries = history_queries(settings.config)
        labels = {"namespace": "shop", "pod_name": "web-1", "name": "app"}
        fake.matrices[queries.cpu] = [(labels, [(3600.0, "0.25"), (7200.0, "0.5")])]
        fake.matrices[queries.memory] = [(labels, [(3600.0, "1048576")])]
        handle = await history.open_history_provider(
            settings, clock=FakeClock(), registry=CollectorRegistry()
        )
        try:
            got = await handle.provider.get_cluster_history()
        finally:
            await handle.aclose()
    assert got == {
        PodId("shop", "web-1"): PodHistory(
            last_labels={},
            last_seen_ns=0,
            samples={
                "app": (
                    UsageSample(3600 * 10**9, "cpu", 250),
                    UsageSample(3600 * 10**9, "memory", 1048576),
                    UsageSample(7200 * 10**9, "cpu", 500),
                )
            },
        )
    }
    assert [r.path for r in fake.requests] == ["/api/v1/query_range"] * 5
    now = EPOCH.timestamp()
    first = fake.requests[0]
    assert first.param("query") == queries.cpu
    assert float(first.param("start") or 0) == now - 8 * 86400
    assert float(first.param("end") or 0) == now
    assert first.param("step") == "3600"
    assert {r.headers.get("Authorization") for r in fake.requests} == {"Bearer s3cret"}
    assert {r.headers.get("X-Scope-OrgID") for r in fake.requests} == {"t1"}


async def test_a_prometheus_error_is_a_one_line_history_error() -> None:
    async with FakePrometheus() as fake:
        fake.fail_api(
            "/api/v1/query_range", status=422, error_type="execution", error="too\nmany samples"
        )
        handle = await history.open_history_provider(
            settings_for(fake.url), clock=FakeClock(), registry=CollectorRegistry()
        )
        try:
            with pytest.raises(HistoryError) as raised:
                await handle.provider.get_cluster_history()
        finally:
            await handle.aclose()
    message = str(raised.value)
    assert message.startswith(
        f"cannot get usage history: cannot get timeseries for cpu: Prometheus at {fake.url}"
    )
    assert "too many samples" in message
    assert "\n" not in message


async def test_a_slow_prometheus_is_a_timeout_history_error() -> None:
    async with FakePrometheus() as fake:
        gate = fake.hold()
        handle = await history.open_history_provider(
            settings_for(fake.url, "--prometheus-query-timeout=50ms"),
            clock=FakeClock(),
            registry=CollectorRegistry(),
        )
        try:
            with pytest.raises(HistoryError) as raised:
                await handle.provider.get_cluster_history()
        finally:
            gate.set()
            await handle.aclose()
    assert str(raised.value) == (
        "cannot get usage history: cannot get timeseries for cpu: "
        f"Prometheus at {fake.url} did not answer within 0.05s (client timeout)"
    )


async def test_an_unreachable_prometheus_is_a_history_error() -> None:
    handle = await history.open_history_provider(
        settings_for("http://127.0.0.1:1"), clock=FakeClock(), registry=CollectorRegistry()
    )
    try:
        with pytest.raises(HistoryError, match=r"^cannot get usage history: .*127\.0\.0\.1:1"):
            await handle.provider.get_cluster_history()
    finally:
        await handle.aclose()


async def test_a_shared_client_is_used_and_left_open() -> None:
    async with (
        FakePrometheus() as fake,
        PrometheusClient(PrometheusConnection(fake.url)) as shared,
    ):
        handle = await history.open_history_provider(
            settings_for("http://elsewhere.invalid"),
            clock=FakeClock(),
            registry=CollectorRegistry(),
            querier=shared,
        )
        assert await handle.provider.get_cluster_history() == {}
        await handle.aclose()
        assert await shared.query_range("up", start_seconds=0, end_seconds=1, step_seconds=1) == []
    assert len(fake.requests) == 6


# ---------------------------------------------------------------- the live sources

AT = datetime.fromtimestamp(EVAL_SECONDS, UTC)


def respond(query: str) -> list[FakeSample]:
    rows = [("web-1", "app", "0.25", "1048576"), ("web-1", "sidecar", "0.0501", "2048.5")]
    rows += [("web-2", "app", "0.5", "4096")]
    if "cpu_total" in query:
        return [
            FakeSample({"pod": p, "container": c}, cpu, timestamp_seconds=EVAL_SECONDS + 0.75)
            for p, c, cpu, _ in rows
            if f'"{p}"' in query or p in query
        ]
    if "memory_bytes" in query:
        return [
            FakeSample({"pod": p, "container": c}, mem, timestamp_seconds=EVAL_SECONDS + 0.75)
            for p, c, _, mem in rows
            if p in query
        ]
    return []


def rules_file(tmp_path: Path, text: str = RESOURCE_RULES) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return path


def known_pods() -> list[PodId]:
    return [PodId("ns1", "web-1"), PodId("ns1", "web-2"), PodId("kube-system", "dns")]


async def test_the_inprocess_source_answers_from_the_adapters_resource_rules(
    tmp_path: Path,
) -> None:
    async with FakePrometheus(responder=respond, eval_time_seconds=EVAL_SECONDS) as fake:
        args = parser().parse_args(
            [f"--config={rules_file(tmp_path)}", f"--prometheus-url={fake.url}"]
        )
        handle = await history.open_containers_source(
            "inprocess",
            kube=FakeJsonGetter(lambda path: AssertionError(path)),
            pods=known_pods,
            ignored_namespaces=["kube-system"],
            inprocess=inprocess_metrics.settings_from_args(args),
        )
        try:
            snapshots = await handle.source.containers_metrics()
        finally:
            await handle.aclose()
    # whole seconds, as metav1.Time; cpu to the nearest milli (the adapter's values), memory
    # Value() rounds up
    at_ns = int(EVAL_SECONDS) * 10**9
    window_ns = 30 * 10**9
    assert snapshots == [
        ContainerMetricsSnapshot(
            PodId("ns1", "web-1"), "app", at_ns, window_ns, {"cpu": 250, "memory": 1048576}
        ),
        ContainerMetricsSnapshot(
            PodId("ns1", "web-1"), "sidecar", at_ns, window_ns, {"cpu": 50, "memory": 2049}
        ),
        ContainerMetricsSnapshot(
            PodId("ns1", "web-2"), "app", at_ns, window_ns, {"cpu": 500, "memory": 4096}
        ),
    ]
    assert all("kube-system" not in query for query in fake.queries())


async def test_both_sources_give_the_same_snapshots_for_the_same_usage(tmp_path: Path) -> None:
    """What the adapter serves as ``metrics.k8s.io`` (its wire writer) read back through the API
    source equals what the in-process source answers from the same provider result."""
    async with FakePrometheus(responder=respond, eval_time_seconds=EVAL_SECONDS) as fake:
        args = parser().parse_args(
            [f"--config={rules_file(tmp_path)}", f"--prometheus-url={fake.url}"]
        )
        settings = inprocess_metrics.settings_from_args(args)
        async with PrometheusClient(PrometheusConnection(fake.url)) as client:
            provider = inprocess_metrics.resource_provider(settings, client)
            assert provider is not None
            usages: list[PodUsage] = await provider.get_pod_metrics(
                [(p.namespace, p.pod_name) for p in known_pods()]
            )
            inprocess = inprocess_metrics.InProcessContainerSource(provider, pods=known_pods)
            from_inprocess = await inprocess.containers_metrics()
    getter = FakeJsonGetter(lambda path: AssertionError(path))
    getter.routes["/apis/metrics.k8s.io/v1beta1/pods"] = resource_list(
        "PodMetricsList", [pod_metrics(u, labels={"app": "web"}, created=AT) for u in usages]
    )
    from_api = await MetricsApiContainerSource(getter).containers_metrics()
    assert from_api == from_inprocess
    assert len(from_api) == 3


async def test_the_inprocess_source_without_resource_rules_fails_as_a_missing_api(
    tmp_path: Path,
) -> None:
    no_resources = "rules: []\n"
    args = parser().parse_args([f"--config={rules_file(tmp_path, no_resources)}"])
    handle = await history.open_containers_source(
        "inprocess",
        kube=FakeJsonGetter(lambda path: AssertionError(path)),
        pods=known_pods,
        inprocess=inprocess_metrics.settings_from_args(args),
    )
    try:
        with pytest.raises(MetricsSourceError) as raised:
            await handle.source.containers_metrics()
    finally:
        await handle.aclose()
    assert str(raised.value) == (
        "cannot list pods.metrics.k8s.io/v1beta1: the server could not find the requested "
        "resource (get pods.metrics.k8s.io)"
    )


async def test_the_inprocess_source_when_prometheus_fails_is_a_source_error(
    tmp_path: Path,
) -> None:
    async with FakePrometheus(responder=respond) as fake:
        fake.fail_api(
            "/api/v1/query",
            status=422,
            error_type="execution",
            error="boom",
        )
        fake.fail_api("/api/v1/query", status=422, error_type="execution", error="boom")
        args = parser().parse_args(
            [f"--config={rules_file(tmp_path)}", f"--prometheus-url={fake.url}"]
        )
        handle = await history.open_containers_source(
            "inprocess",
            kube=FakeJsonGetter(lambda path: AssertionError(path)),
            pods=known_pods,
            namespace="ns1",
            inprocess=inprocess_metrics.settings_from_args(args),
        )
        try:
            with pytest.raises(MetricsSourceError, match=r"^cannot list pods\.metrics\.k8s\.io"):
                await handle.source.containers_metrics()
        finally:
            await handle.aclose()


async def test_the_api_source_lists_through_the_getter() -> None:
    getter = FakeJsonGetter(
        lambda path: NotFoundError(ApiStatus(404, "NotFound", "the server could not find it"))
    )
    handle = await history.open_containers_source(
        "api", kube=getter, pods=known_pods, namespace="ns1"
    )
    with pytest.raises(MetricsSourceError, match="the server could not find it"):
        await handle.source.containers_metrics()
    await handle.aclose()
    assert getter.paths() == ["/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods"]


async def test_an_unknown_metrics_source_is_refused() -> None:
    with pytest.raises(ValueError, match="--metrics-source"):
        await history.open_containers_source(
            "prometheus", kube=FakeJsonGetter(lambda path: AssertionError(path)), pods=list
        )
