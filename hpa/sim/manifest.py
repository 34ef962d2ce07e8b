"""HPA manifests for the simulator: the ``autoscaling/v2`` YAML users apply, parsed and checked.

Upstream counterpart: what ``kubectl apply`` and the API server do with a manifest before the
controller sees it: decode strictly (``hpa.api.autoscaling_v2`` models; an unknown field such as
``stabilisationWindowSeconds`` is an error naming its path, as ``kubectl apply``'s
``strict decoding error: unknown field``), validate
(``hpa.api.validation.validate_horizontal_pod_autoscaler``, upstream's
``ValidateHorizontalPodAutoscaler``, with its field paths and messages) and convert to the
controller's view (``hpa.controllers.conversion.spec_from_model``).

Before validation the behavior defaults are applied as the API server does
(``SetDefaults_HorizontalPodAutoscalerBehavior``: a present ``behavior`` gets both directions,
every unset field from the defaults), so ``scaleDown: {selectPolicy: Disabled}`` is valid as it is
upstream.

Deliberate deviations: a manifest without ``metadata.namespace`` is put in ``default`` (as
``kubectl apply`` would); ``Resource`` / ``ContainerResource`` metrics other than ``cpu`` are
rejected, because the workload model has no memory (:class:`ManifestError` names the field).
``simulatable=False`` keeps memory metrics (for one-sync decisions, which need no workload
model, as ``hpa.testing`` asks).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hpa.api.autoscaling_v2 import HorizontalPodAutoscaler
from hpa.api.base import error_location, unknown_fields
from hpa.api.validation import validate_horizontal_pod_autoscaler
from hpa.controllers.conversion import spec_from_model
from hpa.controllers.ports import HorizontalPodAutoscalerObject
from hpa.core.quantity import QuantityError
from hpa.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
    MetricSourceType,
    MetricTargetType,
    ScalingRules,
    default_spec,
)

__all__ = [
    "HPAManifest",
    "ManifestError",
    "check_simulatable",
    "load_manifests",
    "manifests_from_documents",
    "parse_manifests",
    "read_manifest",
    "target_utilization_percent",
    "unique_names",
]


class ManifestError(ValueError):
    """A manifest the simulator cannot use; the message names the document and field path."""


@dataclass(frozen=True, slots=True)
class HPAManifest:
    """One HPA of a manifest file: its display name, where it came from, the controller's view."""

    name: str
    source: str
    hpa: HorizontalPodAutoscalerObject


def check_simulatable(manifest: HPAManifest) -> None:
    """Raise :class:`ManifestError` when the workload model cannot drive one of the HPA's metrics
    (a ``Resource`` / ``ContainerResource`` metric other than ``cpu``)."""
    for index, metric in enumerate(manifest.hpa.spec.metrics):
        path = f"spec.metrics[{index}]"
        name: str | None = None
        if metric.type == MetricSourceType.RESOURCE and metric.resource is not None:
            name, path = metric.resource.name, f"{path}.resource.name"
        elif metric.type == MetricSourceType.CONTAINER_RESOURCE and metric.container_resource:
            name, path = metric.container_resource.name, f"{path}.containerResource.name"
        if name is not None and name != "cpu":
            raise ManifestError(
                f'{manifest.source}: {path}: Unsupported value: "{name}": '
                "the simulator models cpu only"
            )


def _rules_dict(rules: ScalingRules) -> dict[str, Any]:
    data: dict[str, Any] = {"selectPolicy": str(rules.select_policy)}
    if rules.stabilization_window_seconds is not None:
        data["stabilizationWindowSeconds"] = rules.stabilization_window_seconds
    data["policies"] = [
        {"type": str(p.type), "value": p.value, "periodSeconds": p.period_seconds}
        for p in rules.policies or ()
    ]
    return data


def _apply_defaults(document: dict[str, Any]) -> dict[str, Any]:
    """``SetDefaults_HorizontalPodAutoscalerBehavior``, as the API server applies it before
    validating: a present ``behavior`` gets both directions with every unset field defaulted."""
    spec = document.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("behavior"), dict):
        return document
    behavior = dict(spec["behavior"])
    for key, defaults in (
        ("scaleUp", DEFAULT_SCALE_UP_RULES),
        ("scaleDown", DEFAULT_SCALE_DOWN_RULES),
    ):
        given = behavior.get(key)
        if given is not None and not isinstance(given, dict):
            continue  # the model reports the wrong type with its path
        rules = _rules_dict(defaults)
        rules.update({k: v for k, v in (given or {}).items() if v is not None})
        behavior[key] = rules
    return {**document, "spec": {**spec, "behavior": behavior}}


