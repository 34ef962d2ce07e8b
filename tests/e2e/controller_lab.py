"""Shared setup of the lab e2e tests that run ``hpa adapter`` and ``hpa controller``.

Upstream counterpart: the HPA e2e framework of kubernetes/kubernetes (``test/e2e/autoscaling``:
``ResourceConsumer``, ``WaitForReplicas``) and prometheus-adapter's deployment manifests. Here the
workloads are kwok pods whose usage the lab's workload exporter invents, Prometheus scrapes it,
``hpa adapter`` serves the metrics APIs behind kube-apiserver's aggregator, and the controller
under test is a real subprocess with the lab's kubeconfig. Deliberate deviations: observation is
through the API (watches of Deployments and HPAs, the audit log), never through our modules.

Pieces:
- ``start_adapter`` / ``stop_adapter``: ``hpa adapter`` on the host end of the lab's veth pair,
  with the metrics APIServices routed to it (first written inline in
  tests/e2e/test_adapter_aggregation.py).
- ``start_controller``: ``hpa controller`` as a child process of the lab (its log is in the lab's
  failure reports); ``controller_kubeconfig`` gives each replica its own user, so the audit log
  tells their writes apart.
- ``ApiReader`` (blocking GETs with the admin's certificate) and ``ObjectWatch`` (a list + watch
  thread recording every version of the objects of a collection with its arrival time).
- manifests: ``deployment_manifest``, ``hpa_manifest`` and metric specs.
- ``audit_writes``: the writes recorded in the API server's audit log.
"""

from __future__ import annotations

import datetime as dt
import functools
import http.client
import json
import socket
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.lab import aggregation
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.pki import issue_certificate, write_kubeconfig
from tests.lab.process import Component, tail

ADAPTER_NAME = "hpa-adapter"
ADAPTER_NAMESPACE = "hpa-adapter"
ADAPTER_API_VERSIONS = [
    ("custom.metrics.k8s.io", "v1beta2"),
    ("custom.metrics.k8s.io", "v1beta1"),
    ("external.metrics.k8s.io", "v1beta1"),
    ("metrics.k8s.io", "v1beta1"),
]
ADAPTER_TIMEOUT_SECONDS = 120.0
HPA_BINARY = Path(sys.executable).parent / "hpa"


def adapter_rules(*, window_seconds: int, cpu_gauge: bool = False) -> str:
    """prometheus-adapter rules over the exporter's series: ``pods/http_requests_per_second``
    (a rate), the external gauge ``lab_workload_offered_load_rps`` summed by workload, and CPU and
    memory for metrics.k8s.io; every rate and the resource window span ``window_seconds``. With
    ``cpu_gauge`` the CPU is the exporter's ``lab_container_cpu_usage_cores`` (workloads added
    with ``cpu_gauge``) instead of a rate of the counter: a load step is then one metric step."""
    window = f"{window_seconds}s"
    cpu = (
        "sum(lab_container_cpu_usage_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
        if cpu_gauge
        else f"sum(rate(container_cpu_usage_seconds_total{{<<.LabelMatchers>>}}[{window}])) "
        "by (<<.GroupBy>>)"
    )
    return f"""
rules:
- seriesQuery: 'http_requests_total{{namespace!="",pod!=""}}'
  resources:
    overrides:
      namespace: {{resource: namespace}}
      pod: {{resource: pod}}
  name: {{matches: "^(.*)_total$", as: "${{1}}_per_second"}}
  metricsQuery: 'sum(rate(<<.Series>>{{<<.LabelMatchers>>}}[{window}])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'lab_workload_offered_load_rps{{namespace!=""}}'
  resources:
    overrides:
      namespace: {{resource: namespace}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (workload)'
resourceRules:
  cpu:
    containerQuery: >-
      {cpu}
    nodeQuery: >-
      {cpu}
    resources:
      overrides:
        namespace: {{resource: namespace}}
        pod: {{resource: pod}}
        node: {{resource: node}}
    containerLabel: container
  memory:
    containerQuery: >-
      sum(container_memory_working_set_bytes{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)
    nodeQuery: >-
      sum(container_memory_working_set_bytes{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)
    resources:
      overrides:
        namespace: {{resource: namespace}}
        pod: {{resource: pod}}
        node: {{resource: node}}
    containerLabel: container
  window: {window}
"""


