"""The batcher's freshness rules on an injected clock: served while younger than the max age,
renewed in the background past REFRESH_AHEAD of it, waited for past it, shared by concurrent
requests, forgotten when nobody asks, per namespace past ``max_series``; and the provider's
counters of requests answered from snapshots and per request."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import orjson
import pytest
from prometheus_client import CollectorRegistry

from adapter.prometheus.results import InstantResult, Sample, decode_instant, split_vector_answer
from adapter.prometheus.slicing import SLICE_BYTES, SLICE_SAMPLES
from adapter.providers import (
    BatchSettings,
    CustomMetricsProvider,
    MetricIndex,
    MetricRelister,
    ProviderMetrics,
    ValueSettings,
    custom_metric_request,
)
from adapter.providers.batch import (
    IDLE_INTERVALS,
    LATE_LIMIT,
    REFRESH_AHEAD,
    Batcher,
    BatchPlan,
    Snapshot,
    index_answer,
)
from adapter.rules import Series, StaticRESTMapper, load_rules, namers_from_config
from tests.adapter.providers.fake_pods import FakePodLister
from tests.adapter.providers.queriers import InstantOnlyQuerier
from tests.fakes.clock import FakeClock

PLAN = BatchPlan(
    'sum(x{namespace!="",pod!=""}) by (namespace,pod)',
    False,
    resource_label="pod",
    namespace_label="namespace",
    namespace=None,
)

PROBE = 'max by (namespace,pod) (timestamp(x{namespace!=""}))'
PROBED_PLAN = BatchPlan(
    'sum(x{namespace!=""}) by (namespace,pod)',
    False,
    resource_label="pod",
    namespace_label="namespace",
    namespace=None,
    probe=PROBE,
)


class ScriptedQuerier(InstantOnlyQuerier):
    """A ``PrometheusQuerier`` answering every instant query with ``samples`` (or the query's
    own entry of ``answers``); each query waits for ``gate`` when one is set (to hold an
    evaluation in flight)."""

    def __init__(self, samples: Sequence[Sample]) -> None:
        self.samples = tuple(samples)
        self.answers: dict[str, tuple[Sample, ...]] = {}
        self.queries: list[tuple[str, float | None]] = []
        self.gate: asyncio.Event | None = None
        self.parts: tuple[bytes, ...] = ()

    async def query(
        self,
        query: str,
        *,
        time_seconds: float | None = None,
        timeout_seconds: float | None = None,
        in_parts: bool = False,
    ) -> InstantResult:
        self.queries.append((query, time_seconds))
        if self.gate is not None:
            await self.gate.wait()
        if query in self.answers:
            return InstantResult("vector", self.answers[query], ())
        return InstantResult("vector", self.samples, self.parts)

    async def series(
        self,
        matches: Sequence[str],
        *,
        start_seconds: float | None = None,
        end_seconds: float | None = None,
        timeout_seconds: float | None = None,
    ) -> list[Series]:
        return [Series("x", {"namespace": "web", "pod": "p-0"})]


def _samples(count: int, value: str = "1") -> list[Sample]:
    return [
        Sample({"namespace": f"ns-{i % 2}", "pod": f"p-{i}"}, 100.0, value) for i in range(count)
    ]


def _batcher(
    querier: ScriptedQuerier,
    clock: FakeClock,
    *,
    max_series: int | None = None,
    metrics: ProviderMetrics | None = None,
    max_sample_age_seconds: float | None = None,
    probe_reuse_seconds: float = 0.0,
) -> Batcher:
    """A batcher with a 7.5 s max age."""
    return Batcher(
        querier,
        settings=BatchSettings(max_age_seconds=7.5, max_series=max_series),
        clock=clock,
        api="custom",
        metrics=metrics,
        max_sample_age_seconds=max_sample_age_seconds,
        probe_reuse_seconds=probe_reuse_seconds,
    )


async def test_served_from_memory_while_young_renewed_ahead_and_waited_for_when_old() -> None:
    querier = ScriptedQuerier(_samples(4))
    clock = FakeClock()
    batcher = _batcher(querier, clock)

    async def ask() -> object:
        return await batcher.snapshot("k", lambda: PLAN, family="k", timeout_seconds=None)

    first = await ask()
    assert len(querier.queries) == 1
    assert querier.queries[0][1] == clock.now().timestamp()  # evaluated at the adapter's now
    await clock.advance(REFRESH_AHEAD * 7.5 - 0.1)
    assert await ask() is first  # young: no query
    assert len(querier.queries) == 1
    await clock.advance(0.2)  # past REFRESH_AHEAD: the old snapshot, and one renewal behind it
    assert await ask() is first
    assert await ask() is first
    await batcher.wait_for_refreshes()
    assert len(querier.queries) == 2
    renewed = await ask()
    assert renewed is not first
    await clock.advance(7.6)  # older than the max age: the request waits for a new one
    assert await ask() is not renewed
    assert len(querier.queries) == 3


async def test_a_slow_evaluation_is_renewed_earlier_so_it_lands_in_time() -> None:
    querier = ScriptedQuerier(_samples(2))
    querier.gate = asyncio.Event()
    clock = FakeClock()
    batcher = _batcher(querier, clock)
    first = asyncio.create_task(
        batcher.snapshot("k", lambda: PLAN, family="k", timeout_seconds=None)
    )
    await clock.advance(3.0)  # the evaluation took 3 s
    querier.gate.set()
    snapshot = await first
    # 3 s after it was sent, past 7.5 - 2 x 3 = 1.5 s (REFRESH_AHEAD alone would wait for 5.6 s)
    assert await batcher.snapshot("k", lambda: PLAN, family="k", timeout_seconds=None) is snapshot
    await batcher.wait_for_refreshes()
    assert len(querier.queries) == 2  # renewed well before REFRESH_AHEAD of the max age


async def test_concurrent_requests_share_one_evaluation() -> None:
    querier = ScriptedQuerier(_samples(2))
    querier.gate = asyncio.Event()
    clock = FakeClock()
    batcher = _batcher(querier, clock)
    waiting = [
        asyncio.create_task(batcher.snapshot("k", lambda: PLAN, family="k", timeout_seconds=None))
        for _ in range(5)
    ]
    await clock.settle()
    querier.gate.set()
    snapshots = await asyncio.gather(*waiting)
    assert len(querier.queries) == 1
    assert all(snapshot is snapshots[0] for snapshot in snapshots)
    sample = querier.samples[1]
    assert dict(snapshots[0].values_in("ns-1")) == {
        "p-1": (sample.timestamp_seconds, sample.value_text)
    }
    assert snapshots[0].values_in("nowhere") == {}


async def test_a_batch_nobody_asks_for_is_not_evaluated_and_is_forgotten() -> None:
    querier = ScriptedQuerier(_samples(2))
    clock = FakeClock()
    batcher = _batcher(querier, clock)
    await batcher.snapshot("idle", lambda: PLAN, family="idle", timeout_seconds=None)
    await clock.advance(IDLE_INTERVALS * 7.5 * 3)
    assert len(querier.queries) == 1  # no request, no evaluation
    await batcher.snapshot("other", lambda: PLAN, family="other", timeout_seconds=None)
    assert batcher.batch_count() == 1  # "idle" was dropped


async def test_an_answer_over_max_series_makes_the_family_per_namespace() -> None:
    querier = ScriptedQuerier(_samples(10))
    clock = FakeClock()
    batcher = _batcher(querier, clock, max_series=5)
    await batcher.snapshot("k", lambda: PLAN, family="fam", timeout_seconds=None)
    assert "fam" in batcher.too_large


def test_batch_settings_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="max_age_seconds"):
        BatchSettings(max_age_seconds=-1)
    with pytest.raises(ValueError, match="max_series"):
        BatchSettings(max_series=0)
    assert not BatchSettings(max_age_seconds=0).enabled


RULES = """
rules:
- seriesQuery: 'x{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


