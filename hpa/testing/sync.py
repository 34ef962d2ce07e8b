"""One sync of one HPA against fake metrics: what ``hpa controller`` would compute.

Upstream counterpart: one ``reconcileAutoscaler`` pass. The decision is the controller's own
entry point, :func:`hpa.core.decision.decide`, called with what the controller's ports would hand
it (built by :class:`~hpa.testing.metrics.FakeMetrics`); when it rescales, the scale update's
outcome goes through :func:`hpa.core.decision.apply_rescale_result` as in
:mod:`hpa.controllers.horizontal`, which adds the ``SuccessfulRescale`` (or ``FailedRescale``)
event and condition. Nothing here decides anything itself.

:func:`deciding_rule` picks, from the decision's explanation, the one step that settled the
number (a policy limit, the min/max bounds, the stabilization window, or the winning metric), for
readable assertion messages.

Deliberate deviations: a scale conflict (409) is not modelled (the update succeeds unless
:meth:`~hpa.testing.metrics.FakeMetrics.scale_update_fails`); the per-HPA dry-run annotation is
ignored (the decision is the same; only the writes differ).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hpa.controllers.settings import HorizontalControllerSettings
from hpa.core.conditions import (
    Conditions,
    ConditionStatus,
    ConditionType,
    Event,
    HorizontalPodAutoscalerCondition,
    find_condition,
)
from hpa.core.decision import (
    CurrentScale,
    Decision,
    History,
    HorizontalPodAutoscalerStatus,
    MetricObservation,
    apply_rescale_result,
)
from hpa.core.decision import decide as decide_core
from hpa.core.explain import Explanation, Stage, TraceEntry, format_value
from hpa.core.spec import HorizontalSettings
from hpa.testing.manifests import HPA
from hpa.testing.metrics import FakeMetrics

__all__ = ["EPOCH", "Settings", "SyncResult", "decide", "deciding_rule", "horizontal_settings"]

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""The default ``now`` of a sync (any fixed time would do: fake times are relative to it)."""

Settings = HorizontalControllerSettings | HorizontalSettings
"""Controller flags: ``hpa controller``'s settings (upstream flag names), or the subset the
decision reads."""


def horizontal_settings(settings: Settings | None) -> HorizontalSettings:
    """The flags the decision reads (the controller's defaults when ``None``)."""
    if settings is None:
        return HorizontalControllerSettings().horizontal
    if isinstance(settings, HorizontalControllerSettings):
        return settings.horizontal
    return settings


def _sync_period(settings: Settings | None) -> float:
    if isinstance(settings, HorizontalControllerSettings):
        return settings.sync_period_seconds
    return HorizontalControllerSettings().sync_period_seconds


_LIMITED_PREFIXES = ("within range", "not clipped")


def _details(entry: TraceEntry, keys: tuple[str, ...]) -> str:
    shown = [f"{k}: {format_value(v)}" for k, v in entry.details if k in keys]
    return f" ({'; '.join(shown)})" if shown else ""


def deciding_rule(explanation: Explanation) -> str:
    """The step of the trace that settled the replica count, on one line.

    In order: a failure that stopped the decision; a limit that clipped the number (a
    ``behavior`` policy, ``min``/``maxReplicas``, the legacy scale-up limit); the stabilization
    window when it held the number back; waking from or staying at zero; otherwise the metric
    whose proposal won (or the last step). E.g. ``[policy] ScaleUpLimit: 1000 -> 10 (scale-up
    policies: Max of [Percent 900 per 60s]; scale-up policy limit: 10)``."""
    entries = explanation.entries
    if not entries:
        return "(no explanation)"
    for entry in entries:
        errors = [format_value(v) for k, v in entry.details if k == "error"]
        if entry.stage in (Stage.DECISION, Stage.SCALE) and errors:
            return f"[{entry.stage}] {entry.summary}: {errors[0]}"
    for entry in entries:
        if entry.stage in (Stage.POLICY, Stage.BOUNDS) and not entry.summary.startswith(
            _LIMITED_PREFIXES
        ):
            return f"[{entry.stage}] {entry.summary}" + _details(
                entry,
                (
                    "scale-up policies",
                    "scale-up policy limit",
                    "scale-down policies",
                    "scale-down policy limit",
                    "scale-up limit max(factor*current, minimum)",
                    "min",
                    "max",
                ),
            )
    for entry in entries:
        if entry.stage == Stage.STABILIZATION and not entry.summary.startswith(_LIMITED_PREFIXES):
            return f"[{entry.stage}] {entry.summary}" + _details(
                entry, ("up window", "down window", "down window (flag)")
            )
    for entry in entries:
        if entry.stage == Stage.SCALE_TO_ZERO:
            return f"[{entry.stage}] {entry.summary}"
    for entry in entries:
        if entry.stage == Stage.PROPOSAL:
            return f"[{entry.stage}] {entry.summary}"
    last = entries[-1]
    return f"[{last.stage}] {last.summary}"


