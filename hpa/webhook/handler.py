"""What the admission webhook answers: a patch for a new pod of a VPA-managed workload, a verdict
on a VPA being created or updated.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/admission-controller/logic/server.go`` (``admit``: pods and VPAs by group and resource;
anything else is let through), ``resource/pod/handler.go`` (only ``v1`` pods; a pod without a
matching VPA is let through unchanged; ``DisallowIncorrectObjects`` false: a pod is never refused)
and ``resource/vpa/handler.go`` (a VPA that fails ``validateVPA`` is refused with the 422
``Invalid`` status, with the options of ``getValidationOptionsForVPA``; ``validateVPA``'s warnings
are returned either way; a valid VPA without ``updatePolicy`` is patched to ``Recreate``).

Extensions and deliberate deviations:

- a pod annotated ``vpa.hpa.dev/required: "true"`` is refused (403) while no VPA matches it, so
  "create the VPA, then the pod" has a defined result; with the webhook down the API server's
  ``failurePolicy: Ignore`` still creates it (the annotation asks, the webhook cannot enforce
  while it is down);
- anything that goes wrong while matching or computing the patch lets the pod through unchanged
  with a warning (fail open), where upstream logs it;
- the resources an HPA scales the workload on are left alone (``hpa.core.vpa.awareness``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import structlog
from pydantic import ValidationError

from hpa.api.validation import (
    VpaFeatureGates,
    invalid_status,
    validate_vertical_pod_autoscaler,
    vertical_validation_options,
    warn_vertical_pod_autoscaler,
)
from hpa.api.vpa import VerticalPodAutoscaler
from hpa.core.vpa.admission import admission_patches, default_update_policy_patches
from hpa.core.vpa.awareness import HorizontalConflict, HpaAwareness
from hpa.core.vpa.capping import LimitRangeItem
from hpa.core.vpa.policy import PodResourcePolicy
from hpa.core.vpa.recommender import RecommendedContainerResources
from hpa.webhook.review import (
    AdmissionPod,
    AdmissionRequest,
    PodError,
    allowed_response,
    denied_response,
    parse_pod,
)

log = structlog.get_logger("hpa.webhook")

REQUIRED_ANNOTATION = "vpa.hpa.dev/required"
VPA_GROUP = "autoscaling.k8s.io"


class Outcome(StrEnum):
    """``AdmissionStatus`` of upstream's latency metric, plus ``denied``."""

    APPLIED = "applied"
    SKIPPED = "skipped"
    ERROR = "error"
    DENIED = "denied"


class Kind(StrEnum):
    """``AdmissionResource``."""

    POD = "Pod"
    VPA = "VPA"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class MatchedVpa:
    """The VPA that controls a pod, with what the patch needs (read from the informers)."""

    name: str
    update_mode_off: bool
    recommendation: tuple[RecommendedContainerResources, ...] | None
    policy: PodResourcePolicy | None
    container_limit_range: LimitRangeItem | None = None
    pod_limit_range: LimitRangeItem | None = None
    conflicts: tuple[HorizontalConflict, ...] = ()


class VpaMatcher(Protocol):
    async def match(self, pod: AdmissionPod) -> MatchedVpa | None:
        """The VPA controlling ``pod``, or None."""
        ...


@dataclass(frozen=True, slots=True)
class Answer:
    body: dict[str, Any]
    outcome: Outcome
    kind: Kind