async def _provider(
    querier: ScriptedQuerier, clock: FakeClock, registry: CollectorRegistry
) -> CustomMetricsProvider:
    """A batching provider of ``RULES`` (no staleness probe) for pod ``web/p-0``."""
    metrics = ProviderMetrics(registry)
    mapper = StaticRESTMapper.builtin()
    relister = MetricRelister(
        querier,
        custom_namers=namers_from_config(load_rules(RULES, source="t").rules, mapper),
        mapper=mapper,
        clock=clock,
        metrics=metrics,
    )
    index: MetricIndex = await relister.relist()
    assert index.custom.info
    return CustomMetricsProvider(
        querier,
        relister,
        pod_lister=FakePodLister({"web": {"p-0": {}}}),
        settings=ValueSettings(max_sample_age_seconds=None),
        clock=clock,
        metrics=metrics,
        batching=BatchSettings(),
    )


def _answered(registry: CollectorRegistry, path: str) -> float | None:
    """``prometheus_adapter_batch_requests_total`` of the custom API for ``path``."""
    return registry.get_sample_value(
        "prometheus_adapter_batch_requests_total", {"api": "custom", "path": path}
    )


X_P0 = custom_metric_request(namespace="web", resource="pods", name="p-0", metric="x").info


async def test_the_provider_counts_snapshot_answers_and_selector_fallbacks() -> None:
    querier = ScriptedQuerier([Sample({"namespace": "web", "pod": "p-0"}, 100.0, "2")])
    registry = CollectorRegistry()
    provider = await _provider(querier, FakeClock(), registry)
    info = X_P0
    for _ in range(3):
        value = await provider.get_metric_by_name(info, "p-0", namespace="web")
        assert value.value_milli == 2000
    batched = [query for query, _ in querier.queries if "by (namespace,pod)" in query]
    assert len(batched) == 1
    await provider.get_metric_by_name(info, "p-0", namespace="web", metric_selector="pod=p-0")
    assert _answered(registry, "snapshot") == 3
    assert _answered(registry, "per_request_selector") == 1


