"""Parity with upstream ``pkg/controller/podautoscaler/horizontal_test.go``.

Every case id is the Go test name (and, for table tests, ``/`` and the Go sub-test name). Times
that the Go tests take from ``time.Now()`` are taken relative to one fixed ``NOW`` here; the
function under test is evaluated at that same ``NOW``. The unit-test constants of
``horizontal_test.go`` apply: tolerance 0.1, CPU initialization period 2 min, initial readiness
delay 10 s, downscale stabilization 5 min and ``scaleUpLimitFactor = 8``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
from hpa.core.conditions import ConditionStatus, Event, HorizontalPodAutoscalerCondition
from hpa.core.decision import (
    CurrentScale,
    Decision,
    ExternalMetricObservation,
    History,
    HorizontalPodAutoscalerStatus,
    MetricFetchError,
    MetricObservation,
    MetricStatus,
    MetricValueStatus,
    ObjectMetricObservation,
    PodMetricsObservation,
    ScaleFetchError,
    SelectorCheck,
    apply_rescale_result,
    decide,
)
from hpa.core.quantity import parse_quantity
from hpa.core.replicas import (
    GO_ZERO_TIME,
    ContainerInfo,
    PodCondition,
    PodInfo,
    PodMetric,
    PodPhase,
)
from hpa.core.spec import (
    ContainerResourceMetricSource,
    CrossVersionObjectReference,
    ExternalMetricSource,
    HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerSpec,
    HorizontalSettings,
    LabelSelector,
    MetricIdentifier,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
    ScalingPolicy,
    ScalingPolicySelect,
    ScalingPolicyType,
    ScalingRules,
    default_behavior,
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


# ============================================================== reconcile-level TestScale* cases
#
# The Go testCase struct, expressed as decide() inputs: the fake clients of prepareTestClient become
# the pods and observations built below (two containers per pod, each with half of the reported
# request and half of the reported CPU level; the metrics client sums containers; an empty list
# from a metrics API is that client's "no metrics returned" error). The feature gate HPAScaleToZero
# is off here, as in the Go test file, whose expectations predate KEP-2021's ScaledToZero
# condition; the KEP-2021 variants live in tests/hpa/core/test_decision.py.


HPA_KEY = "test-namespace/test-hpa"
SELECTOR = "name=test-pod"
TEST_SETTINGS = HorizontalSettings(
    tolerance=0.1,
    cpu_initialization_period_seconds=120,
    initial_readiness_delay_seconds=10,
    downscale_stabilization_seconds=300,
    scale_up_limit_factor=TEST_SCALE_UP_LIMIT_FACTOR,
    scale_up_limit_minimum=TEST_SCALE_UP_LIMIT_MINIMUM,
    scale_to_zero_enabled=False,
)
HOT = "hot"  # hotCPUCreationTime(): now
COOL = "cool"  # coolCPUCreationTime(): now - 3 min

Cond = tuple[str, str, str]  # (type, status, reason), as the Go test compares them
STATUS_OK: tuple[Cond, ...] = (
    ("AbleToScale", "True", "SucceededRescale"),
    ("ScalingActive", "True", "ValidMetricFound"),
    ("ScalingLimited", "False", "DesiredWithinRange"),
)


def status_ok_with_overrides(*overrides: Cond) -> tuple[Cond, ...]:
    """``statusOkWithOverrides``: setConditionInList of each override over statusOk."""
    result = list(STATUS_OK)
    for override in overrides:
        for index, existing in enumerate(result):
            if existing[0] == override[0]:
                result[index] = override
                break
        else:
            result.append(override)
    return tuple(result)


@dataclass(frozen=True)
class HpaCase:
    """``testCase`` of horizontal_test.go (the fields the decision can observe)."""

    name: str
    min_replicas: int
    max_replicas: int
    spec_replicas: int
    status_replicas: int
    expected_desired_replicas: int
    cpu_target: int = 0
    cpu_current: int | None = None
    verify_cpu_current: bool = False
    reported_levels: tuple[int, ...] = ()
    reported_cpu_requests: tuple[str, ...] | None = None
    reported_pod_readiness: tuple[bool, ...] | None = None
    reported_pod_start_time: tuple[str, ...] | None = None
    reported_pod_phase: tuple[PodPhase, ...] | None = None
    reported_pod_deletion_timestamp: tuple[bool, ...] | None = None
    metrics_target: tuple[MetricSpec, ...] = ()
    scale_up_rules: ScalingRules | None = None
    scale_down_rules: ScalingRules | None = None
    expected_conditions: tuple[Cond, ...] | None = None
    recommendations: tuple[TimestampedRecommendation, ...] | None = None
    verify_events: bool = False
    # fake-client overrides used by some tests
    selector: str = SELECTOR
    selector_check: SelectorCheck = field(default_factory=SelectorCheck)
    metrics_error: str | None = None  # every metrics API fails with this
    external_metrics_error: str | None = None
    scale_fetch_error: str | None = None
    scale_update_error: str | None = None
    expect_error: bool = False


def _milli(text: str) -> int:
    return parse_quantity(text).milli_value()


def _pods(case: HpaCase) -> list[PodInfo]:
    specified = case.reported_cpu_requests is not None
    count = len(case.reported_cpu_requests or ()) if specified else case.status_replicas
    pods = []
    for i in range(count):
        ready = True if case.reported_pod_readiness is None else case.reported_pod_readiness[i]
        start = GO_ZERO_TIME
        if case.reported_pod_start_time is not None:
            start = NOW if case.reported_pod_start_time[i] == HOT else NOW - timedelta(minutes=3)
        phase = PodPhase.RUNNING if case.reported_pod_phase is None else case.reported_pod_phase[i]
        deleted = (
            case.reported_pod_deletion_timestamp is not None
            and case.reported_pod_deletion_timestamp[i]
        )
        request = _milli(case.reported_cpu_requests[i]) if case.reported_cpu_requests else 1000
        pods.append(
            PodInfo(
                name=f"test-pod-{i}",
                phase=phase,
                ready_condition=PodCondition(
                    status=ConditionStatus.TRUE if ready else ConditionStatus.FALSE,
                    last_transition_time=start,
                ),
                start_time=start,
                deletion_timestamp=NOW if deleted else None,
                containers=(
                    ContainerInfo("container1", {"cpu": request // 2}),
                    ContainerInfo("container2", {"cpu": request // 2}),
                ),
            )
        )
    return pods


def _observation(case: HpaCase, metric: MetricSpec) -> MetricObservation | None:
    levels = case.reported_levels
    if metric.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE):
        if case.metrics_error is not None:
            return MetricFetchError(case.metrics_error)
        if not levels:
            return MetricFetchError("no metrics returned from resource metrics API")
        per_container = metric.type == MetricSourceType.CONTAINER_RESOURCE
        return PodMetricsObservation(
            {
                f"test-pod-{i}": PodMetric(
                    value_milli=cpu // 2 if per_container else 2 * (cpu // 2),
                    timestamp=NOW,
                    window_seconds=60,
                )
                for i, cpu in enumerate(levels)
            },
            timestamp=NOW,
        )
    if metric.type == MetricSourceType.PODS:
        if case.metrics_error is not None:
            return MetricFetchError(case.metrics_error)
        if not levels:
            return MetricFetchError("no metrics returned from custom metrics API")
        return PodMetricsObservation(
            {
                f"test-pod-{i}": PodMetric(value_milli=level, timestamp=NOW, window_seconds=60)
                for i, level in enumerate(levels)
            },
            timestamp=NOW,
        )
    if metric.type == MetricSourceType.OBJECT:
        if case.metrics_error is not None:
            return MetricFetchError(case.metrics_error)
        return ObjectMetricObservation(levels[0], timestamp=NOW)
    if metric.type == MetricSourceType.EXTERNAL:
        error = case.external_metrics_error or case.metrics_error
        if error is not None:
            return MetricFetchError(error)
        if not levels:
            return MetricFetchError("no metrics returned from external metrics API")
        return ExternalMetricObservation(tuple(levels), timestamp=NOW)
    return None


def _spec(case: HpaCase) -> HorizontalPodAutoscalerSpec:
    metrics: list[MetricSpec] = []
    if case.cpu_target > 0:
        metrics.append(cpu_utilization(case.cpu_target))
    metrics.extend(case.metrics_target)
    if not metrics:
        # "manually add in the defaulting logic": a cpu Resource metric without a target
        metrics.append(
            MetricSpec.for_resource(
                ResourceMetricSource("cpu", MetricTarget(MetricTargetType.UTILIZATION))
            )
        )
    behavior = None
    if case.scale_up_rules is not None or case.scale_down_rules is not None:
        behavior = default_behavior(
            HorizontalPodAutoscalerBehavior(case.scale_up_rules, case.scale_down_rules)
        )
    return HorizontalPodAutoscalerSpec(
        scale_target_ref=CrossVersionObjectReference("ReplicationController", "test-rc", "v1"),
        min_replicas=case.min_replicas,
        max_replicas=case.max_replicas,
        metrics=tuple(metrics),
        behavior=behavior,
    )


def run_case(case: HpaCase) -> Decision:
    """One reconcile: decide, then the scale update the fake scale client answers."""
    spec = _spec(case)
    current: CurrentScale | ScaleFetchError
    if case.scale_fetch_error is not None:
        current = ScaleFetchError(case.scale_fetch_error)
    else:
        current = CurrentScale(case.spec_replicas, case.status_replicas, case.selector)
    decision = decide(
        spec,
        current=current,
        observations=[_observation(case, metric) for metric in spec.metrics],
        pods=_pods(case),
        history=History(recommendations=case.recommendations),
        previous_status=HorizontalPodAutoscalerStatus(
            current_replicas=case.spec_replicas, desired_replicas=case.spec_replicas
        ),
        now=NOW,
        settings=TEST_SETTINGS,
        selector_check=case.selector_check,
        namespace="test-namespace",
    )
    if decision.rescale:
        decision = apply_rescale_result(
            decision,
            succeeded=case.scale_update_error is None,
            error=case.scale_update_error,
            now=NOW,
        )
    return decision


def cpu_utilization(target: int, *, container: str | None = None) -> MetricSpec:
    metric_target = MetricTarget(MetricTargetType.UTILIZATION, average_utilization=target)
    if container is not None:
        return MetricSpec.for_container_resource(
            ContainerResourceMetricSource("cpu", container, metric_target)
        )
    return MetricSpec.for_resource(ResourceMetricSource("cpu", metric_target))


def qps_pods(average: str) -> MetricSpec:
    return MetricSpec.for_pods(
        PodsMetricSource(
            MetricIdentifier("qps"),
            MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=_milli(average)),
        )
    )


DEPLOYMENT = CrossVersionObjectReference("Deployment", "some-deployment", "apps/v1")


def qps_object(
    *, value: str | None = None, average: str | None = None, selector: LabelSelector | None = None
) -> MetricSpec:
    if value is not None:
        target = MetricTarget(MetricTargetType.VALUE, value_milli=_milli(value))
    else:
        assert average is not None
        target = MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=_milli(average))
    return MetricSpec.for_object(
        ObjectMetricSource(DEPLOYMENT, MetricIdentifier("qps", selector), target)
    )


def qps_external(*, value_milli: int | None = None, average_milli: int | None = None) -> MetricSpec:
    if value_milli is not None:
        target = MetricTarget(MetricTargetType.VALUE, value_milli=value_milli)
    else:
        target = MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value_milli=average_milli)
    return MetricSpec.for_external(
        ExternalMetricSource(MetricIdentifier("qps", LabelSelector()), target)
    )


CHEDDAR = MetricSpec(type="CheddarCheese")
ONE = "1.0"
ABLE_READY = ("AbleToScale", "True", "ReadyForNewScale")
EMPTY_RECS: tuple[TimestampedRecommendation, ...] = ()


SCALE_CASES = [
    HpaCase(
        "TestScaleUp",
        2,
        6,
        3,
        3,
        5,
        cpu_target=30,
        verify_cpu_current=True,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
    ),
    HpaCase(
        "TestScaleUpContainer",
        2,
        6,
        3,
        3,
        5,
        metrics_target=(cpu_utilization(30, container="container1"),),
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
    ),
    HpaCase(
        "TestScaleUpUnreadyLessScale",
        2,
        6,
        3,
        3,
        4,
        cpu_target=30,
        cpu_current=60,
        verify_cpu_current=True,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        reported_pod_readiness=(False, True, True),
    ),
    HpaCase(
        "TestScaleUpHotCpuLessScale",
        2,
        6,
        3,
        3,
        4,
        cpu_target=30,
        cpu_current=60,
        verify_cpu_current=True,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        reported_pod_start_time=(HOT, COOL, COOL),
    ),
    HpaCase(
        "TestScaleUpUnreadyNoScale",
        2,
        6,
        3,
        3,
        3,
        cpu_target=30,
        cpu_current=40,
        verify_cpu_current=True,
        reported_levels=(400, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        reported_pod_readiness=(True, False, False),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestScaleUpHotCpuNoScale",
        2,
        6,
        3,
        3,
        3,
        cpu_target=30,
        cpu_current=40,
        verify_cpu_current=True,
        reported_levels=(400, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        reported_pod_readiness=(True, False, False),
        reported_pod_start_time=(COOL, HOT, HOT),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestScaleUpIgnoresFailedPods",
        2,
        6,
        2,
        2,
        4,
        cpu_target=30,
        cpu_current=60,
        verify_cpu_current=True,
        reported_levels=(500, 700),
        reported_cpu_requests=(ONE,) * 4,
        reported_pod_readiness=(True, True, False, False),
        reported_pod_phase=(PodPhase.RUNNING, PodPhase.RUNNING, PodPhase.FAILED, PodPhase.FAILED),
    ),
    HpaCase(
        "TestScaleUpIgnoresDeletionPods",
        2,
        6,
        2,
        2,
        4,
        cpu_target=30,
        cpu_current=60,
        verify_cpu_current=True,
        reported_levels=(500, 700),
        reported_cpu_requests=(ONE,) * 4,
        reported_pod_readiness=(True, True, False, False),
        reported_pod_phase=(PodPhase.RUNNING,) * 4,
        reported_pod_deletion_timestamp=(False, False, True, True),
    ),
    HpaCase(
        "TestScaleUpDeployment",
        2,
        6,
        3,
        3,
        5,
        cpu_target=30,
        verify_cpu_current=True,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
    ),
    HpaCase(
        "TestScaleUpReplicaSet",
        2,
        6,
        3,
        3,
        5,
        cpu_target=30,
        verify_cpu_current=True,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
    ),
    HpaCase(
        "TestScaleUpCM",
        2,
        6,
        3,
        3,
        4,
        metrics_target=(qps_pods("15.0"),),
        reported_levels=(20000, 10000, 30000),
        reported_cpu_requests=(ONE,) * 3,
    ),
    HpaCase(
        "TestScaleUpCMUnreadyAndHotCpuNoLessScale",
        2,
        6,
        3,
        3,
        6,
        metrics_target=(qps_pods("15.0"),),
        reported_levels=(50000, 10000, 30000),
        reported_pod_readiness=(True, True, False),
        reported_pod_start_time=(COOL, COOL, HOT),
        reported_cpu_requests=(ONE,) * 3,
    ),
    HpaCase(
        "TestScaleUpCMUnreadyandCpuHot",
        2,
        6,
        3,
        3,
        6,
        metrics_target=(qps_pods("15.0"),),
        reported_levels=(50000, 15000, 30000),
        reported_pod_readiness=(False, True, False),
        reported_pod_start_time=(HOT, COOL, HOT),
        reported_cpu_requests=(ONE,) * 3,
        expected_conditions=status_ok_with_overrides(
            ("AbleToScale", "True", "SucceededRescale"),
            ("ScalingLimited", "True", "TooManyReplicas"),
        ),
    ),
    HpaCase(
        "TestScaleUpHotCpuNoScaleWouldScaleDown",
        2,
        6,
        3,
        3,
        6,
        metrics_target=(qps_pods("15.0"),),
        reported_levels=(50000, 15000, 30000),
        reported_cpu_requests=(ONE,) * 3,
        reported_pod_start_time=(HOT, COOL, HOT),
        expected_conditions=status_ok_with_overrides(
            ("AbleToScale", "True", "SucceededRescale"),
            ("ScalingLimited", "True", "TooManyReplicas"),
        ),
    ),
    HpaCase(
        "TestScaleUpCMObject",
        2,
        6,
        3,
        3,
        4,
        metrics_target=(qps_object(value="15.0"),),
        reported_levels=(20000,),
    ),
    HpaCase(
        "TestScaleUpFromZeroCMObject",
        0,
        6,
        0,
        0,
        2,
        metrics_target=(qps_object(value="15.0"),),
        reported_levels=(20000,),
    ),
    HpaCase(
        "TestScaleUpFromZeroIgnoresToleranceCMObject",
        0,
        6,
        0,
        0,
        1,
        metrics_target=(qps_object(value="1.0"),),
        reported_levels=(1000,),
    ),
    HpaCase(
        "TestScaleUpPerPodCMObject",
        2,
        6,
        3,
        3,
        4,
        metrics_target=(qps_object(average="10.0"),),
        reported_levels=(40000,),
    ),
    HpaCase(
        "TestScaleUpCMExternal",
        2,
        6,
        3,
        3,
        4,
        metrics_target=(qps_external(value_milli=6666),),
        reported_levels=(8600,),
    ),
    HpaCase(
        "TestScaleUpPerPodCMExternal",
        2,
        6,
        3,
        3,
        4,
        metrics_target=(qps_external(average_milli=2222),),
        reported_levels=(8600,),
    ),
    HpaCase(
        "TestScaleDown",
        2,
        6,
        5,
        5,
        3,
        cpu_target=50,
        verify_cpu_current=True,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownContainerResource",
        2,
        6,
        5,
        5,
        3,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        metrics_target=(cpu_utilization(50, container="container2"),),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownWithScalingRules",
        2,
        6,
        5,
        5,
        3,
        scale_up_rules=gsr(0, 0, 100, 15, 30),
        cpu_target=50,
        verify_cpu_current=True,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleUpOneMetricInvalid",
        2,
        6,
        3,
        3,
        4,
        cpu_target=30,
        verify_cpu_current=True,
        metrics_target=(CHEDDAR,),
        reported_levels=(300, 400, 500),
        reported_cpu_requests=(ONE,) * 3,
        expect_error=True,
    ),
    HpaCase(
        "TestScaleUpFromZeroOneMetricInvalid",
        0,
        6,
        0,
        0,
        4,
        cpu_target=30,
        verify_cpu_current=True,
        metrics_target=(CHEDDAR,),
        reported_levels=(300, 400, 500),
        reported_cpu_requests=(ONE,) * 3,
        recommendations=EMPTY_RECS,
        expect_error=True,
    ),
    HpaCase(
        "TestScaleUpBothMetricsEmpty",
        2,
        6,
        3,
        3,
        3,
        metrics_target=(CHEDDAR,),
        reported_levels=(),
        reported_cpu_requests=(ONE,) * 3,
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "InvalidMetricSourceType"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestScaleDownStabilizeInitialSize",
        2,
        6,
        5,
        5,
        5,
        cpu_target=50,
        verify_cpu_current=True,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=None,
        expected_conditions=status_ok_with_overrides(
            ABLE_READY, ("AbleToScale", "True", "ScaleDownStabilized")
        ),
    ),
    HpaCase(
        "TestScaleDownCM",
        2,
        6,
        5,
        5,
        3,
        metrics_target=(qps_pods("20.0"),),
        reported_levels=(12000,) * 5,
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownCMObject",
        2,
        6,
        5,
        5,
        3,
        metrics_target=(qps_object(value="20.0"),),
        reported_levels=(12000,),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownToZeroCMObject",
        0,
        6,
        5,
        5,
        0,
        metrics_target=(qps_object(value="20.0"),),
        reported_levels=(0,),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownPerPodCMObject",
        2,
        6,
        5,
        5,
        3,
        metrics_target=(qps_object(average="20.0"),),
        reported_levels=(60000,),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownCMExternal",
        2,
        6,
        5,
        5,
        3,
        metrics_target=(qps_external(value_milli=14400),),
        reported_levels=(8600,),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownToZeroCMExternal",
        0,
        6,
        5,
        5,
        0,
        metrics_target=(qps_external(value_milli=14400),),
        reported_levels=(0,),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownPerPodCMExternal",
        2,
        6,
        5,
        5,
        3,
        metrics_target=(qps_external(average_milli=3000),),
        reported_levels=(8600,),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownIncludeUnreadyPods",
        2,
        6,
        5,
        5,
        2,
        cpu_target=50,
        cpu_current=30,
        verify_cpu_current=True,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        reported_pod_readiness=(True, True, True, False, False),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownIgnoreHotCpuPods",
        2,
        6,
        5,
        5,
        2,
        cpu_target=50,
        cpu_current=30,
        verify_cpu_current=True,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        reported_pod_start_time=(COOL, COOL, COOL, HOT, HOT),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownIgnoresFailedPods",
        2,
        6,
        5,
        5,
        3,
        cpu_target=50,
        cpu_current=28,
        verify_cpu_current=True,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 7,
        reported_pod_readiness=(True,) * 5 + (False, False),
        reported_pod_phase=(PodPhase.RUNNING,) * 5 + (PodPhase.FAILED, PodPhase.FAILED),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestScaleDownIgnoresDeletionPods",
        2,
        6,
        5,
        5,
        3,
        cpu_target=50,
        cpu_current=28,
        verify_cpu_current=True,
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 7,
        reported_pod_readiness=(True,) * 5 + (False, False),
        reported_pod_phase=(PodPhase.RUNNING,) * 7,
        reported_pod_deletion_timestamp=(False,) * 5 + (True, True),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestTolerance",
        1,
        5,
        3,
        3,
        3,
        cpu_target=100,
        reported_levels=(1010, 1030, 1020),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestToleranceCM",
        1,
        5,
        3,
        3,
        3,
        metrics_target=(qps_pods("20.0"),),
        reported_levels=(20000, 20001, 21000),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestToleranceCMObject",
        1,
        5,
        3,
        3,
        3,
        metrics_target=(qps_object(value="20.0"),),
        reported_levels=(20050,),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestToleranceCMExternal",
        2,
        6,
        4,
        4,
        4,
        metrics_target=(qps_external(value_milli=8666),),
        reported_levels=(8600,),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestTolerancePerPodCMObject",
        2,
        6,
        4,
        4,
        4,
        metrics_target=(qps_object(average="2200m", selector=LabelSelector()),),
        reported_levels=(8600,),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestTolerancePerPodCMExternal",
        2,
        6,
        4,
        4,
        4,
        metrics_target=(qps_external(average_milli=2200),),
        reported_levels=(8600,),
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestMinReplicas",
        2,
        5,
        3,
        3,
        2,
        cpu_target=90,
        reported_levels=(10, 95, 10),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        recommendations=EMPTY_RECS,
        expected_conditions=status_ok_with_overrides(("ScalingLimited", "True", "TooFewReplicas")),
    ),
    HpaCase(
        "TestZeroMinReplicasDesiredZero",
        0,
        5,
        3,
        3,
        0,
        cpu_target=90,
        reported_levels=(0, 0, 0),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        recommendations=EMPTY_RECS,
        expected_conditions=status_ok_with_overrides(
            ("ScalingLimited", "False", "DesiredWithinRange")
        ),
    ),
    HpaCase(
        "TestMinReplicasDesiredZero",
        2,
        5,
        3,
        3,
        2,
        cpu_target=90,
        reported_levels=(0, 0, 0),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        recommendations=EMPTY_RECS,
        expected_conditions=status_ok_with_overrides(("ScalingLimited", "True", "TooFewReplicas")),
    ),
    HpaCase(
        "TestZeroReplicas",
        3,
        5,
        0,
        0,
        0,
        cpu_target=90,
        reported_levels=(),
        reported_cpu_requests=(),
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "ScalingDisabled"),
        ),
    ),
    HpaCase(
        "TestTooFewReplicas",
        3,
        5,
        2,
        2,
        3,
        cpu_target=90,
        reported_levels=(),
        reported_cpu_requests=(),
        expected_conditions=(("AbleToScale", "True", "SucceededRescale"),),
    ),
    HpaCase(
        "TestTooManyReplicas",
        3,
        5,
        10,
        10,
        5,
        cpu_target=90,
        reported_levels=(),
        reported_cpu_requests=(),
        expected_conditions=(("AbleToScale", "True", "SucceededRescale"),),
    ),
    HpaCase(
        "TestMaxReplicas",
        2,
        5,
        3,
        3,
        5,
        cpu_target=90,
        reported_levels=(8000, 9500, 1000),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        expected_conditions=status_ok_with_overrides(("ScalingLimited", "True", "TooManyReplicas")),
    ),
    HpaCase(
        "TestSuperfluousMetrics",
        2,
        6,
        4,
        4,
        6,
        cpu_target=100,
        reported_levels=(4000, 9500, 3000, 7000, 3200, 2000),
        reported_cpu_requests=(ONE,) * 4,
        expected_conditions=status_ok_with_overrides(("ScalingLimited", "True", "TooManyReplicas")),
    ),
    HpaCase(
        "TestMissingMetrics",
        2,
        6,
        4,
        4,
        3,
        cpu_target=100,
        reported_levels=(400, 95),
        reported_cpu_requests=(ONE,) * 4,
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestEmptyMetrics",
        2,
        6,
        4,
        4,
        4,
        cpu_target=100,
        reported_levels=(),
        reported_cpu_requests=(ONE,) * 4,
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "FailedGetResourceMetric"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestEmptyCPURequest",
        1,
        5,
        1,
        1,
        1,
        cpu_target=100,
        reported_levels=(200,),
        reported_cpu_requests=(),
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "FailedGetResourceMetric"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestEventCreated",
        1,
        5,
        1,
        1,
        2,
        cpu_target=50,
        reported_levels=(200,),
        reported_cpu_requests=("0.2",),
        verify_events=True,
    ),
    HpaCase(
        "TestEventNotCreated",
        1,
        5,
        2,
        2,
        2,
        cpu_target=50,
        reported_levels=(200, 200),
        reported_cpu_requests=("0.4", "0.4"),
        verify_events=True,
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestMissingReports",
        1,
        5,
        4,
        4,
        2,
        cpu_target=50,
        reported_levels=(200,),
        reported_cpu_requests=("0.2",),
        recommendations=EMPTY_RECS,
    ),
    HpaCase(
        "TestUpscaleCap",
        1,
        100,
        3,
        3,
        24,
        scale_up_rules=gsr(0, 0, 700, 60, 0),
        cpu_target=10,
        reported_levels=(100, 200, 300),
        reported_cpu_requests=("0.1",) * 3,
        expected_conditions=status_ok_with_overrides(("ScalingLimited", "True", "ScaleUpLimit")),
    ),
    HpaCase(
        "TestUpscaleCapGreaterThanMaxReplicas",
        1,
        20,
        3,
        3,
        20,
        scale_up_rules=gsr(0, 0, 700, 60, 0),
        cpu_target=10,
        reported_levels=(100, 200, 300),
        reported_cpu_requests=("0.1",) * 3,
        expected_conditions=status_ok_with_overrides(("ScalingLimited", "True", "TooManyReplicas")),
    ),
    HpaCase(
        "TestMoreReplicasThanSpecNoScale",
        1,
        8,
        4,
        5,
        4,
        cpu_target=50,
        reported_levels=(500,) * 5,
        reported_cpu_requests=("1",) * 5,
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    ),
    HpaCase(
        "TestConditionInvalidSelectorMissing",
        1,
        100,
        3,
        3,
        3,
        cpu_target=10,
        reported_levels=(100, 200, 300),
        reported_cpu_requests=("0.1",) * 3,
        selector="",
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "InvalidSelector"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestConditionInvalidSelectorUnparsable",
        1,
        100,
        3,
        3,
        3,
        cpu_target=10,
        reported_levels=(100, 200, 300),
        reported_cpu_requests=("0.1",) * 3,
        selector="cheddar cheese",
        selector_check=SelectorCheck(
            parse_error="unable to parse requirement: found 'cheese', expected: ',' or "
            "'end of string'"
        ),
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "InvalidSelector"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestConditionNoAmbiguousSelectorWhenNoSelectorOverlapBetweenHPAs",
        2,
        6,
        3,
        3,
        5,
        cpu_target=30,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        selector_check=SelectorCheck(selecting_hpas=(HPA_KEY,)),
    ),
    HpaCase(
        "TestConditionAmbiguousSelectorWhenFullSelectorOverlapBetweenHPAs",
        2,
        6,
        3,
        3,
        3,
        cpu_target=30,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        selector_check=SelectorCheck(selecting_hpas=(HPA_KEY, "test-namespace/test-hpa-2")),
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "AmbiguousSelector"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestConditionAmbiguousSelectorWhenPartialSelectorOverlapBetweenHPAs",
        2,
        6,
        3,
        3,
        3,
        cpu_target=30,
        reported_levels=(300, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        selector_check=SelectorCheck(selecting_hpas=(HPA_KEY, "test-namespace/test-hpa-2")),
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "AmbiguousSelector"),
        ),
        expect_error=True,
    ),
    *[
        HpaCase(
            f"TestConditionFailedGetMetrics/{reason}",
            1,
            100,
            3,
            3,
            3,
            cpu_target=10 if specs == () else 0,
            metrics_target=specs,
            reported_levels=(100, 200, 300),
            reported_cpu_requests=("0.1",) * 3,
            metrics_error="something went wrong",
            expected_conditions=(
                ("AbleToScale", "True", "SucceededGetScale"),
                ("ScalingActive", "False", reason),
            ),
            expect_error=True,
        )
        for reason, specs in (
            ("FailedGetResourceMetric", ()),
            ("FailedGetPodsMetric", (qps_pods("15.0"),)),
            ("FailedGetObjectMetric", (qps_object(value="15.0"),)),
            ("FailedGetExternalMetric", (qps_external(value_milli=300),)),
        )
    ],
    HpaCase(
        "TestConditionInvalidSourceType",
        2,
        6,
        3,
        3,
        3,
        metrics_target=(CHEDDAR,),
        reported_levels=(20000,),
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "InvalidMetricSourceType"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestConditionFailedGetScale",
        1,
        100,
        3,
        3,
        3,
        cpu_target=10,
        reported_levels=(100, 200, 300),
        reported_cpu_requests=("0.1",) * 3,
        scale_fetch_error="something went wrong",
        expected_conditions=(("AbleToScale", "False", "FailedGetScale"),),
        expect_error=True,
    ),
    HpaCase(
        "TestConditionFailedUpdateScale",
        1,
        5,
        3,
        3,
        3,
        cpu_target=100,
        reported_levels=(150, 150, 150),
        reported_cpu_requests=("0.1",) * 3,
        scale_update_error="something went wrong",
        expected_conditions=status_ok_with_overrides(("AbleToScale", "False", "FailedUpdateScale")),
        expect_error=True,
    ),
    HpaCase(
        "TestNoBackoffUpscaleCM",
        1,
        5,
        3,
        3,
        4,
        metrics_target=(qps_pods("15.0"),),
        reported_levels=(20000, 10000, 30000),
        reported_cpu_requests=(ONE,) * 3,
        expected_conditions=status_ok_with_overrides(
            ABLE_READY,
            ("AbleToScale", "True", "SucceededRescale"),
            ("ScalingLimited", "False", "DesiredWithinRange"),
        ),
    ),
    HpaCase(
        "TestNoBackoffUpscaleCMNoBackoffCpu",
        1,
        5,
        3,
        3,
        5,
        cpu_target=10,
        metrics_target=(qps_pods("15.0"),),
        reported_levels=(20000, 10000, 30000),
        reported_cpu_requests=(ONE,) * 3,
        expected_conditions=status_ok_with_overrides(
            ABLE_READY,
            ("AbleToScale", "True", "SucceededRescale"),
            ("ScalingLimited", "True", "TooManyReplicas"),
        ),
    ),
    HpaCase(
        "TestStabilizeDownscale",
        1,
        5,
        4,
        4,
        4,
        cpu_target=100,
        reported_levels=(50, 50, 50),
        reported_cpu_requests=("0.1",) * 3,
        recommendations=(rec(10, ago(minutes=10)), rec(4, ago(minutes=1))),
        expected_conditions=status_ok_with_overrides(
            ABLE_READY, ("AbleToScale", "True", "ScaleDownStabilized")
        ),
    ),
    HpaCase(
        "TestScaleUpRCImmediately",
        2,
        6,
        1,
        1,
        2,
        reported_levels=(0, 0, 0, 0),
        reported_cpu_requests=(ONE,) * 4,
        expected_conditions=(("AbleToScale", "True", "SucceededRescale"),),
    ),
    HpaCase(
        "TestScaleDownRCImmediately",
        2,
        5,
        6,
        6,
        5,
        cpu_target=50,
        reported_levels=(8000, 9500, 1000),
        reported_cpu_requests=("0.9", "1.0", "1.1"),
        expected_conditions=(("AbleToScale", "True", "SucceededRescale"),),
    ),
    HpaCase(
        "TestScaleUpOneMetricEmpty",
        2,
        6,
        3,
        3,
        4,
        cpu_target=30,
        verify_cpu_current=True,
        metrics_target=(qps_external(value_milli=100),),
        reported_levels=(300, 400, 500),
        reported_cpu_requests=(ONE,) * 3,
        external_metrics_error="something went wrong",
        expect_error=True,
    ),
    HpaCase(
        "TestNoScaleDownOneMetricInvalid",
        2,
        6,
        5,
        5,
        5,
        cpu_target=50,
        metrics_target=(CHEDDAR,),
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "InvalidMetricSourceType"),
        ),
        expect_error=True,
    ),
    HpaCase(
        "TestNoScaleDownOneMetricEmpty",
        2,
        6,
        5,
        5,
        5,
        cpu_target=50,
        metrics_target=(qps_external(value_milli=1000),),
        reported_levels=(100, 300, 500, 250, 250),
        reported_cpu_requests=(ONE,) * 5,
        recommendations=EMPTY_RECS,
        external_metrics_error="something went wrong",
        expected_conditions=(
            ("AbleToScale", "True", "SucceededGetScale"),
            ("ScalingActive", "False", "FailedGetExternalMetric"),
        ),
        expect_error=True,
    ),
]


def _computed_tolerance_cases() -> list[HpaCase]:
    """TestComputedToleranceAlgImplementation: tc1 just breaches the tolerance, tc2 does not."""
    start_pods = 10
    total_used = start_pods * 150
    total_requested = 2 * total_used
    requested_to_used = float(total_requested // total_used)
    per_pod_requested = total_requested // start_pods
    requests = tuple(
        f"{per_pod_requested + delta}m" for delta in (100, -100, 10, -10, 2, -2, 1, -1, 0, 0)
    )
    levels = (total_used // 10,) * 10
    target = abs(1 / (requested_to_used * (1 - 0.1))) + 0.01
    final_cpu_percent_target = int(target * 100)
    resources_used_ratio = float(total_used) / (float(total_requested) * target)
    final_pods = math.ceil(resources_used_ratio * float(start_pods))
    tc1 = HpaCase(
        "TestComputedToleranceAlgImplementation/tc1",
        0,
        1000,
        start_pods,
        start_pods,
        final_pods,
        cpu_target=final_cpu_percent_target,
        reported_levels=levels,
        reported_cpu_requests=requests,
        recommendations=EMPTY_RECS,
    )
    target = abs(1 / (requested_to_used * (1 - 0.1))) + 0.004
    tc2 = HpaCase(
        "TestComputedToleranceAlgImplementation/tc2",
        0,
        1000,
        start_pods,
        start_pods,
        start_pods,
        cpu_target=int(target * 100),
        reported_levels=levels,
        reported_cpu_requests=requests,
        recommendations=EMPTY_RECS,
        expected_conditions=status_ok_with_overrides(ABLE_READY),
    )
    return [tc1, tc2]


ALL_SCALE_CASES = SCALE_CASES + _computed_tolerance_cases()


@pytest.mark.parametrize("case", ALL_SCALE_CASES, ids=lambda c: c.name)
def test_reconcile(case: HpaCase) -> None:
    """The reconcile-level TestScale*/TestCondition*/... cases of horizontal_test.go."""
    decision = run_case(case)
    assert decision.status.desired_replicas == case.expected_desired_replicas
    scaled = case.spec_replicas != case.expected_desired_replicas
    if case.scale_update_error is None:
        # "the scale should only be updated if we expected a change in replicas"
        assert decision.rescale == scaled
    else:
        assert decision.rescale
        assert decision.rescale_succeeded is False
    expected = case.expected_conditions if case.expected_conditions is not None else STATUS_OK
    actual = tuple((c.type, str(c.status), c.reason) for c in decision.status.conditions)
    assert actual == expected
    if case.verify_cpu_current:
        cpu_current = case.cpu_current
        if cpu_current is None:
            levels = sum(case.reported_levels)
            requested = sum(_milli(r) for r in case.reported_cpu_requests or ())
            cpu_current = 100 * levels // requested
        utilization = next(
            m.current.average_utilization
            for m in decision.status.current_metrics or ()
            if m.type == "Resource" and m.name == "cpu"
        )
        assert utilization == cpu_current
    assert (decision.error is not None) == case.expect_error
    if case.verify_events:
        rescale_events = [e for e in decision.events if e.reason == "SuccessfulRescale"]
        if scaled:
            assert rescale_events == [
                Event(
                    "Normal",
                    "SuccessfulRescale",
                    f"New size: {case.expected_desired_replicas}; reason: cpu resource "
                    "utilization (percentage of request) above target",
                )
            ]
        else:
            assert decision.events == ()


def test_avoid_unnecessary_updates() -> None:
    """TestAvoidUnnecessaryUpdates: an unchanged reconcile yields the stored status unchanged."""
    last_scale_time = NOW - timedelta(hours=1)
    case = HpaCase(
        "TestAvoidUnnecessaryUpdates",
        2,
        6,
        2,
        2,
        2,
        cpu_target=80,
        cpu_current=40,
        reported_levels=(400, 500, 700),
        reported_cpu_requests=(ONE,) * 3,
        reported_pod_start_time=(COOL, HOT, HOT),
        recommendations=EMPTY_RECS,
    )
    previous = HorizontalPodAutoscalerStatus(
        current_replicas=2,
        desired_replicas=2,
        last_scale_time=last_scale_time,
        current_metrics=(
            MetricStatus(
                type="Resource",
                name="cpu",
                current=MetricValueStatus(average_value_milli=400, average_utilization=40),
            ),
        ),
        conditions=(
            HorizontalPodAutoscalerCondition(
                "AbleToScale",
                ConditionStatus.TRUE,
                "ReadyForNewScale",
                "recommended size matches current size",
                last_scale_time,
            ),
            HorizontalPodAutoscalerCondition(
                "ScalingActive",
                ConditionStatus.TRUE,
                "ValidMetricFound",
                "the HPA was able to successfully calculate a replica count from cpu resource "
                "utilization (percentage of request)",
                last_scale_time,
            ),
            HorizontalPodAutoscalerCondition(
                "ScalingLimited",
                ConditionStatus.TRUE,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
                last_scale_time,
            ),
        ),
    )
    spec = _spec(case)
    decision = decide(
        spec,
        current=CurrentScale(2, 2, SELECTOR),
        observations=[_observation(case, m) for m in spec.metrics],
        pods=_pods(case),
        history=History(recommendations=EMPTY_RECS),
        previous_status=previous,
        now=NOW,
        settings=TEST_SETTINGS,
        namespace="test-namespace",
    )
    assert not decision.rescale
    assert decision.status == previous  # updateStatusIfNeeded writes nothing


# ====================================== test/integration/podautoscaler: TestHPAWithTolerance


def test_hpa_with_tolerance() -> None:
    """TestHPAWithTolerance (integration): 5 % up / 50 % down tolerances, 100 per pod.

    An External metric with an AverageValue target of 100, 35 replicas, metric 3500. The
    integration test waits for the Deployment; here the reconcile loop runs every 15 s with the
    controller defaults (HPAConfigurableTolerance on) and ``status.replicas`` follows the scale.
    """
    hpa = HorizontalPodAutoscalerSpec(
        scale_target_ref=CrossVersionObjectReference("Deployment", "test", "apps/v1"),
        min_replicas=1,
        max_replicas=1000,
        metrics=(
            MetricSpec.for_external(
                ExternalMetricSource(
                    MetricIdentifier("external-metric"),
                    MetricTarget(MetricTargetType.VALUE, average_value_milli=_milli("100")),
                )
            ),
        ),
        behavior=HorizontalPodAutoscalerBehavior(
            scale_up=ScalingRules(tolerance=0.05), scale_down=ScalingRules(tolerance=0.5)
        ),
    )
    settings = HorizontalSettings()
    replicas = 35
    history = History()
    status = HorizontalPodAutoscalerStatus(current_replicas=35, desired_replicas=35)
    clock = [NOW]

    def reconcile(metric: str) -> int:
        nonlocal replicas, history, status
        clock[0] += timedelta(seconds=15)
        decision = decide(
            hpa,
            current=CurrentScale(replicas, replicas, "app=test"),
            observations=[ExternalMetricObservation((_milli(metric),), timestamp=clock[0])],
            pods=[],
            history=history,
            previous_status=status,
            now=clock[0],
            settings=settings,
        )
        if decision.rescale:
            decision = apply_rescale_result(decision, succeeded=True, now=clock[0])
            replicas = decision.desired_replicas
        history, status = decision.history, decision.status
        return replicas

    # scale_up: 3700 is 6 % above 35 x 100
    assert max(reconcile("3700") for _ in range(5)) == 37
    # scale_up_in_tolerance: 3800 is 3 % above 37 x 100
    assert max(reconcile("3800") for _ in range(40)) == 37
    # scale_down: 1000 is 74 % below; it happens once the 5 min window has passed
    assert min(reconcile("1000") for _ in range(40)) == 10
    # scale_down_in_tolerance: 800 is 20 % below 10 x 100
    assert min(reconcile("800") for _ in range(40)) == 10
