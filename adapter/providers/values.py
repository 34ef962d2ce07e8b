"""Value semantics: exact milli-quantities, missing vs zero, staleness, windows, timestamps.

Upstream counterparts: prometheus-adapter ``pkg/custom-provider/provider.go`` ``metricFor``
(``resource.NewMilliQuantity(int64(value*1000.0), DecimalSI)``, NaN -> 0, ``time.Now()`` as the
timestamp), ``pkg/external-provider/metric_converter.go`` (the sample's timestamp, no window) and
``pkg/resourceprovider/provider.go`` (NaN and negatives -> 0, earliest timestamp, rule window).

Deliberate deviations, documented in docs/adapter-values.md:

- values are converted from the exact decimal text Prometheus sent (``Decimal``) and rounded to
  the nearest milli (halves away from zero) where upstream truncates ``int64(v*1000)``: float
  artifacts such as ``0.04999999999999999`` (a rate of 0.05/s) read ``50m``, not ``49m``;
- NaN and +-Inf are never turned into 0: the object's value is missing (``NOT_FINITE``), and so
  is a value beyond the int64 milli range;
- an empty result is missing, not zero, unless the metric opts in with
  ``MetricPolicy(empty_is_zero=True)`` (configuration keyed by metric name: the rule file is
  decoded strictly and has no extension field for it);
- a value whose newest underlying raw sample is older than ``max_sample_age_seconds`` (measured
  on Prometheus's own clock: evaluation time minus sample time) is missing (``STALE``);
- the timestamp is the newest underlying sample's time when the staleness probe ran, else
  Prometheus's evaluation time; the window is the policy's, or the single range duration written
  in the rule's ``metricsQuery`` (``rate(x[2m])`` -> 120 s), or absent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from adapter.rules import parse_duration_milliseconds
from hpa.core.quantity import milli_text

__all__ = [
    "DEFAULT_PROBE_REUSE_SECONDS",
    "INT64_MAX",
    "MAX_DEFAULT_SAMPLE_AGE_SECONDS",
    "MetricPolicy",
    "ValueSettings",
    "milli_from_text",
    "milli_text",
    "timestamp_from_seconds",
    "window_from_query",
]

INT64_MAX = 2**63 - 1
MAX_DEFAULT_SAMPLE_AGE_SECONDS = 60.0
DEFAULT_PROBE_REUSE_SECONDS = 1.0


@dataclass(frozen=True)
class MetricPolicy:
    """Per-metric value options (keyed by the API metric name in ``ValueSettings.policies``).

    empty_is_zero: an object (or external selector) with no sample reads 0 instead of NotFound.
        For counters of rare events ("errors per second" with no errors yet) where absence really
        means zero. Stale and NaN values stay missing even then.
    window_seconds: the window reported with values (``windowSeconds``); None infers it from the
        rule's ``metricsQuery``.
    """

    empty_is_zero: bool = False
    window_seconds: int | None = None


@dataclass(frozen=True, kw_only=True)
class ValueSettings:
    """max_sample_age_seconds: values whose newest raw sample is older count as missing; None
    turns the check (and its extra probe query) off. Default 60 s, which is 2 x a 30 s scrape
    interval; use ``for_scrape_interval`` to derive it.
    query_timeout_seconds: per-request deadline toward Prometheus (None: the client's default).
    probe_reuse_seconds: how long (adapter monotonic seconds from sending it) a custom-metrics
        staleness probe that proved every value of its request fresh is reused by later requests
        for the same objects, which then send the value query alone (default 1 s; 0 probes on
        every request). A reused probe still proves freshness (the newest sample can only be
        newer); see docs/adapter-values.md for what it delays.
    """

    max_sample_age_seconds: float | None = MAX_DEFAULT_SAMPLE_AGE_SECONDS
    policies: Mapping[str, MetricPolicy] = field(default_factory=dict)
    query_timeout_seconds: float | None = None
    probe_reuse_seconds: float = DEFAULT_PROBE_REUSE_SECONDS

    def __post_init__(self) -> None:
        if self.probe_reuse_seconds < 0:
            raise ValueError("probe_reuse_seconds must not be negative")

    @classmethod
    def for_scrape_interval(
        cls,
        scrape_interval_seconds: float,
        *,
        policies: Mapping[str, MetricPolicy] | None = None,
        query_timeout_seconds: float | None = None,
    ) -> ValueSettings:
        """The default bound: 2 x the scrape interval, at most 60 s."""
        if scrape_interval_seconds <= 0:
            raise ValueError("scrape_interval_seconds must be positive")
        return cls(
            max_sample_age_seconds=min(2 * scrape_interval_seconds, MAX_DEFAULT_SAMPLE_AGE_SECONDS),
            policies=dict(policies or {}),
            query_timeout_seconds=query_timeout_seconds,
        )

    def policy(self, metric: str) -> MetricPolicy:
        return self.policies.get(metric, _DEFAULT_POLICY)


_DEFAULT_POLICY = MetricPolicy()


def milli_from_text(text: str) -> int | None:
    """The value in thousandths, rounded to the nearest (halves away from zero); None for NaN,
    +-Inf or out of range.

    Prometheus prints plain decimals (Go's ``FormatFloat(v, 'f', -1, 64)``), which are rounded
    here with string and integer operations; anything else goes through ``Decimal``."""
    whole, dot, fraction = text.partition(".")
    if (
        whole
        and (whole.isdigit() or (whole[0] == "-" and whole[1:].isdigit()))
        and (not dot or fraction.isdigit())
        and whole.isascii()
        and fraction.isascii()
    ):
        magnitude = int(whole.lstrip("-") + fraction[:3].ljust(3, "0"))
        if len(fraction) > 3 and fraction[3] >= "5":
            magnitude += 1  # the rest is at least half a milli: away from zero
        if magnitude > INT64_MAX:
            return None
        return -magnitude if whole[0] == "-" else magnitude
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    if value.adjusted() > 18:
        return None  # at least 10**21 milli: beyond int64 (and beyond the context's exponent)
    milli = int((value * 1000).to_integral_value(rounding=ROUND_HALF_UP))
    if abs(milli) > INT64_MAX:
        return None
    return milli


def timestamp_from_seconds(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


# A range selector or subquery range: `[2m]`, `[1h30m]`, `[5m:30s]` (not templated ones).
_RANGE_RE = re.compile(r"\[\s*((?:[0-9]+(?:ms|[smhdwy]))+)\s*(?::[^\]]*)?\]")


def window_from_query(metrics_query: str) -> int | None:
    """The window, in whole seconds, written in a ``metricsQuery``: the range duration when
    exactly one distinct duration appears, else None."""
    durations = {match.group(1) for match in _RANGE_RE.finditer(metrics_query)}
    if len(durations) != 1:
        return None
    milliseconds = parse_duration_milliseconds(durations.pop())
    seconds = milliseconds // 1000
    return seconds if seconds > 0 else None
