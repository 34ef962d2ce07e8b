"""Shared setup for provider tests against the fake Prometheus: a small rule file, the series a
relist finds, and a responder that answers value queries and staleness probes from tables (and
the two merged into one query, as custom metrics send them: ``merged_parts``)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import MetricProviders, ValueSettings, build_providers
from adapter.rules import load_rules
from tests.adapter.providers.fake_pods import FakePodLister
from tests.fakes.clock import FakeClock
from tests.fakes.prometheus import FakePrometheus, FakeSample

EVAL_SECONDS = 1_800_000_000.0

RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'errors_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
"""

SERIES = [
    {"__name__": "http_requests_total", "namespace": "ns1", "pod": "web-1"},
    {"__name__": "http_requests_total", "namespace": "ns1", "pod": "web-2"},
    {"__name__": "errors_total", "namespace": "ns1", "pod": "web-1"},
    {"__name__": "queue_messages_ready", "queue": "orders"},
]

SERIES_BY_MATCH = {
    'http_requests_total{namespace!="",pod!=""}': SERIES[:2],
    'errors_total{namespace!="",pod!=""}': SERIES[2:3],
    'queue_messages_ready{queue!=""}': SERIES[3:],
}

MERGED = re.compile(
    r'label_replace\(\n(?P<value>.*)\n, "hpa_adapter_part", "value", "", ""\)\n'
    r'or label_replace\(\n(?P<probe>.*)\n, "hpa_adapter_part", "probe", "", ""\)',
    re.DOTALL,
)


def merged_parts(query: str) -> tuple[str, str] | None:
    """The value query and the probe of a merged query (None for any other query)."""
    match = MERGED.fullmatch(query)
    return None if match is None else (match["value"], match["probe"])


def tagged(samples: list[FakeSample], part: str) -> list[FakeSample]:
    """What ``label_replace(..., "hpa_adapter_part", part, "", "")`` makes of ``samples``."""
    return [
        FakeSample(
            {**sample.labels, "hpa_adapter_part": part},
            sample.value,
            timestamp_seconds=sample.timestamp_seconds,
        )
        for sample in samples
    ]


PODS = {"ns1": {"web-1": {"app": "web"}, "web-2": {"app": "web"}, "db-0": {"app": "db"}}}


@dataclass
class Tables:
    """pod -> value text of the value query; pod -> sample age for the probe."""

    values: dict[str, str] = field(default_factory=dict)
    ages: dict[str, float] = field(default_factory=dict)
    external: dict[str, str] = field(default_factory=dict)  # queue -> value text
    external_age: float | None = 1.0

    def respond(self, query: str) -> list[FakeSample]:
        """As Prometheus groups: a batched query (``by (namespace,pod)``) keeps the namespace
        label, a per-request one (``by (pod)``) only the pod."""
        parts = merged_parts(query)
        if parts is not None:
            value, probe = parts
            return tagged(self.respond(value), "value") + tagged(self.respond(probe), "probe")
        if query.startswith("max by"):
            return [
                FakeSample(
                    {**_namespace(query), "pod": pod},
                    repr(EVAL_SECONDS - age),
                    timestamp_seconds=EVAL_SECONDS,
                )
                for pod, age in self.ages.items()
            ]
        if query.startswith("max(timestamp"):
            if self.external_age is None:
                return []
            return [
                FakeSample(
                    {},
                    repr(EVAL_SECONDS - self.external_age),
                    timestamp_seconds=EVAL_SECONDS,
                )
            ]
        if "queue_messages_ready" in query:
            return [FakeSample({"queue": queue}, value) for queue, value in self.external.items()]
        return [
            FakeSample({**_namespace(query), "pod": pod}, value)
            for pod, value in self.values.items()
        ]


def _namespace(query: str) -> dict[str, str]:
    return {"namespace": "ns1"} if "namespace,pod" in query else {}


@dataclass(kw_only=True)
class Setup:
    prometheus: FakePrometheus
    providers: MetricProviders
    tables: Tables
    pods: FakePodLister
    clock: FakeClock
    registry: CollectorRegistry


@asynccontextmanager
async def scenario(settings: ValueSettings | None = None) -> AsyncIterator[Setup]:
    tables = Tables()
    async with (
        FakePrometheus(
            series_by_match=dict(SERIES_BY_MATCH),
            responder=tables.respond,
            eval_time_seconds=EVAL_SECONDS,
        ) as fake,
        PrometheusClient(PrometheusConnection(fake.url, timeout_seconds=5.0)) as client,
    ):
        pods = FakePodLister(PODS)
        clock = FakeClock()
        registry = CollectorRegistry()
        providers = build_providers(
            load_rules(RULES, source="test"),
            client,
            pod_lister=pods,
            settings=settings,
            clock=clock,
            registry=registry,
            relist_interval_seconds=60.0,
        )
        await providers.relister.relist()
        yield Setup(
            prometheus=fake,
            providers=providers,
            tables=tables,
            pods=pods,
            clock=clock,
            registry=registry,
        )
        await providers.custom.wait_for_renewals()
        await providers.external.wait_for_renewals()
