"""Unit tests and properties for hpa.core.quantity (upstream parity tables: tests/parity/)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hpa.core.quantity import Format, Quantity, QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("1000m", "1"), ("1.5", "1500m"), ("1024Ki", "1Mi"), ("0.1", "100m"), ("1.5Gi", "1536Mi")],
)
def test_canonical_forms(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


def test_cpu_milli_and_memory_binary_constructors() -> None:
    assert str(Quantity.from_milli(850)) == "850m"
    assert str(Quantity.from_int(512 * 1024 * 1024, Format.BINARY_SI)) == "512Mi"


def test_malformed_input_names_the_input() -> None:
    with pytest.raises(QuantityError, match="'12x'") as caught:
        parse_quantity("12x")
    assert caught.value.reason == QuantityError.FORMAT_WRONG
    assert isinstance(caught.value, ValueError)


def test_equality_is_by_value_not_text() -> None:
    assert parse_quantity("1Ki") == parse_quantity("1024")
    assert hash(parse_quantity("1Ki")) == hash(parse_quantity("1024"))
    assert parse_quantity("1") < parse_quantity("1001m")
    assert parse_quantity("1.5").amount == Decimal("1.5")
