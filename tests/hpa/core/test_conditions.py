"""hpa.core.conditions: setConditionInList semantics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from hpa.core.conditions import (
    ConditionStatus,
    ConditionUpdates,
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


# --------------------------------------------------------------- ConditionUpdates vs set_condition

_TYPES = ("AbleToScale", "ScalingActive", "ScalingLimited", "ScaledToZero")
_STATUSES = tuple(ConditionStatus)
_conditions = st.builds(
    HorizontalPodAutoscalerCondition,
    type=st.sampled_from(_TYPES),
    status=st.sampled_from(_STATUSES),
    reason=st.sampled_from(("A", "B")),
    message=st.sampled_from(("a", "b")),
    last_transition_time=st.sampled_from((None, THEN)),
)
_sets = st.tuples(
    st.sampled_from(_TYPES),
    st.sampled_from(_STATUSES),
    st.sampled_from(("A", "B")),
    st.sampled_from(("a", "b")),
)


@given(
    previous=st.lists(_conditions, max_size=5).map(tuple),
    sets=st.lists(_sets, max_size=6),
)
def test_updates_applied_at_once_equal_the_sets_applied_in_order(
    previous: tuple[HorizontalPodAutoscalerCondition, ...],
    sets: list[tuple[str, ConditionStatus, str, str]],
) -> None:
    """Same conditions, order and transition times as upstream's setConditionInList in sequence
    (duplicated types in the previous list included); the previous tuple itself when unchanged."""
    expected = previous
    updates = ConditionUpdates(previous, NOW)
    for condition_type, status, reason, message in sets:
        expected = set_condition(
            expected, condition_type, status, reason=reason, message=message, now=NOW
        )
        updates.set(condition_type, status, reason, message)
    result = updates.result()
    assert result == expected
    if expected == previous:
        assert result is previous


def test_set_twice_through_a_flip_stamps_now_even_when_the_last_set_restores_the_status() -> None:
    before = (
        HorizontalPodAutoscalerCondition("AbleToScale", ConditionStatus.FALSE, "A", "a", THEN),
    )
    updates = ConditionUpdates(before, NOW)
    updates.set("AbleToScale", ConditionStatus.TRUE, "SucceededGetScale", "m")
    updates.set("AbleToScale", ConditionStatus.FALSE, "A", "a")
    assert updates.result() == (
        HorizontalPodAutoscalerCondition("AbleToScale", ConditionStatus.FALSE, "A", "a", NOW),
    )
