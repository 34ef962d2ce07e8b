"""The discovery-backed REST mapper: CRDs in rules, described objects and LISTs of custom resources.

A fake API server answers discovery (``/api``, ``/apis``, ``/api/v1``, ``/apis/<gv>``) from a
table that a test changes to install a CRD; the rules and the providers then run on the mapper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import MetricFetchError, build_providers, custom_metric_request
from adapter.rules import GroupResource, RuleConfigError, load_rules, namers_from_config
from adapter.server.pods import ApiObjectNameLister
from adapter.server.reload import ReloadingMetrics
from adapter.server.restmapper import RegeneratingRESTMapper, group_versions
from adapter.server.telemetry import ServerMetrics
from tests.adapter.providers.fake_pods import FakePodLister
from tests.adapter.providers.scenario import EVAL_SECONDS, merged_parts
from tests.fakes.clock import FakeClock
from tests.fakes.prometheus import FakePrometheus, FakeSample

CORE: list[dict[str, Any]] = [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod"},
    {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod"},
    {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace"},
    {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event"},
    {"name": "nodes", "singularName": "", "namespaced": False, "kind": "Node"},
]
APPS: list[dict[str, Any]] = [
    {"name": "deployments", "singularName": "deployment", "namespaced": True, "kind": "Deployment"}
]
EVENTS: list[dict[str, Any]] = [
    {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event"}
]
BRANDS: list[dict[str, Any]] = [
    {"name": "brands", "singularName": "brand", "namespaced": True, "kind": "Brand"}
]


class FakeDiscovery:
    """``KubeApi`` serving discovery documents and LISTs of objects; calls recorded."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, list[dict[str, Any]]]] = {
            "apps": {"apps/v1": APPS},
            "events.k8s.io": {"events.k8s.io/v1": EVENTS},
        }
        self.failing: set[str] = set()
        self.objects: dict[str, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, Mapping[str, str] | None]] = []

    def install_brands(self) -> None:
        self.groups["cheese.io"] = {"cheese.io/v1": BRANDS, "cheese.io/v1alpha1": BRANDS}

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        self.calls.append((path, params))
        if path in self.failing:
            raise RuntimeError(f"503 for {path}")
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"]}
        if path == "/apis":
            return {
                "kind": "APIGroupList",
                "groups": [
                    {
                        "name": name,
                        "versions": [{"groupVersion": gv} for gv in versions],
                        "preferredVersion": {"groupVersion": next(iter(versions))},
                    }
                    for name, versions in self.groups.items()
                ],
            }
        if path == "/api/v1":
            return {"groupVersion": "v1", "resources": CORE}
        for versions in self.groups.values():
            for gv, resources in versions.items():
                if path == f"/apis/{gv}":
                    return {"groupVersion": gv, "resources": resources}
        if path in self.objects:
            return {"items": self.objects[path]}
        raise LookupError(f"404 for {path}")

    async def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("discovery never posts")


BRAND_RULES = """
rules:
- seriesQuery: 'cheese_sold{namespace!="",brand!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      brand: {group: cheese.io, resource: brand}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""

TEMPLATE_RULES = """
rules:
- seriesQuery: '{__name__=~"^cheese_.*",namespace!=""}'
  resources:
    template: <<.Resource>>
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def _mapper(api: FakeDiscovery) -> RegeneratingRESTMapper:
    return RegeneratingRESTMapper(api, clock=FakeClock(), interval_seconds=60.0)


def test_group_versions_are_read_in_priority_order() -> None:
    core = {"versions": ["v2", "v1"]}
    groups = {
        "groups": [
            {
                "name": "a.io",
                "versions": [{"groupVersion": "a.io/v1beta1"}, {"groupVersion": "a.io/v1"}],
                "preferredVersion": {"groupVersion": "a.io/v1"},
            }
        ]
    }
    assert group_versions(core, groups) == ["v1", "v2", "a.io/v1", "a.io/v1beta1"]


async def test_a_custom_resource_resolves_once_discovery_lists_it() -> None:
    api = FakeDiscovery()
    mapper = _mapper(api)
    await mapper.regenerate()
    rules = load_rules(BRAND_RULES, source="brands.yaml").rules
    with pytest.raises(RuleConfigError) as missing:
        namers_from_config(rules, mapper, source="brands.yaml")
    assert str(missing.value) == (
        'brands.yaml: rules[0] (seriesQuery \'cheese_sold{namespace!="",brand!=""}\'): '
        "resources.overrides.brand: unable to normalize group-resource brand.cheese.io: "
        "no matches for brand.cheese.io"
    )
    api.install_brands()
    await mapper.regenerate()
    namer = namers_from_config(rules, mapper, source="brands.yaml")[0]
    assert namer.resource_for_label("brand") == GroupResource("cheese.io", "brands")
    assert mapper.kind_for(GroupResource("cheese.io", "brands")) == ("cheese.io/v1", "Brand")
    assert mapper.kind_for(GroupResource("", "pods")) == ("/v1", "Pod")
    assert mapper.resource_singularizer("nodes") == "node"  # guessed from the kind


async def test_partial_names_resolve_by_discovery_priority_and_subresources_are_left_out() -> None:
    mapper = _mapper(FakeDiscovery())
    await mapper.regenerate()
    assert mapper.resource_for(GroupResource("", "event")) == GroupResource("", "events")
    assert mapper.resource_for(GroupResource("events.k8s.io", "events")) == GroupResource(
        "events.k8s.io", "events"
    )
    assert mapper.resource_for(GroupResource("", "Deployment")) == GroupResource(
        "apps", "deployments"
    )
    with pytest.raises(MetricFetchError) as subresource:
        mapper.kind_for(GroupResource("", "pods/status"))
    assert subresource.value.detail == "no matches for pods/status"


