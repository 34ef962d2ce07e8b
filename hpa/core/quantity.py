"""Exact Kubernetes resource quantities: parse, compare, do arithmetic and format canonically.

Upstream counterpart: ``k8s.io/apimachinery/pkg/api/resource`` in kubernetes/kubernetes
(``quantity.go``: ``ParseQuantity``, ``parseQuantityString``, ``CanonicalizeBytes``,
``ScaledValue``/``MilliValue``/``Value``, ``Add``/``Sub``/``Neg``/``Mul``/``RoundUp``/``Cmp``,
``NewQuantity``/``NewMilliQuantity``/``NewScaledQuantity``, ``AsApproximateFloat64``;
``suffix.go``: the suffix tables; ``amount.go``: ``AsCanonicalBytes``,
``AsCanonicalBase1024Bytes``, ``AsScaledInt64``; ``scale_int.go``: ``scaledValue``).

The value is held as an exact :class:`decimal.Decimal` (never a float) together with the
:class:`Format` remembered from the parsed suffix. Every upstream rule that changes a value or its
text is ported: rounding of sub-nano precision *up* (away from zero) while parsing, the BinarySI
cap at ``2**63 - 1``, BinarySI values in ``(-1, 1)`` parsing as DecimalSI, BinarySI values in
``(-1024, 1024)`` or with a fraction printing as DecimalSI, canonical forms with the largest
suffix that loses nothing (``1000m`` -> ``1``, ``1.5`` -> ``1500m``, ``1024Ki`` -> ``1Mi``), and
the format of a zero left operand of ``+``/``-`` being replaced by the other operand's format.

Deliberate deviations (each pinned by a test in ``tests/hpa/core/test_quantity.py``):

- ``str()`` is always the canonical form. Upstream caches the *input* string for some parses and
  echoes it from ``String()``/``MarshalJSON`` (``"+1"``, ``"01"``, ``"1.500"`` and ``"1E3"``
  come back verbatim there); we print ``1``, ``1``, ``1500m`` and ``1e3``.
- A value with no suffix for its canonical exponent (DecimalSI beyond ``E`` = 10**18 or below
  ``n`` = 10**-9, BinarySI beyond ``Ei``) prints in exponent notation: ``1000E`` -> ``1e21``,
  ``2**70`` BinarySI -> ``1180591620717411303424``. ``quantity.go`` @ 009f4971 drops the suffix
  there (``1000E`` -> ``1``), silently changing the value; a newer stored ``quantity_test.go``
  (@ 002cd1a0) expects our strings. So ``parse_quantity(str(q)) == q`` for every ``q`` at nano
  precision or coarser (BinarySI text above ``2**63 - 1`` still parses back capped, as upstream).
- An exponent outside ``[-(2**31 - 1), 2**31 - 1]`` is rejected with the suffix error.
  ``suffix.go`` truncates it to int32, so upstream parses ``1e4294967297`` as ``1e1``.
- ``value()``/``milli_value()``/``scaled_value()`` round away from zero (a ceiling for positive
  values; upstream documents ``Value`` so) and saturate at the int64 bounds like upstream's
  ``int64Amount.AsScaledInt64``. Older ``scale_int.go`` (@ 68d46772) truncates negative
  ``inf.Dec`` values and adds one (``-0.5`` -> ``1``) and wraps on overflow; that depends on an
  internal int64/inf.Dec split we do not model. Integers given to the constructors and to ``*``
  are not limited to int64, and ``*`` does not report upstream's "fits int64" flag.
- ``Format`` is a closed enum, so upstream's "unknown format prints as DecimalExponent" path does
  not exist. ``as_approximate_float64`` follows upstream's formula on our stored coefficient and
  exponent (the parse paths store the same ones upstream does), and returns 0.0 for any zero.
"""

from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import ClassVar, Final

__all__ = [
    "Format",
    "Quantity",
    "QuantityError",
    "is_quantity",
    "milli_text",
    "milli_value",
    "milli_value_or_none",
    "parse_quantity",
]


