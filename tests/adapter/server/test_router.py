"""The metrics router: ``routes:`` forwards the metrics this adapter does not own to other metrics
API servers (fake ones on real local ports), after authorizing the original user here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry

from adapter.rules import RuleConfigError, load_rules
from adapter.server.authn import UserInfo
from adapter.server.authz import Decision
from adapter.server.requestinfo import RequestAttributes
from adapter.server.router import Router
from tests.adapter.server.harness import ALICE, FakeProviders, Harness, TableAuthorizer, serve
from tests.fakes.clock import FakeClock
from tests.fakes.metrics_backend import FakeMetricsBackend, resource_list

CUSTOM = "custom.metrics.k8s.io/v1beta2"
EXTERNAL = "external.metrics.k8s.io/v1beta1"
S0_PATH = f"/apis/{EXTERNAL}/namespaces/x/s0-queue?labelSelector=scaledobject%3Dweb"
LEGACY_PATH = f"/apis/{CUSTOM}/namespaces/x/pods/*/legacy_rps?labelSelector=app%3Dweb"
OURS_PATH = f"/apis/{CUSTOM}/namespaces/x/pods/*/ours_rps?labelSelector=app%3Dweb"
VALUES = {"kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1"}


def routes_file(keda: str, legacy: str, *, extra: str = "", timeout: str = "5s") -> str:
    return f"""
rules: []
routes:
  backends:
  - name: keda
    url: {keda}
    timeout: {timeout}
{extra}
  - name: legacy
    url: {legacy}
    timeout: {timeout}
  external.metrics.k8s.io:
    metrics:
    - backend: keda
      names: ["s0-*"]
    default: legacy
  custom.metrics.k8s.io:
    default: legacy
