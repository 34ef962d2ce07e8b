"""charts/hpa rendered by Helm's own engine, and manifests/ written from it.

Upstream counterpart: ``helm template`` (Helm v4's ``pkg/action`` render through the
``helm-python-sdk`` wheel, which links Helm's Go SDK) and ``pkg/releaseutil/kind_sorter.go``
(``InstallOrder``) for the order of the objects.

Deliberate deviations: objects of the same kind are ordered by namespace and name (Helm keeps
template order), so the committed manifests do not move when a template file is renamed.

``python -m tests.delivery.chart`` (``make manifests``) rewrites ``manifests/hpa.yaml`` from
``manifests/values.yaml``; ``--check`` exits 1 when the committed file differs.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

from tests.lab.gomod import KUBERNETES_VERSION

REPO = Path(__file__).resolve().parents[2]
CHART_DIR = REPO / "charts" / "hpa"
CI_VALUES_DIR = CHART_DIR / "ci"
MANIFESTS_DIR = REPO / "manifests"
MANIFESTS_VALUES = MANIFESTS_DIR / "values.yaml"
MANIFESTS_FILE = MANIFESTS_DIR / "hpa.yaml"
RELEASE_NAME = "hpa"
RELEASE_NAMESPACE = "hpa-system"
KUBE_VERSION = KUBERNETES_VERSION  # "v1.37.1", the lab's release

# pkg/releaseutil/kind_sorter.go InstallOrder (the kinds this chart can render, and the rest).
INSTALL_ORDER = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)

HEADER = (
    "# Rendered from charts/hpa with manifests/values.yaml by `make manifests`; do not edit.\n"
    "# `make test` fails when this file differs from a fresh render. See docs/install.md.\n"
)


@dataclass(frozen=True, slots=True)
class RenderedObject:
    """One Kubernetes object and the template it came from (``hpa/templates/...``)."""

    source: str
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"].get("namespace", ""))


def load_values(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text()) or {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: values must be a mapping")
    return loaded


def ci_values_files() -> list[Path]:
    """The values files every check runs over (charts/hpa/ci/*-values.yaml, chart-testing's)."""
    return sorted(CI_VALUES_DIR.glob("*-values.yaml"))


@functools.cache
def render_ci(name: str) -> tuple[RenderedObject, ...]:
    """The chart rendered with ``charts/hpa/ci/<name>-values.yaml``, once per test session."""
    return tuple(render(load_values(CI_VALUES_DIR / f"{name}-values.yaml")))


def of_kind(objects: Sequence[RenderedObject], kind: str) -> list[dict[str, Any]]:
    """The bodies of the objects of one kind."""
    return [o.body for o in objects if o.kind == kind]


def one(objects: Sequence[RenderedObject], kind: str, name: str) -> dict[str, Any]:
    """The body of the one object of ``kind`` named ``name`` (an AssertionError otherwise)."""
    found = [o.body for o in objects if o.kind == kind and o.name == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


def _install_rank(kind: str) -> tuple[int, str]:
    try:
        return INSTALL_ORDER.index(kind), ""
    except ValueError:
        return len(INSTALL_ORDER), kind


def render(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = RELEASE_NAME,
    namespace: str = RELEASE_NAMESPACE,
) -> list[RenderedObject]:
    """Every object the chart renders with ``values``, in Helm's install order."""
    with helm.Chart.load(CHART_DIR) as chart:
        chart.validate_schema(dict(values or {}))
        rendered = chart.render(
            dict(values or {}), name=release, namespace=namespace, is_install=True
        )
    objects: list[RenderedObject] = []
    for source, text in rendered.items():
        if not source.endswith((".yaml", ".yml")):
            continue  # NOTES.txt
        for document in yaml.safe_load_all(text):
            if document:
                objects.append(RenderedObject(source=source, body=document))
    objects.sort(key=lambda o: (_install_rank(o.kind), o.namespace, o.name))
    return objects


def lint(values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``helm lint --strict --kube-version <lab>`` of the chart with ``values``."""
    return helm.lint(CHART_DIR, dict(values or {}), strict=True, kube_version=KUBE_VERSION)


def manifests_text(objects: Sequence[RenderedObject]) -> str:
    parts = [HEADER]
    for obj in objects:
        body = yaml.safe_dump(obj.body, sort_keys=False, default_flow_style=False, width=100)
        parts.append(f"---\n# Source: {obj.source}\n{body}")
    return "".join(parts)


def render_manifests() -> str:
    """manifests/hpa.yaml as ``make manifests`` writes it."""
    return manifests_text(render(load_values(MANIFESTS_VALUES)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.delivery.chart", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if manifests/ drifted")
    args = parser.parse_args(argv)
    fresh = render_manifests()
    if args.check:
        current = MANIFESTS_FILE.read_text() if MANIFESTS_FILE.exists() else ""
        if current != fresh:
            print(f"{MANIFESTS_FILE} differs from a fresh render; run `make manifests`")
            return 1
        return 0
    MANIFESTS_FILE.write_text(fresh)
    print(f"wrote {MANIFESTS_FILE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
