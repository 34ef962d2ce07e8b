"""CustomMetricsProvider against the fake Prometheus: value semantics and error mapping.

Upstream counterpart: prometheus-adapter ``pkg/custom-provider/provider_test.go`` (names matched
by the resource label, NotFound texts); the rest pins our documented deviations
(docs/adapter-values.md). Values as Prometheus computes them are covered by
``test_real_prometheus.py``.
"""

from __future__ import annotations

import asyncio
import gc
from datetime import UTC, datetime

import pytest

from adapter.prometheus import PrometheusClient, PrometheusConnection
from adapter.providers import (
    InvalidRequestError,
    MetricFetchError,
    MetricFetchTimeoutError,
    MetricNotFoundError,
    MetricPolicy,
    MissingCause,
    ObjectListError,
    ValueSettings,
    build_providers,
    custom_metric_request,
)
from adapter.providers.evaluation import rule_errors_to_provider_errors
from adapter.providers.objects import ObjectReference
from adapter.rules import BadQueryError, CustomMetricInfo, GroupResource, load_rules
from adapter.rules.errors import RuleEvaluationError
from tests.adapter.providers.fake_pods import FakeObjectNameLister, FakePodLister
from tests.adapter.providers.scenario import EVAL_SECONDS, merged_parts, scenario
from tests.fakes.clock import FakeClock
from tests.fakes.prometheus import FakePrometheus, FakeSample


def pods(metric: str = "http_requests_per_second") -> CustomMetricInfo:
    return custom_metric_request(namespace="ns1", resource="pods", name="*", metric=metric).info


async def test_value_timestamp_is_the_newest_raw_sample_and_window_comes_from_the_rule() -> None:
    async with scenario() as setup:
        setup.tables.values = {"web-1": "0.85"}
        setup.tables.ages = {"web-1": 12.5}
        value = await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
    assert str(value.value) == "850m"
    assert value.timestamp == datetime.fromtimestamp(EVAL_SECONDS - 12.5, UTC)
    assert value.window_seconds == 120
    assert value.metric_selector is None


async def test_value_and_probe_are_sent_in_one_query_with_the_same_matchers() -> None:
    async with scenario() as setup:
        setup.tables.values = {"web-1": "1"}
        setup.tables.ages = {"web-1": 1}
        await setup.providers.custom.get_metric_by_name(
            pods(), "web-1", namespace="ns1", metric_selector="method=GET"
        )
        queries = setup.prometheus.queries()
    assert len(queries) == 1
    assert merged_parts(queries[0]) == (
        'sum(rate(http_requests_total{method="GET",namespace="ns1",pod="web-1"}[2m])) by (pod)',
        'max by (pod) (timestamp(http_requests_total{method="GET",namespace="ns1",pod="web-1"}))',
    )


async def test_an_answer_without_the_part_tags_is_a_fetch_error() -> None:
    """Something between the adapter and Prometheus dropped the ``hpa_adapter_part`` labels:
    values and probe results cannot be told apart, so nothing is guessed."""
    async with scenario() as setup:
        setup.prometheus.responder = lambda query: [FakeSample({"pod": "web-1"}, "1")]
        with pytest.raises(MetricFetchError) as caught:
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
    assert caught.value.message == "unable to fetch metrics"
    assert "hpa_adapter_part" in caught.value.detail


async def test_sample_older_than_the_bound_is_missing() -> None:
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.values = {"web-1": "1", "web-2": "2"}
        setup.tables.ages = {"web-1": 31.0, "web-2": 29.0}
        with pytest.raises(MetricNotFoundError) as caught:
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        listed = await setup.providers.custom.get_metric_by_selector(
            pods(), namespace="ns1", selector="app=web"
        )
    assert caught.value.cause is MissingCause.STALE
    assert [v.described_object.name for v in listed] == ["web-2"]


async def test_no_probe_sample_for_an_object_means_stale() -> None:
    async with scenario() as setup:
        setup.tables.values = {"web-1": "1"}
        with pytest.raises(MetricNotFoundError) as caught:
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
    assert caught.value.cause is MissingCause.STALE


async def test_without_a_bound_no_probe_is_sent_and_the_evaluation_time_is_used() -> None:
    async with scenario(ValueSettings(max_sample_age_seconds=None)) as setup:
        setup.tables.values = {"web-1": "3"}
        value = await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        queries = setup.prometheus.queries()
    assert len(queries) == 1
    assert value.timestamp == datetime.fromtimestamp(EVAL_SECONDS, UTC)


