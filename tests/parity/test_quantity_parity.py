"""Parity with upstream ``resource.Quantity`` tests.

Source: kubernetes/kubernetes ``staging/src/k8s.io/apimachinery/pkg/api/resource/``
``quantity_test.go`` @ db8b216c (its tables match ``quantity.go`` @ 009f4971),
``quantity_subnano_test.go`` @ 0f22d8b9 and ``scale_int_test.go`` @ 0411cc70. Every case id
starts with the Go test it comes from.

Ported by observable behaviour. Not ported, because they test Go representation or plumbing
that has no counterpart here: ``TestDec``/``TestBigDec`` (inf.Dec printing), the ``asDec``/
``AsInt64``/``q.s`` cache checks inside ``TestQuantityParse``/``TestQuantityString``/
``TestNewSet`` (one exact representation here; the cache check becomes "the canonical text
parses back to itself"), the two ``"invalidFormatDefaultsToExponent"`` rows of
``TestMilliNewSet``/``TestNewSet`` (``Format`` is a closed enum), ``TestMul``'s "fits int64"
flag, ``TestQuantityDeepCopy``/``TestDeepCopy``/``TestUninitializedNoCrash`` (immutable value),
``TestQuantityAsFloat64Slow``/``TestStringQuantityAsFloat64Slow`` (no AsFloat64Slow),
``TestJSON``/``TestJSONWhitespace``/``TestQuantityUnmarshalCBOR``/``TestQuantityRoundtripCBOR``/
``ExampleQuantityValue`` (encoding lives in ``hpa.api``; the JSON/CBOR fuzz round trips are the
hypothesis properties in ``tests/hpa/core/test_quantity.py``) and the benchmarks.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal

import pytest

from hpa.core.quantity import (
    Format,
    Quantity,
    QuantityError,
    _parse_quantity_string,
    parse_quantity,
)

DECIMAL_SI = Format.DECIMAL_SI
BINARY_SI = Format.BINARY_SI
DECIMAL_EXPONENT = Format.DECIMAL_EXPONENT
MOST_POSITIVE = 2**63 - 1
MOST_NEGATIVE = -(2**63)
NANO, MICRO, MILLI = -9, -6, -3


def dec_quantity(i: int, exponent: int, format: Format) -> Quantity:
    """``decQuantity``/``intQuantity``: ``i * 10**exponent`` with the given format."""
    return Quantity(Decimal(f"{i}e{exponent}"), format)


int_quantity = dec_quantity
MAX_ALLOWED = Decimal(MOST_POSITIVE)


def zero(format: Format = DECIMAL_SI) -> Quantity:
    """``Quantity{Format: ...}``: the zero value."""
    return Quantity(Decimal(0), format)


# ---------------------------------------------------------------------------- TestQuantityParse

PARSE_TABLE: list[tuple[str, Quantity]] = [
    ("0", dec_quantity(0, 0, DECIMAL_SI)),
    ("0n", dec_quantity(0, 0, DECIMAL_SI)),
    ("0u", dec_quantity(0, 0, DECIMAL_SI)),
    ("0m", dec_quantity(0, 0, DECIMAL_SI)),
    ("0Ki", dec_quantity(0, 0, BINARY_SI)),
    ("0k", dec_quantity(0, 0, DECIMAL_SI)),
    ("0Mi", dec_quantity(0, 0, BINARY_SI)),
    ("0M", dec_quantity(0, 0, DECIMAL_SI)),
    ("0Gi", dec_quantity(0, 0, BINARY_SI)),
    ("0G", dec_quantity(0, 0, DECIMAL_SI)),
    ("0Ti", dec_quantity(0, 0, BINARY_SI)),
    ("0T", dec_quantity(0, 0, DECIMAL_SI)),
    # Quantity less numbers are allowed
    ("1", dec_quantity(1, 0, DECIMAL_SI)),
    # Binary suffixes
    ("1Ki", dec_quantity(1024, 0, BINARY_SI)),
    ("8Ki", dec_quantity(8 * 1024, 0, BINARY_SI)),
    ("7Mi", dec_quantity(7 * 1024**2, 0, BINARY_SI)),
    ("6Gi", dec_quantity(6 * 1024**3, 0, BINARY_SI)),
    ("5Ti", dec_quantity(5 * 1024**4, 0, BINARY_SI)),
    ("4Pi", dec_quantity(4 * 1024**5, 0, BINARY_SI)),
    ("3Ei", dec_quantity(3 * 1024**6, 0, BINARY_SI)),
    ("10Ti", dec_quantity(10 * 1024**4, 0, BINARY_SI)),
    ("100Ti", dec_quantity(100 * 1024**4, 0, BINARY_SI)),
    # Decimal suffixes
    ("5n", dec_quantity(5, -9, DECIMAL_SI)),
    ("4u", dec_quantity(4, -6, DECIMAL_SI)),
    ("3m", dec_quantity(3, -3, DECIMAL_SI)),
    ("9", dec_quantity(9, 0, DECIMAL_SI)),
    ("8k", dec_quantity(8, 3, DECIMAL_SI)),
    ("50k", dec_quantity(5, 4, DECIMAL_SI)),
    ("7M", dec_quantity(7, 6, DECIMAL_SI)),
    ("6G", dec_quantity(6, 9, DECIMAL_SI)),
    ("5T", dec_quantity(5, 12, DECIMAL_SI)),
    ("40T", dec_quantity(4, 13, DECIMAL_SI)),
    ("300T", dec_quantity(3, 14, DECIMAL_SI)),
    ("2P", dec_quantity(2, 15, DECIMAL_SI)),
    ("1E", dec_quantity(1, 18, DECIMAL_SI)),
    # Decimal exponents
    ("1E-3", dec_quantity(1, -3, DECIMAL_EXPONENT)),
    ("1e3", dec_quantity(1, 3, DECIMAL_EXPONENT)),
    ("1E6", dec_quantity(1, 6, DECIMAL_EXPONENT)),
    ("1e9", dec_quantity(1, 9, DECIMAL_EXPONENT)),
    ("1E12", dec_quantity(1, 12, DECIMAL_EXPONENT)),
    ("1e15", dec_quantity(1, 15, DECIMAL_EXPONENT)),
    ("1E18", dec_quantity(1, 18, DECIMAL_EXPONENT)),
    # Nonstandard but still parsable
    ("1e14", dec_quantity(1, 14, DECIMAL_EXPONENT)),
    ("1e13", dec_quantity(1, 13, DECIMAL_EXPONENT)),
    ("1e3", dec_quantity(1, 3, DECIMAL_EXPONENT)),
    ("100.035k", dec_quantity(100035, 0, DECIMAL_SI)),
    # Things that look like floating point
    ("0.001", dec_quantity(1, -3, DECIMAL_SI)),
    ("0.0005k", dec_quantity(5, -1, DECIMAL_SI)),
    ("0.005", dec_quantity(5, -3, DECIMAL_SI)),
    ("0.05", dec_quantity(5, -2, DECIMAL_SI)),
    ("0.5", dec_quantity(5, -1, DECIMAL_SI)),
    ("0.00050k", dec_quantity(5, -1, DECIMAL_SI)),
    ("0.00500", dec_quantity(5, -3, DECIMAL_SI)),
    ("0.05000", dec_quantity(5, -2, DECIMAL_SI)),
    ("0.50000", dec_quantity(5, -1, DECIMAL_SI)),
    ("0.5e0", dec_quantity(5, -1, DECIMAL_EXPONENT)),
    ("0.5e-1", dec_quantity(5, -2, DECIMAL_EXPONENT)),
    ("0.5e-2", dec_quantity(5, -3, DECIMAL_EXPONENT)),
    ("0.5e0", dec_quantity(5, -1, DECIMAL_EXPONENT)),
    ("10.035M", dec_quantity(10035, 3, DECIMAL_SI)),
    ("1.2e3", dec_quantity(12, 2, DECIMAL_EXPONENT)),
    ("1.3E+6", dec_quantity(13, 5, DECIMAL_EXPONENT)),
    ("1.40e9", dec_quantity(14, 8, DECIMAL_EXPONENT)),
    ("1.53E12", dec_quantity(153, 10, DECIMAL_EXPONENT)),
    ("1.6e15", dec_quantity(16, 14, DECIMAL_EXPONENT)),
    ("1.7E18", dec_quantity(17, 17, DECIMAL_EXPONENT)),
    ("9.01", dec_quantity(901, -2, DECIMAL_SI)),
    ("8.1k", dec_quantity(81, 2, DECIMAL_SI)),
    ("7.123456M", dec_quantity(7123456, 0, DECIMAL_SI)),
    ("6.987654321G", dec_quantity(6987654321, 0, DECIMAL_SI)),
    ("5.444T", dec_quantity(5444, 9, DECIMAL_SI)),
    ("40.1T", dec_quantity(401, 11, DECIMAL_SI)),
    ("300.2T", dec_quantity(3002, 11, DECIMAL_SI)),
    ("2.5P", dec_quantity(25, 14, DECIMAL_SI)),
    ("1.01E", dec_quantity(101, 16, DECIMAL_SI)),
    # Things that saturate/round
    ("3.001n", dec_quantity(4, -9, DECIMAL_SI)),
    ("1.1E-9", dec_quantity(2, -9, DECIMAL_EXPONENT)),
    ("0.0000000001", dec_quantity(1, -9, DECIMAL_SI)),
    ("0.0000000005", dec_quantity(1, -9, DECIMAL_SI)),
    ("0.00000000050", dec_quantity(1, -9, DECIMAL_SI)),
    ("0.5e-9", dec_quantity(1, -9, DECIMAL_EXPONENT)),
    ("0.9n", dec_quantity(1, -9, DECIMAL_SI)),
    ("0.00000012345", dec_quantity(124, -9, DECIMAL_SI)),
    ("0.00000012354", dec_quantity(124, -9, DECIMAL_SI)),
    ("9Ei", Quantity(MAX_ALLOWED, BINARY_SI)),
    ("9223372036854775807Ki", Quantity(MAX_ALLOWED, BINARY_SI)),
    ("12E", dec_quantity(12, 18, DECIMAL_SI)),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", dec_quantity(10243584, -2, BINARY_SI)),
    ("0.5Mi", dec_quantity(512 * 1024, 0, BINARY_SI)),
    ("0.05Gi", dec_quantity(536870912, -1, BINARY_SI)),
    ("0.025Ti", dec_quantity(274877906944, -1, BINARY_SI)),
    # Things written by trolls
    ("0.000000000001Ki", dec_quantity(2, -9, DECIMAL_SI)),  # rounds up, changes format
    (".001", dec_quantity(1, -3, DECIMAL_SI)),
    (".0001k", dec_quantity(100, -3, DECIMAL_SI)),
    ("1.", dec_quantity(1, 0, DECIMAL_SI)),
    ("1.G", dec_quantity(1, 9, DECIMAL_SI)),
]


def _parse_params(test: str) -> list[object]:
    return [
        pytest.param(text, expect, id=f"{test}/{index}:{text}")
        for index, (text, expect) in enumerate(PARSE_TABLE)
    ]


@pytest.mark.parametrize(("text", "expect"), _parse_params("TestQuantityParse"))
def test_quantity_parse(text: str, expect: Quantity) -> None:
    got = parse_quantity(text)
    assert got == expect, f"{text}: expected {expect}, got {got}"
    assert got.format is expect.format
    # round trip from the decimal back to a quantity in every format
    for format in Format:
        assert Quantity(got.amount, format) == got
    # decompose the input and build the same value back up from its parts
    positive, _, num, denom, suffix = _parse_quantity_string(text)
    assert positive == (got.sign() >= 0)
    rebuilt = ("" if positive else "-") + num + ("." + denom if denom else "") + suffix
    assert parse_quantity(rebuilt) == got


@pytest.mark.parametrize(("text", "expect"), _parse_params("TestQuantityParse/negative"))
def test_quantity_parse_negative(text: str, expect: Quantity) -> None:
    got = parse_quantity("-" + text)
    assert got == -expect
    assert got.format is expect.format


@pytest.mark.parametrize(("text", "expect"), _parse_params("TestQuantityParse/plus"))
def test_quantity_parse_explicit_plus(text: str, expect: Quantity) -> None:
    got = parse_quantity("+" + text)
    assert got == expect
    assert got.format is expect.format


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(text, id=f"TestQuantityParse/invalid:{text!r}")
        for text in [
            "",
            "1.1.M",
            "1+1.0M",
            "0.1mi",
            "0.1am",
            "aoeu",
            ".5i",
            "1i",
            "-3.01i",
            "-3.01e-",
            # trailing whitespace is forbidden
            " 1",
            "1 ",
        ]
    ],
)
def test_quantity_parse_invalid(text: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert repr(text) in str(caught.value)
    assert caught.value.text == text


@pytest.mark.parametrize(
    ("text", "positive", "value", "num", "denom", "suffix"),
    [
        pytest.param(*row, id=f"TestParseQuantityString:{row[0]}")
        for row in [
            ("0.025Ti", True, "0.025", "0", "025", "Ti"),
            ("1.025Ti", True, "1.025", "1", "025", "Ti"),
            ("-1.025Ti", False, "-1.025", "1", "025", "Ti"),
            (".", True, ".", "0", "", ""),
            ("-.", False, "-.", "0", "", ""),
            ("1E-3", True, "1", "1", "", "E-3"),
        ]
    ],
)
def test_parse_quantity_string(
    text: str, positive: bool, value: str, num: str, denom: str, suffix: str
) -> None:
    assert _parse_quantity_string(text) == (positive, value, num, denom, suffix)


def test_quantity_parse_zero() -> None:
    """TestQuantityParseZero."""
    assert str(parse_quantity("0")) == "0"


def test_quantity_parse_non_numeric_panic() -> None:
    """TestQuantityParseNonNumericPanic: MustParse panics; parse_quantity raises."""
    with pytest.raises(QuantityError, match="Non-Numeric"):
        parse_quantity("Non-Numeric")


# ---------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(
    "text", ["100m", "1Gi"], ids=lambda t: f"TestQuantityAddZeroPreservesSuffix:{t}"
)
def test_quantity_add_zero_preserves_suffix(text: str) -> None:
    value = parse_quantity(text)
    zero_value = parse_quantity("0")
    assert str(value + zero_value) == text
    assert str(zero_value + value) == text


@pytest.mark.parametrize(
    "text", ["100m", "1Gi"], ids=lambda t: f"TestQuantitySubZeroPreservesSuffix:{t}"
)
def test_quantity_sub_zero_preserves_suffix(text: str) -> None:
    value = parse_quantity(text)
    zero_value = parse_quantity("0")
    assert str(value - zero_value) == text
    assert str(zero_value - value) == str(-value)


def test_quantity_canonicalize_zero() -> None:
    """TestQuantityCanocicalizeZero: 1000m - 1 prints 0, not 0<suffix>."""
    got = parse_quantity("1000m") - Quantity.from_int(1)
    assert str(Quantity(got.amount, DECIMAL_SI)) == "0"


def _cmp(a: Quantity, b: Quantity) -> int:
    return (a > b) - (a < b)


@pytest.mark.parametrize(
    ("x", "y", "expect"),
    [
        pytest.param(*row, id=f"TestQuantityCmp:{row[0]}-vs-{row[1]}")
        for row in [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1)]
    ],
)
def test_quantity_cmp(x: str, y: str, expect: int) -> None:
    assert _cmp(parse_quantity(x), parse_quantity(y)) == expect


@pytest.mark.parametrize(
    ("x", "y", "expect"),
    [
        pytest.param(*row, id=f"TestQuantityCmp/table2:{index}")
        for index, row in enumerate(
            [
                (0, 0, 0),
                (None, 0, 0),
                (0, None, 0),
                (None, None, 0),
                (None, 10, -1),
                (None, -10, 1),
                (10, None, 1),
                (-10, None, -1),
            ]
        )
    ],
)
def test_quantity_cmp_zero_value(x: int | None, y: int | None, expect: int) -> None:
    """A nil inf.Dec is the zero value."""

    def build(v: int | None) -> Quantity:
        return zero() if v is None else dec_quantity(v, 0, DECIMAL_SI)

    assert _cmp(build(x), build(y)) == expect


@pytest.mark.parametrize(
    ("text", "scale", "expect", "exact"),
    [
        pytest.param(*row, id=f"TestQuantityRoundUp:{row[0]}@{row[1]}")
        for row in [
            ("9.01", -3, dec_quantity(901, -2, DECIMAL_SI), True),
            ("9.01", -2, dec_quantity(901, -2, DECIMAL_SI), True),
            ("9.01", -1, dec_quantity(91, -1, DECIMAL_SI), False),
            ("9.01", 0, dec_quantity(10, 0, DECIMAL_SI), False),
            ("9.01", 1, dec_quantity(10, 0, DECIMAL_SI), False),
            ("9.01", 2, dec_quantity(100, 0, DECIMAL_SI), False),
            ("-9.01", -3, dec_quantity(-901, -2, DECIMAL_SI), True),
            ("-9.01", -2, dec_quantity(-901, -2, DECIMAL_SI), True),
            ("-9.01", -1, dec_quantity(-91, -1, DECIMAL_SI), False),
            ("-9.01", 0, dec_quantity(-10, 0, DECIMAL_SI), False),
            ("-9.01", 1, dec_quantity(-10, 0, DECIMAL_SI), False),
            ("-9.01", 2, dec_quantity(-100, 0, DECIMAL_SI), False),
        ]
    ],
)
def test_quantity_round_up(text: str, scale: int, expect: Quantity, exact: bool) -> None:
    got, got_exact = parse_quantity(text).round_up(scale)
    assert got_exact == exact
    assert got == expect


CMP_INT64_AND_DEC_TABLE = [
    (int_quantity(901, -2, DECIMAL_SI), int_quantity(901, -2, DECIMAL_SI), 0),
    (int_quantity(90, -1, DECIMAL_SI), int_quantity(901, -2, DECIMAL_SI), -1),
    (int_quantity(901, -2, DECIMAL_SI), int_quantity(900, -2, DECIMAL_SI), 1),
    (int_quantity(0, 0, DECIMAL_SI), int_quantity(0, 0, DECIMAL_SI), 0),
    (int_quantity(0, 1, DECIMAL_SI), int_quantity(0, -1, DECIMAL_SI), 0),
    (int_quantity(0, -1, DECIMAL_SI), int_quantity(0, 1, DECIMAL_SI), 0),
    (int_quantity(800, -3, DECIMAL_SI), int_quantity(1, 0, DECIMAL_SI), -1),
    (int_quantity(800, -3, DECIMAL_SI), int_quantity(79, -2, DECIMAL_SI), 1),
    (int_quantity(MOST_POSITIVE, 0, DECIMAL_SI), int_quantity(1, -1, DECIMAL_SI), 1),
    (int_quantity(MOST_POSITIVE, 1, DECIMAL_SI), int_quantity(1, 0, DECIMAL_SI), 1),
    (int_quantity(MOST_POSITIVE, 1, DECIMAL_SI), int_quantity(1, 1, DECIMAL_SI), 1),
    (int_quantity(MOST_POSITIVE, 1, DECIMAL_SI), int_quantity(0, 1, DECIMAL_SI), 1),
    (int_quantity(MOST_POSITIVE, -16, DECIMAL_SI), int_quantity(1, 3, DECIMAL_SI), -1),
    (int_quantity(MOST_NEGATIVE, 0, DECIMAL_SI), int_quantity(0, 0, DECIMAL_SI), -1),
    (int_quantity(MOST_NEGATIVE, -18, DECIMAL_SI), int_quantity(-1, 0, DECIMAL_SI), -1),
    (int_quantity(MOST_NEGATIVE, -19, DECIMAL_SI), int_quantity(-1, 0, DECIMAL_SI), 1),
    (int_quantity(10**18, -17, DECIMAL_SI), int_quantity(1, 1, DECIMAL_SI), 0),
    (int_quantity(10**18, -17, DECIMAL_SI), int_quantity(-10, 0, DECIMAL_SI), 1),
    (int_quantity(-(10**18), -17, DECIMAL_SI), int_quantity(-10, 0, DECIMAL_SI), 0),
    (int_quantity(10**18, -17, DECIMAL_SI), int_quantity(1, 0, DECIMAL_SI), 1),
    (int_quantity(10**18 + 1, -17, DECIMAL_SI), int_quantity(1, 1, DECIMAL_SI), 1),
    (int_quantity(10**18 - 1, -17, DECIMAL_SI), int_quantity(1, 1, DECIMAL_SI), -1),
]


@pytest.mark.parametrize(
    ("a", "b", "expect"),
    [
        pytest.param(*row, id=f"TestQuantityCmpInt64AndDec:{index}")
        for index, row in enumerate(CMP_INT64_AND_DEC_TABLE)
    ],
)
def test_quantity_cmp_int64_and_dec(a: Quantity, b: Quantity, expect: int) -> None:
    assert _cmp(a, b) == expect
    assert _cmp(b, a) == -expect
    assert (a == b) == (expect == 0)
    if expect == 0:
        assert hash(a) == hash(b)


@pytest.mark.parametrize(
    ("a", "out"),
    [
        pytest.param(int_quantity(901, -2, DECIMAL_SI), "-9010m", id="TestQuantityNeg:int"),
        pytest.param(dec_quantity(901, -2, DECIMAL_SI), "-9010m", id="TestQuantityNeg:dec"),
    ],
)
def test_quantity_neg(a: Quantity, out: str) -> None:
    negated = -a
    assert negated != a
    assert str(negated) == out
    assert str(a) == "9010m"  # the source is not mutated


# ---------------------------------------------------------------------------- TestQuantityString

STRING_TABLE: list[tuple[Quantity, str, str]] = [
    (dec_quantity(1024**3, 0, BINARY_SI), "1Gi", "1024Mi"),
    (dec_quantity(300 * 1024**2, 0, BINARY_SI), "300Mi", "307200Ki"),
    (dec_quantity(6 * 1024, 0, BINARY_SI), "6Ki", ""),
    (dec_quantity(1001 * 1024**3, 0, BINARY_SI), "1001Gi", "1025024Mi"),
    (dec_quantity(1024**4, 0, BINARY_SI), "1Ti", "1024Gi"),
    (dec_quantity(5, 0, BINARY_SI), "5", "5000m"),
    (dec_quantity(500, -3, BINARY_SI), "500m", "0.5"),
    (dec_quantity(1, 9, DECIMAL_SI), "1G", "1000M"),
    (dec_quantity(1000, 6, DECIMAL_SI), "1G", "0.001T"),
    (dec_quantity(1000000, 3, DECIMAL_SI), "1G", ""),
    (dec_quantity(1000000000, 0, DECIMAL_SI), "1G", ""),
    (dec_quantity(1, -3, DECIMAL_SI), "1m", "1000u"),
    (dec_quantity(80, -3, DECIMAL_SI), "80m", ""),
    (dec_quantity(1080, -3, DECIMAL_SI), "1080m", "1.08"),
    (dec_quantity(108, -2, DECIMAL_SI), "1080m", "1080000000n"),
    (dec_quantity(10800, -4, DECIMAL_SI), "1080m", ""),
    (dec_quantity(300, 6, DECIMAL_SI), "300M", ""),
    (dec_quantity(1, 12, DECIMAL_SI), "1T", ""),
    (dec_quantity(1234567, 6, DECIMAL_SI), "1234567M", ""),
    (dec_quantity(1234567, -3, BINARY_SI), "1234567m", ""),
    (dec_quantity(3, 3, DECIMAL_SI), "3k", ""),
    (dec_quantity(1025, 0, BINARY_SI), "1025", ""),
    (dec_quantity(0, 0, DECIMAL_SI), "0", ""),
    (dec_quantity(0, 0, BINARY_SI), "0", ""),
    (dec_quantity(1, 9, DECIMAL_EXPONENT), "1e9", ".001e12"),
    (dec_quantity(1, -3, DECIMAL_EXPONENT), "1e-3", "0.001e0"),
    (dec_quantity(1, -9, DECIMAL_EXPONENT), "1e-9", "1000e-12"),
    (dec_quantity(80, -3, DECIMAL_EXPONENT), "80e-3", ""),
    (dec_quantity(300, 6, DECIMAL_EXPONENT), "300e6", ""),
    (dec_quantity(1, 12, DECIMAL_EXPONENT), "1e12", ""),
    (dec_quantity(1, 3, DECIMAL_EXPONENT), "1e3", ""),
    (dec_quantity(3, 3, DECIMAL_EXPONENT), "3e3", ""),
    (dec_quantity(3, 3, DECIMAL_SI), "3k", ""),
    (dec_quantity(0, 0, DECIMAL_EXPONENT), "0", "00"),
    (dec_quantity(1, -9, DECIMAL_SI), "1n", ""),
    (dec_quantity(80, -9, DECIMAL_SI), "80n", ""),
    (dec_quantity(1080, -9, DECIMAL_SI), "1080n", ""),
    (dec_quantity(108, -8, DECIMAL_SI), "1080n", ""),
    (dec_quantity(10800, -10, DECIMAL_SI), "1080n", ""),
    (dec_quantity(1, -6, DECIMAL_SI), "1u", ""),
    (dec_quantity(80, -6, DECIMAL_SI), "80u", ""),
    (dec_quantity(1080, -6, DECIMAL_SI), "1080u", ""),
]


@pytest.mark.parametrize(
    ("q", "expect"),
    [
        pytest.param(q, expect, id=f"TestQuantityString/{index}:{expect}")
        for index, (q, expect, _) in enumerate(STRING_TABLE)
    ],
)
def test_quantity_string(q: Quantity, expect: str) -> None:
    assert str(q) == expect
    # the canonical string parses back to itself
    assert str(parse_quantity(expect)) == expect


@pytest.mark.parametrize(
    ("alternate", "expect"),
    [
        pytest.param(alternate, expect, id=f"TestQuantityString/alternate:{alternate}")
        for _, expect, alternate in STRING_TABLE
        if alternate
    ],
)
def test_quantity_string_alternate(alternate: str, expect: str) -> None:
    assert str(parse_quantity(alternate)) == expect


@pytest.mark.parametrize(
    ("q", "expect"),
    [
        pytest.param(q, expect, id=f"TestQuantityString/negative/{index}:{expect}")
        for index, (q, expect, _) in enumerate(STRING_TABLE)
        if not q.is_zero()  # never "-0"
    ],
)
def test_quantity_string_negative(q: Quantity, expect: str) -> None:
    assert str(-q) == "-" + expect


PARSE_EMIT_TABLE = [
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
]


@pytest.mark.parametrize(
    ("text", "expect"),
    [pytest.param(*row, id=f"TestQuantityParseEmit:{row[0]}") for row in PARSE_EMIT_TABLE],
)
def test_quantity_parse_emit(text: str, expect: str) -> None:
    assert str(parse_quantity(text)) == expect


@pytest.mark.parametrize(
    ("text", "expect"),
    [pytest.param(*row, id=f"TestQuantityParseEmit/negative:{row[0]}") for row in PARSE_EMIT_TABLE],
)
def test_quantity_parse_emit_negative(text: str, expect: str) -> None:
    assert str(parse_quantity("-" + text)) == "-" + expect


# ---------------------------------------------------------------------------- constructors


@pytest.mark.parametrize(
    ("value", "format", "expect", "exact"),
    [
        pytest.param(*row, id=f"TestMilliNewSet:{row[0]}-{row[1].value}")
        for row in [
            (1, DECIMAL_SI, "1m", True),
            (1000, DECIMAL_SI, "1", True),
            (1234000, DECIMAL_SI, "1234", True),
            (1024, BINARY_SI, "1024m", False),  # Format changes
            (1024 * 1024, BINARY_SI, "1048576m", False),  # Format changes
        ]
    ],
)
def test_milli_new_set(value: int, format: Format, expect: str, exact: bool) -> None:
    q = Quantity.from_milli(value, format)
    assert str(q) == expect
    if exact:
        assert parse_quantity(str(q)).milli_value() == value


@pytest.mark.parametrize(
    ("value", "format", "expect"),
    [
        pytest.param(*row, id=f"TestNewSet:{row[0]}-{row[1].value}")
        for row in [
            (1, DECIMAL_SI, "1"),
            (1000, DECIMAL_SI, "1k"),
            (1234000, DECIMAL_SI, "1234k"),
            (1024, BINARY_SI, "1Ki"),
            (1024 * 1024, BINARY_SI, "1Mi"),
        ]
    ],
)
def test_new_set(value: int, format: Format, expect: str) -> None:
    q = Quantity.from_int(value, format)
    assert str(q) == expect
    assert parse_quantity(str(q)).value() == value


@pytest.mark.parametrize(
    ("value", "scale", "expect"),
    [
        pytest.param(*row, id=f"TestNewScaledSet:{row[0]}e{row[1]}")
        for row in [
            (1, NANO, "1n"),
            (1000, NANO, "1u"),
            (1, MICRO, "1u"),
            (1000, MICRO, "1m"),
            (1, MILLI, "1m"),
            (1000, MILLI, "1"),
            (1, 0, "1"),
            (0, NANO, "0"),
            (0, MICRO, "0"),
            (0, MILLI, "0"),
            (0, 0, "0"),
        ]
    ],
)
def test_new_scaled_set(value: int, scale: int, expect: str) -> None:
    q = Quantity.from_scaled(value, scale)
    assert str(q) == expect
    assert parse_quantity(str(q)).scaled_value(scale) == value
    assert q.format is DECIMAL_SI


@pytest.mark.parametrize(
    ("from_scale", "to_scale", "expected"),
    [
        pytest.param(*row, id=f"TestScaledValue:{row[0]}->{row[1]}")
        for row in [
            (NANO, NANO, 1),
            (NANO, MICRO, 1),
            (NANO, MILLI, 1),
            (NANO, 0, 1),
            (MICRO, NANO, 1000),
            (MICRO, MICRO, 1),
            (MICRO, MILLI, 1),
            (MICRO, 0, 1),
            (MILLI, NANO, 1000 * 1000),
            (MILLI, MICRO, 1000),
            (MILLI, MILLI, 1),
            (MILLI, 0, 1),
            (0, NANO, 1000 * 1000 * 1000),
            (0, MICRO, 1000 * 1000),
            (0, MILLI, 1000),
            (0, 0, 1),
            (2, -2, 100 * 100),
        ]
    ],
)
def test_scaled_value(from_scale: int, to_scale: int, expected: int) -> None:
    assert Quantity.from_scaled(1, from_scale).scaled_value(to_scale) == expected


# ---------------------------------------------------------------------------- Sub/Neg/Add/Mul


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(*row, id=f"TestSub:{index}")
        for index, row in enumerate(
            [
                (
                    dec_quantity(10, 0, DECIMAL_SI),
                    dec_quantity(1, 1, DECIMAL_SI),
                    dec_quantity(0, 0, DECIMAL_SI),
                ),
                (
                    dec_quantity(10, 0, DECIMAL_SI),
                    dec_quantity(1, 0, BINARY_SI),
                    dec_quantity(9, 0, DECIMAL_SI),
                ),
                (
                    dec_quantity(10, 0, BINARY_SI),
                    dec_quantity(1, 0, DECIMAL_SI),
                    dec_quantity(9, 0, BINARY_SI),
                ),
                (zero(), dec_quantity(50, 0, DECIMAL_SI), dec_quantity(-50, 0, DECIMAL_SI)),
                (dec_quantity(50, 0, DECIMAL_SI), zero(), dec_quantity(50, 0, DECIMAL_SI)),
                (zero(), zero(), dec_quantity(0, 0, DECIMAL_SI)),
            ]
        )
    ],
)
def test_sub(a: Quantity, b: Quantity, expected: Quantity) -> None:
    got = a - b
    assert got == expected
    assert got.format is (b.format if a.is_zero() else a.format)


@pytest.mark.parametrize(
    ("a", "expected"),
    [
        pytest.param(*row, id=f"TestNeg:{index}")
        for index, row in enumerate(
            [
                (int_quantity(0, 0, DECIMAL_SI), int_quantity(0, 0, DECIMAL_SI)),
                (zero(), zero()),
                (int_quantity(10, 0, BINARY_SI), int_quantity(-10, 0, BINARY_SI)),
                (int_quantity(-10, 0, BINARY_SI), int_quantity(10, 0, BINARY_SI)),
                (dec_quantity(0, 0, DECIMAL_SI), int_quantity(0, 0, DECIMAL_SI)),
                (dec_quantity(10, 0, BINARY_SI), int_quantity(-10, 0, BINARY_SI)),
                (dec_quantity(-10, 0, BINARY_SI), int_quantity(10, 0, BINARY_SI)),
            ]
        )
    ],
)
def test_neg(a: Quantity, expected: Quantity) -> None:
    got = -a
    assert got == expected
    assert got.format is a.format


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(*row, id=f"TestAdd:{index}")
        for index, row in enumerate(
            [
                (
                    dec_quantity(10, 0, DECIMAL_SI),
                    dec_quantity(1, 1, DECIMAL_SI),
                    dec_quantity(20, 0, DECIMAL_SI),
                ),
                (
                    dec_quantity(10, 0, DECIMAL_SI),
                    dec_quantity(1, 0, BINARY_SI),
                    dec_quantity(11, 0, DECIMAL_SI),
                ),
                (
                    dec_quantity(10, 0, BINARY_SI),
                    dec_quantity(1, 0, DECIMAL_SI),
                    dec_quantity(11, 0, BINARY_SI),
                ),
                (zero(), dec_quantity(50, 0, DECIMAL_SI), dec_quantity(50, 0, DECIMAL_SI)),
                (dec_quantity(50, 0, DECIMAL_SI), zero(), dec_quantity(50, 0, DECIMAL_SI)),
                (zero(), zero(), dec_quantity(0, 0, DECIMAL_SI)),
            ]
        )
    ],
)
def test_add(a: Quantity, b: Quantity, expected: Quantity) -> None:
    got = a + b
    assert got == expected
    assert got.format is (b.format if a.is_zero() else a.format)


MUL_TABLE = [
    (dec_quantity(10, 0, DECIMAL_SI), 10, dec_quantity(100, 0, DECIMAL_SI)),
    (dec_quantity(10, 0, DECIMAL_SI), 1, dec_quantity(10, 0, DECIMAL_SI)),
    (dec_quantity(10, 0, BINARY_SI), 1, dec_quantity(10, 0, BINARY_SI)),
    (zero(), 50, dec_quantity(0, 0, DECIMAL_SI)),
    (dec_quantity(50, 0, DECIMAL_SI), 0, dec_quantity(0, 0, DECIMAL_SI)),
    (zero(), 0, dec_quantity(0, 0, DECIMAL_SI)),
    (dec_quantity(10, 0, DECIMAL_SI), -10, dec_quantity(-100, 0, DECIMAL_SI)),
    (dec_quantity(-10, 0, DECIMAL_SI), 1, dec_quantity(-10, 0, DECIMAL_SI)),
    (dec_quantity(10, 0, BINARY_SI), -1, dec_quantity(-10, 0, BINARY_SI)),
    (dec_quantity(-50, 0, DECIMAL_SI), 0, dec_quantity(0, 0, DECIMAL_SI)),
    (dec_quantity(-50, 0, DECIMAL_SI), -50, dec_quantity(2500, 0, DECIMAL_SI)),
    (zero(), -50, dec_quantity(0, 0, DECIMAL_SI)),
    (dec_quantity(MOST_POSITIVE, 0, DECIMAL_SI), 0, dec_quantity(0, 1, DECIMAL_SI)),
    (dec_quantity(MOST_POSITIVE, 0, DECIMAL_SI), 1, dec_quantity(MOST_POSITIVE, 0, DECIMAL_SI)),
    (dec_quantity(MOST_POSITIVE, 0, DECIMAL_SI), -1, dec_quantity(-MOST_POSITIVE, 0, DECIMAL_SI)),
    (
        dec_quantity(MOST_POSITIVE // 2, 0, DECIMAL_SI),
        2,
        dec_quantity((MOST_POSITIVE // 2) * 2, 0, DECIMAL_SI),
    ),
    (
        dec_quantity(-(MOST_POSITIVE // 2), 0, DECIMAL_SI),
        -2,
        dec_quantity((MOST_POSITIVE // 2) * 2, 0, DECIMAL_SI),
    ),
    (dec_quantity(MOST_POSITIVE, 0, DECIMAL_SI), 2, dec_quantity(MOST_POSITIVE * 2, 0, DECIMAL_SI)),
    (dec_quantity(MOST_POSITIVE, 0, DECIMAL_SI), 10, dec_quantity(MOST_POSITIVE, 1, DECIMAL_SI)),
    (dec_quantity(MOST_POSITIVE, 0, DECIMAL_SI), -10, dec_quantity(-MOST_POSITIVE, 1, DECIMAL_SI)),
    (dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI), 0, dec_quantity(0, 1, DECIMAL_SI)),
    (dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI), 1, dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI)),
    (
        dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI),
        -1,
        dec_quantity(MOST_POSITIVE + 1, 0, DECIMAL_SI),
    ),
    (
        dec_quantity(MOST_NEGATIVE // 2, 0, DECIMAL_SI),
        2,
        dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI),
    ),
    (
        dec_quantity(-(MOST_NEGATIVE // 2), 0, DECIMAL_SI),
        -2,
        dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI),
    ),
    (dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI), 2, dec_quantity(MOST_NEGATIVE * 2, 0, DECIMAL_SI)),
    (dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI), 10, dec_quantity(MOST_NEGATIVE, 1, DECIMAL_SI)),
    (
        dec_quantity(MOST_NEGATIVE, 0, DECIMAL_SI),
        -10,
        dec_quantity(MOST_POSITIVE + 1, 1, DECIMAL_SI),
    ),
]


@pytest.mark.parametrize(
    ("a", "factor", "expected"),
    [pytest.param(*row, id=f"TestMul:{index}") for index, row in enumerate(MUL_TABLE)],
)
def test_mul(a: Quantity, factor: int, expected: Quantity) -> None:
    got = a * factor
    assert got == expected
    assert got.format is a.format


@pytest.mark.parametrize("scale", range(-10, 11), ids=lambda k: f"TestAddSubRoundTrip:{k}")
def test_add_sub_round_trip(scale: int) -> None:
    rng = random.Random(scale)
    q = zero()
    order = [rng.randrange(MOST_POSITIVE + 1) for _ in range(100)]
    for j in order:
        q = q + Quantity.from_scaled(j, scale)
    for j in order:
        q = q - Quantity.from_scaled(j, scale)
    assert q.is_zero(), f"addition and subtraction did not cancel: {q}"


def test_add_sub_round_trip_across_scales() -> None:
    """TestAddSubRoundTripAcrossScales."""
    rng = random.Random(20)
    q = zero()
    order = [rng.randrange(MOST_POSITIVE + 1) for _ in range(100)]
    for j in order:
        q = q + Quantity.from_scaled(j, j % 20 - 10)
    for j in order:
        q = q - Quantity.from_scaled(j, j % 20 - 10)
    assert q.is_zero(), f"addition and subtraction did not cancel: {q}"


@pytest.mark.parametrize("scale", range(-10, 11), ids=lambda k: f"TestNegateRoundTrip:{k}")
def test_negate_round_trip(scale: int) -> None:
    rng = random.Random(100 + scale)
    for _ in range(100):
        q = Quantity.from_scaled(rng.randrange(MOST_POSITIVE + 1), scale)
        negated = -q
        assert -negated == q, f"double negation did not cancel: {q}"


# ---------------------------------------------------------------------------- floats

_PAIRS = [(0, 0), (1, 0), (1024, 0), (8 * 1024, 0)] + [
    (7 * 1024 * 1024, e) for e in (0, 1, 4, 8, -1, -8)
]


def _float_expectation(i: int, exponent: int) -> float:
    if exponent == -1:
        return (7 * 1024 * 1024) * 0.1  # Go: '* Pow10' and '/ float(10)' do not round alike
    if exponent == -8:
        return (7 * 1024 * 1024) / 100000000.0
    return float(i * 10**exponent)


APPROXIMATE_FLOAT_TABLE: list[tuple[Quantity, float]] = [
    (dec_quantity(i, e, format), _float_expectation(i, e))
    for format in (BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT)
    for i, e in _PAIRS
] + [
    # very large numbers
    (Quantity(MAX_ALLOWED, DECIMAL_SI), float(MOST_POSITIVE)),
    (Quantity(MAX_ALLOWED, BINARY_SI), float(MOST_POSITIVE)),
    (dec_quantity(12, 18, DECIMAL_SI), 1.2e19),
    # infinities caused due to float64 overflow
    (dec_quantity(12, 500, DECIMAL_SI), math.inf),
    (dec_quantity(-12, 500, DECIMAL_SI), -math.inf),
]


@pytest.mark.parametrize(
    ("q", "out"),
    [
        pytest.param(q, out, id=f"TestQuantityAsApproximateFloat64/{index}:{q.format.value}:{q}")
        for index, (q, out) in enumerate(APPROXIMATE_FLOAT_TABLE)
    ],
)
def test_quantity_as_approximate_float64(q: Quantity, out: float) -> None:
    assert q.as_approximate_float64() == out


@pytest.mark.parametrize(
    ("text", "out"),
    [
        pytest.param(*row, id=f"TestStringQuantityAsApproximateFloat64:{row[0]}")
        for row in [
            ("2Ki", 2048.0),
            ("1.1Ki", 1126.4),
            ("1Mi", 1.048576e06),
            ("2Gi", 2.147483648e09),
        ]
    ],
)
def test_string_quantity_as_approximate_float64(text: str, out: float) -> None:
    assert parse_quantity(text).as_approximate_float64() == out


def test_quantity_value_set() -> None:
    """TestQuantityValueSet: the flag value parses, rejects garbage and re-encodes as given."""
    with pytest.raises(QuantityError):
        parse_quantity("invalid")
    q = parse_quantity("1Mi")
    assert q.value() == 1024 * 1024
    assert str(q) == "1Mi"


# ------------------------------------------------------------------ quantity_subnano_test.go


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(*row, id=f"TestParseQuantitySubNanoRoundsUp:{row[0]}")
        for row in [
            ("1e-2147483647", "1n"),
            ("-1e-2147483647", "-1n"),
            ("1e-100", "1n"),
            ("-1e-100", "-1n"),
            ("1e-10", "1n"),
            ("9e-10", "1n"),
            ("-9e-10", "-1n"),
            ("1e-9", "1n"),
            ("-1e-9", "-1n"),
            ("2e-9", "2n"),
            ("15e-10", "2n"),
            ("1000000000000000000000e-30", "1n"),
            ("1000000000000000000001e-30", "2n"),
            ("999999999999999999999e-30", "1n"),
            ("0e-2147483647", "0"),
            ("0.0e-100", "0"),
            ("0.00000000000000000000001Ki", "1n"),
        ]
    ],
)
def test_parse_quantity_sub_nano_rounds_up(text: str, want: str) -> None:
    assert parse_quantity(text) == parse_quantity(want)


@pytest.mark.parametrize(
    ("text", "want", "format"),
    [
        pytest.param(*row, id=f"TestParseQuantitySubNanoMatchesRound:{row[0]}")
        for row in [
            ("1e-100", "1e-9", DECIMAL_EXPONENT),
            ("0.0000000000001", "1n", DECIMAL_SI),
            ("-0.0000000000001", "-1n", DECIMAL_SI),
            ("0.00000000000000000000001Ki", "1n", DECIMAL_SI),
        ]
    ],
)
def test_parse_quantity_sub_nano_matches_round(text: str, want: str, format: Format) -> None:
    q = parse_quantity(text)
    assert str(q) == want
    assert q.format is format


@pytest.mark.parametrize(
    ("shortcut", "round_path"),
    [
        pytest.param(*row, id=f"TestParseQuantitySubNanoMatchesRound/same:{row[0]}")
        for row in [
            ("1e-100", "9e-10"),
            ("-1e-2147483647", "-9e-10"),
            ("0.0000000000001", "0.0000000009"),
        ]
    ],
)
def test_parse_quantity_sub_nano_same_as_round_path(shortcut: str, round_path: str) -> None:
    a, b = parse_quantity(shortcut), parse_quantity(round_path)
    assert (a, a.format, str(a)) == (b, b.format, str(b))


# ------------------------------------------------------------------ scale_int_test.go

SCALED_VALUE_INTERNAL_TABLE: list[tuple[int, int, int, int]] = [
    # remain scale
    (1000, 0, 0, 1000),
    (-1000, 0, 0, -1000),
    # scale down
    (1000, 0, -3, 1),
    (1000, 3, 0, 1),
    (-1000, 3, 0, -1),
    (0, 3, 0, 0),
    # scale down rounds away from zero
    (999, 3, 0, 1),
    (500, 3, 0, 1),
    (499, 3, 0, 1),
    (1, 3, 0, 1),
    (-1, 3, 0, -1),
    (-499, 3, 0, -1),
    (-500, 3, 0, -1),
    (-999, 3, 0, -1),
    (-1500, 3, 0, -2),
    # large scaled value does not lose precision
    (MOST_POSITIVE - 1, 1, 0, (MOST_POSITIVE - 1) // 10 + 1),
    # large intermediate result, positive and negative
    (10**100, 100, 0, 1),
    (-(10**100), 100, 0, -1),
    (5, 19, 0, 1),
    (-5, 19, 0, -1),
    (MOST_NEGATIVE * 1000, 3, 0, MOST_NEGATIVE),
    # scale up
    (0, 0, 3, 0),
    (1, 0, 3, 1000),
    (1, -3, 0, 1000),
    (1000, -3, 2, 100000000),
    (MOST_POSITIVE // 1000, 0, 3, (MOST_POSITIVE // 1000) * 1000),
]


@pytest.mark.parametrize(
    ("unscaled", "inf_scale", "new_inf_scale", "want"),
    [
        pytest.param(*row, id=f"TestScaledValueInternal:{index}")
        for index, row in enumerate(SCALED_VALUE_INTERNAL_TABLE)
    ],
)
def test_scaled_value_internal(
    unscaled: int, inf_scale: int, new_inf_scale: int, want: int
) -> None:
    """``scaledValue(unscaled, scale, newScale)``; an inf.Scale counts digits after the point."""
    q = Quantity(Decimal(f"{unscaled}e{-inf_scale}"), DECIMAL_SI)
    assert q.scaled_value(-new_inf_scale) == want
