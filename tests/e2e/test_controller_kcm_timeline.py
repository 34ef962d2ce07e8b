"""End to end, side by side with kube-controller-manager's HPA controller, timeline by timeline.

Twin namespaces, Deployments and HPAs run in two labs at once: the session lab under ``hpa
controller`` (kcm's HPA controller off) and a second lab whose kube-controller-manager runs its
own HPA controller. Both controllers have the same flags (a 2 s sync period, a 30 s CPU
initialization period, a 10 s initial readiness delay), both labs run ``hpa adapter`` with the
same rules over their own exporter and Prometheus, and the same load trace plays in both at once.

Scenarios (each in its own namespace, all concurrently):

- ``cpu``: CPU utilization (target 50 %, requests 100m) with pods making Ready transitions (the
  new pods are Pending, then Running and not Ready, then Ready within the CPU initialization
  period, their samples ignored for one metric window) and a missing pod: a bare pod the HPA's
  selector picks up that has no metrics, counted at 0 % on the way up and at 100 % of its
  request on the way down. The exporter's ``lab_container_cpu_usage_cores`` gauge is the CPU
  source, so a load step is one metric step (a rate would show a partial value for one scrape).
- ``tolerance``: an External per-pod target with per-HPA tolerances (5 % up, 25 % down) and loads
  that land exactly on each band's edge (inside: no change), then just past it.
- ``behavior``: an External per-pod target with ``Pods`` and ``Percent`` scale-up policies over a
  5 s period (``selectPolicy: Max``), a 5 s scale-down stabilization window and a ``Percent``
  scale-down policy over 5 s.

For each scenario the test compares, between the two controllers, the Deployment's replicas over
time: every change's value, the load step it follows, and its delay within one sync period (plus
0.5 s for a write to arrive through the watch): the first change after a step from the scrape
that brought the step's load into the lab's Prometheus, each later one from the previous change
(so a stabilization window or a policy period shows as such, whatever each controller's sync
phase).
It also checks each side against the expected sequence, so both controllers are seen to exercise
what the scenario names.

The session lab's ``hpa adapter`` is then the metrics.k8s.io server for ``kubectl top pods`` and
``kubectl top nodes`` (the exporter's series carry the pod's ``node``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controller_lab import (
    ADAPTER_API_VERSIONS,
    ApiReader,
    ObjectWatch,
    adapter_rules,
    component_log,
    condition,
    cpu_utilization_metric,
    deployment_manifest,
    describe_hpas,
    desired_steps,
    hpa_manifest,
    offered_load_metric,
    replica_steps,
    report,
    start_adapter,
    start_controller,
)
from tests.lab.controlplane import ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component, LabError

pytestmark = pytest.mark.e2e

SYNC_SECONDS = 2.0
HPA_FLAGS = (
    "--horizontal-pod-autoscaler-cpu-initialization-period=30s",
    "--horizontal-pod-autoscaler-initial-readiness-delay=10s",
)
RULES = adapter_rules(window_seconds=3, cpu_gauge=True)
LATENCY_SECONDS = 0.5
"""Allowance for a write's arrival through a watch on a loaded machine, on top of one sync."""
TRACE_TIMEOUT_SECONDS = 26.0
"""From the trace's start until every scenario has reached its last expected value."""


def _behavior(up: dict[str, Any], down: dict[str, Any]) -> dict[str, Any]:
    return {"scaleUp": up, "scaleDown": down}


FAST_UP = {
    "stabilizationWindowSeconds": 0,
    "policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}],
}
FAST_DOWN = {
    "stabilizationWindowSeconds": 0,
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 1}],
}


@dataclass(frozen=True)
class Scenario:
    name: str
    replicas: int
    metric: dict[str, Any]
    behavior: dict[str, Any]
    initial_rps: float
    steps: tuple[tuple[float, float], ...]
    """(seconds from the trace's start, offered requests/s)."""
    expected: tuple[int, ...]
    """The Deployment's replicas after the trace starts, change by change."""
    missing_pod: bool = False
    max_replicas: int = 8

    @property
    def namespace(self) -> str:
        return f"kcm-{self.name}"

    @property
    def workload(self) -> str:
        return f"{self.name}-twin"