async def test_a_large_answer_indexed_part_by_part_is_the_whole_answer() -> None:
    samples = _samples(20_000)
    body = orjson.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [
                    {"metric": s.labels, "value": [s.timestamp_seconds, s.value_text]}
                    for s in samples
                ],
            },
        }
    )
    parts, envelope = split_vector_answer(body, part_bytes=SLICE_BYTES)
    tail = decode_instant(orjson.loads(envelope)["data"], endpoint="/api/v1/query")
    querier = ScriptedQuerier(tail.samples)
    querier.parts = tuple(parts)  # as PrometheusClient.query(..., in_parts=True) answers
    batcher = _batcher(querier, FakeClock())
    snapshot = await batcher.snapshot("k", lambda: PLAN, family="k", timeout_seconds=None)
    assert snapshot.series == 20_000
    assert snapshot.values == index_answer(PLAN, samples)[0]
    assert snapshot.values_in("ns-1")["p-19999"] == (100.0, "1")


async def test_a_late_renewal_is_not_waited_for_but_an_evaluation_after_idling_is() -> None:
    querier = ScriptedQuerier(_samples(2))
    clock = FakeClock()
    registry = CollectorRegistry()
    batcher = _batcher(querier, clock, metrics=ProviderMetrics(registry))

    def answered(path: str) -> float | None:
        return _answered(registry, path)

    async def unless_late() -> object:
        return await batcher.snapshot_unless_late(
            "k", lambda: PLAN, family="k", timeout_seconds=None
        )

    first = await unless_late()
    querier.gate = asyncio.Event()  # the renewal hangs
    await clock.advance(REFRESH_AHEAD * 7.5 + 0.1)
    assert await unless_late() is first  # young: served, the renewal starts behind it
    await clock.settle()
    assert len(querier.queries) == 2
    await clock.advance(2.0)  # past the max age, the renewal still in flight: late
    assert await unless_late() is first  # served, not waited for
    assert answered("snapshot_late") == 1
    await clock.advance((LATE_LIMIT - 1) * 7.5)  # past LATE_LIMIT max ages: not served at all
    assert await unless_late() is None
    assert answered("snapshot_late") == 1
    waiting = asyncio.create_task(
        batcher.snapshot("k", lambda: PLAN, family="k", timeout_seconds=None)
    )
    await clock.settle()
    assert not waiting.done()  # ``snapshot`` waits for the late renewal
    querier.gate.set()
    renewed = await waiting
    assert renewed is not first
    assert len(querier.queries) == 2  # the late renewal's answer, not a new query

    # idle past the max age with nothing in flight: the next request waits for a new
    # evaluation, and so does a request arriving while it runs (it was not late, only idle)
    querier.gate = asyncio.Event()
    await clock.advance(8.0)
    idle = [asyncio.create_task(unless_late()) for _ in range(2)]
    await clock.settle()
    assert len(querier.queries) == 3
    assert not any(task.done() for task in idle)
    querier.gate.set()
    after_idle = await asyncio.gather(*idle)
    assert after_idle[0] is after_idle[1] is not None