@dataclass(frozen=True, slots=True)
class SyncResult:
    """The outcome of one sync: what the controller would set, write and record.

    ``desired_replicas`` is ``status.desiredReplicas`` (what the target is scaled to when
    ``rescale``); ``conditions`` and ``events`` are those the controller would write and record;
    ``error`` is the reconcile error it would log; ``explanation`` is the full trace (``hpa
    explain`` prints the same). Pass the result as ``after=`` to :func:`decide` for the next
    sync (it carries the history and the status)."""

    hpa: HPA
    now: datetime
    current_replicas: int
    desired_replicas: int
    rescale: bool
    reason: str
    conditions: Conditions
    events: tuple[Event, ...]
    error: str | None
    explanation: Explanation
    status: HorizontalPodAutoscalerStatus
    history: History
    decision: Decision
    settings: Settings | None = None

    @property
    def replicas(self) -> int:
        """The target's replicas after the sync (``desired_replicas`` when it rescaled)."""
        if self.rescale and self.decision.rescale_succeeded:
            return self.desired_replicas
        return self.current_replicas

    @property
    def event(self) -> Event | None:
        """The last event recorded (``SuccessfulRescale`` after a rescale), if any."""
        return self.events[-1] if self.events else None

    @property
    def deciding_rule(self) -> str:
        """See :func:`deciding_rule`."""
        return deciding_rule(self.explanation)

    def condition(self, condition_type: str) -> HorizontalPodAutoscalerCondition | None:
        """The status condition of that type (``AbleToScale``, ``ScalingActive``,
        ``ScalingLimited``, ``ScaledToZero``), or ``None``."""
        return find_condition(self.conditions, condition_type)

    def explain(self) -> str:
        """The trace as ``hpa explain`` prints it."""
        return self.explanation.render()


def decide(
    hpa: HPA,
    metrics: FakeMetrics | None = None,
    *,
    now: datetime | None = None,
    after: SyncResult | None = None,
    settings: Settings | None = None,
) -> SyncResult:
    """One sync of ``hpa`` against ``metrics``, as ``hpa controller`` computes it.

    ``now`` defaults to :data:`EPOCH`, or one sync period after ``after``. With ``after`` (the
    previous sync's result) the history (recommendations, scale events) and the status carry
    over, so several syncs in a row test stabilization and rate limits; without it, the history
    is the one :class:`FakeMetrics` describes (none: the HPA's first sync)."""
    metrics = metrics if metrics is not None else FakeMetrics()
    if settings is None and after is not None:
        settings = after.settings
    if now is None:
        now = EPOCH if after is None else after.now + timedelta(seconds=_sync_period(settings))
    current = metrics.scale()
    spec_replicas = metrics.spec_replicas()
    if after is not None:
        history = after.history
        previous = after.status
    else:
        history = metrics.history(now=now)
        conditions: Conditions = ()
        if metrics.scaled_to_zero:
            conditions = (
                HorizontalPodAutoscalerCondition(
                    type=ConditionType.SCALED_TO_ZERO,
                    status=ConditionStatus.TRUE,
                    reason="ScaledToZero",
                    message="the HPA controller scaled the workload to zero",
                    last_transition_time=now,
                ),
            )
        previous = HorizontalPodAutoscalerStatus(
            current_replicas=spec_replicas, desired_replicas=spec_replicas, conditions=conditions
        )
    observations: list[MetricObservation | None] = []
    if isinstance(current, CurrentScale):
        observations = metrics.observations(hpa.spec, now=now, namespace=hpa.namespace)
    decision = decide_core(
        hpa.spec,
        current=current,
        observations=observations,
        pods=metrics.pod_infos(now=now),
        history=history,
        previous_status=previous,
        now=now,
        settings=horizontal_settings(settings),
        selector_check=metrics.selector_check(hpa.key),
        namespace=hpa.namespace,
    )
    if decision.rescale:
        decision = apply_rescale_result(
            decision,
            succeeded=metrics.scale_update_error is None,
            error=metrics.scale_update_error,
            now=now,
        )
    return SyncResult(
        hpa=hpa,
        now=now,
        current_replicas=decision.current_replicas,
        desired_replicas=decision.status.desired_replicas,
        rescale=decision.rescale,
        reason=decision.rescale_reason,
        conditions=decision.status.conditions,
        events=decision.events,
        error=decision.error,
        explanation=decision.explanation,
        status=decision.status,
        history=decision.history,
        decision=decision,
        settings=settings,
    )
