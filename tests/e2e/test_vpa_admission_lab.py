"""The admission webhook behind a real kube-apiserver: ``hpa vpa admission`` registered with a
``MutatingWebhookConfiguration`` (``failurePolicy: Ignore``, ``timeoutSeconds: 2``, a namespace
selector that leaves out ``kube-system`` and the webhook's own namespace), reached by the API
server on 127.0.0.1 with a certificate of the lab's CA.

- A pod that kube-controller-manager creates for a VPA-managed Deployment is admitted with the
  VPA's recommended requests and upstream's annotations.
- A pod annotated ``vpa.hpa.dev/required: "true"`` that no VPA matches is refused with the message.
- With the webhook stopped, pods are still created, unchanged (fail open), the ``required`` one too:
  the annotation asks, a webhook that is down cannot enforce it.

Upstream counterpart: the VPA e2e admission tests (``vertical-pod-autoscaler/e2e/v1/
admission_controller.go``: "starts pods with new recommended request"). Deviation: the webhook is
registered by the test (upstream's ``--register-webhook`` self-registration is not implemented).
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.controller_lab import report
from tests.e2e.vpa_admission_cases import (
    Vpa,
    Workload,
    container,
    container_recommendation,
    probe_review,
)
from tests.e2e.vpa_lab import (
    ReviewClient,
    Webhook,
    install_vpa_crds,
    loopback_certificate,
    ready,
    start_ours,
    write_vpa_statuses,
)
from tests.lab.lab import Lab

pytestmark = pytest.mark.e2e

NAMESPACE = "vpa-webhook-lab"
WEBHOOK_NAMESPACE = "hpa-vpa-system"
"""The namespace the webhook would run in (excluded by the selector, as the chart does)."""
LAB_LABEL = "hpa.dev/vpa-webhook-lab"
"""Only namespaces with this label are sent to the webhook, so the session's other tests are not."""
CONFIGURATION = "hpa-vpa-admission-lab"
COMPONENT = "hpa-vpa-admission-lab"
REQUIRED = "vpa.hpa.dev/required"


@dataclass
class WebhookLab:
    lab: Lab
    webhook: Webhook
    timings: dict[str, float]


RECOMMENDATION = {"cpu": "250m", "memory": "256Mi"}
WEB = Workload(
    "web",
    NAMESPACE,
    (container("app", {"cpu": "100m", "memory": "64Mi"}, {"cpu": "200m", "memory": "128Mi"}),),
)
WEB_VPA = Vpa(
    "web-vpa",
    WEB,
    {
        "updatePolicy": {"updateMode": "Recreate"},
        "resourcePolicy": {
            "containerPolicies": [{"containerName": "*", "maxAllowed": {"cpu": "1"}}]
        },
    },
    (container_recommendation("app", RECOMMENDATION),),
)


def _configuration(lab: Lab, port: int) -> dict[str, Any]:
    ca_bundle = base64.b64encode(lab.pki.ca.pair.cert_path.read_bytes()).decode()
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION},
        "webhooks": [
            {
                "name": "vpa.hpa.dev",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Ignore",
                "timeoutSeconds": 2,
                "clientConfig": {"url": f"https://127.0.0.1:{port}/", "caBundle": ca_bundle},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods"],
                    }
                ],
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": ["kube-system", WEBHOOK_NAMESPACE],
                        },
                        {"key": LAB_LABEL, "operator": "Exists"},
                    ]
                },
            }
        ],
    }


def _replica_set(lab: Lab) -> str | None:
    items = lab.kubectl_json("get", "replicasets", "-n", NAMESPACE, "-l", "app=web")["items"]
    return str(items[0]["metadata"]["name"]) if items else None


