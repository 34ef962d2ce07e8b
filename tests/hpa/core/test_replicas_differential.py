"""The fast paths of :mod:`hpa.core.replicas` give exactly what the straightforward port gives.

``replicas_reference.py`` keeps the calculators as first ported (one loop per upstream function,
Go's int64 wrap after every addition). Hypothesis draws pod sets biased towards the common case
that takes the fast path (every pod running, ready, started long ago, plain containers) and mixes
in everything that must leave it: repeated pod names, deleted, pending and failed pods, missing
and foreign samples, pods at the edge of the CPU initialization period, other tzinfo objects
(equal and not), containers named ``""`` or without a request, init containers, pod-level
requests, int64 overflow. Results, traces and error texts must be identical.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields, is_dataclass, replace
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    RESTART_POLICY_ALWAYS,
    ContainerInfo,
    PodCondition,
    PodInfo,
    PodMetric,
    PodPhase,
    ReplicaCalculationError,
    Tolerances,
    get_metric_replicas,
    get_metric_usage_ratio,
    get_raw_resource_replicas,
    get_ready_pods_count,
    get_resource_replicas,
    get_resource_utilization_ratio,
    group_pods,
)
from tests.hpa.core import replicas_reference as reference

NOW = datetime(2026, 5, 1, 8, 30, tzinfo=UTC)
INIT_SECONDS = 300.0
DELAY_SECONDS = 30.0
UTC_COPY = timezone(timedelta(0))
"""Equal to ``UTC`` but another object: the fast CPU check must not take it for ``now``'s."""
PLUS_TWO = timezone(timedelta(hours=2))


class _SummerTime(tzinfo):
    """A zone whose clocks jump from +1 h to +2 h at 10:27 wall time on ``NOW``'s day.

    ``NOW_SUMMER`` (10:30 there) is ``NOW``; 300 s earlier on the wall clock (10:25) is back at
    +1 h, so wall-clock arithmetic (what ``datetime - timedelta`` does within one tzinfo) lands an
    hour away from elapsed time: the fast CPU check must not use ``now - period`` against a pod
    in another zone.
    """

    def utcoffset(self, dt: datetime | None) -> timedelta:
        if dt is not None and (dt.hour, dt.minute) >= (10, 27):
            return timedelta(hours=2)
        return timedelta(hours=1)

    def dst(self, dt: datetime | None) -> timedelta:
        return self.utcoffset(dt) - timedelta(hours=1)

    def tzname(self, dt: datetime | None) -> str:
        return "SUMMER" if self.dst(dt) else "WINTER"


SUMMER_TIME = _SummerTime()
NOW_SUMMER = datetime(2026, 5, 1, 10, 30, tzinfo=SUMMER_TIME)

_NAMES = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
_BIG = 2**62


def _request_values() -> st.SearchStrategy[int]:
    return (
        st.sampled_from([250, 500, 1000]) | st.integers(min_value=0, max_value=4000) | st.just(_BIG)
    )


_REQUESTS = st.one_of(
    *([st.builds(lambda v: {RESOURCE_CPU: v, RESOURCE_MEMORY: v * 1000}, _request_values())] * 6),
    st.builds(lambda v: {RESOURCE_MEMORY: v}, _request_values()),
    st.just({}),
)
_CONTAINER = st.builds(
    ContainerInfo,
    name=st.sampled_from(["app", "app", "app", "sidecar", "sidecar", ""]),
    requests_milli=_REQUESTS,
)
_INIT_CONTAINER = st.builds(
    ContainerInfo,
    name=st.sampled_from(["init", "proxy"]),
    requests_milli=_REQUESTS,
    restart_policy=st.sampled_from([None, RESTART_POLICY_ALWAYS]),
)
_PHASE = st.sampled_from([PodPhase.RUNNING] * 12 + list(PodPhase))
_STATUS = st.sampled_from([ConditionStatus.TRUE] * 12 + list(ConditionStatus))
_SECONDS_AGO = st.sampled_from([3600, 3600, 3600, 900, 301, 300, 299, 40, 30, 29, 0]) | (
    st.integers(min_value=0, max_value=4000)
)
_TZINFO = st.sampled_from([UTC] * 12 + [UTC_COPY, PLUS_TWO, SUMMER_TIME])


