"""Wire scalar types shared by the boundary models: Quantity, Time, MicroTime, IntOrString.

Upstream counterparts:

* ``k8s.io/apimachinery/pkg/api/resource.Quantity`` - kept as the exact string that was read, so
  that a read-then-write round trip is byte-for-byte; the string is checked with the exact parser
  :func:`hpa.core.quantity.parse_quantity` (values come out of :func:`quantity_of`).
* ``metav1.Time`` - RFC 3339 in UTC with second precision (``2006-01-02T15:04:05Z``).
* ``metav1.MicroTime`` - RFC 3339 in UTC with six fractional digits
  (``2006-01-02T15:04:05.000000Z``), used by Lease and events.k8s.io Event.
* ``intstr.IntOrString`` - an ``int`` or a ``str``, whichever was read.

Deliberate deviations:

* A Quantity given as a JSON/YAML number (``cpu: 1`` in a manifest) is accepted, as Go's
  ``Quantity.UnmarshalJSON`` does, and is written back as a string (``"1"``), as the API server
  does. Any other Quantity is written back exactly as read (upstream would canonicalize it).
* ``Time`` is written in UTC at second precision, exactly as Go's ``metav1.Time.MarshalJSON``:
  an input with an offset or with fractional seconds is normalized the same way upstream
  normalizes it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, PlainSerializer

from hpa.core.quantity import Quantity as ExactQuantity
from hpa.core.quantity import QuantityError, parse_quantity

__all__ = [
    "IntOrString",
    "MicroTime",
    "Quantity",
    "ResourceList",
    "Time",
    "format_micro_time",
    "format_time",
    "parse_time",
    "quantity_of",
]


def _quantity_text(value: Any) -> Any:
    """Accept a JSON number for a Quantity, as ``Quantity.UnmarshalJSON`` does."""
    if isinstance(value, bool):
        return value  # let the str check reject it
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return value


def _check_quantity(text: str) -> str:
    try:
        parse_quantity(text)
    except QuantityError as err:
        raise ValueError(f"invalid quantity {text!r}: {err}") from err
    return text


Quantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_check_quantity)]
"""A Kubernetes quantity, kept as the exact string read (``"100m"``, ``"1Gi"``, ``"0.5"``)."""

ResourceList = dict[str, Quantity]
"""``corev1.ResourceList``: resource name to quantity."""

IntOrString = int | str
"""``intstr.IntOrString``."""


def quantity_of(text: str) -> ExactQuantity:
    """The exact value of a Quantity string held by a model."""
    return parse_quantity(text)


def parse_time(value: Any) -> datetime:
    """Parse an RFC 3339 timestamp (or take an aware datetime) and return it in UTC."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as err:
            raise ValueError(f"invalid RFC 3339 time {value!r}") from err
    else:
        raise ValueError(f"a time must be an RFC 3339 string, not {type(value).__name__}")
    if parsed.tzinfo is None:
        raise ValueError(f"time {value!r} has no UTC offset")
    return parsed.astimezone(UTC)


def _time_to_utc_seconds(value: Any) -> datetime:
    return parse_time(value).replace(microsecond=0)


def _in_utc(value: datetime) -> datetime:
    """``value`` in UTC; a time without an offset is read as UTC (not as the machine's zone)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def format_time(value: datetime) -> str:
    """``metav1.Time`` wire form: ``2006-01-02T15:04:05Z``, the one writer of it (the API types,
    the Kubernetes client's objects and the adapter's answers)."""
    v = _in_utc(value)
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}Z"


def format_micro_time(value: datetime) -> str:
    """``metav1.MicroTime`` wire form: ``2006-01-02T15:04:05.000000Z``."""
    v = _in_utc(value)
    return (
        f"{v.year:04d}-{v.month:02d}-{v.day:02d}T"
        f"{v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}Z"
    )


Time = Annotated[
    datetime,
    BeforeValidator(_time_to_utc_seconds),
    PlainSerializer(format_time, return_type=str, when_used="json-unless-none"),
]
"""``metav1.Time``: an aware UTC datetime, whole seconds."""

MicroTime = Annotated[
    datetime,
    BeforeValidator(parse_time),
    PlainSerializer(format_micro_time, return_type=str, when_used="json-unless-none"),
]
"""``metav1.MicroTime``: an aware UTC datetime, microseconds."""