SCENARIOS = (
    # 1 pod at 4 rps: 50 % (10m + 4 x 10m), the missing pod not counted at a ratio of exactly 1.
    # 16 rps: 170 %, the missing pod at 0: ceil(1.7 x 2) = 4; the 3 new pods are unready (0 %)
    # until Ready plus one 3 s window, and the ratio with them at 0 flips below 1: no change.
    # Then 4 pods at 50 %: 4. 0 rps: 4 pods at 10 %, the missing pod at 100 %:
    # ceil(0.56 x 5) = 3, and at 3 pods ceil(0.65 x 4) = 3 (1 without the missing pod's rule).
    Scenario(
        name="cpu",
        replicas=1,
        metric=cpu_utilization_metric(50),
        behavior=_behavior(FAST_UP, FAST_DOWN),
        initial_rps=4,
        steps=((0, 16), (12, 0)),
        expected=(4, 3),
        missing_pod=True,
    ),
    # 4 pods at a target of 10 each. 42: ratio 1.05, inside the 5 % up band; 43: ceil(4.3) = 5;
    # 37.5 at 5 pods: ratio 0.75, inside the 25 % down band; 37: ceil(3.7) = 4.
    Scenario(
        name="tolerance",
        replicas=4,
        metric=offered_load_metric("tolerance-twin", "10"),
        behavior=_behavior({**FAST_UP, "tolerance": "0.05"}, {**FAST_DOWN, "tolerance": "0.25"}),
        initial_rps=40,
        steps=((0, 42), (4, 43), (8, 37.5), (12, 37)),
        expected=(5, 4),
    ),
    # 60: 6 wanted; at most max(+2 pods, +100 %) per 5 s: 1 -> 3 -> 6, 3 syncs apart. 25: 3
    # wanted, after the 5 s window (2 to 3 syncs after the step), at most -50 % per 5 s: 6 -> 3.
    # Each period and window is a sync and a half, so a controller that ignored one would be at
    # least a sync early.
    Scenario(
        name="behavior",
        replicas=1,
        metric=offered_load_metric("behavior-twin", "10"),
        behavior=_behavior(
            {
                "stabilizationWindowSeconds": 0,
                "selectPolicy": "Max",
                "policies": [
                    {"type": "Pods", "value": 2, "periodSeconds": 5},
                    {"type": "Percent", "value": 100, "periodSeconds": 5},
                ],
            },
            {
                "stabilizationWindowSeconds": 5,
                "policies": [{"type": "Percent", "value": 50, "periodSeconds": 5}],
            },
        ),
        initial_rps=5,
        steps=((0, 60), (10, 25)),
        expected=(3, 6, 3),
    ),
)


def unmetered_pod(scenario: Scenario) -> dict[str, Any]:
    """A bare pod the HPA's selector (the Deployment's) picks up and the exporter does not
    (it lacks the ``metered`` label): a pod with no metrics."""
    template = deployment_manifest(scenario.workload, scenario.namespace, replicas=1)
    spec = template["spec"]["template"]["spec"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{scenario.workload}-unmetered",
            "namespace": scenario.namespace,
            "labels": {"app": scenario.workload},
        },
        "spec": spec,
    }


def manifests(scenario: Scenario) -> list[dict[str, Any]]:
    deployment = deployment_manifest(
        scenario.workload, scenario.namespace, replicas=scenario.replicas
    )
    template = deployment["spec"]["template"]["metadata"]  # its labels are the selector's dict
    template["labels"] = {**template["labels"], "metered": "yes"}
    objects = [
        deployment,
        hpa_manifest(
            scenario.workload,
            scenario.namespace,
            min_replicas=1,
            max_replicas=scenario.max_replicas,
            metrics=[scenario.metric],
            behavior=scenario.behavior,
        ),
    ]
    if scenario.missing_pod:
        objects.append(unmetered_pod(scenario))
    return objects


@dataclass(frozen=True)
class Step:
    set_at: float
    """When the test set the load (a change before it cannot follow this step)."""
    scraped_at: float
    """When the scrape that brought the new load into Prometheus happened."""


