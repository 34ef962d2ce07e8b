"""Hand-written ``PrometheusQuerier`` fakes for the batching tests: the range query they never
send, written once."""

from __future__ import annotations

from adapter.prometheus.results import RangeSeries


class InstantOnlyQuerier:
    """The part of ``PrometheusQuerier`` that batched and per-request custom values never use."""

    async def query_range(
        self,
        query: str,
        *,
        start_seconds: float,
        end_seconds: float,
        step_seconds: float,
        timeout_seconds: float | None = None,
    ) -> list[RangeSeries]:
        raise AssertionError(f"no range query expected, got {query!r}")
