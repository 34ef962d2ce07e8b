"""``admission.k8s.io/v1`` AdmissionReview: what the VPA admission webhook reads and answers.

Upstream counterpart: ``k8s.io/api/admission/v1/types.go`` (``AdmissionReview``,
``AdmissionRequest``, ``AdmissionResponse``) and ``k8s.io/api/authentication/v1.UserInfo``.

``object`` / ``oldObject`` are ``runtime.RawExtension`` upstream and stay plain JSON dicts here;
parse them with the model of the kind named in ``request.kind``. ``patch`` is the base64 text of
a JSON patch, as it is on the wire.

Deliberate deviations: none.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hpa.api.base import KubeModel
from hpa.api.meta import Status, TypeMeta

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "GroupVersionKind",
    "GroupVersionResource",
    "UserInfo",
]


class GroupVersionKind(KubeModel):
    """``metav1.GroupVersionKind``."""

    group: str = ""
    version: str = ""
    kind: str = ""


class GroupVersionResource(KubeModel):
    """``metav1.GroupVersionResource``."""

    group: str = ""
    version: str = ""
    resource: str = ""


class UserInfo(KubeModel):
    """``authentication/v1.UserInfo``."""

    username: str = ""
    uid: str = ""
    groups: list[str] = Field(default_factory=list)
    extra: dict[str, list[str]] = Field(default_factory=dict)


class AdmissionRequest(KubeModel):
    """``AdmissionRequest``."""

    uid: str = ""
    kind: GroupVersionKind = Field(default_factory=GroupVersionKind)
    resource: GroupVersionResource = Field(default_factory=GroupVersionResource)
    sub_resource: str = ""
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    request_sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: str = ""
    user_info: UserInfo = Field(default_factory=UserInfo)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool | None = None
    options: dict[str, Any] | None = None


class AdmissionResponse(KubeModel):
    """``AdmissionResponse``: ``patch`` is base64 text, ``patch_type`` is ``JSONPatch``."""

    uid: str = ""
    allowed: bool = False
    result: Status | None = None
    patch: str | None = None
    patch_type: str | None = None
    audit_annotations: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class AdmissionReview(TypeMeta):
    """``admission.k8s.io/v1`` ``AdmissionReview``."""

    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None