@dataclass
class Side:
    label: str
    lab: Lab
    adapter: Component
    hpas: ObjectWatch
    deployments: ObjectWatch
    controller: Component | None
    steps: dict[str, list[Step]] = field(default_factory=dict)
    """Per scenario: each trace step's times (monotonic)."""

    def failure(self) -> str:
        log = component_log(self.controller) if self.controller else "(kube-controller-manager)"
        hpas = "\n".join(describe_hpas(self.lab, s.namespace) for s in SCENARIOS)
        try:
            pods = self.lab.kubectl("get", "pods", "-A", "-o", "wide")
        except Exception as error:  # noqa: BLE001 - a failure report must not fail
            pods = f"(kubectl get pods failed: {error!r})"
        return f"--- {self.label} ---\n{log}\n{hpas}\n{pods}"

    def settled_at_start(self, scenario: Scenario) -> bool:
        hpa = self.hpas.latest(scenario.workload) or {}
        status = hpa.get("status") or {}
        deployment = self.deployments.latest(scenario.workload) or {}
        return (
            condition(hpa, "ScalingActive")[0] == "True"
            and status.get("desiredReplicas") == scenario.replicas
            and (deployment.get("status") or {}).get("readyReplicas") == scenario.replicas
        )

    def changes(self, scenario: Scenario, began: float) -> list[tuple[float, int]]:
        """The Deployment's replicas after ``began``: (arrival, value) at each change."""
        return [
            (at, value)
            for at, value in replica_steps(self.deployments, scenario.workload)
            if at >= began
        ]

    def timeline(self, scenario: Scenario, began: float) -> list[tuple[int, float, int]]:
        """(index of the load step it follows, seconds since the previous event, value) for each
        change of the Deployment's replicas, where the previous event is the step's metric
        becoming visible for the first change after a step, and the previous change otherwise:
        so each gap is one decision's delay (a sync phase, a window, a policy period), and the
        two controllers' sync phases do not add up along the timeline."""
        steps = self.steps[scenario.name]
        result: list[tuple[int, float, int]] = []
        previous_step, previous_at = -1, began
        for at, value in self.changes(scenario, began):
            step = max((i for i, one in enumerate(steps) if one.set_at <= at), default=-1)
            since = previous_at if step == previous_step else steps[step].scraped_at
            result.append((step, round(at - since, 1), value))
            previous_step, previous_at = step, at
        return result

    def conditions(self, scenario: Scenario, began: float) -> set[str]:
        """Every ``type=status/reason`` the HPA's conditions took after ``began`` (a set: which
        version carries which depends on where the syncs fall between the steps)."""
        return {
            f"{c['type']}={c['status']}/{c.get('reason', '')}"
            for seen in self.hpas.seen(scenario.workload)
            if seen.at_seconds >= began
            for c in (seen.object.get("status") or {}).get("conditions") or ()
        }

    def desired(self, scenario: Scenario, began: float) -> list[int]:
        return [v for at, v in desired_steps(self.hpas, scenario.workload) if at >= began]


def _prepare(lab: Lab, work: Path, label: str, *, ours: bool) -> Side:
    """Workloads first (their pods get Ready while the adapter starts), then the adapter."""
    for scenario in SCENARIOS:
        profile = WorkloadProfile(
            scenario.namespace,
            scenario.workload,
            {"app": scenario.workload, "metered": "yes"},
            cpu_per_request_milli=10,
            base_cpu_milli=10,
            cpu_gauge=True,
        )
        lab.add_workload(profile, rps=scenario.initial_rps)
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.namespace}}
        for s in SCENARIOS
    ]
    lab.apply(namespaces + [item for s in SCENARIOS for item in manifests(s)])
    controller = None
    if ours:
        controller = start_controller(
            lab,
            "hpa-controller-kcm-timeline",
            flags=[
                f"--horizontal-pod-autoscaler-sync-period={SYNC_SECONDS:g}s",
                *HPA_FLAGS,
                "--leader-elect=false",
            ],
        )
    reader = ApiReader(lab)
    hpas = ObjectWatch(reader, "/apis/autoscaling/v2/horizontalpodautoscalers").start()
    deployments = ObjectWatch(reader, "/apis/apps/v1/deployments").start()
    adapter = start_adapter(lab, work, rules=RULES, relist_interval="2s")
    return Side(label, lab, adapter, hpas, deployments, controller)


def _teardown(side: Side) -> None:
    """The session lab's part (the upstream lab goes away as a whole), its steps at once."""
    side.hpas.stop()
    side.deployments.stop()
    processes = side.lab.group
    ending = [
        c.name for c in (side.controller, side.adapter) if c and c.name in processes.components
    ]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        deleted = pool.submit(
            side.lab.kubectl,
            "delete",
            *(f"apiservice/{version}.{group}" for group, version in ADAPTER_API_VERSIONS),
            *(f"namespace/{s.namespace}" for s in SCENARIOS),
            "--wait=false",
            "--ignore-not-found",
        )
        for ended in [pool.submit(processes.end, name) for name in ending]:
            ended.result()
        deleted.result()


