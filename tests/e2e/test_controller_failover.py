"""End to end: two ``hpa controller`` replicas with leader election; SIGKILL of the leader.

Each replica has its own client certificate (users ``hpa-controller-a`` and ``hpa-controller-b``,
both in ``system:masters``), so kube-apiserver's audit log names the replica behind every write
(the session lab logs the metadata of every write). The Lease timings are shortened to 10 s /
7 s / 1 s: client-go's candidates (and ours) poll with up to 120 % jitter, so with the upstream
defaults (15 s / 10 s / 2 s) a takeover can take up to 15 + 2 x 4.4 s after a kill; with these it
is at most 10 + 2 x 2.2 s, within the issue's 17 s.
"""

from __future__ import annotations

import datetime as dt
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.controller_lab import (
    ApiReader,
    AuditWrite,
    ObjectWatch,
    adapter_rules,
    audit_writes,
    component_log,
    controller_kubeconfig,
    deployment_manifest,
    describe_hpas,
    hpa_manifest,
    offered_load_metric,
    replica_steps,
    report,
    start_adapter,
    start_controller,
    stop_adapter,
)
from tests.lab.lab import Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component, LabError

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-controller-failover"
NAME = "web"
LEASE_NAMESPACE = "kube-system"
LEASE_NAME = "hpa-controller-e2e"
USERS = ("hpa-controller-a", "hpa-controller-b")
SYNC_SECONDS = 3.0
TAKEOVER_BOUND_SECONDS = 17.0
TIMEOUT_SECONDS = 60.0


@dataclass
class Pair:
    lab: Lab
    reader: ApiReader
    deployments: ObjectWatch
    controllers: dict[str, Component]

    def failure(self, message: str) -> str:
        logs = "\n".join(component_log(c) for c in self.controllers.values())
        return f"{message}\n{logs}\n{describe_hpas(self.lab, NAMESPACE)}"

    def wait(
        self, check: Callable[[], bool], *, what: str, timeout_seconds: float = TIMEOUT_SECONDS
    ) -> None:
        try:
            self.lab.wait_for(
                check, what=what, timeout_seconds=timeout_seconds, interval_seconds=0.2
            )
        except LabError as error:
            raise AssertionError(self.failure(str(error).split("\n", 1)[0])) from error

    def replicas(self) -> int:
        latest = self.deployments.latest(NAME)
        return int(latest["spec"]["replicas"]) if latest else -1

    def lease_spec(self) -> dict[str, Any]:
        lease = self.reader.try_get(
            f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{LEASE_NAME}"
        )
        spec: dict[str, Any] = (lease or {}).get("spec") or {}
        return spec

    def holder(self) -> str:
        return str(self.lease_spec().get("holderIdentity") or "")

    def renewed(self) -> bool:
        """The holder has renewed for at least 3 s (a leader that led, not one killed at once)."""
        spec = self.lease_spec()
        if not spec.get("acquireTime") or not spec.get("renewTime"):
            return False
        acquired = dt.datetime.fromisoformat(spec["acquireTime"].replace("Z", "+00:00"))
        renewed = dt.datetime.fromisoformat(spec["renewTime"].replace("Z", "+00:00"))
        return (renewed - acquired).total_seconds() >= 3

    def leader(self) -> str | None:
        """The user whose replica logged ``lease_acquired`` (its log names its identity)."""
        holder = self.holder()
        if not holder:
            return None
        for user, component in self.controllers.items():
            text = component.log_path.read_text(errors="replace")
            if "lease_acquired" in text and holder in text:
                return user
        return None


