"""The structured explanation of one HPA decision, printable as text.

Upstream has no counterpart: kube-controller-manager logs a few ``klog.V(4)`` lines and sets
conditions. ``hpa explain``, ``--dry-run`` and the simulator print this trace instead, so it records
every input and every step that moved the number: each metric's proposal with its inputs and the
pods set aside (and why), the tolerance that was applied, the stabilization window and the
recommendations it saw, the scaling policy limits, and the min/max bounds.

Entries that ``decide`` writes on every pass are deferred (:data:`TracePart`): recorded as a pure
function and its immutable arguments and built when the trace is read, so a caller that reads few
traces (the simulator) does not format them. :attr:`Explanation.entries` and everything built on
it read the same either way.

Deliberate deviations: none (this module adds information; it changes no result).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast


class Stage(StrEnum):
    """Where in the reconcile a trace entry comes from, in the order the controller runs.

    The last four are the stages of a VPA recommendation (:mod:`hpa.core.vpa.recommender`)."""

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
    SAMPLES = "samples"
    ESTIMATION = "estimation"
    POST_PROCESSING = "post-processing"
    CAPPING = "capping"


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


TracePart = TraceEntry | tuple[Callable[..., "TraceEntry | Sequence[TraceEntry]"], tuple[Any, ...]]
"""A trace entry, or one deferred: a pure function and its (immutable) arguments, called when the
trace is read. ``decide`` defers the entries it writes on every pass, so a caller that never reads
the trace (the simulator, between rescales) never formats them."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Explanation:
    """The ordered trace of one decision (and of the rescale result, once applied).

    Equality, hashing and ``repr`` are those of :attr:`entries`: a deferred part equals the
    entries it builds."""

    parts: tuple[TracePart, ...] = ()

    @property
    def entries(self) -> tuple[TraceEntry, ...]:
        """Every entry, in order, deferred ones built now."""
        entries: list[TraceEntry] = []
        for part in self.parts:
            if type(part) is tuple:
                build, args = part
                built = build(*args)
                if type(built) is TraceEntry:
                    entries.append(built)
                else:
                    entries.extend(cast("Sequence[TraceEntry]", built))
            else:
                entries.append(cast(TraceEntry, part))
        return tuple(entries)

    def with_entry(self, entry: TraceEntry) -> Explanation:
        return Explanation((*self.parts, entry))

    def render(self) -> str:
        """Plain text, one block per entry, for terminals and logs."""
        return "\n".join([entry.render() for entry in self.entries])

    def __str__(self) -> str:
        return self.render()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Explanation):
            return NotImplemented
        return self.parts == other.parts or self.entries == other.entries

    def __hash__(self) -> int:
        return hash(self.entries)

    def __repr__(self) -> str:
        return f"Explanation(entries={self.entries!r})"


def format_names(names: frozenset[str], *, limit: int = 10) -> str:
    """A sorted, bounded list of pod names for a trace detail."""
    ordered = sorted(names)
    if len(ordered) <= limit:
        return ", ".join(ordered) if ordered else "-"
    return ", ".join(ordered[:limit]) + f", ... ({len(ordered) - limit} more)"
