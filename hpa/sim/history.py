"""Replaying real history: a load trace from a Prometheus range query.

Upstream counterpart: none in the HPA; the query goes through the metrics layer's client
(:class:`adapter.prometheus.PrometheusClient.query_range`, prometheus-adapter's ``QueryRange``).
The query's result is the offered load in requests per second; when it returns several series
they are summed point by point (the description says so). Non-finite points (``NaN``, ``Inf``)
are skipped; a query with no finite point is an error.

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from adapter.prometheus import PrometheusClient, PrometheusConnection, PrometheusError
from hpa.sim.trace import LoadTrace, TraceError, points_trace

__all__ = ["parse_time_seconds", "prometheus_trace"]


def parse_time_seconds(text: str) -> float:
    """Unix seconds from ``1700000000`` or an RFC 3339 time (``2026-01-01T00:00:00Z``)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise TraceError(f"time {text!r} is neither Unix seconds nor RFC 3339") from error
    if moment.tzinfo is None:
        raise TraceError(f"time {text!r} has no time zone (add Z or +00:00)")
    return moment.timestamp()


async def prometheus_trace(
    url: str,
    query: str,
    *,
    start_seconds: float,
    end_seconds: float,
    step_seconds: float,
    timeout_seconds: float = 30.0,
) -> LoadTrace:
    """The load trace ``query`` describes between ``start`` and ``end``, every ``step``."""
    if end_seconds <= start_seconds:
        raise TraceError("--end must be after --start")
    if step_seconds <= 0:
        raise TraceError("--step must be positive")
    connection = PrometheusConnection(url=url, timeout_seconds=timeout_seconds)
    try:
        async with PrometheusClient(connection) as client:
            series = await client.query_range(
                query,
                start_seconds=start_seconds,
                end_seconds=end_seconds,
                step_seconds=step_seconds,
            )
    except PrometheusError as error:
        raise TraceError(f"Prometheus range query failed: {error}") from error
    totals: dict[float, float] = {}
    for one in series:
        for timestamp, value in one.values():
            if math.isfinite(value):
                totals[timestamp] = totals.get(timestamp, 0.0) + value
    if not totals:
        raise TraceError(f"the query returned no finite points: {query}")
    points = sorted(totals.items())
    first = points[0][0]
    summed = f", sum of {len(series)} series" if len(series) > 1 else ""
    return points_trace(
        points,
        duration_seconds=points[-1][0] - first + step_seconds,
        description=(
            f"Prometheus {url} query {query!r} from "
            f"{datetime.fromtimestamp(start_seconds, UTC):%Y-%m-%dT%H:%M:%SZ} "
            f"step {step_seconds:g}s{summed}"
        ),
        origin=datetime.fromtimestamp(first, UTC),
    )
