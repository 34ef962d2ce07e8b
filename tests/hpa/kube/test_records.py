"""Slim records: the Pod, HPA and workload fields the controller reads, parsed from API JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

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
    assert pod.phase == "Running"
    assert (pod.ready_status, pod.is_ready) == ("False", False)
    assert pod.ready_last_transition_time == datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    assert pod.start_time == datetime(2026, 1, 1, tzinfo=UTC)
    assert pod.deletion_timestamp == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    assert [c.name for c in pod.containers] == ["app", "log"]
    assert dict(pod.containers[0].requests) == {"cpu": "250m", "memory": "64Mi"}
    assert dict(pod.containers[1].requests) == {}
    assert [c.name for c in pod.restartable_init_containers] == ["sidecar"]
    assert pod.pod_resources is not None
    assert dict(pod.pod_resources.requests) == {"cpu": "1"}
    assert pod.owner_references[0].kind == "ReplicaSet"
    assert pod.owner_references[0].controller
    assert pod.node_name == "kwok-1"


def test_a_pod_without_status_is_pending_with_unknown_readiness() -> None:
    pod = parse_pod({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}})
    assert (pod.phase, pod.ready_status, pod.start_time, pod.pod_resources) == (
        "",
        None,
        None,
        None,
    )


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
    assert first.containers is second.containers
    assert first.start_time is second.start_time
    other = parse_pod(_template_pod("web-3", cpu="200m"))
    assert other.containers[0].requests == {"cpu": "200m"}
    assert first.containers[0].requests == {"cpu": "100m"}, "a shared value never changes"


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
