"""End to end: ``hpa controller`` scales real workloads in the lab through ``hpa adapter``.

The lab runs kube-apiserver with kube-controller-manager's HPA controller off; ``hpa adapter``
serves metrics.k8s.io, custom and external metrics from the lab's Prometheus (1 s scrape, 5 s
rate windows), and ``hpa controller`` runs as a subprocess with a 3 s sync period and a 30 s
downscale stabilization. Replica counts are observed through watches of the Deployments (their
``spec.replicas``, what ``/scale`` writes) and the HPAs (status and conditions).

The two behavior workloads start with the module, so their minute-long policies run while the
other tests do; ``test_behavior_policies_bound_the_steps`` then reads what happened. The
Prometheus outage comes last: it touches every HPA of the module.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.controller_lab import (
    ApiReader,
    ObjectWatch,
    adapter_rules,
    component_log,
    condition,
    cpu_utilization_metric,
    deployment_manifest,
    describe_hpas,
    first_time,
    hpa_manifest,
    offered_load_metric,
    pods_metric,
    replica_steps,
    report,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.lab.kwok import RESIZE_HOLD_ANNOTATION
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component, LabError

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-controller"
SYNC_SECONDS = 3.0
STABILIZATION_SECONDS = 30.0
"""Longer than the outage (12 s), Prometheus' first scrape after its restart (~5-7 s) and one rate
window (5 s) together: right after a gap, rate() over a window that is not yet full of samples
reads low, and once the window holds only those low recommendations a Pods-metric HPA scales
down (a 20 s window did: rps-web 4 -> 3). Upstream's 300 s window against the issue's 60 s
outage has the same room."""
WINDOW_SECONDS = 5
SLACK_SECONDS = 2.0
"""Reconcile time, watch delivery and our own polling, on a loaded 2-core machine."""
OUTAGE_SECONDS = 4 * SYNC_SECONDS
"""The issue's 60 s outage is 4 upstream sync periods (15 s); here 4 of ours."""
TIMEOUT_SECONDS = 90.0


@dataclass
class Scaling:
    lab: Lab
    reader: ApiReader
    deployments: ObjectWatch
    hpas: ObjectWatch
    controller: Component
    started_at: float

    def failure(self, message: str) -> str:
        return (
            f"{message}\n{component_log(self.controller)}\n"
            f"----- kubectl describe hpa -n {NAMESPACE} -----\n{describe_hpas(self.lab, NAMESPACE)}"
        )

    def wait(
        self, check: Callable[[], bool], *, what: str, timeout_seconds: float = TIMEOUT_SECONDS
    ) -> None:
        try:
            self.lab.wait_for(
                check, what=what, timeout_seconds=timeout_seconds, interval_seconds=0.2
            )
        except LabError as error:
            raise AssertionError(self.failure(str(error).split("\n", 1)[0])) from error

    def replicas(self, name: str) -> int:
        latest = self.deployments.latest(name)
        return int(latest["spec"]["replicas"]) if latest else -1

    def ready_replicas(self, name: str) -> int:
        latest = self.deployments.latest(name)
        return int((latest or {}).get("status", {}).get("readyReplicas") or 0)

    def hpa(self, name: str) -> dict[str, Any] | None:
        return self.hpas.latest(name)

    def reports_desired(self, name: str) -> bool:
        status = (self.hpa(name) or {}).get("status") or {}
        return bool(status.get("desiredReplicas") == self.replicas(name))

    def add(
        self,
        name: str,
        *,
        metrics: list[dict[str, Any]],
        max_replicas: int,
        behavior: dict[str, Any] | None = None,
        rps: int = 0,
    ) -> None:
        self.lab.add_workload(WorkloadProfile(NAMESPACE, name, {"app": name}), rps=rps)
        self.lab.apply(
            [
                deployment_manifest(name, NAMESPACE, replicas=1),
                hpa_manifest(
                    name,
                    NAMESPACE,
                    min_replicas=1,
                    max_replicas=max_replicas,
                    metrics=metrics,
                    behavior=behavior,
                ),
            ]
        )

    def seconds(self, at: float) -> float:
        return round(at - self.started_at, 1)


BEHAVIOR_PODS = "beh-pods"
BEHAVIOR_PERCENT = "beh-percent"


def _scale_up_only(policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [policy]}
    }


