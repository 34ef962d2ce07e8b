"""End to end: ``RecommendationQuery`` through kube-apiserver's aggregation layer.

``hpa vpa admission --recommendation-api-port`` serves ``recommendation.hpa.dev/v1alpha1`` on the
host end of the lab's veth pair, registered by its own APIService; kube-apiserver authenticates
the user, proxies with its front-proxy certificate, and the server asks for a
SubjectAccessReview of ``create recommendationqueries``. The VPA's recommendation is written by
the test (no recommender runs).

- the admin's ``kubectl create -f query.yaml -o yaml`` for a pod of a VPA-managed Deployment
  gets the recommendation, capped by the VPA's policy;
- a user without RBAC for ``recommendationqueries`` gets 403 (Forbidden).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.controller_lab import deployment_manifest, free_port
from tests.e2e.vpa_lab import install_vpa_crds, write_recommendation
from tests.lab import aggregation
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.pki import issue_certificate, write_kubeconfig

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-recommendation"
SERVER = "hpa-recommendation"
SERVER_NAMESPACE = "hpa-recommendation"
API_SERVICE = "v1alpha1.recommendation.hpa.dev"


@pytest.fixture(scope="module")
def served(lab: Lab) -> Iterator[Lab]:
    assert lab.netns is not None
    install_vpa_crds(lab)
    lab.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    cert, key = lab.issue_serving_certificate(SERVER, SERVER_NAMESPACE)
    host = lab.netns.host_ip
    port = free_port(host)
    argv = [
        sys.executable,
        "-m",
        "hpa",
        "vpa",
        "admission",
        f"--kubeconfig={lab.kubeconfig}",
        f"--port={free_port(host)}",
        f"--address=127.0.0.1:{free_port('127.0.0.1')}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key={key}",
        f"--recommendation-api-port={port}",
        "--status-lease-name=hpa-recommendation-e2e",
        "--status-lease-namespace=kube-system",
    ]
    component = lab.group.start(SERVER, argv, cwd=REPO_ROOT)
    lab.apply(
        aggregation.manifests(
            name=SERVER,
            namespace=SERVER_NAMESPACE,
            address=host,
            target_port=port,
            api_versions=[("recommendation.hpa.dev", "v1alpha1")],
            ca_path=lab.pki.ca.pair.cert_path,
        )
    )
    try:
        lab.wait_for(
            lambda: lab.api_service_available(API_SERVICE),
            what=f"APIService {API_SERVICE} Available",
            timeout_seconds=60,
        )
        yield lab
    finally:
        lab.kubectl("delete", "apiservice", API_SERVICE, "--ignore-not-found")
        lab.group.end(component.name)
        lab.kubectl("delete", "namespace", NAMESPACE, SERVER_NAMESPACE, "--wait=false")


def _vpa(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "updatePolicy": {"updateMode": "Recreate"},
            "resourcePolicy": {
                "containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": "300m"}}]
            },
        },
    }


def _query_file(lab: Lab, pod: dict[str, Any]) -> Path:
    path = lab.work_dir / "recommendation-query.yaml"
    document = {
        "apiVersion": "recommendation.hpa.dev/v1alpha1",
        "kind": "RecommendationQuery",
        "metadata": {"name": "what-for-web", "namespace": NAMESPACE},
        "spec": {"pod": {"metadata": pod["metadata"], "spec": pod["spec"]}},
    }
    path.write_text(yaml.safe_dump(document))
    return path


def test_kubectl_create_returns_the_recommendation_and_403_without_rbac(served: Lab) -> None:
    lab, name = served, "web"
    lab.apply([deployment_manifest(name, NAMESPACE, replicas=1), _vpa(name)])
    write_recommendation(lab, NAMESPACE, name, {"cpu": "500m", "memory": "300Mi"})

    def pods() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = lab.kubectl_json(
            "get", "pods", "-n", NAMESPACE, "-l", f"app={name}"
        )["items"]
        return items

    lab.wait_for(lambda: bool(pods()), what="a pod of the Deployment")
    query = _query_file(lab, pods()[0])

    def answered() -> dict[str, Any] | None:
        answer: dict[str, Any] = yaml.safe_load(
            lab.kubectl("create", "-f", str(query), "-o", "yaml")
        )
        status = answer.get("status") or {}
        return answer if "recommendation" in status else None

    lab.wait_for(lambda: answered() is not None, what="the query answered with a recommendation")
    answer = answered()
    assert answer is not None
    assert answer["status"]["verticalPodAutoscaler"] == name
    # the target's cpu capped to the policy's maxAllowed
    assert answer["status"]["recommendation"]["containerRecommendations"] == [
        {
            "containerName": "app",
            "requests": {"cpu": "300m", "memory": "300Mi"},
            "notes": ["cpu capped to maxAllowed"],
        }
    ]

    pair = issue_certificate(
        lab.pki.ca, lab.work_dir / "pki" / "mallory", common_name="mallory", client=True
    )
    kubeconfig = write_kubeconfig(
        lab.work_dir / "mallory.kubeconfig",
        server=lab.server_url,
        ca_path=lab.pki.ca.pair.cert_path,
        client=pair,
        user="mallory",
    )
    with pytest.raises(subprocess.CalledProcessError) as refused:
        lab.kubectl(f"--kubeconfig={kubeconfig}", "create", "-f", str(query), "-o", "yaml")
    assert "Forbidden" in refused.value.stderr, refused.value.stderr
    assert 'cannot create resource "recommendationqueries"' in refused.value.stderr
