"""Batched answers equal per-request answers: a differential test against a real Prometheus.

Two custom-metrics providers read the same Prometheus (Debian's, via tests/lab/prometheus.py,
fed synthetic series by ``promtool``): one with batched evaluation, one answering every request
with its own query. Both are pinned to the same evaluation time (the batched one through its
clock, the per-request one through a querier that sends that time), and a few hundred random
requests (random metric, namespace, objects by name or by label selector, metric selectors
including ones that cannot be batched) must get the same outcome from both: the same values,
timestamps, windows and selectors in the same order, or the same NotFound with the same cause
(an empty result is not a 0; a stale sample, a NaN and an object Prometheus has nothing for each
keep their own cause).
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime

import orjson
import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.prometheus.results import InstantResult
from adapter.providers import (
    BatchSettings,
    MetricPolicy,
    MetricProviders,
    ProviderError,
    ValueSettings,
    build_providers,
    custom_metric_request,
)
from adapter.rules import CustomMetricInfo, Series, load_rules
from adapter.server.wire import custom_value_list
from tests.adapter.providers.fake_pods import FakePodLister
from tests.adapter.providers.queriers import InstantOnlyQuerier
from tests.lab.prometheus import PrometheusServer

RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'queue_depth{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'max by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>,kind!="ignored"})'
- seriesQuery: 'queue_idle{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'latency_bucket{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_bucket$", as: "${1}_p90"}
  metricsQuery: >-
    histogram_quantile(0.9, sum by (le, <<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>}))
- seriesQuery: 'node_temperature_celsius{node!=""}'
  resources:
    overrides:
      node: {resource: node}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
resourceRules:
  cpu:
    containerQuery: >-
      sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m]))
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_seconds_total{<<.LabelMatchers>>}[1m]))'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>})'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  window: 1m
"""

NAMESPACES = ("alpha", "beta", "gamma")
PODS_PER_NAMESPACE = 12
NODES = ("node-a", "node-b", "node-c")
STEP_SECONDS = 5
HISTORY_SECONDS = 300
FUTURE_SECONDS = 240
REQUESTS = 300
METRICS = ("http_requests_per_second", "queue_depth", "queue_idle", "latency_p90")


def _pods() -> dict[str, dict[str, dict[str, str]]]:
    return {
        namespace: {
            f"pod-{index}": {"app": "web" if index % 2 else "db", "tier": str(index % 3)}
            for index in range(PODS_PER_NAMESPACE + 2)  # the last two have no series at all
        }
        for namespace in NAMESPACES
    }


