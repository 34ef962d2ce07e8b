"""The chart's defaults installed beside kube-controller-manager's own HPA controller: ours runs in
shadow mode (``controller.mode: shadow``, ``--dry-run``), the built-in one scales, and the API
server's audit log shows that only the built-in controller wrote a scale.

The chart is rendered with its defaults (Helm's engine, tests/delivery/chart.py); its
ServiceAccounts, ClusterRoles, Roles and bindings are applied, and ``hpa controller`` runs with the
rendered Deployment's arguments as ``hpa-system:hpa-controller`` (a token minted for the chart's
ServiceAccount). kube-controller-manager's HPA controller runs as a second kube-controller-manager
process of the session lab with ``--controllers=horizontal-pod-autoscaler-controller`` and its
own ServiceAccount credentials (``kube-system:horizontal-pod-autoscaler``), so the audit log names
each controller behind every write.

The HPA's ``minReplicas`` is above the Deployment's replicas: both controllers compute the same
decision without a metric (upstream's "Current number of replicas below Spec.MinReplicas"). Ours
starts first and records its decision as a ``DryRun`` event; then the built-in one scales.
Deviation from a cluster: ``hpa controller`` runs on this machine, not as a pod (kwok runs no
containers).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.delivery.chart import RELEASE_NAMESPACE, render
from tests.e2e.controller_lab import (
    audit_writes,
    component_log,
    deployment_manifest,
    hpa_manifest,
    report,
    start_controller,
)
from tests.e2e.test_delivery import RBAC_KINDS, restricted_namespace, token_kubeconfig
from tests.lab.controlplane import KCM_HPA_CONTROLLER, free_port
from tests.lab.lab import Lab
from tests.lab.process import Component

pytestmark = pytest.mark.e2e

__all__ = ["restricted_namespace"]  # the fixture, shared with tests/e2e/test_delivery.py

NAMESPACE = "e2e-delivery-shadow"
NAME = "web"
OURS = f"system:serviceaccount:{RELEASE_NAMESPACE}:hpa-controller"
BUILT_IN = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
MIN_REPLICAS = 3


def default_controller_flags() -> list[str]:
    """The controller container's arguments of the Deployment the chart renders by default,
    without the subcommand and ``--port`` (start_controller disables the HTTP endpoint)."""
    deployment = next(
        o.body for o in render({}) if o.kind == "Deployment" and o.name == "hpa-controller"
    )
    args = [str(a) for a in deployment["spec"]["template"]["spec"]["containers"][0]["args"]]
    assert args[0] == "controller"
    return [a for a in args[1:] if not a.startswith("--port=")] + [
        "--horizontal-pod-autoscaler-sync-period=1s"
    ]


def built_in_hpa_controller_argv(lab: Lab) -> list[str]:
    """A second kube-controller-manager of the session lab running only the HPA controller."""
    argv = []
    for arg in lab.control_plane.controller_manager_argv():
        if arg.startswith("--controllers="):
            arg = f"--controllers={KCM_HPA_CONTROLLER}"
        elif arg.startswith("--secure-port="):
            arg = f"--secure-port={free_port()}"
        elif arg.startswith("--horizontal-pod-autoscaler-sync-period="):
            arg = "--horizontal-pod-autoscaler-sync-period=1s"
        argv.append(arg)
    return argv


def events(lab: Lab) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = lab.kubectl_json("get", "events", "-n", NAMESPACE)["items"]
    return [e for e in items if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"]


def replicas(lab: Lab) -> int:
    scale = lab.kubectl_json("get", "deployment", NAME, "-n", NAMESPACE)
    return int(scale["spec"]["replicas"])


@pytest.fixture(scope="module")
def side_by_side(
    lab: Lab, restricted_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Component, Path, str]]:
    lab.apply([o.body for o in render({}) if o.kind in RBAC_KINDS])
    kubeconfig = token_kubeconfig(lab, "hpa-controller", tmp_path_factory.mktemp("shadow"))
    lab.kubectl("create", "namespace", NAMESPACE)
    lab.apply(
        [
            deployment_manifest(NAME, NAMESPACE, replicas=1),
            hpa_manifest(
                NAME,
                NAMESPACE,
                min_replicas=MIN_REPLICAS,
                max_replicas=5,
                metrics=[
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ],
            ),
        ]
    )
    ours = start_controller(
        lab, "hpa-controller-shadow", kubeconfig=kubeconfig, flags=default_controller_flags()
    )
    built_in: Component | None = None
    start = time.monotonic()
    try:
        lab.wait_for(
            lambda: any(e["reason"] == "DryRun" for e in events(lab)),
            what="the shadow controller's DryRun event",
            timeout_seconds=30,
        )
        dry_run_seconds = time.monotonic() - start
        built_in = lab.group.start("kcm-hpa-controller", built_in_hpa_controller_argv(lab))
        lab.wait_for(
            lambda: replicas(lab) == MIN_REPLICAS,
            what="kube-controller-manager's HPA controller to scale to minReplicas",
            timeout_seconds=30,
        )
        lab.wait_for(
            lambda: any(e["reason"] == "SuccessfulRescale" for e in events(lab)),
            what="the built-in controller's SuccessfulRescale event",
            timeout_seconds=15,
        )
        timings = (
            f"shadow: DryRun event {dry_run_seconds:.1f} s after start; the built-in controller "
            f"scaled {time.monotonic() - start - dry_run_seconds:.1f} s after its start"
        )
        yield ours, lab.control_plane.audit_log_path, timings
    finally:
        if built_in is not None:
            lab.group.end(built_in.name)
        lab.group.end(ours.name)
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def test_the_built_in_controller_scales_and_ours_writes_only_dry_run_events(
    lab: Lab, side_by_side: tuple[Component, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ours, audit_log, timings = side_by_side
    report(capsys, timings)
    writes = [
        w for w in audit_writes(audit_log, users={OURS, BUILT_IN}) if w.namespace == NAMESPACE
    ]
    by_ours = [w for w in writes if w.user == OURS]
    by_built_in = [w for w in writes if w.user == BUILT_IN]
    # ours: Events only (create, or patch of a repeat), never a scale or an HPA status
    assert by_ours, component_log(ours)
    assert {w.resource for w in by_ours} == {"events"}, [w.target for w in by_ours]
    assert {w.verb for w in by_ours} <= {"create", "patch"}
    # the built-in controller wrote the scale, and nobody else did
    scale_writers = {w.user for w in writes if w.subresource == "scale"}
    assert scale_writers == {BUILT_IN}, [w.target for w in writes]
    assert any(w.subresource == "scale" and w.code == 200 for w in by_built_in)
    dry_run = [e for e in events(lab) if e["reason"] == "DryRun"]
    assert any(f"to {MIN_REPLICAS}" in e["message"] for e in dry_run), dry_run
