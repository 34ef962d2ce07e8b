"""Fakes for the VPA updater's ports (``hpa.controllers.vertical.updater_ports``) and builders of
the objects it reads, as the API server would send them (parsed by the real record functions).

``FakeCluster`` holds VPAs, pods, nodes, LimitRanges, HPAs and controllers; ``resolver()`` is a
real ``TargetResolver`` over its controllers. ``FakePodActions`` records every eviction, resize
and patch, and answers with scripted ``PodActionError``s. ``FakeUpdaterEvents`` keeps events as
``(kind, name, reason)``. ``FakeAdmissionStatus`` is valid unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hpa.controllers.conversion import hpa_from_dict
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.core.vpa.capacity import NodeCapacity
from hpa.core.vpa.matching import ControllerKey
from hpa.core.vpa.update import ReplicaGroup
from hpa.kube.pod_actions import PodActionError
from hpa.kube.targets import ControllerRecord, ScaleInfo, TargetResolver, parse_controller
from hpa.kube.updater_records import UpdaterPodRecord, parse_node, parse_updater_pod
from hpa.kube.vpa_records import LimitRangeRecord, VpaRecord, parse_limit_range, parse_vpa

NS = "shop"
LONG_AGO = "2025-12-01T00:00:00Z"


def deployment(name: str = "web", *, replicas: int = 3) -> dict[str, Any]:
    return {
        "metadata": {"namespace": NS, "name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
    }


def replica_set(name: str = "web-rs", *, owner: str = "web", replicas: int = 3) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": name,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "controller": True}
            ],
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": owner}}},
    }


def vpa(
    name: str = "web",
    *,
    mode: str | None = "Recreate",
    target: Mapping[str, str] | None = None,
    lower: Mapping[str, str] | None = None,
    upper: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    extra_spec: Mapping[str, Any] | None = None,
    container: str = "app",
) -> dict[str, Any]:
    target = target or {"cpu": "500m", "memory": "512Mi"}
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    }
    if mode is not None:
        spec["updatePolicy"] = {"updateMode": mode}
    spec.update(extra_spec or {})
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {
            "namespace": NS,
            "name": name,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": {
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": container,
                        "target": dict(target),
                        "lowerBound": dict(lower or target),
                        "upperBound": dict(upper or target),
                    }
                ]
            }
        },
    }


def pod(
    name: str,
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    owner: str = "web-rs",
    app: str = "web",
    node: str = "node-1",
    phase: str = "Running",
    conditions: Sequence[Mapping[str, str]] = (),
    priority: int = 0,
    priority_class: str = "",
    annotations: Mapping[str, str] | None = None,
    ready_since: str = LONG_AGO,
    uid: str = "",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "namespace": NS,
        "name": name,
        "uid": uid or f"uid-{name}",
        "labels": {"app": app},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True}
        ],
    }
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    spec: dict[str, Any] = {
        "nodeName": node,
        "priority": priority,
        "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "metadata": metadata,
        "spec": spec,
        "status": {
            "phase": phase,
            "startTime": LONG_AGO,
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": ready_since},
                *conditions,
            ],
        },
    }


def node(name: str = "node-1", *, cpu: str = "8", memory: str = "32Gi") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


class _NoScales:
    async def get_scale(self, key: ControllerKey) -> ScaleInfo | None:
        return None


@dataclass
class FakeCluster:
    """``ClusterView`` over plain lists; ``put_*`` parse objects as the informers would."""

    vpa_records: list[VpaRecord] = field(default_factory=list)
    pod_records: dict[str, UpdaterPodRecord] = field(default_factory=dict)
    node_records: list[NodeCapacity] = field(default_factory=list)
    limit_range_records: list[LimitRangeRecord] = field(default_factory=list)
    hpa_objects: list[dict[str, Any]] = field(default_factory=list)
    controllers: dict[tuple[str, str, str], ControllerRecord] = field(default_factory=dict)

    def put_vpa(self, data: dict[str, Any]) -> None:
        record = parse_vpa(data)
        self.vpa_records = [v for v in self.vpa_records if v.name != record.name] + [record]

    def put_pod(self, data: dict[str, Any]) -> None:
        record = parse_updater_pod(data)
        self.pod_records[record.name] = record

    def delete_pod(self, name: str) -> None:
        del self.pod_records[name]

    def put_node(self, data: dict[str, Any]) -> None:
        self.node_records.append(parse_node(data).capacity)

    def put_limit_range(self, data: dict[str, Any]) -> None:
        self.limit_range_records.append(parse_limit_range(data))

    def put_controller(self, kind: str, data: dict[str, Any]) -> None:
        record = parse_controller(data, kind=kind)
        self.controllers[(kind, record.namespace, record.name)] = record

    def put_workload(self, *, replicas: int = 3) -> None:
        self.put_controller("Deployment", deployment(replicas=replicas))
        self.put_controller("ReplicaSet", replica_set(replicas=replicas))

    # ClusterView
    def vpas(self) -> Iterable[VpaRecord]:
        return list(self.vpa_records)

    def pods(self) -> Iterable[UpdaterPodRecord]:
        return list(self.pod_records.values())

    def nodes(self) -> Iterable[NodeCapacity]:
        return list(self.node_records)

    def limit_ranges(self, namespace: str) -> Iterable[LimitRangeRecord]:
        return [r for r in self.limit_range_records if r.namespace == namespace]

    def hpas(self, namespace: str) -> Sequence[HorizontalScaler]:
        return [
            HorizontalScaler(namespace, h["metadata"]["name"], hpa_from_dict(h).spec)
            for h in self.hpa_objects
            if h["metadata"]["namespace"] == namespace
        ]

    def replicas(self, group: ReplicaGroup) -> int | None:
        record = self.controllers.get((group.kind, group.namespace, group.name))
        return None if record is None else record.replicas

    # ControllerLookup
    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        return self.controllers.get((kind, namespace, name))

    def resolver(self) -> TargetResolver:
        return TargetResolver(self, _NoScales())


@dataclass
class FakePodActions:
    evicted: list[str] = field(default_factory=list)
    resized: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    patched: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    failures: dict[tuple[str, str], list[PodActionError]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    def fail(self, action: str, name: str, *errors: PodActionError) -> None:
        self.failures.setdefault((action, name), []).extend(errors)

    def _maybe_fail(self, action: str, name: str) -> None:
        self.calls.append((action, name))
        queued = self.failures.get((action, name))
        if queued:
            raise queued.pop(0)

    async def evict(self, namespace: str, name: str) -> None:
        self._maybe_fail("evict", name)
        self.evicted.append(name)

    async def resize(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        self._maybe_fail("resize", name)
        self.resized.append((name, list(patch)))

    async def patch(self, namespace: str, name: str, patch: Sequence[dict[str, Any]]) -> None:
        self._maybe_fail("patch", name)
        self.patched.append((name, list(patch)))


@dataclass
class FakeUpdaterEvents:
    recorded: list[tuple[str, str, str, str]] = field(default_factory=list)

    def pod_event(self, pod: UpdaterPodRecord, reason: str, message: str) -> None:
        self.recorded.append(("Pod", pod.name, reason, message))

    def vpa_event(
        self, vpa: VpaRecord, reason: str, message: str, *, warning: bool = False
    ) -> None:
        self.recorded.append(("VerticalPodAutoscaler", vpa.name, reason, message))

    def reasons(self, kind: str | None = None) -> list[tuple[str, str]]:
        return [(name, reason) for k, name, reason, _ in self.recorded if kind in (None, k)]


@dataclass
class FakeAdmissionStatus:
    valid: bool = True
    error: PodActionError | None = None
    calls: int = 0

    async def is_valid(self) -> bool:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.valid


class Unlimited:
    """A rate limiter that never waits, counting its calls."""

    def __init__(self) -> None:
        self.acquired = 0

    async def acquire(self) -> float:
        self.acquired += 1
        return 0.0


__all__ = [
    "FakeAdmissionStatus",
    "FakeCluster",
    "FakePodActions",
    "FakeUpdaterEvents",
    "Unlimited",
    "deployment",
    "node",
    "pod",
    "replica_set",
    "vpa",
]
