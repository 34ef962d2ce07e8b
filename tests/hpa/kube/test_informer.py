"""Informers against the fake API server: paginated list, watch, bookmarks, 410 relist, indexes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, cast

import hypothesis
import pytest
from hypothesis import strategies as st

from hpa.core.selector import parse_selector
from hpa.kube.client import GoneError, KubeClient
from hpa.kube.informer import EventHandler, Informer, InformerSettings, Store
from hpa.kube.records import HpaRecord, PodRecord, parse_hpa, parse_pod
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.clock import FakeClock

PODS = "/api/v1/pods"


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": "Running"},
    }


class Recorder:
    """Records handler calls as (type, name) and lets a test wait for a condition on them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self._changed = asyncio.Event()

    def handler(self) -> EventHandler[PodRecord]:
        return EventHandler(
            on_add=lambda r: self._record("add", r.name),
            on_update=lambda old, new: self._record("update", new.name),
            on_delete=lambda r: self._record("delete", r.name),
        )

    def _record(self, kind: str, name: str) -> None:
        self.calls.append((kind, name))
        self._changed.set()

    async def wait_for(self, predicate: Callable[[list[tuple[str, str]]], bool]) -> None:
        async with asyncio.timeout(5):
            while not predicate(self.calls):
                self._changed.clear()
                await self._changed.wait()


async def sync_once(informer: Informer[Any]) -> None:
    """Run ``informer`` until its first list is in the store, then stop it."""
    task = asyncio.create_task(informer.run())
    async with asyncio.timeout(5):
        await informer.wait_synced()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture
async def pods(
    apiserver: FakeApiServer, kube: KubeClient, clock: FakeClock
) -> AsyncIterator[tuple[Informer[PodRecord], Recorder]]:
    for index in range(5):
        apiserver.put_object("/api/v1", "pods", pod(f"p{index}", app="web" if index < 3 else "db"))
    informer = Informer(
        kube,
        PODS,
        parse=parse_pod,
        clock=clock,
        settings=InformerSettings(page_size=2),
        rng=random.Random(5),
    )
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    task = asyncio.create_task(informer.run(), name="informer:pods")
    async with asyncio.timeout(5):
        await informer.wait_synced()
    yield informer, recorder
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_first_list_is_paginated_and_fills_the_store(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder]
) -> None:
    informer, recorder = pods
    assert informer.has_synced()
    assert sorted(r.name for r in informer.store) == [f"p{i}" for i in range(5)]
    lists = [r for r in apiserver.requests if r.path == PODS and "watch" not in r.query]
    assert [r.query.get("continue") for r in lists] == [None, "105:2", "105:4"]
    assert all(r.query["limit"] == "2" for r in lists)
    assert sorted(recorder.calls) == [("add", f"p{i}") for i in range(5)]


async def test_watch_delivers_adds_updates_and_deletes(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder]
) -> None:
    informer, recorder = pods
    await apiserver.wait_for_watches()
    watch = next(r for r in apiserver.requests if r.query.get("watch") == "true")
    assert watch.query["resourceVersion"] == "105"
    assert watch.query["allowWatchBookmarks"] == "true"
    recorder.calls.clear()
    apiserver.put_object("/api/v1", "pods", pod("new", app="web"))
    changed = pod("p0", app="web")
    changed["status"]["phase"] = "Failed"
    apiserver.put_object("/api/v1", "pods", changed)
    apiserver.delete_object("/api/v1", "pods", "default", "p4")
    await recorder.wait_for(lambda calls: len(calls) == 3)
    assert recorder.calls == [("add", "new"), ("update", "p0"), ("delete", "p4")]
    p0 = informer.store.get_by_name("default", "p0")
    assert p0 is not None
    assert p0.info.phase == "Failed"
    assert informer.store.get("default/p4") is None
    assert informer.resource_version == str(apiserver.resource_version)


async def test_bookmarks_move_the_resource_version_without_events(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder]
) -> None:
    informer, recorder = pods
    await apiserver.wait_for_watches()
    apiserver.resource_version = 500  # other collections changed meanwhile
    recorder.calls.clear()
    apiserver.send_bookmark()
    apiserver.close_watches()  # the server ends the watch: resume from the bookmark, no relist
    await apiserver.wait_for_watches()
    assert informer.bookmark_count == 1
    assert informer.resource_version == "500"
    assert recorder.calls == []
    watches = [r for r in apiserver.requests if r.query.get("watch") == "true"]
    assert watches[-1].query["resourceVersion"] == "500"
    assert informer.list_count == 1


