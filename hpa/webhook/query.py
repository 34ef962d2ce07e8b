"""``RecommendationQuery`` (``recommendation.hpa.dev/v1alpha1``): what the VPA that would match a
pod recommends for its containers, capped by that VPA's policy, without creating the pod.

Upstream counterpart: the VPA design proposal's "Recommender API" (``RecommendationQuery``,
never built upstream). The shape follows ``SubjectAccessReview``: a create-only object whose
``spec`` is the question (``spec.pod``, a Pod that may or may not exist) and whose ``status`` the
server fills in (``status.recommendation`` or ``status.error``); nothing is stored.

The answer is the admission webhook's own computation (:class:`hpa.webhook.handler.VpaMatcher`
to find the VPA, :func:`hpa.core.vpa.admission.containers_resources_for_pod` to cap its
recommendation for the pod's containers with the VPA's policy, the namespace's LimitRanges and
the HPA exclusions), so a query answers exactly what the webhook would set on that pod. A VPA in
mode ``Off`` matches no pod here either, as in the webhook.

Errors in the query itself (not JSON, wrong kind, a pod that cannot be read, a namespace other than
the request's) are :class:`QueryError` with the field's path; the server answers 400 or 422 and
creates nothing. A well-formed query that has no answer (no VPA matches, the VPA has no
recommendation yet) is answered with ``status.error``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from hpa.core.vpa.admission import (
    AdmissionContainer,
    ContainerResources,
    containers_resources_for_pod,
)
from hpa.core.vpa.amount import Resources, quantity_text
from hpa.core.vpa.awareness import HpaAwareness
from hpa.webhook.handler import MatchedVpa, VpaMatcher
from hpa.webhook.review import AdmissionPod, PodError, pod_from_object

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "RESOURCE",
    "VERSION",
    "QueryError",
    "RecommendationQuery",
    "answer_query",
    "parse_query",
    "query_status",
]

GROUP = "recommendation.hpa.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "RecommendationQuery"
RESOURCE = "recommendationqueries"


class QueryError(ValueError):
    """The body is not a RecommendationQuery that can be answered. ``invalid`` is a field error
    (HTTP 422 Invalid); otherwise the body could not be read at all (400 BadRequest)."""

    def __init__(self, message: str, *, invalid: bool = True) -> None:
        super().__init__(message)
        self.invalid = invalid


@dataclass(frozen=True, slots=True)
class RecommendationQuery:
    """A validated query: the object as posted (echoed back with its status) and its pod."""

    document: Mapping[str, Any]
    pod: AdmissionPod


def _object(value: Any, path: str, *, required: bool) -> Mapping[str, Any] | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise QueryError(f"{path}: must be an object")
    return value


def parse_query(body: bytes, *, namespace: str) -> RecommendationQuery:
    """Decode and validate a RecommendationQuery posted to ``namespace``; raises
    :class:`QueryError` naming the first field it refuses."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise QueryError(f"body: not JSON: {error}", invalid=False) from None
    if not isinstance(document, dict):
        raise QueryError("body: must be a JSON object", invalid=False)
    if document.get("apiVersion") != API_VERSION:
        raise QueryError(f"apiVersion: must be {API_VERSION}, got {document.get('apiVersion')!r}")
    if document.get("kind") != KIND:
        raise QueryError(f"kind: must be {KIND}, got {document.get('kind')!r}")
    metadata = _object(document.get("metadata"), "metadata", required=False) or {}
    own = metadata.get("namespace")
    if own not in (None, "", namespace):
        raise QueryError(
            f"metadata.namespace: {own!r} does not match the namespace of the request {namespace!r}"
        )
    spec = _object(document.get("spec"), "spec", required=True)
    assert spec is not None
    raw_pod = _object(spec.get("pod"), "spec.pod", required=True)
    assert raw_pod is not None
    try:
        pod = pod_from_object(raw_pod, namespace=namespace, path="spec.pod")
    except PodError as error:
        raise QueryError(str(error)) from None
    if pod.namespace != namespace:
        raise QueryError(
            f"spec.pod.metadata.namespace: {pod.namespace!r} does not match the namespace of the "
            f"request {namespace!r}"
        )
    if not pod.containers:
        raise QueryError("spec.pod.spec.containers: must list at least one container")
    seen: set[str] = set()
    for index, container in enumerate(pod.containers):
        if container.name in seen:
            raise QueryError(
                f"spec.pod.spec.containers[{index}].name: duplicate name {container.name!r}"
            )
        seen.add(container.name)
    return RecommendationQuery(document, pod)


def _resource_list(resources: Resources | None) -> dict[str, str]:
    return {
        name.value: quantity_text(name, amount)
        for name, amount in (resources or Resources()).items()
    }


def _container_entry(
    container: AdmissionContainer, wanted: ContainerResources, notes: Sequence[str]
) -> dict[str, Any] | None:
    requests = _resource_list(wanted.requests)
    if not requests:
        return None
    entry: dict[str, Any] = {"containerName": container.name, "requests": requests}
    limits = _resource_list(wanted.limits)
    if limits:
        entry["limits"] = limits
    if notes:
        entry["notes"] = list(notes)
    return entry


def query_status(
    pod: AdmissionPod,
    matched: MatchedVpa | None,
    *,
    awareness: HpaAwareness = HpaAwareness.EXCLUDE,
) -> dict[str, Any]:
    """The ``status`` of a query about ``pod`` that ``matched`` answers (None: no VPA does)."""
    where = f"pod {pod.namespace}/{pod.name}"
    if matched is None:
        return {"error": f"no VerticalPodAutoscaler matches {where}"}
    if matched.recommendation is None:
        return {
            "verticalPodAutoscaler": matched.name,
            "error": f"VerticalPodAutoscaler {pod.namespace}/{matched.name} has no recommendation "
            "yet",
        }
    resources, notes = containers_resources_for_pod(
        pod.containers,
        update_mode_off=False,
        recommendation=matched.recommendation,
        policy=matched.policy,
        container_limit_range=matched.container_limit_range,
        pod_limit_range=matched.pod_limit_range,
        conflicts=matched.conflicts,
        awareness=awareness,
    )
    entries = [
        entry
        for container, wanted in zip(pod.containers, resources, strict=True)
        if (entry := _container_entry(container, wanted, notes.get(container.name, ())))
    ]
    return {
        "verticalPodAutoscaler": matched.name,
        "recommendation": {"containerRecommendations": entries},
    }


async def answer_query(
    query: RecommendationQuery,
    matcher: VpaMatcher,
    *,
    awareness: HpaAwareness = HpaAwareness.EXCLUDE,
) -> dict[str, Any]:
    """The query as posted, with its namespace and ``status`` filled in. A failure to match
    (an informer not synced, a target that cannot be read) is ``status.error``."""
    try:
        matched = await matcher.match(query.pod)
    except Exception as error:  # noqa: BLE001 - answered as the query's error, never a 500
        status: dict[str, Any] = {"error": f"no VerticalPodAutoscaler could be matched: {error}"}
    else:
        status = query_status(query.pod, matched, awareness=awareness)
    answer = dict(query.document)
    answer["metadata"] = {
        **(query.document.get("metadata") or {}),
        "namespace": query.pod.namespace,
    }
    answer["status"] = status
    return answer
