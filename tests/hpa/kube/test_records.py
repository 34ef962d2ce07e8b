"""Slim records: the Pod, HPA and workload fields the controller reads, parsed from API JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import GO_ZERO_TIME, PodCondition, PodPhase
from hpa.core.selector import NOTHING
from hpa.kube.records import (
    Interner,
    object_key,
    parse_hpa,
    parse_pod,
    parse_workload,
    split_key,
)

POD = {
    "metadata": {
        "name": "web-1",
        "namespace": "prod",
        "resourceVersion": "42",
        "uid": "u1",
        "labels": {"app": "web"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-abc",
                "uid": "r1",
                "controller": True,
            }
        ],
        "deletionTimestamp": "2026-01-01T00:05:00Z",
    },
    "spec": {
        "nodeName": "kwok-1",
        "resources": {"requests": {"cpu": "1"}},
        "initContainers": [
            {
                "name": "sidecar",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "50m"}},
            },
            {"name": "migrate", "resources": {"requests": {"cpu": "2"}}},
        ],
        "containers": [
            {
                "name": "app",
                "resources": {
                    "requests": {"cpu": "250m", "memory": "64Mi"},
                    "limits": {"cpu": "1"},
                },
            },
            {"name": "log"},
        ],
    },
    "status": {
        "phase": "Running",
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:01:30Z"},
        ],
    },
}


def test_a_pod_keeps_what_the_replica_calculator_reads() -> None:
    pod = parse_pod(POD)
    assert (pod.namespace, pod.name, pod.resource_version) == ("prod", "web-1", "42")
    info = pod.info
    assert info.name == "web-1"
    assert info.phase is PodPhase.RUNNING
    assert info.ready_condition == PodCondition(
        ConditionStatus.FALSE, datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    )
    assert not pod.is_ready
    assert info.start_time == datetime(2026, 1, 1, tzinfo=UTC)
    assert info.deletion_timestamp == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    assert [c.name for c in info.containers] == ["app", "log"]
    assert dict(info.containers[0].requests_milli) == {"cpu": 250, "memory": 64 * 2**20 * 1000}
    assert dict(info.containers[1].requests_milli) == {}
    assert [(c.name, c.restart_policy) for c in info.init_containers] == [
        ("sidecar", "Always"),
        ("migrate", None),
    ]
    assert info.pod_requests_milli == {"cpu": 1000}
    assert info.overhead_milli is None
    assert pod.owner_references[0].kind == "ReplicaSet"
    assert pod.owner_references[0].controller
    assert pod.node_name == "kwok-1"


def test_a_pod_without_status_is_of_unknown_phase_without_readiness() -> None:
    pod = parse_pod({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}})
    info = pod.info
    assert (info.phase, info.ready_condition, info.start_time, info.pod_requests_milli) == (
        PodPhase.UNKNOWN,
        None,
        None,
        None,
    )


def test_unreadable_values_read_as_unset_or_unknown() -> None:
    pod = parse_pod(
        {
            "metadata": {"name": "p", "namespace": "d"},
            "spec": {
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "lots"}}}],
                "overhead": {"cpu": "10m"},
            },
            "status": {"phase": "Sleeping", "conditions": [{"type": "Ready", "status": "?"}]},
        }
    )
    assert pod.info.phase is PodPhase.UNKNOWN
    assert pod.info.ready_condition == PodCondition(ConditionStatus.UNKNOWN, GO_ZERO_TIME)
    assert dict(pod.info.containers[0].requests_milli) == {}
    assert pod.info.overhead_milli == {"cpu": 10}


def test_a_pod_record_becomes_what_the_calculator_reads() -> None:
    record = parse_pod(
        {
            "metadata": {
                "name": "web-0",
                "namespace": "shop",
                "labels": {"app": "web"},
                "deletionTimestamp": "2026-01-01T00:10:00Z",
            },
            "spec": {
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "250m"}}}],
                "initContainers": [
                    {
                        "name": "proxy",
                        "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "0.1", "memory": "64Mi"}},
                    }
                ],
            },
            "status": {
                "phase": "Running",
                "startTime": "2026-01-01T00:00:00Z",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastTransitionTime": "2026-01-01T00:00:30Z",
                    }
                ],
            },
        }
    )
    info = record.info
    assert record.labels == {"app": "web"}
    assert info.phase is PodPhase.RUNNING
    assert info.ready_condition is not None
    assert info.ready_condition.status is ConditionStatus.TRUE
    assert info.ready_condition.last_transition_time == datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)
    assert info.containers[0].requests_milli == {"cpu": 250}
    assert info.init_containers[0].restart_policy == "Always"
    assert info.init_containers[0].requests_milli == {"cpu": 100, "memory": 64 * 2**20 * 1000}
    assert info.deletion_timestamp == datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    assert info.pod_requests_milli is None


def test_a_workload_defaults_replicas_and_parses_its_selector() -> None:
    parse = partial(parse_workload, kind="Deployment")
    web = parse(
        {
            "metadata": {
                "name": "web",
                "namespace": "prod",
                "resourceVersion": "7",
                "generation": 3,
            },
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 2, "readyReplicas": 1, "observedGeneration": 2},
        }
    )
    assert (web.kind, web.spec_replicas, web.status_replicas, web.ready_replicas) == (
        "Deployment",
        1,
        2,
        1,
    )
    assert (web.generation, web.observed_generation) == (3, 2)
    assert web.selector.matches({"app": "web"})
    broken = parse(
        {
            "metadata": {"name": "x"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"bad key": "v"}}},
        }
    )
    assert broken.selector is NOTHING
    assert broken.spec_replicas == 0


def test_an_hpa_keeps_its_target_and_raw_object() -> None:
    raw = {
        "metadata": {"name": "web", "namespace": "prod", "generation": 2, "resourceVersion": "9"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
            "unknown": 1,
        },
        "status": {"currentReplicas": 2},
    }
    hpa = parse_hpa(raw)
    assert (hpa.scale_target_ref.kind, hpa.scale_target_ref.name) == ("StatefulSet", "db")
    assert hpa.generation == 2
    assert hpa.spec["unknown"] == 1
    assert hpa.status == {"currentReplicas": 2}


def test_keys_are_namespace_slash_name() -> None:
    assert object_key("prod", "web") == "prod/web"
    assert object_key("", "node") == "node"
    assert split_key("prod/web") == ("prod", "web")
    assert split_key("node") == ("", "node")


def _template_pod(name: str, *, cpu: str = "100m") -> dict[str, object]:
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {"app": "web", "pod-template-hash": "abc"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "u1"}
            ],
        },
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
    }


def test_pods_of_one_template_share_their_labels_owners_and_containers() -> None:
    first, second = parse_pod(_template_pod("web-1")), parse_pod(_template_pod("web-2"))
    assert (first.name, second.name) == ("web-1", "web-2")
    assert first.labels is second.labels
    assert first.owner_references is second.owner_references
    assert first.info.containers is second.info.containers
    assert first.info.start_time is second.info.start_time
    other = parse_pod(_template_pod("web-3", cpu="200m"))
    assert other.info.containers[0].requests_milli == {"cpu": 200}
    assert first.info.containers[0].requests_milli == {"cpu": 100}, "shared values never change"


def test_the_interner_is_bounded_and_values_outlive_a_reset() -> None:
    table = Interner(max_entries=2)
    a = table.intern("a", lambda: ["a"])
    assert table.intern("a", lambda: ["other"]) is a
    table.intern("b", lambda: ["b"])
    c = table.intern("c", lambda: ["c"])  # full: starts over
    assert len(table) == 1
    assert a == ["a"]
    assert c == ["c"]
    assert table.intern("a", lambda: ["a again"]) == ["a again"]


def test_an_hpa_record_keeps_the_whole_object_and_hands_out_fresh_copies() -> None:
    record = parse_hpa(
        {
            "metadata": {"name": "web", "namespace": "shop", "annotations": {"a": "1"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "future": [1]},
            "status": {"currentReplicas": 2},
        }
    )
    assert record.annotations == {"a": "1"}
    raw = record.raw
    assert raw["spec"]["future"] == [1], "unknown fields survive"
    raw["status"]["currentReplicas"] = 9
    assert record.status == {"currentReplicas": 2}, "the record is not changed through a copy"


def test_a_pod_being_resized_carries_the_requests_the_kubelet_applied() -> None:
    def pod(applied_cpu: str | None) -> dict[str, object]:
        status: dict[str, object] = {"name": "app", "restartCount": 0}
        if applied_cpu is not None:
            status["resources"] = {"requests": {"cpu": applied_cpu, "memory": "64Mi"}}
        return {
            "metadata": {"name": "web-0", "namespace": "shop"},
            "spec": {
                "containers": [
                    {"name": "app", "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}}
                ]
            },
            "status": {"phase": "Running", "containerStatuses": [status]},
        }

    resizing = parse_pod(pod("500m")).info
    assert resizing.containers[0].requests_milli == {"cpu": 1000, "memory": 64 * 2**20 * 1000}
    assert resizing.containers[0].applied_requests_milli == {
        "cpu": 500,
        "memory": 64 * 2**20 * 1000,
    }
    assert resizing.resizing
    assert not parse_pod(pod("1")).info.resizing
    unreported = parse_pod(pod(None)).info
    assert unreported.containers[0].applied_requests_milli is None
    assert not unreported.resizing
