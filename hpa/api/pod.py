"""``core/v1`` Pod: the subset the autoscalers read (and the pod template of workloads).

Upstream counterpart: ``k8s.io/api/core/v1/types.go`` (``Pod``, ``PodSpec``, ``Container``,
``ResourceRequirements``, ``ContainerResizePolicy``, ``PodStatus``, ``PodCondition``,
``ContainerStatus``, ``ContainerState*``, ``PodTemplateSpec``).

What is modelled: owner references and ``deletionTimestamp`` (in :class:`ObjectMeta`); container
and init-container resources (an init container with ``restartPolicy: Always`` is a sidecar);
pod-level ``spec.resources``; ``priority`` / ``priorityClassName``; ``status.conditions``,
``startTime``, ``containerStatuses`` with ``lastState.terminated.reason`` (OOMKilled), allocated
and actual resources, and the in-place resize status (``status.resize``, which newer servers
replace with the ``PodResizePending`` / ``PodResizeInProgress`` conditions).

Deliberate deviations: everything else in a Pod (volumes, probes, env, ...) is not modelled and
is kept verbatim as unknown fields.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.meta import ListMeta, ObjectMeta, TypeMeta
from hpa.api.types import ResourceList, Time

__all__ = [
    "Container",
    "ContainerResizePolicy",
    "ContainerState",
    "ContainerStateRunning",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStatus",
    "Pod",
    "PodCondition",
    "PodList",
    "PodSpec",
    "PodStatus",
    "PodTemplateSpec",
    "ResourceRequirements",
]


class ResourceRequirements(KubeModel):
    """``ResourceRequirements``: limits and requests (``claims`` kept as an unknown field)."""

    limits: ResourceList = Field(default_factory=dict)
    requests: ResourceList = Field(default_factory=dict)


class ContainerResizePolicy(KubeModel):
    """``ContainerResizePolicy``: whether resizing a resource restarts the container."""

    resource_name: str = ""
    restart_policy: str = ""


class Container(KubeModel):
    """``Container``: name, image and resources (everything else kept verbatim)."""

    name: str = ""
    image: str = ""
    resources: ResourceRequirements | None = None
    resize_policy: list[ContainerResizePolicy] = Field(default_factory=list)
    restart_policy: str | None = None


class PodSpec(KubeModel):
    """``PodSpec`` subset."""

    init_containers: list[Container] = Field(default_factory=list)
    containers: list[Container] = Field(default_factory=list)
    restart_policy: str = ""
    node_name: str = ""
    priority_class_name: str = ""
    priority: int | None = None
    resources: ResourceRequirements | None = None


class PodCondition(KubeModel):
    """``PodCondition`` (``Ready``, ``PodScheduled``, ``PodResizePending``, ...)."""

    type: str = ""
    observed_generation: int | None = None
    status: str = ""
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class ContainerStateWaiting(KubeModel):
    """``ContainerStateWaiting``."""

    reason: str = ""
    message: str = ""


class ContainerStateRunning(KubeModel):
    """``ContainerStateRunning``."""

    started_at: Time | None = None


class ContainerStateTerminated(KubeModel):
    """``ContainerStateTerminated``: ``reason`` is e.g. ``OOMKilled``."""

    exit_code: int = 0
    signal: int | None = None
    reason: str = ""
    message: str = ""
    started_at: Time | None = None
    finished_at: Time | None = None
    container_id: str = Field(default="", alias="containerID")


class ContainerState(KubeModel):
    """``ContainerState``: at most one of waiting, running, terminated."""

    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(KubeModel):
    """``ContainerStatus`` with allocated and actual resources (in-place resize)."""

    name: str = ""
    state: ContainerState | None = None
    last_state: ContainerState | None = None
    ready: bool = False
    restart_count: int = 0
    image: str = ""
    image_id: str = Field(default="", alias="imageID")
    container_id: str = Field(default="", alias="containerID")
    started: bool | None = None
    allocated_resources: ResourceList = Field(default_factory=dict)
    resources: ResourceRequirements | None = None


class PodStatus(KubeModel):
    """``PodStatus`` subset."""

    observed_generation: int | None = None
    phase: str = ""
    conditions: list[PodCondition] = Field(default_factory=list)
    message: str = ""
    reason: str = ""
    host_ip: str = Field(default="", alias="hostIP")
    pod_ip: str = Field(default="", alias="podIP")
    start_time: Time | None = None
    init_container_statuses: list[ContainerStatus] = Field(default_factory=list)
    container_statuses: list[ContainerStatus] = Field(default_factory=list)
    qos_class: str = ""
    resize: str = ""


class Pod(TypeMeta):
    """``core/v1`` ``Pod``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


class PodList(TypeMeta):
    """``PodList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Pod] = Field(default_factory=list)


class PodTemplateSpec(KubeModel):
    """``PodTemplateSpec``: the pod template of a workload."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