async def test_a_failing_group_version_is_left_out_and_a_failed_discovery_keeps_the_last() -> None:
    api = FakeDiscovery()
    api.install_brands()
    api.failing.add("/apis/apps/v1")
    mapper = _mapper(api)
    await mapper.regenerate()
    assert mapper.resource_for(GroupResource("", "brands")) == GroupResource("cheese.io", "brands")
    with pytest.raises(MetricFetchError) as left_out:
        mapper.kind_for(GroupResource("", "deployments"))
    assert left_out.value.detail == "no matches for deployments"
    api.failing.add("/apis")
    with pytest.raises(RuntimeError):
        await mapper.regenerate()
    assert mapper.resource_for(GroupResource("", "brand")) == GroupResource("cheese.io", "brands")


async def test_discovery_is_read_again_every_interval() -> None:
    api = FakeDiscovery()
    clock = FakeClock()
    mapper = RegeneratingRESTMapper(api, clock=clock, interval_seconds=60.0)
    await mapper.regenerate()
    namer = namers_from_config(load_rules(TEMPLATE_RULES, source="t").rules, mapper)[0]
    assert namer.resource_for_label("brand") is None
    api.install_brands()
    task = asyncio.create_task(mapper.run())
    try:
        await clock.settle()
        await clock.advance(59.0)
        assert mapper.generations == 1
        await clock.advance(1.0)
        await clock.settle()
        assert mapper.generations == 2
    finally:
        task.cancel()
    assert namer.resource_for_label("brand") == GroupResource("cheese.io", "brands")


async def test_a_reload_reads_discovery_first_so_a_new_crd_lets_the_file_load(
    tmp_path: Path,
) -> None:
    api = FakeDiscovery()
    mapper = _mapper(api)
    await mapper.regenerate()
    path = tmp_path / "config.yaml"
    path.write_text("rules: []\n")
    built: list[int] = []

    def build(config: Any, registry: CollectorRegistry) -> Any:
        namers_from_config(config.rules, mapper, source=str(path))
        built.append(len(config.rules))

        class Relister:
            async def relist(self) -> None:
                return None

        class Providers:
            relister = Relister()

        return Providers()

    metrics = ReloadingMetrics(
        path,
        build,
        registry=CollectorRegistry(),
        server_metrics=ServerMetrics(CollectorRegistry()),
        clock=FakeClock(),
        before_load=mapper.regenerate,
    )
    metrics.load_initial()
    path.write_text(BRAND_RULES)
    assert not await metrics.reload()
    api.install_brands()
    assert await metrics.reload()
    assert built == [0, 1]


def _brand_answer(query: str) -> list[FakeSample]:
    parts = merged_parts(query)
    assert parts is not None, query
    values = {"gouda": "7", "brie": "2"}
    out = []
    for part, one in zip(("value", "probe"), parts, strict=True):
        for name, value in values.items():
            if name in one:
                sample = repr(EVAL_SECONDS - 1) if part == "probe" else value
                out.append(
                    FakeSample(
                        {"brand": name, "namespace": "shop", "hpa_adapter_part": part}, sample
                    )
                )
    return out


async def test_custom_resource_metrics_name_the_discovered_kind_and_list_its_objects() -> None:
    api = FakeDiscovery()
    api.install_brands()
    api.objects["/apis/cheese.io/v1/namespaces/shop/brands"] = [{"metadata": {"name": "gouda"}}]
    mapper = _mapper(api)
    await mapper.regenerate()
    async with (
        FakePrometheus(
            series_by_match={
                'cheese_sold{namespace!="",brand!=""}': [
                    {"__name__": "cheese_sold", "namespace": "shop", "brand": "gouda"},
                    {"__name__": "cheese_sold", "namespace": "shop", "brand": "brie"},
                ]
            },
            responder=_brand_answer,
            eval_time_seconds=EVAL_SECONDS,
        ) as fake,
        PrometheusClient(PrometheusConnection(fake.url, timeout_seconds=5.0)) as client,
    ):
        providers = build_providers(
            load_rules(BRAND_RULES, source="brands.yaml"),
            client,
            pod_lister=FakePodLister({}),
            object_lister=ApiObjectNameLister(api, mapper),
            mapper=mapper,
            kinds=mapper,
            clock=FakeClock(),
        )
        await providers.relister.relist()
        listed = providers.discovery("custom.metrics.k8s.io/v1beta2") or b""
        request = custom_metric_request(
            namespace="shop", resource="brands.cheese.io", name="*", metric="cheese_sold"
        )
        by_selector = await providers.custom.get_metric_by_selector(
            request.info, namespace="shop", selector="tier=top"
        )
        one = await providers.custom.get_metric_by_name(request.info, "brie", namespace="shop")
    assert b'"brands.cheese.io/cheese_sold"' in listed
    assert [(v.described_object.name, str(v.value)) for v in by_selector] == [("gouda", "7")]
    assert by_selector[0].described_object.api_version == "cheese.io/v1"
    assert by_selector[0].described_object.kind == "Brand"
    assert (one.described_object.api_version, str(one.value)) == ("cheese.io/v1", "2")
    assert ("/apis/cheese.io/v1/namespaces/shop/brands", {"labelSelector": "tier=top"}) in api.calls
