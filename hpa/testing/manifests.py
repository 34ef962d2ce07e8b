"""HPA manifests for tests: the ``autoscaling/v2`` YAML (or dict) users apply, loaded strictly.

Upstream counterpart: what ``kubectl apply --validate=strict`` and the API server do with a
manifest before the controller sees it. The work is :mod:`hpa.sim.manifest`'s (decode with the
``hpa.api`` models, apply the behavior defaults, validate with upstream's
``ValidateHorizontalPodAutoscaler``, convert to the controller's view); this module asks it for
strict field checking (an unknown field under ``spec``, such as a misspelt ``polices``, is an
error, not silently ignored) and keeps memory metrics, which one-sync decisions can evaluate.

Deliberate deviations: a manifest without ``metadata.namespace`` is put in ``default`` (as
``kubectl apply`` would).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpa.controllers.ports import HorizontalPodAutoscalerObject
from hpa.core.spec import HorizontalPodAutoscalerSpec, default_spec
from hpa.sim.manifest import (
    HPAManifest,
    ManifestError,
    manifests_from_documents,
    parse_manifests,
    read_manifest,
)

__all__ = ["HPA", "ManifestError", "hpa_from_spec", "load_hpa", "load_hpas", "parse_hpas"]


@dataclass(frozen=True, slots=True)
class HPA:
    """One HorizontalPodAutoscaler, validated and converted as the controller sees it.

    ``spec`` is the defaulted spec the decision reads (``hpa.core.spec``); ``source`` says where
    it came from (a file, ``file (document 2)``, or ``<dict>``) for error messages."""

    name: str
    namespace: str
    spec: HorizontalPodAutoscalerSpec
    source: str

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def manifest(self) -> HPAManifest:
        """The simulator's view of this HPA (:mod:`hpa.sim`)."""
        return HPAManifest(
            name=self.name,
            source=self.source,
            hpa=HorizontalPodAutoscalerObject(
                namespace=self.namespace, name=self.name, spec=self.spec, generation=1
            ),
        )


def _hpa(manifest: HPAManifest) -> HPA:
    hpa = manifest.hpa
    return HPA(name=hpa.name, namespace=hpa.namespace, spec=hpa.spec, source=manifest.source)


def parse_hpas(text: str, *, source: str = "<yaml>") -> list[HPA]:
    """Every HPA of a (multi-document) YAML text, validated strictly.

    Raises :class:`ManifestError` (a ``ValueError``) whose message names ``source``, the document
    and the field path, e.g. ``web.yaml: spec.maxReplicas: Field required``."""
    return [_hpa(m) for m in parse_manifests(text, source=source, simulatable=False)]


def load_hpas(source: str | Path | Mapping[str, Any]) -> list[HPA]:
    """Every HPA of a YAML file (a path), or of one decoded object (a mapping: an HPA or a
    ``List`` of them), validated strictly. Raises :class:`ManifestError`."""
    if isinstance(source, Mapping):
        documents = [dict(source)]
        found = manifests_from_documents(documents, source="<dict>", simulatable=False)
        return [_hpa(m) for m in found]
    return parse_hpas(read_manifest(source), source=str(source))


def load_hpa(source: str | Path | Mapping[str, Any]) -> HPA:
    """The one HPA of a YAML file or mapping (see :func:`load_hpas`); more than one is an error
    (pick with ``load_hpas(...)[i]``)."""
    found = load_hpas(source)
    if len(found) != 1:
        where = "<dict>" if isinstance(source, Mapping) else str(source)
        names = ", ".join(h.name for h in found)
        raise ManifestError(
            f"{where}: expected one HorizontalPodAutoscaler, found {len(found)}"
            f" ({names}); use load_hpas()"
        )
    return found[0]


def hpa_from_spec(
    spec: HorizontalPodAutoscalerSpec, *, name: str = "hpa", namespace: str = "default"
) -> HPA:
    """An HPA from a spec built in code (``hpa.core.spec``), defaulted as the API server would
    (no metrics: cpu at 80 %; no ``minReplicas``: 1). Not validated: build it from a manifest
    for validation."""
    return HPA(name=name, namespace=namespace, spec=default_spec(spec), source="<spec>")