ADAPTER_RULES = adapter_rules(window_seconds=30)
"""The rules of tests/e2e/test_adapter_aggregation.py (30 s windows)."""


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


# ---------------------------------------------------------------------------------- adapter


def start_adapter(
    lab: Lab,
    work: Path,
    *,
    rules: str = ADAPTER_RULES,
    relist_interval: str = "5s",
    kubeconfig: Path | None = None,
    extra_flags: tuple[str, ...] = (),
) -> Component:
    """Start ``hpa adapter`` on the host end of the lab's veth pair and route the metrics
    APIServices to it; returns once every APIService is Available. ``kubeconfig`` (default: the
    lab's admin) is the adapter's identity towards the API server, e.g. a ServiceAccount token's
    (tests/e2e/test_delivery_rbac.py)."""
    assert lab.netns is not None
    config = work / "config.yaml"
    config.write_text(rules)
    cert, key = lab.issue_serving_certificate(ADAPTER_NAME, ADAPTER_NAMESPACE)
    host = lab.netns.host_ip
    port = free_port(host)
    argv = [
        str(HPA_BINARY),
        "adapter",
        f"--config={config}",
        f"--prometheus-url={lab.prometheus_url}",
        f"--bind-address={host}",
        f"--secure-port={port}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key-file={key}",
        f"--kubeconfig={kubeconfig or lab.kubeconfig}",
        f"--metrics-relist-interval={relist_interval}",
        *extra_flags,
    ]
    component = lab.group.start(ADAPTER_NAME, argv, cwd=REPO_ROOT)
    lab.apply(
        aggregation.manifests(
            name=ADAPTER_NAME,
            namespace=ADAPTER_NAMESPACE,
            address=host,
            target_port=port,
            api_versions=ADAPTER_API_VERSIONS,
            ca_path=lab.pki.ca.pair.cert_path,
        )
    )
    for group, version in ADAPTER_API_VERSIONS:
        name = f"{version}.{group}"
        lab.wait_for(
            functools.partial(lab.api_service_available, name),
            what=f"APIService {name} Available",
            timeout_seconds=ADAPTER_TIMEOUT_SECONDS,
        )
    return component


def stop_adapter(lab: Lab, component: Component) -> None:
    """Unregister the APIServices and end the adapter (the lab's later waits do not count its
    exit as a crash)."""
    lab.kubectl(
        "delete",
        "apiservice",
        *(f"{version}.{group}" for group, version in ADAPTER_API_VERSIONS),
        "--ignore-not-found",
    )
    lab.group.end(component.name)


# ---------------------------------------------------------------------------------- controller


def controller_kubeconfig(
    lab: Lab,
    user: str,
    *,
    server: str | None = None,
    groups: tuple[str, ...] = ("system:masters",),
) -> Path:
    """A kubeconfig for ``user`` in ``groups`` (``system:masters``): one per controller replica,
    so the audit log names the replica behind every write. ``server`` (default: the lab's API
    server) is where it points, e.g. a fault proxy in front of the API server."""
    pair = issue_certificate(
        lab.pki.ca,
        lab.work_dir / "pki" / user,
        common_name=user,
        organizations=groups,
        client=True,
    )
    return write_kubeconfig(
        lab.work_dir / f"{user}.kubeconfig",
        server=server or lab.server_url,
        ca_path=lab.pki.ca.pair.cert_path,
        client=pair,
        user=user,
    )


def start_controller(
    lab: Lab, name: str, *, kubeconfig: Path | None = None, flags: list[str]
) -> Component:
    """``hpa controller --kubeconfig=... --port=0 <flags>`` as a child of the lab."""
    argv = [
        str(HPA_BINARY),
        "controller",
        f"--kubeconfig={kubeconfig or lab.kubeconfig}",
        "--port=0",
        *flags,
    ]
    return lab.group.start(name, argv, cwd=REPO_ROOT)


