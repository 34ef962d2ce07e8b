"""End to end: ``hpa vpa updater`` against the lab's kube-apiserver and kwok nodes.

The VPA CRDs are upstream's (``vpa-v1-crd-gen.yaml``); each VPA's ``status.recommendation`` is
written by the test (no recommender runs). The updater runs as a subprocess of this worktree's
code (``python -m hpa``), with ``--use-admission-controller-status=false`` (no webhook runs in
these tests; the guard has its own component tests).

- ``Recreate``: a PodDisruptionBudget with ``maxUnavailable: 0`` makes every eviction a 429 and no
  pod goes; without it, the first loop evicts exactly ``int(4 * 0.5) = 2`` of 4 replicas through
  the Eviction API.
- ``InPlaceOrRecreate``: a pod is resized through ``pods/resize`` and keeps its UID (no restart).
  kwok reports no container resources by itself, and kube-apiserver refuses to resize a pod whose
  running containers report none; the lab's kwok Stage ``pod-resize`` (``tests/lab/kwok.py``)
  reports the spec's resources, so every resize completes at once.
- A recommendation larger than any node: the ``UpdateDoesNotFit`` event, no eviction.
- An HPA on cpu: the resize changes memory only.
- ``updatePolicy.evictionRequirements`` read back from kube-apiserver through upstream's CRD: a
  VPA that may only shrink its pods leaves them alone while the target grows; changed to
  ``TargetHigherThanRequests`` with ``kubectl patch``, the next loops resize them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.controller_lab import deployment_manifest
from tests.e2e.vpa_lab import write_recommendation
from tests.hpa.api.data import VPA_DATA
from tests.lab.controlplane import free_port
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.process import Component

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-vpa-updater"


@pytest.fixture(scope="module")
def vpa_lab(lab: Lab) -> Iterator[Lab]:
    lab.kubectl("apply", "--server-side", "-f", str(VPA_DATA / "vpa-v1-crd-gen.yaml"))
    lab.wait_for(
        lambda: (
            "verticalpodautoscalers"
            in lab.kubectl("api-resources", "--api-group=autoscaling.k8s.io")
        ),
        what="the VPA CRD to be served",
    )
    lab.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    yield lab
    lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def deployment(name: str, *, replicas: int) -> dict[str, Any]:
    return deployment_manifest(name, NAMESPACE, replicas=replicas)


def vpa(name: str, *, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "updatePolicy": {"updateMode": mode},
        },
    }


def recommend(lab: Lab, name: str, target: dict[str, str]) -> None:
    write_recommendation(lab, NAMESPACE, name, target)


def pods(lab: Lab, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = lab.kubectl_json(
        "get", "pods", "-n", NAMESPACE, "-l", f"app={app}"
    )["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def settled(pod: dict[str, Any]) -> bool:
    """Ready, with its containers' resources reported (kwok's ``pod-resize`` stage)."""
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", ())
    )
    reported = all("resources" in c for c in status.get("containerStatuses") or [{}])
    return ready and reported


def running_pods(lab: Lab, app: str, count: int) -> list[dict[str, Any]]:
    lab.wait_for(
        lambda: sum(settled(p) for p in pods(lab, app)) == count,
        what=f"{count} ready pods of {app}",
    )
    return pods(lab, app)


def events(lab: Lab, reason: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = lab.kubectl_json("get", "events", "-n", NAMESPACE)["items"]
    return [e for e in items if e.get("reason") == reason]


def start_updater(lab: Lab, name: str, *, interval: str, flags: tuple[str, ...] = ()) -> Component:
    argv = [
        sys.executable,
        "-m",
        "hpa",
        "vpa",
        "updater",
        f"--kubeconfig={lab.kubeconfig}",
        f"--updater-interval={interval}",
        "--use-admission-controller-status=false",
        f"--address=127.0.0.1:{free_port()}",
        *flags,
    ]
    return lab.group.start(name, argv, cwd=REPO_ROOT)


def stop(lab: Lab, updater: Component, vpa_name: str) -> None:
    """End the updater and remove the VPA: without a webhook, recreated pods come back with
    their template's requests, and a later updater would evict them again."""
    lab.group.end(updater.name)
    lab.kubectl("delete", "verticalpodautoscaler", vpa_name, "-n", NAMESPACE)


def log_has(component: Component, text: str) -> bool:
    return text in component.log_path.read_text(errors="replace")


def test_recreate_respects_a_disruption_budget_then_evicts_within_the_tolerance(
    vpa_lab: Lab,
) -> None:
    lab = vpa_lab
    lab.apply(
        [
            deployment("recreate", replicas=4),
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "recreate", "namespace": NAMESPACE},
                "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "recreate"}}},
            },
            vpa("recreate", mode="Recreate"),
        ]
    )
    recommend(lab, "recreate", {"cpu": "300m", "memory": "128Mi"})
    before = {p["metadata"]["uid"] for p in running_pods(lab, "recreate", 4)}
    updater = start_updater(lab, "vpa-updater-recreate-pdb", interval="2s")
    try:
        lab.wait_for(
            lambda: log_has(updater, "eviction_blocked_by_disruption_budget"),
            what="an eviction refused by the PodDisruptionBudget",
        )
        time.sleep(4)  # two more loops
        assert {p["metadata"]["uid"] for p in pods(lab, "recreate")} == before
    finally:
        lab.group.end(updater.name)
    lab.kubectl("delete", "pdb", "recreate", "-n", NAMESPACE)
    updater = start_updater(lab, "vpa-updater-recreate", interval="10m")
    try:
        lab.wait_for(lambda: len(events(lab, "EvictedByVPA")) >= 2, what="two evictions")
        time.sleep(2)
        assert len(events(lab, "EvictedByVPA")) == 2  # int(4 * 0.5) in the first loop
        assert len(events(lab, "EvictedPod")) == 2
        gone = before - {p["metadata"]["uid"] for p in pods(lab, "recreate")}
        assert len(gone) == 2
    finally:
        stop(lab, updater, "recreate")


