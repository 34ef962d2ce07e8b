"""Unit tests and properties for hpa.core.quantity.

Upstream's own tables are ported in tests/parity/test_quantity_parity.py; this file pins our API,
the documented deviations, and checks properties against an independent exact oracle (Fraction).
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpa.core.quantity import (
    Format,
    Quantity,
    QuantityError,
    is_quantity,
    milli_text,
    milli_value,
    milli_value_or_none,
    parse_quantity,
)

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
DECIMAL_EXPONENTS = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


# ------------------------------------------------------------------------------------ examples


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1000m", "1"),
        ("1.5", "1500m"),
        ("1024Ki", "1Mi"),
        ("0.1", "100m"),
        ("1.5Gi", "1536Mi"),
        ("100m", "100m"),
        ("0.5Gi", "512Mi"),
        ("1.1E-9", "2e-9"),
        ("3.001n", "4n"),
        ("1500000", "1500k"),
    ],
)
def test_canonical_forms(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


def test_format_is_remembered_from_the_suffix() -> None:
    assert parse_quantity("1Ki").format is Format.BINARY_SI
    assert parse_quantity("1k").format is Format.DECIMAL_SI
    assert parse_quantity("1e3").format is Format.DECIMAL_EXPONENT
    assert parse_quantity("0Mi").format is Format.BINARY_SI
    # a BinarySI value in (0, 1) becomes DecimalSI while parsing
    assert parse_quantity("0.0001Ki").format is Format.DECIMAL_SI


def test_cpu_milli_and_memory_binary_constructors() -> None:
    """What the controller reports: cpu in milli DecimalSI, memory in BinarySI."""
    assert str(Quantity.from_milli(850)) == "850m"
    assert str(Quantity.from_milli(2000)) == "2"
    assert str(Quantity.from_int(512 * 1024 * 1024, Format.BINARY_SI)) == "512Mi"
    assert str(Quantity.from_scaled(15, 8)) == "1500M"
    assert Quantity.from_milli(1500).milli_value() == 1500


@pytest.mark.parametrize(
    ("value", "canonical"),
    [(1000, "1k"), (1023, "1023"), (1024, "1Ki"), (1536, "1536"), (2000, "2000"), (-1000, "-1k")],
)
def test_binary_si_below_1024_or_without_a_binary_suffix(value: int, canonical: str) -> None:
    """CanonicalizeBytes: |x| < 1024 prints as DecimalSI; 2000 has no binary suffix."""
    assert str(Quantity.from_int(value, Format.BINARY_SI)) == canonical


def test_binary_si_with_a_fraction_prints_as_decimal_si() -> None:
    q = Quantity(Decimal("1536.5"), Format.BINARY_SI)
    assert str(q) == "1536500m"


def test_binary_si_text_is_not_always_a_fixed_point() -> None:
    """Upstream: 2000 in BinarySI prints "2000", which parses as DecimalSI and prints "2k"."""
    binary = parse_quantity("1.953125Ki")
    assert (binary.amount, binary.format, str(binary)) == (Decimal(2000), Format.BINARY_SI, "2000")
    assert str(parse_quantity(str(binary))) == "2k"


def test_malformed_input_names_the_input() -> None:
    with pytest.raises(QuantityError, match="'12x'") as caught:
        parse_quantity("12x")
    assert caught.value.reason == QuantityError.FORMAT_WRONG
    assert caught.value.text == "12x"
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", QuantityError.FORMAT_WRONG),
        ("1.1.M", QuantityError.FORMAT_WRONG),
        (" 1", QuantityError.FORMAT_WRONG),
        ("0.1mi", QuantityError.SUFFIX),
        ("1ki", QuantityError.SUFFIX),
        ("1KI", QuantityError.FORMAT_WRONG),
        ("1e", QuantityError.SUFFIX),
        ("e-10", QuantityError.NUMERIC),  # no digits on the inf.Dec path
        (".e-12", QuantityError.NUMERIC),
        ("Pi", QuantityError.NUMERIC),  # "Ti" is 0 (int64 path), "Pi" takes the inf.Dec path
    ],
)
def test_error_reasons_are_upstream_messages(text: str, reason: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert caught.value.reason == reason
    assert str(caught.value) == f"cannot parse {text!r}: {reason}"


@pytest.mark.parametrize(
    ("text", "format"),
    [
        (".", Format.DECIMAL_SI),
        ("-", Format.DECIMAL_SI),
        ("+", Format.DECIMAL_SI),
        ("-0", Format.DECIMAL_SI),
        ("Ki", Format.BINARY_SI),
        ("Ti", Format.BINARY_SI),
        ("e3", Format.DECIMAL_EXPONENT),
        ("k", Format.DECIMAL_SI),
    ],
)
def test_upstream_accepts_inputs_without_digits_as_zero(text: str, format: Format) -> None:
    q = parse_quantity(text)
    assert q.is_zero()
    assert q.format is format
    assert str(q) == "0"


@pytest.mark.parametrize(
    ("text", "canonical"), [("+1", "1"), ("01", "1"), ("1.500", "1500m"), ("1E3", "1e3")]
)
def test_str_is_canonical_even_where_upstream_echoes_the_input(text: str, canonical: str) -> None:
    """Deviation: upstream's String() returns these inputs verbatim (its parse cache)."""
    assert str(parse_quantity(text)) == canonical


