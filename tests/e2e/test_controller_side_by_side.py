"""End to end, side by side: the same workload, HPA and load trace under kube-controller-manager's
HPA controller (a second lab, ``--controllers=*`` with a 3 s sync period) and under ours (the
session lab, kcm's HPA controller off, ``hpa controller`` with a 3 s sync period). Both labs run
``hpa adapter`` with the same rules over their own Prometheus and exporter, and the trace plays in
both at once, so the comparison costs one trace of wall time.

The HPA scales on the External gauge ``lab_workload_offered_load_rps`` per replica (10 each), so
each desired count is ``ceil(load / 10)`` whatever the pods' readiness, and the trace's steps are
spaced so that each behavior period (10 s) has passed before the next step: the sequence of
desired replicas then does not depend on the sync phase, only its timing does.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.controller_lab import (
    ApiReader,
    ObjectWatch,
    adapter_rules,
    component_log,
    condition,
    deployment_manifest,
    describe_hpas,
    desired_steps,
    hpa_manifest,
    offered_load_metric,
    replica_steps,
    report,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.lab.controlplane import ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component, LabError

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-side-by-side"
NAME = "web"
SYNC_SECONDS = 3.0
BEHAVIOR: dict[str, Any] = {
    "scaleUp": {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 10},
            {"type": "Percent", "value": 100, "periodSeconds": 10},
        ],
    },
    "scaleDown": {
        "stabilizationWindowSeconds": 15,
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 10}],
    },
}
TRACE: list[tuple[float, int]] = [(0, 35), (20, 95), (45, 25), (70, 0)]
"""(seconds from the start, offered requests/s): a step at each offset."""
EXPECTED = [1, 4, 8, 10, 3, 1]
"""35 -> 4; 95 -> 10, at most 4 + 4 (Pods) or 4 x 2 (Percent) per 10 s: 8 then 10; 25 -> 3 and
0 -> 1 (minReplicas) after the 15 s stabilization window."""
SETTLE_SECONDS = 45.0


@dataclass
class Side:
    label: str
    lab: Lab
    hpas: ObjectWatch
    deployments: ObjectWatch
    controller: Component | None

    def failure(self) -> str:
        log = component_log(self.controller) if self.controller else "(kube-controller-manager)"
        return f"--- {self.label} ---\n{log}\n{describe_hpas(self.lab, NAMESPACE)}"

    def desired(self) -> int | None:
        status = (self.hpas.latest(NAME) or {}).get("status") or {}
        value = status.get("desiredReplicas")
        return None if value is None else int(value)

    def active_at_one(self) -> bool:
        active = condition(self.hpas.latest(NAME), "ScalingActive")[0] == "True"
        return active and self.desired() == 1

    def sequence(self) -> list[int]:
        """Distinct successive desired counts (the 0 of a status written before the first
        decision left out)."""
        values: list[int] = []
        for _, desired in desired_steps(self.hpas, NAME):
            if desired > 0 and values[-1:] != [desired]:
                values.append(desired)
        return values


def _prepare(lab: Lab, work: Any, label: str, controller: bool) -> tuple[Side, Component]:
    lab.kubectl("create", "namespace", NAMESPACE)
    adapter = start_adapter(lab, work, rules=adapter_rules(window_seconds=5), relist_interval="2s")
    reader = ApiReader(lab)
    hpas = ObjectWatch(
        reader, f"/apis/autoscaling/v2/namespaces/{NAMESPACE}/horizontalpodautoscalers"
    ).start()
    deployments = ObjectWatch(reader, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments").start()
    ours = None
    if controller:
        ours = start_controller(
            lab,
            "hpa-controller-side-by-side",
            flags=[
                f"--horizontal-pod-autoscaler-sync-period={SYNC_SECONDS:g}s",
                "--leader-elect=false",
            ],
        )
    lab.add_workload(WorkloadProfile(NAMESPACE, NAME, {"app": NAME}), rps=5)
    lab.apply(
        [
            deployment_manifest(NAME, NAMESPACE, replicas=1),
            hpa_manifest(
                NAME,
                NAMESPACE,
                min_replicas=1,
                max_replicas=10,
                metrics=[offered_load_metric(NAME, "10")],
                behavior=BEHAVIOR,
            ),
        ]
    )
    return Side(label, lab, hpas, deployments, ours), adapter


@pytest.fixture(scope="module")
def sides(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    config = LabConfig(
        control_plane=ControlPlaneConfig(
            node_count=1, hpa_controller_enabled=True, hpa_sync_period_seconds=SYNC_SECONDS
        )
    )
    with Lab(config) as upstream_lab:
        upstream, upstream_adapter = _prepare(
            upstream_lab, tmp_path_factory.mktemp("sbs-upstream"), "kube-controller-manager", False
        )
        ours, our_adapter = _prepare(
            lab, tmp_path_factory.mktemp("sbs-ours"), "hpa controller", True
        )
        try:
            yield upstream, ours
        finally:
            for side, adapter in ((upstream, upstream_adapter), (ours, our_adapter)):
                side.hpas.stop()
                side.deployments.stop()
                if (
                    side.controller is not None
                    and side.controller.name in side.lab.group.components
                ):
                    side.lab.group.end(side.controller.name)
                stop_adapter(side.lab, adapter)
            lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def _settled(side: Side) -> bool:
    return side.sequence()[-1:] == [1] and len(side.sequence()) > 1


def _play(side: Side, start: threading.Barrier) -> float:
    """Play TRACE on one lab; returns the monotonic time of its start."""
    start.wait(timeout=30)
    began = time.monotonic()
    for offset, rps in TRACE:
        while time.monotonic() < began + offset:
            time.sleep(0.05)
        side.lab.set_load(NAMESPACE, NAME, rps)
    return began


def test_same_trace_same_desired_replicas_as_kube_controller_manager(
    sides: tuple[Side, Side], capsys: pytest.CaptureFixture[str]
) -> None:
    upstream, ours = sides
    for side in sides:
        try:
            side.lab.wait_for(
                side.active_at_one,
                what=f"{side.label}: the HPA reading its metric at 1 replica",
                timeout_seconds=90,
                interval_seconds=0.2,
            )
        except LabError as error:
            raise AssertionError(f"{error}\n{side.failure()}") from error

    barrier = threading.Barrier(2)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        starts = list(pool.map(lambda side: _play(side, barrier), sides))
    for side in sides:
        try:
            side.lab.wait_for(
                functools.partial(_settled, side),
                what=f"{side.label}: back to 1 replica after the trace",
                timeout_seconds=SETTLE_SECONDS,
                interval_seconds=0.2,
            )
        except LabError:
            break

    sequences = {}
    for side, began in zip(sides, starts, strict=True):
        steps = desired_steps(side.hpas, NAME)
        replicas = replica_steps(side.deployments, NAME)
        sequences[side.label] = side.sequence()
        report(
            capsys,
            f"{side.label}: desired replicas (s from trace start, value) "
            f"{[(round(t - began, 1), n) for t, n in steps]}; Deployment replicas "
            f"{[(round(t - began, 1), n) for t, n in replicas]}",
        )
    assert sequences[upstream.label] == sequences[ours.label], (
        f"{sequences}\n{upstream.failure()}\n{ours.failure()}"
    )
    assert sequences[ours.label] == EXPECTED, f"{sequences}\n{ours.failure()}"