@st.composite
def _pods(draw: st.DrawFn) -> PodInfo:
    start = NOW - timedelta(seconds=draw(_SECONDS_AGO))
    condition: PodCondition | None = None
    if draw(st.integers(min_value=0, max_value=15)):
        transition = start + timedelta(seconds=draw(st.sampled_from([0, 10, 30, 31, 60, 400])))
        condition = PodCondition(draw(_STATUS), transition)
    start_time: datetime | None = None
    if draw(st.integers(min_value=0, max_value=15)):
        start_time = start.astimezone(draw(_TZINFO))
    plain = draw(st.integers(min_value=0, max_value=5)) > 0
    return PodInfo(
        name=draw(st.sampled_from(_NAMES)),
        phase=draw(_PHASE),
        ready_condition=condition,
        start_time=start_time,
        deletion_timestamp=None if draw(st.integers(min_value=0, max_value=15)) else NOW,
        containers=tuple(draw(st.lists(_CONTAINER, min_size=0 if not plain else 1, max_size=3))),
        init_containers=() if plain else tuple(draw(st.lists(_INIT_CONTAINER, max_size=2))),
        pod_requests_milli=None if plain else draw(st.none() | _REQUESTS),
        overhead_milli=None if plain else draw(st.none() | _REQUESTS),
    )


def _unique(pods: list[PodInfo]) -> list[PodInfo]:
    seen: set[str] = set()
    unique: list[PodInfo] = []
    for pod in pods:
        if pod.name not in seen:
            seen.add(pod.name)
            unique.append(pod)
    return unique


_POD_LISTS = st.one_of(
    st.lists(_pods(), max_size=10).map(_unique),
    st.lists(_pods(), max_size=10).map(_unique),
    st.lists(_pods(), max_size=10),
)
"""Mostly unique names (as in a cluster), sometimes repeated ones."""

_SAMPLE = st.builds(
    PodMetric,
    value_milli=st.integers(min_value=0, max_value=5000)
    | st.integers(min_value=-(2**63), max_value=2**63 - 1),
    timestamp=st.none()
    | st.sampled_from([0, 5, 60, 400]).map(lambda s: NOW - timedelta(seconds=s)),
    window_seconds=st.sampled_from([30.0, 60.0, 0.0]),
)


@st.composite
def _plain_ready_pod(draw: st.DrawFn) -> PodInfo:
    started = NOW - timedelta(seconds=draw(st.sampled_from([3600, 900, 301, 300, 299, 200])))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        started = started.astimezone(SUMMER_TIME)
    return PodInfo(
        name=draw(st.sampled_from(_NAMES)),
        ready_condition=PodCondition(ConditionStatus.TRUE, started),
        start_time=started,
        containers=tuple(
            ContainerInfo(name, {RESOURCE_CPU: draw(_request_values())})
            for name in draw(st.sampled_from([["app"], ["app", "sidecar"], ["", "sidecar"]]))
        ),
    )


@st.composite
def _inputs(draw: st.DrawFn) -> tuple[list[PodInfo], dict[str, PodMetric]]:
    shape = draw(st.sampled_from(["ready", "ready", "one odd pod", "one odd pod", "any"]))
    if shape == "any":
        pods = draw(_POD_LISTS)
    else:
        pods = _unique(draw(st.lists(_plain_ready_pod(), min_size=1, max_size=10)))
        if draw(st.booleans()):
            # pods of one template, converted by the controller, share one containers tuple
            shared = pods[0].containers
            pods = [replace(pod, containers=shared) for pod in pods]
        if shape == "one odd pod":
            index = draw(st.integers(min_value=0, max_value=len(pods) - 1))
            pods[index] = draw(_pods())
    metrics: dict[str, PodMetric] = {}
    for pod in pods:
        if shape != "any" or draw(st.integers(min_value=0, max_value=12)):
            metrics[pod.name] = draw(_SAMPLE)
    for name in draw(st.lists(st.sampled_from([*_NAMES, "foreign"]), max_size=2)):
        metrics[name] = draw(_SAMPLE)
    return pods, metrics


_TOLERANCES = st.builds(
    Tolerances,
    scale_down=st.sampled_from([0.1, 0.0, 0.5]),
    scale_up=st.sampled_from([0.1, 0.0, 0.5]),
)
_NOW = st.sampled_from(
    [NOW] * 6 + [NOW.astimezone(PLUS_TWO), NOW.astimezone(UTC_COPY)] + [NOW_SUMMER] * 3
)


