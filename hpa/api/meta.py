"""``meta/v1`` types: object and list metadata, label selectors, conditions, Status, discovery.

Upstream counterpart: ``k8s.io/apimachinery/pkg/apis/meta/v1/types.go`` (``TypeMeta``,
``ObjectMeta``, ``ListMeta``, ``OwnerReference``, ``ManagedFieldsEntry``, ``LabelSelector``,
``Condition``, ``Status``, ``StatusDetails``, ``StatusCause``, ``APIResourceList``,
``APIGroupList``), plus ``core/v1.ObjectReference``.

Deliberate deviations: fields we never read are not modelled but are kept as unknown fields
(e.g. ``metadata.clusterName`` of old objects). ``ManagedFieldsEntry.fieldsV1`` is an opaque dict.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.types import Time

__all__ = [
    "APIGroup",
    "APIGroupList",
    "APIResource",
    "APIResourceList",
    "Condition",
    "GroupVersionForDiscovery",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ListMeta",
    "ManagedFieldsEntry",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "ServerAddressByClientCIDR",
    "Status",
    "StatusCause",
    "StatusDetails",
    "TypeMeta",
]


class TypeMeta(KubeModel):
    """``metav1.TypeMeta``: the ``apiVersion`` and ``kind`` of a top-level object."""

    api_version: str = ""
    kind: str = ""


class OwnerReference(KubeModel):
    """``metav1.OwnerReference``."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ManagedFieldsEntry(KubeModel):
    """``metav1.ManagedFieldsEntry`` (``fieldsV1`` kept opaque)."""

    manager: str = ""
    operation: str = ""
    api_version: str = ""
    time: Time | None = None
    fields_type: str = ""
    fields_v1: dict[str, Any] | None = None
    subresource: str = ""


class ObjectMeta(KubeModel):
    """``metav1.ObjectMeta``."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    self_link: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)
    managed_fields: list[ManagedFieldsEntry] = Field(default_factory=list)


class ListMeta(KubeModel):
    """``metav1.ListMeta`` (``continue`` is ``continue_`` in Python)."""

    self_link: str = ""
    resource_version: str = ""
    continue_: str = Field(default="", alias="continue")
    remaining_item_count: int | None = None


class ObjectReference(KubeModel):
    """``corev1.ObjectReference``."""

    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""
    field_path: str = ""


class LabelSelectorRequirement(KubeModel):
    """``metav1.LabelSelectorRequirement``."""

    key: str = ""
    operator: str = ""
    values: list[str] = Field(default_factory=list)


class LabelSelector(KubeModel):
    """``metav1.LabelSelector``."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class Condition(KubeModel):
    """``metav1.Condition``."""

    type: str = ""
    status: str = ""
    observed_generation: int = 0
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class StatusCause(KubeModel):
    """``metav1.StatusCause``: ``reason`` is a ``CauseType`` such as ``FieldValueInvalid``."""

    reason: str = ""
    message: str = ""
    field: str = ""


class StatusDetails(KubeModel):
    """``metav1.StatusDetails``."""

    name: str = ""
    group: str = ""
    kind: str = ""
    uid: str = ""
    causes: list[StatusCause] = Field(default_factory=list)
    retry_after_seconds: int = 0


class Status(TypeMeta):
    """``metav1.Status``: the error (or success) body of an API call."""

    metadata: ListMeta = Field(default_factory=ListMeta)
    status: str = ""
    message: str = ""
    reason: str = ""
    details: StatusDetails | None = None
    code: int = 0


class APIResource(KubeModel):
    """``metav1.APIResource``: one entry of a discovery document."""

    name: str = ""
    singular_name: str = ""
    namespaced: bool = False
    group: str = ""
    version: str = ""
    kind: str = ""
    verbs: list[str] = Field(default_factory=list)
    short_names: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    storage_version_hash: str = ""


class APIResourceList(TypeMeta):
    """``metav1.APIResourceList``: ``GET /apis/<group>/<version>``."""

    group_version: str = ""
    resources: list[APIResource] = Field(default_factory=list)


class GroupVersionForDiscovery(KubeModel):
    """``metav1.GroupVersionForDiscovery``."""

    group_version: str = ""
    version: str = ""


class ServerAddressByClientCIDR(KubeModel):
    """``metav1.ServerAddressByClientCIDR``."""

    client_cidr: str = Field(default="", alias="clientCIDR")
    server_address: str = ""


class APIGroup(TypeMeta):
    """``metav1.APIGroup``: ``GET /apis/<group>``."""

    name: str = ""
    versions: list[GroupVersionForDiscovery] = Field(default_factory=list)
    preferred_version: GroupVersionForDiscovery | None = None
    server_address_by_client_cidrs: list[ServerAddressByClientCIDR] = Field(
        default_factory=list, alias="serverAddressByClientCIDRs"
    )


class APIGroupList(TypeMeta):
    """``metav1.APIGroupList``: ``GET /apis``."""

    groups: list[APIGroup] = Field(default_factory=list)
