"""HistoryProvider: range queries rendered from rules, NaN points dropped, errors typed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adapter.providers import InvalidRequestError, MetricFetchError, custom_metric_request
from tests.adapter.providers.scenario import scenario

START = datetime(2027, 1, 15, 12, 0, tzinfo=UTC)


async def test_custom_metric_history_by_object_name() -> None:
    info = custom_metric_request(
        namespace="ns1", resource="pods", name="*", metric="http_requests_per_second"
    ).info
    query = 'sum(rate(http_requests_total{namespace="ns1",pod=~"web-1|web-2"}[2m])) by (pod)'
    async with scenario() as setup:
        t0 = START.timestamp()
        setup.prometheus.matrices[query] = [
            ({"pod": "web-1"}, [(t0, "1.5"), (t0 + 60, "NaN"), (t0 + 120, "2")]),
            ({"pod": "web-2"}, [(t0, "0.25")]),
        ]
        history = await setup.providers.history.custom_metric_history(
            info,
            namespace="ns1",
            names=["web-1", "web-2"],
            start=START,
            end=START + timedelta(minutes=2),
            step_seconds=60,
        )
        request = setup.prometheus.requests[-1]
        with pytest.raises(InvalidRequestError):
            await setup.providers.history.custom_metric_history(
                info, namespace="ns1", names=[], start=START, end=START, step_seconds=60
            )
    assert request.param("query") == query
    assert (request.param("start"), request.param("step")) == (str(int(t0)), "60")
    web_1 = history["web-1"]
    assert [(p.timestamp, p.value_milli) for p in web_1.points] == [
        (START, 1500),
        (START + timedelta(minutes=2), 2000),
    ]
    assert web_1.dropped == 1
    assert [p.value_milli for p in history["web-2"].points] == [250]


async def test_range_errors_are_fetch_errors() -> None:
    async with scenario() as setup:
        setup.prometheus.fail_api(
            "/api/v1/query_range", status=400, error_type="bad_data", error="too many points"
        )
        with pytest.raises(MetricFetchError) as caught:
            await setup.providers.history.query_range(
                "up", start=START, end=START + timedelta(days=30), step_seconds=1
            )
    assert "too many points" in caught.value.detail