def _normalized(value: object) -> object:
    """Comparable form: NaN equals NaN, name sets compare as sorted tuples."""
    if is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            tuple((f.name, _normalized(getattr(value, f.name))) for f in fields(value)),
        )
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted(value)))
    if isinstance(value, tuple):
        return tuple(_normalized(item) for item in value)
    return value


def _outcome(call: object) -> object:
    assert callable(call)
    try:
        return ("ok", _normalized(call()))
    except ReplicaCalculationError as err:
        return ("error", str(err))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_inputs(),
    now=_NOW,
    resource=st.sampled_from([RESOURCE_CPU] * 3 + [RESOURCE_MEMORY]),
    container=st.sampled_from(["", "", "", "app"]),
    target=st.sampled_from([60, 100, 150]) | st.integers(min_value=1, max_value=500),
    current=st.integers(min_value=0, max_value=12),
    tolerances=_TOLERANCES,
    pod_level=st.booleans(),
)
def test_resource_utilization_replicas_match_the_reference(
    data: tuple[list[PodInfo], dict[str, PodMetric]],
    now: datetime,
    resource: str,
    container: str,
    target: int,
    current: int,
    tolerances: Tolerances,
    pod_level: bool,
) -> None:
    pods, metrics = data
    arguments = {
        "resource": resource,
        "tolerances": tolerances,
        "pods": pods,
        "metrics": metrics,
        "timestamp": NOW,
        "now": now,
        "container": container,
        "cpu_initialization_period_seconds": INIT_SECONDS,
        "initial_readiness_delay_seconds": DELAY_SECONDS,
        "pod_level_resources_enabled": pod_level,
    }
    fast = _outcome(lambda: get_resource_replicas(current, target, **arguments))  # type: ignore[arg-type]
    slow = _outcome(lambda: reference.get_resource_replicas(current, target, **arguments))  # type: ignore[arg-type]
    assert fast == slow


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_inputs(),
    now=_NOW,
    resource=st.sampled_from([RESOURCE_CPU, RESOURCE_MEMORY, ""]),
    target=st.sampled_from([10_000, 300]) | st.integers(min_value=0, max_value=20_000),
    current=st.integers(min_value=0, max_value=12),
    tolerances=_TOLERANCES,
)
def test_per_pod_average_replicas_match_the_reference(
    data: tuple[list[PodInfo], dict[str, PodMetric]],
    now: datetime,
    resource: str,
    target: int,
    current: int,
    tolerances: Tolerances,
) -> None:
    pods, metrics = data

    def fast() -> object:
        if resource == "":
            return get_metric_replicas(
                current,
                target,
                tolerances=tolerances,
                pods=pods,
                metrics=metrics,
                timestamp=NOW,
                now=now,
            )
        return get_raw_resource_replicas(
            current,
            target,
            resource=resource,
            tolerances=tolerances,
            pods=pods,
            metrics=metrics,
            timestamp=NOW,
            now=now,
            cpu_initialization_period_seconds=INIT_SECONDS,
            initial_readiness_delay_seconds=DELAY_SECONDS,
        )

    def slow() -> object:
        # get_metric_replicas uses the flag defaults for the (unused) CPU periods
        custom = resource == ""
        return reference._calc_plain_metric_replicas(
            current,
            target,
            resource=resource,
            tolerances=tolerances,
            pods=pods,
            metrics=metrics,
            timestamp=NOW,
            now=now,
            cpu_initialization_period_seconds=300.0 if custom else INIT_SECONDS,
            initial_readiness_delay_seconds=30.0 if custom else DELAY_SECONDS,
        )

    assert _outcome(fast) == _outcome(slow)


