"""The fast exact quantity reads agree with ``hpa.core.quantity`` on every string."""

from __future__ import annotations

import hypothesis
import pytest
from hypothesis import strategies as st

from hpa.core.duration import DurationError
from hpa.core.quantity import QuantityError, parse_quantity
from hpa.metrics.values import is_quantity, milli_value, milli_value_or_none, window_seconds

SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def exact(text: str) -> int | None:
    try:
        return parse_quantity(text).milli_value()
    except QuantityError:
        return None


plain = st.builds(
    lambda digits, suffix: digits + suffix,
    st.from_regex(r"[0-9]{1,22}", fullmatch=True),
    st.sampled_from(SUFFIXES),
)
other = st.one_of(
    st.from_regex(
        r"[+-]?[0-9]{0,4}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,2})?(m|Ki|k|n)?", fullmatch=True
    ),
    st.text(alphabet="0123456789.+-eEmnuKkiMG ", max_size=8),
)


@hypothesis.settings(max_examples=2000, deadline=None)
@hypothesis.given(st.one_of(plain, other))
def test_milli_value_is_parse_quantity_milli_value(text: str) -> None:
    expected = exact(text)
    assert milli_value_or_none(text) == expected
    if expected is None:
        with pytest.raises(QuantityError):
            milli_value(text)
        assert not is_quantity(text)
    else:
        assert milli_value(text) == expected
        assert is_quantity(text)


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("123456789n", 124),  # rounded up, as MilliValue does
        ("1000000n", 1),
        ("250m", 250),
        ("1", 1000),
        ("40Mi", 40 * 1024 * 1024 * 1000),
        ("99999999999999999999Ti", 2**63 - 1),  # saturates at int64 like upstream
    ],
)
def test_metrics_server_forms(text: str, milli: int) -> None:
    assert milli_value(text) == milli


def test_a_number_is_not_a_quantity_string() -> None:
    assert not is_quantity(5)
    assert milli_value_or_none(5) is None
    with pytest.raises(TypeError):
        milli_value(5)  # type: ignore[arg-type]


def test_windows_parse_once_and_errors_stay_errors() -> None:
    assert window_seconds("") == 0.0
    assert window_seconds("30s") == 30.0
    assert window_seconds("1m0.5s") == 60.5
    assert window_seconds("30s") == 30.0
    with pytest.raises(DurationError, match="invalid duration"):
        window_seconds("soon")