# ------------------------------------------------------------------------------------ no suffix


@pytest.mark.parametrize(
    ("q", "text"),
    [
        (parse_quantity("1000E"), "1e21"),
        (parse_quantity("5000E"), "5e21"),
        (Quantity.from_int(2**70, Format.BINARY_SI), "1180591620717411303424"),
        (Quantity(Decimal("1e70"), Format.BINARY_SI), "10e69"),
        (Quantity(Decimal("1e72"), Format.BINARY_SI), "1e72"),
        (Quantity.from_scaled(1, -12), "1e-12"),
        (Quantity.from_scaled(1, -10), "100e-12"),
    ],
)
def test_values_without_a_suffix_print_in_exponent_notation(q: Quantity, text: str) -> None:
    """Deviation: upstream drops the suffix (1000E prints as "1"), changing the value."""
    assert str(q) == text
    if q.amount.adjusted() >= -9:
        assert parse_quantity(text) == q


def test_two_to_the_63_in_binary_si_is_8ei() -> None:
    q = Quantity(Decimal(0), Format.DECIMAL_SI) - Quantity.from_int(MIN_INT64, Format.BINARY_SI)
    assert (str(q), q.format, q.amount) == ("8Ei", Format.BINARY_SI, Decimal(2**63))
    # ParseQuantity caps BinarySI at 2**63 - 1, so "8Ei" does not parse back to 2**63
    assert parse_quantity("8Ei").amount == MAX_INT64


@pytest.mark.parametrize("text", ["1e2147483648", "1e-2147483648", "1e4294967297", "1E99999999999"])
def test_exponent_outside_int32_is_rejected(text: str) -> None:
    """Deviation: upstream truncates the exponent to int32 (1e4294967297 parses as 1e1)."""
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert caught.value.reason == QuantityError.SUFFIX


def test_extreme_exponents_stay_cheap() -> None:
    huge = parse_quantity("1e2147483647")
    tiny = parse_quantity("1e-2147483647")
    assert str(huge) == "10e2147483646"
    assert huge.milli_value() == MAX_INT64
    assert (-huge).value() == MIN_INT64
    assert str(tiny) == "1e-9"
    assert huge > tiny > Quantity.from_int(0)
    assert hash(huge) == hash(parse_quantity(str(huge)))
    assert huge.as_approximate_float64() == math.inf


