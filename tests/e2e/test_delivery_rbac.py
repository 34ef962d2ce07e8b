"""The HPA controller issue's end-to-end scenario, run with only the chart's RBAC: the controller
and the adapter use tokens minted for the chart's ServiceAccounts (`kubectl create token`).

The chart is rendered (Helm's engine, tests/delivery/chart.py) with SCENARIO_VALUES: the
scenario's timings and the metrics it reads listed in ``controller.rbac`` (no ``*``). Only the
rendered ServiceAccounts, ClusterRoles, Roles and bindings are applied. Then:

- ``hpa adapter`` runs as ``hpa-system:hpa-adapter`` (tests/e2e/controller_lab.py ``start_adapter``
  with the token's kubeconfig) behind the metrics APIServices;
- ``hpa controller`` runs as ``hpa-system:hpa-controller`` with the container arguments of the
  rendered Deployment (leader election on the chart's Lease ``hpa-system/hpa-controller``, the
  sync period and stabilization window of the scenario), minus ``--port``;
- the tests of tests/e2e/test_controller_scaling.py run unchanged against them, in this module's
  namespace (their module constant NAMESPACE is set for the duration of this module): CPU
  utilization up within a sync and down after the window, a Pods and an External metric, the
  behavior policies, and the Prometheus outage;
- afterwards neither process may have logged an RBAC denial, the controller must hold the Lease
  and have recorded events, and requests with the controller's token through the aggregation
  layer must be admitted for exactly the listed metric shapes (Pods, Object of a Deployment,
  Object of a Namespace, External) and refused with 403 for others.

tests/e2e/test_delivery_rbac_rules.py removes single rules from these objects and shows the
controller fail. Deviation from a cluster: both processes run on this machine (the lab's
aggregation routing), not as pods.
"""

from __future__ import annotations