class Format(StrEnum):
    """How a quantity is printed; remembered from the suffix it was parsed with."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi (12 * 2**20)
    DECIMAL_SI = "DecimalSI"  # 12M (12 * 10**6)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message names the input.

    ``reason`` is the upstream error text: :attr:`FORMAT_WRONG`, :attr:`NUMERIC` or
    :attr:`SUFFIX`.
    """

    FORMAT_WRONG: ClassVar[str] = (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    NUMERIC: ClassVar[str] = "unable to parse numeric part of quantity"
    SUFFIX: ClassVar[str] = "unable to parse quantity's suffix"

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"cannot parse {text!r}: {reason}")
        self.text = text
        self.reason = reason


_MAX_INT64: Final = 2**63 - 1
_MIN_INT64: Final = -(2**63)
_MAX_INT32: Final = 2**31 - 1
_NANO_SCALE: Final = -9
# maxInt64Factors in quantity.go: decimal digits that always fit an int64.
_MAX_INT64_FACTORS: Final = 18
_DIGITS: Final = frozenset("0123456789")
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_EXPONENT_DIGITS: Final = re.compile(r"[+-]?[0-9]+")

# suffix.go: decimal suffixes (base 10) and binary suffixes (base 2), both directions.
_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
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
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
_DECIMAL_SUFFIX_BY_EXPONENT: Final = {exp: s for s, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_SUFFIX_BY_EXPONENT: Final = {exp: s for s, exp in _BINARY_SUFFIXES.items()}
# A canonical base-10 exponent from which a value surely holds more than 1024**6 (Ei).
_BEYOND_EI_DECIMAL_EXPONENT: Final = 70

# Exact arithmetic: enough precision for any result we build, exponents as wide as Decimal allows,
# and a trap on anything inexact so a rounding can never slip in unnoticed.
_EXACT: Final = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    rounding=decimal.ROUND_UP,
    traps=[decimal.InvalidOperation, decimal.Inexact, decimal.Overflow, decimal.DivisionByZero],
)
_ROUNDING: Final = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    rounding=decimal.ROUND_UP,
    traps=[decimal.InvalidOperation, decimal.Overflow, decimal.DivisionByZero],
)
_NANO: Final = Decimal("1e-9")
_ZERO: Final = Decimal(0)


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """A fixed-point number with a remembered print format, like upstream ``resource.Quantity``.

    Equality, hashing and ordering use the value only (``Quantity.Cmp``): ``1Ki == 1024``.
    ``str()`` is the canonical text, which depends on the value and the format.
    """

    amount: Decimal
    format: Format = Format.DECIMAL_SI

    def __post_init__(self) -> None:
        if not isinstance(self.amount, Decimal) or not self.amount.is_finite():
            raise TypeError(f"Quantity amount must be a finite Decimal, got {self.amount!r}")
        if not isinstance(self.format, Format):
            raise TypeError(f"Quantity format must be a Format, got {self.format!r}")

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_int(cls, value: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``NewQuantity(value, format)``: ``value`` whole units."""
        return cls(Decimal(_checked_int(value)), format)

    @classmethod
    def from_milli(cls, value_milli: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``NewMilliQuantity(value, format)``: ``value_milli`` thousandths of a unit."""
        return cls(_EXACT.scaleb(Decimal(_checked_int(value_milli)), -3), format)

    @classmethod
    def from_scaled(cls, value: int, scale: int, *, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``NewScaledQuantity(value, scale)``: ``value * 10**scale`` (DecimalSI by default)."""
        return cls(_EXACT.scaleb(Decimal(_checked_int(value)), _checked_int(scale)), format)

    # ------------------------------------------------------------------ accessors

    def is_zero(self) -> bool:
        """``IsZero``."""
        return self.amount.is_zero()

    def sign(self) -> int:
        """``Sign``: -1, 0 or 1."""
        if self.amount.is_zero():
            return 0
        return -1 if self.amount.is_signed() else 1

    def scaled_value(self, scale: int) -> int:
        """``ScaledValue``: the value in units of ``10**scale``, rounded away from zero.

        Saturates at the int64 bounds, like upstream's ``AsScaledInt64``.
        """
        if self.amount.is_zero():
            return 0
        scaled = _EXACT.scaleb(self.amount, -_checked_int(scale))
        if scaled.adjusted() >= 19:  # |scaled| >= 10**19 > 2**63
            return _MIN_INT64 if scaled.is_signed() else _MAX_INT64
        result = int(scaled.to_integral_value(rounding=decimal.ROUND_UP, context=_ROUNDING))
        return max(_MIN_INT64, min(_MAX_INT64, result))

    def value(self) -> int:
        """``Value``: whole units, rounded away from zero (ceil for positive values)."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """``MilliValue``: thousandths, rounded away from zero (ceil for positive values)."""
        return self.scaled_value(-3)

    def round_up(self, scale: int) -> tuple[Quantity, bool]:
        """``RoundUp``: round away from zero to a multiple of ``10**scale``; ``True`` if exact."""
        scale = _checked_int(scale)
        if _exponent(self.amount) >= scale:
            return self, True
        rounded = self.amount.quantize(
            _EXACT.scaleb(Decimal(1), scale), rounding=decimal.ROUND_UP, context=_ROUNDING
        )
        return Quantity(rounded, self.format), rounded == self.amount

    def as_approximate_float64(self) -> float:
        """``AsApproximateFloat64``: ``float(unscaled) * Pow10(exponent)``, as upstream computes it.

        The only place a float appears; ``inf``/``-inf`` when out of range.
        """
        sign, digits, exponent = self.amount.as_tuple()
        assert isinstance(exponent, int)
        unscaled = int(Decimal((0, digits, 0)))  # int(Decimal) has no str-digits limit
        if unscaled == 0:
            return 0.0
        try:
            base = float(-unscaled if sign else unscaled)
        except OverflowError:
            base = -math.inf if sign else math.inf
        if exponent == 0:
            return base
        return base * _pow10(exponent)

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other: Quantity) -> Quantity:
        """``Add``: the sum, in this quantity's format (the other's if this one is zero)."""
        format = other.format if self.is_zero() else self.format
        return Quantity(_EXACT.add(self.amount, _operand(other)), format)

    def __sub__(self, other: Quantity) -> Quantity:
        """``Sub``: the difference, in this quantity's format (the other's if this one is zero)."""
        format = other.format if self.is_zero() else self.format
        return Quantity(_EXACT.subtract(self.amount, _operand(other)), format)

    def __neg__(self) -> Quantity:
        """``Neg``."""
        return Quantity(self.amount.copy_negate(), self.format)

    def __mul__(self, factor: int) -> Quantity:
        """``Mul(int64)``: the exact product, format kept (upstream's inexact flag is dropped)."""
        return Quantity(_EXACT.multiply(self.amount, Decimal(_checked_int(factor))), self.format)

    __rmul__ = __mul__

    # ------------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.amount == other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def __lt__(self, other: Quantity) -> bool:
        return self.amount < _operand(other)

    def __le__(self, other: Quantity) -> bool:
        return self.amount <= _operand(other)

    def __gt__(self, other: Quantity) -> bool:
        return self.amount > _operand(other)

    def __ge__(self, other: Quantity) -> bool:
        return self.amount >= _operand(other)

    # ------------------------------------------------------------------ text

    def __str__(self) -> str:
        """The canonical form (``CanonicalizeBytes``): number then suffix."""
        number, suffix = _canonicalize(self.amount, self.format)
        return number + suffix

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, format={self.format.value})"