class AdmissionHandler:
    def __init__(
        self,
        matcher: VpaMatcher,
        *,
        awareness: HpaAwareness = HpaAwareness.EXCLUDE,
        gates: VpaFeatureGates | None = None,
    ) -> None:
        self._matcher = matcher
        self._awareness = awareness
        self._gates = gates or VpaFeatureGates()

    async def review(self, request: AdmissionRequest) -> Answer:
        if request.group == "" and request.resource == "pods":
            return await self._pod(request)
        if request.group == VPA_GROUP and request.resource == "verticalpodautoscalers":
            return self._vpa(request)
        log.info("admission_unsupported_resource", group=request.group, resource=request.resource)
        return Answer(allowed_response(request.uid), Outcome.SKIPPED, Kind.UNKNOWN)

    async def _pod(self, request: AdmissionRequest) -> Answer:
        def unchanged(warning: str) -> Answer:
            return Answer(
                allowed_response(request.uid, warnings=[warning]), Outcome.ERROR, Kind.POD
            )

        if request.version != "v1":
            return unchanged(f"only v1 Pods are supported, got {request.version}")
        if request.operation != "CREATE":
            return Answer(allowed_response(request.uid), Outcome.SKIPPED, Kind.POD)
        try:
            pod = parse_pod(request)
        except PodError as error:
            log.info("admission_pod_unreadable", uid=request.uid, error=str(error))
            return unchanged(f"hpa-vpa-admission: pod left unchanged: {error}")
        try:
            matched = await self._matcher.match(pod)
        except Exception as error:  # noqa: BLE001 - fail open: the pod is created unchanged
            log.warning(
                "admission_match_failed", pod=f"{pod.namespace}/{pod.name}", error=repr(error)
            )
            return unchanged("hpa-vpa-admission: pod left unchanged: no VPA could be matched")
        if matched is None:
            if (pod.annotations or {}).get(REQUIRED_ANNOTATION) == "true":
                message = (
                    f'pod {pod.namespace}/{pod.name} is annotated {REQUIRED_ANNOTATION}: "true" '
                    "but no VerticalPodAutoscaler matches it: create the VPA first"
                )
                body = denied_response(request.uid, code=403, reason="Forbidden", message=message)
                return Answer(body, Outcome.DENIED, Kind.POD)
            return Answer(allowed_response(request.uid), Outcome.SKIPPED, Kind.POD)
        patches = admission_patches(
            pod.containers,
            vpa_name=matched.name,
            update_mode_off=matched.update_mode_off,
            recommendation=matched.recommendation,
            policy=matched.policy,
            pod_has_annotations=pod.annotations is not None,
            container_limit_range=matched.container_limit_range,
            pod_limit_range=matched.pod_limit_range,
            conflicts=matched.conflicts,
            awareness=self._awareness,
        )
        outcome = Outcome.APPLIED if patches else Outcome.SKIPPED
        return Answer(allowed_response(request.uid, patches), outcome, Kind.POD)

    def _vpa(self, request: AdmissionRequest) -> Answer:
        """``resource/vpa/handler.go``: refuse a VPA that ``validateVPA`` refuses."""
        if request.operation not in ("CREATE", "UPDATE") or request.object is None:
            return Answer(allowed_response(request.uid), Outcome.SKIPPED, Kind.VPA)
        name = request.name or _name(request.object)
        try:
            vpa = VerticalPodAutoscaler.from_dict(request.object)
            old = (
                VerticalPodAutoscaler.from_dict(request.old_object)
                if request.operation == "UPDATE" and request.old_object is not None
                else None
            )
        except ValidationError as error:
            message = f"VerticalPodAutoscaler {name!r} cannot be read: {error.errors()[0]['msg']}"
            body = denied_response(request.uid, code=400, reason="BadRequest", message=message)
            return Answer(body, Outcome.DENIED, Kind.VPA)
        options = vertical_validation_options(old, self._gates)
        errors = validate_vertical_pod_autoscaler(vpa, options=options)
        warnings = warn_vertical_pod_autoscaler(vpa, options=options)
        if not errors:
            patches = default_update_policy_patches(
                has_update_policy=vpa.spec.update_policy is not None
            )
            outcome = Outcome.APPLIED if patches else Outcome.SKIPPED
            return Answer(
                allowed_response(request.uid, patches, warnings=warnings), outcome, Kind.VPA
            )
        status = invalid_status(errors, kind="VerticalPodAutoscaler", name=name, group=VPA_GROUP)
        body = denied_response(
            request.uid,
            code=status.code or 422,
            reason=status.reason,
            message=status.message,
            warnings=warnings,
        )
        return Answer(body, Outcome.DENIED, Kind.VPA)


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""
