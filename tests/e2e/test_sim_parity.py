"""End to end: the simulator makes the decisions ``hpa controller`` makes in the lab, sync by sync.

The issue's parity point: for a trace of 500 steps, the simulator's replica sequence equals what
``hpa controller`` does against the lab for the same HPA, the same trace and the same sync phase.

Design (``docs/simulator.md``, "Parity with the lab"):

* the HPA scales on one External metric, ``AverageValue`` 10 per replica, with
  ``tolerance: 0`` in both directions, so each proposal is exactly ``ceil(value / 10)`` whatever
  ``status.replicas`` of the Deployment is (kwok's pods come and go at their own pace), and a
  ``behavior`` whose stabilization windows and policy periods (1, 3, 5 and 7 s) all fall half
  way between two syncs of the 0.4 s sync period, so a few milliseconds of timing noise cannot
  move a recommendation or a scale event across a window's edge;
* the metric is served by a scripted ``external.metrics.k8s.io`` server
  (:mod:`tests.e2e.sim_parity_lab`) behind kube-apiserver's aggregation layer: the ``k``-th GET
  answers the trace's ``k``-th value, so the only dynamics are the decision logic, not
  Prometheus's scrape phase;
* the trace has 500 steps, one per sync: 500 syncs at 0.4 s (200 s of wall time; 1 s would take
  more than 8 minutes);
* the controller's per-reconcile log line (``reconciled ... at=T desired=N``) gives, for every
  sync, the clock reading its windows and policy periods were evaluated at and its decision; each
  read the server answered is matched to the reconcile that made it by time (one host clock);
* the simulator runs the same manifest with its sync times set to the controller's own clock
  readings (the lab's phase, sync by sync) and its External metric replaying the value each
  decision was made on (:class:`hpa.sim.ports.ReplayedMetricsClient`); the Deployment's
  ``spec.replicas`` as a watch sees it is compared with the simulated Deployment's too.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml

from hpa.controllers.settings import HorizontalControllerSettings
from hpa.sim.commands import quiet_controller_logs
from hpa.sim.engine import HPARun, SimulationConfig, simulate
from hpa.sim.manifest import parse_manifests
from hpa.sim.trace import points_trace
from hpa.sim.workload import Deployment
from tests.e2e.controller_lab import (
    ApiReader,
    ObjectWatch,
    component_log,
    deployment_manifest,
    describe_hpas,
    free_port,
    hpa_manifest,
    replica_steps,
    report,
    start_controller,
)
from tests.e2e.sim_parity_lab import GROUP, VERSION, ScriptedExternalMetrics, ServedValue
from tests.lab import aggregation
from tests.lab.lab import Lab
from tests.lab.process import Component

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-sim-parity"
NAME = "web"
SERVER_NAME = "scripted-external-metrics"
SERVER_NAMESPACE = "e2e-sim-parity-metrics"
API_SERVICE = f"{VERSION}.{GROUP}"
METRIC = "parity_offered_load_rps"
SYNC_SECONDS = 0.4
STEPS = 500
TARGET_PER_REPLICA = 10
MAX_REPLICAS = 25
BEHAVIOR: dict[str, Any] = {
    "scaleUp": {
        "stabilizationWindowSeconds": 1,
        "selectPolicy": "Max",
        "tolerance": 0,
        "policies": [
            {"type": "Pods", "value": 3, "periodSeconds": 3},
            {"type": "Percent", "value": 50, "periodSeconds": 1},
        ],
    },
    "scaleDown": {
        "stabilizationWindowSeconds": 5,
        "selectPolicy": "Min",
        "tolerance": 0,
        "policies": [
            {"type": "Percent", "value": 30, "periodSeconds": 3},
            {"type": "Pods", "value": 4, "periodSeconds": 7},
        ],
    },
}
"""Windows and periods of 1, 3, 5 and 7 s are 2.5, 7.5, 12.5 and 17.5 syncs: every edge lies
0.2 s from the nearest sync."""


def script(steps: int = STEPS, *, seed: int = 7) -> list[int]:
    """The trace: offered load in milli-units per sync, levels held for 4 to 30 syncs with
    noise, from idle to above ``maxReplicas * 10`` (fixed seed)."""
    rng = random.Random(seed)
    values: list[int] = []
    level = 30.0
    while len(values) < steps:
        choice = rng.random()
        if choice < 0.25:
            level = rng.uniform(0, 40)
        elif choice < 0.7:
            level = rng.uniform(40, 280)
        else:
            level = min(300.0, level * rng.uniform(0.5, 1.6))
        for _ in range(rng.randint(4, 30)):
            values.append(round(max(0.0, level + rng.uniform(-8, 8)) * 1000))
    return values[:steps]


def manifest() -> dict[str, Any]:
    return hpa_manifest(
        NAME,
        NAMESPACE,
        min_replicas=1,
        max_replicas=MAX_REPLICAS,
        metrics=[
            {
                "type": "External",
                "external": {
                    "metric": {"name": METRIC, "selector": {"matchLabels": {"workload": NAME}}},
                    "target": {"type": "AverageValue", "averageValue": str(TARGET_PER_REPLICA)},
                },
            }
        ],
        behavior=BEHAVIOR,
    )


@dataclass(frozen=True, slots=True)
class Reconcile:
    """One reconcile of the HPA, from the controller's log line."""

    at: float
    """The reconcile's clock reading (``at``, seconds since the epoch): the time its windows and
    policy periods were evaluated at."""
    logged: float
    """The line's ``timestamp``: after the reconcile's metric read."""
    desired: int | None
    """``None`` when its External metric fetch failed."""


