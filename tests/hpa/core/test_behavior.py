"""Properties and examples of hpa.core.behavior (stabilization, policies, scale events).

The upstream tables live in tests/parity/test_horizontal.py; this file checks the invariants a user
relies on, over generated histories and closed scaling loops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpa.core.behavior import (
    NormalizationArg,
    TimestampedRecommendation,
    TimestampedScaleEvent,
    _stabilize_with_behaviors,
    calculate_scale_down_limit_with_behaviors,
    calculate_scale_up_limit_with_scaling_rules,
    normalize_desired_replicas,
    normalize_desired_replicas_with_behaviors,
    record_initial_recommendation,
    stabilize_recommendation,
    stabilize_recommendation_with_behaviors,
    store_scale_event,
)
from hpa.core.spec import (
    HorizontalPodAutoscalerBehavior,
    HorizontalSettings,
    ScalingPolicy,
    ScalingPolicySelect,
    ScalingPolicyType,
    ScalingRules,
    resolve_behavior,
)

# generation of these inputs is legitimately slow on a loaded 2-core CI runner
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
NOW = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)

recommendation_logs = st.lists(
    st.builds(
        TimestampedRecommendation,
        recommendation=st.integers(0, 200),
        timestamp=st.integers(0, 1200).map(lambda s: NOW - timedelta(seconds=s)),
    ),
    max_size=30,
).map(tuple)


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(
    log=recommendation_logs,
    proposal=st.integers(0, 200),
    window_seconds=st.integers(0, 900),
)
def test_legacy_stabilization_never_goes_below_a_recommendation_in_the_window(
    log: tuple[TimestampedRecommendation, ...], proposal: int, window_seconds: int
) -> None:
    stabilized, new_log = stabilize_recommendation(
        log, proposal, downscale_stabilization_window_seconds=window_seconds, now=NOW
    )
    cutoff = NOW - timedelta(seconds=window_seconds)
    in_window = [r.recommendation for r in log if r.timestamp >= cutoff]
    assert stabilized == max([proposal, *in_window])
    # the proposal is logged once, and the log never grows by more than one entry
    assert TimestampedRecommendation(proposal, NOW) in new_log
    assert len(new_log) in (len(log), len(log) + 1)


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(
    log=recommendation_logs,
    proposal=st.integers(0, 200),
    current=st.integers(0, 200),
    up_window=st.integers(0, 900),
    down_window=st.integers(0, 900),
)
def test_behavior_stabilization_stays_between_the_window_bounds(
    log: tuple[TimestampedRecommendation, ...],
    proposal: int,
    current: int,
    up_window: int,
    down_window: int,
) -> None:
    args = NormalizationArg(
        scale_up_behavior=ScalingRules(stabilization_window_seconds=up_window),
        scale_down_behavior=ScalingRules(stabilization_window_seconds=down_window),
        min_replicas=0,
        max_replicas=1000,
        current_replicas=current,
        desired_replicas=proposal,
    )
    stabilized, _, _, _ = stabilize_recommendation_with_behaviors(log, args, now=NOW)
    up_cutoff = NOW - timedelta(seconds=up_window)
    down_cutoff = NOW - timedelta(seconds=down_window)
    down_window_values = [proposal, *(r.recommendation for r in log if r.timestamp > down_cutoff)]
    up_window_values = [proposal, *(r.recommendation for r in log if r.timestamp > up_cutoff)]
    if stabilized < current:
        # a scale-down never goes below the highest recommendation in the down window
        assert stabilized == max(down_window_values)
    if stabilized > current:
        # a scale-up never goes above the lowest recommendation in the up window
        assert stabilized == min(up_window_values)
    # and the result always moves towards the proposal, never past it
    assert min(current, proposal) <= stabilized <= max(current, proposal)


policies = st.builds(
    ScalingPolicy,
    type=st.sampled_from(list(ScalingPolicyType)),
    value=st.integers(1, 200),
    period_seconds=st.integers(1, 600),
)


@dataclass(frozen=True)
class Step:
    after_seconds: int
    proposal: int


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(
    up_policy=policies,
    down_policy=policies,
    start=st.integers(1, 50),
    steps=st.lists(
        st.builds(Step, after_seconds=st.integers(1, 120), proposal=st.integers(0, 300)),
        min_size=1,
        max_size=25,
    ),
)
def test_a_policy_never_allows_more_change_than_it_states_in_any_period(
    up_policy: ScalingPolicy, down_policy: ScalingPolicy, start: int, steps: list[Step]
) -> None:
    """A closed loop: every normalized decision is applied and stored as a scale event."""
    behavior = HorizontalPodAutoscalerBehavior(
        scale_up=ScalingRules(stabilization_window_seconds=0, policies=(up_policy,)),
        scale_down=ScalingRules(stabilization_window_seconds=0, policies=(down_policy,)),
    )
    rules = resolve_behavior(behavior, HorizontalSettings())
    timeline: list[tuple[datetime, int]] = [(NOW - timedelta(days=1), start)]
    now = NOW
    current = start
    recommendations = record_initial_recommendation(None, current, now=now)
    up_events: tuple[TimestampedScaleEvent, ...] = ()
    down_events: tuple[TimestampedScaleEvent, ...] = ()

    def replicas_at(moment: datetime) -> int:
        """Replicas after every change at or before ``moment``."""
        return [r for t, r in timeline if t <= moment][-1]

    for step in steps:
        now += timedelta(seconds=step.after_seconds)
        norm = normalize_desired_replicas_with_behaviors(
            recommendations,
            step.proposal,
            rules=rules,
            current_replicas=current,
            min_replicas=0,
            max_replicas=10_000,
            scale_up_events=up_events,
            scale_down_events=down_events,
            now=now,
        )
        recommendations = norm.recommendations
        desired = norm.desired_replicas
        if desired > current:
            period_start = replicas_at(now - timedelta(seconds=up_policy.period_seconds))
            if up_policy.type == ScalingPolicyType.PODS:
                allowed = period_start + up_policy.value
            else:
                allowed = math.ceil(period_start * (1 + up_policy.value / 100))
            assert desired <= max(current, allowed)
        elif desired < current:
            period_start = replicas_at(now - timedelta(seconds=down_policy.period_seconds))
            if down_policy.type == ScalingPolicyType.PODS:
                allowed = period_start - down_policy.value
            else:
                allowed = int(period_start * (1 - down_policy.value / 100))
            assert desired >= min(current, allowed)
        if desired != current:
            up_events, down_events = store_scale_event(
                behavior,
                up_events,
                down_events,
                prev_replicas=current,
                new_replicas=desired,
                now=now,
            )
            current = desired
            timeline.append((now, current))


@settings(max_examples=1000, deadline=None, suppress_health_check=SLOW_OK)
@given(
    offset=st.integers(0, 500),
    proposal=st.integers(0, 5000),
    min_replicas=st.integers(0, 20),
    span=st.integers(0, 500),
    log=recommendation_logs,
)
def test_legacy_normalization_stays_within_min_max_and_the_scale_up_limit(
    offset: int,
    proposal: int,
    min_replicas: int,
    span: int,
    log: tuple[TimestampedRecommendation, ...],
) -> None:
    """As the controller runs it: only with min <= current <= max (other cases return early)."""
    max_replicas = min_replicas + span
    current = min_replicas + offset % (span + 1)
    norm = normalize_desired_replicas(
        log,
        proposal,
        current_replicas=current,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        downscale_stabilization_window_seconds=300,
        scale_up_limit_factor=2.0,
        scale_up_limit_minimum=4.0,
        now=NOW,
    )
    assert min_replicas <= norm.desired_replicas <= max_replicas
    assert norm.desired_replicas <= max(min_replicas, int(max(2.0 * current, 4.0)))
    assert norm.scaling_limited == (norm.desired_replicas != norm.stabilized_replicas)


def test_selectpolicy_disabled_freezes_that_direction() -> None:
    disabled = ScalingRules(
        select_policy=ScalingPolicySelect.DISABLED,
        policies=(ScalingPolicy(ScalingPolicyType.PODS, 100, 15),),
    )
    assert (
        calculate_scale_up_limit_with_scaling_rules(7, (), (), scaling_rules=disabled, now=NOW) == 7
    )
    assert (
        calculate_scale_down_limit_with_behaviors(7, (), (), scaling_rules=disabled, now=NOW) == 7
    )


def test_percent_scale_down_truncates_and_scale_up_rounds_up() -> None:
    rules = ScalingRules(
        select_policy=ScalingPolicySelect.MAX,
        policies=(ScalingPolicy(ScalingPolicyType.PERCENT, 50, 60),),
    )
    # 3 * 1.5 = 4.5 -> 5 ; 3 * 0.5 = 1.5 -> 1
    assert calculate_scale_up_limit_with_scaling_rules(3, (), (), scaling_rules=rules, now=NOW) == 5
    assert calculate_scale_down_limit_with_behaviors(3, (), (), scaling_rules=rules, now=NOW) == 1


def test_select_policy_min_takes_the_smaller_change() -> None:
    rules = ScalingRules(
        select_policy=ScalingPolicySelect.MIN,
        policies=(
            ScalingPolicy(ScalingPolicyType.PODS, 4, 60),
            ScalingPolicy(ScalingPolicyType.PERCENT, 100, 60),
        ),
    )
    assert (
        calculate_scale_up_limit_with_scaling_rules(10, (), (), scaling_rules=rules, now=NOW) == 14
    )
    assert calculate_scale_down_limit_with_behaviors(10, (), (), scaling_rules=rules, now=NOW) == 6


def test_first_reconcile_seeds_the_log_with_current_replicas_only_once() -> None:
    seeded = record_initial_recommendation(None, 5, now=NOW)
    assert seeded == (TimestampedRecommendation(5, NOW),)
    assert record_initial_recommendation((), 5, now=NOW) == ()
    assert record_initial_recommendation(seeded, 9, now=NOW + timedelta(seconds=15)) == seeded


def test_histories_are_returned_not_mutated() -> None:
    log = (TimestampedRecommendation(4, NOW - timedelta(minutes=10)),)
    stabilized, new_log = stabilize_recommendation(
        log, 3, downscale_stabilization_window_seconds=300, now=NOW
    )
    assert stabilized == 3
    assert log == (TimestampedRecommendation(4, NOW - timedelta(minutes=10)),)
    assert new_log == (TimestampedRecommendation(3, NOW),)


def _upstream_stabilize_with_behaviors(
    log: tuple[TimestampedRecommendation, ...], args: NormalizationArg, now: datetime
) -> tuple[int, tuple[TimestampedRecommendation, ...], list[int]]:
    """``stabilizeRecommendationWithBehaviors`` transliterated loop for loop from upstream's Go,
    plus the values in either window (what the trace shows)."""
    up_recommendation = args.desired_replicas
    up_cutoff = now - timedelta(seconds=args.scale_up_behavior.stabilization_window_seconds or 0)
    down_recommendation = args.desired_replicas
    down_cutoff = now - timedelta(
        seconds=args.scale_down_behavior.stabilization_window_seconds or 0
    )
    found_old_sample = False
    old_sample_index = 0
    window: list[int] = []
    for i, rec in enumerate(log):
        if rec.timestamp > up_cutoff:
            up_recommendation = min(rec.recommendation, up_recommendation)
        if rec.timestamp > down_cutoff:
            down_recommendation = max(rec.recommendation, down_recommendation)
        if rec.timestamp > up_cutoff or rec.timestamp > down_cutoff:
            window.append(rec.recommendation)
        if rec.timestamp < up_cutoff and rec.timestamp < down_cutoff:
            found_old_sample = True
            old_sample_index = i
    recommendation = args.current_replicas
    if recommendation < up_recommendation:
        recommendation = up_recommendation
    if recommendation > down_recommendation:
        recommendation = down_recommendation
    entry = TimestampedRecommendation(args.desired_replicas, now)
    new_log = list(log)
    if found_old_sample:
        new_log[old_sample_index] = entry
    else:
        new_log.append(entry)
    return recommendation, tuple(new_log), window


@settings(max_examples=2000, deadline=None, suppress_health_check=SLOW_OK)
@given(
    log=st.lists(
        st.builds(
            TimestampedRecommendation,
            recommendation=st.integers(0, 20),
            timestamp=st.sampled_from((0, 15, 60, 285, 300, 315, 600, 900, 1200)).map(
                lambda s: NOW - timedelta(seconds=s)
            ),
        ),
        max_size=30,
    ).map(tuple),
    proposal=st.integers(0, 20),
    current=st.integers(0, 20),
    up_window=st.sampled_from((None, 0, 60, 300, 600)),
    down_window=st.sampled_from((None, 0, 60, 300, 600)),
)
def test_behavior_stabilization_equals_upstreams_loop(
    log: tuple[TimestampedRecommendation, ...],
    proposal: int,
    current: int,
    up_window: int | None,
    down_window: int | None,
) -> None:
    """Same result, same log (the last entry older than both windows overwritten, else the
    proposal appended) and same in-window values, with timestamps on and around the cutoffs."""
    args = NormalizationArg(
        scale_up_behavior=ScalingRules(stabilization_window_seconds=up_window),
        scale_down_behavior=ScalingRules(stabilization_window_seconds=down_window),
        min_replicas=0,
        max_replicas=1000,
        current_replicas=current,
        desired_replicas=proposal,
    )
    expected, expected_log, expected_window = _upstream_stabilize_with_behaviors(log, args, NOW)
    stabilized, _, _, new_log, window = _stabilize_with_behaviors(log, args, now=NOW)
    assert (stabilized, new_log, list(window)) == (expected, expected_log, expected_window)
