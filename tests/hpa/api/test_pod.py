"""core/v1 Pod subset: the fields the autoscalers read, and lossless round trips."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings

from hpa.api.base import unknown_fields
from hpa.api.pod import Pod, PodList
from tests.hpa.api.strategies import assert_round_trip, wire_objects

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-5d9c-abcde",
        "namespace": "shop",
        "uid": "1b2c",
        "deletionTimestamp": "2026-01-02T03:04:05Z",
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-5d9c",
                "uid": "9f8e",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "priorityClassName": "high",
        "priority": 1000,
        "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}},
        "initContainers": [
            {
                "name": "proxy",
                "image": "envoy",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ],
        "containers": [
            {
                "name": "app",
                "image": "web:1",
                "ports": [{"containerPort": 8080}],
                "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}},
            }
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
    },
    "status": {
        "phase": "Running",
        "startTime": "2026-01-01T00:00:00Z",
        "podIP": "10.0.0.7",
        "resize": "InProgress",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:30Z"},
            {"type": "PodResizeInProgress", "status": "True", "lastProbeTime": None},
        ],
        "containerStatuses": [
            {
                "name": "app",
                "ready": True,
                "restartCount": 1,
                "lastState": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "finishedAt": "2026-01-01T00:00:10Z",
                        "containerID": "containerd://ab",
                    }
                },
                "state": {"running": {"startedAt": "2026-01-01T00:00:11Z"}},
                "allocatedResources": {"cpu": "250m", "memory": "128Mi"},
                "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}},
            }
        ],
    },
}


def test_pod_fields_the_autoscalers_read() -> None:
    pod = assert_round_trip(Pod, POD)
    assert isinstance(pod, Pod)
    owner = pod.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.controller) == ("ReplicaSet", "web-5d9c", True)
    assert pod.metadata.deletion_timestamp == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    sidecar = pod.spec.init_containers[0]
    assert sidecar.restart_policy == "Always"
    assert sidecar.resources is not None
    assert sidecar.resources.requests["memory"] == "64Mi"
    assert pod.spec.resources is not None
    assert pod.spec.resources.limits == {"cpu": "2"}
    assert (pod.spec.priority, pod.spec.priority_class_name) == (1000, "high")
    assert pod.status.start_time == datetime(2026, 1, 1, tzinfo=UTC)
    assert [c.type for c in pod.status.conditions] == ["Ready", "PodResizeInProgress"]
    status = pod.status.container_statuses[0]
    assert status.last_state is not None
    assert status.last_state.terminated is not None
    assert status.last_state.terminated.reason == "OOMKilled"
    assert status.allocated_resources == {"cpu": "250m", "memory": "128Mi"}
    assert pod.status.resize == "InProgress"
    assert pod.status.pod_ip == "10.0.0.7"
    assert set(unknown_fields(pod)) == {"spec.containers[0].ports", "spec.volumes"}


@settings(max_examples=300, deadline=None)
@given(wire_objects(Pod))
def test_any_pod_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(Pod, data)


@settings(max_examples=100, deadline=None)
@given(wire_objects(PodList))
def test_any_pod_list_round_trips(data: dict[str, Any]) -> None:
    assert_round_trip(PodList, data)