def report(capsys: pytest.CaptureFixture[str], text: str) -> None:
    """Print a measurement to the terminal even while pytest captures output (the issue asks
    for the recorded sequences in the test output, not only on failure)."""
    with capsys.disabled():
        print(f"\n{text}", flush=True)


def component_log(component: Component, *, lines: int = 60) -> str:
    return f"----- {component.name} log, last {lines} lines -----\n" + tail(
        component.log_path, lines=lines
    )


# ---------------------------------------------------------------------------------- manifests


def deployment_manifest(
    name: str, namespace: str, *, replicas: int, cpu_request: str = "100m"
) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": cpu_request, "memory": "64Mi"}},
                        }
                    ]
                },
            },
        },
    }


def cpu_utilization_metric(percent: int) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": percent},
        },
    }


def pods_metric(name: str, average_value: str) -> dict[str, Any]:
    return {
        "type": "Pods",
        "pods": {
            "metric": {"name": name},
            "target": {"type": "AverageValue", "averageValue": average_value},
        },
    }


def offered_load_metric(workload: str, average_value: str) -> dict[str, Any]:
    """External ``lab_workload_offered_load_rps{workload=...}`` per replica: a gauge, so the
    desired count is ``ceil(load / average_value)`` whatever the pods' readiness."""
    return {
        "type": "External",
        "external": {
            "metric": {
                "name": "lab_workload_offered_load_rps",
                "selector": {"matchLabels": {"workload": workload}},
            },
            "target": {"type": "AverageValue", "averageValue": average_value},
        },
    }


def hpa_manifest(
    name: str,
    namespace: str,
    *,
    min_replicas: int,
    max_replicas: int,
    metrics: list[dict[str, Any]],
    behavior: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "metrics": metrics,
    }
    if behavior is not None:
        spec["behavior"] = behavior
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def describe_hpas(lab: Lab, namespace: str) -> str:
    try:
        return lab.kubectl("describe", "hpa", "-n", namespace)
    except Exception as error:  # noqa: BLE001 - a failure report must not fail
        return f"(kubectl describe hpa failed: {error!r})"


# ---------------------------------------------------------------------------------- API access


class ApiReader:
    """Blocking GETs against the lab's kube-apiserver as the admin (no kubectl process)."""

    def __init__(self, lab: Lab) -> None:
        self.server_url = lab.server_url
        self.tls: ssl.SSLContext = lab.control_plane.admin_tls

    def open(self, path: str, *, timeout_seconds: float) -> Any:
        request = urllib.request.Request(f"{self.server_url}{path}")  # noqa: S310
        return urllib.request.urlopen(request, context=self.tls, timeout=timeout_seconds)  # noqa: S310

    def get(self, path: str) -> Any:
        with self.open(path, timeout_seconds=10) as response:
            return json.loads(response.read())

    def try_get(self, path: str) -> Any:
        """The answer, or None on any HTTP or transport error (callers poll)."""
        try:
            return self.get(path)
        except (urllib.error.URLError, OSError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Seen:
    """One version of an object as a watch delivered it, with its arrival (time.monotonic)."""

    at_seconds: float
    kind: str  # ADDED, MODIFIED, DELETED
    object: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.object["metadata"]["name"])