import json
import shutil
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import tests.e2e.test_controller_scaling as scenario
from tests.delivery.chart import RELEASE_NAMESPACE, render
from tests.e2e.controller_lab import (
    ADAPTER_NAME,
    ApiReader,
    ObjectWatch,
    adapter_rules,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.e2e.test_controller_scaling import Scaling, add_behavior_workloads
from tests.e2e.test_delivery import RBAC_KINDS, manifests, restricted_namespace, token_kubeconfig
from tests.lab.lab import Lab
from tests.lab.process import Component

pytestmark = pytest.mark.e2e

__all__ = ["restricted_namespace"]  # the fixture, shared with tests/e2e/test_delivery.py

NAMESPACE = "e2e-delivery-rbac"
ADAPTER = "hpa-adapter"
CONTROLLER = "hpa-controller"
CONTROLLER_COMPONENT = "hpa-controller-chart-rbac"
"""The lab component's name (its log file is its own: the lab appends to a name's log)."""
RBAC_DENIAL = f'is forbidden: User "system:serviceaccount:{RELEASE_NAMESPACE}:'
PODS_METRIC = "http_requests_per_second"
EXTERNAL_METRIC = "lab_workload_offered_load_rps"
SCENARIO_VALUES: dict[str, Any] = {
    "controller": {
        "mode": "active",  # the scenario needs a controller that scales (kcm's is off in the lab)
        "syncPeriod": f"{scenario.SYNC_SECONDS:g}s",
        "downscaleStabilization": f"{scenario.STABILIZATION_SECONDS:g}s",
        "rbac": {
            # the scenario's Pods metric, and two Object-metric shapes the probe test reads
            "customMetrics": [
                f"pods/{PODS_METRIC}",
                f"deployments.apps/{PODS_METRIC}",
                f"namespaces/{PODS_METRIC}",
            ],
            "externalMetrics": [EXTERNAL_METRIC],
        },
    }
}


def chart_rbac(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart's ServiceAccounts, (Cluster)Roles and bindings rendered with ``values``."""
    return [obj.body for obj in render(values) if obj.kind in RBAC_KINDS]


def controller_flags(values: dict[str, Any]) -> list[str]:
    """The controller container's arguments of the rendered Deployment, without the subcommand
    and ``--port`` (start_controller disables the HTTP endpoint)."""
    deployment = next(
        obj.body
        for obj in render(values)
        if obj.kind == "Deployment" and obj.name == "hpa-controller"
    )
    args = [str(arg) for arg in deployment["spec"]["template"]["spec"]["containers"][0]["args"]]
    assert args[0] == "controller"
    return [arg for arg in args[1:] if not arg.startswith("--port=")]


def restore_default_rbac(lab: Lab) -> None:
    """Back to manifests/hpa.yaml's RBAC (the allow-lists of tests/e2e/test_delivery.py)."""
    lab.apply([obj for obj in manifests() if obj["kind"] in RBAC_KINDS])


def kubeconfig_token(path: Path) -> str:
    config = yaml.safe_load(path.read_text())
    return str(config["users"][0]["user"]["token"])


@dataclass(frozen=True)
class Identities:
    adapter: Path
    controller: Path


@pytest.fixture(scope="module")
def identities(
    lab: Lab, restricted_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Identities]:
    lab.apply(chart_rbac(SCENARIO_VALUES))
    work = tmp_path_factory.mktemp("delivery-rbac-tokens")
    try:
        yield Identities(
            adapter=token_kubeconfig(lab, ADAPTER, work),
            controller=token_kubeconfig(lab, CONTROLLER, work),
        )
    finally:
        restore_default_rbac(lab)


@dataclass
class ChartScaling(Scaling):
    """The scenario's ``Scaling`` plus the adapter, whose log is checked afterwards."""

    adapter: Component
    adapter_log_offset: int

    def wait(
        self,
        check: Callable[[], bool],
        *,
        what: str,
        timeout_seconds: float = scenario.TIMEOUT_SECONDS,
    ) -> None:
        """The scenario's wait, then the HPA watch brought up to what the API server holds.

        The tests read Deployments and HPAs from two watch streams. The controller writes an
        HPA's status right after its scale, so when a wait sees the Deployment change, the
        status may still be in flight on the other stream (the outage test then found no
        ScalingActive=True after the scale in one of the first three runs). Catching up closes
        that window; the times the tests measure come from the watches' arrival stamps,
        unchanged."""
        super().wait(check, what=what, timeout_seconds=timeout_seconds)
        listed = self.reader.try_get(
            f"/apis/autoscaling/v2/namespaces/{NAMESPACE}/horizontalpodautoscalers"
        )
        if listed is None:
            return
        wanted = {
            item["metadata"]["name"]: int(item["metadata"]["resourceVersion"])
            for item in listed.get("items", [])
        }

        def caught_up() -> bool:
            return all(
                int(
                    ((self.hpas.latest(name) or {}).get("metadata") or {}).get("resourceVersion", 0)
                )
                >= version
                for name, version in wanted.items()
            )

        super().wait(caught_up, what="the HPA watch to catch up with the API server")

    def forbidden_lines(self) -> list[str]:
        """Log lines of this module's adapter and controller that report an RBAC denial."""
        logs = [
            log_since(self.adapter.log_path, self.adapter_log_offset),
            log_since(self.controller.log_path, 0),
        ]
        return [line for text in logs for line in text.splitlines() if RBAC_DENIAL in line]


def log_since(path: Path, offset: int) -> str:
    """The part of a component's log written after ``offset`` (the lab appends per name)."""
    with path.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


@pytest.fixture(scope="module")
def scaling(
    lab: Lab, identities: Identities, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChartScaling]:
    """tests/e2e/test_controller_scaling.py's ``scaling`` with the chart's identities: the same
    adapter rules and timings, the two behavior workloads started with the module (their
    policies are what test_behavior_policies_bound_the_steps reads), the controller's flags
    from the chart."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scenario, "NAMESPACE", NAMESPACE)
        lab.kubectl("create", "namespace", NAMESPACE)
        adapter_log_offset = log_size(lab.group.log_dir / f"{ADAPTER_NAME}.log")
        adapter = start_adapter(
            lab,
            tmp_path_factory.mktemp("delivery-rbac-adapter"),
            rules=adapter_rules(window_seconds=scenario.WINDOW_SECONDS),
            relist_interval="2s",
            kubeconfig=identities.adapter,
        )
        reader = ApiReader(lab)
        deployments = ObjectWatch(
            reader, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
        ).start()
        hpas = ObjectWatch(
            reader, f"/apis/autoscaling/v2/namespaces/{NAMESPACE}/horizontalpodautoscalers"
        ).start()
        lab.kubectl("delete", "lease", CONTROLLER, "-n", RELEASE_NAMESPACE, "--ignore-not-found")
        controller = start_controller(
            lab,
            CONTROLLER_COMPONENT,
            kubeconfig=identities.controller,
            flags=controller_flags(SCENARIO_VALUES),
        )
        scaling = ChartScaling(
            lab,
            reader,
            deployments,
            hpas,
            controller,
            time.monotonic(),
            adapter=adapter,
            adapter_log_offset=adapter_log_offset,
        )
        add_behavior_workloads(scaling)
        try:
            yield scaling
        finally:
            deployments.stop()
            hpas.stop()
            if controller.name in lab.group.components:
                lab.group.end(controller.name)
            stop_adapter(lab, adapter)
            # kept with pytest's temporary directories after the lab is gone
            logs = tmp_path_factory.mktemp("delivery-rbac-logs")
            shutil.copy(controller.log_path, logs / "controller.log")
            (logs / "adapter.log").write_text(log_since(adapter.log_path, adapter_log_offset))
            lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


# The scenario's tests, collected again here against this module's `scaling`, in their own
# module's order (the behavior policies run in the background of the first two; the outage last).
test_cpu_step_scales_up_within_a_sync_and_down_after_the_window = (
    scenario.test_cpu_step_scales_up_within_a_sync_and_down_after_the_window
)
test_pods_and_external_metrics_drive_their_workloads = (
    scenario.test_pods_and_external_metrics_drive_their_workloads
)
test_behavior_policies_bound_the_steps = scenario.test_behavior_policies_bound_the_steps
test_prometheus_outage_mid_ramp_freezes_without_scaling_down = (
    scenario.test_prometheus_outage_mid_ramp_freezes_without_scaling_down
)


def test_no_rbac_denial_and_the_controller_led_and_recorded_events(
    scaling: ChartScaling,
) -> None:
    lab = scaling.lab
    assert scaling.forbidden_lines() == [], scaling.failure("an RBAC denial in the logs")
    holder = lab.kubectl(
        "get", "lease", CONTROLLER, "-n", RELEASE_NAMESPACE, "-o", "jsonpath={.spec.holderIdentity}"
    )
    assert holder, "the controller does not hold the chart's Lease"
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


def token_get(lab: Lab, token: str, path: str) -> tuple[int, str]:
    """GET ``path`` from kube-apiserver with ``token``: (status code, body)."""
    context = ssl.create_default_context(cafile=str(lab.pki.ca.pair.cert_path))
    request = urllib.request.Request(  # noqa: S310 - the lab's https URL
        f"{lab.server_url}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=20) as answer:  # noqa: S310
            return int(answer.status), bytes(answer.read()).decode()
    except urllib.error.HTTPError as error:
        return int(error.code), bytes(error.read()).decode()


def probes() -> list[tuple[str, bool]]:
    """Requests shaped as the controller makes them (hpa/metrics/custom.py, external.py), and
    whether the chart's rules for SCENARIO_VALUES admit them."""
    custom = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NAMESPACE}"
    external = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}"
    selector = "?" + urllib.parse.urlencode({"labelSelector": "app=rps-web"})
    return [
        (f"{custom}/pods/*/{PODS_METRIC}{selector}", True),
        (f"{custom.replace('v1beta2', 'v1beta1')}/pods/*/{PODS_METRIC}{selector}", True),
        (f"{custom}/deployments.apps/rps-web/{PODS_METRIC}", True),
        (f"{custom}/metrics/{PODS_METRIC}", True),
        (f"{external}/{EXTERNAL_METRIC}?labelSelector=workload%3Dext-web", True),
        (f"{custom}/pods/*/http_requests_total{selector}", False),
        (f"{custom}/services/rps-web/{PODS_METRIC}", False),
        (f"{custom}/metrics/http_requests_total", False),
        (f"{external}/http_requests_total", False),
    ]


def test_the_controller_token_reads_exactly_the_listed_metrics(
    scaling: Scaling, identities: Identities
) -> None:
    token = kubeconfig_token(identities.controller)
    answers = {path: token_get(scaling.lab, token, path) for path, _ in probes()}
    wrong = {
        path: answers[path]
        for path, admitted in probes()
        if (answers[path][0] != 403) is not admitted
    }
    assert wrong == {}
    code, body = answers[probes()[0][0]]
    assert code == 200
    assert json.loads(body)["items"], "the listed Pods metric answers with values"
    code, body = answers[probes()[4][0]]
    assert code == 200
    assert json.loads(body)["items"], "the listed External metric answers with values"
    assert "forbidden" in answers[probes()[-1][0]][1]