def openmetrics(start: int, seed: int) -> str:
    """Counters, gauges and histograms per pod; some pods NaN, some stale, some absent."""
    chooser = random.Random(seed)
    end = start + FUTURE_SECONDS
    families: dict[str, list[tuple[str, float | str, float, int]]] = {}

    def add(name: str, labels: str, value: float | str, slope: float, until: int) -> None:
        families.setdefault(name, []).append((labels, value, slope, until))

    for namespace in NAMESPACES:
        for index in range(PODS_PER_NAMESPACE):
            pod = f'namespace="{namespace}",pod="pod-{index}"'
            until = start - 180 if index == 7 else end  # pod-7's series ended: stale
            for method in ("GET", "POST"):
                slope = chooser.choice((0.0, 0.25, 0.5, 1.5, 3.0))
                add("http_requests_total", f'{pod},method="{method}"', 0.0, slope, until)
            depth: float | str = "NaN" if index == 5 else chooser.randint(0, 50)
            add("queue_depth", f'{pod},kind="main"', depth, 0.0, until)
            add("queue_depth", f'{pod},kind="ignored"', 1000.0, 0.0, until)
            if index % 4 == 0:
                add("queue_idle", pod, float(chooser.randint(1, 9)), 0.0, until)
            for container in ("app", "sidecar")[: 1 + index % 2]:
                labels = f'{pod},container="{container}"'
                cores = chooser.choice((0.0, 0.1, 0.25, 2.0))
                add("container_cpu_usage_seconds_total", labels, 0.0, cores, until)
                memory: float | str = "NaN" if index == 3 else float(chooser.randint(1, 9) << 20)
                if index != 9:  # pod-9: CPU only, so no metrics
                    add("container_memory_working_set_bytes", labels, memory, 0.0, until)
            total = 0
            for bound in ("0.1", "0.5", "1", "+Inf"):
                total += chooser.randint(0, 20)
                add("latency_bucket", f'{pod},le="{bound}"', float(total), 0.0, until)
        # series of the namespace without a pod label: the batched query across namespaces
        # has no pod matcher, so they are one more group of its answer, which no request reads
        add("http_requests_total", f'namespace="{namespace}",method="GET"', 0.0, 2.0, end)
        add("queue_depth", f'namespace="{namespace}",kind="main"', 7.0, 0.0, end)
    for node in NODES:
        add("node_temperature_celsius", f'node="{node}"', chooser.uniform(30, 80), 0.0, end)
        add("node_cpu_seconds_total", f'node="{node}"', 0.0, chooser.uniform(0, 4), end)
        if node != "node-c":
            add("node_memory_working_set_bytes", f'node="{node}"', float(2 << 30), 0.0, end)
    out: list[str] = []
    for name, series in families.items():
        out.append(f"# TYPE {name} gauge")
        for labels, value, slope, until in series:
            for t in range(start - HISTORY_SECONDS, until + 1, STEP_SECONDS):
                point = value if isinstance(value, str) else value + slope * (t - start)
                out.append(f"{name}{{{labels}}} {point} {t}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


class PinnedClock:
    """The providers' ``Clock`` at one instant: the batched snapshot never expires and both
    providers see the same wall time (an object read as 0 is stamped with it)."""

    def __init__(self, at_seconds: float) -> None:
        self._at = datetime.fromtimestamp(at_seconds, UTC)

    def monotonic(self) -> float:
        return 0.0

    def now(self) -> datetime:
        return self._at

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("nothing sleeps in this test")


class PinnedQuerier(InstantOnlyQuerier):
    """A ``PrometheusQuerier`` sending every instant query at one evaluation time."""

    def __init__(self, client: PrometheusClient, at_seconds: float) -> None:
        self._client = client
        self._at = at_seconds
        self.queries = 0

    async def query(
        self,
        query: str,
        *,
        time_seconds: float | None = None,
        timeout_seconds: float | None = None,
        in_parts: bool = False,
    ) -> InstantResult:
        self.queries += 1
        return await self._client.query(
            query, time_seconds=self._at, timeout_seconds=timeout_seconds, in_parts=in_parts
        )

    async def series(
        self,
        matches: Sequence[str],
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
        timeout_seconds: float | None = None,
    ) -> Sequence[Series]:
        return await self._client.series(
            matches, start_seconds=start_seconds, timeout_seconds=timeout_seconds
        )


@pytest.fixture(scope="module")
def prometheus() -> Iterator[tuple[PrometheusServer, int]]:
    start = int(time.time())
    server = PrometheusServer()
    server.backfill_openmetrics(openmetrics(start, seed=23))
    with server:
        yield server, start


def _build(
    querier: PinnedQuerier,
    clock: PinnedClock,
    batching: BatchSettings | None,
    registry: CollectorRegistry | None = None,
) -> MetricProviders:
    return build_providers(
        load_rules(RULES, source="differential-rules"),
        querier,
        pod_lister=FakePodLister(_pods()),
        settings=ValueSettings(
            max_sample_age_seconds=60.0,
            probe_reuse_seconds=0.0,
            policies={"queue_idle": MetricPolicy(empty_is_zero=True)},
        ),
        clock=clock,
        registry=registry if registry is not None else CollectorRegistry(),
        max_age_seconds=900.0,
        batching=batching,
    )


Pair = tuple[
    MetricProviders, MetricProviders, tuple[PinnedQuerier, PinnedQuerier], CollectorRegistry
]
"""The batched providers, the per-request ones, their queriers, the batched ones' registry."""


@pytest.fixture
async def pair(
    prometheus: tuple[PrometheusServer, int],
) -> AsyncIterator[Pair]:
    server, start = prometheus
    at = float(start)
    clock = PinnedClock(at)
    async with PrometheusClient(PrometheusConnection(server.url, timeout_seconds=10.0)) as client:
        batched_querier = PinnedQuerier(client, at)
        registry = CollectorRegistry()
        batched = _build(batched_querier, clock, BatchSettings(max_age_seconds=7.5), registry)
        per_request_querier = PinnedQuerier(client, at)
        per_request = _build(per_request_querier, clock, None)
        await batched.relister.relist()
        await per_request.relister.relist()
        yield batched, per_request, (batched_querier, per_request_querier), registry


def _outcome(result: object) -> object:
    """The values' fields and the bodies the server answers them with."""
    if isinstance(result, ProviderError):
        return (type(result).__name__, str(result), getattr(result, "cause", None))
    assert isinstance(result, list)
    bodies = [
        orjson.dumps(custom_value_list(version, result)) for version in ("v1beta2", "v1beta1")
    ]
    return [
        bodies,
        [
            (
                value.described_object,
                value.metric,
                value.value_milli,
                value.timestamp,
                value.window_seconds,
                value.metric_selector,
            )
            for value in result
        ],
    ]


async def _ask(providers: MetricProviders, request: dict[str, object]) -> object:
    info = request["info"]
    assert isinstance(info, CustomMetricInfo)
    namespace = request["namespace"]
    assert namespace is None or isinstance(namespace, str)
    try:
        if request["name"] is not None:
            value = await providers.custom.get_metric_by_name(
                info,
                str(request["name"]),
                namespace=namespace,
                metric_selector=str(request["metric_selector"]),
            )
            return _outcome([value])
        return _outcome(
            await providers.custom.get_metric_by_selector(
                info,
                namespace=namespace,
                selector=str(request["selector"]),
                metric_selector=str(request["metric_selector"]),
            )
        )
    except ProviderError as error:
        return _outcome(error)


def _random_request(chooser: random.Random) -> dict[str, object]:
    if chooser.random() < 0.1:
        node = chooser.choice((*NODES, "node-missing"))
        info = custom_metric_request(
            namespace=None, resource="nodes", name=node, metric="node_temperature_celsius"
        ).info
        return {
            "info": info,
            "namespace": None,
            "name": node,
            "selector": "",
            "metric_selector": "",
        }
    namespace = chooser.choice(NAMESPACES)
    metric = chooser.choice(METRICS)
    by_name = chooser.random() < 0.5
    name = f"pod-{chooser.randrange(PODS_PER_NAMESPACE + 2)}" if by_name else None
    info = custom_metric_request(
        namespace=namespace, resource="pods", name=name or "*", metric=metric
    ).info
    metric_selector = chooser.choice(
        ("", "", "", "method=GET", "method!=POST", "kind=main", f"pod=pod-{chooser.randrange(4)}")
    )
    selector = chooser.choice(("", "app=web", "app=db", "tier in (0,2)", "app=none"))
    return {
        "info": info,
        "namespace": namespace,
        "name": name,
        "selector": selector,
        "metric_selector": metric_selector,
    }


async def test_batched_answers_equal_per_request_answers(
    pair: Pair,
) -> None:
    batched, per_request, (batched_querier, per_request_querier), registry = pair
    chooser = random.Random(2323)
    outcomes: dict[str, int] = {}
    for _ in range(REQUESTS):
        request = _random_request(chooser)
        expected = await _ask(per_request, request)
        got = await _ask(batched, request)
        assert got == expected, request
        kind = expected[0] if isinstance(expected, tuple) else "values"
        outcomes[str(kind)] = outcomes.get(str(kind), 0) + 1
    # the random requests reached values and NotFound both; the batched provider sent two
    # queries per batch (the value query and the staleness probe, at one evaluation time) and
    # one per request that falls back (the histogram rule, selectors on the pod label)
    assert outcomes.get("values", 0) > REQUESTS // 3
    assert outcomes.get("MetricNotFoundError", 0) > 10
    batcher = batched.custom.batcher
    assert batcher is not None

    def answered(path: str) -> float:
        found = registry.get_sample_value(
            "prometheus_adapter_batch_requests_total", {"api": "custom", "path": path}
        )
        return found or 0.0

    fallbacks = answered("per_request_rule") + answered("per_request_selector")
    assert answered("snapshot") > REQUESTS // 3
    assert answered("per_request_late") == 0
    assert batched_querier.queries == 2 * batcher.batch_count() + fallbacks
    assert batched_querier.queries < 0.65 * per_request_querier.queries


async def test_batched_resource_metrics_equal_per_request_ones(
    pair: Pair,
) -> None:
    batched, per_request, (batched_querier, _), _ = pair
    assert batched.resource is not None
    assert per_request.resource is not None
    assert batched.resource.batcher is not None
    chooser = random.Random(23)
    everything = [
        (namespace, f"pod-{index}")
        for namespace in NAMESPACES
        for index in range(PODS_PER_NAMESPACE + 2)
    ]
    answered = 0
    for _ in range(30):
        pods = chooser.sample(everything, chooser.randint(1, 12))
        expected = await per_request.resource.get_pod_metrics(pods)
        answered += len(expected)
        assert await batched.resource.get_pod_metrics(pods) == expected
        nodes = chooser.sample([*NODES, "node-missing"], chooser.randint(1, 4))
        assert await batched.resource.get_node_metrics(
            nodes
        ) == await per_request.resource.get_node_metrics(nodes)
    assert answered > 100  # most pods have both CPU and memory
    # every pod's CPU and memory, every node's: four queries, whatever the number of requests
    assert batched_querier.queries == 4