async def test_a_too_old_resource_version_relists_and_reconciles_the_store(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder]
) -> None:
    informer, recorder = pods
    await apiserver.wait_for_watches()
    apiserver.close_watches()
    # while the informer is disconnected: one pod goes, one comes, history is compacted
    apiserver.delete_object("/api/v1", "pods", "default", "p1")
    apiserver.put_object("/api/v1", "pods", pod("late", app="web"))
    apiserver.compact()
    recorder.calls.clear()
    await recorder.wait_for(lambda calls: ("delete", "p1") in calls and ("add", "late") in calls)
    assert informer.list_count == 2
    assert sorted(r.name for r in informer.store) == ["late", "p0", "p2", "p3", "p4"]
    assert ("update", "p0") not in recorder.calls, "unchanged objects are not replayed"


async def test_an_expired_continue_token_restarts_the_list(
    apiserver: FakeApiServer, kube: KubeClient, clock: FakeClock
) -> None:
    for index in range(5):
        apiserver.put_object("/api/v1", "pods", pod(f"p{index}"))
    informer: Informer[PodRecord] = Informer(
        kube, PODS, parse=parse_pod, clock=clock, settings=InformerSettings(page_size=2)
    )
    items, _ = await informer.list_items()
    assert [item["metadata"]["name"] for item in items] == [f"p{i}" for i in range(5)]
    apiserver.requests.clear()
    apiserver.expire_continue_tokens = True
    with pytest.raises(GoneError):
        await informer.list_items()
    continued = [r.query.get("continue") is not None for r in apiserver.requests_to("GET", PODS)]
    assert continued == [False, True, False, True], "restarted from scratch exactly once"


async def test_store_indexes_select_by_namespace_and_labels(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder]
) -> None:
    informer, recorder = pods
    apiserver.put_object("/api/v1", "pods", pod("other", namespace="prod", app="web"))
    await recorder.wait_for(lambda calls: ("add", "other") in calls)
    store = informer.store
    web = store.select("default", parse_selector("app=web"))
    assert [r.name for r in web] == ["p0", "p1", "p2"]
    assert [r.name for r in store.select(None, parse_selector("app=web"))] == [
        "p0",
        "p1",
        "p2",
        "other",
    ]
    assert [r.name for r in store.select("default", parse_selector("app notin (web)"))] == [
        "p3",
        "p4",
    ]
    assert [r.name for r in store.list_namespace("prod")] == ["other"]


async def test_an_unparsable_object_is_skipped(
    apiserver: FakeApiServer, kube: KubeClient, clock: FakeClock
) -> None:
    apiserver.put_object(
        "/apis/autoscaling/v2",
        "horizontalpodautoscalers",
        {
            "metadata": {"name": "ok", "namespace": "d"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}
            },
        },
    )
    apiserver.put_object(
        "/apis/autoscaling/v2",
        "horizontalpodautoscalers",
        {"metadata": {"name": "bad", "namespace": "d", "generation": "x"}},
    )
    informer: Informer[HpaRecord] = Informer(
        kube, "/apis/autoscaling/v2/horizontalpodautoscalers", parse=parse_hpa, clock=clock
    )
    await sync_once(informer)
    assert [r.name for r in informer.store] == ["ok"]
    record = informer.store.get("d/ok")
    assert record is not None
    assert record.scale_target_ref.kind == "Deployment"
    assert record.raw["spec"]["scaleTargetRef"]["name"] == "web"


async def test_list_failures_back_off_and_recover(
    apiserver: FakeApiServer, kube: KubeClient, clock: FakeClock
) -> None:
    apiserver.fail("GET", PODS, status=403, reason="Forbidden", times=3)
    apiserver.put_object("/api/v1", "pods", pod("p"))
    informer = Informer(kube, PODS, parse=parse_pod, clock=clock, rng=random.Random(2))
    await sync_once(informer)
    assert [r.name for r in informer.store] == ["p"]
    backoffs = clock.sleep_calls
    assert len(backoffs) == 3
    assert 0.8 <= backoffs[0] <= 1.6
    assert 1.6 <= backoffs[1] <= 3.2
    assert 3.2 <= backoffs[2] <= 6.4


