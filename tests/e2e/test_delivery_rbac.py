"""The controller and the adapter run with only the chart's RBAC, as their ServiceAccounts' own
minted tokens, through a scaling scenario in the lab.

The chart's ServiceAccounts, (Cluster)Roles and bindings are applied from manifests/hpa.yaml.
`hpa adapter` runs with the adapter's token (pod and node informers, the
extension-apiserver-authentication ConfigMap, SubjectAccessReviews), behind the chart's
APIServices for custom.metrics.k8s.io, serving a Pods metric from the lab's Prometheus.
`hpa controller` runs with the controller's token (HPA and pod informers, the Lease, the metric
read through the aggregation layer, /scale, /status, events) and must scale the Deployment from 1
to 4 replicas on 40 requests/s with a target of 10 per pod.

Deviation from a cluster: both run as processes of this machine in the host network namespace;
the adapter listens on the lab's host address, which the Service's EndpointSlice names (the lab's
aggregation routing). The serving certificate comes from the lab's CA (`issue_serving_certificate`).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.delivery.chart import RELEASE_NAMESPACE
from tests.e2e.test_delivery import RBAC_KINDS, manifests, restricted_namespace, token_kubeconfig
from tests.e2e.test_lab import deployment, exactly_ready
from tests.lab import aggregation
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.load_model import WorkloadProfile

pytestmark = pytest.mark.e2e

__all__ = ["restricted_namespace"]  # the fixture, shared with tests/e2e/test_delivery.py

NAMESPACE = "e2e-delivery-rbac"
ADAPTER = "hpa-adapter"
CONTROLLER = "hpa-controller"
CUSTOM_METRICS_VERSIONS = [
    ("custom.metrics.k8s.io", "v1beta2"),
    ("custom.metrics.k8s.io", "v1beta1"),
]
PROFILE = WorkloadProfile(
    namespace=NAMESPACE,
    workload="web",
    selector={"app": "web"},
    cpu_per_request_milli=10,
    base_cpu_milli=10,
)
RULES = {
    "rules": [
        {
            "seriesQuery": 'http_requests_total{namespace!="",pod!=""}',
            "resources": {
                "overrides": {
                    "namespace": {"resource": "namespace"},
                    "pod": {"resource": "pod"},
                }
            },
            "name": {"matches": "^(.*)_total$", "as": "${1}_per_second"},
            "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[10s])) by (<<.GroupBy>>)",
        }
    ]
}
TIMEOUT_SECONDS = 120.0


def requests_hpa() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "http_requests_per_second"},
                        "target": {"type": "AverageValue", "averageValue": "10"},
                    },
                }
            ],
        },
    }


def free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def running(argv: list[str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return "(not started)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def test_controller_and_adapter_scale_a_deployment_with_only_the_chart_rbac(
    lab: Lab, restricted_namespace: str, tmp_path: Path
) -> None:
    assert lab.netns is not None
    lab.apply([obj for obj in manifests() if obj["kind"] in RBAC_KINDS])
    lab.kubectl("create", "namespace", NAMESPACE)
    lab.add_workload(PROFILE, rps=0)
    lab.apply([deployment("web", NAMESPACE, 1)])

    address = lab.netns.host_ip
    port = free_port(address)
    cert, key = lab.issue_serving_certificate(ADAPTER, RELEASE_NAMESPACE)
    rules = tmp_path / "config.yaml"
    rules.write_text(yaml.safe_dump(RULES))
    adapter_log, controller_log = tmp_path / "adapter.log", tmp_path / "controller.log"
    adapter_argv = [
        sys.executable,
        "-m",
        "hpa",
        "adapter",
        f"--config={rules}",
        f"--bind-address={address}",
        f"--secure-port={port}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key-file={key}",
        f"--prometheus-url={lab.prometheus_url}",
        "--metrics-relist-interval=5s",
        f"--kubeconfig={token_kubeconfig(lab, ADAPTER, tmp_path)}",
    ]
    controller_argv = [
        sys.executable,
        "-m",
        "hpa",
        "controller",
        f"--kubeconfig={token_kubeconfig(lab, CONTROLLER, tmp_path)}",
        f"--leader-elect-resource-namespace={RELEASE_NAMESPACE}",
        f"--leader-elect-resource-name={CONTROLLER}",
        "--horizontal-pod-autoscaler-sync-period=2s",
        "--port=0",
    ]
    registration = [
        obj
        for obj in aggregation.manifests(
            name=ADAPTER,
            namespace=RELEASE_NAMESPACE,
            address=address,
            target_port=port,
            api_versions=CUSTOM_METRICS_VERSIONS,
            ca_path=lab.pki.ca.pair.cert_path,
        )
        if obj["kind"] != "Namespace"  # keeps the restricted namespace's labels
    ]
    api_services = [f"{version}.{group}" for group, version in CUSTOM_METRICS_VERSIONS]
    try:
        with running(adapter_argv, adapter_log):
            lab.apply(registration)
            lab.wait_for(
                lambda: all(lab.api_service_available(name) for name in api_services),
                what=f"{api_services} Available (adapter log: {adapter_log})",
                timeout_seconds=TIMEOUT_SECONDS,
            )
            lab.set_load(NAMESPACE, "web", 40)
            metric = (
                f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NAMESPACE}"
                "/pods/*/http_requests_per_second"
            )
            lab.wait_for(
                lambda: bool(json.loads(lab.kubectl("get", "--raw", metric)).get("items")),
                what=f"the adapter to serve {metric}",
                timeout_seconds=TIMEOUT_SECONDS,
            )
            with running(controller_argv, controller_log):
                lab.apply([requests_hpa()])
                lab.wait_for(
                    lambda: exactly_ready(lab, NAMESPACE, "web", 4),
                    what="the controller to scale web to 4 Ready pods",
                    timeout_seconds=TIMEOUT_SECONDS,
                )
                lab.wait_for(
                    lambda: scaling_active(lab) and current_replicas(lab) == 4,
                    what="status.currentReplicas 4 and ScalingActive True",
                    timeout_seconds=TIMEOUT_SECONDS,
                )
                reasons = lab.kubectl(
                    "get",
                    "events",
                    "-n",
                    NAMESPACE,
                    "--field-selector=involvedObject.kind=HorizontalPodAutoscaler",
                    "-o",
                    "jsonpath={.items[*].reason}",
                ).split()
                assert "SuccessfulRescale" in reasons
                holder = lab.kubectl(
                    "get",
                    "lease",
                    CONTROLLER,
                    "-n",
                    RELEASE_NAMESPACE,
                    "-o",
                    "jsonpath={.spec.holderIdentity}",
                )
                assert holder
            forbidden = [
                line
                for path in (adapter_log, controller_log)
                for line in path.read_text(errors="replace").splitlines()
                if "forbidden" in line.lower()
            ]
            assert forbidden == []
    except Exception as error:
        logs = f"controller log:\n{tail(controller_log)}\n\nadapter log:\n{tail(adapter_log)}"
        raise AssertionError(logs) from error
    finally:
        lab.set_load(NAMESPACE, "web", 0)
        for name in api_services:
            lab.kubectl("delete", "apiservice", name, "--ignore-not-found")
        lab.kubectl("delete", "hpa", "web", "-n", NAMESPACE, "--ignore-not-found")


def hpa_status(lab: Lab) -> dict[str, Any]:
    status: dict[str, Any] = lab.kubectl_json("get", "hpa", "web", "-n", NAMESPACE).get(
        "status", {}
    )
    return status


def scaling_active(lab: Lab) -> bool:
    conditions = {c["type"]: c["status"] for c in hpa_status(lab).get("conditions", [])}
    return conditions.get("ScalingActive") == "True"


def current_replicas(lab: Lab) -> int:
    return int(hpa_status(lab).get("currentReplicas", 0))
