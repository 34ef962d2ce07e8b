"""Quantity, Time and MicroTime wire types."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from pydantic import ValidationError

from hpa.api.lease import LeaseSpec
from hpa.api.pod import ResourceRequirements
from hpa.api.types import format_micro_time, format_time, parse_time, quantity_of
from hpa.core.quantity import Quantity
from tests.hpa.api.strategies import quantity_strings, times


def test_quantity_keeps_the_exact_string() -> None:
    req = ResourceRequirements.from_dict({"requests": {"cpu": "1000m", "memory": "1.5Gi"}})
    assert req.requests == {"cpu": "1000m", "memory": "1.5Gi"}  # not canonicalized to "1"
    assert quantity_of(req.requests["cpu"]) == Quantity.from_int(1)


def test_quantity_from_a_json_number_is_written_as_a_string() -> None:
    req = ResourceRequirements.from_dict({"limits": {"cpu": 1, "memory": 0.5}})
    assert req.to_dict() == {"limits": {"cpu": "1", "memory": "0.5"}}


@pytest.mark.parametrize("bad", ["", "1.2.3", "12Qi", "abc", True])
def test_invalid_quantity_is_rejected(bad: object) -> None:
    with pytest.raises(ValidationError):
        ResourceRequirements.from_dict({"requests": {"cpu": bad}})


def test_time_is_written_in_utc_at_second_precision_like_metav1_time() -> None:
    when = parse_time("2024-05-06T09:08:07+02:00")
    assert when == datetime(2024, 5, 6, 7, 8, 7, tzinfo=UTC)
    assert format_time(datetime(5, 1, 2, 3, 4, 5, 999, tzinfo=UTC)) == "0005-01-02T03:04:05Z"


def test_a_time_without_offset_is_written_as_utc_whatever_the_machine_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        naive = datetime(2026, 9, 1, 12, 0, 0, 250)  # noqa: DTZ001 - the case under test
        assert format_time(naive) == "2026-09-01T12:00:00Z"
        assert format_micro_time(naive) == "2026-09-01T12:00:00.000250Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_time_without_offset_is_rejected() -> None:
    with pytest.raises(ValueError, match="no UTC offset"):
        parse_time("2024-05-06T09:08:07")


def test_micro_time_keeps_microseconds() -> None:
    spec = LeaseSpec.from_dict({"renewTime": "2024-01-02T03:04:05.123456Z"})
    assert spec.renew_time == datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert spec.to_dict() == {"renewTime": "2024-01-02T03:04:05.123456Z"}
    east = timezone(timedelta(hours=1))
    assert format_micro_time(datetime(2024, 1, 1, 1, 0, tzinfo=east)) == (
        "2024-01-01T00:00:00.000000Z"
    )


@settings(max_examples=300, deadline=None)
@given(times)
def test_time_text_round_trips(when: datetime) -> None:
    whole = when.replace(microsecond=0)
    assert parse_time(format_time(whole)) == whole
    assert parse_time(format_micro_time(when)) == when


@settings(max_examples=300, deadline=None)
@given(quantity_strings)
def test_quantity_text_round_trips_verbatim(text: str) -> None:
    req = ResourceRequirements.from_dict({"requests": {"x": text}})
    assert req.to_dict() == {"requests": {"x": text}}
