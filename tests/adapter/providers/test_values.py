"""Value conversion, window inference and the default staleness bound (docs/adapter-values.md).

Upstream counterpart: ``resource.NewMilliQuantity(int64(value*1000.0), ...)`` in
prometheus-adapter's providers; the deviations (nearest milli from the exact text, NaN/Inf and
overflow refused) are pinned here.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter.providers import MetricPolicy, ValueSettings
from adapter.providers.values import INT64_MAX, milli_from_text, window_from_query


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("0", 0),
        ("1", 1000),
        ("0.85", 850),
        ("0.04999999999999999", 50),  # a float artifact of 0.05 reads as 0.05
        ("0.0004", 0),
        ("0.0005", 1),
        ("-0.0005", -1),
        ("-2.5", -2500),
        ("1e3", 1_000_000),
        ("9223372036854775.807", INT64_MAX),
    ],
)
def test_milli_from_text(text: str, milli: int) -> None:
    assert milli_from_text(text) == milli


@pytest.mark.parametrize("text", ["NaN", "+Inf", "-Inf", "9223372036854775.808", "1e300", "x"])
def test_values_that_are_not_quantities(text: str) -> None:
    assert milli_from_text(text) is None


@settings(max_examples=300)
@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_milli_is_within_half_a_milli_of_the_printed_value(value: float) -> None:
    text = repr(value)
    milli = milli_from_text(text)
    assert milli is not None
    assert abs(milli - value * 1000) <= 0.5 + abs(value) * 1e-12


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ("sum(rate(x{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)", 120),
        ("sum(rate(x[1h30m]))", 5400),
        ("avg_over_time(x[5m:30s])", 300),
        ("rate(x[2m]) / rate(y[2m])", 120),
        ("rate(x[2m]) / rate(y[5m])", None),
        ("sum(x{<<.LabelMatchers>>}) by (<<.GroupBy>>)", None),
        ("rate(x[500ms])", None),
    ],
)
def test_window_from_query(query: str, window: int | None) -> None:
    assert window_from_query(query) == window


def test_default_bound_is_twice_the_scrape_interval_at_most_a_minute() -> None:
    assert ValueSettings.for_scrape_interval(15).max_sample_age_seconds == 30
    assert ValueSettings.for_scrape_interval(60).max_sample_age_seconds == 60
    assert ValueSettings().max_sample_age_seconds == 60
    with pytest.raises(ValueError, match="positive"):
        ValueSettings.for_scrape_interval(0)


def test_policies_default_to_missing_is_not_zero() -> None:
    settings_ = ValueSettings(policies={"errors": MetricPolicy(empty_is_zero=True)})
    assert settings_.policy("errors").empty_is_zero
    assert not settings_.policy("requests").empty_is_zero


def _decimal_milli(text: str) -> int | None:
    """The exact rule, through ``Decimal`` (the fast string path must agree with it)."""
    from decimal import MAX_EMAX, MAX_PREC, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if not value.is_finite() or value.adjusted() >= 19:
        return None  # 10**22 milli and more: beyond int64 (not computed: huge exponents)
    with localcontext() as exact:
        exact.Emax, exact.prec = MAX_EMAX, MAX_PREC
        milli = int((value * 1000).to_integral_value(rounding=ROUND_HALF_UP))
    return None if abs(milli) > INT64_MAX else milli


@settings(max_examples=3000, deadline=None)
@given(
    st.decimals(allow_nan=False, allow_infinity=False).map(lambda d: format(d, "f"))
    | st.floats(allow_nan=True).map(repr)
    | st.from_regex(r"-?[0-9]{0,20}(\.[0-9]{0,25})?", fullmatch=True)
    | st.text(alphabet="0123456789.-+eE_ ٣", max_size=12)
)
def test_plain_decimals_round_as_the_decimal_rule_does(text: str) -> None:
    assert milli_from_text(text) == _decimal_milli(text)


@pytest.mark.parametrize("text", ["6E5590883", "1e400", "-1E+999999999"])
def test_huge_exponents_are_out_of_range_not_an_overflow(text: str) -> None:
    assert milli_from_text(text) is None
