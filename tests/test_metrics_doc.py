"""``docs/metrics.md`` lists exactly what each component's ``/metrics`` exposes: every process's
registry is built in-process, as its composition root builds it, and its metric names and label
names are compared with the page's tables."""

from __future__ import annotations

import argparse
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import MetricProviders, build_providers
from adapter.rules import RuleConfig
from adapter.server.reload import ReloadingMetrics
from adapter.server.router import Router
from adapter.server.telemetry import ServerMetrics
from hpa.app import controller as controller_app
from hpa.app import recommender as recommender_app
from hpa.app import updater as updater_app
from hpa.app import webhook as webhook_app
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.kube.client import ClientMetrics, KubeClient
from hpa.kube.runtime import register_task_gauge
from hpa.kube.tls import write_self_signed
from tests.fakes.clock import FakeClock

DOC = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
SECTIONS = {
    "controller": "## `hpa controller`",
    "adapter": "## `hpa adapter`",
    "admission": "## `hpa vpa admission`",
    "recommender": "## `hpa vpa recommender`",
    "updater": "## `hpa vpa updater`",
}
_ROW = re.compile(r"^\| `(?P<name>[a-z_:]+)` \| (?P<type>\w+) \| (?P<labels>[^|]*) \|")


def documented(section: str) -> dict[str, tuple[str, frozenset[str]]]:
    """``name -> (type, label names)`` of the rows under ``section`` (until the next ``## ``)."""
    rows: dict[str, tuple[str, frozenset[str]]] = {}
    inside = False
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            inside = line.strip() == section
            continue
        match = _ROW.match(line) if inside else None
        if match:
            labels = frozenset(re.findall(r"`([a-z0-9_]+)`", match["labels"]))
            rows[match["name"]] = (match["type"], labels)
    return rows


def exposed(registry: CollectorRegistry) -> dict[str, tuple[str, frozenset[str] | None]]:
    """``name -> (type, label names)`` as ``/metrics`` shows them (counters with ``_total``);
    the labels are ``None`` for a collector that re-exports another registry (the providers')."""
    found: dict[str, tuple[str, frozenset[str] | None]] = {}
    for collector in list(registry._collector_to_names):
        declared = getattr(collector, "_labelnames", None)
        for family in collector.collect():
            name = family.name + ("_total" if family.type == "counter" else "")
            found[name] = (family.type, None if declared is None else frozenset(declared))
    return found


@pytest.fixture
async def kube() -> AsyncIterator[tuple[KubeClient, CollectorRegistry]]:
    registry = CollectorRegistry()
    async with aiohttp.ClientSession() as session:
        client = KubeClient(
            session,
            "http://127.0.0.1:1",
            clock=FakeClock(auto_advance=True),
            metrics=ClientMetrics(registry),  # as load_client(registry=...) does
        )
        register_task_gauge(registry)  # as load_client(registry=...) does
        yield client, registry


class _NoPods:
    async def pods_for_selector(self, namespace: str, selector: str) -> list[str]:
        return []


async def controller_registry(client: KubeClient, registry: CollectorRegistry) -> None:
    settings = controller_app.ControllerAppSettings(horizontal=HorizontalControllerSettings())
    controller_app.build_app(settings, client, clock=FakeClock(), registry=registry)


async def adapter_registry(registry: CollectorRegistry, rules: Path) -> None:
    server_metrics = ServerMetrics(registry)
    prom = PrometheusClient(PrometheusConnection("http://127.0.0.1:1"), registry=registry)

    def build(config: RuleConfig, provider_registry: CollectorRegistry) -> MetricProviders:
        return build_providers(config, prom, pod_lister=_NoPods(), registry=provider_registry)

    router = Router(registry=registry, clock=FakeClock())
    metrics = ReloadingMetrics(
        rules,
        build,
        registry=registry,
        server_metrics=server_metrics,
        clock=FakeClock(),
        adopt=router.stage,
    )
    metrics.load_initial()
    await prom.close()


def admission_registry(client: KubeClient, registry: CollectorRegistry, tmp: Path) -> None:
    cert, key = write_self_signed(tmp)
    settings = webhook_app.AdmissionSettings(tls_cert_file=cert, tls_private_key=key)
    webhook_app.build_app(settings, client, clock=FakeClock(), registry=registry)


def _compare(section: str, found: Mapping[str, tuple[str, frozenset[str] | None]]) -> None:
    doc = documented(SECTIONS[section])
    assert sorted(doc) == sorted(found), "docs/metrics.md and /metrics differ in names"
    for name, (kind, labels) in found.items():
        assert doc[name][0] == kind, name
        assert labels is None or doc[name][1] == labels, name


async def test_the_controller_section_lists_its_metrics(
    kube: tuple[KubeClient, CollectorRegistry],
) -> None:
    client, registry = kube
    await controller_registry(client, registry)
    _compare("controller", exposed(registry))


async def test_the_adapter_section_lists_its_metrics(
    kube: tuple[KubeClient, CollectorRegistry], tmp_path: Path
) -> None:
    _client, registry = kube
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: []\n")
    await adapter_registry(registry, rules)
    _compare("adapter", exposed(registry))


async def test_the_admission_section_lists_its_metrics(
    kube: tuple[KubeClient, CollectorRegistry], tmp_path: Path
) -> None:
    client, registry = kube
    admission_registry(client, registry, tmp_path)
    _compare("admission", exposed(registry))


def test_the_controller_uses_upstream_names_for_upstream_metrics() -> None:
    doc = documented(SECTIONS["controller"])
    for name in (
        "horizontal_pod_autoscaler_controller_reconciliations_total",
        "horizontal_pod_autoscaler_controller_reconciliation_duration_seconds",
        "horizontal_pod_autoscaler_controller_metric_computation_total",
        "horizontal_pod_autoscaler_controller_metric_computation_duration_seconds",
        "horizontal_pod_autoscaler_controller_desired_replicas",
        "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers",
    ):
        assert name in doc
    assert documented(SECTIONS["adapter"])["apiserver_request_total"][1] >= {"verb", "code"}


class _NoUsage:
    async def containers_metrics(self) -> list[Any]:
        return []


def _parsed(add_flags: Any, settings_from_args: Any) -> Any:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return settings_from_args(parser.parse_args([]))


async def test_the_recommender_section_lists_its_metrics(
    kube: tuple[KubeClient, CollectorRegistry],
) -> None:
    client, registry = kube
    settings = _parsed(recommender_app.add_flags, recommender_app.settings_from_args)
    recommender_app.build_app(
        settings, client, clock=FakeClock(), registry=registry, metrics=_NoUsage()
    )
    _compare("recommender", exposed(registry))


async def test_the_updater_section_lists_its_metrics(
    kube: tuple[KubeClient, CollectorRegistry],
) -> None:
    client, registry = kube
    settings = _parsed(updater_app.add_flags, updater_app.settings_from_args)
    updater_app.build_app(settings, client, clock=FakeClock(), registry=registry)
    _compare("updater", exposed(registry))
