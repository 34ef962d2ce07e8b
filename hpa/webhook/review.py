"""``admission.k8s.io/v1`` AdmissionReview: read strictly, answered in the same version.

Upstream counterpart: k8s.io/api ``admission/v1`` (``AdmissionReview``, ``AdmissionRequest``,
``AdmissionResponse``) as the VPA admission controller reads it (``logic/server.go``) and the pod
fields its handler reads (``resource/pod/handler.go``).

Deliberate deviations: upstream answers anything it cannot decode with ``allowed: true`` and no
``uid`` (which kube-apiserver then rejects as a malformed answer). Here a body that is not an
``admission.k8s.io/v1`` AdmissionReview with a request is refused with a 400 whose message names
the field; a review whose pod cannot be read (an invalid quantity, a container without a name) is
allowed unchanged with a warning, since the API server validates the pod itself.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from hpa.core.quantity import QuantityError, parse_quantity
from hpa.core.vpa.admission import AdmissionContainer, PatchOperation
from hpa.core.vpa.amount import Resources

__all__ = [
    "AdmissionPod",
    "AdmissionRequest",
    "PodError",
    "ReviewError",
    "allowed_response",
    "denied_response",
    "parse_pod",
    "parse_review",
    "pod_from_object",
]

API_VERSION = "admission.k8s.io/v1"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class ReviewError(ValueError):
    """The body is not an AdmissionReview this server can answer (HTTP 400)."""


class PodError(ValueError):
    """The reviewed pod cannot be read; it is let through unchanged."""


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    uid: str
    group: str
    version: str
    resource: str
    kind: str
    sub_resource: str
    operation: str
    namespace: str
    name: str
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    dry_run: bool


@dataclass(frozen=True, slots=True)
class AdmissionPod:
    """The pod being created, as the webhook reads it (``name`` is ``generateName + "%"`` when
    the pod has no name yet, as upstream logs it)."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str] | None
    owner_references: tuple[Mapping[str, Any], ...]
    containers: tuple[AdmissionContainer, ...]


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ReviewError(f"{path}: must be an object")
    return value


def _optional_object(value: Any, path: str) -> Mapping[str, Any] | None:
    return None if value is None else _object(value, path)


