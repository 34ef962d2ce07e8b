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
    async with scenario() as setup:
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
    assert empty.value.cause is MissingCause.EMPTY_RESULT
    assert stale.value.cause is MissingCause.STALE
    assert nan.value.cause is MissingCause.NOT_FINITE
    assert unknown.value.cause is MissingCause.UNKNOWN_METRIC
    assert unknown.value.message == "the server could not find the metric nope for namespaces"


async def test_empty_reads_zero_only_for_a_metric_that_opts_in() -> None:
    settings = ValueSettings(
        policies={"queue_messages_ready": MetricPolicy(empty_is_zero=True, window_seconds=60)}
    )
    async with scenario(settings) as setup:
        values = await setup.providers.external.get_external_metric(
            "queue_messages_ready", namespace="default"
        )
    assert [(dict(v.labels), str(v.value), v.window_seconds) for v in values] == [({}, "0", 60)]
