"""The server over the real providers and Prometheus client (fake Prometheus): values end to end,
config reload (file change, SIGHUP request, failures keep the old rules, in-flight requests
finish), the providers' metrics on the server's registry, and explain."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import RawTestServer, TestClient
from prometheus_client import CollectorRegistry, generate_latest

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import MetricProviders, build_providers
from adapter.rules import RuleConfig
from adapter.server.app import Server, request_handler
from adapter.server.cli import run_explain
from adapter.server.explain import explain
from adapter.server.reload import ReloadingMetrics
from adapter.server.router import Router
from adapter.server.routing import MetricRequest, parse_metric_request
from adapter.server.settings import Settings
from adapter.server.telemetry import ServerMetrics
from tests.adapter.providers.fake_pods import FakePodLister
from tests.adapter.providers.scenario import EVAL_SECONDS, PODS, RULES, SERIES_BY_MATCH, Tables
from tests.adapter.server.harness import ALICE, FakeLister, HeaderAuthenticator, TableAuthorizer
from tests.fakes.clock import FakeClock
from tests.fakes.metrics_backend import FakeMetricsBackend
from tests.fakes.prometheus import FakePrometheus

PER_SECOND = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/http_requests_per_second"


@dataclass(kw_only=True)
class Live:
    client: TestClient[web.BaseRequest, None]
    metrics: ReloadingMetrics
    prometheus: FakePrometheus
    tables: Tables
    clock: FakeClock
    registry: CollectorRegistry
    config: Path
    prom: PrometheusClient
    pods: FakePodLister
    router: Router

    async def get(self, url: str, **params: str) -> tuple[int, Any]:
        response = await self.client.get(url, params=params, headers=ALICE)
        return response.status, await response.json()

    def metric_text(self) -> str:
        return generate_latest(self.registry).decode()


@asynccontextmanager
async def live(tmp_path: Path) -> AsyncIterator[Live]:
    tables = Tables()
    config = tmp_path / "config.yaml"
    config.write_text(RULES)
    async with (
        FakePrometheus(
            series_by_match=dict(SERIES_BY_MATCH),
            responder=tables.respond,
            eval_time_seconds=EVAL_SECONDS,
        ) as fake,
        PrometheusClient(PrometheusConnection(fake.url, timeout_seconds=5.0)) as prom,
    ):
        pods = FakePodLister(PODS)
        clock = FakeClock()
        registry = CollectorRegistry()
        server_metrics = ServerMetrics(registry)

        def build(rules: RuleConfig, provider_registry: CollectorRegistry) -> MetricProviders:
            return build_providers(
                rules,
                prom,
                pod_lister=pods,
                clock=clock,
                registry=provider_registry,
                relist_interval_seconds=60.0,
            )

        router = Router(registry=registry, clock=clock, source=str(config))
        metrics = ReloadingMetrics(
            config,
            build,
            registry=registry,
            server_metrics=server_metrics,
            clock=clock,
            check_interval_seconds=10.0,
            adopt=router.stage,
        )
        metrics.load_initial()
        await metrics.current.relister.relist()

        async def explain_request(request: MetricRequest) -> dict[str, Any]:
            return await explain(metrics.current, request, querier=prom)

        server = Server(
            metrics=metrics,
            lister=FakeLister(),
            authenticator=HeaderAuthenticator(),
            authorizer=TableAuthorizer(),
            clock=clock,
            registry=registry,
            server_metrics=server_metrics,
            explain=explain_request,
            router=router,
        )
        raw: TestClient[web.BaseRequest, None] = TestClient(RawTestServer(request_handler(server)))
        async with raw as client:
            yield Live(
                client=client,
                metrics=metrics,
                prometheus=fake,
                tables=tables,
                clock=clock,
                registry=registry,
                config=config,
                prom=prom,
                pods=pods,
                router=router,
            )
        await router.close()


async def test_values_flow_from_prometheus_through_the_real_providers(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        s.tables.values = {"web-1": "2.5"}
        s.tables.ages = {"web-1": 5.0}
        code, discovery = await s.get("/apis/custom.metrics.k8s.io/v1beta2")
        code_values, values = await s.get(PER_SECOND, labelSelector="app=web")
        code_missing, missing = await s.get(
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/web-2/http_requests_per_second"
        )
    assert code == 200
    names = [r["name"] for r in discovery["resources"]]
    assert "pods/http_requests_per_second" in names
    assert "namespaces/http_requests_per_second" in names
    assert code_values == 200
    assert [(i["describedObject"]["name"], i["value"]) for i in values["items"]] == [
        ("web-1", "2500m")
    ]
    assert values["items"][0]["windowSeconds"] == 120  # the rule's [2m]
    assert code_missing == 404
    assert missing["message"] == (
        "the server could not find the metric http_requests_per_second for pods web-2"
    )


async def test_reload_swaps_rules_and_records_success_and_failure(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        s.config.write_text(RULES.replace('as: "${1}_per_second"', 'as: "${1}_rate"'))
        assert await s.metrics.reload()
        _, discovery = await s.get("/apis/custom.metrics.k8s.io/v1beta2")
        names = [r["name"] for r in discovery["resources"]]
        assert "pods/http_requests_rate" in names
        assert "pods/http_requests_per_second" not in names
        text = s.metric_text()
        assert "hpa_adapter_config_last_reload_successful 1.0" in text
        assert 'hpa_adapter_config_reloads_total{result="success"} 2.0' in text
        assert text.count("# TYPE prometheus_adapter_relists_total counter") == 1

        s.config.write_text("rules: [ {seriesQuery: ")  # broken YAML
        assert not await s.metrics.reload()
        _, still = await s.get("/apis/custom.metrics.k8s.io/v1beta2")
        text = s.metric_text()
    assert [r["name"] for r in still["resources"]] == names  # the last good rules stay
    assert "hpa_adapter_config_last_reload_successful 0.0" in text
    assert 'hpa_adapter_config_reloads_total{result="failure"} 1.0' in text


async def test_a_reload_whose_relist_fails_keeps_the_old_providers(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        old = s.metrics.current
        s.config.write_text(RULES.replace('as: "${1}_per_second"', 'as: "${1}_rate"'))
        s.prometheus.fail_api("/api/v1/series", status=503, error_type="unavailable", error="down")
        assert not await s.metrics.reload()
        assert s.metrics.current is old


async def test_watch_reloads_on_file_change_and_on_request(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        watcher = asyncio.create_task(s.metrics.watch(), name="config-watch")
        try:
            first = s.metrics.current
            await s.clock.advance(10.0)
            assert s.metrics.current is first  # unchanged file: nothing to do
            s.config.write_text(RULES.replace('as: "${1}_per_second"', 'as: "${1}_rate"'))
            await s.clock.advance(10.0)
            async with asyncio.timeout(5):
                await s.metrics.wait_attempts(2)
            second = s.metrics.current
            assert second is not first
            s.metrics.request_reload()  # SIGHUP: reload even though nothing changed
            async with asyncio.timeout(5):
                await s.metrics.wait_attempts(3)
            assert s.metrics.current is not second
        finally:
            watcher.cancel()
    assert 'hpa_adapter_config_reloads_total{result="success"} 3.0' in s.metric_text()


async def test_requests_in_flight_during_a_reload_are_answered(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        s.tables.values = {"web-1": "1"}
        s.tables.ages = {"web-1": 1.0}
        gate = s.prometheus.hold()
        seen = len(s.prometheus.requests)
        request = asyncio.create_task(s.get(PER_SECOND, labelSelector="app=web"))
        await s.prometheus.wait_for_requests(seen + 1)
        s.config.write_text(RULES.replace('as: "${1}_per_second"', 'as: "${1}_rate"'))
        reload = asyncio.create_task(s.metrics.reload())
        await s.prometheus.wait_for_requests(seen + 3)  # the reload's relist is waiting too
        gate.set()
        code, body = await request
        assert await reload
    assert code == 200
    assert body["items"][0]["metric"]["name"] == "http_requests_per_second"


async def test_explain_shows_rule_query_result_and_answer(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        s.tables.values = {"web-1": "2.5"}
        s.tables.ages = {"web-1": 5.0}
        doc = await explain(
            s.metrics.current,
            querier=s.prom,
            request=parse_metric_request(PER_SECOND + "?labelSelector=app%3Dweb"),
        )
    assert doc["request"]["metric"] == "http_requests_per_second"
    assert doc["rule"]["seriesQuery"] == 'http_requests_total{namespace!="",pod!=""}'
    assert doc["rule"]["seriesName"] == "http_requests_total"
    assert doc["objects"] == ["web-1", "web-2"]
    assert doc["query"] == (
        'sum(rate(http_requests_total{namespace="ns1",pod=~"web-1|web-2"}[2m])) by (pod)'
    )
    assert doc["result"]["samples"][0]["labels"] == {"pod": "web-1"}
    assert doc["answer"]["items"][0]["value"] == "2500m"
    assert doc["verdict"] == "served"


async def test_explain_says_why_a_metric_is_missing(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        typo = await explain(
            s.metrics.current,
            querier=s.prom,
            request=parse_metric_request(
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/web-1/http_request_per_second"
            ),
        )
        empty = await explain(
            s.metrics.current,
            querier=s.prom,
            request=parse_metric_request(
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/web-1/http_requests_per_second"
            ),
        )
        external = await explain(
            s.metrics.current,
            querier=s.prom,
            request=parse_metric_request(
                "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready"
            ),
        )
    assert typo["rule"] is None
    assert "http_requests_per_second" in typo["candidates"]["similarMetrics"]
    assert typo["answer"]["error"]["cause"] == "unknown_metric"
    assert typo["verdict"].startswith("the metric is not in the relisted index")
    assert empty["result"]["samples"] == []
    assert empty["answer"]["error"]["message"] == (
        "the server could not find the metric http_requests_per_second for pods web-1"
    )
    assert empty["verdict"].startswith("the rule's query returned no sample")
    assert external["rule"]["seriesName"] == "queue_messages_ready"
    assert external["query"] == "sum(queue_messages_ready{}) by (queue)"
    assert external["answer"]["error"]["cause"] == "empty_result"


async def test_debug_explain_endpoint_is_authorized(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        anonymous = await s.client.get("/debug/explain", params={"path": PER_SECOND})
        code, doc = await s.get("/debug/explain", path=PER_SECOND, labelSelector="app=web")
        bad_code, bad = await s.get("/debug/explain")
    assert anonymous.status == 401
    assert code == 200
    assert doc["request"]["labelSelector"] == "app=web"
    assert doc["objects"] == ["web-1", "web-2"]
    assert (bad_code, bad["reason"]) == (400, "BadRequest")


async def test_cli_explain_needs_no_cluster_for_a_named_object(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    async with live(tmp_path) as s:
        s.tables.values = {"web-1": "3"}
        s.tables.ages = {"web-1": 1.0}
        settings = Settings(config=s.config, prometheus_url=s.prometheus.url)
        named = await run_explain(
            settings,
            parse_metric_request(
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/web-1/http_requests_per_second"
            ),
        )
        selected = await run_explain(settings, parse_metric_request(PER_SECOND))
    assert named["verdict"] == "served"
    assert named["answer"]["items"][0]["value"] == "3"
    assert "cannot list pods" in selected["objectsError"]


async def test_empty_notin_sets_and_replacement_characters_are_answered_never_a_500(
    tmp_path: Path,
) -> None:
    """#20: ``notin ()`` (valid Kubernetes syntax: the empty value's complement, as
    ``labels.Parse`` reads it) gave 500; a literal U+FFFD reached Prometheus unescaped and failed
    there with a 500. U+FFFD in a selector value is a 400 (label value validation); in an object
    name it is escaped in the query, which then finds no series (404)."""
    async with live(tmp_path) as s:
        s.tables.values = {"web-1": "2.5"}
        s.tables.ages = {"web-1": 5.0}
        code, values = await s.get(PER_SECOND, labelSelector="app=web,tier notin ()")
        code_metric, _ = await s.get(
            PER_SECOND, labelSelector="app=web", metricLabelSelector="tier notin ()"
        )
        code_selector, doc = await s.get(PER_SECOND, labelSelector="app=w\ufffdb")
        code_metric_fffd, _ = await s.get(PER_SECOND, metricLabelSelector="app=w\ufffdb")
        code_name, _ = await s.get(PER_SECOND.replace("/*/", "/web-\ufffd/"))
    assert code == 200
    assert [i["describedObject"]["name"] for i in values["items"]] == ["web-1"]
    assert code_metric != 500
    assert code_selector == 400
    assert "a valid label must be an empty string" in doc["message"]
    assert code_metric_fffd == 400
    assert code_name == 404


def _with_routes(url: str, names: str) -> str:
    return RULES + (
        "routes:\n"
        f"  backends: [{{name: legacy, url: '{url}'}}]\n"
        f"  custom.metrics.k8s.io:\n    metrics: [{{backend: legacy, names: [{names}]}}]\n"
    )


async def test_a_reload_puts_new_routes_in_service(tmp_path: Path) -> None:
    async with live(tmp_path) as s, FakeMetricsBackend() as legacy:
        legacy.lists("custom.metrics.k8s.io/v1beta2", "pods/legacy_rps")
        assert s.router.routes is None
        s.config.write_text(_with_routes(legacy.url, "'legacy_*'"))
        assert await s.metrics.reload()
        _, discovery = await s.get("/apis/custom.metrics.k8s.io/v1beta2")
    names = [r["name"] for r in discovery["resources"]]
    assert "pods/legacy_rps" in names
    assert "pods/http_requests_per_second" in names


async def test_a_reload_whose_rules_serve_a_routed_metric_is_refused(tmp_path: Path) -> None:
    async with live(tmp_path) as s:
        s.config.write_text(_with_routes("http://127.0.0.1:1", "'http_requests_*'"))
        assert not await s.metrics.reload()
        assert s.router.routes is None  # the previous file's (no routes) stay
        assert "hpa_adapter_config_last_reload_successful 0.0" in s.metric_text()