class UpstreamLab:
    """The second lab (kcm's HPA controller on), started and prepared in a thread of its own that
    lives until ``close``: the lab's processes die with the thread that started them
    (``PR_SET_PDEATHSIG`` follows the thread), so that thread must outlive the test."""

    def __init__(self, work: Path) -> None:
        self._work = work
        self._ready = threading.Event()
        self._release = threading.Event()
        self._side: Side | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kcm-lab", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        config = LabConfig(
            aggregation_test_server=False,
            control_plane=ControlPlaneConfig(
                node_count=1,
                hpa_controller_enabled=True,
                hpa_sync_period_seconds=SYNC_SECONDS,
                hpa_controller_flags=HPA_FLAGS,
            ),
        )
        try:
            with Lab(config) as lab:
                self._side = _prepare(lab, self._work, "kcm", ours=False)
                self._ready.set()
                self._release.wait()
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread by side()
            self._error = error
        finally:
            self._ready.set()

    def side(self) -> Side:
        self._ready.wait()
        if self._side is None:
            raise AssertionError(f"the kube-controller-manager lab did not start: {self._error!r}")
        return self._side

    def release(self) -> None:
        """Let the thread stop its lab (in the background)."""
        if self._side is not None:
            self._side.hpas.stop()
            self._side.deployments.stop()
        self._release.set()

    def join(self) -> None:
        self._thread.join(timeout=60)


@dataclass
class Pair:
    upstream: Side
    ours: Side
    upstream_lab: UpstreamLab