def test_very_long_numbers_are_handled_without_int_string_limits() -> None:
    digits = "1" + "0" * 5000 + "1"
    decimal_si = parse_quantity(digits + ".5")
    assert str(decimal_si) == digits + "500m"
    assert parse_quantity(str(decimal_si)) == decimal_si
    assert decimal_si.as_approximate_float64() == math.inf
    assert (-decimal_si).milli_value() == MIN_INT64
    binary_si = Quantity(Decimal(digits), Format.BINARY_SI) * 1024
    assert str(binary_si) == digits + "Ki"  # odd, so exactly one factor of 1024
    # BinarySI text above 2**63 - 1 parses back capped, as upstream
    assert parse_quantity(str(binary_si)).amount == MAX_INT64


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("-999999999999999999", "-999999999999999999"),
        ("999999999999999999", "999999999999999999"),
        ("-999999999999999999.0", "-999999999999999999"),
        ("999999999999999999.0", "999999999999999999"),
        ("-999999999999999999.1", "-999999999999999999100m"),
        ("999999999999999999.1", "999999999999999999100m"),
        ("-9999999999999999999", "-9999999999999999999"),
        ("9999999999999999999", "9999999999999999999"),
        ("-1E", "-1E"),
        ("1E", "1E"),
        ("-1000000000000000000", "-1E"),
        ("1000000000000000000", "1E"),
        ("-9999999999999999999000m", "-9999999999999999999"),
        ("9999999999999999999000m", "9999999999999999999"),
        ("-1.0000000000000000001E", "-1000000000000000000100m"),
        ("1.0000000000000000001E", "1000000000000000000100m"),
        ("-1.000000000000000001E", "-1000000000000000001"),
        ("1.000000000000000001E", "1000000000000000001"),
        ("-10E", "-10E"),
        ("10E", "10E"),
        ("-10000000000000000000", "-10E"),
        ("10000000000000000000000m", "10E"),
        ("-10.0000000000000000001E", "-10000000000000000000100m"),
        ("10000000000000000001", "10000000000000000001"),
        ("-9223372036854775809", "-9223372036854775809"),
        ("9223372036854775806.0", "9223372036854775806"),
        ("-9223372036854775808000m", "-9223372036854775808"),
        ("9223372036854775807.1", "9223372036854775807100m"),
        ("9223372036854775808", "9223372036854775808"),
        ("-9223372036854775807.1", "-9223372036854775807100m"),
    ],
)
def test_numbers_around_the_int64_bounds_print_exactly(text: str, canonical: str) -> None:
    """Inputs around 10**18 and 2**63 (cases of upstream's TestParseQuantity table)."""
    q = parse_quantity(text)
    assert str(q) == canonical
    exponent = {"E": 18, "m": -3}.get(text[-1], 0)
    assert q.amount == Decimal(f"{text.rstrip('Em')}e{exponent}")


# ------------------------------------------------------------------------------------ rounding


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("0.0005", 1, 1),
        ("-0.0005", -1, -1),
        ("1500m", 2, 1500),
        ("-1500m", -2, -1500),
        (".484785E-1", 1, 49),
        ("-.484785E-1", -1, -49),
        ("-.484785E-7466", -1, -1),
        ("9.5000000001Gi", 10200547329, 10200547328108),
        ("-9.5000000001Gi", -10200547329, -10200547328108),
        ("-0.0001Ki", -1, -103),
        ("1", 1, 1000),
        ("0", 0, 0),
    ],
)
def test_value_and_milli_value_round_away_from_zero(text: str, value: int, milli: int) -> None:
    q = parse_quantity(text)
    assert q.value() == value
    assert q.milli_value() == milli


@pytest.mark.parametrize(
    ("text", "milli"),
    [("12E", MAX_INT64), ("-12E", MIN_INT64), ("9223372036854775807", MAX_INT64)],
)
def test_milli_value_saturates_at_int64(text: str, milli: int) -> None:
    assert parse_quantity(text).milli_value() == milli


def test_round_up_keeps_format_and_reports_exactness() -> None:
    q, exact = parse_quantity("1.0001Ki").round_up(0)
    assert (str(q), exact, q.format) == ("1025", False, Format.BINARY_SI)
    same, exact = parse_quantity("2Ki").round_up(-3)
    assert (str(same), exact) == ("2Ki", True)


# ------------------------------------------------------------------------------------ API shape


def test_equality_and_hash_are_by_value_not_text() -> None:
    assert parse_quantity("1Ki") == parse_quantity("1024")
    assert hash(parse_quantity("1Ki")) == hash(parse_quantity("1024"))
    assert parse_quantity("1") < parse_quantity("1001m")
    assert parse_quantity("1.5").amount == Decimal("1.5")
    assert len({parse_quantity("1"), parse_quantity("1000m"), parse_quantity("1e0")}) == 1
    assert parse_quantity("1") != "1"


