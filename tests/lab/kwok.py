"""kwok configuration: fake nodes and the pod lifecycle stages the lab's pods go through.

Upstream counterpart: kwok's `kustomize/stage/pod/general` and `kustomize/stage/node/{fast,
heartbeat}` Stages (v0.8.0). Deviations: delays are exact (no jitter) and configurable, because
the HPA's CPU-initialization and readiness rules read `status.startTime` and the Ready condition's
`lastTransitionTime`:

1. `pod-create` (immediately after scheduling): pod IP, `startTime`, phase Pending, containers
   waiting in ContainerCreating, Ready=False.
2. `pod-start` (after `startup_delay_seconds`): phase Running, containers running, not ready.
3. `pod-ready` (after a further `readiness_delay_seconds`): Ready=True and ContainersReady=True
   with `lastTransitionTime` = now, containers ready.
4. `pod-resize` (a Running, Ready pod, at once): its containers' `status.containerStatuses[].
   resources` are the spec's requests and limits, as the kubelet reports them once a resize is
   applied. kwok reports no container resources by itself, and kube-apiserver refuses a resize
   (`pods/resize`) of a pod whose running containers report none ("Pod running on node without
   support for resize"); with this stage every resize completes at once (kwok patches only when
   something changed, so an unchanged pod is not written again). A pod annotated
   `lab.hpa.dev/resize-hold` is left alone: a resize of it stays in progress (spec ahead of the
   reported resources) until the annotation is removed, as with a kubelet that has not applied it
   yet.
5. `pod-delete`: a pod with a deletionTimestamp and no finalizers is removed at once (the
   kubelet's grace period is not simulated).
Nodes are initialized as Ready with the capacity we give them and heartbeat every 10 s.
"""

from __future__ import annotations

from typing import Any

import yaml

NODE_LABEL_KEY = "type"
NODE_LABEL_VALUE = "kwok"

_NOT_DELETED = {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}

RESIZE_HOLD_ANNOTATION = "lab.hpa.dev/resize-hold"
"""A pod with this annotation (any value) keeps its reported container resources: the
`pod-resize` stage skips it, so a resize stays in progress until the annotation goes."""

_NODE_CONDITIONS = """\
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $lastTransitionTime | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
"""

_NODE_INITIALIZE = (
    """\
{{ $now := Now }}
{{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
"""
    + _NODE_CONDITIONS
    + """\
addresses:
- address: {{ NodeIP | Quote }}
  type: InternalIP
- address: {{ NodeName | Quote }}
  type: Hostname
allocatable:
{{ YAML .status.allocatable 1 }}
capacity:
{{ YAML .status.capacity 1 }}
nodeInfo:
  architecture: amd64
  containerRuntimeVersion: kwok
  kernelVersion: kwok
  kubeletVersion: kwok
  operatingSystem: linux
phase: Running
"""
)

_NODE_HEARTBEAT = (
    """\
{{ $now := Now }}
{{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
"""
    + _NODE_CONDITIONS
)

_POD_CREATE = """\
{{ $now := Now }}
conditions:
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodScheduled
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: Ready
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: ContainersReady
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: ContainerCreating
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
phase: Pending
startTime: {{ $now | Quote }}
"""

_POD_START = """\
{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Running
"""

_POD_READY = """\
{{ $now := Now }}
{{ $root := . }}
conditions:
- lastProbeTime: null
  lastTransitionTime: {{ $root.status.startTime | Quote }}
  status: "True"
  type: PodScheduled
- lastProbeTime: null
  lastTransitionTime: {{ $root.status.startTime | Quote }}
  status: "True"
  type: Initialized
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastProbeTime: null
  lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
containerStatuses:
{{ range $index, $item := .spec.containers }}
{{ $origin := index $root.status.containerStatuses $index }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $origin.state.running.startedAt | Quote }}
{{ end }}
"""

_POD_RESIZE = """\
{{ $root := . }}
containerStatuses:
{{ range $index, $item := .spec.containers }}
{{ $origin := index $root.status.containerStatuses $index }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: {{ $origin.ready }}
  restartCount: {{ $origin.restartCount }}
  started: true
  state:
    running:
      startedAt: {{ $origin.state.running.startedAt | Quote }}
  resources: {{ YAML $item.resources 2 }}
{{ end }}
"""


def _stage(
    name: str,
    kind: str,
    *,
    match: list[dict[str, Any]],
    delay_seconds: float,
    next_step: dict[str, Any],
    immediate_next_stage: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": match},
        "next": next_step,
    }
    if delay_seconds > 0:
        spec["delay"] = {"durationMilliseconds": round(delay_seconds * 1000)}
    if immediate_next_stage:
        spec["immediateNextStage"] = True
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": spec,
    }


def render_stages(
    *,
    startup_delay_seconds: float,
    readiness_delay_seconds: float,
    heartbeat_interval_seconds: float = 10.0,
) -> str:
    """The `--config` file for kwok: node and pod Stages, as a multi-document YAML."""
    ready_status = '.status.conditions.[] | select( .type == "Ready" ) | .status'
    stages = [
        _stage(
            "node-initialize",
            "Node",
            match=[{"key": ready_status, "operator": "NotIn", "values": ["True"]}],
            delay_seconds=0,
            next_step={"statusTemplate": _NODE_INITIALIZE},
        ),
        _stage(
            "node-heartbeat",
            "Node",
            match=[
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {"key": ready_status, "operator": "In", "values": ["True"]},
            ],
            delay_seconds=heartbeat_interval_seconds,
            next_step={"statusTemplate": _NODE_HEARTBEAT},
            immediate_next_stage=True,
        ),
        _stage(
            "pod-create",
            "Pod",
            match=[_NOT_DELETED, {"key": ".status.podIP", "operator": "DoesNotExist"}],
            delay_seconds=0,
            next_step={
                "event": {"type": "Normal", "reason": "Created", "message": "Created container"},
                "statusTemplate": _POD_CREATE,
            },
        ),
        _stage(
            "pod-start",
            "Pod",
            match=[
                _NOT_DELETED,
                {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
                {"key": ".status.podIP", "operator": "Exists"},
            ],
            delay_seconds=startup_delay_seconds,
            next_step={
                "event": {"type": "Normal", "reason": "Started", "message": "Started container"},
                "statusTemplate": _POD_START,
            },
        ),
        _stage(
            "pod-ready",
            "Pod",
            match=[
                _NOT_DELETED,
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {"key": ready_status, "operator": "In", "values": ["False"]},
            ],
            delay_seconds=readiness_delay_seconds,
            next_step={"statusTemplate": _POD_READY},
        ),
        _stage(
            "pod-resize",
            "Pod",
            match=[
                _NOT_DELETED,
                {
                    "key": f'.metadata.annotations["{RESIZE_HOLD_ANNOTATION}"]',
                    "operator": "DoesNotExist",
                },
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {"key": ready_status, "operator": "In", "values": ["True"]},
            ],
            delay_seconds=0,
            next_step={"statusTemplate": _POD_RESIZE},
        ),
        _stage(
            "pod-delete",
            "Pod",
            match=[
                {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                {"key": ".metadata.finalizers", "operator": "DoesNotExist"},
            ],
            delay_seconds=0,
            next_step={"delete": True},
        ),
    ]
    return yaml.safe_dump_all(stages, sort_keys=False)


def node_manifest(name: str, *, cpu: str, memory: str, pods: str) -> dict[str, Any]:
    """A Node that kwok manages (selected by label `type=kwok`)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                NODE_LABEL_KEY: NODE_LABEL_VALUE,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "kwok",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }
