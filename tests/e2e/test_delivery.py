"""manifests/hpa.yaml against the lab's real API server: Pod Security "restricted" admission,
server-side dry-run, and the chart's RBAC as the ServiceAccounts' own minted tokens.

Pod Security admission enforces on Pods only; on workloads it warns. So the namespace is
labelled enforce, warn and audit = restricted: the dry-run of the manifests must print no
PodSecurity warning, and a Pod made from each pod template must be admitted (dry-run) where an
ordinary pod is refused.

cert-manager is not part of the lab: its two kinds (Certificate, Issuer) are registered as
schema-less stand-in CRDs so the API server accepts the manifests' cert-manager objects.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.delivery.chart import MANIFESTS_FILE, RELEASE_NAMESPACE, ci_values_files, render_ci
from tests.delivery.podsecurity import pod_templates
from tests.lab.lab import Lab

pytestmark = pytest.mark.e2e

ALLOWLIST_DIR = Path(__file__).resolve().parents[1] / "delivery" / "rbac"
UPDATE_ALLOWLIST = os.environ.get("HPA_UPDATE_RBAC_ALLOWLIST") == "1"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
SERVICE_ACCOUNTS = ("hpa-controller", "hpa-adapter")
CAN_I_NAMESPACES = (RELEASE_NAMESPACE, "kube-system", "default")


def stand_in_crd(kind: str, plural: str, group: str = "cert-manager.io") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def manifests() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(MANIFESTS_FILE.read_text()) if doc]


def run_kubectl(lab: Lab, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lab.control_plane.kubectl_argv(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.fixture(scope="module")
def restricted_namespace(lab: Lab) -> str:
    lab.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": RELEASE_NAMESPACE,
                    "labels": {
                        f"pod-security.kubernetes.io/{mode}": "restricted"
                        for mode in ("enforce", "warn", "audit")
                    },
                },
            },
            stand_in_crd("Certificate", "certificates"),
            stand_in_crd("Issuer", "issuers"),
            stand_in_crd("ServiceMonitor", "servicemonitors", "monitoring.coreos.com"),
            stand_in_crd("PrometheusRule", "prometheusrules", "monitoring.coreos.com"),
            # grafanaDashboard.namespace of charts/hpa/ci/monitoring-values.yaml
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "grafana"}},
        ]
    )
    lab.wait_for(
        lambda: (
            "issuers" in lab.kubectl("api-resources", "--api-group=cert-manager.io")
            and "prometheusrules"
            in lab.kubectl("api-resources", "--api-group=monitoring.coreos.com")
        ),
        what="the cert-manager and prometheus-operator stand-in CRDs to be served",
        timeout_seconds=30,
    )
    return RELEASE_NAMESPACE


@pytest.fixture(scope="module")
def chart_rbac(lab: Lab, restricted_namespace: str) -> None:
    lab.apply([obj for obj in manifests() if obj["kind"] in RBAC_KINDS])


def test_manifests_pass_server_side_dry_run_without_pod_security_warnings(
    lab: Lab, restricted_namespace: str
) -> None:
    result = run_kubectl(
        lab, "apply", "--server-side", "--dry-run=server", "-f", str(MANIFESTS_FILE)
    )
    assert result.returncode == 0, result.stderr
    assert "PodSecurity" not in result.stderr
    applied = [line for line in result.stdout.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(manifests())
    assert any(line.startswith("deployment.apps/hpa-controller") for line in applied)
    assert any(line.startswith("apiservice.apiregistration.k8s.io/") for line in applied)


def test_every_ci_values_render_passes_server_side_dry_run(
    lab: Lab, restricted_namespace: str
) -> None:
    """Each charts/hpa/ci/*-values.yaml render (one per option group), in one dry-run request
    stream: the API server's own validation, admission and RBAC escalation checks."""
    documents = distinct(
        [obj.body for path in ci_values_files() for obj in render_ci(ci_name(path))]
    )
    result = run_kubectl(
        lab,
        "apply",
        "--server-side",
        "--dry-run=server",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(documents),
    )
    assert result.returncode == 0, result.stderr
    applied = [line for line in result.stdout.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(documents)
    for kind in ("mutatingwebhookconfiguration", "customresourcedefinition", "prometheusrule"):
        assert any(line.startswith(f"{kind}.") for line in applied), kind


def distinct(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each object once: most values files render the same objects (a generated Secret differs
    only in its key material, so one of each name is kept)."""
    seen: dict[str, dict[str, Any]] = {}
    for document in documents:
        key = dict(document, data=None) if document["kind"] == "Secret" else document
        seen.setdefault(json.dumps(key, sort_keys=True), document)
    return list(seen.values())


def ci_name(path: Path) -> str:
    return path.name.removesuffix("-values.yaml")


def pod_from(template_owner: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{template_owner['metadata']['name']}-admission",
            "namespace": RELEASE_NAMESPACE,
        },
        "spec": spec,
    }


def test_restricted_namespace_admits_every_pod_template_and_refuses_a_plain_pod(
    lab: Lab, chart_rbac: None
) -> None:
    # the ServiceAccount admission plugin needs the pods' ServiceAccounts (chart_rbac applies them)
    admitted = 0
    for obj in manifests():
        for spec in pod_templates(obj):
            pod = pod_from(obj, dict(spec))
            result = run_kubectl(
                lab,
                "create",
                "--dry-run=server",
                "-o",
                "name",
                "-f",
                "-",
                stdin=yaml.safe_dump(pod),
            )
            assert result.returncode == 0, result.stderr
            admitted += 1
    assert admitted == 2
    plain = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain", "namespace": RELEASE_NAMESPACE},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    refused = run_kubectl(lab, "create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(plain))
    assert refused.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in refused.stderr


# ------------------------------------------------------------------------------------ RBAC


def token_kubeconfig(lab: Lab, account: str, directory: Path) -> Path:
    """A kubeconfig holding a token minted for the ServiceAccount (`kubectl create token`)."""
    token = lab.kubectl("create", "token", account, "-n", RELEASE_NAMESPACE).strip()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "lab",
                "cluster": {
                    "server": lab.server_url,
                    "certificate-authority": str(lab.pki.ca.pair.cert_path),
                },
            }
        ],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": account}}],
        "current-context": "lab",
    }
    path = directory / f"{account}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def can_i_list(lab: Lab, kubeconfig: Path, namespace: str) -> list[str]:
    result = subprocess.run(
        [
            str(lab.control_plane.kubectl_argv()[0]),
            f"--kubeconfig={kubeconfig}",
            "auth",
            "can-i",
            "--list",
            "-n",
            namespace,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    header, *rows = [re.sub(r"\s+", " ", line).strip() for line in result.stdout.splitlines()]
    return [header, *sorted(rows)]  # the server's rule order is not part of the contract


@pytest.mark.parametrize("account", SERVICE_ACCOUNTS)
def test_can_i_list_of_each_service_account_equals_the_allow_list(
    lab: Lab, chart_rbac: None, account: str, tmp_path: Path
) -> None:
    kubeconfig = token_kubeconfig(lab, account, tmp_path)
    whoami = subprocess.run(
        [str(lab.control_plane.kubectl_argv()[0]), f"--kubeconfig={kubeconfig}", "auth", "whoami"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert f"system:serviceaccount:{RELEASE_NAMESPACE}:{account}" in whoami
    sections = []
    for namespace in CAN_I_NAMESPACES:
        sections.append(f"## namespace {namespace}")
        sections += can_i_list(lab, kubeconfig, namespace)
    actual = "\n".join(sections) + "\n"
    allowlist = ALLOWLIST_DIR / f"{account}.txt"
    if UPDATE_ALLOWLIST:
        allowlist.write_text(actual)
    assert actual == allowlist.read_text(), (
        f"`kubectl auth can-i --list` of {account} differs from {allowlist.name}; "
        "rerun with HPA_UPDATE_RBAC_ALLOWLIST=1 after reviewing the RBAC change"
    )
