"""The event recorder: upstream's shape and source, count bumps for repeats, never raising."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from hpa.core.conditions import Event
from hpa.kube.client import KubeClient
from hpa.kube.events import EventRecorder, HpaEventReason, hpa_reference
from hpa.kube.fence import NotLeaderError
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.clock import FakeClock

EVENTS = "/api/v1/namespaces/default/events"
WEB = hpa_reference("default", "web", uid="uid-1")
RESCALE = Event(
    "Normal", HpaEventReason.SUCCESSFUL_RESCALE, "New size: 4; reason: cpu above target"
)


class ClosedFence:
    def check(self) -> None:
        raise NotLeaderError("lost the lease")


@pytest.fixture
async def recorder(
    kube: KubeClient,
) -> AsyncIterator[tuple[EventRecorder, FakeClock, CollectorRegistry]]:
    clock, registry = FakeClock(), CollectorRegistry()
    recorder = EventRecorder(kube, clock=clock, host="node-1", registry=registry)
    task = asyncio.create_task(recorder.run(), name="events")
    yield recorder, clock, registry
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def stored_events(apiserver: FakeApiServer) -> list[dict[str, object]]:
    return [obj for (_, plural, _, _), obj in apiserver.objects.items() if plural == "events"]


async def test_an_event_is_written_like_kube_controller_managers_recorder(
    apiserver: FakeApiServer, recorder: tuple[EventRecorder, FakeClock, CollectorRegistry]
) -> None:
    events, _, _ = recorder
    events.record(WEB, RESCALE)
    async with asyncio.timeout(5):
        await events.flush()
    [event] = stored_events(apiserver)
    assert event["reason"] == "SuccessfulRescale"
    assert event["type"] == "Normal"
    assert event["source"] == {"component": "horizontal-pod-autoscaler", "host": "node-1"}
    assert event["involvedObject"] == {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "namespace": "default",
        "name": "web",
        "uid": "uid-1",
    }
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert str(event["metadata"]["name"]).startswith("web.")  # type: ignore[index]


async def test_a_repeated_event_bumps_the_count(
    apiserver: FakeApiServer, recorder: tuple[EventRecorder, FakeClock, CollectorRegistry]
) -> None:
    events, clock, registry = recorder
    events.record(WEB, RESCALE)
    async with asyncio.timeout(5):
        await events.flush()
    await clock.advance(30)
    events.record(WEB, RESCALE)
    events.record(WEB, Event("Warning", HpaEventReason.FAILED_GET_SCALE, "deployments not found"))
    async with asyncio.timeout(5):
        await events.flush()
    stored = sorted(stored_events(apiserver), key=lambda e: str(e["reason"]))
    assert [(e["reason"], e["count"]) for e in stored] == [
        ("FailedGetScale", 1),
        ("SuccessfulRescale", 2),
    ]
    assert stored[1]["lastTimestamp"] == "2026-01-01T00:00:30Z"
    assert stored[1]["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert registry.get_sample_value("hpa_events_recorded_total", {"action": "count_bump"}) == 1


async def test_an_expired_event_is_created_again(
    apiserver: FakeApiServer, recorder: tuple[EventRecorder, FakeClock, CollectorRegistry]
) -> None:
    events, _, _ = recorder
    events.record(WEB, RESCALE)
    async with asyncio.timeout(5):
        await events.flush()
    [event] = stored_events(apiserver)
    apiserver.delete_object("/api/v1", "events", "default", event["metadata"]["name"])  # type: ignore[index]
    events.record(WEB, RESCALE)
    async with asyncio.timeout(5):
        await events.flush()
    assert [e["count"] for e in stored_events(apiserver)] == [1]


async def test_recording_never_raises_and_failures_are_counted(
    apiserver: FakeApiServer, recorder: tuple[EventRecorder, FakeClock, CollectorRegistry]
) -> None:
    events, _, registry = recorder
    apiserver.fail("POST", EVENTS, status=403, reason="Forbidden")
    events.record(WEB, RESCALE)  # returns at once, whatever the server says
    async with asyncio.timeout(5):
        await events.flush()
    assert stored_events(apiserver) == []
    assert registry.get_sample_value("hpa_events_dropped_total", {"cause": "write_failed"}) == 1
    events.record(WEB, RESCALE)
    async with asyncio.timeout(5):
        await events.flush()
    assert len(stored_events(apiserver)) == 1, "the recorder keeps going after a failure"


async def test_a_fenced_recorder_writes_nothing(apiserver: FakeApiServer, kube: KubeClient) -> None:
    registry = CollectorRegistry()
    events = EventRecorder(kube, clock=FakeClock(), fence=ClosedFence(), registry=registry)
    task = asyncio.create_task(events.run())
    events.record(WEB, RESCALE)
    async with asyncio.timeout(5):
        await events.flush()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert apiserver.requests_to("POST", EVENTS) == []
    assert registry.get_sample_value("hpa_events_dropped_total", {"cause": "not_leader"}) == 1


async def test_the_pending_queue_is_bounded(kube: KubeClient) -> None:
    registry = CollectorRegistry()
    events = EventRecorder(kube, clock=FakeClock(), max_pending=3, registry=registry)
    for index in range(5):
        events.record(WEB, Event("Normal", "SuccessfulRescale", f"New size: {index}"))
    assert registry.get_sample_value("hpa_events_dropped_total", {"cause": "queue_full"}) == 2
