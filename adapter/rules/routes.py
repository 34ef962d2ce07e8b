"""Metric-name patterns of the ``routes:`` section: matching, and whether two can name one metric.

Upstream counterpart: none (prometheus-adapter serves only its own rules, and Kubernetes allows
one ``APIService`` per metrics group). The section is this adapter's: docs/adapter-server.md,
"Routing metrics to other metrics servers". Pure: no I/O.

A pattern is a metric name in which ``*`` stands for any run of characters (none included), as
in shell globs without ``?`` or brackets: ``s0-*``, ``*_per_second``, ``*``. Ownership must be
decidable from the file alone, so two patterns of one API group that some name matches both are
refused when the file loads (``patterns_overlap``), never settled by which backend answers first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

WILDCARD = "*"
_METRIC_NAME = re.compile(r"[^/\s]+")


@dataclass(frozen=True, slots=True)
class MetricPattern:
    """One compiled pattern (``fullmatch`` of its regex)."""

    text: str
    regex: re.Pattern[str]

    @classmethod
    def parse(cls, text: str) -> MetricPattern:
        """``ValueError`` naming the pattern when it is empty, holds ``/`` or whitespace."""
        if not text or _METRIC_NAME.fullmatch(text) is None:
            raise ValueError(
                f"metric pattern {text!r} must be a non-empty metric name without '/' or spaces"
                " ('*' matches any characters)"
            )
        regex = re.compile(".*".join(re.escape(part) for part in text.split(WILDCARD)))
        return cls(text, regex)

    def matches(self, metric: str) -> bool:
        return self.regex.fullmatch(metric) is not None


def patterns_overlap(a: str, b: str) -> bool:
    """True when some metric name matches both glob patterns ``a`` and ``b``.

    Two ``*``-only globs intersect iff their texts can be walked together: a literal must meet an
    equal literal or be eaten by the other side's ``*``, and a ``*`` may stand for nothing."""

    @cache
    def walk(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == WILDCARD:
            return walk(i + 1, j) or (j < len(b) and walk(i, j + 1))
        if j < len(b) and b[j] == WILDCARD:
            return walk(i, j + 1) or (i < len(a) and walk(i + 1, j))
        return i < len(a) and j < len(b) and a[i] == b[j] and walk(i + 1, j + 1)

    return walk(0, 0)


def example_overlap(a: str, b: str) -> str:
    """A short description of the shared names, for the load error."""
    if WILDCARD not in a:
        return f"{a!r}"
    if WILDCARD not in b:
        return f"{b!r}"
    return f"names matching both {a!r} and {b!r}"