def controller_reconciles(log_path: Path, *, key: str) -> list[Reconcile]:
    """Every reconcile of ``key`` the controller logged, in order."""
    reconciles: list[Reconcile] = []
    for raw in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # not one of the controller's JSON log lines
        if not isinstance(line, dict) or line.get("event") not in ("reconciled", "reconcile_error"):
            continue
        if line.get("hpa") != key:
            continue
        failed = "unable to fetch metrics from external metrics API" in str(line.get("error", ""))
        if not failed and not isinstance(line.get("desired"), int):
            raise AssertionError(f"a reconcile line without desired: {raw!r}")
        reconciles.append(
            Reconcile(
                at=dt.datetime.fromisoformat(line["at"]).timestamp(),
                logged=dt.datetime.fromisoformat(line["timestamp"]).timestamp(),
                desired=None if failed else int(line["desired"]),
            )
        )
    return reconciles


@dataclass(frozen=True, slots=True)
class Sync:
    """A reconcile that read the metric: its clock reading, the value it was answered, and the
    controller's decision."""

    at: float
    value_milli: int
    desired: int


def align(reconciles: Sequence[Reconcile], served: Sequence[ServedValue]) -> tuple[list[Sync], int]:
    """Each read the server answered belongs to the reconcile whose ``[at, logged]`` interval holds
    its arrival (one host clock for both processes). A reconcile that failed to fetch has no sync:
    upstream's error path records no recommendation and no scale event, so the simulator, which
    replays only the values decisions were made on, leaves it out with any read answered to it
    (the answer lost on its way back). When a reconcile holds more than one read (a request
    retried after its answer was lost), it decided on the last. Returns the syncs and the number
    of reads no decision was made on."""
    syncs: list[Sync] = []
    unused = 0
    reads = iter(served)
    pending = next(reads, None)
    for reconcile in reconciles:
        held: list[ServedValue] = []
        while pending is not None and pending.at_wall <= reconcile.logged:
            assert pending.at_wall >= reconcile.at, (
                f"a read at {pending.at_wall:.6f} belongs to no reconcile (the next one started "
                f"at {reconcile.at:.6f})"
            )
            held.append(pending)
            pending = next(reads, None)
        if reconcile.desired is None:
            unused += len(held)
            continue
        assert held, f"a reconcile at {reconcile.at:.6f} decided without reading the metric"
        unused += len(held) - 1
        syncs.append(Sync(reconcile.at, held[-1].value_milli, reconcile.desired))
    return syncs, unused


@dataclass(frozen=True, slots=True)
class Simulated:
    desired: list[int]
    replicas: list[int]
    """The simulated Deployment's ``spec.replicas`` after each sync."""