def parse_quantity(text: str) -> Quantity:
    """``ParseQuantity``: the quantity ``text`` denotes, or :class:`QuantityError`.

    No surrounding whitespace is accepted (upstream trims only when decoding JSON).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_quantity needs a str, got {type(text).__name__}")
    if text == "":
        raise QuantityError(text, QuantityError.FORMAT_WRONG)
    if text == "0":
        return Quantity(_ZERO, Format.DECIMAL_SI)

    positive, value, num, denom, suffix = _parse_quantity_string(text)
    interpreted = _interpret_suffix(suffix)
    if interpreted is None:
        raise QuantityError(text, QuantityError.SUFFIX)
    base, exponent, format = interpreted

    # The int64 fast path: exact, with the representation upstream keeps there.
    precision = 0
    scale = 0
    mantissa = 1
    if format is Format.BINARY_SI:
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - exponent * 3 // 10 - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO_SCALE:
            result = int(num + denom) * mantissa
            amount = Decimal((0 if positive else 1, _digits(result), scale))
            return Quantity(amount if result else _ZERO, format)

    # The inf.Dec path: build the exact value, then round sub-nano precision up.
    try:
        amount = Decimal(value)
    except decimal.InvalidOperation:
        raise QuantityError(text, QuantityError.NUMERIC) from None
    if base == 10:
        amount = _EXACT.scaleb(amount, exponent)
    else:
        amount = _EXACT.multiply(amount, Decimal(1 << exponent))
    negative = amount.is_signed()
    amount = amount.copy_abs()
    if not amount.is_zero():
        amount = _round_up_to_nano(amount)
    if format is Format.BINARY_SI and amount > _MAX_INT64:
        amount = Decimal(_MAX_INT64)
    if format is Format.BINARY_SI and 0 < amount < 1:
        format = Format.DECIMAL_SI
    if amount.is_zero():
        return Quantity(_ZERO, format)
    return Quantity(amount.copy_negate() if negative else amount, format)


# ---------------------------------------------------------------------- parsing internals


def _parse_quantity_string(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: (positive, value, num, denom, suffix) or FORMAT_WRONG."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end:
        if text[0] == "-":
            positive = False
            pos += 1
        elif text[0] == "+":
            pos += 1

    # strip leading zeros
    i = pos
    while True:
        if i >= end:
            return positive, "0", "0", "", ""
        if text[i] != "0":
            break
        pos += 1
        i += 1

    # the numerator
    i = pos
    while True:
        if i >= end:
            return positive, text, text[pos:end], "", ""
        if text[i] not in _DIGITS:
            num = text[pos:i]
            pos = i
            break
        i += 1
    if not num:
        num = "0"

    # the denominator
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        i = pos
        while True:
            if i >= end:
                return positive, text, num, text[pos:end], ""
            if text[i] not in _DIGITS:
                denom = text[pos:i]
                pos = i
                break
            i += 1
    value = text[:pos]

    # the suffix: letters, an optional sign, digits
    suffix_start = pos
    i = pos
    while True:
        if i >= end:
            return positive, value, num, denom, text[suffix_start:end]
        if text[i] not in _SUFFIX_CHARS:
            pos = i
            break
        i += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    i = pos
    while True:
        if i >= end:
            return positive, value, num, denom, text[suffix_start:end]
        if text[i] not in _DIGITS:
            break
        i += 1
    raise QuantityError(text, QuantityError.FORMAT_WRONG)


def _interpret_suffix(suffix: str) -> tuple[int, int, Format] | None:
    """``quantitySuffixer.interpret``: (base, exponent, format), or None if unknown."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT_DIGITS.fullmatch(suffix[1:]):
        exponent = int(suffix[1:])
        if -_MAX_INT32 <= exponent <= _MAX_INT32:
            return 10, exponent, Format.DECIMAL_EXPONENT
    return None


