"""A VPA's target: the top-most controller of a pod, and the pods a target selects.

Upstream counterparts (kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1):
``pkg/target/controller_fetcher/controller_fetcher.go`` (``FindTopMostWellKnownOrScalable``:
walk the controlling owner references upwards; the well-known kinds - Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job, CronJob, ReplicationController - are read from informers, any other
kind through its ``/scale`` subresource; the top-most well-known or scalable controller wins; a
missing well-known controller and a cycle are errors; a Node owner is ``ErrNodeInvalidOwner``), and
``pkg/target/fetcher.go`` (``VpaTargetSelectorFetcher``: a well-known target's ``spec.selector``,
a CronJob's job template labels, a ReplicationController's selector map, else the ``/scale``
subresource's ``status.selector``), and ``pkg/utils/vpa/api.go`` (``FindParentControllerForPod``:
the pod's controlling owner, walked up; a Node owner is no error there).

The informer records are :class:`ControllerRecord`, built once per object when it arrives.

Deliberate deviations: the walk marks the owner it moves to as visited (v1.8.1 marks the key it
leaves, which finds a cycle one step later).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hpa.core.selector import (
    NOTHING,
    Selector,
    SelectorError,
    parse_selector,
    selector_from_label_selector,
    selector_from_labels,
)
from hpa.core.vpa.matching import ControllerKey
from hpa.kube.client import ApiError, NotFoundError, TransportError
from hpa.kube.records import ScaleTargetRef
from hpa.kube.scale import ScaleClient

__all__ = [
    "WELL_KNOWN_KINDS",
    "ApiScaleReader",
    "ControllerLookup",
    "ControllerRecord",
    "NodeInvalidOwnerError",
    "ScaleInfo",
    "ScaleReader",
    "TargetError",
    "TargetResolver",
    "parse_controller",
]

WELL_KNOWN_KINDS = frozenset(
    {
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "CronJob",
        "ReplicationController",
    }
)


class TargetError(Exception):
    """The owner chain cannot be resolved (a missing controller, a cycle, a failed read)."""


class NodeInvalidOwnerError(TargetError):
    """``ErrNodeInvalidOwner``: a Node is never a controller."""


NODE_INVALID_OWNER = "node is not a valid owner"


def _unhandled(key: ControllerKey, error: str) -> str:
    return f"unhandled targetRef {key.api_version} / {key.kind} / {key.name}, last error {error}"


@dataclass(frozen=True, slots=True)
class ControllerRecord:
    """A well-known controller as the VPA reads it: its controlling owner, its pod selector and
    its configured replicas (``spec.replicas``; a DaemonSet's ``status.desiredNumberScheduled``;
    None for Jobs and CronJobs)."""

    kind: str
    namespace: str
    name: str
    resource_version: str
    labels: Mapping[str, str]
    owner: ControllerKey | None
    selector: Selector
    replicas: int | None


def _controller_owner(metadata: Mapping[str, Any], namespace: str) -> ControllerKey | None:
    """``getOwnerController``: the first owner reference with ``controller: true``."""
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("controller") is True:
            return ControllerKey(
                namespace,
                str(ref.get("kind", "")),
                str(ref.get("name", "")),
                str(ref.get("apiVersion", "")),
            )
    return None


def _selector(kind: str, spec: Mapping[str, Any]) -> Selector:
    try:
        if kind == "CronJob":
            template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
            return selector_from_labels((template.get("metadata") or {}).get("labels") or {})
        if kind == "ReplicationController":
            return selector_from_labels(spec.get("selector") or {})
        return selector_from_label_selector(spec.get("selector"))
    except SelectorError:
        return NOTHING


def parse_controller(data: Mapping[str, Any], *, kind: str) -> ControllerRecord:
    """List items carry no ``kind``: bind it with ``functools.partial``."""
    metadata = data["metadata"]
    spec = data.get("spec") or {}
    namespace = str(metadata.get("namespace", ""))
    replicas: int | None
    if kind == "DaemonSet":
        replicas = int((data.get("status") or {}).get("desiredNumberScheduled") or 0)
    elif kind in ("Job", "CronJob"):
        replicas = None
    else:
        value = spec.get("replicas")
        replicas = None if value is None else int(value)
    return ControllerRecord(
        kind=kind,
        namespace=namespace,
        name=str(metadata["name"]),
        resource_version=str(metadata.get("resourceVersion", "")),
        labels=dict(metadata.get("labels") or {}),
        owner=_controller_owner(metadata, namespace),
        selector=_selector(kind, spec),
        replicas=replicas,
    )


@dataclass(frozen=True, slots=True)
class ScaleInfo:
    """What a ``/scale`` subresource tells: its selector text and the scaled object's controller."""

    selector: str
    owner: ControllerKey | None


