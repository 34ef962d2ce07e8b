"""Shared setup of the lab e2e tests of the VPA admission webhook: the VPA CRD, a serving
certificate for loopback, ``hpa vpa admission`` and upstream's admission-controller v1.8.1 as lab
components, and an HTTPS client that posts AdmissionReviews to either.

Upstream counterpart: the VPA e2e suite's setup (``vertical-pod-autoscaler/e2e``: the CRDs of
``deploy/vpa-v1-crd-gen.yaml``, the admission controller started with its certificates). Here both
webhooks are processes of the lab on 127.0.0.1, with certificates from the lab's CA.
"""

from __future__ import annotations

import http.client
import json
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.e2e.vpa_admission_cases import Vpa
from tests.hpa.api.data import VPA_DATA
from tests.lab import vpa_upstream
from tests.lab.controlplane import free_port
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.pki import KeyPair, issue_certificate
from tests.lab.process import Component

VPA_CRD = "verticalpodautoscalers.autoscaling.k8s.io"
LOOPBACK = "127.0.0.1"


def install_vpa_crds(lab: Lab) -> None:
    """Upstream's ``deploy/vpa-v1-crd-gen.yaml`` (VPAs and checkpoints), once Established."""
    lab.kubectl("apply", "--server-side", "-f", str(VPA_DATA / "vpa-v1-crd-gen.yaml"))
    lab.kubectl("wait", "--for=condition=Established", f"crd/{VPA_CRD}", "--timeout=60s")


def write_vpa_statuses(lab: Lab, vpas: Sequence[Vpa]) -> None:
    """Each VPA's recommendation into its ``status`` subresource (as a recommender would)."""
    for vpa in vpas:
        status = vpa.status()
        if status is None:
            continue
        lab.kubectl(
            "patch",
            "verticalpodautoscaler",
            vpa.name,
            "-n",
            vpa.workload.namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": status}),
        )


def write_recommendation(
    lab: Lab, namespace: str, name: str, target: dict[str, str], *, container: str = "app"
) -> None:
    """One container's recommendation (target = both bounds) into a VPA's ``status``."""
    entry = {
        "containerName": container,
        "target": target,
        "lowerBound": target,
        "upperBound": target,
    }
    status = {"status": {"recommendation": {"containerRecommendations": [entry]}}}
    lab.kubectl(
        "patch",
        "verticalpodautoscaler",
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )


def loopback_certificate(lab: Lab, name: str) -> KeyPair:
    """A serving certificate of the lab's CA for 127.0.0.1 (kube-apiserver and the tests)."""
    return issue_certificate(
        lab.pki.ca,
        lab.work_dir / "pki" / name,
        common_name=name,
        dns_names=("localhost",),
        ip_addresses=(LOOPBACK,),
        server=True,
    )


@dataclass
class Webhook:
    """A running admission webhook: its lab component and its HTTPS port on 127.0.0.1."""

    component: Component
    port: int
    operations_port: int

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}/"


def start_ours(
    lab: Lab, name: str, pair: KeyPair, *, lease_name: str, extra_flags: Sequence[str] = ()
) -> Webhook:
    """``hpa vpa admission`` with the lab's admin kubeconfig (its own status Lease name, so it
    never fights upstream's admission controller over one). Run as ``python -m hpa`` from the
    checkout, so the code under test is this tree's whatever the venv's ``hpa`` script points at."""
    port, operations = free_port(), free_port()
    argv = [
        sys.executable,
        "-m",
        "hpa",
        "vpa",
        "admission",
        f"--kubeconfig={lab.kubeconfig}",
        f"--port={port}",
        f"--address={LOOPBACK}:{operations}",
        f"--tls-cert-file={pair.cert_path}",
        f"--tls-private-key={pair.key_path}",
        f"--status-lease-name={lease_name}",
        "--status-lease-namespace=kube-system",
        *extra_flags,
    ]
    return Webhook(lab.group.start(name, argv, cwd=REPO_ROOT), port, operations)


def start_upstream(lab: Lab, pair: KeyPair) -> Webhook:
    port, operations = free_port(), free_port()
    config = vpa_upstream.AdmissionControllerConfig(
        kubeconfig=lab.kubeconfig,
        tls_cert_file=pair.cert_path,
        tls_private_key=pair.key_path,
        client_ca_file=lab.pki.ca.pair.cert_path,
        port=port,
        address=f"{LOOPBACK}:{operations}",
    )
    component = vpa_upstream.start_admission_controller(lab.group, config)
    return Webhook(component, port, operations)


def ready(webhook: Webhook) -> bool:
    """Our ``/readyz`` (every informer listed)."""
    url = f"http://{LOOPBACK}:{webhook.operations_port}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


class ReviewClient:
    """POSTs AdmissionReviews to one webhook over one kept-alive HTTPS connection, trusting the
    lab's CA, as kube-apiserver does."""

    def __init__(self, lab: Lab, port: int) -> None:
        self._context = ssl.create_default_context(cafile=str(lab.pki.ca.pair.cert_path))
        self._port = port
        self._connection: http.client.HTTPSConnection | None = None

    def post(self, review: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(review).encode()
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = http.client.HTTPSConnection(
                    LOOPBACK, self._port, context=self._context, timeout=10
                )
            try:
                self._connection.request(
                    "POST", "/", body=body, headers={"Content-Type": "application/json"}
                )
                response = self._connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.status != 200:
                raise OSError(f"webhook answered {response.status}: {data[:200]!r}")
            answer: dict[str, Any] = json.loads(data)
            return answer
        raise AssertionError("unreachable")

    def try_post(self, review: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.post(review)
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