def _assert_grouped_as_the_reference(
    pods: Sequence[PodInfo], metrics: dict[str, PodMetric], *, resource: str, now: datetime
) -> None:
    arguments = {
        "resource": resource,
        "now": now,
        "cpu_initialization_period_seconds": INIT_SECONDS,
        "initial_readiness_delay_seconds": DELAY_SECONDS,
    }
    assert _normalized(group_pods(pods, metrics, **arguments)) == _normalized(  # type: ignore[arg-type]
        reference.group_pods(pods, metrics, **arguments)  # type: ignore[arg-type]
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_inputs(),
    now=_NOW,
    resource=st.sampled_from([RESOURCE_CPU, RESOURCE_MEMORY, ""]),
)
def test_group_pods_and_ready_count_match_the_reference(
    data: tuple[list[PodInfo], dict[str, PodMetric]], now: datetime, resource: str
) -> None:
    pods, metrics = data
    _assert_grouped_as_the_reference(pods, metrics, resource=resource, now=now)
    assert _outcome(lambda: get_ready_pods_count(pods)) == _outcome(
        lambda: reference.get_ready_pods_count(pods)
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    samples=st.dictionaries(st.sampled_from([*_NAMES, "foreign"]), _SAMPLE, max_size=12),
    requests=st.dictionaries(
        st.sampled_from(_NAMES), st.integers(min_value=-(2**63), max_value=2**63 - 1)
    ),
    target=st.integers(min_value=0, max_value=500),
)
def test_sums_wrapped_once_match_go_wrapping_every_addition(
    samples: dict[str, PodMetric], requests: dict[str, int], target: int
) -> None:
    assert _outcome(lambda: get_resource_utilization_ratio(samples, requests, target)) == (
        _outcome(lambda: reference.get_resource_utilization_ratio(samples, requests, target))
    )
    if samples:
        assert _normalized(get_metric_usage_ratio(samples, target)) == _normalized(
            reference.get_metric_usage_ratio(samples, target)
        )


def test_a_large_all_ready_pod_set_matches_the_reference() -> None:
    """The bench's shape (1,000 plain ready pods) through both paths, scaling up and down."""
    started = NOW - timedelta(hours=1)
    pods = [
        PodInfo(
            name=f"web-{i}",
            ready_condition=PodCondition(ConditionStatus.TRUE, started),
            start_time=started,
            containers=(
                ContainerInfo("app", {RESOURCE_CPU: 250}),
                ContainerInfo("sidecar", {RESOURCE_CPU: 250}),
            ),
        )
        for i in range(1000)
    ]
    for base in (100, 300, 900):
        metrics = {
            pod.name: PodMetric(base + (i % 7) * 20, NOW - timedelta(seconds=20), 30.0)
            for i, pod in enumerate(pods)
        }
        fast = get_resource_replicas(
            1000,
            60,
            resource=RESOURCE_CPU,
            tolerances=Tolerances(),
            pods=pods,
            metrics=metrics,
            timestamp=NOW,
            now=NOW,
        )
        slow = reference.get_resource_replicas(
            1000,
            60,
            resource=RESOURCE_CPU,
            tolerances=Tolerances(),
            pods=pods,
            metrics=metrics,
            timestamp=NOW,
            now=NOW,
        )
        assert fast == slow
        assert fast.trace.ready_pod_count == 1000


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_inputs(),
    base=_NOW,
    calls=st.lists(
        st.tuples(
            st.sampled_from([-400.0, -301.0, -300.0, -1.0, 0.0, 1.0, 60.0, 300.0, 301.0, 900.0]),
            st.booleans(),
        ),
        min_size=2,
        max_size=6,
    ),
    resource=st.sampled_from([RESOURCE_CPU, RESOURCE_MEMORY, ""]),
    pod_level=st.booleans(),
)
def test_one_listing_grouped_again_and_again_matches_the_reference(
    data: tuple[list[PodInfo], dict[str, PodMetric]],
    base: datetime,
    calls: list[tuple[float, bool]],
    resource: str,
    pod_level: bool,
) -> None:
    """A controller hands the core the same listing object while no pod changed: a listing
    found plainly ready is remembered, and must give exactly the reference's answer whichever
    way time moves (back too) and whichever samples are missing at a later call."""
    pods, metrics = data
    listing = tuple(pods)
    for offset, drop_one in calls:
        now = base + timedelta(seconds=offset)
        samples = dict(list(metrics.items())[1:]) if drop_one else metrics
        _assert_grouped_as_the_reference(listing, samples, resource=resource, now=now)
        arguments = {
            "resource": resource,
            "tolerances": Tolerances(),
            "pods": listing,
            "metrics": samples,
            "timestamp": NOW,
            "now": now,
            "cpu_initialization_period_seconds": INIT_SECONDS,
            "initial_readiness_delay_seconds": DELAY_SECONDS,
            "pod_level_resources_enabled": pod_level,
        }
        fast = _outcome(lambda a=arguments: get_resource_replicas(3, 60, **a))
        slow = _outcome(lambda a=arguments: reference.get_resource_replicas(3, 60, **a))
        assert fast == slow