class ObjectWatch:
    """List + watch of one collection (``/apis/apps/v1/namespaces/x/deployments``) in a daemon
    thread; every version is kept with its arrival time. Resumes from the last resourceVersion,
    relists on 410 Gone or any error."""

    def __init__(self, reader: ApiReader, path: str) -> None:
        self._reader = reader
        self._path = path
        self._seen: list[Seen] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listed = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch {path}", daemon=True)

    def start(self) -> ObjectWatch:
        self._thread.start()
        if not self._listed.wait(30):
            raise TimeoutError(f"could not list {self._path}")
        return self

    def stop(self) -> None:
        self._stopped.set()

    def seen(self, name: str | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self._seen if name is None or s.name == name]

    def latest(self, name: str) -> dict[str, Any] | None:
        versions = self.seen(name)
        return versions[-1].object if versions else None

    def _record(self, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._seen.append(Seen(time.monotonic(), kind, obj))

    def _run(self) -> None:
        version = ""
        while not self._stopped.is_set():
            try:
                if not version:
                    listed = self._reader.get(self._path)
                    for item in listed.get("items", []):
                        self._record("ADDED", item)
                    version = listed["metadata"]["resourceVersion"]
                    self._listed.set()
                version = self._watch(version)
            except (
                urllib.error.URLError,
                http.client.HTTPException,
                OSError,
                ValueError,
                KeyError,
            ):
                version = ""  # includes the lab going away under a stopped watch
                self._stopped.wait(0.2)

    def _watch(self, version: str) -> str:
        """Follow the watch from ``version``; return the version to resume from ("" = relist)."""
        query = urllib.parse.urlencode(
            {
                "watch": "1",
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "20",
            }
        )
        with self._reader.open(f"{self._path}?{query}", timeout_seconds=30) as response:
            for line in response:
                if self._stopped.is_set():
                    return version
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return ""
                version = obj["metadata"]["resourceVersion"]
                if kind != "BOOKMARK":
                    self._record(kind, obj)
        return version


def replica_steps(watch: ObjectWatch, name: str) -> list[tuple[float, int]]:
    """A Deployment's ``spec.replicas`` over time: (arrival, value) at each change."""
    steps: list[tuple[float, int]] = []
    for seen in watch.seen(name):
        replicas = int(seen.object["spec"].get("replicas", 1))
        if not steps or steps[-1][1] != replicas:
            steps.append((seen.at_seconds, replicas))
    return steps


def desired_steps(watch: ObjectWatch, name: str) -> list[tuple[float, int]]:
    """An HPA's ``status.desiredReplicas`` over time: (arrival, value) at each change (an HPA
    not yet reconciled has no status and is skipped)."""
    steps: list[tuple[float, int]] = []
    for seen in watch.seen(name):
        desired = (seen.object.get("status") or {}).get("desiredReplicas")
        if desired is None:
            continue
        if not steps or steps[-1][1] != int(desired):
            steps.append((seen.at_seconds, int(desired)))
    return steps


def condition(hpa: dict[str, Any] | None, kind: str) -> tuple[str, str]:
    """(status, reason) of the HPA's condition ``kind``, ("", "") when absent."""
    for found in ((hpa or {}).get("status") or {}).get("conditions") or ():
        if found.get("type") == kind:
            return str(found.get("status", "")), str(found.get("reason", ""))
    return "", ""


def first_time(
    watch: ObjectWatch, name: str, predicate: Callable[[dict[str, Any]], bool], *, after: float
) -> float | None:
    """Arrival of the first version of ``name`` after ``after`` that satisfies ``predicate``."""
    for seen in watch.seen(name):
        if seen.at_seconds >= after and predicate(seen.object):
            return seen.at_seconds
    return None


# ---------------------------------------------------------------------------------- audit log


@dataclass(frozen=True, slots=True)
class AuditWrite:
    """One write request as kube-apiserver's audit log recorded it (stage ResponseComplete)."""

    user: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    received: dt.datetime
    completed: dt.datetime

    @property
    def target(self) -> str:
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{self.resource}{sub} {self.namespace}/{self.name}"


def _timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def audit_writes(path: Path, *, users: set[str]) -> Iterator[AuditWrite]:
    """The completed writes of ``users`` in a JSON audit log, in log order."""
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("stage") != "ResponseComplete":
                continue
            user = event.get("user", {}).get("username", "")
            if user not in users:
                continue
            ref = event.get("objectRef") or {}
            yield AuditWrite(
                user=user,
                verb=event.get("verb", ""),
                resource=ref.get("resource", ""),
                subresource=ref.get("subresource", ""),
                namespace=ref.get("namespace", ""),
                name=ref.get("name", ""),
                code=int((event.get("responseStatus") or {}).get("code", 0)),
                received=_timestamp(event["requestReceivedTimestamp"]),
                completed=_timestamp(event["stageTimestamp"]),
            )


def scale_writes(writes: list[AuditWrite], name: str) -> list[AuditWrite]:
    """The writes to Deployment ``name``'s ``/scale`` among ``writes``."""
    return [
        w
        for w in writes
        if w.resource == "deployments" and w.subresource == "scale" and w.name == name
    ]
