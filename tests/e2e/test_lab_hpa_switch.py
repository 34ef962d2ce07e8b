"""kube-controller-manager's own HPA controller: off in the shared lab, on behind the switch."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_lab import deployment
from tests.lab.controlplane import KCM_HPA_CONTROLLER, ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-kcm-hpa"


def cpu_hpa(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 4,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50},
                    },
                }
            ],
        },
    }


def conditions(lab: Lab, name: str) -> dict[str, tuple[str, str]]:
    status = lab.kubectl_json("get", "hpa", name, "-n", NAMESPACE).get("status", {})
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions", [])}


def test_shared_lab_runs_kcm_without_its_hpa_controller(lab: Lab) -> None:
    kcm_log = (lab.group.log_dir / "kube-controller-manager.log").read_text()
    assert f'"Warning: controller is disabled" controller="{KCM_HPA_CONTROLLER}"' in kcm_log


def test_switch_runs_upstream_hpa_controller_against_the_lab() -> None:
    config = LabConfig(
        control_plane=ControlPlaneConfig(
            node_count=1, hpa_controller_enabled=True, hpa_sync_period_seconds=1
        )
    )
    with Lab(config) as lab:
        lab.kubectl("create", "namespace", NAMESPACE)
        lab.apply([deployment("web", NAMESPACE, 1), cpu_hpa(NAMESPACE, "web")])
        # No metrics API is registered in the bare lab: upstream's controller can read the scale
        # subresource but no CPU metrics, and says so in the HPA's conditions.
        lab.wait_for(
            lambda: (
                conditions(lab, "web").get("ScalingActive") == ("False", "FailedGetResourceMetric")
            ),
            what="kube-controller-manager's HPA controller to report FailedGetResourceMetric",
            timeout_seconds=60,
        )
        assert conditions(lab, "web")["AbleToScale"][0] == "True"