async def test_the_probe_goes_as_its_own_query_at_the_evaluation_time() -> None:
    probe, plan = PROBE, PROBED_PLAN
    querier = ScriptedQuerier(_samples(3, value="7"))
    # the newest raw sample at 95 s, evaluated at 100 s
    querier.answers[probe] = tuple(Sample(s.labels, 100.0, "95") for s in querier.samples)
    clock = FakeClock()
    batcher = _batcher(querier, clock)
    snapshot = await batcher.snapshot("k", lambda: plan, family="k", timeout_seconds=None)
    assert sorted(query for query, _ in querier.queries) == sorted([plan.query, probe])
    assert {at for _, at in querier.queries} == {clock.now().timestamp()}
    assert snapshot.values_in("ns-0")["p-2"] == (100.0, "7")
    assert snapshot.freshness_in("ns-0") == {"p-0": (95.0, 5.0), "p-2": (95.0, 5.0)}
    assert snapshot.series == 3


async def test_the_provider_answers_from_the_snapshot_then_per_request_while_late() -> None:
    querier = ScriptedQuerier([Sample({"namespace": "web", "pod": "p-0"}, 100.0, "2")])
    clock = FakeClock()
    registry = CollectorRegistry()
    provider = await _provider(querier, clock, registry)
    info = X_P0
    assert (await provider.get_metric_by_name(info, "p-0", namespace="web")).value_milli == 2000
    querier.gate = asyncio.Event()
    await clock.advance(REFRESH_AHEAD * 7.5 + 0.1)
    renewal = asyncio.create_task(provider.get_metric_by_name(info, "p-0", namespace="web"))
    await clock.settle()
    assert renewal.done()  # served from the snapshot; its renewal now hangs
    await clock.advance(2.0)  # late: still answered from the snapshot
    assert (await provider.get_metric_by_name(info, "p-0", namespace="web")).value_milli == 2000
    await clock.advance(LATE_LIMIT * 7.5)  # too late: answered per request
    late = asyncio.create_task(provider.get_metric_by_name(info, "p-0", namespace="web"))
    await clock.settle()
    sent = [query for query, _ in querier.queries]
    assert 'pod="p-0"' in sent[-1]  # the request's own query, not the batch's
    querier.gate.set()
    assert (await late).value_milli == 2000
    assert _answered(registry, "per_request_late") == 1
    assert _answered(registry, "snapshot_late") == 1
    await provider.wait_for_renewals()


