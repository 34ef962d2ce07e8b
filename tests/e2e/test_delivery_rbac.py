"""The controller and the adapter run with only the chart's RBAC, as their ServiceAccounts' own
minted tokens, through a scaling scenario in the lab.

The chart's ServiceAccounts, (Cluster)Roles and bindings are applied from manifests/hpa.yaml.
`hpa adapter` runs with the adapter's token (pod and node informers, the
extension-apiserver-authentication ConfigMap, SubjectAccessReviews), behind the chart's
APIServices for custom.metrics.k8s.io (v1beta1, v1beta2), external.metrics.k8s.io and
metrics.k8s.io, serving the lab's Prometheus series with tests/e2e/controller_lab.py's rules.
`hpa controller` runs with the controller's token (HPA, pod and workload informers, the Lease,
metrics read through the aggregation layer, /scale, /status, events) and must scale three
Deployments, one per metric type: a Pods metric (40 requests/s, 10 per pod: 4 replicas), an
External metric (30 offered requests/s, 10 per replica: 3) and CPU utilization (210 % of the
request on one pod, target 50 %, capped at 3). Neither process may log an RBAC denial.

Deviation from a cluster: both run as processes of this machine in the host network namespace;
the adapter listens on the lab's host address, which the Service's EndpointSlice names (the lab's
aggregation routing). The serving certificate comes from the lab's CA (`issue_serving_certificate`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.delivery.chart import RELEASE_NAMESPACE
from tests.e2e.controller_lab import (
    ADAPTER_API_VERSIONS,
    adapter_rules,
    cpu_utilization_metric,
    deployment_manifest,
    hpa_manifest,
    offered_load_metric,
    pods_metric,
)
from tests.e2e.test_delivery import RBAC_KINDS, manifests, restricted_namespace, token_kubeconfig
from tests.e2e.test_lab import exactly_ready
from tests.lab import aggregation
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.load_model import WorkloadProfile

pytestmark = pytest.mark.e2e

__all__ = ["restricted_namespace"]  # the fixture, shared with tests/e2e/test_delivery.py

NAMESPACE = "e2e-delivery-rbac"
ADAPTER = "hpa-adapter"
CONTROLLER = "hpa-controller"
RBAC_DENIAL = f'is forbidden: User "system:serviceaccount:{RELEASE_NAMESPACE}:'
TIMEOUT_SECONDS = 120.0
# name -> (metric, requests/s offered, maxReplicas, replicas expected)
WORKLOADS: dict[str, tuple[dict[str, Any], int, int, int]] = {
    "web": (pods_metric("http_requests_per_second", "10"), 40, 5, 4),
    "ext": (offered_load_metric("ext", "10"), 30, 5, 3),
    "cpu": (cpu_utilization_metric(50), 20, 3, 3),
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


def test_controller_and_adapter_scale_on_every_metric_type_with_only_the_chart_rbac(
    lab: Lab, restricted_namespace: str, tmp_path: Path
) -> None:
    assert lab.netns is not None
    lab.apply([obj for obj in manifests() if obj["kind"] in RBAC_KINDS])
    lab.kubectl("create", "namespace", NAMESPACE)
    for name in WORKLOADS:
        lab.add_workload(
            WorkloadProfile(NAMESPACE, name, {"app": name}, cpu_per_request_milli=10), rps=0
        )
        lab.apply([deployment_manifest(name, NAMESPACE, replicas=1)])

    address = lab.netns.host_ip
    port = free_port(address)
    cert, key = lab.issue_serving_certificate(ADAPTER, RELEASE_NAMESPACE)
    rules = tmp_path / "config.yaml"
    rules.write_text(adapter_rules(window_seconds=10))
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
            api_versions=ADAPTER_API_VERSIONS,
            ca_path=lab.pki.ca.pair.cert_path,
        )
        if obj["kind"] != "Namespace"  # keeps the restricted namespace's labels
    ]
    api_services = [f"{version}.{group}" for group, version in ADAPTER_API_VERSIONS]
    try:
        with running(adapter_argv, adapter_log):
            lab.apply(registration)
            lab.wait_for(
                lambda: all(lab.api_service_available(name) for name in api_services),
                what=f"{api_services} Available (adapter log: {adapter_log})",
                timeout_seconds=TIMEOUT_SECONDS,
            )
            for name, (_, rps, _, _) in WORKLOADS.items():
                lab.set_load(NAMESPACE, name, rps)
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
                lab.apply(
                    [
                        hpa_manifest(
                            name, NAMESPACE, min_replicas=1, max_replicas=top, metrics=[spec]
                        )
                        for name, (spec, _, top, _) in WORKLOADS.items()
                    ]
                )
                for name, (_, _, _, expected) in WORKLOADS.items():
                    lab.wait_for(
                        functools.partial(exactly_ready, lab, NAMESPACE, name, expected),
                        what=f"the controller to scale {name} to {expected} Ready pods",
                        timeout_seconds=TIMEOUT_SECONDS,
                    )
                    lab.wait_for(
                        functools.partial(status_settled, lab, name, expected),
                        what=f"{name}: status.currentReplicas {expected}, ScalingActive True",
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
                if RBAC_DENIAL in line
            ]
            assert forbidden == []
    except Exception as error:
        logs = f"controller log:\n{tail(controller_log)}\n\nadapter log:\n{tail(adapter_log)}"
        raise AssertionError(logs) from error
    finally:
        for name in WORKLOADS:
            lab.set_load(NAMESPACE, name, 0)
        lab.kubectl("delete", "apiservice", *api_services, "--ignore-not-found")
        lab.kubectl("delete", "hpa", "--all", "-n", NAMESPACE, "--ignore-not-found")


def status_settled(lab: Lab, name: str, replicas: int) -> bool:
    status = lab.kubectl_json("get", "hpa", name, "-n", NAMESPACE).get("status", {})
    conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
    return bool(
        conditions.get("ScalingActive") == "True" and status.get("currentReplicas") == replicas
    )