def _round_up_to_nano(amount: Decimal) -> Decimal:
    """Round a non-negative amount up to a multiple of 10**-9, as the inf.Dec parse path does."""
    exponent = _exponent(amount)
    if exponent < _NANO_SCALE:
        return amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_ROUNDING)
    if exponent <= _MAX_INT64_FACTORS:
        # upstream rescales to nano exactly; same value, same digits for as_approximate_float64
        return amount.quantize(_NANO, context=_EXACT)
    return amount


# ---------------------------------------------------------------------- formatting internals


def _canonicalize(amount: Decimal, format: Format) -> tuple[str, str]:
    """``CanonicalizeBytes``: the number and the suffix of the canonical form."""
    if amount.is_zero():
        return "0", ""
    if format is Format.BINARY_SI:
        if -1024 < amount < 1024 or not _is_integral(amount):
            # avoids rounding (and confusion): show as DecimalSI
            format = Format.DECIMAL_SI
        else:
            binary = _canonical_base1024(amount)
            if binary is not None:
                number, exponent = binary
                if exponent == 0:
                    return number, ""
                return number, _BINARY_SUFFIX_BY_EXPONENT[exponent * 10]
            # no binary suffix beyond Ei: exact decimal exponent notation instead
            format = Format.DECIMAL_EXPONENT
    number, exponent = _canonical_base10(amount)
    if format is Format.DECIMAL_SI:
        suffix = _DECIMAL_SUFFIX_BY_EXPONENT.get(exponent)
        if suffix is not None:
            return number, suffix
    return number, "" if exponent == 0 else f"e{exponent}"


