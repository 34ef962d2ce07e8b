"""CPU startup boost expiry, ported from upstream's tables (kubernetes/autoscaler
``vertical-pod-autoscaler`` v1.8.1 ``pkg/utils/vpa/api_test.go``:
``TestGetExpiredStartupCPUBoostAnnotations``, ``TestGetBoostRemainingDuration``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpa.core.vpa.amount import Resources
from hpa.core.vpa.boost import (
    StartupBoostDurations,
    boost_remaining,
    expired_boost_annotations,
    has_boost_in_progress,
    original_resources,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
PAST = NOW - timedelta(minutes=2)
C1 = "vpaCpuStartupBoost/c1"

# name: (annotations, ready since, durations, expired)
EXPIRED = {
    "No StartupBoost config": ({}, PAST, StartupBoostDurations(), []),
    "No duration in StartupBoost, no annotation": ({}, PAST, StartupBoostDurations(pod=0), []),
    "No duration in StartupBoost, with annotation and pod ready": (
        {C1: ""},
        PAST,
        StartupBoostDurations(pod=0),
        [C1],
    ),
    "Pod not ready": ({C1: ""}, None, StartupBoostDurations(pod=60), []),
    "Duration passed": ({C1: ""}, PAST, StartupBoostDurations(pod=60), [C1]),
    "Duration not passed": ({C1: ""}, PAST, StartupBoostDurations(pod=180), []),
    "Container policy overrides the VPA's duration": (
        {C1: ""},
        PAST,
        StartupBoostDurations(pod=300, containers={"c1": 60}),
        [C1],
    ),
    "The * policy applies to a container without its own": (
        {C1: ""},
        PAST,
        StartupBoostDurations(pod=300, containers={"*": 60}),
        [C1],
    ),
    "A container's own policy without a duration hides the * one": (
        {C1: ""},
        PAST,
        StartupBoostDurations(pod=300, containers={"c1": None, "*": 60}),
        [],
    ),
    "Other annotations are not boosts": ({"vpaUpdates": "x"}, PAST, StartupBoostDurations(), []),
}


@pytest.mark.parametrize(
    ("annotations", "ready", "durations", "want"), EXPIRED.values(), ids=EXPIRED.keys()
)
def test_expired_boost_annotations(
    annotations: dict[str, str],
    ready: datetime | None,
    durations: StartupBoostDurations,
    want: list[str],
) -> None:
    got = expired_boost_annotations(annotations, ready_since=ready, now=NOW, durations=durations)
    assert got == want


@pytest.mark.parametrize(
    ("ready", "durations", "want"),
    [
        (None, StartupBoostDurations(pod=300), timedelta(0)),
        (PAST, StartupBoostDurations(pod=300), timedelta(minutes=3)),
        (PAST, StartupBoostDurations(pod=60), timedelta(0)),
        (PAST, StartupBoostDurations(pod=300, containers={"c2": 150}), timedelta(seconds=30)),
    ],
    ids=["not ready", "remaining", "expired", "the shortest of several"],
)
def test_boost_remaining(
    ready: datetime | None, durations: StartupBoostDurations, want: timedelta
) -> None:
    annotations = {C1: "", "vpaCpuStartupBoost/c2": ""}
    got = boost_remaining(annotations, ready_since=ready, now=NOW, durations=durations)
    assert got == want


def test_boost_in_progress() -> None:
    assert has_boost_in_progress({C1: "{}"})
    assert not has_boost_in_progress({"vpaObservedContainers": "c1"})


def test_original_resources() -> None:
    requests, limits = original_resources(
        '{"requests":{"cpu":"100m","memory":"1Gi"},"limits":{"cpu":"1"}}'
    )
    assert requests == Resources(cpu=100, memory=1024**3)
    assert limits == Resources(cpu=1000)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("not json", "not JSON"),
        ("[]", "not an object"),
        ('{"requests":[]}', "requests is not an object"),
        ('{"requests":{"cpu":"lots"}}', "requests.cpu"),
    ],
)
def test_original_resources_refuses_bad_values(value: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        original_resources(value)
