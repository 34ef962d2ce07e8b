"""hpa.kube against a real kube-apiserver (the lab): informers, /scale, /status, events, Lease.

Each test works in its own namespace. kube-controller-manager's HPA controller is off in the lab,
so nothing else writes HPA status; the Deployment controller does update Deployments, which is
what makes a stale Scale stale.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import yaml

from hpa.core.conditions import Event
from hpa.core.selector import parse_selector
from hpa.kube.client import ClientSettings, KubeClient, load_client
from hpa.kube.clock import SystemClock
from hpa.kube.events import EventRecorder, HpaEventReason, hpa_reference
from hpa.kube.informer import EventHandler, Informer
from hpa.kube.leader import KubeLeaseStore, LeaderElectionSettings, LeaderElector
from hpa.kube.records import HpaRecord, PodRecord, ScaleTargetRef, parse_hpa, parse_pod
from hpa.kube.scale import ResourceMapper, ScaleClient, ScaleConflict, ScaleUpdated
from hpa.kube.status import StatusWriteOutcome, StatusWriter
from tests.lab.lab import Lab

pytestmark = pytest.mark.e2e

WAIT_SECONDS = 60.0


@pytest.fixture
async def kube(lab: Lab) -> AsyncIterator[KubeClient]:
    client = await load_client(
        ClientSettings(kubeconfig_path=str(lab.kubeconfig), qps=50, burst=100)
    )
    yield client
    await client.close()


@pytest.fixture
def namespace(lab: Lab) -> Iterator[str]:
    name = f"kube-shell-{uuid.uuid4().hex[:8]}"
    lab.kubectl("create", "namespace", name)
    yield name
    lab.kubectl("delete", "namespace", name, "--wait=false")


async def kubectl(lab: Lab, *args: str, stdin: str | None = None) -> str:
    return await asyncio.to_thread(lab.kubectl, *args, stdin=stdin)


async def apply(lab: Lab, obj: dict[str, Any]) -> None:
    await kubectl(lab, "apply", "-f", "-", stdin=yaml.safe_dump(obj))


def hpa_manifest(namespace: str, name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"team": "search"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                }
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}},
        },
    }


def deployment_manifest(namespace: str, replicas: int) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ]
                },
            },
        },
    }


class Calls:
    """Handler calls as (kind, name), with a wait on a condition over them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self._changed = asyncio.Event()

    def handler(self) -> EventHandler[Any]:
        return EventHandler(
            on_add=lambda r: self._note("add", r.name),
            on_update=lambda old, new: self._note("update", new.name),
            on_delete=lambda r: self._note("delete", r.name),
        )

    def _note(self, kind: str, name: str) -> None:
        self.calls.append((kind, name))
        self._changed.set()

    async def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        try:
            async with asyncio.timeout(WAIT_SECONDS):
                while not predicate():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            pytest.fail(f"timed out waiting for {what}; calls: {self.calls}")


async def test_informers_see_pod_and_hpa_creates_updates_and_deletes(
    lab: Lab, kube: KubeClient, namespace: str
) -> None:
    clock = SystemClock()
    pods: Informer[PodRecord] = Informer(
        kube, f"/api/v1/namespaces/{namespace}/pods", parse=parse_pod, clock=clock
    )
    hpas: Informer[HpaRecord] = Informer(
        kube,
        f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers",
        parse=parse_hpa,
        clock=clock,
    )
    pod_calls, hpa_calls = Calls(), Calls()
    pods.add_handler(pod_calls.handler())
    hpas.add_handler(hpa_calls.handler())
    tasks = [
        asyncio.create_task(pods.run(), name="informer:pods"),
        asyncio.create_task(hpas.run(), name="informer:hpas"),
    ]
    try:
        async with asyncio.timeout(WAIT_SECONDS):
            await pods.wait_synced()
            await hpas.wait_synced()
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": namespace, "labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "250m"}},
                    }
                ]
            },
        }
        await apply(lab, pod)
        await pod_calls.wait_for(lambda: ("add", "p") in pod_calls.calls, "pod add")

        def ready() -> bool:
            record = pods.store.get_by_name(namespace, "p")
            return record is not None and record.is_ready

        await pod_calls.wait_for(ready, "the pod to become Ready (kwok)")
        record = pods.store.get_by_name(namespace, "p")
        assert record is not None
        assert record.info.phase == "Running"
        assert record.info.ready_condition is not None
        assert dict(record.info.containers[0].requests_milli) == {"cpu": 250}
        assert [r.name for r in pods.store.select(namespace, parse_selector("app=web"))] == ["p"]
        await kubectl(lab, "delete", "pod", "p", "-n", namespace, "--grace-period=0", "--force")
        await pod_calls.wait_for(lambda: ("delete", "p") in pod_calls.calls, "pod delete")
        assert pods.store.get_by_name(namespace, "p") is None

        await apply(lab, hpa_manifest(namespace))
        await hpa_calls.wait_for(lambda: ("add", "web") in hpa_calls.calls, "hpa add")
        await kubectl(
            lab,
            "patch",
            "hpa",
            "web",
            "-n",
            namespace,
            "--type=merge",
            "-p",
            '{"spec":{"maxReplicas":7}}',
        )

        def max_replicas_seen() -> bool:
            hpa = hpas.store.get_by_name(namespace, "web")
            return hpa is not None and hpa.spec.get("maxReplicas") == 7

        await hpa_calls.wait_for(max_replicas_seen, "hpa update")
        assert ("update", "web") in hpa_calls.calls
        await kubectl(lab, "delete", "hpa", "web", "-n", namespace)
        await hpa_calls.wait_for(lambda: ("delete", "web") in hpa_calls.calls, "hpa delete")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_scale_writes_with_a_precondition_and_a_stale_scale_conflicts(
    lab: Lab, kube: KubeClient, namespace: str
) -> None:
    await apply(lab, deployment_manifest(namespace, replicas=1))
    scales = ScaleClient(kube, ResourceMapper(kube, clock=SystemClock()))
    target = ScaleTargetRef(api_version="apps/v1", kind="Deployment", name="web")
    scale = await scales.get(namespace, target)
    assert scale.spec_replicas == 1
    assert scale.selector == "app=web"
    # The Deployment controller and kwok keep updating the new Deployment's status, so a read can
    # go stale before the write: the conflict result carries a fresh Scale to try again with, as
    # the controller's next sync would.
    result: ScaleUpdated | ScaleConflict = ScaleConflict(current=scale, message="")
    conflicts = -1
    while isinstance(result, ScaleConflict) and conflicts < 20:
        conflicts += 1
        read = result.current
        result = await scales.update(namespace, target, read, replicas=2)
    assert isinstance(result, ScaleUpdated), f"still conflicting after {conflicts} re-reads"
    assert result.scale.spec_replicas == 2
    stale = await scales.update(namespace, target, read, replicas=4)
    assert isinstance(stale, ScaleConflict)
    assert stale.current.spec_replicas == 2
    deployment = await asyncio.to_thread(lab.kubectl_json, "get", "deploy", "web", "-n", namespace)
    assert deployment["spec"]["replicas"] == 2, "the stale write did not land"