def simulate_recorded(times: Sequence[float], values_milli: Sequence[int]) -> Simulated:
    """The simulator on the same manifest, synced at ``times`` (seconds from the first sync),
    its External metric answering ``values_milli`` one per fetch."""
    hpas = parse_manifests(yaml.safe_dump(manifest()), source="parity")
    trace = points_trace(
        [(t, value / 1000) for t, value in zip(times, values_milli, strict=True)],
        duration_seconds=times[-1] + SYNC_SECONDS,
        description="the lab's served values at its sync times",
    )
    config = SimulationConfig(
        initial_replicas=1,
        settings=HorizontalControllerSettings(sync_period_seconds=SYNC_SECONDS),
        sync_times_seconds=tuple(times),
        replayed_metric_milli=tuple(values_milli),
    )
    desired: list[int] = []
    replicas: list[int] = []

    def on_sync(_: float, runs: Sequence[HPARun], deployments: Sequence[Deployment]) -> None:
        assert runs[0].reconciles == len(desired) + 1
        desired.append(deployments[0].desired_replicas or 0)
        replicas.append(deployments[0].spec_replicas)

    saved = structlog.get_config()
    quiet_controller_logs()
    try:
        simulate(hpas, trace, config=config, on_sync=on_sync)
    finally:
        structlog.configure(**saved)
    return Simulated(desired, replicas)


def changes(values: Sequence[int]) -> list[int]:
    """Successive distinct values."""
    return [value for value, _ in itertools.groupby(values)]


def run_lengths(values: Sequence[int]) -> str:
    """``4x1 3x4 ...``: compact, for printing 500 values."""
    return " ".join(f"{len(list(group))}x{value}" for value, group in itertools.groupby(values))


@dataclass
class LabRun:
    served: ScriptedExternalMetrics
    controller: Component
    deployments: ObjectWatch
    hpas: ObjectWatch


