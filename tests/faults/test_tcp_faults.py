"""TCP faults from toxiproxy (``tests/lab/toxiproxy.py``) on the four network paths of
``hpa controller`` and ``hpa adapter`` in the lab (the short version; ``bench/faults.py`` runs
every fault on every path, repeated).

The paths, each through its own toxiproxy proxy (TLS passes through unchanged):

- the controller to kube-apiserver (its kubeconfig points at the proxy; its metrics calls to the
  aggregated APIs take this path too);
- the adapter to kube-apiserver (its kubeconfig: TokenReviews, SubjectAccessReviews, discovery);
- the adapter to Prometheus (``--prometheus-url``);
- the controller to Prometheus, with ``--metrics-source=inprocess`` (the adapter's providers in
  the controller process).

The faults (toxics, on the answers' direction unless said): a latency spike past every metrics
deadline, a mild latency, a timeout (data dropped, the connection closed after 2 s), a half-open
connection (data dropped, the connection never closed), connections reset (TCP RST), connections
closed after a few bytes (``limit_data``), and a bandwidth limit.

Each round: one HPA at its target, a fault on one path, the load changed (it falls and rises in
turn) while the fault lasts, then the fault removed. Checked in every round, as a user would see
it: no crash; the replicas take no value but the old one and the right one for the new load (no
scale-down on missing metrics); where the fault leaves the controller without metrics (``blocks``)
and it can still write, ``ScalingActive=False`` and no change at all while it lasts; the right
replicas within two syncs after the fault clears, with ``ScalingActive=True``; and over the
whole run, one accepted scale write per replica change in kube-apiserver's audit log (no decision
written twice).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hpa.kube.clock import parse_time
from tests.e2e.controller_lab import (
    ApiReader,
    ObjectWatch,
    adapter_rules,
    audit_writes,
    component_log,
    condition,
    controller_kubeconfig,
    deployment_manifest,
    describe_hpas,
    hpa_manifest,
    offered_load_metric,
    replica_steps,
    report,
    scale_writes,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component, LabError, wait_until
from tests.lab.toxiproxy import Toxiproxy

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

NAMESPACE = "faults-tcp"
SYNC_SECONDS = 3.0
METRIC_TIMEOUT_SECONDS = 3.0
"""``--horizontal-pod-autoscaler-metric-timeout`` (upstream's default is 10 s): a metrics call on a
dead connection gives up within one sync, so a round lasts seconds, not tens of seconds."""
PER_REPLICA_RPS = 10
HIGH, LOW = 50, 10
SLACK_SECONDS = 6.0
"""Room for the exporter's gauge to reach Prometheus and the adapter's read (as tests/faults).
On the controller's own path it is the HPA informer's reconnect backoff instead: the status write
(``ScalingActive=True``) carries the informer's resourceVersion, as upstream's does, and is
refused until the watch is back; client-go's backoff after the three failures an 8 s timeout
fault allows is at most 6.4 s (docs/reliability.md, "The recovery bound")."""
LONG = os.environ.get("HPA_FAULTS_LONG") == "1"
HOLD_SECONDS = (2 * SYNC_SECONDS if LONG else SYNC_SECONDS) + METRIC_TIMEOUT_SECONDS + 2.0
"""How long each fault lasts: the next sync's metrics call gives up (one sync and the metric
timeout), and the status is written, before the fault is removed."""
LATE_WRITE_SECONDS = 2 * SYNC_SECONDS if LONG else SYNC_SECONDS
CONTROLLER_API_HOLD_SECONDS = min(HOLD_SECONDS, 8.0 if LONG else 2 * SYNC_SECONDS)
"""Shorter than the controller's renew deadline (10 s): a leader cut off from kube-apiserver for
longer stops leading and exits, as kube-controller-manager does (tests/faults' partition). The
next round starts only once the leader has renewed its Lease after the fault: two faults on
this path back to back (8 s cut off, then 1 KB/s) outlast the renew deadline together."""
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/hpa-controller"
REPEATS = int(os.environ.get("HPA_FAULTS_TCP_REPEATS") or (3 if LONG else 1))
"""How often each round runs (``bench/faults.py``: three; ``HPA_FAULTS_TCP_REPEATS`` sets it)."""
CONTROLLER_API = "controller-apiserver"
ADAPTER_API = "adapter-apiserver"
ADAPTER_PROMETHEUS = "adapter-prometheus"
CONTROLLER_PROMETHEUS = "controller-prometheus"
PATHS = {
    CONTROLLER_API: "controller → kube-apiserver",
    ADAPTER_API: "adapter → kube-apiserver",
    ADAPTER_PROMETHEUS: "adapter → Prometheus",
    CONTROLLER_PROMETHEUS: "controller (in-process metrics) → Prometheus",
}


@dataclass(frozen=True)
class Fault:
    name: str
    toxic: str
    attributes: dict[str, int]
    blocks: bool
    """The controller gets no metrics while it lasts (on a metrics path)."""
    stream: str = "downstream"


FAULTS = {
    f.name: f
    for f in (
        Fault("latency spike", "latency", {"latency": 8000, "jitter": 500}, blocks=True),
        Fault("latency", "latency", {"latency": 200, "jitter": 100}, blocks=False),
        Fault("timeout", "timeout", {"timeout": 2000}, blocks=True),
        Fault("half-open", "timeout", {"timeout": 0}, blocks=True),
        Fault("reset", "reset_peer", {"timeout": 0}, blocks=True),
        Fault("limit data", "limit_data", {"bytes": 64}, blocks=True),
        Fault("bandwidth", "bandwidth", {"rate": 1}, blocks=False),
    )
}
SHORT_ROUNDS = {
    "api": [(CONTROLLER_API, "half-open"), (ADAPTER_PROMETHEUS, "latency spike")],
    "inprocess": [(CONTROLLER_PROMETHEUS, "reset")],
}
LONG_ROUNDS = {
    "api": [(p, f) for p in (CONTROLLER_API, ADAPTER_API, ADAPTER_PROMETHEUS) for f in FAULTS],
    "inprocess": [(CONTROLLER_PROMETHEUS, f) for f in FAULTS],
}
ONLY = [r for r in os.environ.get("HPA_FAULTS_TCP_ONLY", "").split(",") if r]
"""``PATH:FAULT,...`` (e.g. ``controller-apiserver:half-open``): run only these rounds of the
long version, in this order, to reproduce one case."""
ROUNDS = LONG_ROUNDS if LONG else SHORT_ROUNDS
if ONLY:
    ROUNDS = {
        test: [r for o in ONLY for r in rounds if f"{r[0]}:{r[1]}" == o]
        for test, rounds in LONG_ROUNDS.items()
    }


def desired(rps: float) -> int:
    return max(1, min(8, math.ceil(rps / PER_REPLICA_RPS)))


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}"


@dataclass
class Tcp:
    lab: Lab
    toxiproxy: Toxiproxy
    listen: dict[str, str]
    deployments: ObjectWatch
    hpas: ObjectWatch
    adapter: Component
    work: Path


@pytest.fixture(scope="module")
def tcp(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tcp]:
    lab.kubectl("create", "namespace", NAMESPACE)
    work = tmp_path_factory.mktemp("faults-tcp")
    toxiproxy = Toxiproxy.start(lab.group, name="toxiproxy")
    api, prometheus = _host_port(lab.server_url), _host_port(lab.prometheus_url)
    listen = {
        CONTROLLER_API: toxiproxy.proxy(CONTROLLER_API, api),
        ADAPTER_API: toxiproxy.proxy(ADAPTER_API, api),
        ADAPTER_PROMETHEUS: toxiproxy.proxy(ADAPTER_PROMETHEUS, prometheus),
        CONTROLLER_PROMETHEUS: toxiproxy.proxy(CONTROLLER_PROMETHEUS, prometheus),
    }
    adapter = start_adapter(
        lab,
        work,
        rules=adapter_rules(window_seconds=5),
        relist_interval="2s",
        kubeconfig=controller_kubeconfig(
            lab, "hpa-adapter-tcp", server=f"https://{listen[ADAPTER_API]}"
        ),
        # the last --prometheus-url wins: the adapter reaches Prometheus through its proxy
        extra_flags=(f"--prometheus-url=http://{listen[ADAPTER_PROMETHEUS]}",),
    )
    reader = ApiReader(lab)
    deployments = ObjectWatch(reader, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments").start()
    hpas = ObjectWatch(
        reader, f"/apis/autoscaling/v2/namespaces/{NAMESPACE}/horizontalpodautoscalers"
    ).start()
    try:
        yield Tcp(lab, toxiproxy, listen, deployments, hpas, adapter, work)
    finally:
        deployments.stop()
        hpas.stop()
        stop_adapter(lab, adapter)
        lab.group.end(toxiproxy.component.name)
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def _failure(s: Tcp, controller: Component, message: str) -> str:
    logs = "\n".join(component_log(c) for c in (controller, s.adapter))
    return f"{message}\n{logs}\n{describe_hpas(s.lab, NAMESPACE)}"


def _run_rounds(
    s: Tcp,
    capsys: pytest.CaptureFixture[str],
    *,
    name: str,
    controller_flags: list[str],
    rounds: list[tuple[str, str]],
) -> None:
    lab, user = s.lab, f"hpa-controller-{name}"
    reader = ApiReader(lab)
    # Not in system:masters (which the adapter, as upstream's delegated authorizer, allows
    # without asking): every metrics request makes the adapter ask kube-apiserver
    # (SubjectAccessReview, cached 10 s), so faults on the adapter's path to it reach the metrics.
    lab.kubectl(
        "create", "clusterrolebinding", user, "--clusterrole=cluster-admin", f"--user={user}"
    )  # fmt: skip
    lab.add_workload(WorkloadProfile(NAMESPACE, name, {"app": name}), rps=HIGH)
    lab.apply(
        [
            deployment_manifest(name, NAMESPACE, replicas=desired(HIGH)),
            hpa_manifest(
                name,
                NAMESPACE,
                min_replicas=1,
                max_replicas=8,
                metrics=[offered_load_metric(name, str(PER_REPLICA_RPS))],
                behavior={"scaleDown": {"stabilizationWindowSeconds": 0}},
            ),
        ]
    )
    controller = start_controller(
        lab,
        user,
        kubeconfig=controller_kubeconfig(
            lab, user, server=f"https://{s.listen[CONTROLLER_API]}", groups=()
        ),
        flags=[
            f"--horizontal-pod-autoscaler-sync-period={SYNC_SECONDS:g}s",
            f"--horizontal-pod-autoscaler-metric-timeout={METRIC_TIMEOUT_SECONDS:g}s",
            *controller_flags,
        ],
    )

    def wait(check: Any, what: str, timeout_seconds: float = 60.0) -> None:
        try:
            wait_until(
                check,
                what=what,
                timeout_seconds=timeout_seconds,
                group=lab.group,
                interval_seconds=0.2,
            )
        except LabError as error:
            raise AssertionError(_failure(s, controller, str(error).split("\n", 1)[0])) from error

    def replicas() -> int:
        latest = s.deployments.latest(name)
        return int(latest["spec"]["replicas"]) if latest else -1

    def active() -> str:
        return condition(s.hpas.latest(name), "ScalingActive")[0]

    def renewed_since(since: dt.datetime) -> bool:
        renewed = parse_time(reader.get(LEASE_PATH)["spec"].get("renewTime"))
        return renewed is not None and renewed > since

    try:
        rps = HIGH
        wait(lambda: replicas() == desired(rps) and active() == "True", f"{name} at {desired(rps)}")
        started_wall = dt.datetime.now(dt.UTC)
        started = time.monotonic()
        results = []
        for path, fault_name in rounds * REPEATS:
            fault = FAULTS[fault_name]
            before, rps = replicas(), (LOW if rps == HIGH else HIGH)
            want = desired(rps)
            toxic = s.toxiproxy.add_toxic(path, fault.toxic, fault.attributes, stream=fault.stream)
            faulted = time.monotonic()
            lab.set_load(NAMESPACE, name, rps)
            inactive: float | None = None
            hold = CONTROLLER_API_HOLD_SECONDS if path == CONTROLLER_API else HOLD_SECONDS
            while time.monotonic() - faulted < hold:
                if inactive is None and active() == "False":
                    inactive = time.monotonic() - faulted
                time.sleep(0.2)
            s.toxiproxy.remove_toxic(path, toxic)
            cleared, cleared_wall = time.monotonic(), dt.datetime.now(dt.UTC)
            during = [n for t, n in replica_steps(s.deployments, name) if faulted <= t < cleared]
            wait(
                lambda: replicas() == want and active() == "True",  # noqa: B023 - this round's
                f"{name} right ({want}, ScalingActive=True) after {fault_name} on {path} cleared",
                timeout_seconds=60.0,
            )
            right = time.monotonic() - cleared
            results.append(
                {
                    "path": path,
                    "fault": fault_name,
                    "replicas_during": during,
                    "inactive_after_s": None if inactive is None else round(inactive, 1),
                    "right_after_s": round(right, 1),
                }
            )
            where = f"{fault_name} on {PATHS[path]}"
            assert controller.process.poll() is None, _failure(
                s, controller, f"controller exited ({where})"
            )
            assert s.adapter.process.poll() is None, _failure(
                s, controller, f"adapter exited ({where})"
            )
            assert set(during) <= {before, want}, _failure(
                s, controller, f"replicas {during} during {where} ({before} -> {want})"
            )
            # Strict on the Prometheus paths only: on its own path to kube-apiserver the controller
            # cannot write its status, and on the adapter's the adapter answers from its
            # SubjectAccessReview cache (10 s) for part of the fault.
            if fault.blocks and path in (ADAPTER_PROMETHEUS, CONTROLLER_PROMETHEUS):
                assert not during, _failure(
                    s, controller, f"scaled {during} without metrics ({where})"
                )
                assert inactive is not None, _failure(
                    s, controller, f"never ScalingActive=False during {where}"
                )
            assert right <= 2 * SYNC_SECONDS + SLACK_SECONDS, _failure(
                s, controller, f"right only {right:.1f} s after {where} cleared: {results}"
            )
            if path == CONTROLLER_API:
                wait(
                    lambda: renewed_since(cleared_wall),  # noqa: B023 - this round's
                    f"the Lease renewed after {where} cleared",
                    timeout_seconds=15.0,
                )
        time.sleep(LATE_WRITE_SECONDS)  # a late second write of the last decision would land here
        changes = [n for t, n in replica_steps(s.deployments, name) if t >= started]
        writes = list(audit_writes(lab.control_plane.audit_log_path, users={user}))
        accepted = [
            w for w in scale_writes(writes, name) if w.code == 200 and w.received >= started_wall
        ]
        report(
            capsys,
            f"TCP faults ({name}), {len(results)} rounds: {len(accepted)} scale writes accepted "
            f"for {len(changes)} replica changes; {results}",
        )
        assert len(accepted) == len(changes), _failure(
            s, controller, f"{len(accepted)} accepted scale writes for {len(changes)} changes"
        )
    finally:
        s.toxiproxy.reset()
        lab.group.end(controller.name)
        lab.kubectl("delete", "hpa", name, "-n", NAMESPACE, "--ignore-not-found")
        lab.kubectl("delete", "clusterrolebinding", user, "--ignore-not-found")


def test_tcp_faults_on_the_api_server_and_prometheus_paths(
    tcp: Tcp, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_rounds(tcp, capsys, name="tcp-api", controller_flags=[], rounds=ROUNDS["api"])


def test_tcp_faults_on_the_controllers_own_prometheus_path(
    tcp: Tcp, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tcp.work / "inprocess-rules.yaml"
    rules.write_text(adapter_rules(window_seconds=5))
    flags = [
        "--metrics-source=inprocess",
        f"--config={rules}",
        f"--prometheus-url=http://{tcp.listen[CONTROLLER_PROMETHEUS]}",
        "--metrics-relist-interval=2s",
    ]
    _run_rounds(
        tcp, capsys, name="tcp-inprocess", controller_flags=flags, rounds=ROUNDS["inprocess"]
    )