@pytest.fixture(scope="module")
def pair(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    lab.kubectl("create", "namespace", NAMESPACE)
    adapter = start_adapter(
        lab,
        tmp_path_factory.mktemp("failover-adapter"),
        rules=adapter_rules(window_seconds=5),
        relist_interval="2s",
    )
    reader = ApiReader(lab)
    deployments = ObjectWatch(reader, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments").start()
    flags = [
        f"--horizontal-pod-autoscaler-sync-period={SYNC_SECONDS:g}s",
        "--leader-elect=true",
        "--leader-elect-lease-duration=10s",
        "--leader-elect-renew-deadline=7s",
        "--leader-elect-retry-period=1s",
        f"--leader-elect-resource-namespace={LEASE_NAMESPACE}",
        f"--leader-elect-resource-name={LEASE_NAME}",
    ]
    controllers = {
        user: start_controller(lab, user, kubeconfig=controller_kubeconfig(lab, user), flags=flags)
        for user in USERS
    }
    try:
        yield Pair(lab, reader, deployments, controllers)
    finally:
        deployments.stop()
        for component in controllers.values():
            if component.name in lab.group.components:
                lab.group.end(component.name)
        stop_adapter(lab, adapter)
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def test_killing_the_leader_hands_over_within_17_s_without_overlapping_writes(
    pair: Pair, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = pair.lab
    lab.add_workload(WorkloadProfile(NAMESPACE, NAME, {"app": NAME}), rps=20)
    lab.apply(
        [
            deployment_manifest(NAME, NAMESPACE, replicas=1),
            hpa_manifest(
                NAME,
                NAMESPACE,
                min_replicas=1,
                max_replicas=6,
                metrics=[offered_load_metric(NAME, "10")],
            ),
        ]
    )
    pair.wait(lambda: pair.leader() is not None, what="one replica to hold the Lease")
    pair.wait(lambda: pair.replicas() == 2, what="the leader to scale web to 2")
    pair.wait(pair.renewed, what="the leader to renew its Lease for 3 s")
    old = pair.leader()
    assert old is not None
    new = next(user for user in USERS if user != old)
    old_identity = pair.holder()

    killed_wall = dt.datetime.now(dt.UTC)
    killed = time.monotonic()
    lab.group.end(old, sig=signal.SIGKILL)
    pair.wait(
        lambda: pair.holder() not in ("", old_identity),
        what="the other replica to take the Lease",
        timeout_seconds=40,
    )
    takeover = time.monotonic() - killed
    # the Lease is written before the new leader logs lease_acquired (with its identity)
    pair.wait(lambda: pair.leader() == new, what=f"{new} to log its Lease", timeout_seconds=10)

    lab.set_load(NAMESPACE, NAME, 50)
    pair.wait(lambda: pair.replicas() == 5, what="the new leader to scale web to 5")
    scaled = replica_steps(pair.deployments, NAME)[-1][0] - killed

    writes = list(audit_writes(lab.control_plane.audit_log_path, users=set(USERS)))
    # a refused write changed nothing: the standby's Lease create that lost the race at start-up
    # (409 AlreadyExists) is not a write made while the other replica led
    accepted = [w for w in writes if w.code < 400]
    by_old = [w for w in accepted if w.user == old]
    by_new = [w for w in accepted if w.user == new]
    first_new = min(by_new, key=lambda w: w.received)
    late_old = [w for w in by_old if w.completed >= first_new.received]
    early_new = [w for w in by_new if w.received < killed_wall]
    summary = {
        user: dict(Counter(w.target.split(" ")[0] for w in writes if w.user == user))
        for user in USERS
    }
    report(
        capsys,
        f"failover: {old} killed; {new} took the Lease {takeover:.1f} s later and scaled web "
        f"2 -> 5 {scaled:.1f} s after the kill; writes by replica: {summary}; first write of "
        f"the new leader: {first_new.target} at {first_new.received.isoformat()}; last write of "
        f"the old leader: {max(w.completed for w in by_old).isoformat()}",
    )
    assert takeover <= TAKEOVER_BOUND_SECONDS, pair.failure(f"takeover after {takeover:.1f} s")
    assert _scale_writes(by_old), pair.failure(f"{old} made no /scale write before the kill")
    assert _scale_writes(by_new), pair.failure(f"{new} made no /scale write after the takeover")
    assert not late_old, pair.failure(f"{old} wrote after {new}'s first write: {late_old}")
    assert not early_new, pair.failure(f"{new} wrote while {old} still led: {early_new}")


def _scale_writes(writes: list[AuditWrite]) -> list[AuditWrite]:
    return [w for w in writes if w.resource == "deployments" and w.subresource == "scale"]
