"""hpa.core.conditions: setConditionInList semantics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hpa.core.conditions import (
    ConditionStatus,
    HorizontalPodAutoscalerCondition,
    find_condition,
    remove_condition,
    set_condition,
)

THEN = datetime(2026, 1, 1, tzinfo=UTC)
NOW = THEN + timedelta(minutes=5)


def test_a_new_condition_is_appended_with_now() -> None:
    conditions = set_condition(
        (), "AbleToScale", ConditionStatus.TRUE, reason="SucceededGetScale", message="m", now=NOW
    )
    assert conditions == (
        HorizontalPodAutoscalerCondition(
            "AbleToScale", ConditionStatus.TRUE, "SucceededGetScale", "m", NOW
        ),
    )


def test_same_status_keeps_position_and_transition_time_but_updates_reason() -> None:
    before = (
        HorizontalPodAutoscalerCondition("ScalingActive", ConditionStatus.TRUE, "A", "a", THEN),
        HorizontalPodAutoscalerCondition("AbleToScale", ConditionStatus.TRUE, "B", "b", THEN),
    )
    after = set_condition(
        before, "ScalingActive", ConditionStatus.TRUE, reason="C", message="c", now=NOW
    )
    assert after[0] == HorizontalPodAutoscalerCondition(
        "ScalingActive", ConditionStatus.TRUE, "C", "c", THEN
    )
    assert after[1] is before[1]


def test_a_flip_stamps_now() -> None:
    before = (
        HorizontalPodAutoscalerCondition("ScalingLimited", ConditionStatus.FALSE, "A", "a", THEN),
    )
    after = set_condition(
        before,
        "ScalingLimited",
        ConditionStatus.TRUE,
        reason="TooManyReplicas",
        message="",
        now=NOW,
    )
    assert after[0].last_transition_time == NOW
    assert after[0].status == ConditionStatus.TRUE


def test_remove_and_find() -> None:
    conditions = (
        HorizontalPodAutoscalerCondition("AbleToScale", ConditionStatus.TRUE, "A", "", THEN),
        HorizontalPodAutoscalerCondition("ScaledToZero", ConditionStatus.TRUE, "S", "", THEN),
    )
    assert find_condition(conditions, "ScaledToZero") == conditions[1]
    assert remove_condition(conditions, "ScaledToZero") == conditions[:1]
    assert find_condition(conditions[:1], "ScaledToZero") is None
