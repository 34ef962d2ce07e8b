"""ExternalMetricsProvider against the fake Prometheus: items, selector, empty/stale/NaN.

Upstream counterpart: prometheus-adapter ``pkg/external-provider/metric_converter.go`` (one item
per sample with its labels; a scalar is one unlabelled item). Deviations pinned here are listed in
``adapter.providers.external`` and docs/adapter-values.md.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapter.providers import MetricNotFoundError, MetricPolicy, MissingCause, ValueSettings
from tests.adapter.providers.scenario import EVAL_SECONDS, scenario


async def test_items_carry_labels_value_time_and_no_window_for_a_plain_sum() -> None:
    async with scenario() as setup:
        setup.tables.external = {"orders": "12", "billing": "NaN"}
        setup.tables.external_age = 4.0
        values = await setup.providers.external.get_external_metric(
            "queue_messages_ready", namespace="default"
        )
        queries = setup.prometheus.queries()
    # The NaN series is left out; the others are summed by the HPA.
    assert [(dict(v.labels), str(v.value)) for v in values] == [({"queue": "orders"}, "12")]
    assert values[0].timestamp == datetime.fromtimestamp(EVAL_SECONDS - 4.0, UTC)
    assert values[0].window_seconds is None
    # namespaced: false -> no namespace matcher, in the value query or the probe.
    assert sorted(queries) == [
        "max(timestamp(queue_messages_ready{}))",
        "sum(queue_messages_ready{}) by (queue)",
    ]


async def test_metric_selector_is_rendered_into_both_queries() -> None:
    async with scenario() as setup:
        setup.tables.external = {"orders": "3"}
        await setup.providers.external.get_external_metric(
            "queue_messages_ready", namespace="default", metric_selector="queue=orders"
        )
        queries = setup.prometheus.queries()
    assert 'sum(queue_messages_ready{queue="orders"}) by (queue)' in queries


async def test_empty_stale_and_all_nan_are_not_found() -> None:
    # each answer judged by its own probe (the fake's sample ages jump, real ones cannot)
    async with scenario(ValueSettings(probe_reuse_seconds=0.0)) as setup:
        external = setup.providers.external
        with pytest.raises(MetricNotFoundError) as empty:
            await external.get_external_metric("queue_messages_ready", namespace="default")
        setup.tables.external = {"orders": "5"}
        setup.tables.external_age = 600.0
        with pytest.raises(MetricNotFoundError) as stale:
            await external.get_external_metric("queue_messages_ready", namespace="default")
        setup.tables.external = {"orders": "-Inf"}
        setup.tables.external_age = 1.0
        with pytest.raises(MetricNotFoundError) as nan:
            await external.get_external_metric("queue_messages_ready", namespace="default")
        with pytest.raises(MetricNotFoundError) as unknown:
            await external.get_external_metric("nope", namespace="default")
        with pytest.raises(MetricNotFoundError) as elsewhere:
            await external.get_external_metric("nope", namespace="shop")
    assert empty.value.cause is MissingCause.EMPTY_RESULT
    assert stale.value.cause is MissingCause.STALE
    assert nan.value.cause is MissingCause.NOT_FINITE
    assert unknown.value.cause is MissingCause.UNKNOWN_METRIC
    assert unknown.value.message == "the server could not find the metric nope for namespaces"
    # prometheus-adapter's selectGroupResource: "namespaces" only for "default", else empty
    assert elsewhere.value.message == "the server could not find the metric nope for "


async def test_empty_reads_zero_only_for_a_metric_that_opts_in() -> None:
    settings = ValueSettings(
        policies={"queue_messages_ready": MetricPolicy(empty_is_zero=True, window_seconds=60)}
    )
    async with scenario(settings) as setup:
        values = await setup.providers.external.get_external_metric(
            "queue_messages_ready", namespace="default"
        )
    assert [(dict(v.labels), str(v.value), v.window_seconds) for v in values] == [({}, "0", 60)]


# ---------------------------------------------------------------- the shared staleness probe

QUEUE = "queue_messages_ready"


def _sent(queries: list[str]) -> list[str]:
    return ["probe" if query.startswith("max(timestamp") else "value" for query in queries]


async def test_a_probe_that_proved_the_newest_sample_fresh_is_shared_within_the_window() -> None:
    """As for custom metrics: within ``probe_reuse_seconds`` the value query goes alone, and the
    values carry the shared probe's newest-sample time (a lower bound of the real one)."""
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.external = {"orders": "12"}
        setup.tables.external_age = 4.0
        external = setup.providers.external
        first = await external.get_external_metric(QUEUE, namespace="default")
        setup.tables.external = {"orders": "13"}
        setup.tables.external_age = 0.5  # a newer scrape, which the shared probe has not seen
        await setup.clock.advance(0.5)
        second = await external.get_external_metric(QUEUE, namespace="default")
        sent = _sent(setup.prometheus.queries())
    assert [str(v.value) for v in (*first, *second)] == ["12", "13"]
    shared_time = datetime.fromtimestamp(EVAL_SECONDS - 4.0, UTC)
    assert first[0].timestamp == second[0].timestamp == shared_time
    assert sorted(sent[:2]) == ["probe", "value"]
    assert sent[2:] == ["value"]