def _canonical_base10(amount: Decimal) -> tuple[str, int]:
    """``AsCanonicalBytes``: mantissa digits and an exponent that is a multiple of 3.

    Read from ``str(amount)`` (``[-]digits[.digits][E±n]``, C speed) rather than from
    ``as_tuple()`` digit by digit: the adapter formats a value per pod per request. A nonzero
    amount is expected (``_canonicalize`` answers zero itself)."""
    text = str(amount)
    sign = ""
    if text[0] == "-":
        sign = "-"
        text = text[1:]
    exponent = 0
    marker = text.find("E")
    if marker >= 0:
        exponent = int(text[marker + 1 :])
        text = text[:marker]
    dot = text.find(".")
    if dot >= 0:
        exponent -= len(text) - dot - 1
        text = (text[:dot] + text[dot + 1 :]).lstrip("0")
    stripped = text.rstrip("0")
    exponent += len(text) - len(stripped)
    zeros = exponent % 3
    return sign + stripped + "0" * zeros, exponent - zeros


def _canonical_base1024(amount: Decimal) -> tuple[str, int] | None:
    """``AsCanonicalBase1024Bytes`` for an integral amount; None past Ei (no suffix exists)."""
    sign, digits, exponent = amount.as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    stripped = text.rstrip("0")
    exponent += len(text) - len(stripped)
    if exponent >= _BEYOND_EI_DECIMAL_EXPONENT:
        return None  # 10**70 alone holds 1024**7
    # int(Decimal) and format(Decimal) avoid int/str conversions, which are limited in length
    value = int(Decimal((0, tuple(map(int, stripped)), exponent)))
    times = 0
    while value % 1024 == 0:
        value //= 1024
        times += 1
    if times * 10 > max(_BINARY_SUFFIX_BY_EXPONENT):
        return None
    return ("-" if sign else "") + format(Decimal(value), "f"), times


def _is_integral(amount: Decimal) -> bool:
    _, digits, exponent = amount.as_tuple()
    assert isinstance(exponent, int)
    if exponent >= 0:
        return True
    return all(d == 0 for d in digits[exponent:])


def _exponent(amount: Decimal) -> int:
    exponent = amount.as_tuple().exponent
    assert isinstance(exponent, int)  # amounts are finite
    return exponent


def _digits(value: int) -> tuple[int, ...]:
    return tuple(int(c) for c in str(abs(value)))


def _operand(value: object) -> Decimal:
    """The amount of the other operand; a TypeError for anything but a Quantity."""
    if not isinstance(value, Quantity):
        raise TypeError(f"expected a Quantity, got {type(value).__name__}")
    return value.amount