class ScaleReader(Protocol):
    """Reads the ``/scale`` subresource of an object of a kind that is not well known (through
    discovery's REST mappings). None when the object or its ``/scale`` does not exist; raises
    ``TargetError`` for any other failure."""

    async def get_scale(self, key: ControllerKey) -> ScaleInfo | None: ...


class ControllerLookup(Protocol):
    """The informers' stores of the well-known kinds."""

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None: ...


class TargetResolver:
    """``controllerFetcher`` and ``vpaTargetSelectorFetcher`` over informer stores."""

    def __init__(self, controllers: ControllerLookup, scales: ScaleReader) -> None:
        self._controllers = controllers
        self._scales = scales

    async def _is_well_known_or_scalable(self, key: ControllerKey) -> bool:
        if key.kind in WELL_KNOWN_KINDS:
            return True
        if key.kind == "Node":
            return False
        try:
            return await self._scales.get_scale(key) is not None
        except TargetError:
            return False

    async def _parent(self, key: ControllerKey) -> ControllerKey | None:
        """``getParentOfController``."""
        if key.kind in WELL_KNOWN_KINDS:
            record = self._controllers.get(key.kind, key.namespace, key.name)
            if record is None:
                raise TargetError(f"{key.kind} {key.namespace}/{key.name} does not exist")
            return record.owner
        if key.kind == "Node":
            raise NodeInvalidOwnerError(_unhandled(key, NODE_INVALID_OWNER))
        try:
            scale = await self._scales.get_scale(key)
        except TargetError as error:
            raise TargetError(_unhandled(key, str(error))) from error
        return None if scale is None else scale.owner

    async def top_most_well_known_or_scalable(
        self, key: ControllerKey | None
    ) -> ControllerKey | None:
        """``FindTopMostWellKnownOrScalable``."""
        if key is None:
            return None
        top = key if await self._is_well_known_or_scalable(key) else None
        visited = {key}
        while True:
            owner = await self._parent(key)
            if owner is None:
                return top
            if await self._is_well_known_or_scalable(owner):
                top = owner
            if owner in visited:
                raise TargetError("cycle detected in ownership chain")
            visited.add(owner)
            key = owner

    async def parent_controller_for_pod(
        self, namespace: str, owner_references: Any
    ) -> ControllerKey | None:
        """``FindParentControllerForPod``: a pod owned by a Node has no parent controller."""
        owner = _controller_owner({"ownerReferences": owner_references}, namespace)
        try:
            return await self.top_most_well_known_or_scalable(owner)
        except NodeInvalidOwnerError:
            return None

    async def selector(self, target: ControllerKey) -> Selector:
        """``VpaTargetSelectorFetcher.Fetch``; raises ``TargetError`` when there is none."""
        if target.kind in WELL_KNOWN_KINDS:
            record = self._controllers.get(target.kind, target.namespace, target.name)
            if record is None:
                raise TargetError(f"{target.kind} {target.namespace}/{target.name} does not exist")
            return record.selector
        scale = await self._scales.get_scale(target)
        if scale is None or not scale.selector:
            raise TargetError(
                f"Resource {target.namespace}/{target.name} has an empty selector for its scale"
            )
        try:
            return parse_selector(scale.selector)
        except SelectorError as error:
            raise TargetError(f"invalid scale selector {scale.selector!r}: {error}") from error


class ApiScaleReader:
    """``/scale`` reads through the API server, with the HPA's ``ScaleClient`` (its discovery
    cache maps the kind to its resource, as upstream's ``RESTMappings``)."""

    def __init__(self, scales: ScaleClient) -> None:
        self._scales = scales

    async def get_scale(self, key: ControllerKey) -> ScaleInfo | None:
        target = ScaleTargetRef(api_version=key.api_version, kind=key.kind, name=key.name)
        try:
            scale = await self._scales.get(key.namespace, target)
        except NotFoundError:  # NoScaleSubresourceError included
            return None
        except (ApiError, TransportError) as error:
            raise TargetError(str(error)) from error
        return ScaleInfo(
            selector=scale.selector,
            owner=_controller_owner(scale.raw.get("metadata") or {}, key.namespace),
        )
