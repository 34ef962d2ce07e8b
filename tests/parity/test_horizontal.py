"""Parity with upstream ``pkg/controller/podautoscaler/horizontal_test.go``.

Every case id is the Go test name (and, for table tests, ``/`` and the Go sub-test name). Times
that the Go tests take from ``time.Now()`` are taken relative to one fixed ``NOW`` here; the
function under test is evaluated at that same ``NOW``. The unit-test constants of
``horizontal_test.go`` apply: tolerance 0.1, CPU initialization period 2 min, initial readiness
delay 10 s, downscale stabilization 5 min and ``scaleUpLimitFactor = 8``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from hpa.core.behavior import (
    NormalizationArg,
    TimestampedRecommendation,
    TimestampedScaleEvent,
    calculate_scale_down_limit_with_behaviors,
    calculate_scale_up_limit,
    calculate_scale_up_limit_with_scaling_rules,
    convert_desired_replicas_with_behavior_rate,
    convert_desired_replicas_with_rules,
    get_replicas_change_per_period,
    stabilize_recommendation,
    stabilize_recommendation_with_behaviors,
    store_scale_event,
)
from hpa.core.spec import (
    HorizontalPodAutoscalerBehavior,
    ScalingPolicy,
    ScalingPolicySelect,
    ScalingPolicyType,
    ScalingRules,
    generate_scale_down_rules,
    generate_scale_up_rules,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
TEST_SCALE_UP_LIMIT_FACTOR = 8.0  # horizontal_test.go init()
TEST_SCALE_UP_LIMIT_MINIMUM = 4.0
TEST_DOWNSCALE_STABILIZATION_SECONDS = 300


def ago(*, minutes: float = 0, seconds: float = 0) -> datetime:
    return NOW - timedelta(minutes=minutes, seconds=seconds)


def rec(recommendation: int, timestamp: datetime) -> TimestampedRecommendation:
    return TimestampedRecommendation(recommendation, timestamp)


def generate_scaling_rules(
    pods: int, pods_period: int, percent: int, percent_period: int, stabilization_window: int
) -> ScalingRules:
    """``generateScalingRules`` (selectPolicy Max; a zero value leaves that policy out)."""
    policies: list[ScalingPolicy] = []
    if pods != 0:
        policies.append(ScalingPolicy(ScalingPolicyType.PODS, pods, pods_period))
    if percent != 0:
        policies.append(ScalingPolicy(ScalingPolicyType.PERCENT, percent, percent_period))
    return ScalingRules(
        stabilization_window_seconds=stabilization_window,
        select_policy=ScalingPolicySelect.MAX,
        policies=tuple(policies) if policies else None,
    )


def generate_events_uniform_distribution(
    raw_events: list[int], period_seconds: int
) -> tuple[TimestampedScaleEvent, ...]:
    """``generateEventsUniformDistribution``: one event in the middle of each segment."""
    segment = period_seconds / len(raw_events)
    events = []
    for idx, change in enumerate(raw_events):
        # time.Duration(float64(...)) truncates to whole nanoseconds, then * time.Second.
        boundary_seconds = int(period_seconds - segment * (idx + 1) + segment / 2)
        events.append(TimestampedScaleEvent(change, NOW - timedelta(seconds=boundary_seconds)))
    return tuple(events)


# ---------------------------------------------------- TestConvertDesiredReplicasWithRules


@dataclass(frozen=True)
class ConversionCase:
    annotation: str
    current_replicas: int
    expected_desired_replicas: int
    hpa_min_replicas: int
    hpa_max_replicas: int
    expected_converted_desired_replicas: int
    expected_condition: str


CONVERSION_CASES = [
    ConversionCase(
        "prenormalized desired replicas within range", 5, 7, 3, 8, 7, "DesiredWithinRange"
    ),
    ConversionCase("prenormalized desired replicas < minReplicas", 3, 1, 2, 8, 2, "TooFewReplicas"),
    ConversionCase(
        "prenormalized desired zeroed replicas within range", 1, 0, 0, 10, 0, "DesiredWithinRange"
    ),
    ConversionCase(
        "maxReplicas is the limit because maxReplicas < scaleUpLimit",
        20,
        1000,
        1,
        10,
        10,
        "TooManyReplicas",
    ),
    ConversionCase(
        "scaleUpLimit is the limit because scaleUpLimit < maxReplicas",
        3,
        1000,
        1,
        2000,
        calculate_scale_up_limit(
            3,
            scale_up_limit_factor=TEST_SCALE_UP_LIMIT_FACTOR,
            scale_up_limit_minimum=TEST_SCALE_UP_LIMIT_MINIMUM,
        ),
        "ScaleUpLimit",
    ),
]


@pytest.mark.parametrize(
    "case", CONVERSION_CASES, ids=lambda c: f"TestConvertDesiredReplicasWithRules/{c.annotation}"
)
def test_convert_desired_replicas_with_rules(case: ConversionCase) -> None:
    """TestConvertDesiredReplicasWithRules."""
    limit = convert_desired_replicas_with_rules(
        case.current_replicas,
        case.expected_desired_replicas,
        hpa_min_replicas=case.hpa_min_replicas,
        hpa_max_replicas=case.hpa_max_replicas,
        scale_up_limit_factor=TEST_SCALE_UP_LIMIT_FACTOR,
        scale_up_limit_minimum=TEST_SCALE_UP_LIMIT_MINIMUM,
    )
    assert limit.replicas == case.expected_converted_desired_replicas
    assert limit.reason == case.expected_condition


def test_convert_desired_replicas_with_rules_scale_up_limit_value() -> None:
    """TestConvertDesiredReplicasWithRules: calculateScaleUpLimit(3) = max(8*3, 4) = 24."""
    assert CONVERSION_CASES[-1].expected_converted_desired_replicas == 24


# ---------------------------------------------------- TestCalculateScale{Up,Down}Limit...


def _min_rules() -> ScalingRules:
    return ScalingRules(
        stabilization_window_seconds=300,
        select_policy=ScalingPolicySelect.MIN,
        policies=(
            ScalingPolicy(ScalingPolicyType.PODS, 2, 60),
            ScalingPolicy(ScalingPolicyType.PERCENT, 50, 60),
        ),
    )


def test_calculate_scale_up_limit_with_scaling_rules() -> None:
    """TestCalculateScaleUpLimitWithScalingRules."""
    calculated = calculate_scale_up_limit_with_scaling_rules(
        1, (), (), scaling_rules=_min_rules(), now=NOW
    )
    assert calculated == 2


def test_calculate_scale_down_limit_with_behaviors() -> None:
    """TestCalculateScaleDownLimitWithBehaviors."""
    calculated = calculate_scale_down_limit_with_behaviors(
        5, (), (), scaling_rules=_min_rules(), now=NOW
    )
    assert calculated == 3


# ------------------------------------------------------------------- TestNormalizeDesiredReplicas


@dataclass(frozen=True)
class StabilizeCase:
    name: str
    recommendations: tuple[TimestampedRecommendation, ...]
    prenormalized_desired_replicas: int
    expected_stabilized_replicas: int
    expected_log_length: int


NORMALIZE_CASES = [
    StabilizeCase("empty log", (), 5, 5, 1),
    StabilizeCase("stabilize", (rec(4, ago(minutes=2)), rec(5, ago(minutes=1))), 3, 5, 3),
    StabilizeCase("no stabilize", (rec(1, ago(minutes=2)), rec(2, ago(minutes=1))), 3, 3, 3),
    StabilizeCase(
        "no stabilize - old recommendations",
        (rec(10, ago(minutes=10)), rec(9, ago(minutes=9))),
        3,
        3,
        2,
    ),
    StabilizeCase(
        "stabilize - old recommendations",
        (
            rec(10, ago(minutes=10)),
            rec(4, ago(minutes=1)),
            rec(5, ago(minutes=2)),
            rec(9, ago(minutes=9)),
        ),
        3,
        5,
        4,
    ),
]


@pytest.mark.parametrize(
    "case", NORMALIZE_CASES, ids=lambda c: f"TestNormalizeDesiredReplicas/{c.name}"
)
def test_normalize_desired_replicas(case: StabilizeCase) -> None:
    """TestNormalizeDesiredReplicas (stabilizeRecommendation with a 5 min window)."""
    stabilized, log = stabilize_recommendation(
        case.recommendations,
        case.prenormalized_desired_replicas,
        downscale_stabilization_window_seconds=TEST_DOWNSCALE_STABILIZATION_SECONDS,
        now=NOW,
    )
    assert stabilized == case.expected_stabilized_replicas
    assert len(log) == case.expected_log_length
    assert TimestampedRecommendation(case.prenormalized_desired_replicas, NOW) in log


# ------------------------------------------------------- TestNormalizeDesiredReplicasWithBehavior


@dataclass(frozen=True)
class BehaviorStabilizeCase:
    name: str
    recommendations: tuple[TimestampedRecommendation, ...]
    current_replicas: int
    prenormalized_desired_replicas: int
    expected_stabilized_replicas: int
    expected_recommendations: tuple[int, ...] | None
    scale_up_stabilization_window_seconds: int = 0
    scale_down_stabilization_window_seconds: int = 0


BEHAVIOR_STABILIZE_CASES = [
    BehaviorStabilizeCase("empty recommendations for scaling down", (), 100, 5, 5, (5,)),
    BehaviorStabilizeCase(
        "simple scale down stabilization",
        (rec(4, ago(minutes=2)), rec(5, ago(minutes=1))),
        100,
        3,
        5,
        (4, 5, 3),
        scale_down_stabilization_window_seconds=60 * 3,
    ),
    BehaviorStabilizeCase(
        "simple scale up stabilization",
        (rec(4, ago(minutes=2)), rec(5, ago(minutes=1))),
        1,
        7,
        4,
        (4, 5, 7),
        scale_up_stabilization_window_seconds=60 * 5,
    ),
    BehaviorStabilizeCase(
        "no scale down stabilization",
        (rec(1, ago(minutes=2)), rec(2, ago(minutes=1))),
        100,
        3,
        3,
        (1, 2, 3),
        scale_up_stabilization_window_seconds=60 * 5,
    ),
    BehaviorStabilizeCase(
        "no scale up stabilization",
        (rec(4, ago(minutes=2)), rec(5, ago(minutes=1))),
        1,
        3,
        3,
        (4, 5, 3),
        scale_down_stabilization_window_seconds=60 * 5,
    ),
    BehaviorStabilizeCase(
        "no scale down stabilization, reuse recommendation element",
        (rec(10, ago(minutes=10)), rec(9, ago(minutes=9))),
        100,
        3,
        3,
        (10, 3),
    ),
    BehaviorStabilizeCase(
        "no scale up stabilization, reuse recommendation element",
        (rec(10, ago(minutes=10)), rec(9, ago(minutes=9))),
        1,
        100,
        100,
        (10, 100),
    ),
    BehaviorStabilizeCase(
        "scale down stabilization, reuse one of obsolete recommendation element",
        (
            rec(10, ago(minutes=10)),
            rec(4, ago(minutes=1)),
            rec(5, ago(minutes=2)),
            rec(9, ago(minutes=9)),
        ),
        100,
        3,
        5,
        (10, 4, 5, 3),
        scale_down_stabilization_window_seconds=3 * 60,
    ),
    BehaviorStabilizeCase(
        "scale up stabilization, reuse one of obsolete recommendation element",
        (
            rec(10, ago(minutes=100)),
            rec(6, ago(minutes=1)),
            rec(5, ago(minutes=2)),
            rec(9, ago(minutes=3)),
        ),
        1,
        100,
        5,
        (100, 6, 5, 9),
        scale_up_stabilization_window_seconds=300,
    ),
    BehaviorStabilizeCase(
        "scale up and down stabilization, do not scale up when prenormalized rec goes down",
        (rec(2, ago(minutes=100)), rec(3, ago(minutes=3))),
        2,
        1,
        2,
        None,
        scale_up_stabilization_window_seconds=300,
        scale_down_stabilization_window_seconds=300,
    ),
    BehaviorStabilizeCase(
        "scale up and down stabilization, do not scale down when prenormalized rec goes up",
        (rec(2, ago(minutes=100)), rec(1, ago(minutes=3))),
        2,
        3,
        2,
        None,
        scale_up_stabilization_window_seconds=300,
        scale_down_stabilization_window_seconds=300,
    ),
]


@pytest.mark.parametrize(
    "case",
    BEHAVIOR_STABILIZE_CASES,
    ids=lambda c: f"TestNormalizeDesiredReplicasWithBehavior/{c.name}",
)
def test_normalize_desired_replicas_with_behavior(case: BehaviorStabilizeCase) -> None:
    """TestNormalizeDesiredReplicasWithBehavior (stabilizeRecommendationWithBehaviors)."""
    args = NormalizationArg(
        scale_up_behavior=ScalingRules(
            stabilization_window_seconds=case.scale_up_stabilization_window_seconds
        ),
        scale_down_behavior=ScalingRules(
            stabilization_window_seconds=case.scale_down_stabilization_window_seconds
        ),
        min_replicas=0,
        max_replicas=0,
        current_replicas=case.current_replicas,
        desired_replicas=case.prenormalized_desired_replicas,
    )
    stabilized, _, _, log = stabilize_recommendation_with_behaviors(
        case.recommendations, args, now=NOW
    )
    assert stabilized == case.expected_stabilized_replicas
    if case.expected_recommendations is not None:
        assert tuple(r.recommendation for r in log) == case.expected_recommendations


# -------------------------------------------------------------------------- TestScalingWithRules


@dataclass(frozen=True)
class RulesCase:
    name: str
    current_replicas: int
    prenormalized_desired_replicas: int
    spec_min_replicas: int
    spec_max_replicas: int
    expected_replicas: int
    expected_condition: str
    scale_up_rules: ScalingRules | None = None
    scale_down_rules: ScalingRules | None = None
    scale_up_events: tuple[TimestampedScaleEvent, ...] = ()
    scale_down_events: tuple[TimestampedScaleEvent, ...] = ()


gsr = generate_scaling_rules
gev = generate_events_uniform_distribution

SCALING_WITH_RULES_CASES = [
    RulesCase("prenormalized desired replicas within range", 5, 7, 3, 8, 7, "DesiredWithinRange"),
    RulesCase("prenormalized desired replicas < minReplicas", 3, 1, 2, 8, 2, "TooFewReplicas"),
    RulesCase(
        "prenormalized desired replicas within range when minReplicas is 0",
        1,
        0,
        0,
        10,
        0,
        "DesiredWithinRange",
    ),
    RulesCase(
        "maxReplicas is the limit because maxReplicas < scaleUpLimit",
        20,
        1000,
        1,
        10,
        10,
        "TooManyReplicas",
    ),
    RulesCase(
        "desired replica count is more than the maximum replica count",
        100,
        1000,
        100,
        150,
        150,
        "TooManyReplicas",
    ),
    RulesCase(
        "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies",
        3,
        1000,
        1,
        2000,
        4,
        "ScaleUpLimit",
        scale_up_rules=gsr(0, 0, 1, 60, 0),
    ),
    # Upstream skips this sub-test (testThis: true returns early); it holds here as well.
    RulesCase(
        "scaleDownLimit is the limit because scaleDownLimit > minReplicas with user defined "
        "policies",
        1000,
        3,
        3,
        2000,
        980,
        "ScaleDownLimit",
        scale_down_rules=gsr(20, 60, 0, 0, 0),
    ),
    RulesCase("scaleUp with default behavior", 10, 50, 1, 1000, 20, "ScaleUpLimit"),
    RulesCase(
        "scaleUp with pods policy larger than percent policy",
        10,
        500,
        1,
        1000,
        110,
        "ScaleUpLimit",
        scale_up_rules=gsr(100, 60, 100, 60, 0),
    ),
    RulesCase(
        "scaleUp with percent policy larger than pods policy",
        10,
        500,
        1,
        1000,
        20,
        "ScaleUpLimit",
        scale_up_rules=gsr(2, 60, 100, 60, 0),
    ),
    RulesCase(
        "scaleUp with spec MaxReplicas limitation with large pod policy",
        10,
        50,
        1,
        1000,
        50,
        "DesiredWithinRange",
        scale_up_rules=gsr(100, 60, 0, 0, 0),
    ),
    RulesCase(
        "scaleUp with spec MaxReplicas limitation with large percent policy",
        10,
        50,
        1,
        1000,
        50,
        "DesiredWithinRange",
        scale_up_rules=gsr(10000, 60, 0, 0, 0),
    ),
    RulesCase(
        "scaleUp with pod policy limitation",
        10,
        50,
        1,
        1000,
        40,
        "ScaleUpLimit",
        scale_up_rules=gsr(30, 60, 0, 0, 0),
    ),
    RulesCase(
        "scaleUp with percent policy limitation",
        10,
        50,
        1,
        1000,
        30,
        "ScaleUpLimit",
        scale_up_rules=gsr(0, 0, 200, 60, 0),
    ),
    RulesCase(
        "scaleDown with percent policy larger than pod policy",
        100,
        2,
        1,
        1000,
        80,
        "ScaleDownLimit",
        scale_down_rules=gsr(20, 60, 1, 60, 300),
    ),
    RulesCase(
        "scaleDown with pod policy larger than percent policy",
        100,
        2,
        1,
        1000,
        98,
        "ScaleDownLimit",
        scale_down_rules=gsr(2, 60, 1, 60, 300),
    ),
    RulesCase(
        "scaleDown with spec MinReplicas=nil limitation with large pod policy",
        10,
        0,
        1,
        1000,
        1,
        "TooFewReplicas",
        scale_down_rules=gsr(100, 60, 0, 0, 300),
    ),
    RulesCase(
        "scaleDown with spec MinReplicas limitation with large pod policy",
        10,
        0,
        1,
        1000,
        1,
        "TooFewReplicas",
        scale_down_rules=gsr(100, 60, 0, 0, 300),
    ),
    RulesCase(
        "scaleDown with spec MinReplicas limitation with large percent policy",
        10,
        2,
        5,
        1000,
        5,
        "TooFewReplicas",
        scale_down_rules=gsr(0, 0, 100, 60, 300),
    ),
    RulesCase(
        "scaleDown with pod policy limitation",
        10,
        2,
        1,
        1000,
        5,
        "ScaleDownLimit",
        scale_down_rules=gsr(5, 60, 0, 0, 300),
    ),
    RulesCase(
        "scaleDown with percent policy limitation",
        10,
        5,
        1,
        1000,
        5,
        "DesiredWithinRange",
        scale_down_rules=gsr(0, 0, 50, 60, 300),
    ),
    RulesCase(
        "scaleUp with spec MaxReplicas limitation with large pod policy and events",
        100,
        500,
        1,
        200,
        200,
        "TooManyReplicas",
        scale_up_rules=gsr(300, 60, 0, 0, 0),
        scale_up_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleUp with spec MaxReplicas limitation with large percent policy and events",
        100,
        500,
        1,
        200,
        200,
        "TooManyReplicas",
        scale_up_rules=gsr(0, 0, 10000, 60, 0),
        scale_up_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent "
        "scale up events",
        100,
        500,
        1,
        1000,
        100,
        "ScaleUpLimit",
        scale_up_rules=gsr(5, 120, 0, 0, 0),
        scale_up_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleUp with pod policy and previous scale up events",
        100,
        500,
        1,
        1000,
        235,
        "ScaleUpLimit",
        scale_up_rules=gsr(150, 120, 0, 0, 0),
        scale_up_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleUp with percent policy and previous scale up events",
        100,
        500,
        1,
        1000,
        255,
        "ScaleUpLimit",
        scale_up_rules=gsr(0, 0, 200, 120, 0),
        scale_up_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleUp with percent policy and previous scale up and down events",
        6,
        24,
        1,
        1000,
        16,
        "ScaleUpLimit",
        scale_up_rules=gsr(0, 0, 300, 300, 0),
        scale_up_events=gev([4], 120),
        scale_down_events=gev([2], 120),
    ),
    RulesCase(
        "scaleDown with default policy and previous events",
        10,
        5,
        1,
        1000,
        5,
        "DesiredWithinRange",
        scale_down_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events",
        100,
        0,
        1,
        1000,
        1,
        "TooFewReplicas",
        scale_down_rules=gsr(115, 120, 0, 0, 300),
        scale_down_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleDown with spec MinReplicas limitation with large pod policy and previous events",
        100,
        0,
        5,
        1000,
        5,
        "TooFewReplicas",
        scale_down_rules=gsr(130, 120, 0, 0, 300),
        scale_down_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleDown with spec MinReplicas limitation with large percent policy and previous events",
        100,
        2,
        5,
        1000,
        5,
        "TooFewReplicas",
        scale_down_rules=gsr(0, 0, 100, 120, 300),
        scale_down_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleDown with pod policy limitation and previous events",
        100,
        2,
        1,
        1000,
        100,
        "ScaleDownLimit",
        scale_down_rules=gsr(5, 120, 0, 0, 300),
        scale_down_events=gev([1, 5, 9], 120),
    ),
    RulesCase(
        "scaleDown with percent policy limitation and previous events",
        100,
        0,
        1,
        1000,
        56,
        "ScaleDownLimit",
        scale_down_rules=gsr(0, 0, 50, 120, 300),
        scale_down_events=gev([2, 4, 6], 120),
    ),
    RulesCase(
        "scaleDown with percent policy and previous scale up and down events",
        10,
        1,
        1,
        1000,
        6,
        "ScaleDownLimit",
        scale_down_rules=gsr(0, 0, 50, 180, 0),
        scale_up_events=gev([2], 120),
        scale_down_events=gev([4], 120),
    ),
    RulesCase(
        "scaleDown with previous events preventing further scale down",
        100,
        0,
        1,
        1000,
        100,
        "ScaleDownLimit",
        scale_down_rules=gsr(0, 0, 10, 120, 300),
        scale_down_events=gev([10, 10, 10], 120),
    ),
    RulesCase(
        "scaleDown with with previous events still allowing more scale down",
        10,
        5,
        1,
        1000,
        5,
        "DesiredWithinRange",
        scale_down_rules=gsr(0, 0, 1000, 120, 300),
        scale_down_events=gev([10, 10, 10], 120),
    ),
    RulesCase(
        "check 'outdated' flag for events for one behavior for up",
        100,
        200,
        1,
        1000,
        200,
        "DesiredWithinRange",
        scale_up_rules=gsr(1000, 60, 0, 0, 0),
        scale_up_events=gev([8, 12, 9, 11], 120),
    ),
    RulesCase(
        "check that events were not marked 'outdated' for two different policies in the "
        "behavior for up",
        100,
        200,
        1,
        1000,
        200,
        "DesiredWithinRange",
        scale_up_rules=gsr(1000, 120, 100, 60, 0),
        scale_up_events=gev([8, 12, 9, 11], 120),
    ),
    RulesCase(
        "check that events were marked 'outdated' for two different policies in the behavior "
        "for up",
        100,
        200,
        1,
        1000,
        200,
        "DesiredWithinRange",
        scale_up_rules=gsr(1000, 30, 100, 60, 0),
        scale_up_events=gev([8, 12, 9, 11], 120),
    ),
    RulesCase(
        "check 'outdated' flag for events for one behavior for down",
        100,
        5,
        1,
        1000,
        5,
        "DesiredWithinRange",
        scale_down_rules=gsr(1000, 60, 0, 0, 300),
        scale_down_events=gev([8, 12, 9, 11], 120),
    ),
    RulesCase(
        "check that events were not marked 'outdated' for two different policies in the "
        "behavior for down",
        100,
        5,
        1,
        1000,
        5,
        "DesiredWithinRange",
        scale_down_rules=gsr(1000, 120, 100, 60, 300),
        scale_down_events=gev([8, 12, 9, 11], 120),
    ),
    RulesCase(
        "check that events were marked 'outdated' for two different policies in the behavior "
        "for down",
        100,
        5,
        1,
        1000,
        5,
        "DesiredWithinRange",
        scale_down_rules=gsr(1000, 30, 100, 60, 300),
        scale_down_events=gev([8, 12, 9, 11], 120),
    ),
]


@pytest.mark.parametrize(
    "case", SCALING_WITH_RULES_CASES, ids=lambda c: f"TestScalingWithRules/{c.name}"
)
def test_scaling_with_rules(case: RulesCase) -> None:
    """TestScalingWithRules (convertDesiredReplicasWithBehaviorRate over defaulted rules)."""
    args = NormalizationArg(
        scale_up_behavior=generate_scale_up_rules(case.scale_up_rules),
        scale_down_behavior=generate_scale_down_rules(case.scale_down_rules),
        min_replicas=case.spec_min_replicas,
        max_replicas=case.spec_max_replicas,
        current_replicas=case.current_replicas,
        desired_replicas=case.prenormalized_desired_replicas,
    )
    limit, _, _ = convert_desired_replicas_with_behavior_rate(
        args,
        scale_up_events=case.scale_up_events,
        scale_down_events=case.scale_down_events,
        now=NOW,
    )
    assert limit.replicas == case.expected_replicas
    assert limit.reason == case.expected_condition


# -------------------------------------------------------------------------- TestStoreScaleEvents


@dataclass(frozen=True)
class StoreCase:
    name: str
    replica_change: int
    prev_scale_events: tuple[TimestampedScaleEvent, ...]
    new_scale_events: tuple[tuple[int, bool], ...]  # (replicaChange, outdated)
    scaling_rules: ScalingRules | None
    expected_replicas_change: int


def ev(change: int, seconds_ago: int) -> TimestampedScaleEvent:
    return TimestampedScaleEvent(change, NOW - timedelta(seconds=seconds_ago))


STORE_CASES = [
    StoreCase("empty entries with default behavior", 5, (), (), None, 0),
    StoreCase(
        "empty entries with two-policy-behavior", 5, (), ((5, False),), gsr(10, 60, 100, 60, 0), 0
    ),
    StoreCase(
        "one outdated entry to be kept untouched without behavior",
        5,
        (ev(7, 61),),
        ((7, False),),
        None,
        0,
    ),
    StoreCase(
        "one outdated entry to be replaced with behavior",
        5,
        (ev(7, 61),),
        ((5, False),),
        gsr(10, 60, 100, 60, 0),
        0,
    ),
    StoreCase(
        "one actual entry to be not touched with behavior",
        5,
        (ev(7, 58),),
        ((7, False), (5, False)),
        gsr(10, 60, 100, 60, 0),
        7,
    ),
    StoreCase(
        "two entries, one of them to be replaced",
        5,
        (ev(7, 61), ev(6, 59)),
        ((5, False), (6, False)),
        gsr(10, 60, 0, 0, 0),
        6,
    ),
    StoreCase(
        "replace one entry, use policies with different periods",
        5,
        (ev(8, 29), ev(6, 59), ev(7, 61), ev(9, 61)),
        ((8, False), (6, False), (7, True), (5, False)),
        gsr(10, 60, 100, 30, 0),
        14,
    ),
    StoreCase(
        "two entries, both actual",
        5,
        (ev(7, 58), ev(6, 59)),
        ((7, False), (6, False), (5, False)),
        gsr(10, 120, 100, 30, 0),
        13,
    ),
]


@pytest.mark.parametrize("case", STORE_CASES, ids=lambda c: f"TestStoreScaleEvents/{c.name}")
def test_store_scale_events(case: StoreCase) -> None:
    """TestStoreScaleEvents: both directions, as upstream runs them."""
    # scale up
    assert get_replicas_change_per_period(60, case.prev_scale_events, now=NOW) == (
        case.expected_replicas_change
    )
    behavior_up = (
        HorizontalPodAutoscalerBehavior(scale_up=case.scaling_rules)
        if case.scaling_rules is not None
        else None
    )
    up, down = store_scale_event(
        behavior_up,
        case.prev_scale_events,
        (),
        prev_replicas=10,
        new_replicas=10 + case.replica_change,
        now=NOW,
    )
    assert tuple((e.replica_change, e.outdated) for e in up) == case.new_scale_events
    assert down == ()
    # scale down
    behavior_down = (
        HorizontalPodAutoscalerBehavior(scale_down=case.scaling_rules)
        if case.scaling_rules is not None
        else None
    )
    up, down = store_scale_event(
        behavior_down,
        (),
        case.prev_scale_events,
        prev_replicas=10,
        new_replicas=10 - case.replica_change,
        now=NOW,
    )
    assert tuple((e.replica_change, e.outdated) for e in down) == case.new_scale_events
    assert up == ()


# ------------------------------------------------------------------------ generate*Rules tables


def test_generate_hpa_scale_up_rules_defaults() -> None:
    """GenerateHPAScaleUpRules(nil): window 0, Max, [Pods 4/15s, Percent 100/15s]."""
    rules = generate_scale_up_rules(None)
    assert rules.stabilization_window_seconds == 0
    assert rules.select_policy == ScalingPolicySelect.MAX
    assert rules.policies == (
        ScalingPolicy(ScalingPolicyType.PODS, 4, 15),
        ScalingPolicy(ScalingPolicyType.PERCENT, 100, 15),
    )


def test_generate_hpa_scale_down_rules_defaults() -> None:
    """GenerateHPAScaleDownRules(nil): window nil (controller flag), Max, [Percent 100/15s]."""
    rules = generate_scale_down_rules(None)
    assert rules.stabilization_window_seconds is None
    assert rules.select_policy == ScalingPolicySelect.MAX
    assert rules.policies == (ScalingPolicy(ScalingPolicyType.PERCENT, 100, 15),)


def test_generate_rules_user_policies_replace_default_list() -> None:
    """copyHPAScalingRules: a user policy list replaces the defaults; unset fields are filled."""
    user = ScalingRules(policies=(ScalingPolicy(ScalingPolicyType.PODS, 1, 60),), tolerance=0.05)
    up = generate_scale_up_rules(user)
    assert up.policies == (ScalingPolicy(ScalingPolicyType.PODS, 1, 60),)
    assert up.select_policy == ScalingPolicySelect.MAX
    assert up.stabilization_window_seconds == 0
    assert up.tolerance == 0.05
    down = generate_scale_down_rules(ScalingRules(select_policy=ScalingPolicySelect.DISABLED))
    assert down.select_policy == ScalingPolicySelect.DISABLED
    assert down.policies == (ScalingPolicy(ScalingPolicyType.PERCENT, 100, 15),)