@pytest.mark.parametrize("text", ["NaN", "+Inf", "-Inf", "1e30"])
async def test_non_finite_or_unrepresentable_values_are_missing(text: str) -> None:
    async with scenario() as setup:
        setup.tables.values = {"web-1": text}
        setup.tables.ages = {"web-1": 1.0}
        with pytest.raises(MetricNotFoundError) as caught:
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
    assert caught.value.cause is MissingCause.NOT_FINITE


async def test_empty_is_not_zero_unless_the_metric_opts_in() -> None:
    async with scenario() as setup:
        with pytest.raises(MetricNotFoundError) as caught:
            await setup.providers.custom.get_metric_by_name(
                pods("errors_total"), "web-1", namespace="ns1"
            )
    assert caught.value.cause is MissingCause.EMPTY_RESULT
    assert (
        caught.value.message == "the server could not find the metric errors_total for pods web-1"
    )
    opt_in = ValueSettings(policies={"errors_total": MetricPolicy(empty_is_zero=True)})
    async with scenario(opt_in) as setup:
        value = await setup.providers.custom.get_metric_by_name(
            pods("errors_total"), "web-1", namespace="ns1"
        )
        listed = await setup.providers.custom.get_metric_by_selector(
            pods("errors_total"), namespace="ns1", selector="app=web"
        )
        # The opt-in is per metric: the other metric is still NotFound when empty.
        with pytest.raises(MetricNotFoundError):
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
    assert str(value.value) == "0"
    assert value.timestamp == setup.clock.now()
    assert value.window_seconds == 60
    assert [(v.described_object.name, str(v.value)) for v in listed] == [
        ("web-1", "0"),
        ("web-2", "0"),
    ]


async def test_policy_window_overrides_the_inferred_one() -> None:
    settings = ValueSettings(policies={"http_requests_per_second": MetricPolicy(window_seconds=30)})
    async with scenario(settings) as setup:
        setup.tables.values = {"web-1": "1"}
        setup.tables.ages = {"web-1": 1.0}
        value = await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
    assert value.window_seconds == 30


async def test_pod_lister_gets_the_canonical_selector() -> None:
    async with scenario() as setup:
        setup.tables.values = {"web-1": "1", "db-0": "5"}
        setup.tables.ages = {"web-1": 1.0, "db-0": 1.0}
        values = await setup.providers.custom.get_metric_by_selector(
            pods(), namespace="ns1", selector="app in (web, x) , tier!=cache"
        )
    assert setup.pods.calls == [("ns1", "app in (web,x),tier!=cache")]
    # web-2 has no sample (left out); db-0 is not selected.
    assert [v.described_object.name for v in values] == ["web-1"]


async def test_caller_errors_are_bad_requests() -> None:
    async with scenario() as setup:
        custom = setup.providers.custom
        with pytest.raises(InvalidRequestError, match="invalid label selector"):
            await custom.get_metric_by_selector(pods(), namespace="ns1", selector="app in (")
        with pytest.raises(InvalidRequestError):
            await custom.get_metric_by_name(
                pods(), "web-1", namespace="ns1", metric_selector="app.kubernetes.io/name=x"
            )
        deployments = custom_metric_request(
            namespace="ns1", resource="deployments.apps", name="*", metric="x"
        ).info
        with pytest.raises(MetricNotFoundError):
            await custom.get_metric_by_selector(deployments, namespace="ns1", selector="")
    assert setup.prometheus.requests[-1].path == "/api/v1/series"  # nothing was queried
    assert (InvalidRequestError.code, InvalidRequestError.reason) == (400, "BadRequest")


async def test_pod_lister_failure_is_an_internal_error() -> None:
    async with scenario() as setup:
        setup.pods.error = RuntimeError("cache not synced")
        with pytest.raises(ObjectListError) as caught:
            await setup.providers.custom.get_metric_by_selector(
                pods(), namespace="ns1", selector=""
            )
    assert caught.value.message == "unable to list matching resources"
    assert caught.value.code == 500