async def test_status_write_lands_skips_when_unchanged_and_keeps_the_rest(
    lab: Lab, kube: KubeClient, namespace: str
) -> None:
    await apply(lab, hpa_manifest(namespace))
    path = f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/web"
    hpa = parse_hpa(await kube.get(path))
    status = {
        "currentReplicas": 1,
        "desiredReplicas": 2,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": 90, "averageValue": "90m"},
                },
            }
        ],
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "reason": "SucceededRescale",
                "message": "the HPA controller was able to update the target scale to 2",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    writer = StatusWriter(kube)
    written = await writer.write(hpa, status)
    assert written.outcome is StatusWriteOutcome.WRITTEN
    stored = await asyncio.to_thread(lab.kubectl_json, "get", "hpa", "web", "-n", namespace)
    assert stored["status"]["desiredReplicas"] == 2
    assert stored["status"]["currentMetrics"][0]["resource"]["current"]["averageValue"] == "90m"
    assert stored["metadata"]["annotations"]["team"] == "search"
    assert stored["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 120
    again = await writer.write(parse_hpa(await kube.get(path)), status)
    assert again.outcome is StatusWriteOutcome.UNCHANGED
    stale = await writer.write(hpa, {**status, "desiredReplicas": 3})
    assert stale.outcome is StatusWriteOutcome.CONFLICT


async def test_events_appear_in_kubectl_get_events_with_counts(
    lab: Lab, kube: KubeClient, namespace: str
) -> None:
    await apply(lab, hpa_manifest(namespace))
    hpa = parse_hpa(
        await kube.get(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/web")
    )
    recorder = EventRecorder(kube, clock=SystemClock())
    task = asyncio.create_task(recorder.run(), name="events")
    try:
        reference = hpa_reference(namespace, "web", uid=hpa.uid)
        event = Event(
            "Normal",
            HpaEventReason.SUCCESSFUL_RESCALE,
            "New size: 2; reason: cpu resource utilization (percentage of request) above target",
        )
        recorder.record(reference, event)
        recorder.record(reference, event)
        async with asyncio.timeout(WAIT_SECONDS):
            await recorder.flush()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    events = (await asyncio.to_thread(lab.kubectl_json, "get", "events", "-n", namespace))["items"]
    [seen] = [e for e in events if e["reason"] == "SuccessfulRescale"]
    assert seen["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
    assert seen["involvedObject"]["uid"] == hpa.uid
    assert seen["source"]["component"] == "horizontal-pod-autoscaler"
    assert seen["count"] == 2
    assert seen["type"] == "Normal"


async def test_leader_election_hands_over_when_the_leader_releases(
    lab: Lab, kube: KubeClient, namespace: str
) -> None:
    clock = SystemClock()
    store = KubeLeaseStore(kube, namespace, "hpa-controller")
    first = LeaderElector(store, LeaderElectionSettings(identity="first"), clock=clock)
    second = LeaderElector(store, LeaderElectionSettings(identity="second"), clock=clock)
    first_task = asyncio.create_task(first.run(), name="elector:first")
    second_task: asyncio.Task[None] | None = None
    try:
        async with asyncio.timeout(WAIT_SECONDS):
            await first.leading.wait()
        second_task = asyncio.create_task(second.run(), name="elector:second")
        await asyncio.sleep(5)  # real time: two of second's retry periods against a live lease
        assert first.is_leader()
        assert not second.leading.is_set()
        released_at = asyncio.get_running_loop().time()
        first_task.cancel()
        await asyncio.gather(first_task, return_exceptions=True)
        assert not first.is_leader()
        async with asyncio.timeout(WAIT_SECONDS):
            await second.leading.wait()
        handover_seconds = asyncio.get_running_loop().time() - released_at
        assert handover_seconds < 2 * (1 + 1.2) + 1, "the successor did not wait out the lease"
        lease = await asyncio.to_thread(
            lab.kubectl_json, "get", "lease", "hpa-controller", "-n", namespace
        )
        assert lease["spec"]["holderIdentity"] == "second"
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        first_task.cancel()
        if second_task is not None:
            second_task.cancel()
        await asyncio.gather(
            first_task, *([second_task] if second_task else []), return_exceptions=True
        )
