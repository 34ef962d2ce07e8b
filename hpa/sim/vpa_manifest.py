"""VerticalPodAutoscaler manifests (``autoscaling.k8s.io/v1``), read strictly.

Upstream counterpart: what the API server does with a VPA before the recommender sees it: decode
with the ``hpa.api.vpa`` models (an unknown field under ``spec`` is an error naming it), validate
as the CRD schema and the admission controller do (``validate_vertical_pod_autoscaler_schema``,
``validate_vertical_pod_autoscaler``). Used by ``hpa simulate`` (VPAs next to HPAs) and by
``hpa.testing.vpa``.

Deliberate deviations: a manifest without ``metadata.namespace`` is put in ``default``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hpa.api.base import error_location, unknown_fields
from hpa.api.validation import (
    validate_vertical_pod_autoscaler,
    validate_vertical_pod_autoscaler_schema,
)
from hpa.api.vpa import (
    VerticalPodAutoscaler,
    eviction_requirements_to_core,
    pod_resource_policy_to_core,
)
from hpa.core.vpa.policy import PodResourcePolicy
from hpa.core.vpa.update import EvictionRequirement
from hpa.sim.manifest import (
    HPAManifest,
    ManifestError,
    manifests_from_documents,
    read_manifest,
    unique_names,
)

__all__ = [
    "VPA",
    "is_vpa_document",
    "load_manifest_set",
    "parse_vpas",
    "vpa_from_document",
]


def is_vpa_document(document: Any) -> bool:
    """A decoded YAML document whose kind is ``VerticalPodAutoscaler``."""
    return isinstance(document, dict) and document.get("kind") == "VerticalPodAutoscaler"


@dataclass(frozen=True, slots=True)
class VPA:
    """One VerticalPodAutoscaler, validated, as the recommender reads it."""

    name: str
    namespace: str
    source: str
    target_kind: str
    target_name: str
    update_mode: str | None
    resource_policy: PodResourcePolicy | None
    annotations: Mapping[str, str] = field(default_factory=dict)
    recommenders: tuple[str, ...] = ()
    """``spec.recommenders[].name`` (empty: the default recommender)."""
    eviction_requirements: tuple[EvictionRequirement, ...] = ()
    """``spec.updatePolicy.evictionRequirements`` (the updater's queue admission)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def vpa_from_document(document: Any, where: str) -> VPA:
    if not isinstance(document, dict):
        raise ManifestError(f"{where}: expected a mapping (a VPA object), got {document!r}")
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if kind != "VerticalPodAutoscaler":
        raise ManifestError(f"{where}: kind: expected VerticalPodAutoscaler, got {kind!r}")
    if api_version != "autoscaling.k8s.io/v1":
        raise ManifestError(
            f"{where}: apiVersion: expected autoscaling.k8s.io/v1, got {api_version!r}"
        )
    try:
        model = VerticalPodAutoscaler.from_dict(document)
    except ValidationError as error:
        first = error.errors()[0]
        raise ManifestError(f"{where}: {error_location(first)}: {first['msg']}") from error
    unknown = sorted(unknown_fields(model.spec, "spec"))
    if unknown:
        raise ManifestError(f'{where}: unknown field "{unknown[0]}"')
    if not model.metadata.namespace:
        model.metadata.namespace = "default"
    errors = [
        *validate_vertical_pod_autoscaler_schema(model),
        *validate_vertical_pod_autoscaler(model),
    ]
    if errors:
        details = "; ".join(str(e) for e in errors)
        raise ManifestError(f"{where}: VerticalPodAutoscaler is invalid: {details}")
    target = model.spec.target_ref
    policy = model.spec.update_policy
    return VPA(
        name=model.metadata.name,
        namespace=model.metadata.namespace,
        source=where,
        target_kind=target.kind if target is not None else "",
        target_name=target.name if target is not None else "",
        update_mode=policy.update_mode if policy is not None else None,
        resource_policy=pod_resource_policy_to_core(model.spec.resource_policy),
        annotations=dict(model.metadata.annotations),
        recommenders=tuple(r.name for r in model.spec.recommenders),
        eviction_requirements=eviction_requirements_to_core(policy),
    )


def parse_vpas(text: str, *, source: str = "<yaml>") -> list[VPA]:
    """Every VPA of a (multi-document) YAML text, validated strictly (:class:`ManifestError`)."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as error:
        raise ManifestError(f"{source}: not valid YAML: {error}") from error
    found = [
        vpa_from_document(d, source if len(documents) == 1 else f"{source} (document {n})")
        for n, d in enumerate(documents, start=1)
    ]
    if not found:
        raise ManifestError(f"{source}: no VerticalPodAutoscaler found")
    return found


def load_manifest_set(paths: Iterable[str | Path]) -> tuple[list[HPAManifest], list[VPA]]:
    """Every HPA and every VPA of every file (HPA names made unique); at least one HPA."""
    hpas: list[HPAManifest] = []
    vpas: list[VPA] = []
    for path in paths:
        source = str(path)
        try:
            documents = [d for d in yaml.safe_load_all(read_manifest(path)) if d is not None]
        except yaml.YAMLError as error:
            raise ManifestError(f"{source}: not valid YAML: {error}") from error
        where = [
            source if len(documents) == 1 else f"{source} (document {n})"
            for n in range(1, len(documents) + 1)
        ]
        for document, at in zip(documents, where, strict=True):
            if is_vpa_document(document):
                vpas.append(vpa_from_document(document, at))
        others = [d for d in documents if not is_vpa_document(d)]
        if others or not vpas:
            hpas.extend(manifests_from_documents(others, source=source))
    if not hpas:
        raise ManifestError("no HorizontalPodAutoscaler found")
    return unique_names(hpas), vpas
