"""The structured explanation of one HPA decision, printable as text.

Upstream has no counterpart: kube-controller-manager logs a few ``klog.V(4)`` lines and sets
conditions. ``hpa explain``, ``--dry-run`` and the simulator print this trace instead, so it records
every input and every step that moved the number: each metric's proposal with its inputs and the
pods set aside (and why), the tolerance that was applied, the stabilization window and the
recommendations it saw, the scaling policy limits, and the min/max bounds.

Deliberate deviations: none (this module adds information; it changes no result).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hpa.core.frozen import fast_init


class Stage(StrEnum):
    """Where in the reconcile a trace entry comes from, in the order the controller runs."""

    SCALE = "scale"
    SELECTOR = "selector"
    METRIC = "metric"
    PROPOSAL = "proposal"
    STABILIZATION = "stabilization"
    POLICY = "policy"
    BOUNDS = "bounds"
    SCALE_TO_ZERO = "scale-to-zero"
    DECISION = "decision"
    RESCALE = "rescale"


TraceValue = object
"""A detail's value (str, int, float, tuple, frozenset of names...), formatted when rendered."""


def format_value(value: TraceValue) -> str:
    """Render a detail: floats to 4 decimals, name sets sorted and bounded, tuples joined."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[return-value]
    if kind is int:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, frozenset):
        return format_names(value)
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) or "-"
    return str(value)


@fast_init
@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One step: a one-line summary and ordered ``(key, value)`` details (values kept raw)."""

    stage: Stage
    summary: str
    details: tuple[tuple[str, TraceValue], ...] = ()

    def render(self) -> str:
        head = f"[{self.stage}] {self.summary}"
        if not self.details:
            return head
        return "\n".join(
            [head, *[f"    {key}: {format_value(value)}" for key, value in self.details]]
        )


@fast_init
@dataclass(frozen=True, slots=True)
class Explanation:
    """The ordered trace of one decision (and of the rescale result, once applied)."""

    entries: tuple[TraceEntry, ...] = ()

    def with_entry(self, entry: TraceEntry) -> Explanation:
        return Explanation((*self.entries, entry))

    def render(self) -> str:
        """Plain text, one block per entry, for terminals and logs."""
        return "\n".join([entry.render() for entry in self.entries])

    def __str__(self) -> str:
        return self.render()


def format_names(names: frozenset[str], *, limit: int = 10) -> str:
    """A sorted, bounded list of pod names for a trace detail."""
    ordered = sorted(names)
    if len(ordered) <= limit:
        return ", ".join(ordered) if ordered else "-"
    return ", ".join(ordered[:limit]) + f", ... ({len(ordered) - limit} more)"