async def test_a_watch_closed_at_once_backs_off_instead_of_spinning(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder], clock: FakeClock
) -> None:
    informer, _ = pods
    await apiserver.wait_for_watches()
    assert clock.sleep_calls == []
    apiserver.close_watches()  # ends with no event, within the same instant on the clock
    await apiserver.wait_for_watches()
    assert len(clock.sleep_calls) == 1
    assert 0.8 <= clock.sleep_calls[0] <= 1.6
    assert informer.list_count == 1, "a short watch resumes, it does not relist"


_NAMESPACES = ("default", "prod")
_LABELS: tuple[dict[str, str], ...] = (
    {"app": "web"},
    {"app": "web", "tier": "front"},
    {"app": "api"},
    {"tier": "front"},
    {},
)
_SELECTORS = ("app=web", "app=web,tier=front", "app in (web,api)", "tier", "!tier", "")


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(
    placed=st.lists(
        st.tuples(
            st.sampled_from(_NAMESPACES), st.integers(min_value=0, max_value=len(_LABELS) - 1)
        ),
        max_size=12,
    ),
    removed=st.sets(st.integers(min_value=0, max_value=11), max_size=4),
    namespace=st.sampled_from((None, *_NAMESPACES)),
    selector_text=st.sampled_from(_SELECTORS),
)
def test_store_select_answers_what_a_scan_of_every_record_answers(
    placed: list[tuple[str, int]],
    removed: set[int],
    namespace: str | None,
    selector_text: str,
) -> None:
    store: Store[PodRecord] = Store()
    for index, (ns, labels) in enumerate(placed):
        store.put(f"{ns}/p{index}", parse_pod(pod(f"p{index}", namespace=ns, **_LABELS[labels])))
    for index in removed:
        if index < len(placed):
            store.delete(f"{placed[index][0]}/p{index}")
    selector = parse_selector(selector_text)
    expected = [
        f"{r.namespace}/{r.name}"
        for r in sorted(store, key=lambda r: f"{r.namespace}/{r.name}")
        if (namespace is None or r.namespace == namespace) and selector.matches(r.labels)
    ]
    assert [f"{r.namespace}/{r.name}" for r in store.select(namespace, selector)] == expected


def test_a_namespace_version_changes_with_every_put_and_delete_in_that_namespace() -> None:
    store: Store[PodRecord] = Store()
    assert store.namespace_version("a") == 0
    store.put("a/p", parse_pod(pod("p", namespace="a")))
    after_add = store.namespace_version("a")
    store.put("b/q", parse_pod(pod("q", namespace="b")))
    assert store.namespace_version("a") == after_add, "another namespace's change"
    store.put("a/p", parse_pod(pod("p", namespace="a", app="web")))
    after_update = store.namespace_version("a")
    assert after_update != after_add
    assert store.delete("a/missing") is None
    assert store.namespace_version("a") == after_update, "deleting nothing changes nothing"
    store.delete("a/p")
    assert store.namespace_version("a") not in (0, after_add, after_update)


