"""Resize-aware utilization: during an in-place resize the kubelet applies the new requests later
than the spec says them; with ``resize_aware`` (the controller's default) a pod counts with what
the kubelet applied (``status.containerStatuses[].resources``), without it with its spec
(upstream, kubernetes/kubernetes#142155)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    RESTART_POLICY_ALWAYS,
    ContainerInfo,
    PodCondition,
    PodInfo,
    PodMetric,
    Tolerances,
    calculate_pod_requests,
    get_resource_replicas,
)
from hpa.core.spec import HorizontalSettings

NOW = datetime(2026, 5, 1, 8, 30, tzinfo=UTC)


def _pod(name: str, *containers: ContainerInfo, init: tuple[ContainerInfo, ...] = ()) -> PodInfo:
    return PodInfo(
        name=name,
        ready_condition=PodCondition(ConditionStatus.TRUE, NOW - timedelta(hours=1)),
        start_time=NOW - timedelta(hours=1),
        containers=containers,
        init_containers=init,
    )


def _app(spec_cpu: int, applied_cpu: int | None, *, name: str = "app") -> ContainerInfo:
    return ContainerInfo(
        name,
        {RESOURCE_CPU: spec_cpu, RESOURCE_MEMORY: 256_000},
        applied_requests_milli=None
        if applied_cpu is None
        else {RESOURCE_CPU: applied_cpu, RESOURCE_MEMORY: 256_000},
    )


# (case, pod, container, upstream request, resize-aware request)
CASES = [
    ("no status resources", _pod("p", _app(1000, None)), "", 1000, 1000),
    ("resize applied", _pod("p", _app(1000, 1000)), "", 1000, 1000),
    ("growing: spec 1000m, applied 500m", _pod("p", _app(1000, 500)), "", 1000, 500),
    ("shrinking: spec 250m, applied 1000m", _pod("p", _app(250, 1000)), "", 250, 1000),
    (
        "two containers, one resizing",
        _pod("p", _app(1000, 400), _app(200, 200, name="proxy")),
        "",
        1200,
        600,
    ),
    (
        "ContainerResource of the resizing container",
        _pod("p", _app(1000, 400), _app(200, 200, name="proxy")),
        "app",
        1000,
        400,
    ),
    (
        "ContainerResource of the other container",
        _pod("p", _app(1000, 400), _app(200, 200, name="proxy")),
        "proxy",
        200,
        200,
    ),
    (
        "status reports memory only: cpu keeps the spec",
        _pod(
            "p",
            ContainerInfo("app", {RESOURCE_CPU: 1000}, applied_requests_milli={RESOURCE_MEMORY: 1}),
        ),
        "",
        1000,
        1000,
    ),
    (
        "a resizing sidecar",
        _pod(
            "p",
            _app(500, 500),
            init=(
                ContainerInfo(
                    "sidecar",
                    {RESOURCE_CPU: 300},
                    RESTART_POLICY_ALWAYS,
                    applied_requests_milli={RESOURCE_CPU: 100},
                ),
            ),
        ),
        "",
        800,
        600,
    ),
]


@pytest.mark.parametrize(
    ("pod", "container", "upstream", "aware"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_requests_during_a_resize(pod: PodInfo, container: str, upstream: int, aware: int) -> None:
    assert calculate_pod_requests([pod], container, resource=RESOURCE_CPU) == {"p": upstream}
    assert calculate_pod_requests([pod], container, resource=RESOURCE_CPU, resize_aware=True) == {
        "p": aware
    }


@pytest.mark.parametrize(
    ("resize_aware", "utilization", "replicas"),
    [
        # usage 400m of the applied 500m is 80 %: at the 80 % target, no change
        (True, 80, 4),
        # upstream divides by the new spec's 1000m: 40 %, and scales down to 2
        (False, 40, 2),
    ],
    ids=["resize-aware", "upstream"],
)
def test_utilization_during_a_resize(resize_aware: bool, utilization: int, replicas: int) -> None:
    pods = [_pod(f"p{i}", _app(1000, 500)) for i in range(4)]
    samples = {
        pod.name: PodMetric(value_milli=400, timestamp=NOW, window_seconds=60.0) for pod in pods
    }
    result = get_resource_replicas(
        4,
        80,
        resource=RESOURCE_CPU,
        tolerances=Tolerances(),
        pods=pods,
        metrics=samples,
        timestamp=NOW,
        now=NOW,
        resize_aware=resize_aware,
    )
    assert (result.utilization, result.replica_count) == (utilization, replicas)


def test_a_pod_knows_when_it_is_being_resized() -> None:
    assert not _pod("p", _app(1000, None)).resizing
    assert not _pod("p", _app(1000, 1000)).resizing
    resizing = _pod("p", _app(1000, 500))
    assert resizing.resizing
    applied = resizing.applied()
    assert applied.containers[0].requests_milli[RESOURCE_CPU] == 500
    assert not applied.resizing
    steady = _pod("p", _app(1000, 1000))
    assert steady.applied() is steady


def test_the_controller_default_is_resize_aware() -> None:
    assert HorizontalSettings().resize_aware_utilization is True