def test_quantity_is_frozen() -> None:
    q = parse_quantity("1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.amount = Decimal(2)  # type: ignore[misc]


@pytest.mark.parametrize("amount", [Decimal("NaN"), Decimal("Infinity"), 1.5, 1])
def test_amount_must_be_a_finite_decimal(amount: object) -> None:
    with pytest.raises(TypeError):
        Quantity(amount)  # type: ignore[arg-type]


def test_constructors_refuse_bools_and_floats() -> None:
    with pytest.raises(TypeError):
        Quantity.from_milli(True)
    with pytest.raises(TypeError):
        Quantity.from_int(1.5)  # type: ignore[arg-type]


def test_arithmetic_with_other_types_is_a_type_error() -> None:
    q = parse_quantity("1")
    with pytest.raises(TypeError):
        _ = q + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = q * 1.5  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = q * True
    with pytest.raises(TypeError):
        _ = q < 1  # type: ignore[operator]
    assert 3 * q == q * 3 == parse_quantity("3")


def test_sign_and_is_zero() -> None:
    assert [parse_quantity(t).sign() for t in ("-1m", "0", "0Ki", "1n")] == [-1, 0, 0, 1]
    assert parse_quantity("0.000Ki").is_zero()
    assert not parse_quantity("1n").is_zero()


def test_repr_shows_the_canonical_text_and_format() -> None:
    assert repr(parse_quantity("1.5Gi")) == "Quantity('1536Mi', format=BinarySI)"


def test_as_approximate_float64_is_the_only_float() -> None:
    assert parse_quantity("1.1Ki").as_approximate_float64() == 1126.4
    assert Quantity(Decimal("0E+500")).as_approximate_float64() == 0.0
    assert Quantity(Decimal("-12E+500")).as_approximate_float64() == -math.inf


# ------------------------------------------------------------------------------------ properties

_SIGNS = st.sampled_from(["", "+", "-"])
_DIGITS = st.text(alphabet="0123456789", max_size=22)
_FRACTIONS = st.none() | st.text(alphabet="0123456789", max_size=14)
_SUFFIXES = (
    st.sampled_from(sorted(DECIMAL_EXPONENTS))
    | st.sampled_from(sorted(BINARY_EXPONENTS))
    | st.builds(
        lambda e, sign, n: f"{e}{sign}{n}",
        st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]),
        st.integers(0, 40),
    )
)


@st.composite
def quantity_texts(draw: st.DrawFn) -> tuple[str, Fraction | None, Format]:
    """A quantity string and what it denotes, computed independently with Fraction.

    The value is None where upstream reports a numeric error (no digits on its inf.Dec path).
    """
    sign, digits, fraction, suffix = draw(_SIGNS), draw(_DIGITS), draw(_FRACTIONS), draw(_SUFFIXES)
    text = sign + digits + ("" if fraction is None else "." + fraction) + suffix
    if text == "":
        text, suffix = "0", ""
    frac = fraction or ""
    magnitude = Fraction(int(digits + frac or "0"), 10 ** len(frac))
    if suffix in DECIMAL_EXPONENTS:
        format, exponent = Format.DECIMAL_SI, DECIMAL_EXPONENTS[suffix]
    elif suffix in BINARY_EXPONENTS:
        format, exponent = Format.BINARY_SI, 0
        magnitude *= 2 ** BINARY_EXPONENTS[suffix]
    else:
        format, exponent = Format.DECIMAL_EXPONENT, int(suffix[1:])
    magnitude *= Fraction(10) ** exponent
    if not (digits or frac) and (exponent < -9 or suffix in ("Pi", "Ei")):
        # no digits, yet upstream's int64 fast path does not apply
        return text, None, format
    magnitude = Fraction(math.ceil(magnitude * 10**9), 10**9)  # sub-nano rounds up
    if format is Format.BINARY_SI and magnitude > MAX_INT64:
        magnitude = Fraction(MAX_INT64)
    if format is Format.BINARY_SI and 0 < magnitude < 1:
        format = Format.DECIMAL_SI
    return text, -magnitude if sign == "-" else magnitude, format