@pytest.fixture(scope="module")
def lab_run(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabRun]:
    assert lab.netns is not None
    lab.kubectl("create", "namespace", NAMESPACE)
    reader = ApiReader(lab)
    deployments = ObjectWatch(reader, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments").start()
    hpas = ObjectWatch(
        reader, f"/apis/autoscaling/v2/namespaces/{NAMESPACE}/horizontalpodautoscalers"
    ).start()
    lab.apply([deployment_manifest(NAME, NAMESPACE, replicas=1)])
    cert, key = lab.issue_serving_certificate(SERVER_NAME, SERVER_NAMESPACE)
    host = lab.netns.host_ip
    port = free_port(host)
    served = ScriptedExternalMetrics(
        namespace=NAMESPACE,
        metric=METRIC,
        labels={"workload": NAME},
        values_milli=script(),
        host=host,
        port=port,
        cert=cert,
        key=key,
    ).start()
    controller: Component | None = None
    try:
        lab.apply(
            aggregation.manifests(
                name=SERVER_NAME,
                namespace=SERVER_NAMESPACE,
                address=host,
                target_port=port,
                api_versions=[(GROUP, VERSION)],
                ca_path=lab.pki.ca.pair.cert_path,
            )
        )
        lab.wait_for(
            functools.partial(lab.api_service_available, API_SERVICE),
            what=f"APIService {API_SERVICE} Available",
            timeout_seconds=120,
        )
        lab.wait_for(
            lambda: ((deployments.latest(NAME) or {}).get("status") or {}).get("replicas") == 1,
            what="the Deployment at 1 replica",
            timeout_seconds=60,
        )
        assert not served.served(), "nothing may read the metric before the controller starts"
        controller = start_controller(
            lab,
            "hpa-controller-sim-parity",
            flags=[
                f"--horizontal-pod-autoscaler-sync-period={round(SYNC_SECONDS * 1000)}ms",
                "--leader-elect=false",
                "--log-level=debug",  # one "reconciled" line per sync
            ],
        )
        lab.apply([manifest()])
        yield LabRun(served, controller, deployments, hpas)
    finally:
        deployments.stop()
        hpas.stop()
        if controller is not None and controller.name in lab.group.components:
            lab.group.end(controller.name)
        served.stop()
        lab.kubectl("delete", "apiservice", API_SERVICE, "--ignore-not-found")
        lab.kubectl("delete", "namespace", NAMESPACE, SERVER_NAMESPACE, "--wait=false")


def test_simulator_replays_the_lab_controller_sync_by_sync(
    lab: Lab, lab_run: LabRun, capsys: pytest.CaptureFixture[str]
) -> None:
    # reads past the trace: the reconcile of the last step has finished (and logged), with room
    # for a few reads no decision was made on
    lab.wait_for(
        lambda: len(lab_run.served.served()) >= STEPS + 5,
        what=f"{STEPS} syncs of hpa controller",
        timeout_seconds=STEPS * SYNC_SECONDS * 2 + 60,
        interval_seconds=1.0,
    )
    lab.group.end(lab_run.controller.name)
    stored = lab_run.hpas.latest(NAME) or {}
    tolerances = [
        stored.get("spec", {}).get("behavior", {}).get(direction, {}).get("tolerance")
        for direction in ("scaleUp", "scaleDown")
    ]
    assert tolerances == ["0", "0"], (
        f"the API server dropped behavior tolerance (got {tolerances}): without it the proposal "
        "depends on the Deployment's status.replicas and the comparison is not exact"
    )

    served = lab_run.served.served()
    assert [value.value_milli for value in served[:STEPS]] == script(), (
        "the server answered the script in order"
    )
    reconciles = controller_reconciles(lab_run.controller.log_path, key=f"{NAMESPACE}/{NAME}")
    syncs, unused = align(reconciles, served)
    failed = sum(reconcile.desired is None for reconcile in reconciles)
    assert len(syncs) >= STEPS, (
        f"the controller decided {len(syncs)} times on {len(served)} metric reads\n"
        f"{component_log(lab_run.controller)}"
    )
    syncs = syncs[:STEPS]
    lab_desired = [sync.desired for sync in syncs]
    times = [sync.at - syncs[0].at for sync in syncs]
    simulated = simulate_recorded(times, [sync.value_milli for sync in syncs])

    intervals = [b - a for a, b in itertools.pairwise(times)]
    lab_replicas = changes([n for _, n in replica_steps(lab_run.deployments, NAME)])
    report(
        capsys,
        f"sim parity: {STEPS} syncs at {SYNC_SECONDS:g}s, intervals "
        f"{min(intervals):.3f}..{max(intervals):.3f}s; {len(changes(lab_desired)) - 1} changes "
        f"of desired replicas; {failed} reconciles whose fetch failed and {unused} reads no "
        f"decision was made on, left out\nhpa controller (lab): {run_lengths(lab_desired)}\n"
        f"simulator:            {run_lengths(simulated.desired)}\n"
        f"Deployment spec.replicas, lab: {lab_replicas}\n"
        f"Deployment spec.replicas, sim: {changes([1, *simulated.replicas])}",
    )
    mismatch = next(
        (k for k, (a, b) in enumerate(zip(lab_desired, simulated.desired, strict=True)) if a != b),
        None,
    )
    assert mismatch is None, (
        f"first difference at sync {mismatch} (t = {times[mismatch]:.3f}s): lab "
        f"{lab_desired[max(0, mismatch - 5) : mismatch + 5]} vs simulator "
        f"{simulated.desired[max(0, mismatch - 5) : mismatch + 5]} around it\n"
        f"{component_log(lab_run.controller)}\n{describe_hpas(lab, NAMESPACE)}"
    )
    # what the API server saw: every scale the controller wrote, in order. The lab may hold more
    # (the syncs after the trace, on its last value) and may miss the very last write (still on
    # its way to the watch when the controller stopped)
    simulated_replicas = changes([1, *simulated.replicas])
    common = min(len(simulated_replicas), len(lab_replicas))
    assert simulated_replicas[:common] == lab_replicas[:common]
    assert common >= len(simulated_replicas) - 1
    # a comparison that means something: the trace drives the HPA up and down, through the
    # policies, the windows and the max bound
    assert len(changes(lab_desired)) > 20
    assert max(lab_desired) == MAX_REPLICAS
    assert min(lab_desired) == 1
