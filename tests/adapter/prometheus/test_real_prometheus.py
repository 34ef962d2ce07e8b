"""PrometheusClient against a real Prometheus (Debian's, tests/lab/prometheus.py): decoding of
real answers, the ``timeout`` parameter accepted, and Prometheus's own error envelope typed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from adapter.prometheus import PrometheusAPIError, PrometheusClient, PrometheusConnection
from adapter.rules import Series
from tests.lab.prometheus import PrometheusServer


@pytest.fixture(scope="module")
def prometheus() -> Iterator[tuple[PrometheusServer, int]]:
    start = int(time.time())
    lines = ["# TYPE jobs_waiting gauge"]
    lines += [
        f'jobs_waiting{{queue="a"}} {t - start + 300} {t}'
        for t in range(start - 300, start + 181, 15)
    ]
    lines.append("# EOF")
    server = PrometheusServer()
    server.backfill_openmetrics("\n".join(lines))
    with server:
        yield server, start


async def test_instant_range_and_series(prometheus: tuple[PrometheusServer, int]) -> None:
    server, start = prometheus
    async with PrometheusClient(PrometheusConnection(server.url, timeout_seconds=5)) as client:
        instant = await client.query("jobs_waiting", time_seconds=start)
        matrix = await client.query_range(
            "jobs_waiting", start_seconds=start - 60, end_seconds=start, step_seconds=30
        )
        series = await client.series(["jobs_waiting"], start_seconds=start - 600)
        scalar = await client.query("scalar(jobs_waiting)", time_seconds=start)
    assert [(dict(s.labels), s.value_text) for s in instant.samples] == [
        ({"__name__": "jobs_waiting", "queue": "a"}, "300")
    ]
    assert instant.samples[0].timestamp_seconds == start
    assert [text for _, text in matrix[0].points] == ["240", "270", "300"]
    assert series == [Series("jobs_waiting", {"queue": "a"})]
    assert (scalar.result_type, scalar.samples[0].value_text) == ("scalar", "300")


async def test_prometheus_errors_keep_their_type(prometheus: tuple[PrometheusServer, int]) -> None:
    server, _ = prometheus
    async with PrometheusClient(PrometheusConnection(server.url)) as client:
        with pytest.raises(PrometheusAPIError) as caught:
            await client.query("sum(jobs_waiting")
    assert (caught.value.error_type, caught.value.status) == ("bad_data", 400)
    assert "parse error" in caught.value.error
