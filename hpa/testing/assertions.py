"""Assertions on one sync (:class:`~hpa.testing.sync.SyncResult`) and on a simulated run
(:class:`~hpa.testing.timeline.RunResult`), with failure messages a reviewer can act on.

Upstream counterpart: none. Every failure is an :class:`HPAAssertionError` (an
``AssertionError``, so pytest reports it as a test failure) whose message names the HPA, the
expected and the actual value, and the rule that decided (:func:`hpa.testing.deciding_rule`):
``demo/fast-up: desired replicas: expected 11, got 10`` then ``deciding rule: [policy]
ScaleUpLimit: 200 -> 10 (...)``, the conditions, and the full explanation (or the replica
timeline for a run).

Deliberate deviations: none (no upstream).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hpa.sim.report import format_seconds
from hpa.testing.metrics import Ago, seconds
from hpa.testing.sync import SyncResult
from hpa.testing.timeline import RunResult

__all__ = [
    "HPAAssertionError",
    "assert_condition",
    "assert_event",
    "assert_replicas",
    "assert_replicas_at",
    "assert_replicas_within",
    "assert_steps",
    "assert_summary",
    "describe_conditions",
]


class HPAAssertionError(AssertionError):
    """An expectation on an HPA's decision or timeline did not hold."""


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def describe_conditions(result: SyncResult) -> str:
    """``AbleToScale=True (SucceededRescale), ScalingLimited=False (DesiredWithinRange)``."""
    return ", ".join(f"{c.type}={c.status} ({c.reason})" for c in result.conditions) or "(none)"


def _sync_failure(result: SyncResult, what: str) -> HPAAssertionError:
    lines = [
        f"{result.hpa.key}: {what}",
        f"  deciding rule: {result.deciding_rule}",
        f"  conditions: {describe_conditions(result)}",
    ]
    if result.error is not None:
        lines.append(f"  error: {result.error}")
    lines.append("  explanation:")
    lines.append(_indent(result.explain()))
    return HPAAssertionError("\n".join(lines))


def assert_replicas(result: SyncResult, expected: int) -> None:
    """The sync's desired replicas (``status.desiredReplicas``) are ``expected``."""
    if result.desired_replicas != expected:
        raise _sync_failure(
            result, f"desired replicas: expected {expected}, got {result.desired_replicas}"
        )


def assert_condition(
    result: SyncResult,
    condition_type: str,
    *,
    status: str | bool | None = None,
    reason: str | None = None,
    message: str | None = None,
) -> None:
    """The status has a condition of that type, with that status (``"True"`` or ``True``),
    reason, and a message containing ``message`` (each checked when given)."""
    found = result.condition(condition_type)
    if found is None:
        raise _sync_failure(result, f"condition {condition_type}: expected one, got none")
    wanted_status = None if status is None else str(status)
    problems = []
    if wanted_status is not None and str(found.status) != wanted_status:
        problems.append(f"status: expected {wanted_status}, got {found.status}")
    if reason is not None and found.reason != reason:
        problems.append(f"reason: expected {reason}, got {found.reason}")
    if message is not None and message not in found.message:
        problems.append(f"message: expected to contain {message!r}, got {found.message!r}")
    if problems:
        raise _sync_failure(result, f"condition {condition_type}: " + "; ".join(problems))


def assert_event(result: SyncResult, reason: str, *, message: str | None = None) -> None:
    """An event with that reason (and a message containing ``message``) would be recorded."""
    for event in result.events:
        if event.reason == reason and (message is None or message in event.message):
            return
    got = "; ".join(f"{e.type} {e.reason}: {e.message}" for e in result.events) or "none"
    wanted = reason if message is None else f"{reason} containing {message!r}"
    raise _sync_failure(result, f"event: expected {wanted}, got {got}")


def _run_failure(result: RunResult, what: str, *, at: float | None) -> HPAAssertionError:
    lines = [f"{result.hpa.key}: {what}"]
    if at is not None:
        lines.append(f"  deciding rule: {result.deciding_rule_at(at)}")
    rules = result.rescale_rules()
    if rules:
        lines.append("  rescales:")
        lines.extend(f"    {rule}" for rule in rules[:12])
    lines.append(f"  trace: {result.trace.description}")
    lines.append("  timeline:")
    lines.append(_indent(result.render()))
    return HPAAssertionError("\n".join(lines))


def assert_steps(result: RunResult, expected: Sequence[int]) -> None:
    """The target went through exactly these replica counts, in order (``[1, 10, 100, 1000]``)."""
    actual = result.replica_steps()
    if actual != list(expected):
        first = next(
            (i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b),
            min(len(actual), len(expected)),
        )
        at = None
        if first < len(actual):
            at = _step_time(result, first)
        raise _run_failure(
            result,
            f"replica steps: expected {list(expected)}, got {actual}",
            at=at,
        )


def _step_time(result: RunResult, index: int) -> float:
    seen = -1
    previous: int | None = None
    for row in result.timeline:
        if row.replicas != previous:
            seen += 1
            previous = row.replicas
            if seen == index:
                return row.t_seconds
    return result.duration_seconds


def assert_replicas_at(result: RunResult, t: Ago, expected: int) -> None:
    """The target had ``expected`` replicas at time ``t`` (seconds or ``"2m"``)."""
    t_seconds = seconds(t, what="time")
    actual = result.replicas_at(t_seconds)
    if actual != expected:
        raise _run_failure(
            result,
            f"replicas at {format_seconds(t_seconds)}: expected {expected}, got {actual}",
            at=t_seconds,
        )


def assert_replicas_within(
    result: RunResult,
    *,
    min_replicas: int | None = None,
    max_replicas: int | None = None,
    start: Ago = 0.0,
    end: Ago | None = None,
) -> None:
    """The replicas stayed within ``[min_replicas, max_replicas]`` from ``start`` to ``end``
    (default: the whole run)."""
    start_seconds = seconds(start, what="start")
    end_seconds = math.inf if end is None else seconds(end, what="end")
    timeline = result.timeline
    for index, row in enumerate(timeline):
        until = timeline[index + 1].t_seconds if index + 1 < len(timeline) else math.inf
        if until <= start_seconds or row.t_seconds > end_seconds:
            continue
        low = min_replicas is not None and row.replicas < min_replicas
        high = max_replicas is not None and row.replicas > max_replicas
        if low or high:
            bounds = f"[{'-' if min_replicas is None else min_replicas}, "
            bounds += f"{'-' if max_replicas is None else max_replicas}]"
            at = max(row.t_seconds, start_seconds)
            raise _run_failure(
                result,
                f"replicas within {bounds} from {format_seconds(start_seconds)}"
                f"{'' if end is None else ' to ' + format_seconds(end_seconds)}: expected, "
                f"got {row.replicas} at {format_seconds(at)}",
                at=at,
            )


def assert_summary(result: RunResult, **expected: float | int | None) -> None:
    """Summary figures (:class:`hpa.sim.summary.Summary` field names: ``max_replicas=1000``,
    ``scale_ups=3``, ``reversals=0``) equal these values (floats to 1e-9 relative)."""
    problems = []
    for name, wanted in expected.items():
        if not hasattr(result.summary, name):
            raise ValueError(f"assert_summary: no summary figure named {name!r}")
        actual = getattr(result.summary, name)
        same = (
            actual == wanted
            if actual is None or wanted is None
            else math.isclose(float(actual), float(wanted), rel_tol=1e-9)
        )
        if not same:
            problems.append(f"{name}: expected {wanted}, got {actual}")
    if problems:
        raise _run_failure(result, "summary: " + "; ".join(problems), at=None)