def add_behavior_workloads(scaling: Scaling) -> None:
    """The two workloads whose minute-long behavior policies run in the background of the other
    tests: Pods 4 per 60 s, and Percent 100 per 15 s."""
    scaling.add(
        BEHAVIOR_PODS,
        metrics=[offered_load_metric(BEHAVIOR_PODS, "10")],
        max_replicas=10,
        behavior=_scale_up_only({"type": "Pods", "value": 4, "periodSeconds": 60}),
        rps=100,
    )
    scaling.add(
        BEHAVIOR_PERCENT,
        metrics=[offered_load_metric(BEHAVIOR_PERCENT, "10")],
        max_replicas=8,
        behavior=_scale_up_only({"type": "Percent", "value": 100, "periodSeconds": 15}),
        rps=80,
    )


@pytest.fixture(scope="module")
def scaling(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scaling]:
    lab.kubectl("create", "namespace", NAMESPACE)
    adapter = start_adapter(
        lab,
        tmp_path_factory.mktemp("controller-adapter"),
        rules=adapter_rules(window_seconds=WINDOW_SECONDS),
        relist_interval="2s",
    )
    reader = ApiReader(lab)
    deployments = ObjectWatch(reader, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments").start()
    hpas = ObjectWatch(
        reader, f"/apis/autoscaling/v2/namespaces/{NAMESPACE}/horizontalpodautoscalers"
    ).start()
    controller = start_controller(
        lab,
        "hpa-controller",
        flags=[
            f"--horizontal-pod-autoscaler-sync-period={SYNC_SECONDS:g}s",
            f"--horizontal-pod-autoscaler-downscale-stabilization={STABILIZATION_SECONDS:g}s",
            "--leader-elect=false",
        ],
    )
    scaling = Scaling(lab, reader, deployments, hpas, controller, time.monotonic())
    add_behavior_workloads(scaling)
    try:
        yield scaling
    finally:
        deployments.stop()
        hpas.stop()
        if controller.name in lab.group.components:
            lab.group.end(controller.name)
        stop_adapter(lab, adapter)
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def scale_downs(watch: ObjectWatch, name: str, *, after: float) -> list[tuple[float, int, int]]:
    """(arrival, from, to) of every decrease of a Deployment's replicas that arrived after
    ``after``."""
    found: list[tuple[float, int, int]] = []
    steps = replica_steps(watch, name)
    for (_, earlier), (at, later) in itertools.pairwise(steps):
        if at >= after and later < earlier:
            found.append((at, earlier, later))
    return found


def _pod_cpu_milli(reader: ApiReader, app: str) -> list[int]:
    """Each pod's CPU usage in millicores as metrics.k8s.io answers through the aggregator."""
    body = reader.try_get(
        f"/apis/metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods?labelSelector=app%3D{app}"
    )
    usages: list[int] = []
    for item in (body or {}).get("items", []):
        text = item["containers"][0]["usage"]["cpu"]
        if text.endswith("n"):
            usages.append(int(text[:-1]) // 1_000_000)
        elif text.endswith("u"):
            usages.append(int(text[:-1]) // 1_000)
        elif text.endswith("m"):
            usages.append(int(text[:-1]))
        else:
            usages.append(int(float(text) * 1000))
    return usages


def test_cpu_step_scales_up_within_a_sync_and_down_after_the_window(
    scaling: Scaling, capsys: pytest.CaptureFixture[str]
) -> None:
    """Requests 100m, target 50 %. Idle pods burn 10m (10 %); 20 requests/s add 200m, so one
    pod is at 210 % and the controller wants 5. The scale-up must come within one sync period of
    the metric crossing the tolerance (55 %); after the load goes away, the scale-down must wait
    out the 30 s stabilization window (no earlier than window - sync after the drop)."""
    s, lab, name = scaling, scaling.lab, "cpu-web"
    s.add(name, metrics=[cpu_utilization_metric(50)], max_replicas=8)

    def idle_and_active() -> bool:
        status, _ = condition(s.hpa(name), "ScalingActive")
        current = (s.hpa(name) or {}).get("status", {}).get("currentMetrics") or []
        return status == "True" and bool(current)

    s.wait(idle_and_active, what="cpu-web's HPA to read the CPU metric (ScalingActive=True)")
    assert s.replicas(name) == 1

    lab.set_load(NAMESPACE, name, 20)
    loaded = time.monotonic()
    moved: list[float] = []

    def metric_moved() -> bool:
        usages = _pod_cpu_milli(s.reader, name)
        if usages and max(usages) > 55:
            moved.append(time.monotonic())
            return True
        return False

    s.wait(metric_moved, what="the pod's CPU above 55m through metrics.k8s.io", timeout_seconds=30)
    s.wait(lambda: s.replicas(name) > 1, what="cpu-web scaled up", timeout_seconds=30)
    scaled_up = replica_steps(s.deployments, name)[1][0]
    reaction = scaled_up - moved[0]
    report(
        capsys,
        f"cpu: load step at +{s.seconds(loaded)} s, metric above tolerance at "
        f"+{s.seconds(moved[0])} s, Deployment scaled at +{s.seconds(scaled_up)} s "
        f"({reaction:.1f} s after the metric moved; sync period {SYNC_SECONDS:g} s)",
    )
    assert reaction <= SYNC_SECONDS + SLACK_SECONDS, s.failure(
        f"scale-up {reaction:.1f} s after the metric moved (sync {SYNC_SECONDS} s)"
    )

    s.wait(
        lambda: s.replicas(name) >= 5 and s.ready_replicas(name) == s.replicas(name),
        what="cpu-web at 5 or more Ready replicas",
    )
    peak = s.replicas(name)
    lab.set_load(NAMESPACE, name, 0)
    dropped = time.monotonic()
    s.wait(
        lambda: s.replicas(name) < peak,
        what="cpu-web scaled down",
        timeout_seconds=STABILIZATION_SECONDS + 60,
    )
    scaled_down = replica_steps(s.deployments, name)[-1][0]
    delay = scaled_down - dropped
    stabilized = first_time(
        s.hpas,
        name,
        lambda hpa: condition(hpa, "AbleToScale") == ("True", "ScaleDownStabilized"),
        after=dropped,
    )
    report(
        capsys,
        f"cpu: load dropped at +{s.seconds(dropped)} s, {peak} -> {s.replicas(name)} replicas "
        f"{delay:.1f} s later (window {STABILIZATION_SECONDS:g} s); replicas over time: "
        f"{[(s.seconds(t), n) for t, n in replica_steps(s.deployments, name)]}",
    )
    assert delay >= STABILIZATION_SECONDS - SYNC_SECONDS, s.failure(f"scaled down after {delay} s")
    upper = STABILIZATION_SECONDS + 2 * SYNC_SECONDS + WINDOW_SECONDS + SLACK_SECONDS
    assert delay <= upper, s.failure(f"scaled down only after {delay:.1f} s (bound {upper} s)")
    no_stabilized = "no AbleToScale=True/ScaleDownStabilized while the window held the replicas"
    assert stabilized is not None, s.failure(no_stabilized)
    assert stabilized < scaled_down, s.failure(no_stabilized)
    # the rate window falls over a few syncs, so the highest recommendation of the window can
    # be an intermediate count (5 -> 2 -> 1)
    s.wait(lambda: s.replicas(name) == 1, what="cpu-web back at 1 replica", timeout_seconds=30)


def test_pods_and_external_metrics_drive_their_workloads(
    scaling: Scaling, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pods/http_requests_per_second`` at 10 per pod with 35 requests/s offered: 4 replicas.
    External ``lab_workload_offered_load_rps`` at 10 per replica with 25 offered: 3 replicas.
    (Loads off the integer boundaries: at 40 over 5 pods, a rate of 8.001 makes ceil(5 x 0.8001)
    = 5, so an overshoot to 5 would hold.)"""
    s = scaling
    s.add("rps-web", metrics=[pods_metric("http_requests_per_second", "10")], max_replicas=6)
    s.add("ext-web", metrics=[offered_load_metric("ext-web", "10")], max_replicas=6)
    started = time.monotonic()
    s.lab.set_load(NAMESPACE, "rps-web", 35)
    s.lab.set_load(NAMESPACE, "ext-web", 25)
    s.wait(
        lambda: s.replicas("rps-web") == 4 and s.replicas("ext-web") == 3,
        what="rps-web at 4 replicas and ext-web at 3",
    )
    rps_steps = [(s.seconds(t), n) for t, n in replica_steps(s.deployments, "rps-web")]
    ext_steps = [(s.seconds(t), n) for t, n in replica_steps(s.deployments, "ext-web")]
    report(
        capsys,
        f"loads set at +{s.seconds(started)} s; pods metric: rps-web {rps_steps}; "
        f"external metric: ext-web {ext_steps}",
    )
    for name, kind, metric in (
        ("rps-web", "pods", "http_requests_per_second"),
        ("ext-web", "external", "lab_workload_offered_load_rps"),
    ):
        s.wait(
            functools.partial(s.reports_desired, name),
            what=f"{name}'s HPA status to report its desired replicas",
        )
        hpa = s.hpa(name) or {}
        assert condition(hpa, "ScalingActive") == ("True", "ValidMetricFound"), s.failure(name)
        current = hpa["status"]["currentMetrics"][0]
        assert current["type"].lower() == kind
        assert current[kind]["metric"]["name"] == metric
    assert [n for _, n in replica_steps(s.deployments, "ext-web")] == [1, 3]


def test_behavior_policies_bound_the_steps(
    scaling: Scaling, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both HPAs want more than their policies allow at once (the loads were set with the
    module). ``Pods 4 per 60 s``: 1 -> 5, then nothing more until 60 s after that step, then 9.
    ``Percent 100 per 15 s``: 1 -> 2 -> 4 -> 8, each step at least 15 s after the previous."""
    s = scaling
    s.wait(
        lambda: s.replicas(BEHAVIOR_PODS) >= 9 and s.replicas(BEHAVIOR_PERCENT) == 8,
        what="beh-pods at 9 and beh-percent at 8",
        timeout_seconds=150,
    )
    pods_steps = replica_steps(s.deployments, BEHAVIOR_PODS)
    percent_steps = replica_steps(s.deployments, BEHAVIOR_PERCENT)
    report(capsys, f"Pods 4 per 60 s:      {[(s.seconds(t), n) for t, n in pods_steps]}")
    report(capsys, f"Percent 100 per 15 s: {[(s.seconds(t), n) for t, n in percent_steps]}")
    assert [n for _, n in pods_steps][:3] == [1, 5, 9], s.failure(str(pods_steps))
    assert pods_steps[2][0] - pods_steps[1][0] >= 60 - 1, s.failure(str(pods_steps))
    assert [n for _, n in percent_steps] == [1, 2, 4, 8], s.failure(str(percent_steps))
    gaps = [later[0] - earlier[0] for earlier, later in itertools.pairwise(percent_steps[1:])]
    assert all(gap >= 15 - 1 for gap in gaps), s.failure(f"gaps {gaps}")
    limited = first_time(
        s.hpas,
        BEHAVIOR_PODS,
        lambda hpa: condition(hpa, "ScalingLimited") == ("True", "ScaleUpLimit"),
        after=pods_steps[1][0],
    )
    not_limited = "beh-pods never reported ScalingLimited=True/ScaleUpLimit while held at 5"
    assert limited is not None, s.failure(not_limited)
    assert limited < pods_steps[2][0], s.failure(not_limited)


def _utilization(s: Scaling, name: str) -> int | None:
    current = (s.hpa(name) or {}).get("status", {}).get("currentMetrics") or []
    if not current:
        return None
    value = current[0].get("resource", {}).get("current", {}).get("averageUtilization")
    return None if value is None else int(value)


def test_utilization_during_an_in_place_resize_uses_the_applied_requests(
    scaling: Scaling, capsys: pytest.CaptureFixture[str]
) -> None:
    """One idle pod (10m of 100m: 10 %) is resized in place to 200m while kwok holds the resize
    (the annotation ``lab.hpa.dev/resize-hold``): the spec says 200m, the container status still
    100m. The controller (resize-aware, its default) keeps measuring about 10 % for three sync
    periods; upstream would read 5 %. Once kwok completes the resize, the utilization is 5 %."""
    s, lab, name = scaling, scaling.lab, "resize-web"
    s.add(name, metrics=[cpu_utilization_metric(50)], max_replicas=1)
    s.wait(
        lambda: (_utilization(s, name) or 0) in range(8, 13),
        what="resize-web's HPA at 10 % of 100m",
    )
    pod = lab.kubectl("get", "pods", "-n", NAMESPACE, "-l", f"app={name}", "-o", "name").split()[0]

    def reported() -> bool:
        statuses = lab.kubectl_json("get", "-n", NAMESPACE, pod)["status"]["containerStatuses"]
        return "resources" in statuses[0]

    s.wait(reported, what="kwok to report the pod's container resources")
    lab.kubectl("annotate", "-n", NAMESPACE, pod, f"{RESIZE_HOLD_ANNOTATION}=true")
    resize = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]}}
    lab.kubectl(
        "patch",
        "-n",
        NAMESPACE,
        pod,
        "--subresource=resize",
        "--type=strategic",
        "-p",
        json.dumps(resize),
    )
    body = lab.kubectl_json("get", "-n", NAMESPACE, pod)
    assert body["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "200m"
    assert body["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] == "100m"
    held_until = time.monotonic() + 3 * SYNC_SECONDS
    seen: set[int | None] = set()
    while time.monotonic() < held_until:
        seen.add(_utilization(s, name))
        time.sleep(0.2)
    assert all(u is not None and u >= 8 for u in seen), s.failure(
        f"utilization during the resize: {sorted(map(str, seen))}"
    )
    lab.kubectl("annotate", "-n", NAMESPACE, pod, f"{RESIZE_HOLD_ANNOTATION}-")
    s.wait(
        lambda: (_utilization(s, name) or 99) <= 6,
        what="resize-web's HPA at 5 % of the applied 200m",
        timeout_seconds=30,
    )
    report(capsys, f"utilization during the held resize {sorted(map(str, seen))} %, after 5 %")


def test_prometheus_outage_mid_ramp_freezes_without_scaling_down(
    scaling: Scaling, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Pods-metric workload ramps from 10 to 130 requests/s over 60 s. Once it has scaled to
    3, Prometheus is stopped for 4 syncs. No Deployment of the module scales down; every HPA
    reports ScalingActive=False within one sync; once the metrics answer again, the ramp's HPA
    is active again and scales up within two syncs."""
    s, lab, name = scaling, scaling.lab, "ramp-web"
    s.add(name, metrics=[pods_metric("http_requests_per_second", "10")], max_replicas=20, rps=10)
    lab.set_load(NAMESPACE, name, 130, ramp_seconds=60)
    s.wait(lambda: s.replicas(name) >= 3, what="ramp-web at 3 replicas")
    names = [seen.name for seen in s.hpas.seen() if seen.kind == "ADDED"]
    s.wait(
        lambda: all(condition(s.hpa(n), "ScalingActive")[0] == "True" for n in names),
        what="every HPA active before the outage",
    )

    lab.prometheus.stop()
    killed = time.monotonic()
    s.wait(
        lambda: all(condition(s.hpa(n), "ScalingActive")[0] == "False" for n in names),
        what="every HPA ScalingActive=False",
        timeout_seconds=SYNC_SECONDS + 10,
    )
    inactive = {
        n: first_time(
            s.hpas, n, lambda hpa: condition(hpa, "ScalingActive")[0] == "False", after=killed
        )
        for n in names
    }
    s.wait(
        lambda: time.monotonic() - killed >= OUTAGE_SECONDS,
        what=f"{OUTAGE_SECONDS:g} s of outage",
        timeout_seconds=OUTAGE_SECONDS + 5,
    )
    frozen = {n: s.replicas(n) for n in names}
    lab.prometheus.start()
    restarted = time.monotonic()
    metric_path = (
        f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NAMESPACE}/pods/*/"
        f"http_requests_per_second?labelSelector=app%3D{name}"
    )
    s.wait(
        lambda: bool((s.reader.try_get(metric_path) or {}).get("items")),
        what="the pods metric answering again",
        timeout_seconds=30,
    )
    recovered = time.monotonic()
    s.wait(
        lambda: s.replicas(name) > frozen[name],
        what="ramp-web scaling again",
        timeout_seconds=2 * SYNC_SECONDS + 20,
    )
    resumed = replica_steps(s.deployments, name)[-1][0]

    # The status write follows the scale write and arrives on another watch stream: wait for it
    # instead of reading the HPA watch once.
    def reactivated() -> float | None:
        return first_time(
            s.hpas, name, lambda hpa: condition(hpa, "ScalingActive")[0] == "True", after=recovered
        )

    s.wait(
        lambda: reactivated() is not None,
        what="ramp-web ScalingActive=True again",
        timeout_seconds=SLACK_SECONDS,
    )
    active_again = reactivated()
    late = {n: round(at - killed, 1) for n, at in inactive.items() if at is not None}
    report(
        capsys,
        f"outage: Prometheus stopped at +{s.seconds(killed)} s for {restarted - killed:.1f} s; "
        f"ScalingActive=False after {late} s; pods metric back {recovered - restarted:.1f} s after "
        f"the restart; ramp-web {frozen[name]} -> {s.replicas(name)} "
        f"{resumed - recovered:.1f} s after the metric came back; "
        f"ramp-web {[(s.seconds(t), n) for t, n in replica_steps(s.deployments, name)]}",
    )
    downs = {n: found for n in names if (found := scale_downs(s.deployments, n, after=killed))}
    assert not downs, s.failure(f"scale-downs during the outage: {downs}")
    slow = [
        n for n, at in inactive.items() if at is None or at - killed > SYNC_SECONDS + SLACK_SECONDS
    ]
    assert not slow, s.failure(f"ScalingActive=False after {late} s (sync {SYNC_SECONDS:g} s)")
    assert resumed - recovered <= 2 * SYNC_SECONDS + SLACK_SECONDS, s.failure(
        f"scaled again {resumed - recovered:.1f} s after recovery"
    )
    assert active_again is not None, s.failure("ramp-web never ScalingActive=True again")
    assert active_again <= resumed + SLACK_SECONDS
