"""Informer records of what the VPA updater reads of Pods and Nodes, built once when they arrive.

Upstream counterparts: the pod and node listers of ``pkg/updater`` (``podLister``; upstream reads
no nodes: the capacity check is ours, see :mod:`hpa.core.vpa.capacity`).

A Pod becomes :class:`UpdaterPodRecord`: the core's :class:`hpa.core.vpa.update.UpdatePod`
(requests in milli-units, container statuses with the applied requests and the last termination,
the resize conditions, the direct controller), the containers as the admission rule reads them
(to compute the resize patch), and what the capacity check needs (node, priority, preemption).
A Node becomes :class:`NodeRecord`: allocatable in milli-units and whether new pods may land.

Deliberate deviations: a quantity that does not read counts as unset (the API server validated
it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.vpa.admission import OBSERVED_CONTAINERS_ANNOTATION, AdmissionContainer
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.boost import has_boost_in_progress
from hpa.core.vpa.capacity import NodeCapacity, PlacedPod
from hpa.core.vpa.update import ContainerStatus, PodCondition, ReplicaGroup, UpdatePod
from hpa.kube.clock import parse_time

__all__ = ["NodeRecord", "UpdaterPodRecord", "parse_node", "parse_updater_pod"]

_RESIZE_CONDITIONS = frozenset({"PodResizePending", "PodResizeInProgress"})


def _milli(resources: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, text in (resources or {}).items():
        try:
            out[str(name)] = parse_quantity(str(text)).milli_value()
        except QuantityError:
            continue
    return out


def _resources(milli: Mapping[str, int]) -> Resources:
    """cpu stays in millicores, memory becomes bytes (the VPA model's units)."""
    cpu = milli.get("cpu")
    memory = milli.get("memory")
    return Resources(cpu=cpu, memory=None if memory is None else -(-memory // 1000))


@dataclass(frozen=True, slots=True)
class UpdaterPodRecord:
    namespace: str
    name: str
    uid: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_references: tuple[Mapping[str, Any], ...]
    deleted: bool
    node_name: str
    priority_class_name: str
    preemption_policy: str
    containers: tuple[AdmissionContainer, ...]
    pod: UpdatePod
    ready_since: datetime | None = None
    requests_milli: Mapping[str, int] = field(default_factory=dict)
    """The sum of the containers' requests (what the pod holds on its node)."""

    @property
    def placed(self) -> PlacedPod | None:
        """The pod as the capacity check counts it on its node (None: not on a node, or done)."""
        if not self.node_name or self.pod.phase in ("Succeeded", "Failed"):
            return None
        return PlacedPod(
            self.namespace, self.name, self.node_name, self.requests_milli, self.pod.priority
        )


def _controller(metadata: Mapping[str, Any], namespace: str) -> ReplicaGroup | None:
    """``managingControllerRef``: the first owner reference with ``controller: true``."""
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("controller") is True:
            return ReplicaGroup(namespace, str(ref.get("kind", "")), str(ref.get("name", "")))
    return None


def _status(item: Mapping[str, Any]) -> ContainerStatus:
    terminated = (item.get("lastState") or {}).get("terminated") or {}
    applied = (item.get("resources") or {}).get("requests")
    return ContainerStatus(
        name=str(item.get("name", "")),
        requests=None if applied is None else _milli(applied),
        last_termination_reason=str(terminated.get("reason", "")),
        last_termination_started=parse_time(terminated.get("startedAt")),
        last_termination_finished=parse_time(terminated.get("finishedAt")),
    )


def parse_updater_pod(data: Mapping[str, Any]) -> UpdaterPodRecord:
    metadata = data["metadata"]
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    namespace = str(metadata.get("namespace", ""))
    name = str(metadata["name"])
    annotations = {str(k): str(v) for k, v in (metadata.get("annotations") or {}).items()}
    admission: list[AdmissionContainer] = []
    milli_containers: list[tuple[str, Mapping[str, int]]] = []
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        resources = container.get("resources") or {}
        requests = _milli(resources.get("requests"))
        limits = _milli(resources.get("limits"))
        container_name = str(container.get("name", ""))
        milli_containers.append((container_name, requests))
        for resource, amount in requests.items():
            total[resource] = total.get(resource, 0) + amount
        admission.append(
            AdmissionContainer(
                name=container_name,
                requests=_resources(requests),
                limits=_resources(limits),
                has_requests=resources.get("requests") is not None,
                has_limits=resources.get("limits") is not None,
            )
        )
    conditions = tuple(
        PodCondition(
            type=str(c.get("type", "")),
            status=str(c.get("status", "")),
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
        )
        for c in status.get("conditions") or ()
        if c.get("type") in _RESIZE_CONDITIONS
    )
    ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    ready_since = (
        parse_time(ready.get("lastTransitionTime"))
        if ready is not None and ready.get("status") == "True"
        else None
    )
    pod = UpdatePod(
        namespace=namespace,
        name=name,
        containers=tuple(milli_containers),
        statuses=tuple(_status(s) for s in status.get("containerStatuses") or ()),
        observed_containers=annotations.get(OBSERVED_CONTAINERS_ANNOTATION),
        start_time=parse_time(status.get("startTime")),
        phase=str(status.get("phase", "")),
        controller=_controller(metadata, namespace),
        priority=int(spec.get("priority") or 0),
        uid=str(metadata.get("uid", "")),
        cpu_boost_in_progress=has_boost_in_progress(annotations),
        conditions=conditions,
        non_disruptive_resize=not any(
            policy.get("restartPolicy") == "RestartContainer"
            for container in spec.get("containers") or ()
            for policy in container.get("resizePolicy") or ()
        ),
    )
    return UpdaterPodRecord(
        namespace=namespace,
        name=name,
        uid=str(metadata.get("uid", "")),
        resource_version=str(metadata.get("resourceVersion", "")),
        labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
        annotations=annotations,
        owner_references=tuple(metadata.get("ownerReferences") or ()),
        deleted=metadata.get("deletionTimestamp") is not None,
        node_name=str(spec.get("nodeName", "")),
        priority_class_name=str(spec.get("priorityClassName", "")),
        preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
        containers=tuple(admission),
        pod=pod,
        ready_since=ready_since,
        requests_milli=total,
    )


@dataclass(frozen=True, slots=True)
class NodeRecord:
    namespace: str
    name: str
    resource_version: str
    labels: Mapping[str, str]
    capacity: NodeCapacity


def parse_node(data: Mapping[str, Any]) -> NodeRecord:
    """A node is schedulable when it is Ready and not cordoned (``spec.unschedulable``)."""
    metadata = data["metadata"]
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    name = str(metadata["name"])
    return NodeRecord(
        namespace="",
        name=name,
        resource_version=str(metadata.get("resourceVersion", "")),
        labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
        capacity=NodeCapacity(
            name=name,
            allocatable=_milli(status.get("allocatable")),
            schedulable=ready and not spec.get("unschedulable", False),
        ),
    )
