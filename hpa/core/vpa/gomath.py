"""Go's float and time arithmetic where the VPA model depends on it bit for bit.

Upstream counterpart: the Go standard library as the v1.8.1 recommender uses it: ``math.Pow``
(pure Go on amd64, not the C library's ``pow``: it multiplies successive squarings of the
mantissa, so ``1.05**b`` differs from a correctly rounded power in the last bits), ``time.Time``
(nanoseconds, ``Sub`` saturating at the int64 range, ``Round`` to a multiple of a duration counted
from the zero time, 1 January of year 1), and the conversion of a ``float64`` to ``int64``.

Times here are integer nanoseconds since the Unix epoch; Go's zero ``time.Time`` is
:data:`ZERO_TIME_NS`.

Deliberate deviations: ``go_pow`` with a non-integer exponent uses the platform's ``exp`` and
``log`` for the fractional part (the model only raises to integer powers); ``math.Log`` and
``math.Exp2`` are the platform's (Go's amd64 assembly ``Log`` and pure-Go ``Exp2`` may differ in
the last bit, which moves a bucket index only for a value within an ulp of a bucket boundary).
"""

from __future__ import annotations

import math

__all__ = [
    "MAX_INT64",
    "MIN_INT64",
    "NANOSECONDS_PER_SECOND",
    "ZERO_TIME_NS",
    "float_to_int64",
    "go_pow",
    "go_round",
    "sub_ns",
    "time_round_ns",
]

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
NANOSECONDS_PER_SECOND = 1_000_000_000
ZERO_TIME_NS = -62_135_596_800 * NANOSECONDS_PER_SECOND
"""Go's zero ``time.Time`` (0001-01-01T00:00:00Z) in nanoseconds since the Unix epoch."""


def sub_ns(a_ns: int, b_ns: int) -> int:
    """Go's ``a.Sub(b)``: the duration between two times, saturated to the int64 range."""
    d = a_ns - b_ns
    if d > MAX_INT64:
        return MAX_INT64
    if d < MIN_INT64:
        return MIN_INT64
    return d


def time_round_ns(t_ns: int, d_ns: int) -> int:
    """Go's ``t.Round(d)``: the nearest multiple of ``d`` since the zero time, halves up."""
    if d_ns <= 0:
        return t_ns
    r = (t_ns - ZERO_TIME_NS) % d_ns
    if r + r < d_ns:
        return t_ns - r
    return t_ns + (d_ns - r)


def go_round(x: float) -> int:
    """Upstream's ``round``: ``int(math.Floor(x + 0.5))``."""
    return float_to_int64(math.floor(x + 0.5))


def float_to_int64(x: float) -> int:
    """Go's ``int64(x)`` on amd64: truncation; NaN and out-of-range values give ``MinInt64``."""
    if x != x or x >= 9.223372036854775807e18 or x < -9.223372036854775808e18:
        return MIN_INT64
    return int(x)


def go_pow(x: float, y: float) -> float:
    """Go's ``math.Pow(x, y)``, the pure-Go algorithm, bit for bit for integer ``y``."""
    if y == 0 or x == 1:
        return 1.0
    if y == 1:
        return x
    if x != x or y != y:
        return math.nan
    if x == 0:
        odd = _is_odd_int(y)
        if y < 0:
            return -math.inf if math.copysign(1.0, x) < 0 and odd else math.inf
        return x if math.copysign(1.0, x) < 0 and odd else 0.0
    if math.isinf(y):
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else math.inf
    if math.isinf(x):
        if x < 0:
            return go_pow(1 / x, -y)
        return 0.0 if y < 0 else math.inf
    if y == 0.5:
        return math.sqrt(x)
    if y == -0.5:
        return 1 / math.sqrt(x)
    yf, yi = math.modf(abs(y))
    if yf != 0 and x < 0:
        return math.nan
    if yi >= 2.0**63:
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else math.inf
    a1 = 1.0
    ae = 0
    if yf != 0:
        if yf > 0.5:
            yf -= 1
            yi += 1
        a1 = math.exp(yf * math.log(x))
    x1, xe = math.frexp(x)
    i = int(yi)
    while i != 0:
        if xe < -(1 << 12) or xe > (1 << 12):
            ae += xe
            break
        if i & 1 == 1:
            a1 *= x1
            ae += xe
        x1 *= x1
        xe <<= 1
        if x1 < 0.5:
            x1 += x1
            xe -= 1
        i >>= 1
    if y < 0:
        a1 = 1 / a1
        ae = -ae
    return _go_ldexp(a1, ae)


def _go_ldexp(frac: float, exp: int) -> float:
    """Go's ``math.Ldexp``: overflow gives ±Inf and underflow ±0 instead of an error."""
    try:
        return math.ldexp(frac, exp)
    except OverflowError:
        return math.copysign(math.inf, frac)


def _is_odd_int(y: float) -> bool:
    if abs(y) >= 2.0**53:
        return False
    yf, yi = math.modf(y)
    return yf == 0 and int(yi) & 1 == 1