def _string(value: Any, path: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if required and (not isinstance(value, str) or not value):
        raise ReviewError(f"{path}: must be a non-empty string")
    if not isinstance(value, str):
        raise ReviewError(f"{path}: must be a string")
    return value


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode an AdmissionReview body; raises ``ReviewError`` naming the first bad field."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise ReviewError(f"body: not JSON ({error})") from None
    review = _object(document, "body")
    if review.get("apiVersion") != API_VERSION:
        raise ReviewError(f"apiVersion: must be {API_VERSION!r}, got {review.get('apiVersion')!r}")
    if review.get("kind") != "AdmissionReview":
        raise ReviewError(f"kind: must be 'AdmissionReview', got {review.get('kind')!r}")
    request = _object(review.get("request"), "request")
    kind = _object(request.get("kind"), "request.kind")
    resource = _object(request.get("resource"), "request.resource")
    operation = _string(request.get("operation"), "request.operation", required=True)
    if operation not in OPERATIONS:
        raise ReviewError(f"request.operation: unsupported value {operation!r}")
    dry_run = request.get("dryRun", False)
    if dry_run is not None and not isinstance(dry_run, bool):
        raise ReviewError("request.dryRun: must be a boolean")
    return AdmissionRequest(
        uid=_string(request.get("uid"), "request.uid", required=True),
        group=_string(resource.get("group"), "request.resource.group"),
        version=_string(resource.get("version"), "request.resource.version", required=True),
        resource=_string(resource.get("resource"), "request.resource.resource", required=True),
        kind=_string(kind.get("kind"), "request.kind.kind", required=True),
        sub_resource=_string(request.get("subResource"), "request.subResource"),
        operation=operation,
        namespace=_string(request.get("namespace"), "request.namespace"),
        name=_string(request.get("name"), "request.name"),
        object=_optional_object(request.get("object"), "request.object"),
        old_object=_optional_object(request.get("oldObject"), "request.oldObject"),
        dry_run=bool(dry_run),
    )


def _string_map(value: Any, path: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise PodError(f"{path}: must be a map of strings")
    return value


def _amounts(value: Any, path: str) -> tuple[Resources, bool]:
    """The cpu (millicores) and memory (bytes) of a ``ResourceList``, and whether it exists."""
    if value is None:
        return Resources(), False
    if not isinstance(value, dict):
        raise PodError(f"{path}: must be a map of quantities")
    amounts: dict[str, int] = {}
    for name, text in value.items():
        if not isinstance(text, str | int | float) or isinstance(text, bool):
            raise PodError(f"{path}.{name}: must be a quantity")
        try:
            quantity = parse_quantity(str(text))
        except QuantityError as error:
            raise PodError(f"{path}.{name}: {error}") from None
        if name == "cpu":
            amounts["cpu"] = quantity.milli_value()
        elif name == "memory":
            amounts["memory"] = quantity.value()
    return Resources(cpu=amounts.get("cpu"), memory=amounts.get("memory")), True


def _container(value: Any, path: str) -> AdmissionContainer:
    if not isinstance(value, dict):
        raise PodError(f"{path}: must be an object")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise PodError(f"{path}.name: must be a non-empty string")
    resources = value.get("resources")
    if resources is None:
        resources = {}
    if not isinstance(resources, dict):
        raise PodError(f"{path}.resources: must be an object")
    requests, has_requests = _amounts(resources.get("requests"), f"{path}.resources.requests")
    limits, has_limits = _amounts(resources.get("limits"), f"{path}.resources.limits")
    return AdmissionContainer(name, requests, limits, has_requests, has_limits)


def parse_pod(request: AdmissionRequest) -> AdmissionPod:
    """The pod of a pod review; raises ``PodError`` naming the field it cannot read."""
    if request.object is None:
        raise PodError("request.object: missing")
    return pod_from_object(request.object, namespace=request.namespace, path="request.object")


def pod_from_object(pod: Mapping[str, Any], *, namespace: str, path: str) -> AdmissionPod:
    """A Pod object as the webhook reads it (``namespace`` when its metadata names none);
    raises ``PodError`` naming the field under ``path`` it cannot read."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    if not isinstance(metadata, dict) or not isinstance(spec, dict):
        raise PodError(f"{path}: metadata and spec must be objects")
    containers = spec.get("containers")
    if not isinstance(containers, list):
        raise PodError(f"{path}.spec.containers: must be a list")
    owners = metadata.get("ownerReferences") or []
    if not isinstance(owners, list) or not all(isinstance(o, dict) for o in owners):
        raise PodError(f"{path}.metadata.ownerReferences: must be a list of objects")
    name = metadata.get("name") or ""
    if not isinstance(name, str):
        raise PodError(f"{path}.metadata.name: must be a string")
    if not name:
        generate = metadata.get("generateName") or ""
        name = f"{generate}%" if isinstance(generate, str) else "%"
    own_namespace = metadata.get("namespace") or namespace
    return AdmissionPod(
        namespace=own_namespace if isinstance(own_namespace, str) else namespace,
        name=name,
        labels=_string_map(metadata.get("labels"), f"{path}.metadata.labels") or {},
        annotations=_string_map(metadata.get("annotations"), f"{path}.metadata.annotations"),
        owner_references=tuple(owners),
        containers=tuple(
            _container(c, f"{path}.spec.containers[{i}]") for i, c in enumerate(containers)
        ),
    )


def _review(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def allowed_response(
    uid: str, patches: Sequence[PatchOperation] = (), *, warnings: Sequence[str] = ()
) -> dict[str, Any]:
    """``allowed: true``, with a base64 JSON Patch when there is one."""
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patches:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(list(patches))).decode()
    if warnings:
        response["warnings"] = list(warnings)
    return _review(response)


def denied_response(
    uid: str, *, code: int, reason: str, message: str, warnings: Sequence[str] = ()
) -> dict[str, Any]:
    """``allowed: false`` with a ``metav1.Status`` result."""
    status = {"status": "Failure", "message": message, "reason": reason, "code": code}
    response: dict[str, Any] = {"uid": uid, "allowed": False, "status": status}
    if warnings:
        response["warnings"] = list(warnings)
    return _review(response)
