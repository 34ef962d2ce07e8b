"""Test harness for the server: recording fake providers, lister, authenticator and authorizer,
and a TestClient over the real aiohttp app."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from aiohttp.test_utils import RawTestServer, TestClient
from prometheus_client import CollectorRegistry

from adapter.providers import (
    ContainerUsage,
    CustomMetricValue,
    ExternalMetricValue,
    NodeUsage,
    ObjectReference,
    PodUsage,
    ProviderError,
)
from adapter.rules import CustomMetricInfo, parse_metric_selector
from adapter.server.app import Server, request_handler
from adapter.server.authn import Credentials, UserInfo
from adapter.server.authz import AuthorizationError, Decision
from adapter.server.ports import ObjectMeta
from adapter.server.requestinfo import RequestAttributes
from adapter.server.router import Router
from adapter.server.telemetry import ServerMetrics
from hpa.core.quantity import Format, Quantity
from hpa.core.selector import parse_selector as parse_kube_selector
from tests.fakes.clock import FakeClock

STAMP = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def value(
    name: str,
    metric: str,
    *,
    milli: int,
    namespace: str = "x",
    kind: str = "Pod",
    api_version: str = "/v1",
    window_seconds: int | None = 60,
    metric_selector: str = "",
) -> CustomMetricValue:
    requirements = parse_metric_selector(metric_selector) or None
    return CustomMetricValue(
        described_object=ObjectReference(
            api_version=api_version, kind=kind, name=name, namespace=namespace
        ),
        metric=metric,
        value_milli=milli,
        timestamp=STAMP,
        window_seconds=window_seconds,
        metric_selector=requirements,
    )


@dataclass(kw_only=True)
class FakeCustom:
    """Answers from ``by_name``/``by_selector`` tables; ``error`` is raised when set."""

    by_name: dict[tuple[str, str | None, str, str], CustomMetricValue] = field(default_factory=dict)
    by_selector: list[CustomMetricValue] = field(default_factory=list)
    error: ProviderError | None = None
    calls: list[tuple[str, CustomMetricInfo, dict[str, Any]]] = field(default_factory=list)

    async def get_metric_by_name(
        self,
        info: CustomMetricInfo,
        name: str,
        *,
        namespace: str | None = None,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> CustomMetricValue:
        self.calls.append(
            (
                "name",
                info,
                {"name": name, "namespace": namespace, "metric_selector": metric_selector},
            )
        )
        if self.error is not None:
            raise self.error
        return self.by_name[(str(info.group_resource), namespace, name, info.metric)]

    async def get_metric_by_selector(
        self,
        info: CustomMetricInfo,
        *,
        namespace: str | None = None,
        selector: str = "",
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[CustomMetricValue]:
        self.calls.append(
            (
                "selector",
                info,
                {"namespace": namespace, "selector": selector, "metric_selector": metric_selector},
            )
        )
        if self.error is not None:
            raise self.error
        return list(self.by_selector)


@dataclass(kw_only=True)
class FakeExternal:
    values: list[ExternalMetricValue] = field(default_factory=list)
    error: ProviderError | None = None
    calls: list[tuple[str, str, str]] = field(default_factory=list)

    async def get_external_metric(
        self,
        metric: str,
        *,
        namespace: str,
        metric_selector: str = "",
        timeout_seconds: float | None = None,
    ) -> list[ExternalMetricValue]:
        self.calls.append((metric, namespace, metric_selector))
        if self.error is not None:
            raise self.error
        return list(self.values)


def cpu(milli: int) -> Quantity:
    return Quantity.from_milli(milli, Format.DECIMAL_SI)


def memory(milli: int) -> Quantity:
    return Quantity.from_milli(milli, Format.BINARY_SI)


@dataclass(kw_only=True)
class FakeResource:
    pods: dict[tuple[str, str], PodUsage] = field(default_factory=dict)
    nodes: dict[str, NodeUsage] = field(default_factory=dict)
    error: ProviderError | None = None
    pod_calls: list[list[tuple[str, str]]] = field(default_factory=list)

    async def get_pod_metrics(
        self, pods: Sequence[tuple[str, str]], *, timeout_seconds: float | None = None
    ) -> list[PodUsage]:
        self.pod_calls.append(list(pods))
        if self.error is not None:
            raise self.error
        return [self.pods[p] for p in pods if p in self.pods]

    async def get_node_metrics(
        self, nodes: Sequence[str], *, timeout_seconds: float | None = None
    ) -> list[NodeUsage]:
        if self.error is not None:
            raise self.error
        return [self.nodes[n] for n in nodes if n in self.nodes]


def pod_usage(namespace: str, name: str, *containers: tuple[str, int, int]) -> PodUsage:
    return PodUsage(
        namespace=namespace,
        name=name,
        timestamp=STAMP,
        window_milliseconds=30_000,
        containers=tuple(
            ContainerUsage(name=c, cpu=cpu(m), memory=memory(b * 1000)) for c, m, b in containers
        ),
    )


@dataclass(kw_only=True)
class FakeProviders:
    custom: FakeCustom = field(default_factory=FakeCustom)
    external: FakeExternal = field(default_factory=FakeExternal)
    resource: FakeResource | None = field(default_factory=FakeResource)
    documents: dict[str, bytes] = field(default_factory=dict)
    compressed: dict[str, bytes] = field(default_factory=dict)

    def discovery(self, group_version: str) -> bytes | None:
        return self.documents.get(group_version)

    def discovery_gzip(self, group_version: str) -> bytes | None:
        return self.compressed.get(group_version)


@dataclass
class FakeSource:
    current: FakeProviders = field(default_factory=FakeProviders)
    ready: bool = True


@dataclass
class FakeLister:
    pods: list[ObjectMeta] = field(default_factory=list)
    nodes: list[ObjectMeta] = field(default_factory=list)

    async def pods_for_selector(self, namespace: str, selector: str) -> Sequence[str]:
        return [p.name for p in await self.list_pods(namespace, selector)]

    async def list_pods(self, namespace: str | None, selector: str) -> Sequence[ObjectMeta]:
        parsed = parse_kube_selector(selector)
        return [
            p
            for p in self.pods
            if (namespace is None or p.namespace == namespace) and parsed.matches(p.labels)
        ]

    async def list_nodes(self, selector: str) -> Sequence[ObjectMeta]:
        parsed = parse_kube_selector(selector)
        return [n for n in self.nodes if parsed.matches(n.labels)]


class HeaderAuthenticator:
    """Authenticates ``X-Test-User`` (tests of routes, not of authentication)."""

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        name = credentials.headers.get("X-Test-User")
        return UserInfo(name, groups=("system:authenticated",)) if name else None


@dataclass(kw_only=True)
class TableAuthorizer:
    """Allows ``allowed`` users; raises when ``fail``; records every question."""

    allowed: set[str] = field(default_factory=lambda: {"alice"})
    fail: bool = False
    asked: list[tuple[str, RequestAttributes]] = field(default_factory=list)

    async def authorize(self, user: UserInfo, attributes: RequestAttributes) -> Decision:
        self.asked.append((user.name, attributes))
        if self.fail:
            raise AuthorizationError("connection refused")
        return Decision(user.name in self.allowed)


ALICE: Mapping[str, str] = {"X-Test-User": "alice"}


@dataclass(kw_only=True)
class Harness:
    client: TestClient[web.BaseRequest, None]
    providers: FakeProviders
    source: FakeSource
    lister: FakeLister
    authorizer: TableAuthorizer
    registry: CollectorRegistry
    clock: FakeClock

    async def get_json(self, path: str, *, status: int = 200, **params: str) -> Any:
        response = await self.client.get(path, params=params, headers=ALICE)
        assert response.status == status, await response.text()
        assert response.content_type == "application/json"
        return await response.json()


@asynccontextmanager
async def serve(
    providers: FakeProviders | None = None,
    *,
    lister: FakeLister | None = None,
    authorizer: TableAuthorizer | None = None,
    explain: Any = None,
    router: Router | None = None,
    registry: CollectorRegistry | None = None,
) -> AsyncIterator[Harness]:
    source = FakeSource(providers or FakeProviders())
    registry = registry if registry is not None else CollectorRegistry()
    clock = FakeClock()
    server = Server(
        metrics=source,
        lister=lister or FakeLister(),
        authenticator=HeaderAuthenticator(),
        authorizer=authorizer or TableAuthorizer(),
        clock=clock,
        registry=registry,
        server_metrics=ServerMetrics(registry),
        explain=explain,
        router=router,
        version="test",
    )
    raw: TestClient[web.BaseRequest, None] = TestClient(RawTestServer(request_handler(server)))
    async with raw as client:
        yield Harness(
            client=client,
            providers=source.current,
            source=source,
            lister=server.lister,  # type: ignore[arg-type]
            authorizer=server.authorizer,  # type: ignore[arg-type]
            registry=registry,
            clock=clock,
        )
