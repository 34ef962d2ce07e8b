"""``apps/v1`` Deployment, StatefulSet and ReplicaSet: the fields the controllers need.

Upstream counterpart: ``k8s.io/api/apps/v1/types.go``. The controllers need the replica counts
(spec and status), the label selector, the pod template (its containers' resources, for the VPA)
and the observed generation; owner references come with :class:`ObjectMeta`.

Deliberate deviations: ``strategy``, ``updateStrategy``, ``volumeClaimTemplates`` and the other
rollout fields are not modelled and are kept verbatim as unknown fields.
"""

from __future__ import annotations

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.meta import LabelSelector, ListMeta, ObjectMeta, TypeMeta
from hpa.api.pod import PodTemplateSpec
from hpa.api.types import Time

__all__ = [
    "Deployment",
    "DeploymentList",
    "DeploymentSpec",
    "DeploymentStatus",
    "ReplicaSet",
    "ReplicaSetList",
    "ReplicaSetSpec",
    "ReplicaSetStatus",
    "StatefulSet",
    "StatefulSetList",
    "StatefulSetSpec",
    "StatefulSetStatus",
    "WorkloadCondition",
]


class WorkloadCondition(KubeModel):
    """``DeploymentCondition`` / ``StatefulSetCondition`` / ``ReplicaSetCondition``."""

    type: str = ""
    status: str = ""
    last_update_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class DeploymentSpec(KubeModel):
    """``DeploymentSpec`` subset."""

    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    min_ready_seconds: int = 0
    paused: bool = False


class DeploymentStatus(KubeModel):
    """``DeploymentStatus``."""

    observed_generation: int = 0
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    terminating_replicas: int | None = None
    conditions: list[WorkloadCondition] = Field(default_factory=list)


class Deployment(TypeMeta):
    """``apps/v1`` ``Deployment``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeploymentSpec = Field(default_factory=DeploymentSpec)
    status: DeploymentStatus = Field(default_factory=DeploymentStatus)


class DeploymentList(TypeMeta):
    """``DeploymentList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Deployment] = Field(default_factory=list)


class StatefulSetSpec(KubeModel):
    """``StatefulSetSpec`` subset."""

    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    service_name: str = ""
    pod_management_policy: str = ""
    min_ready_seconds: int = 0


class StatefulSetStatus(KubeModel):
    """``StatefulSetStatus``."""

    observed_generation: int = 0
    replicas: int = 0
    ready_replicas: int = 0
    current_replicas: int = 0
    updated_replicas: int = 0
    available_replicas: int = 0
    current_revision: str = ""
    update_revision: str = ""
    conditions: list[WorkloadCondition] = Field(default_factory=list)


class StatefulSet(TypeMeta):
    """``apps/v1`` ``StatefulSet``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: StatefulSetSpec = Field(default_factory=StatefulSetSpec)
    status: StatefulSetStatus = Field(default_factory=StatefulSetStatus)


class StatefulSetList(TypeMeta):
    """``StatefulSetList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[StatefulSet] = Field(default_factory=list)


class ReplicaSetSpec(KubeModel):
    """``ReplicaSetSpec``."""

    replicas: int | None = None
    min_ready_seconds: int = 0
    selector: LabelSelector | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class ReplicaSetStatus(KubeModel):
    """``ReplicaSetStatus``."""

    replicas: int = 0
    fully_labeled_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    terminating_replicas: int | None = None
    observed_generation: int = 0
    conditions: list[WorkloadCondition] = Field(default_factory=list)


class ReplicaSet(TypeMeta):
    """``apps/v1`` ``ReplicaSet``."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = Field(default_factory=ReplicaSetSpec)
    status: ReplicaSetStatus = Field(default_factory=ReplicaSetStatus)


class ReplicaSetList(TypeMeta):
    """``ReplicaSetList``."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[ReplicaSet] = Field(default_factory=list)
