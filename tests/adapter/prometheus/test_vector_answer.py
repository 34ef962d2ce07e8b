"""The samples of a vector answer: every value text ``Decimal`` reads is kept as sent, anything
else is an error naming the sample (``decode_vector_items``, whose fast path reads values with
``float``)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from adapter.prometheus.errors import PrometheusResponseError
from adapter.prometheus.results import Sample, decode_vector_items

TEXTS = [
    "1",
    "-0.25",
    "1e3",
    "+Inf",
    "-Inf",
    "NaN",
    "sNaN",
    "NaN12",
    "1_000",
    "1__0",
    " 2 ",
    "Infinity",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_value_text_decimal_reads_is_kept_as_sent(text: str) -> None:
    Decimal(text)  # the rule: what Decimal reads
    item = {"metric": {"pod": "p"}, "value": [1700000000, text]}
    [sample] = decode_vector_items([item], endpoint="/api/v1/query")
    assert sample == Sample({"pod": "p"}, 1700000000.0, text)
    assert type(sample) is Sample
    assert sample.value_text == text


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "0x10", "Inf inity"])
def test_a_value_text_decimal_refuses_is_an_error_naming_the_sample(text: str) -> None:
    item = {"metric": {"pod": "p"}, "value": [1700000000, text]}
    with pytest.raises(PrometheusResponseError, match="malformed sample point"):
        decode_vector_items([item], endpoint="/api/v1/query")
