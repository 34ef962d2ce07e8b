"""The relisted metric index: selectors, atomic swap, failure handling, discovery bytes, loop.

Upstream counterparts: prometheus-adapter ``cachingMetricsLister.updateMetrics`` (one series call
per distinct selector over ``[now - maxAge, now]``; a failure keeps the old registry) and
custom-metrics-apiserver's resource listers (the APIResource shape).
"""

from __future__ import annotations

import asyncio

import orjson
import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import (
    CUSTOM_V1BETA1,
    CUSTOM_V1BETA2,
    EXTERNAL_V1BETA1,
    MetricRelister,
    RelistError,
)
from adapter.rules import StaticRESTMapper, load_rules, namers_from_config
from tests.adapter.providers.scenario import RULES, SERIES_BY_MATCH, scenario
from tests.fakes.clock import FakeClock
from tests.fakes.prometheus import FakePrometheus


async def test_one_series_call_per_distinct_selector_over_max_age() -> None:
    async with scenario() as setup:
        calls = [r for r in setup.prometheus.requests if r.path == "/api/v1/series"]
    assert sorted(call.params_named("match[]")[0] for call in calls) == [
        'errors_total{namespace!="",pod!=""}',
        'http_requests_total{namespace!="",pod!=""}',
        'queue_messages_ready{queue!=""}',
    ]
    # max age defaults to the relist interval (60 s here), measured on the injected clock.
    assert {call.param("start") for call in calls} == {
        str(round(setup.clock.now().timestamp() - 60))
    }


async def test_discovery_documents_are_prebuilt_in_go_field_order() -> None:
    async with scenario() as setup:
        index = setup.providers.relister.index
    v1beta2 = orjson.loads(index.discovery[CUSTOM_V1BETA2])
    assert list(v1beta2) == ["kind", "apiVersion", "groupVersion", "resources"]
    assert v1beta2["groupVersion"] == "custom.metrics.k8s.io/v1beta2"
    assert v1beta2["resources"][0] == {
        "name": "namespaces/errors_total",
        "singularName": "",
        "namespaced": False,
        "kind": "MetricValueList",
        "verbs": ["get"],
    }
    assert [r["name"] for r in v1beta2["resources"]] == [
        "namespaces/errors_total",
        "namespaces/http_requests_per_second",
        "pods/errors_total",
        "pods/http_requests_per_second",
    ]
    v1beta1 = orjson.loads(index.discovery[CUSTOM_V1BETA1])
    assert v1beta1["resources"] == v1beta2["resources"]
    assert orjson.loads(index.discovery[EXTERNAL_V1BETA1]) == {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "external.metrics.k8s.io/v1beta1",
        "resources": [
            {
                "name": "queue_messages_ready",
                "singularName": "",
                "namespaced": True,
                "kind": "ExternalMetricValueList",
                "verbs": ["get"],
            }
        ],
    }
    assert (index.generation, index.custom_series_count, index.external_series_count) == (1, 3, 1)


async def test_a_failed_relist_keeps_the_previous_index() -> None:
    async with scenario() as setup:
        relister = setup.providers.relister
        before = relister.index
        setup.prometheus.fail_api(
            "/api/v1/series", status=503, error_type="unavailable", error="no store"
        )
        with pytest.raises(RelistError, match="unable to update list of all metrics"):
            await relister.relist()
        assert relister.index is before
        setup.prometheus.series_by_match = {}
        after = await relister.relist()
        errors = setup.registry.get_sample_value(
            "prometheus_adapter_relists_total", {"result": "error"}
        )
    assert after.generation == before.generation + 1
    assert after.custom.list_all_metrics() == []
    assert orjson.loads(after.discovery[EXTERNAL_V1BETA1])["resources"] == []
    assert errors == 1


async def until_sleeping(clock: FakeClock) -> None:
    """Yield to the loop until the relist loop sleeps on the fake clock (its request is done)."""
    while clock.sleeper_count == 0:  # noqa: ASYNC110 - the fake clock has no event to await
        await asyncio.sleep(0.005)


async def test_the_loop_relists_every_interval_and_survives_failures() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    config = load_rules(RULES, source="test")
    mapper = StaticRESTMapper.builtin()
    async with (
        FakePrometheus(series_by_match=dict(SERIES_BY_MATCH)) as fake,
        PrometheusClient(PrometheusConnection(fake.url)) as client,
    ):
        relister = MetricRelister(
            client,
            custom_namers=namers_from_config(config.rules, mapper),
            clock=clock,
            relist_interval_seconds=30.0,
            registry=registry,
        )
        assert relister.age_seconds() == -1.0
        fake.fail_api("/api/v1/series", status=503, error_type="unavailable", error="down")
        task = asyncio.create_task(relister.run())
        await fake.wait_for_requests(2)  # the first pass failed on one selector
        await clock.settle()
        await asyncio.wait_for(until_sleeping(clock), 5)
        assert not relister.ready
        await clock.advance(30.0)
        await asyncio.wait_for(relister.wait_ready(), 5)
        assert relister.index.generation == 1
        await clock.advance(5.0)
        age = registry.get_sample_value("prometheus_adapter_relist_age_seconds")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert age == 5.0
    assert registry.get_sample_value("prometheus_adapter_series", {"kind": "custom"}) == 3