@pytest.fixture(scope="module")
def webhook_lab(lab: Lab) -> Iterator[WebhookLab]:
    started = time.monotonic()
    install_vpa_crds(lab)
    namespaces = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {LAB_LABEL: "true"}},
        }
        for name in (NAMESPACE, WEBHOOK_NAMESPACE)
    ]
    lab.apply([*namespaces, WEB.manifest(), WEB_VPA.manifest()])
    write_vpa_statuses(lab, [WEB_VPA])
    found: list[str] = []

    def replica_set_exists() -> bool:
        name = _replica_set(lab)
        found.extend([name] if name else [])
        return name is not None

    lab.wait_for(replica_set_exists, what="the Deployment's ReplicaSet")
    lab.wait_for(
        lambda: (
            subprocess.run(
                [*lab.control_plane.kubectl_argv(), "get", "sa", "default", "-n", NAMESPACE],
                capture_output=True,
                check=False,
            ).returncode
            == 0
        ),
        what=f"the default ServiceAccount of {NAMESPACE}",
    )
    pair = loopback_certificate(lab, "vpa-admission-lab")
    webhook = start_ours(lab, COMPONENT, pair, lease_name="hpa-vpa-admission-lab")
    lab.wait_for(lambda: ready(webhook), what="hpa vpa admission /readyz")
    client = ReviewClient(lab, webhook.port)
    probe = probe_review(WEB, ("ReplicaSet", found[0]))
    lab.wait_for(
        lambda: bool(((client.try_post(probe) or {}).get("response") or {}).get("patch")),
        what="the webhook patches a probe pod of web",
    )
    client.close()
    lab.apply([_configuration(lab, webhook.port)])
    timings = {"setup": round(time.monotonic() - started, 1)}
    try:
        yield WebhookLab(lab, webhook, timings)
    finally:
        lab.kubectl("delete", "mutatingwebhookconfiguration", CONFIGURATION, "--ignore-not-found")
        if COMPONENT in lab.group.components:
            lab.group.end(COMPONENT)
        lab.kubectl("delete", "namespace", NAMESPACE, WEBHOOK_NAMESPACE, "--wait=false")


def _pods(lab: Lab) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = lab.kubectl_json("get", "pods", "-n", NAMESPACE)["items"]
    return items


def _web_pods(lab: Lab) -> list[dict[str, Any]]:
    return [p for p in _pods(lab) if p["metadata"].get("labels", {}).get("app") == "web"]


def _bare_pod(name: str, *, required: bool) -> dict[str, Any]:
    annotations = {REQUIRED: "true"} if required else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "50m"}},
                }
            ]
        },
    }


def _create(lab: Lab, pod: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*lab.control_plane.kubectl_argv(), "create", "-f", "-"],
        input=json.dumps(pod),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_a_new_pod_of_a_vpa_managed_deployment_gets_the_recommended_requests(
    webhook_lab: WebhookLab, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = webhook_lab.lab
    started = time.monotonic()
    lab.kubectl("scale", "deployment", "web", "-n", NAMESPACE, "--replicas=1")
    lab.wait_for(lambda: len(_web_pods(lab)) == 1, what="the pod of web")
    pod = _web_pods(lab)[0]
    container = pod["spec"]["containers"][0]
    assert container["resources"]["requests"] == RECOMMENDATION
    # RequestsAndLimits (the default): limits keep the template's limit/request ratio (2x)
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "512Mi"}
    annotations = pod["metadata"]["annotations"]
    assert annotations["vpaObservedContainers"] == "app"
    assert annotations["vpaUpdates"] == (
        "Pod resources updated by web-vpa: container 0: cpu request, memory request, "
        "cpu limit, memory limit"
    )
    report(
        capsys,
        f"webhook lab: setup {webhook_lab.timings['setup']} s; a Deployment pod admitted with "
        f"the recommendation in {time.monotonic() - started:.1f} s",
    )


def test_a_required_pod_without_a_vpa_is_refused_with_the_message(
    webhook_lab: WebhookLab,
) -> None:
    result = _create(webhook_lab.lab, _bare_pod("lonely", required=True))
    assert result.returncode != 0
    assert 'is annotated vpa.hpa.dev/required: "true"' in result.stderr
    assert "no VerticalPodAutoscaler matches it" in result.stderr
    plain = _create(webhook_lab.lab, _bare_pod("plain", required=False))
    assert plain.returncode == 0, plain.stderr


def test_with_the_webhook_stopped_pods_are_still_created(
    webhook_lab: WebhookLab, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = webhook_lab.lab
    lab.group.end(COMPONENT)
    started = time.monotonic()
    result = _create(lab, _bare_pod("required-while-down", required=True))
    created_seconds = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    lab.kubectl("scale", "deployment", "web", "-n", NAMESPACE, "--replicas=2")
    lab.wait_for(lambda: len(_web_pods(lab)) == 2, what="a second pod of web")
    unpatched = [
        p for p in _web_pods(lab) if "vpaUpdates" not in p["metadata"].get("annotations", {})
    ]
    assert len(unpatched) == 1
    assert unpatched[0]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "100m",
        "memory": "64Mi",
    }
    report(
        capsys,
        f"webhook lab: with the webhook down a pod was created in {created_seconds:.2f} s "
        "(failurePolicy: Ignore)",
    )