@pytest.fixture(scope="module")
def pair(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with contextlib.ExitStack() as stack:
        upstream_lab = UpstreamLab(tmp_path_factory.mktemp("kcm-upstream"))
        stack.callback(upstream_lab.join)
        stack.callback(upstream_lab.release)
        ours = _prepare(lab, tmp_path_factory.mktemp("kcm-ours"), "ours", ours=True)
        stack.callback(_teardown, ours)
        stack.callback(upstream_lab.release)  # first: the upstream lab stops meanwhile
        yield Pair(upstream_lab.side(), ours, upstream_lab)


def _play(side: Side, scenario: Scenario, start: threading.Barrier) -> float:
    """Play the scenario's steps in one lab, recording when each was set and when the scrape
    that brought it into the lab's Prometheus happened (its sample's timestamp, on the monotonic
    clock); returns the monotonic time of the start."""
    start.wait(timeout=30)
    began = time.monotonic()
    series = f'lab_workload_offered_load_rps{{namespace="{scenario.namespace}"}}'
    steps = side.steps[scenario.name] = []
    for offset, rps in scenario.steps:
        while time.monotonic() < began + offset:
            time.sleep(0.02)
        set_at = time.monotonic()
        side.lab.set_load(scenario.namespace, scenario.workload, rps)
        deadline = time.monotonic() + 10
        while True:
            if any(abs(s.value - rps) < 1e-9 for s in side.lab.prometheus.query(series)):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{side.label}: {series} never showed {rps}")
            time.sleep(0.02)
        scraped = side.lab.prometheus.query(f"timestamp({series})")[0].value
        steps.append(Step(set_at, time.monotonic() - (time.time() - scraped)))
    return began


def _done(sides: tuple[Side, Side], began: dict[str, float]) -> bool:
    return all(
        tuple(v for _, v in side.changes(s, began[side.label])) == s.expected
        for side in sides
        for s in SCENARIOS
    )


def test_timelines_match_kube_controller_manager(
    pair: Pair, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream, ours = pair.upstream, pair.ours
    sides = (upstream, ours)
    entered = time.monotonic()
    for side in sides:
        for scenario in SCENARIOS:
            try:
                side.lab.wait_for(
                    functools.partial(side.settled_at_start, scenario),
                    what=f"{side.label}: {scenario.namespace} active at {scenario.replicas}",
                    timeout_seconds=60,
                    interval_seconds=0.2,
                )
            except LabError as error:
                raise AssertionError(f"{error}\n{side.failure()}") from error

    barrier = threading.Barrier(len(sides) * len(SCENARIOS))
    jobs = [(side, scenario) for side in sides for scenario in SCENARIOS]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        starts = list(pool.map(lambda job: _play(job[0], job[1], barrier), jobs))
    began = {
        side.label: min(t for (s, _), t in zip(jobs, starts, strict=True) if s is side)
        for side in sides
    }
    with contextlib.suppress(LabError):
        ours.lab.wait_for(
            functools.partial(_done, sides, began),
            what="every scenario at its last expected value on both sides",
            timeout_seconds=TRACE_TIMEOUT_SECONDS - (time.monotonic() - min(began.values())),
            interval_seconds=0.2,
        )
    time.sleep(SYNC_SECONDS)  # one more sync: no change after the last expected one
    report(
        capsys,
        f"all HPAs active {min(began.values()) - entered:.1f} s after the test began; "
        f"trace and last sync {time.monotonic() - min(began.values()):.1f} s",
    )

    problems = []
    for scenario in SCENARIOS:
        timelines = {side.label: side.timeline(scenario, began[side.label]) for side in sides}
        report(
            capsys,
            f"{scenario.name}: (load step, s since the step's scrape or the previous change, "
            "replicas) "
            + "; ".join(f"{label} {timeline}" for label, timeline in timelines.items()),
        )
        theirs, mine = timelines[upstream.label], timelines[ours.label]
        for side in sides:
            values = tuple(value for _, _, value in timelines[side.label])
            if values != scenario.expected:
                problems.append(f"{scenario.name}: {side.label} {values} != {scenario.expected}")
        if [(step, value) for step, _, value in theirs] != [
            (step, value) for step, _, value in mine
        ]:
            problems.append(f"{scenario.name}: kcm {theirs} != ours {mine}")
            continue
        for (step, gap_kcm, value), (_, gap_ours, _) in zip(theirs, mine, strict=True):
            if abs(gap_kcm - gap_ours) > SYNC_SECONDS + LATENCY_SECONDS:
                problems.append(
                    f"{scenario.name}: {value} after step {step}, {gap_ours} s after the previous "
                    f"event here and {gap_kcm} s under kcm (more than one {SYNC_SECONDS:g} s sync)"
                )
        conditions = {side.label: side.conditions(scenario, began[side.label]) for side in sides}
        if conditions[upstream.label] != conditions[ours.label]:
            problems.append(f"{scenario.name}: conditions {conditions}")
        desired = {side.label: side.desired(scenario, began[side.label]) for side in sides}
        if desired[upstream.label] != desired[ours.label]:
            problems.append(f"{scenario.name}: desiredReplicas {desired}")
    failures = f"\n{upstream.failure()}\n{ours.failure()}" if problems else ""
    pair.upstream_lab.release()  # everything is recorded: the upstream lab stops meanwhile
    assert not problems, "\n".join(problems) + failures


def _millis(text: str) -> int:
    return int(text.removesuffix("m")) if text.endswith("m") else int(text) * 1000


def _top(lab: Lab, *args: str) -> dict[str, list[str]]:
    lines = lab.kubectl("top", *args, "--no-headers").splitlines()
    return {fields[0]: fields[1:] for fields in (line.split() for line in lines)}


def test_kubectl_top_pods_and_nodes_read_our_adapter(pair: Pair) -> None:
    """``kubectl top`` against ``hpa adapter``'s metrics.k8s.io in the session lab: every
    exported pod with its CPU, and each node with the sum of its pods' CPU (the series' ``node``
    label); the unmetered pod is absent, as under metrics-server a pod without samples is."""
    lab = pair.ours.lab
    node_cpu: dict[str, int] = {}
    pods_on: dict[str, int] = {}
    for scenario in SCENARIOS:
        pods = lab.kubectl_json("get", "pods", "-n", scenario.namespace)["items"]
        node_of = {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in pods}
        top_pods = _top(lab, "pods", "-n", scenario.namespace)
        exported = {name for name in node_of if not name.endswith("-unmetered")}
        assert set(top_pods) == exported, top_pods
        for name, (cpu, memory) in top_pods.items():
            assert _millis(cpu) >= 10, top_pods  # the 10m base at least
            assert memory.endswith("Mi"), top_pods
            node_cpu[node_of[name]] = node_cpu.get(node_of[name], 0) + _millis(cpu)
            pods_on[node_of[name]] = pods_on.get(node_of[name], 0) + 1
    top_nodes = _top(lab, "nodes")
    for node, pods_cpu in node_cpu.items():
        assert node in top_nodes, top_nodes
        # kubectl rounds each pod's figure and the node's to whole millicores
        assert abs(_millis(top_nodes[node][0]) - pods_cpu) <= pods_on[node], (top_nodes, node_cpu)
        assert top_nodes[node][2].endswith("Mi"), top_nodes