def _convert(document: Any, where: str) -> HorizontalPodAutoscalerObject:
    if not isinstance(document, dict):
        raise ManifestError(f"{where}: expected a mapping (an HPA object), got {document!r}")
    api_version = document.get("apiVersion")
    kind = document.get("kind")
    if kind != "HorizontalPodAutoscaler":
        raise ManifestError(f"{where}: kind: expected HorizontalPodAutoscaler, got {kind!r}")
    if api_version != "autoscaling/v2":
        raise ManifestError(f"{where}: apiVersion: expected autoscaling/v2, got {api_version!r}")
    try:
        model = HorizontalPodAutoscaler.from_dict(_apply_defaults(document))
    except ValidationError as error:
        first = error.errors()[0]
        raise ManifestError(f"{where}: {error_location(first)}: {first['msg']}") from error
    unknown = sorted(unknown_fields(model))
    if unknown:
        raise ManifestError(f'{where}: strict decoding error: unknown field "{unknown[0]}"')
    if not model.metadata.namespace:
        model.metadata.namespace = "default"
    errors = validate_horizontal_pod_autoscaler(model)
    if errors:
        details = "; ".join(str(e) for e in errors)
        raise ManifestError(f"{where}: HorizontalPodAutoscaler is invalid: {details}")
    try:
        spec = spec_from_model(model.spec)
    except (QuantityError, ValueError) as error:
        raise ManifestError(f"{where}: {error}") from error
    return HorizontalPodAutoscalerObject(
        namespace=model.metadata.namespace,
        name=model.metadata.name,
        spec=default_spec(spec),
        generation=1,
        annotations=dict(model.metadata.annotations),
    )


def manifests_from_documents(
    documents: Sequence[Any], *, source: str, simulatable: bool = True
) -> list[HPAManifest]:
    """Every HPA of decoded documents (``List`` kinds are unpacked), each checked as
    :func:`parse_manifests` does."""
    found: list[HPAManifest] = []
    for number, document in enumerate(documents, start=1):
        where = source if len(documents) == 1 else f"{source} (document {number})"
        items: Iterable[Any] = [document]
        if isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
            items = document.get("items") or []
        for item in items:
            hpa = _convert(item, where)
            manifest = HPAManifest(name=hpa.name, source=where, hpa=hpa)
            if simulatable:
                check_simulatable(manifest)
            found.append(manifest)
    if not found:
        raise ManifestError(f"{source}: no HorizontalPodAutoscaler found")
    return found


def parse_manifests(text: str, *, source: str, simulatable: bool = True) -> list[HPAManifest]:
    """Every HPA in a (multi-document) YAML text; ``List`` kinds are unpacked. ``simulatable``
    rejects metrics the workload model cannot drive; an unknown field is always an error."""
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        raise ManifestError(f"{source}: not valid YAML: {error}") from error
    return manifests_from_documents(documents, source=source, simulatable=simulatable)


def read_manifest(path: str | Path) -> str:
    """A manifest file's text; :class:`ManifestError` (``cannot read <path>: <why>``) when it
    cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ManifestError(f"cannot read {path}: {error.strerror or error}") from error


def load_manifests(paths: Iterable[str | Path]) -> list[HPAManifest]:
    """Every HPA of every file, names made unique (``web``, ``web#2``) for side-by-side output."""
    manifests: list[HPAManifest] = []
    for path in paths:
        manifests.extend(parse_manifests(read_manifest(path), source=str(path)))
    return unique_names(manifests)


def unique_names(manifests: Iterable[HPAManifest]) -> list[HPAManifest]:
    """The manifests, names made unique (``web``, ``web#2``) for side-by-side output."""
    seen: dict[str, int] = {}
    unique: list[HPAManifest] = []
    for manifest in manifests:
        count = seen.get(manifest.name, 0) + 1
        seen[manifest.name] = count
        name = manifest.name if count == 1 else f"{manifest.name}#{count}"
        unique.append(HPAManifest(name=name, source=manifest.source, hpa=manifest.hpa))
    return unique


def target_utilization_percent(
    hpa: HorizontalPodAutoscalerObject,
    *,
    cpu_request_milli: int,
    cpu_per_request_milli: float,
    idle_cpu_milli: float,
) -> float | None:
    """The CPU utilization the HPA aims at, for "above target" statistics and plots.

    A cpu ``Utilization`` target is that percentage. A per-pod request-rate target (Pods or
    External/Object ``AverageValue``) is converted through the workload model. ``Value`` targets
    have no per-pod equivalent: ``None``.
    """
    for metric in hpa.spec.metrics:
        source = metric.resource or metric.container_resource
        if (
            source is not None
            and source.target.type == MetricTargetType.UTILIZATION
            and source.target.average_utilization is not None
        ):
            return float(source.target.average_utilization)
        if source is not None and source.target.average_value_milli is not None:
            return 100.0 * source.target.average_value_milli / cpu_request_milli
    for metric in hpa.spec.metrics:
        target = None
        if metric.pods is not None:
            target = metric.pods.target
        elif metric.external is not None:
            target = metric.external.target
        elif metric.object is not None:
            target = metric.object.target
        if target is not None and target.average_value_milli is not None:
            rps = target.average_value_milli / 1000
            return 100.0 * (idle_cpu_milli + cpu_per_request_milli * rps) / cpu_request_milli
    return None