async def test_a_silent_watch_is_taken_for_a_dead_connection_and_reopened(
    apiserver: FakeApiServer, kube: KubeClient, clock: FakeClock
) -> None:
    """A half-open connection: the watch stays open and nothing arrives, not even a bookmark.
    The informer gives up on it after the idle bound and resumes from its resourceVersion (no
    relist), so a change made afterwards is seen."""
    apiserver.put_object("/api/v1", "pods", pod("p0"))
    informer = Informer(
        kube,
        PODS,
        parse=parse_pod,
        clock=clock,
        settings=InformerSettings(watch_idle_timeout_seconds=0.3),
        rng=random.Random(5),
    )
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    task = asyncio.create_task(informer.run(), name="informer:pods")

    try:
        async with asyncio.timeout(5):
            await informer.wait_synced()
        # the first watch went silent and was reopened (the fake server only notices the first
        # one is gone when it next writes to it)
        await apiserver.wait_for_watches(2)
        assert sum(1 for r in apiserver.requests if r.query.get("watch") == "true") == 2
        apiserver.put_object("/api/v1", "pods", pod("p1"))
        await recorder.wait_for(lambda calls: ("add", "p1") in calls)
        assert informer.list_count == 1, "a reopened watch resumes, it does not relist"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_after_a_failed_watch_the_store_is_not_current_until_the_reopened_watch_delivers(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder]
) -> None:
    """A network fault cuts the watch: the store may miss changes until the reopened watch
    delivers (its first events are the missed ones), so readers that must not act on a stale
    copy are told so in between."""
    informer, recorder = pods
    await apiserver.wait_for_watches()
    assert informer.is_current()
    apiserver.close_watches()  # ends at once without events: a failed watch
    await apiserver.wait_for_watches()  # reopened after the backoff
    assert not informer.is_current(), "reopened, but nothing arrived since the failure"
    apiserver.send_bookmark()
    apiserver.close_watches()  # after the bookmark: a watch that ended normally
    await apiserver.wait_for_watches()
    assert informer.bookmark_count == 1
    assert informer.is_current(), "the bookmark showed the watch caught up"
    assert informer.list_count == 1, "the watch resumed: no relist"

    apiserver.send_raw(b'{"type": "ADDED", "object": {\n')  # a broken stream, after events
    apiserver.close_watches()
    await apiserver.wait_for_watches()
    assert not informer.is_current()
    apiserver.put_object("/api/v1", "pods", pod("new"))
    await recorder.wait_for(lambda calls: ("add", "new") in calls)
    assert informer.is_current()


async def test_the_backoff_starts_over_two_minutes_after_the_last_one(
    apiserver: FakeApiServer, pods: tuple[Informer[PodRecord], Recorder], clock: FakeClock
) -> None:
    """A collection without events keeps its failures in a row; like client-go's reflector, the
    backoff starts over once two minutes have passed since the last one, so a fault long after
    another is not waited out as if it followed it."""

    async def break_the_watch() -> None:
        apiserver.send_raw(b'{"type": "ADDED", "object": {\n')
        apiserver.close_watches()
        await apiserver.wait_for_watches()

    await apiserver.wait_for_watches()
    for _ in range(3):
        await break_the_watch()
    first, second, third = clock.sleep_calls
    assert (0.8 <= first <= 1.6, 1.6 <= second <= 3.2, 3.2 <= third <= 6.4) == (True,) * 3
    await break_the_watch()  # still in a row: it keeps growing
    assert 6.4 <= clock.sleep_calls[-1] <= 12.8
    await clock.advance(121.0)
    await break_the_watch()
    assert 0.8 <= clock.sleep_calls[-1] <= 1.6


class _PagedLists:
    """A client of three pages whose LIST calls are recorded as they start (their answers need
    a turn of the event loop, as a request does)."""

    def __init__(self) -> None:
        self.started: list[str | None] = []

    async def list(self, path: str, *, params: dict[str, str] | None = None) -> dict[str, Any]:
        token = (params or {}).get("continue")
        self.started.append(token)
        await asyncio.sleep(0)
        page = int(token or 0)
        following = {"continue": str(page + 1)} if page < 2 else {"resourceVersion": "7"}
        return {
            "metadata": following,
            "items": [pod(f"p{page}-{i}") for i in range(3)],
        }

    async def watch(self, path: str, **_: object) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()  # no events: the test ends while it waits
        yield {}


async def test_the_next_page_is_requested_before_this_one_is_parsed(clock: FakeClock) -> None:
    client = _PagedLists()
    starts_seen: list[int] = []

    def parse(data: Mapping[str, Any]) -> PodRecord:
        starts_seen.append(len(client.started))
        return parse_pod(data)

    informer = Informer(cast(KubeClient, client), PODS, parse=parse, clock=clock)
    await sync_once(informer)
    assert client.started[:3] == [None, "1", "2"]
    # page 1 parsed with page 2's request started, page 2 with page 3's; page 3 is the last
    assert starts_seen == [2, 2, 2, 3, 3, 3, 3, 3, 3]
    assert len(informer.store) == 9