def test_in_place_or_recreate_resizes_without_a_restart(vpa_lab: Lab) -> None:
    lab = vpa_lab
    lab.apply([deployment("inplace", replicas=3), vpa("inplace", mode="InPlaceOrRecreate")])
    recommend(lab, "inplace", {"cpu": "250m", "memory": "96Mi"})
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in running_pods(lab, "inplace", 3)}
    updater = start_updater(lab, "vpa-updater-inplace", interval="2s")

    def resized() -> list[dict[str, Any]]:
        return [
            p
            for p in pods(lab, "inplace")
            if p["spec"]["containers"][0]["resources"]["requests"].get("cpu") == "250m"
        ]

    try:
        lab.wait_for(lambda: len(resized()) == 3, what="three pods resized in place")
        for pod in resized():
            assert before[pod["metadata"]["name"]] == pod["metadata"]["uid"]
            assert pod["spec"]["containers"][0]["resources"]["requests"]["memory"] == "96Mi"
            assert pod["metadata"]["annotations"]["vpaInPlaceUpdated"] == "true"
        evicted = {e["involvedObject"]["name"] for e in events(lab, "EvictedByVPA")}
        assert evicted.isdisjoint(before)
        assert len(events(lab, "InPlaceResizedByVPA")) >= 3
    finally:
        stop(lab, updater, "inplace")


def test_a_recommendation_larger_than_any_node_is_not_applied(vpa_lab: Lab) -> None:
    lab = vpa_lab
    lab.apply([deployment("huge", replicas=2), vpa("huge", mode="Recreate")])
    recommend(lab, "huge", {"cpu": "500", "memory": "64Mi"})
    before = {p["metadata"]["uid"] for p in running_pods(lab, "huge", 2)}
    updater = start_updater(lab, "vpa-updater-huge", interval="2s")
    try:
        lab.wait_for(
            lambda: any(
                e["involvedObject"]["kind"] == "VerticalPodAutoscaler"
                and e["involvedObject"]["name"] == "huge"
                for e in events(lab, "UpdateDoesNotFit")
            ),
            what="the UpdateDoesNotFit event on the VPA",
        )
        assert {p["metadata"]["uid"] for p in pods(lab, "huge")} == before
    finally:
        stop(lab, updater, "huge")


def test_an_hpa_on_cpu_keeps_cpu_and_memory_is_updated(vpa_lab: Lab) -> None:
    lab = vpa_lab
    lab.apply(
        [
            deployment("scaled", replicas=2),
            vpa("scaled", mode="InPlaceOrRecreate"),
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "scaled", "namespace": NAMESPACE},
                "spec": {
                    "scaleTargetRef": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "scaled",
                    },
                    "minReplicas": 2,
                    "maxReplicas": 2,
                    "metrics": [
                        {
                            "type": "Resource",
                            "resource": {
                                "name": "cpu",
                                "target": {"type": "Utilization", "averageUtilization": 60},
                            },
                        }
                    ],
                },
            },
        ]
    )
    recommend(lab, "scaled", {"cpu": "400m", "memory": "200Mi"})
    running_pods(lab, "scaled", 2)
    updater = start_updater(lab, "vpa-updater-scaled", interval="2s")

    def requests() -> list[dict[str, str]]:
        return [p["spec"]["containers"][0]["resources"]["requests"] for p in pods(lab, "scaled")]

    try:
        lab.wait_for(
            lambda: all(r.get("memory") == "200Mi" for r in requests()),
            what="memory of both pods updated",
        )
        assert all(r["cpu"] == "100m" for r in requests())
    finally:
        stop(lab, updater, "scaled")


def test_eviction_requirements_hold_back_a_change_the_other_way_until_patched(
    vpa_lab: Lab,
) -> None:
    lab = vpa_lab
    manifest = vpa("grow", mode="InPlaceOrRecreate")
    both = ["cpu", "memory"]
    manifest["spec"]["updatePolicy"]["evictionRequirements"] = [
        {"resources": both, "changeRequirement": "TargetLowerThanRequests"}
    ]
    lab.apply([deployment("grow", replicas=2), manifest])
    recommend(lab, "grow", {"cpu": "250m", "memory": "96Mi"})  # the pods request 100m, 64Mi
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in running_pods(lab, "grow", 2)}
    updater = start_updater(lab, "vpa-updater-grow", interval="2s", flags=("--log-level=debug",))

    def requests() -> list[str]:
        return sorted(
            p["spec"]["containers"][0]["resources"]["requests"]["cpu"] for p in pods(lab, "grow")
        )

    try:
        lab.wait_for(
            lambda: log_has(updater, "pod_removed_by_eviction_requirements"),
            what="a loop that kept the pods back",
        )
        assert requests() == ["100m", "100m"]
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(lab, "grow")} == before
        patch = {
            "spec": {
                "updatePolicy": {
                    "evictionRequirements": [
                        {"resources": both, "changeRequirement": "TargetHigherThanRequests"}
                    ]
                }
            }
        }
        lab.kubectl(
            "patch",
            "verticalpodautoscaler",
            "grow",
            "-n",
            NAMESPACE,
            "--type=merge",
            "-p",
            json.dumps(patch),
        )
        lab.wait_for(lambda: requests() == ["250m", "250m"], what="both pods resized in place")
    finally:
        stop(lab, updater, "grow")
