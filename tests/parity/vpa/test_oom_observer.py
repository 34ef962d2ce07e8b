"""Parity: upstream's ``TestParseEvictionEvent`` of kubernetes/autoscaler v1.8.1
``vertical-pod-autoscaler/pkg/recommender/input/oom/observer_test.go`` (its four cases), and the
cases ``parseEvictionEvent`` rejects before reading the annotations."""

from __future__ import annotations

from typing import Any

import pytest

from hpa.api.vpa import time_to_ns
from hpa.controllers.vertical.feeder import OomInfo, parse_eviction_event, parse_eviction_ooms
from hpa.core.vpa.cluster import ContainerId, PodId
from hpa.kube.clock import parse_time

CREATED = "2018-02-23T13:38:48Z"
KI = 1024


def event(
    containers: str, usage: str, starved: str, *, reason: str = "Evicted", kind: str = "Pod"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": "pod1.1",
            "namespace": "test-namespace",
            "uid": "u1",
            "annotations": {
                "offending_containers": containers,
                "offending_containers_usage": usage,
                "starved_resource": starved,
            },
            "creationTimestamp": CREATED,
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": kind,
            "name": "pod1",
            "namespace": "test-namespace",
        },
        "reason": reason,
    }


def oom(container: str, memory: int) -> OomInfo:
    return OomInfo(
        ContainerId(PodId("test-namespace", "pod1"), container),
        time_to_ns(parse_time(CREATED)),
        memory,
        source="eviction",
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (event("test-container", "1024Ki", "memory"), [oom("test-container", 1024 * KI)]),
        (
            event("test-container,other-container", "1024Ki,2048Ki", "memory,memory"),
            [oom("test-container", 1024 * KI), oom("other-container", 2048 * KI)],
        ),
        (  # invalid resource skipped
            event("test-container,other-container", "1024Ki,2048Ki", "memory,evictable"),
            [oom("test-container", 1024 * KI)],
        ),
        (  # missing resource invalidates the whole event
            event("test-container,other-container", "1024Ki,2048Ki", "memory"),
            [],
        ),
        (event("test-container", "1024Ki", "memory", reason="Killing"), []),
        (event("test-container", "1024Ki", "memory", kind="Node"), []),
        (event("test-container", "not-a-quantity", "memory"), []),
        (event("test-container", "1.5", "memory"), [oom("test-container", 2)]),  # Value() rounds up
    ],
)
def test_parse_eviction_event(data: dict[str, Any], expected: list[OomInfo]) -> None:
    assert parse_eviction_ooms(parse_eviction_event(data)) == expected


def test_an_event_without_annotations_names_no_oom() -> None:
    data = event("c", "1Ki", "memory")
    del data["metadata"]["annotations"]
    assert parse_eviction_ooms(parse_eviction_event(data)) == []