def _checked_int(value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an int, got {value!r}")
    return value


# Go's math.Pow10 tables, so as_approximate_float64 rounds as upstream does.
_POW10_TAB: Final = tuple(float(f"1e{i}") for i in range(32))
_POW10_POS_TAB32: Final = tuple(float(f"1e{i}") for i in range(0, 320, 32))
_POW10_NEG_TAB32: Final = tuple(float(f"1e-{i}") for i in range(0, 352, 32))


def _pow10(n: int) -> float:
    """Go's ``math.Pow10``."""
    if 0 <= n <= 308:
        return _POW10_POS_TAB32[n // 32] * _POW10_TAB[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG_TAB32[-n // 32] / _POW10_TAB[-n % 32]
    return math.inf if n > 0 else 0.0


# ------------------------------------------------------------------ reading straight to milli-units
#
# ``milli_value(text)`` answers exactly what ``parse_quantity(text).milli_value()`` answers
# (rounded away from zero, saturating at the int64 bounds). The forms metrics servers and the
# adapter write (an unsigned integer with an optional ``n``/``u``/``m``/``k``/``M``/``G``/``T`` or
# ``Ki``/``Mi``/``Gi``/``Ti`` suffix: ``"123456789n"``, ``"250m"``, ``"40Mi"``) are read with
# integer arithmetic; every other form goes through ``parse_quantity``. The property tests of
# tests/hpa/core/test_quantity.py check both routes agree on every string, and that
# ``milli_text`` prints what ``str(Quantity.from_milli(v))`` prints.

_PLAIN = re.compile(r"([0-9]{1,19})(n|u|m|k|M|G|T|Ki|Mi|Gi|Ti)?")
# suffix -> (numerator, denominator) of one unit in milli-units
_MILLI_PER_UNIT: dict[str | None, tuple[int, int]] = {
    None: (1000, 1),
    "n": (1, 1_000_000),
    "u": (1, 1000),
    "m": (1, 1),
    "k": (10**6, 1),
    "M": (10**9, 1),
    "G": (10**12, 1),
    "T": (10**15, 1),
    "Ki": (1024 * 1000, 1),
    "Mi": (1024**2 * 1000, 1),
    "Gi": (1024**3 * 1000, 1),
    "Ti": (1024**4 * 1000, 1),
}


def milli_value(text: str) -> int:
    """``ParseQuantity(text).MilliValue()``; raises ``QuantityError`` (or ``TypeError`` for a
    non-string) as :func:`parse_quantity` does."""
    match = _PLAIN.fullmatch(text) if type(text) is str else None
    if match is not None:
        numerator, denominator = _MILLI_PER_UNIT[match.group(2)]
        value = -(-int(match.group(1)) * numerator // denominator)  # ceil: a positive value
        if value <= _MAX_INT64:
            return value
    return parse_quantity(text).milli_value()


def milli_value_or_none(text: object) -> int | None:
    """:func:`milli_value`, or ``None`` when ``text`` is not a quantity string."""
    match = _PLAIN.fullmatch(text) if type(text) is str else None
    if match is not None:
        numerator, denominator = _MILLI_PER_UNIT[match.group(2)]
        value = -(-int(match.group(1)) * numerator // denominator)
        if value <= _MAX_INT64:
            return value
    if type(text) is not str:
        return None
    try:
        return parse_quantity(text).milli_value()
    except ValueError:
        return None


def is_quantity(text: object) -> bool:
    """Whether ``text`` is a string ``ParseQuantity`` accepts."""
    if type(text) is not str:
        return False
    if _PLAIN.fullmatch(text) is not None:
        return True
    try:
        parse_quantity(text)
    except ValueError:
        return False
    return True


def milli_text(value_milli: int) -> str:
    """``str(Quantity.from_milli(value_milli))`` (DecimalSI, canonical) with integer operations:
    upstream's ``int64Amount.AsCanonicalBytes`` (trailing zeros of the mantissa moved into the
    exponent, the exponent lowered to a multiple of 3) and its SI suffix. The adapter writes
    one per object per request; ``Quantity`` takes the ``Decimal`` route. Property-tested
    against ``Quantity`` over the whole int64 range."""
    if value_milli == 0:
        return "0"
    amount = value_milli
    exponent = -3
    while amount % 10 == 0:
        amount //= 10
        exponent += 1
    # Python's % is never negative: 1 means Go's 1 or -2, 2 means Go's 2 or -1
    shift = exponent % 3
    if shift:
        amount *= 10**shift
        exponent -= shift
    return f"{amount}{_DECIMAL_SUFFIX_BY_EXPONENT[exponent]}"
