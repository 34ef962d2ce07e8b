"""Go duration strings (``time.ParseDuration``) as float seconds.

Upstream counterpart: Go's ``time.ParseDuration``, which parses the ``window`` of a resource
metrics ``PodMetrics`` (``metav1.Duration``: ``"30s"``, ``"1m0.5s"``) and every duration flag of
kube-controller-manager (``--horizontal-pod-autoscaler-sync-period=15s``).

This is the one Go duration parser of both packages: the controller's and the adapter's duration
flags, ``PodMetrics.window`` and the simulator's trace durations all read through it. (The
adapter's rule file also has Prometheus durations, ``model.ParseDuration``: ``5m``, ``1d``, ``1y``,
a different grammar, in ``adapter/rules/config.py``.)

Deliberate deviations: the result is a float number of seconds, not integer nanoseconds; values
are not limited to the int64 nanosecond range. ``DurationError`` is also an
``argparse.ArgumentTypeError``, so the parser serves directly as a flag's ``type`` and a bad flag
value is reported with Go's message.
"""

from __future__ import annotations

import argparse
import re
from decimal import Decimal, InvalidOperation

__all__ = ["DurationError", "format_duration", "parse_duration_seconds"]

_UNIT_SECONDS: dict[str, Decimal] = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "\u00b5s": Decimal("1e-6"),  # micro sign
    "\u03bcs": Decimal("1e-6"),  # Greek mu
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_NUMBER = re.compile(r"\d+\.?\d*|\.\d+")


class DurationError(ValueError, argparse.ArgumentTypeError):
    """Not a Go duration; the message is Go's (``time: invalid duration "x"``)."""


def parse_duration_seconds(text: str) -> float:
    """``time.ParseDuration``: ``[-+]?(<number><unit>)+`` or ``0``, in seconds."""
    quoted = f'"{text}"'
    body = text
    sign = 1
    if body[:1] in ("-", "+"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0.0
    if not body:
        raise DurationError(f"time: invalid duration {quoted}")
    total = Decimal(0)
    position = 0
    while position < len(body):
        number = _NUMBER.match(body, position)
        if number is None:
            raise DurationError(f"time: invalid duration {quoted}")
        position = number.end()
        unit_end = position
        while unit_end < len(body) and body[unit_end] not in "0123456789.":
            unit_end += 1
        unit = body[position:unit_end]
        if not unit:
            raise DurationError(f"time: missing unit in duration {quoted}")
        if unit not in _UNIT_SECONDS:
            raise DurationError(f'time: unknown unit "{unit}" in duration {quoted}')
        try:
            total += Decimal(number.group(0)) * _UNIT_SECONDS[unit]
        except InvalidOperation as error:  # pragma: no cover - the regex admits only numbers
            raise DurationError(f"time: invalid duration {quoted}") from error
        position = unit_end
    return float(sign * total)


def format_duration(seconds: float) -> str:
    """Go's ``Duration.String`` for at least a second (``15s``, ``5m0s``, ``1h0m0s``)."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    remaining = Decimal(str(abs(seconds)))
    hours, remaining = divmod(remaining, 3600)
    minutes, remaining = divmod(remaining, 60)
    secs = format(remaining.normalize(), "f")
    if hours:
        return f"{sign}{int(hours)}h{int(minutes)}m{secs}s"
    if minutes:
        return f"{sign}{int(minutes)}m{secs}s"
    return f"{sign}{secs}s"