OBJECT_RULES = """
rules:
- seriesQuery: 'app_requests{namespace!="",deployment!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      deployment: {group: apps, resource: deployment}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'quota_used{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def _object_answer(query: str) -> list[FakeSample]:
    parts = merged_parts(query)
    if parts is not None:
        return [
            FakeSample(
                {**s.labels, "hpa_adapter_part": part},
                s.value,
                timestamp_seconds=s.timestamp_seconds,
            )
            for part, one in zip(("value", "probe"), parts, strict=True)
            for s in _object_answer(one)
        ]
    label = "deployment" if "app_requests" in query else "namespace"
    values = {"web": "7", "db": "2", "shop": "42", "default": "5"}
    probe = query.startswith("max by")
    return [
        FakeSample({label: name}, repr(EVAL_SECONDS - 1) if probe else value)
        for name, value in values.items()
        if f'"{name}"' in query or f"|{name}" in query or f"{name}|" in query
    ]


async def test_other_resources_are_listed_by_selector_through_the_object_lister() -> None:
    """``deployments.apps/*`` and ``namespaces/*/metrics/M`` list the objects with the label
    selector (custom-metrics-apiserver ``helpers.ListObjectNames``), as prometheus-adapter does;
    an empty match is NotFound there too."""
    objects = FakeObjectNameLister(
        {
            ("deployments.apps", "shop"): {"web": {"tier": "front"}, "db": {"tier": "back"}},
            ("namespaces", ""): {"shop": {"team": "a"}, "default": {}},
        }
    )
    async with (
        FakePrometheus(
            series_by_match={
                'app_requests{namespace!="",deployment!=""}': [
                    {"__name__": "app_requests", "namespace": "shop", "deployment": "web"},
                    {"__name__": "app_requests", "namespace": "shop", "deployment": "db"},
                ],
                'quota_used{namespace!=""}': [{"__name__": "quota_used", "namespace": "shop"}],
            },
            responder=_object_answer,
            eval_time_seconds=EVAL_SECONDS,
        ) as fake,
        PrometheusClient(PrometheusConnection(fake.url, timeout_seconds=5.0)) as client,
    ):
        providers = build_providers(
            load_rules(OBJECT_RULES, source="test"),
            client,
            pod_lister=FakePodLister({}),
            object_lister=objects,
            clock=FakeClock(),
            relist_interval_seconds=60.0,
        )
        await providers.relister.relist()
        custom = providers.custom
        deployments = custom_metric_request(
            namespace="shop", resource="deployments.apps", name="*", metric="app_requests"
        )
        front = await custom.get_metric_by_selector(
            deployments.info, namespace="shop", selector="tier=front"
        )
        both = await custom.get_metric_by_selector(deployments.info, namespace="shop")
        with pytest.raises(MetricNotFoundError) as none:
            await custom.get_metric_by_selector(
                deployments.info, namespace="shop", selector="tier=none"
            )
        namespaces = custom_metric_request(
            namespace="*", resource="metrics", name="quota_used", metric=""
        )
        every = await custom.get_metric_by_selector(namespaces.info, namespace=None)
    assert namespaces.name is None
    assert [v.described_object.name for v in front] == ["web"]
    assert sorted(v.described_object.name for v in both) == ["db", "web"]
    assert both[0].described_object.api_version == "apps/v1"
    assert (
        none.value.message
        == "the server could not find the metric app_requests for deployments.apps"
    )
    assert sorted((v.described_object.name, str(v.value)) for v in every) == [
        ("default", "5"),
        ("shop", "42"),
    ]
    assert every[0].described_object.kind == "Namespace"
    assert objects.calls == [
        ("deployments.apps", "shop", "tier=front"),
        ("deployments.apps", "shop", ""),
        ("deployments.apps", "shop", "tier=none"),
        ("namespaces", None, ""),
    ]


async def test_prometheus_failures_do_not_leak_details() -> None:
    async with scenario() as setup:
        setup.prometheus.fail_api(
            "/api/v1/query", status=422, error_type="execution", error="many-to-many matching"
        )
        with pytest.raises(MetricFetchError) as caught:
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        setup.prometheus.fail_api(
            "/api/v1/query", status=503, error_type="timeout", error="query timed out"
        )
        with pytest.raises(MetricFetchTimeoutError) as timed_out:
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
    assert caught.value.message == "unable to fetch metrics"
    assert "many-to-many" in caught.value.detail
    assert (caught.value.code, caught.value.reason) == (500, "InternalError")
    assert (timed_out.value.code, timed_out.value.reason) == (504, "Timeout")


async def test_missing_values_are_counted_by_cause() -> None:
    async with scenario() as setup:
        with pytest.raises(MetricNotFoundError):
            await setup.providers.custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        count = setup.registry.get_sample_value(
            "prometheus_adapter_missing_values_total", {"api": "custom", "cause": "empty_result"}
        )
    assert count == 1


async def test_concurrent_identical_requests_share_queries_and_cancel_together() -> None:
    async with scenario() as setup:
        setup.tables.values = {"web-1": "1"}
        setup.tables.ages = {"web-1": 1.0}
        before = len(setup.prometheus.requests)
        gate = setup.prometheus.hold()
        custom = setup.providers.custom
        tasks = [
            asyncio.create_task(custom.get_metric_by_name(pods(), "web-1", namespace="ns1"))
            for _ in range(5)
        ]
        await setup.prometheus.wait_for_requests(before + 1)
        gate.set()
        values = await asyncio.gather(*tasks)
        assert {str(value.value) for value in values} == {"1"}
        assert len(setup.prometheus.requests) == before + 1  # one query: value and probe

        setup.prometheus.hold()
        task = asyncio.create_task(custom.get_metric_by_name(pods(), "web-1", namespace="ns1"))
        await setup.prometheus.wait_for_requests(before + 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await setup.prometheus.wait_for_cancelled(1)


async def test_repeated_requests_follow_new_pods_and_a_new_index() -> None:
    """Rendered queries are reused, but never for other pods or after a relist."""
    async with scenario() as setup:
        setup.tables.values = {"web-1": "1", "web-2": "2", "web-3": "3"}
        setup.tables.ages = {"web-1": 1.0, "web-2": 1.0, "web-3": 1.0}
        custom = setup.providers.custom

        async def names() -> list[str]:
            values = await custom.get_metric_by_selector(
                pods(), namespace="ns1", selector="app=web"
            )
            return [v.described_object.name for v in values]

        first = await names()
        again = await names()
        setup.pods.pods["ns1"]["web-3"] = {"app": "web"}
        grown = await names()
        seen = len(setup.prometheus.queries())
        await setup.providers.relister.relist()
        relisted = len(setup.prometheus.queries())
        after_relist = await names()
        queries = setup.prometheus.queries()
    assert first == again == ["web-1", "web-2"]
    assert grown == after_relist == ["web-1", "web-2", "web-3"]
    sent_values = [parts[0] for parts in map(merged_parts, queries[:seen]) if parts is not None]
    assert (
        'sum(rate(http_requests_total{namespace="ns1",pod=~"web-1|web-2|web-3"}[2m])) by (pod)'
        in sent_values
    )
    assert len(queries) - relisted == 1  # value and probe, rendered again for the new index


# ---------------------------------------------------------------- the shared staleness probe


def _value_only(queries: list[str]) -> list[bool]:
    """For each query sent: True for the bare value query, False for value merged with probe."""
    return [merged_parts(query) is None for query in queries]


def _sent(queries: list[str]) -> list[str]:
    """Each query sent: ``merged`` (value and probe), ``probe`` (alone) or ``value`` (alone)."""
    return [
        "merged"
        if merged_parts(query) is not None
        else "probe"
        if query.startswith("max by")
        else "value"
        for query in queries
    ]


async def test_a_probe_that_proved_every_value_fresh_is_reused_within_the_window() -> None:
    """Requests for the same pods within ``probe_reuse_seconds`` of a probe send the value query
    alone and keep the probe's sample time; past three quarters of the window the next request
    starts a probe alone in the background and, like the others, still reuses the current probe
    until the new one has answered."""
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.values = {"web-1": "1", "web-2": "2"}
        setup.tables.ages = {"web-1": 3.0, "web-2": 4.0}
        custom = setup.providers.custom

        async def values() -> list[tuple[str, str, datetime]]:
            listed = await custom.get_metric_by_selector(
                pods(), namespace="ns1", selector="app=web"
            )
            return [(v.described_object.name, str(v.value), v.timestamp) for v in listed]

        first = await values()
        setup.tables.values = {"web-1": "5", "web-2": "6"}
        setup.prometheus.eval_time_seconds = EVAL_SECONDS + 0.5
        await setup.clock.advance(0.75)
        reused = await values()
        await setup.clock.advance(0.01)
        setup.tables.ages = {"web-1": 0.5, "web-2": 0.5}
        renewing = await values()
        await custom.wait_for_renewals()
        renewed = await values()
        sent = _sent(setup.prometheus.queries())
    at = {
        name: datetime.fromtimestamp(EVAL_SECONDS - age, UTC)
        for name, age in (("web-1", 3.0), ("web-2", 4.0))
    }
    assert first == [("web-1", "1", at["web-1"]), ("web-2", "2", at["web-2"])]
    # new values from Prometheus, the freshness (and so the timestamp) from the shared probe
    assert reused == renewing == [("web-1", "5", at["web-1"]), ("web-2", "6", at["web-2"])]
    newest = datetime.fromtimestamp(EVAL_SECONDS - 0.5, UTC)
    assert renewed == [("web-1", "5", newest), ("web-2", "6", newest)]
    assert sent[-5:-3] == ["merged", "value"]
    assert sorted(sent[-3:-1]) == ["probe", "value"]  # the renewal went alongside
    assert sent[-1] == "value"


async def test_one_background_renewal_at_a_time_while_requests_reuse_the_probe() -> None:
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.values = {"web-1": "1"}
        setup.tables.ages = {"web-1": 1.0}
        custom = setup.providers.custom
        await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        await setup.clock.advance(0.9)
        before = len(setup.prometheus.queries())
        before_requests = len(setup.prometheus.requests)
        gate = setup.prometheus.hold()
        # both requests start before Prometheus answers anything: the first starts the renewal
        renewing = asyncio.create_task(custom.get_metric_by_name(pods(), "web-1", namespace="ns1"))
        reusing = asyncio.create_task(custom.get_metric_by_name(pods(), "web-1", namespace="ns1"))
        await setup.prometheus.wait_for_requests(before_requests + 2)
        gate.set()
        values = await asyncio.gather(renewing, reusing)
        await custom.wait_for_renewals()
        sent = _sent(setup.prometheus.queries())
    assert [str(value.value) for value in values] == ["1", "1"]
    assert sent[0] == "merged"
    assert sorted(sent[before:]) == ["probe", "value"]  # the value queries coalesced


async def test_a_background_probe_that_finds_a_value_stale_is_not_shared() -> None:
    """The renewal finds the newest sample past the bound: it is not shared, so the next request
    sends the merged query, and its answer decides (stale)."""
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.values = {"web-1": "1"}
        setup.tables.ages = {"web-1": 1.0}
        custom = setup.providers.custom
        await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        await setup.clock.advance(0.8)
        setup.tables.ages = {"web-1": 45.0}
        reused = await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        await custom.wait_for_renewals()
        with pytest.raises(MetricNotFoundError) as caught:
            await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        sent = _sent(setup.prometheus.queries())
    assert str(reused.value) == "1"  # within the window, judged by the shared probe
    assert caught.value.cause is MissingCause.STALE
    assert sent[-1] == "merged"
    assert sorted(sent[-3:-1]) == ["probe", "value"]


async def test_a_failed_background_probe_is_sent_again_by_the_next_request() -> None:
    """A renewal that fails is logged and shares nothing; the current probe is still reused
    within its window, and the next request past three quarters of it starts a new renewal."""
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.values = {"web-1": "1"}
        setup.tables.ages = {"web-1": 1.0}
        custom = setup.providers.custom
        await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        await setup.clock.advance(0.8)
        overloaded = {"status": "error", "errorType": "unavailable", "error": "overloaded"}
        setup.prometheus.fail("/api/v1/query", status=503, body=overloaded, times=2)
        with pytest.raises(MetricFetchError):
            await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        await custom.wait_for_renewals()  # the probe failed too: logged, nothing shared
        failed = len(setup.prometheus.queries())
        within = await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        await custom.wait_for_renewals()
        await setup.clock.advance(0.21)  # past the first probe's window, within the new one's
        after = await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        sent = _sent(setup.prometheus.queries())
    assert str(within.value) == str(after.value) == "1"
    assert sorted(sent[failed - 2 : failed]) == ["probe", "value"]
    assert sorted(sent[failed : failed + 2]) == ["probe", "value"]
    assert sent[failed + 2 :] == ["value"]


async def test_a_shared_probe_too_old_for_a_value_sends_a_new_probe_that_decides() -> None:
    """A reused probe measures a value's age from the newest sample it saw to the value's
    evaluation time: past the bound it proves nothing, and a new merged query decides."""
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.values = {"web-1": "1"}
        setup.tables.ages = {"web-1": 29.0}
        custom = setup.providers.custom
        first = await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        setup.prometheus.eval_time_seconds = EVAL_SECONDS + 2.0  # 31 s after the probe's sample
        setup.tables.ages = {"web-1": 1.0 - 2.0}  # a sample scraped 1 s before the new evaluation
        second = await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        setup.tables.ages = {"web-1": 40.0 - 2.0}  # now the newest sample is 40 s old
        setup.prometheus.eval_time_seconds = EVAL_SECONDS + 2.0
        await setup.clock.advance(5.0)
        with pytest.raises(MetricNotFoundError) as caught:
            await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        queries = setup.prometheus.queries()
    assert first.timestamp == datetime.fromtimestamp(EVAL_SECONDS - 29.0, UTC)
    assert second.timestamp == datetime.fromtimestamp(EVAL_SECONDS + 1.0, UTC)
    assert caught.value.cause is MissingCause.STALE
    assert _value_only(queries[-4:]) == [False, True, False, False]


async def test_a_probe_that_found_a_stale_value_is_not_reused() -> None:
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.values = {"web-1": "1", "web-2": "2"}
        setup.tables.ages = {"web-1": 1.0, "web-2": 45.0}
        custom = setup.providers.custom
        for _ in range(2):
            listed = await custom.get_metric_by_selector(
                pods(), namespace="ns1", selector="app=web"
            )
            assert [v.described_object.name for v in listed] == ["web-1"]
        queries = setup.prometheus.queries()
    assert _value_only(queries[-2:]) == [False, False]


async def test_within_the_window_a_series_that_left_the_probe_is_still_served() -> None:
    """The documented cost of sharing: a series ended by a staleness marker (gone from the
    probe, while ``rate`` still has a value) is seen as stale only once the window has passed;
    with ``probe_reuse_seconds=0`` at once."""
    for reuse, served in ((1.0, True), (0.0, False)):
        settings = ValueSettings(max_sample_age_seconds=30.0, probe_reuse_seconds=reuse)
        async with scenario(settings) as setup:
            setup.tables.values = {"web-1": "1"}
            setup.tables.ages = {"web-1": 1.0}
            custom = setup.providers.custom
            await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
            setup.tables.ages = {}
            await setup.clock.advance(0.5)
            try:
                await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
                within: MissingCause | None = None
            except MetricNotFoundError as error:
                within = error.cause
            await setup.clock.advance(0.51)
            with pytest.raises(MetricNotFoundError) as caught:
                await custom.get_metric_by_name(pods(), "web-1", namespace="ns1")
        assert within is (None if served else MissingCause.STALE)
        assert caught.value.cause is MissingCause.STALE


def test_probe_reuse_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="probe_reuse_seconds"):
        ValueSettings(probe_reuse_seconds=-1.0)


def test_a_rule_that_cannot_render_the_request_is_not_found_as_upstream() -> None:
    """prometheus-adapter's ``QueryForMetric`` answers "not found" when ``QueryForSeries`` fails
    (was: 500). A bad selector stays the caller's 400."""
    resource = GroupResource("", "pods")
    unrenderable = rule_errors_to_provider_errors(
        RuleEvaluationError("no generic resource label form specified for this metric"),
        resource=resource,
        metric="m",
    )
    assert isinstance(unrenderable, MetricNotFoundError)
    assert (unrenderable.code, unrenderable.reason) == (404, "NotFound")
    assert unrenderable.message == "the server could not find the metric m for pods"
    assert unrenderable.cause is MissingCause.UNRENDERABLE
    assert "no generic resource label form" in unrenderable.detail
    bad = rule_errors_to_provider_errors(BadQueryError("bad"), resource=resource, metric="m")
    assert isinstance(bad, InvalidRequestError)
    assert bad.code == 400


async def test_answers_keep_no_described_object_per_pod() -> None:
    """An answer's ``describedObject``s go with the answer: a server asked about 100,000 pods
    does not keep 100,000 references that every full collection then walks."""
    names = [f"kept-{index}" for index in range(50)]
    async with scenario() as setup:
        for name in names:
            setup.tables.values = {name: "1"}
            setup.tables.ages = {name: 1}
            value = await setup.providers.custom.get_metric_by_name(pods(), name, namespace="ns1")
            assert value.described_object.name == name
        del value
        gc.collect()  # what earlier tests left in cycles
        kept = [o for o in gc.get_objects() if type(o) is ObjectReference and o.name in names]
    assert kept == []