async def test_renewals_reuse_a_probe_that_proved_every_value_fresh() -> None:
    probe, plan = PROBE, PROBED_PLAN
    querier = ScriptedQuerier(_samples(3))  # values evaluated at 100 s
    querier.answers[probe] = tuple(Sample(s.labels, 100.0, "95") for s in querier.samples)
    clock = FakeClock()
    batcher = _batcher(querier, clock, max_sample_age_seconds=60.0, probe_reuse_seconds=20.0)

    async def ask() -> Snapshot:
        return await batcher.snapshot("k", lambda: plan, family="k", timeout_seconds=None)

    def sent() -> list[str]:
        return [query for query, _ in querier.queries]

    first = await ask()
    assert sorted(sent()) == sorted([plan.query, probe])
    await clock.advance(7.6)
    renewed = await ask()  # within the reuse window: the value query alone, the kept probe
    assert sent()[2:] == [plan.query]
    assert renewed.freshness is first.freshness
    assert renewed.freshness_in("ns-1") == {"p-1": (95.0, 5.0)}

    # a value the kept probe cannot vouch for (evaluated 65 s after the newest sample it saw):
    # the probe at the same evaluation time decides, and a probe finding it stale is not kept
    querier.samples = tuple(Sample(s.labels, 160.0, "1") for s in querier.samples)
    await clock.advance(7.6)
    await ask()
    assert sent()[3:] == [plan.query, probe]
    assert {at for _, at in querier.queries[3:]} == {clock.now().timestamp()}
    await clock.advance(7.6)
    await ask()
    assert sorted(sent()[5:]) == sorted([plan.query, probe])  # nothing kept: both again

    # a kept probe older than the reuse window is not reused
    querier.samples = tuple(Sample(s.labels, 100.0, "1") for s in querier.samples)
    await clock.advance(7.6)
    await ask()  # both again (the last probe proved nothing); this one proves every value
    await clock.advance(20.1)
    await ask()
    assert sorted(sent()[9:]) == sorted([plan.query, probe])


async def test_a_slow_evaluation_keeps_renewals_early_for_a_few_fast_ones() -> None:
    querier = ScriptedQuerier(_samples(2))
    querier.gate = asyncio.Event()
    clock = FakeClock()
    batcher = _batcher(querier, clock)

    async def ask() -> Snapshot:
        return await batcher.snapshot("k", lambda: PLAN, family="k", timeout_seconds=None)

    first = asyncio.create_task(ask())
    await clock.advance(3.0)  # a slow evaluation (3 s)
    querier.gate.set()
    await first
    await clock.advance(7.6)
    await ask()  # a fast one (0 s): the lead is still based on 0.8 x 3 s, not on 0 s
    await clock.advance(7.5 - 2 * 0.8 * 3.0 + 0.1)
    await ask()
    await batcher.wait_for_refreshes()
    assert len(querier.queries) == 3  # renewed at 2.8 s, before REFRESH_AHEAD of the max age


async def test_checking_a_kept_probe_against_many_values_lets_requests_run() -> None:
    count = 5 * SLICE_SAMPLES
    querier = ScriptedQuerier(_samples(count))
    querier.answers[PROBE] = tuple(Sample(s.labels, 100.0, "95") for s in querier.samples)
    clock = FakeClock()
    batcher = _batcher(querier, clock, max_sample_age_seconds=60.0, probe_reuse_seconds=20.0)

    async def ask() -> Snapshot:
        return await batcher.snapshot("k", lambda: PROBED_PLAN, family="k", timeout_seconds=None)

    await ask()  # value query and probe: the probe proves every value, it is kept
    await clock.advance(7.6)
    turns = 0
    stop = False

    async def other_requests() -> None:
        nonlocal turns
        while not stop:
            turns += 1
            await asyncio.sleep(0)

    others = asyncio.create_task(other_requests())
    await asyncio.sleep(0)
    started = turns
    renewed = await ask()  # the value query alone, checked against the kept probe
    stop = True
    await others
    assert renewed.freshness_in("ns-1") == {f"p-{i}": (95.0, 5.0) for i in range(1, count, 2)}
    assert [query for query, _ in querier.queries[2:]] == [PROBED_PLAN.query]
    # indexing the values and checking them against the kept probe each give the loop a turn
    # every SLICE_SAMPLES values
    assert turns - started >= 2 * (count // SLICE_SAMPLES) - 1