"""


def local_providers() -> FakeProviders:
    providers = FakeProviders()
    providers.documents[CUSTOM] = orjson.dumps(resource_list(CUSTOM, "pods/ours_rps"))
    providers.documents[EXTERNAL] = orjson.dumps(resource_list(EXTERNAL, "ours_queue"))
    return providers


@asynccontextmanager
async def routed(
    *, authorizer: TableAuthorizer | None = None, extra: str = "", backend_timeout: str = "5s"
) -> AsyncIterator[tuple[Harness, FakeMetricsBackend, FakeMetricsBackend, Router]]:
    async with FakeMetricsBackend() as keda, FakeMetricsBackend() as legacy:
        keda.lists(EXTERNAL, "s0-queue", "s0-other", "not-keda")
        legacy.lists(EXTERNAL, "legacy_queue", "ours_queue", "s0-stale")
        legacy.lists(CUSTOM, "pods/legacy_rps", "pods/ours_rps")
        config = load_rules(
            routes_file(keda.url, legacy.url, extra=extra, timeout=backend_timeout),
            source="rules.yaml",
        )
        registry = CollectorRegistry()
        router = Router(registry=registry, clock=FakeClock(), source="rules.yaml")
        router.adopt(config.routes)
        try:
            async with serve(
                local_providers(), router=router, authorizer=authorizer, registry=registry
            ) as h:
                yield h, keda, legacy, router
        finally:
            await router.close()


def names(document: Any) -> list[str]:
    return sorted(r["name"] for r in document["resources"])


async def test_discovery_is_the_union_of_the_owners_lists() -> None:
    async with routed() as (h, _keda, _legacy, _router):
        external = await h.get_json(f"/apis/{EXTERNAL}")
        custom = await h.get_json(f"/apis/{CUSTOM}")
    # keda contributes only what its pattern owns; legacy (the default) what nobody else owns
    assert names(external) == ["legacy_queue", "ours_queue", "s0-other", "s0-queue"]
    assert external["groupVersion"] == EXTERNAL
    assert names(custom) == ["pods/legacy_rps", "pods/ours_rps"]


async def test_a_routed_metric_is_forwarded_and_its_answer_passed_through() -> None:
    body = {**VALUES, "metadata": {}, "items": [{"metricName": "s0-queue", "value": "7"}]}
    async with routed() as (h, keda, legacy, _router):
        keda.answer(S0_PATH, 200, body)
        response = await h.client.get(S0_PATH, headers=ALICE)
        assert response.status == 200
        assert await response.read() == orjson.dumps(body)
    assert [s.path_qs for s in keda.metric_requests()] == [S0_PATH]
    assert legacy.metric_requests() == []
    assert h.providers.external.calls == []


async def test_the_backends_status_code_and_body_are_passed_through() -> None:
    refused = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server could not find the metric legacy_rps for pods",
        "reason": "NotFound",
        "code": 404,
    }
    async with routed() as (h, _keda, legacy, _router):
        legacy.answer(LEGACY_PATH, 404, refused)
        response = await h.client.get(LEGACY_PATH, headers=ALICE)
        assert response.status == 404
        assert await response.json() == refused
        legacy.answer(LEGACY_PATH, 500, {"kind": "Status", "code": 500})
        response = await h.client.get(LEGACY_PATH, headers=ALICE)
        assert response.status == 500


async def test_metrics_of_our_rules_are_served_here_even_when_the_default_lists_them() -> None:
    async with routed() as (h, _keda, legacy, _router):
        await h.get_json(OURS_PATH)
    assert legacy.metric_requests() == []
    assert len(h.providers.custom.calls) == 1


async def test_a_denied_user_never_reaches_the_backend() -> None:
    authorizer = TableAuthorizer(allowed={"bob"})
    async with routed(authorizer=authorizer) as (h, keda, _legacy, _router):
        response = await h.client.get(S0_PATH, headers=ALICE)
        assert response.status == 403
        assert "s0-queue" in (await response.json())["message"]
    assert keda.metric_requests() == []
    (user, attributes), *_ = authorizer.asked
    assert user == "alice"
    assert (attributes.api_group, attributes.resource, attributes.namespace) == (
        "external.metrics.k8s.io",
        "s0-queue",
        "x",
    )


async def test_forwarded_requests_carry_our_identity_not_the_callers(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("our-service-account-token\n")
    async with routed(extra=f"    tokenFile: {token}") as (h, keda, _legacy, _router):
        keda.answer(S0_PATH, 200, {**VALUES, "items": []})
        await h.get_json(S0_PATH)
    headers = keda.metric_requests()[0].headers
    assert headers["Authorization"] == "Bearer our-service-account-token"
    assert "X-Test-User" not in headers


async def test_a_down_backend_is_503_for_its_metrics_only() -> None:
    async with routed() as (h, keda, legacy, router):
        legacy.answer(LEGACY_PATH, 200, {"kind": "MetricValueList", "items": []})
        assert "s0-queue" in names(await h.get_json(f"/apis/{EXTERNAL}"))
        await keda.stop()
        response = await h.client.get(S0_PATH, headers=ALICE)
        assert response.status == 503
        answer = await response.json()
        assert answer["kind"] == "Status"
        assert answer["reason"] == "ServiceUnavailable"
        assert 'metrics backend "keda"' in answer["message"]
        await h.get_json(LEGACY_PATH)  # the other backend
        await h.get_json(OURS_PATH)  # and our own metrics
        ready = await h.client.get("/readyz", params={"verbose": ""})
        text = await ready.text()
        assert ready.status == 200
        assert "[-]route-backend-keda failed" in text
        assert "[+]route-backend-legacy ok" in text
        assert h.registry.get_sample_value("hpa_adapter_route_backend_up", {"backend": "keda"}) == 0
        assert (
            h.registry.get_sample_value(
                "hpa_adapter_route_requests_total", {"backend": "keda", "code": "503"}
            )
            == 1
        )
        discovery = await h.get_json(f"/apis/{EXTERNAL}")  # the last good list is kept
        assert "s0-queue" in names(discovery)
        assert router.backends()[0].up is False


async def test_a_backend_past_its_deadline_is_504() -> None:
    async with routed(backend_timeout="50ms") as (h, keda, _legacy, _router):
        release = keda.hold()
        response = await h.client.get(S0_PATH, headers=ALICE)
        release.set()
        assert response.status == 504
        assert (await response.json())["reason"] == "Timeout"


@dataclass(kw_only=True)
class CountingAuthorizer(TableAuthorizer):
    """Sets ``all_asked`` once ``expected`` questions were asked (a request that was authorized
    goes on to the backend without waiting for anything)."""

    expected: int
    all_asked: asyncio.Event = field(default_factory=asyncio.Event)

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> Decision:
        decision = await super().authorize(user, attributes)
        if len(self.asked) >= self.expected:
            self.all_asked.set()
        return decision


async def test_identical_concurrent_requests_share_one_backend_request() -> None:
    authorizer = CountingAuthorizer(expected=2)
    async with routed(authorizer=authorizer) as (h, keda, _legacy, _router):
        keda.answer(S0_PATH, 200, {**VALUES, "items": []})
        release = keda.hold()
        first = asyncio.ensure_future(h.client.get(S0_PATH, headers=ALICE))
        second = asyncio.ensure_future(h.client.get(S0_PATH, headers=ALICE))
        async with asyncio.timeout(5):
            await keda.wait_for_metric_requests(1)
            await authorizer.all_asked.wait()
        release.set()
        statuses = [(await first).status, (await second).status]
    assert statuses == [200, 200]
    assert len(keda.metric_requests()) == 1


async def test_a_rule_that_serves_a_routed_name_is_refused_at_load() -> None:
    config = load_rules(routes_file("http://keda", "http://legacy"), source="rules.yaml")
    router = Router(registry=CollectorRegistry(), clock=FakeClock(), source="rules.yaml")
    local = {EXTERNAL: orjson.dumps(resource_list(EXTERNAL, "s0-queue"))}
    with pytest.raises(RuleConfigError, match="s0-queue served by the rules and also matched"):
        router.prepare(config.routes, local.get)
    assert router.routes is None


async def test_a_backend_whose_files_cannot_be_read_is_refused_at_load(tmp_path: Path) -> None:
    text = routes_file(
        "https://keda", "http://legacy", extra=f"    caFile: {tmp_path / 'missing.crt'}"
    )
    router = Router(registry=CollectorRegistry(), clock=FakeClock(), source="rules.yaml")
    with pytest.raises(RuleConfigError, match=r"routes.backends\[0\] \(keda\): TLS"):
        router.adopt(load_rules(text, source="rules.yaml").routes)


async def test_no_routes_leaves_every_request_here() -> None:
    router = Router(registry=CollectorRegistry(), clock=FakeClock())
    router.adopt(None)
    async with serve(local_providers(), router=router) as h:
        await h.get_json(OURS_PATH)
        discovery = await h.get_json(f"/apis/{CUSTOM}")
    assert names(discovery) == ["pods/ours_rps"]


async def test_a_path_with_dot_segments_is_not_forwarded() -> None:
    async with routed() as (h, _keda, legacy, _router):
        reader, writer = await asyncio.open_connection(h.client.host, h.client.port)
        path = f"/apis/{CUSTOM}/namespaces/x/pods/../legacy_rps"
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nX-Test-User: alice\r\n\r\n".encode())
        await writer.drain()
        answer = await reader.read(4096)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"is not forwarded" in answer
    assert legacy.metric_requests() == []


async def test_a_relisted_rule_that_claims_a_routed_name_leaves_it_to_the_route() -> None:
    async with routed() as (h, _keda, _legacy, _router):
        h.providers.documents[EXTERNAL] = orjson.dumps(resource_list(EXTERNAL, "s0-queue", "x"))
        external = await h.get_json(f"/apis/{EXTERNAL}")
        conflicts = h.registry.get_sample_value(
            "hpa_adapter_route_conflicts", {"group": "external.metrics.k8s.io"}
        )
    assert names(external).count("s0-queue") == 1  # keda's entry, not ours
    assert "x" in names(external)
    assert conflicts == 1