_PARSEABLE = quantity_texts().filter(lambda parsed: parsed[1] is not None)


@st.composite
def quantities(draw: st.DrawFn) -> Quantity:
    """Parsed quantities, and constructed ones at nano precision or coarser."""
    if draw(st.booleans()):
        return parse_quantity(draw(_PARSEABLE)[0])
    format = draw(st.sampled_from(list(Format)))
    coefficient = draw(st.integers(-(10**24), 10**24))
    exponent = draw(st.integers(-9, 24))
    amount = Decimal(f"{coefficient}e{exponent}")
    if format is Format.BINARY_SI and abs(amount) > MAX_INT64:
        amount = Decimal(coefficient % MAX_INT64)  # ParseQuantity caps BinarySI text
    return Quantity(amount, format)


@settings(max_examples=2000, deadline=None)
@given(quantity_texts())
def test_parse_matches_an_exact_oracle(case: tuple[str, Fraction | None, Format]) -> None:
    text, expected, format = case
    if expected is None:
        with pytest.raises(QuantityError) as caught:
            parse_quantity(text)
        assert caught.value.reason == QuantityError.NUMERIC
        return
    q = parse_quantity(text)
    assert Fraction(q.amount) == expected
    assert q.format is format


@settings(max_examples=1000, deadline=None)
@given(_PARSEABLE, _PARSEABLE)
def test_ordering_matches_the_exact_value(
    a: tuple[str, Fraction | None, Format], b: tuple[str, Fraction | None, Format]
) -> None:
    qa, qb = parse_quantity(a[0]), parse_quantity(b[0])
    va, vb = a[1], b[1]
    assert va is not None
    assert vb is not None
    assert (qa < qb, qa == qb, qa > qb) == (va < vb, va == vb, va > vb)
    assert (qa <= qb, qa >= qb) == (va <= vb, va >= vb)
    assert (qa < qb) == (qa.amount < qb.amount)
    if qa == qb:
        assert hash(qa) == hash(qb)


@settings(max_examples=2000, deadline=None)
@given(quantities())
def test_round_trip_keeps_value_and_canonical_text(q: Quantity) -> None:
    text = str(q)
    back = parse_quantity(text)
    assert back == q
    assert hash(back) == hash(q)
    if q.format is not Format.BINARY_SI or text.endswith("i"):
        assert str(back) == text
    # whatever the format, one round trip reaches a fixed point
    assert str(parse_quantity(str(back))) == str(back)


@settings(max_examples=1000, deadline=None)
@given(quantities())
def test_milli_value_and_value_round_away_from_zero(q: Quantity) -> None:
    for scaled, exact in (
        (q.milli_value(), Fraction(q.amount) * 1000),
        (q.value(), Fraction(q.amount)),
    ):
        if exact > MAX_INT64:
            assert scaled == MAX_INT64
        elif exact < MIN_INT64:
            assert scaled == MIN_INT64
        elif exact >= 0:
            assert exact <= scaled < exact + 1
        else:
            assert exact - 1 < scaled <= exact


@settings(max_examples=1000, deadline=None)
@given(quantities(), quantities())
def test_add_sub_neg_are_exact_and_keep_upstream_formats(a: Quantity, b: Quantity) -> None:
    total, difference = a + b, a - b
    assert Fraction(total.amount) == Fraction(a.amount) + Fraction(b.amount)
    assert Fraction(difference.amount) == Fraction(a.amount) - Fraction(b.amount)
    expected_format = b.format if a.is_zero() else a.format
    assert total.format is expected_format
    assert difference.format is expected_format
    assert difference + b == a
    negated = -a
    assert -negated == a
    assert negated.format is a.format
    assert negated.sign() == -a.sign()


