"""Exact milli-values of the quantity strings metrics servers write, and their windows, cheaply.

Upstream counterpart: ``resource.ParseQuantity(s)`` followed by ``Quantity.MilliValue()``
(``k8s.io/apimachinery/pkg/api/resource``), which the metrics clients of
``pkg/controller/podautoscaler/metrics/client.go`` call on every sample, and
``time.ParseDuration`` for ``PodMetrics.window``.

:func:`milli_value` answers exactly what ``hpa.core.quantity.parse_quantity(text).milli_value()``
answers (rounded away from zero, saturating at the int64 bounds), but reads the forms that
metrics-server and our adapter write (an unsigned integer with an optional ``n``/``u``/``m``/
``k``/``M``/``G``/``T`` or ``Ki``/``Mi``/``Gi``/``Ti`` suffix: ``"123456789n"``, ``"250m"``,
``"40Mi"``) with integer arithmetic; every other form goes through the exact parser. A property
test checks both paths agree.

Deliberate deviations: none in results; windows are memoised in a small bounded table (a
response's pods nearly always share one window string).
"""

from __future__ import annotations

import re

from hpa.core.duration import parse_duration_seconds
from hpa.core.quantity import parse_quantity

__all__ = ["is_quantity", "milli_value", "milli_value_or_none", "window_seconds"]

_MAX_INT64 = 2**63 - 1
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
    non-string) as :func:`hpa.core.quantity.parse_quantity` does."""
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


_WINDOWS: dict[str, float] = {}
_MAX_WINDOWS = 256


def window_seconds(text: str) -> float:
    """``time.ParseDuration(text)`` in seconds (``""`` is 0); raises ``DurationError``."""
    if not text:
        return 0.0
    found = _WINDOWS.get(text)
    if found is None:
        found = parse_duration_seconds(text)
        if len(_WINDOWS) >= _MAX_WINDOWS:
            _WINDOWS.clear()
        _WINDOWS[text] = found
    return found