async def test_a_shared_probe_too_old_for_the_values_sends_both_queries_again() -> None:
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.external = {"orders": "12"}
        setup.tables.external_age = 4.0
        external = setup.providers.external
        await external.get_external_metric(QUEUE, namespace="default")
        # the values are evaluated 34 s after the newest sample the shared probe saw
        setup.prometheus.eval_time_seconds = EVAL_SECONDS + 30.0
        setup.tables.external_age = 1.0
        values = await external.get_external_metric(QUEUE, namespace="default")
        sent = _sent(setup.prometheus.queries())
    assert values[0].timestamp == datetime.fromtimestamp(EVAL_SECONDS - 1.0, UTC)
    assert sent[2] == "value"  # judged by the shared probe: it cannot vouch
    assert sorted(sent[3:]) == ["probe", "value"]  # both again, and they decide


async def test_a_stale_answer_is_not_shared() -> None:
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.external = {"orders": "12"}
        setup.tables.external_age = 45.0
        external = setup.providers.external
        for _ in range(2):
            with pytest.raises(MetricNotFoundError) as caught:
                await external.get_external_metric(QUEUE, namespace="default")
            assert caught.value.cause is MissingCause.STALE
        sent = _sent(setup.prometheus.queries())
    assert sorted(sent) == ["probe", "probe", "value", "value"]


async def test_without_reuse_every_request_sends_its_probe() -> None:
    settings = ValueSettings(max_sample_age_seconds=30.0, probe_reuse_seconds=0.0)
    async with scenario(settings) as setup:
        setup.tables.external = {"orders": "12"}
        external = setup.providers.external
        for _ in range(2):
            await external.get_external_metric(QUEUE, namespace="default")
        sent = _sent(setup.prometheus.queries())
    assert sorted(sent) == ["probe", "probe", "value", "value"]


async def test_past_three_quarters_of_the_window_the_probe_is_renewed_in_the_background() -> None:
    async with scenario(ValueSettings(max_sample_age_seconds=30.0)) as setup:
        setup.tables.external = {"orders": "12"}
        setup.tables.external_age = 4.0
        external = setup.providers.external
        await external.get_external_metric(QUEUE, namespace="default")
        await setup.clock.advance(0.8)
        setup.tables.external_age = 0.5
        renewing = await external.get_external_metric(QUEUE, namespace="default")
        await external.wait_for_renewals()
        await setup.clock.advance(0.3)  # past the first probe's window, within the renewal's
        renewed = await external.get_external_metric(QUEUE, namespace="default")
        sent = _sent(setup.prometheus.queries())
    assert renewing[0].timestamp == datetime.fromtimestamp(EVAL_SECONDS - 4.0, UTC)
    assert renewed[0].timestamp == datetime.fromtimestamp(EVAL_SECONDS - 0.5, UTC)
    assert sorted(sent[2:4]) == ["probe", "value"]  # the value alone, the probe alongside
    assert sent[4:] == ["value"]