def _digit_canonical_text(amount: Decimal, format: Format) -> str:
    """The canonical text computed from the digit tuple (the formatter before it read
    ``str(amount)``), for DecimalSI and DecimalExponent amounts."""
    sign, digits, exponent = amount.as_tuple()
    assert isinstance(exponent, int)
    if not any(digits):
        return "0"
    text = "".join(map(str, digits))
    stripped = text.lstrip("0").rstrip("0")
    exponent += len(text.lstrip("0")) - len(stripped)
    zeros = exponent % 3
    number = ("-" if sign else "") + stripped + "0" * zeros
    exponent -= zeros
    suffixes = {value: suffix for suffix, value in DECIMAL_EXPONENTS.items()}
    if format is Format.DECIMAL_SI and exponent in suffixes:
        return number + suffixes[exponent]
    return number + ("" if exponent == 0 else f"e{exponent}")


@settings(max_examples=3000, deadline=None)
@given(
    st.sampled_from([Format.DECIMAL_SI, Format.DECIMAL_EXPONENT]),
    st.integers(-(10**40), 10**40),
    st.integers(-60, 60) | st.integers(-(2**31), 2**31),
)
def test_canonical_text_matches_the_digit_by_digit_formatter(
    format: Format, coefficient: int, exponent: int
) -> None:
    """``str()`` of any amount (leading zeros, trailing zeros, exponent forms, huge exponents)
    is the text the digit-tuple formatter gives; milli values take the same path."""
    amount = Decimal(f"{coefficient}e{exponent}")  # exact, no context limits
    assert str(Quantity(amount, format)) == _digit_canonical_text(amount, format)
    milli = Quantity.from_milli(coefficient, format)
    assert str(milli) == _digit_canonical_text(Decimal(f"{coefficient}e-3"), format)
    assert milli == Quantity.from_scaled(coefficient, -3, format=format)


# ------------------------------------------------------ reading straight to milli-units

_INT64_MAX = 2**63 - 1
_PLAIN_SUFFIXES = [
    "",
    "n",
    "u",
    "m",
    "k",
    "M",
    "G",
    "T",
    "P",
    "E",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
]


def _exact(text: str) -> int | None:
    try:
        return parse_quantity(text).milli_value()
    except QuantityError:
        return None


_plain_texts = st.builds(
    lambda digits, suffix: digits + suffix,
    st.from_regex(r"[0-9]{1,22}", fullmatch=True),
    st.sampled_from(_PLAIN_SUFFIXES),
)
_other_texts = st.one_of(
    st.from_regex(
        r"[+-]?[0-9]{0,4}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,2})?(m|Ki|k|n)?", fullmatch=True
    ),
    st.text(alphabet="0123456789.+-eEmnuKkiMG ", max_size=8),
)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(_plain_texts, _other_texts))
def test_milli_value_is_parse_quantity_milli_value(text: str) -> None:
    expected = _exact(text)
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


@pytest.mark.parametrize(
    ("milli", "text"),
    [
        (0, "0"),
        (1, "1m"),
        (850, "850m"),
        (1000, "1"),
        (1500, "1500m"),
        (10_000, "10"),
        (1_000_000, "1k"),
        (1_200_000, "1200"),
        (-2500, "-2500m"),
        (-3_000_000, "-3k"),
        (_INT64_MAX, "9223372036854775807m"),
        (-_INT64_MAX - 1, "-9223372036854775808m"),
        (10**18, "1P"),
    ],
)
def test_milli_text_is_the_canonical_quantity(milli: int, text: str) -> None:
    assert milli_text(milli) == text == str(Quantity.from_milli(milli))


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.integers(min_value=-_INT64_MAX - 1, max_value=_INT64_MAX),
        st.builds(
            lambda digits, zeros, negative: (-1 if negative else 1) * digits * 10**zeros,
            st.integers(min_value=1, max_value=999),
            st.integers(min_value=0, max_value=15),
            st.booleans(),
        ),
    )
)
def test_milli_text_matches_quantity_formatting(milli: int) -> None:
    """The integer formatter the server writes values with agrees with ``Quantity`` (the
    ``Decimal`` port of ``CanonicalizeBytes``) everywhere, trailing zeros and suffixes
    included."""
    assert milli_text(milli) == str(Quantity.from_milli(milli))
