"""Stabilization windows, scaling policies and min/max limits over timestamped history.

Upstream counterpart: the normalization half of ``pkg/controller/podautoscaler/horizontal.go``:
``stabilizeRecommendation``, ``normalizeDesiredReplicas``, ``convertDesiredReplicasWithRules``,
``calculateScaleUpLimit``, ``normalizeDesiredReplicasWithBehaviors``,
``stabilizeRecommendationWithBehaviors``, ``convertDesiredReplicasWithBehaviorRate``,
``calculateScaleUpLimitWithScalingRules``, ``calculateScaleDownLimitWithBehaviors``,
``getReplicasChangePerPeriod``, ``storeScaleEvent``, ``markScaleEventsOutdated``,
``getLongestPolicyPeriod`` and ``recordInitialRecommendation``.

Upstream keeps the recommendation log and the scale events in controller maps keyed by HPA and
mutates them in place under locks; here every function takes the history as an immutable tuple and
returns the new tuple, and ``now`` is an argument instead of ``time.Now()``. Integer arithmetic
follows Go's ``int32`` conversions: Percent scale-up rounds up (``math.Ceil``), Percent scale-down
truncates toward zero (``int32(float64)``), and the legacy limit is ``int32(math.Max(f*c, m))``.

Deliberate deviations: none. (The scale-event "outdated" flag is carried on the immutable event; a
new tuple is returned where upstream flips it in place, with the same observable result.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hpa.core.spec import (
    HorizontalPodAutoscalerBehavior,
    ResolvedRules,
    ScalingPolicySelect,
    ScalingPolicyType,
    ScalingRules,
)

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)


@dataclass(frozen=True, slots=True)
class TimestampedRecommendation:
    """``timestampedRecommendation``: one unstabilized recommendation and when it was made."""

    recommendation: int
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class TimestampedScaleEvent:
    """``timestampedScaleEvent``: the absolute replica change of one successful rescale."""

    replica_change: int
    timestamp: datetime
    outdated: bool = False


Recommendations = tuple[TimestampedRecommendation, ...]
ScaleEvents = tuple[TimestampedScaleEvent, ...]


@dataclass(frozen=True, slots=True)
class Limit:
    """The outcome of a limiting step: the value, the ``ScalingLimited`` reason and message."""

    replicas: int
    reason: str
    message: str


DESIRED_WITHIN_RANGE = Limit(
    0, "DesiredWithinRange", "the desired count is within the acceptable range"
)


def _within_range(replicas: int) -> Limit:
    return Limit(replicas, DESIRED_WITHIN_RANGE.reason, DESIRED_WITHIN_RANGE.message)


_TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
_TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
_SCALE_UP_LIMIT = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
)
_SCALE_DOWN_LIMIT = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
)

READY_FOR_NEW_SCALE = ("ReadyForNewScale", "recommended size matches current size")
SCALE_DOWN_STABILIZED = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent "
    "recommendation",
)
SCALE_UP_STABILIZED = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)


def record_initial_recommendation(
    recommendations: Recommendations | None, current_replicas: int, *, now: datetime
) -> Recommendations:
    """``recordInitialRecommendation``: seed an absent (nil) log with ``{current, now}``.

    ``None`` stands for upstream's nil slice (first reconcile of this HPA key since the controller
    started); an empty tuple is an existing, empty log and is kept as is.
    """
    if recommendations is None:
        return (TimestampedRecommendation(current_replicas, now),)
    return recommendations


def _record(
    recommendations: Recommendations, old_sample_index: int, entry: TimestampedRecommendation
) -> Recommendations:
    if old_sample_index >= 0:
        return (
            *recommendations[:old_sample_index],
            entry,
            *recommendations[old_sample_index + 1 :],
        )
    return (*recommendations, entry)


def stabilize_recommendation(
    recommendations: Recommendations,
    prenormalized_desired_replicas: int,
    *,
    downscale_stabilization_window_seconds: float,
    now: datetime,
) -> tuple[int, Recommendations]:
    """``stabilizeRecommendation``: max over the down-window, then log the proposal.

    The proposal overwrites the *last* entry older than the window, else it is appended.
    """
    stabilized, new_recommendations, _ = _stabilize(
        recommendations,
        prenormalized_desired_replicas,
        downscale_stabilization_window_seconds=downscale_stabilization_window_seconds,
        now=now,
    )
    return stabilized, new_recommendations


def _stabilize(
    recommendations: Recommendations,
    prenormalized_desired_replicas: int,
    *,
    downscale_stabilization_window_seconds: float,
    now: datetime,
) -> tuple[int, Recommendations, tuple[int, ...]]:
    """:func:`stabilize_recommendation`, plus the in-window values (one pass)."""
    max_recommendation = prenormalized_desired_replicas
    old_sample_index = -1
    cutoff = now - timedelta(seconds=downscale_stabilization_window_seconds)
    window: list[int] = []
    for index, rec in enumerate(recommendations):
        if rec.timestamp < cutoff:
            old_sample_index = index
            continue
        value = rec.recommendation
        window.append(value)
        if value > max_recommendation:
            max_recommendation = value
    entry = TimestampedRecommendation(prenormalized_desired_replicas, now)
    return max_recommendation, _record(recommendations, old_sample_index, entry), tuple(window)


def calculate_scale_up_limit(
    current_replicas: int, *, scale_up_limit_factor: float, scale_up_limit_minimum: float
) -> int:
    """``calculateScaleUpLimit``: ``int32(max(factor * current, minimum))``."""
    return int(max(scale_up_limit_factor * float(current_replicas), scale_up_limit_minimum))


def convert_desired_replicas_with_rules(
    current_replicas: int,
    desired_replicas: int,
    *,
    hpa_min_replicas: int,
    hpa_max_replicas: int,
    scale_up_limit_factor: float,
    scale_up_limit_minimum: float,
) -> Limit:
    """``convertDesiredReplicasWithRules``: legacy min / max / scale-up-rate clamp."""
    scale_up_limit = calculate_scale_up_limit(
        current_replicas,
        scale_up_limit_factor=scale_up_limit_factor,
        scale_up_limit_minimum=scale_up_limit_minimum,
    )
    if hpa_max_replicas > scale_up_limit:
        maximum_allowed_replicas = scale_up_limit
        reason, message = _SCALE_UP_LIMIT
    else:
        maximum_allowed_replicas = hpa_max_replicas
        reason, message = _TOO_MANY
    if desired_replicas < hpa_min_replicas:
        return Limit(hpa_min_replicas, *_TOO_FEW)
    if desired_replicas > maximum_allowed_replicas:
        return Limit(maximum_allowed_replicas, reason, message)
    return _within_range(desired_replicas)


@dataclass(frozen=True, slots=True)
class Normalization:
    """What normalization did to one proposal.

    ``able_to_scale_*`` is the ``AbleToScale`` (True) condition the stabilization step sets,
    ``scaling_limited`` is whether ``ScalingLimited`` becomes True, with ``limit`` carrying its
    reason and message. ``window_recommendations`` are the logged recommendations that were inside
    a stabilization window and so could bound the result (for the explanation trace).
    """

    prenormalized_desired_replicas: int
    stabilized_replicas: int
    desired_replicas: int
    able_to_scale_reason: str
    able_to_scale_message: str
    scaling_limited: bool
    limit: Limit
    recommendations: Recommendations
    window_recommendations: tuple[int, ...]
    scale_up_limit: int | None = None
    scale_down_limit: int | None = None


def normalize_desired_replicas(
    recommendations: Recommendations,
    prenormalized_desired_replicas: int,
    *,
    current_replicas: int,
    min_replicas: int,
    max_replicas: int,
    downscale_stabilization_window_seconds: float,
    scale_up_limit_factor: float,
    scale_up_limit_minimum: float,
    now: datetime,
) -> Normalization:
    """``normalizeDesiredReplicas``: stabilization, then ``convertDesiredReplicasWithRules``."""
    stabilized, new_recommendations, window = _stabilize(
        recommendations,
        prenormalized_desired_replicas,
        downscale_stabilization_window_seconds=downscale_stabilization_window_seconds,
        now=now,
    )
    stabilized_away = stabilized != prenormalized_desired_replicas
    reason, message = SCALE_DOWN_STABILIZED if stabilized_away else READY_FOR_NEW_SCALE
    limit = convert_desired_replicas_with_rules(
        current_replicas,
        stabilized,
        hpa_min_replicas=min_replicas,
        hpa_max_replicas=max_replicas,
        scale_up_limit_factor=scale_up_limit_factor,
        scale_up_limit_minimum=scale_up_limit_minimum,
    )
    return Normalization(
        prenormalized_desired_replicas=prenormalized_desired_replicas,
        stabilized_replicas=stabilized,
        desired_replicas=limit.replicas,
        able_to_scale_reason=reason,
        able_to_scale_message=message,
        scaling_limited=limit.replicas != stabilized,
        limit=limit,
        recommendations=new_recommendations,
        window_recommendations=window,
        scale_up_limit=calculate_scale_up_limit(
            current_replicas,
            scale_up_limit_factor=scale_up_limit_factor,
            scale_up_limit_minimum=scale_up_limit_minimum,
        ),
    )


@dataclass(frozen=True, slots=True)
class NormalizationArg:
    """``NormalizationArg``: everything the behavior-based normalization reads."""

    scale_up_behavior: ScalingRules
    scale_down_behavior: ScalingRules
    min_replicas: int
    max_replicas: int
    current_replicas: int
    desired_replicas: int


def stabilize_recommendation_with_behaviors(
    recommendations: Recommendations,
    args: NormalizationArg,
    *,
    now: datetime,
) -> tuple[int, str, str, Recommendations]:
    """``stabilizeRecommendationWithBehaviors``.

    ``up = min(proposal, recs newer than the up-window)``, ``down = max(proposal, recs newer than
    the down-window)``; the result is ``current`` raised to ``up`` then lowered to ``down``. The
    proposal overwrites the last entry older than both windows, else it is appended. Returns the
    stabilized value, the reason/message upstream would use if it differs from the proposal, and
    the new log.
    """
    stabilized, reason, message, new_recommendations, _ = _stabilize_with_behaviors(
        recommendations, args, now=now
    )
    return stabilized, reason, message, new_recommendations


def _stabilize_with_behaviors(
    recommendations: Recommendations,
    args: NormalizationArg,
    *,
    now: datetime,
) -> tuple[int, str, str, Recommendations, tuple[int, ...]]:
    """:func:`stabilize_recommendation_with_behaviors`, plus the in-window values."""
    up_recommendation = args.desired_replicas
    up_cutoff = now - timedelta(seconds=args.scale_up_behavior.stabilization_window_seconds or 0)
    down_recommendation = args.desired_replicas
    down_cutoff = now - timedelta(
        seconds=args.scale_down_behavior.stabilization_window_seconds or 0
    )
    old_sample_index = -1
    window: list[int] = []
    append = window.append
    if up_cutoff >= down_cutoff:
        # the usual case (up window no longer than the down window): after the up cutoff implies
        # after the down cutoff, so most entries need one comparison to be placed
        for index, rec in enumerate(recommendations):
            timestamp = rec.timestamp
            if timestamp > down_cutoff:
                value = rec.recommendation
                append(value)
                if value > down_recommendation:
                    down_recommendation = value
                if value < up_recommendation and timestamp > up_cutoff:
                    up_recommendation = value
            elif timestamp != down_cutoff and timestamp != up_cutoff:
                # Before(upCutoff) && Before(downCutoff)
                old_sample_index = index
    else:
        for index, rec in enumerate(recommendations):
            timestamp = rec.timestamp
            after_up = timestamp > up_cutoff
            after_down = timestamp > down_cutoff
            if after_up or after_down:
                value = rec.recommendation
                append(value)
                if after_up and value < up_recommendation:
                    up_recommendation = value
                if after_down and value > down_recommendation:
                    down_recommendation = value
            elif timestamp != up_cutoff and timestamp != down_cutoff:
                # Before(upCutoff) && Before(downCutoff)
                old_sample_index = index

    recommendation = args.current_replicas
    if recommendation < up_recommendation:
        recommendation = up_recommendation
    if recommendation > down_recommendation:
        recommendation = down_recommendation

    entry = TimestampedRecommendation(args.desired_replicas, now)
    new_recommendations = _record(recommendations, old_sample_index, entry)
    if args.desired_replicas >= args.current_replicas:
        reason, message = SCALE_UP_STABILIZED
    else:
        reason, message = SCALE_DOWN_STABILIZED
    return recommendation, reason, message, new_recommendations, tuple(window)


def get_replicas_change_per_period(
    period_seconds: int, scale_events: Sequence[TimestampedScaleEvent], *, now: datetime
) -> int:
    """``getReplicasChangePerPeriod``: sum of changes strictly after ``now - period``."""
    if not scale_events:
        return 0
    cutoff = now - timedelta(seconds=period_seconds)
    return sum(event.replica_change for event in scale_events if event.timestamp > cutoff)


def calculate_scale_up_limit_with_scaling_rules(
    current_replicas: int,
    scale_up_events: Sequence[TimestampedScaleEvent],
    scale_down_events: Sequence[TimestampedScaleEvent],
    *,
    scaling_rules: ScalingRules,
    now: datetime,
) -> int:
    """``calculateScaleUpLimitWithScalingRules``: the highest count the policies allow now."""
    if scaling_rules.select_policy == ScalingPolicySelect.DISABLED:
        return current_replicas
    select_min = scaling_rules.select_policy == ScalingPolicySelect.MIN
    result = MAX_INT32 if select_min else MIN_INT32
    proposed = 0
    for policy in scaling_rules.policies or ():
        added = get_replicas_change_per_period(policy.period_seconds, scale_up_events, now=now)
        deleted = get_replicas_change_per_period(policy.period_seconds, scale_down_events, now=now)
        period_start_replicas = current_replicas - added + deleted
        if policy.type == ScalingPolicyType.PODS:
            proposed = period_start_replicas + policy.value
        elif policy.type == ScalingPolicyType.PERCENT:
            proposed = math.ceil(float(period_start_replicas) * (1 + float(policy.value) / 100))
        result = min(result, proposed) if select_min else max(result, proposed)
    return result


def calculate_scale_down_limit_with_behaviors(
    current_replicas: int,
    scale_up_events: Sequence[TimestampedScaleEvent],
    scale_down_events: Sequence[TimestampedScaleEvent],
    *,
    scaling_rules: ScalingRules,
    now: datetime,
) -> int:
    """``calculateScaleDownLimitWithBehaviors``: the lowest count the policies allow now."""
    if scaling_rules.select_policy == ScalingPolicySelect.DISABLED:
        return current_replicas
    select_min_change = scaling_rules.select_policy == ScalingPolicySelect.MIN
    result = MIN_INT32 if select_min_change else MAX_INT32
    proposed = 0
    for policy in scaling_rules.policies or ():
        added = get_replicas_change_per_period(policy.period_seconds, scale_up_events, now=now)
        deleted = get_replicas_change_per_period(policy.period_seconds, scale_down_events, now=now)
        period_start_replicas = current_replicas - added + deleted
        if policy.type == ScalingPolicyType.PODS:
            proposed = period_start_replicas - policy.value
        elif policy.type == ScalingPolicyType.PERCENT:
            proposed = int(float(period_start_replicas) * (1 - float(policy.value) / 100))
        result = max(result, proposed) if select_min_change else min(result, proposed)
    return result


def convert_desired_replicas_with_behavior_rate(
    args: NormalizationArg,
    *,
    scale_up_events: Sequence[TimestampedScaleEvent],
    scale_down_events: Sequence[TimestampedScaleEvent],
    now: datetime,
) -> tuple[Limit, int | None, int | None]:
    """``convertDesiredReplicasWithBehaviorRate``; also returns the policy limits it computed."""
    if args.desired_replicas > args.current_replicas:
        scale_up_limit = calculate_scale_up_limit_with_scaling_rules(
            args.current_replicas,
            scale_up_events,
            scale_down_events,
            scaling_rules=args.scale_up_behavior,
            now=now,
        )
        scale_up_limit = max(scale_up_limit, args.current_replicas)
        if args.max_replicas > scale_up_limit:
            maximum_allowed_replicas = scale_up_limit
            reason, message = _SCALE_UP_LIMIT
        else:
            maximum_allowed_replicas = args.max_replicas
            reason, message = _TOO_MANY
        if args.desired_replicas > maximum_allowed_replicas:
            return Limit(maximum_allowed_replicas, reason, message), scale_up_limit, None
        return _within_range(args.desired_replicas), scale_up_limit, None
    if args.desired_replicas < args.current_replicas:
        scale_down_limit = calculate_scale_down_limit_with_behaviors(
            args.current_replicas,
            scale_up_events,
            scale_down_events,
            scaling_rules=args.scale_down_behavior,
            now=now,
        )
        scale_down_limit = min(scale_down_limit, args.current_replicas)
        if args.min_replicas < scale_down_limit:
            minimum_allowed_replicas = scale_down_limit
            reason, message = _SCALE_DOWN_LIMIT
        else:
            minimum_allowed_replicas = args.min_replicas
            reason, message = _TOO_FEW
        if args.desired_replicas < minimum_allowed_replicas:
            return Limit(minimum_allowed_replicas, reason, message), None, scale_down_limit
        return _within_range(args.desired_replicas), None, scale_down_limit
    return _within_range(args.desired_replicas), None, None


def normalize_desired_replicas_with_behaviors(
    recommendations: Recommendations,
    prenormalized_desired_replicas: int,
    *,
    rules: ResolvedRules,
    current_replicas: int,
    min_replicas: int,
    max_replicas: int,
    scale_up_events: Sequence[TimestampedScaleEvent],
    scale_down_events: Sequence[TimestampedScaleEvent],
    now: datetime,
) -> Normalization:
    """``normalizeDesiredReplicasWithBehaviors``: stabilize, then apply the policy rate limits."""
    args = NormalizationArg(
        scale_up_behavior=rules.scale_up,
        scale_down_behavior=rules.scale_down,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        current_replicas=current_replicas,
        desired_replicas=prenormalized_desired_replicas,
    )
    stabilized, reason, message, new_recommendations, window = _stabilize_with_behaviors(
        recommendations, args, now=now
    )
    if stabilized == prenormalized_desired_replicas:
        reason, message = READY_FOR_NEW_SCALE
    limit, up_limit, down_limit = convert_desired_replicas_with_behavior_rate(
        NormalizationArg(
            scale_up_behavior=args.scale_up_behavior,
            scale_down_behavior=args.scale_down_behavior,
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            current_replicas=current_replicas,
            desired_replicas=stabilized,
        ),
        scale_up_events=scale_up_events,
        scale_down_events=scale_down_events,
        now=now,
    )
    return Normalization(
        prenormalized_desired_replicas=prenormalized_desired_replicas,
        stabilized_replicas=stabilized,
        desired_replicas=limit.replicas,
        able_to_scale_reason=reason,
        able_to_scale_message=message,
        scaling_limited=limit.replicas != stabilized,
        limit=limit,
        recommendations=new_recommendations,
        window_recommendations=window,
        scale_up_limit=up_limit,
        scale_down_limit=down_limit,
    )


def get_longest_policy_period(scaling_rules: ScalingRules | None) -> int:
    """``getLongestPolicyPeriod``."""
    longest = 0
    for policy in (scaling_rules.policies if scaling_rules is not None else None) or ():
        longest = max(longest, policy.period_seconds)
    return longest


def mark_scale_events_outdated(
    scale_events: ScaleEvents, longest_policy_period: int, *, now: datetime
) -> ScaleEvents:
    """``markScaleEventsOutdated``: flag events strictly before ``now - longest period``."""
    cutoff = now - timedelta(seconds=longest_policy_period)
    return tuple(
        replace(event, outdated=True) if event.timestamp < cutoff else event
        for event in scale_events
    )


def _store_in(events: ScaleEvents, change: int, longest: int, *, now: datetime) -> ScaleEvents:
    marked = mark_scale_events_outdated(events, longest, now=now)
    old_sample_index = -1
    for index, event in enumerate(marked):
        if event.outdated:
            old_sample_index = index
    new_event = TimestampedScaleEvent(change, now, False)
    if old_sample_index >= 0:
        return (*marked[:old_sample_index], new_event, *marked[old_sample_index + 1 :])
    return (*marked, new_event)


def store_scale_event(
    behavior: HorizontalPodAutoscalerBehavior | None,
    scale_up_events: ScaleEvents,
    scale_down_events: ScaleEvents,
    *,
    prev_replicas: int,
    new_replicas: int,
    now: datetime,
) -> tuple[ScaleEvents, ScaleEvents]:
    """``storeScaleEvent``: record a successful rescale (only with a behavior).

    Events of the rescale's direction older than that direction's longest policy period are
    marked outdated; the new ``{|change|, now}`` overwrites the last outdated one, else is
    appended. Returns the new (scale-up, scale-down) events.
    """
    if behavior is None:
        return scale_up_events, scale_down_events
    if new_replicas > prev_replicas:
        longest = get_longest_policy_period(behavior.scale_up)
        change = new_replicas - prev_replicas
        return _store_in(scale_up_events, change, longest, now=now), scale_down_events
    longest = get_longest_policy_period(behavior.scale_down)
    change = prev_replicas - new_replicas
    return scale_up_events, _store_in(scale_down_events, change, longest, now=now)
