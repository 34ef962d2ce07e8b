"""Leader election state machine with a hand-written Lease store and a fake clock, plus the
Lease store against the fake API server."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from datetime import timedelta

import pytest

from hpa.kube.client import (
    AlreadyExistsError,
    ApiStatus,
    ConflictError,
    KubeClient,
    ServerError,
    TransportError,
)
from hpa.kube.fence import NotLeaderError
from hpa.kube.leader import (
    KubeLeaseStore,
    LeaderElectionSettings,
    LeaderElector,
    LeaseRecord,
    StatusLease,
)
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.clock import FakeClock


class FakeLeaseStore:
    """One Lease in memory, with resourceVersion preconditions and switchable outages."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.down = False
        self.hung = False
        """Every request waits forever: a half-open connection, no answer and no error."""
        self._closed = asyncio.Event()
        self.updates: list[LeaseRecord] = []

    def close_connections(self) -> None:
        """The fault is removed and the proxy closes its connections: the hung requests fail
        (no answer ever came), new ones are answered."""
        self.hung = False
        self._closed.set()
        self._closed = asyncio.Event()

    async def _fail_if_down(self) -> None:
        if self.hung:
            closed = self._closed
            await closed.wait()
            raise TransportError("connection closed by the proxy")
        if self.down:
            raise ServerError(
                ApiStatus(code=503, reason="ServiceUnavailable", message="etcd unavailable")
            )

    async def get(self) -> LeaseRecord | None:
        await self._fail_if_down()
        return self.record

    async def create(self, record: LeaseRecord) -> LeaseRecord:
        await self._fail_if_down()
        if self.record is not None:
            raise AlreadyExistsError(
                ApiStatus(code=409, reason="AlreadyExists", message="lease exists")
            )
        return self._store(record)

    async def update(self, record: LeaseRecord) -> LeaseRecord:
        await self._fail_if_down()
        assert self.record is not None
        if record.resource_version != self.record.resource_version:
            raise ConflictError(
                ApiStatus(code=409, reason="Conflict", message="the object has been modified")
            )
        self.updates.append(record)
        return self._store(record)

    def _store(self, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        self.record = replace(record, resource_version=str(self.version))
        return self.record


def elector(store: FakeLeaseStore, clock: FakeClock, identity: str) -> LeaderElector:
    return LeaderElector(
        store, LeaderElectionSettings(identity=identity), clock=clock, rng=random.Random(identity)
    )


async def test_the_first_candidate_creates_the_lease_and_leads() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    a = elector(store, clock, "a")
    assert await a.try_acquire_or_renew()
    assert store.record is not None
    assert (store.record.holder_identity, store.record.lease_duration_seconds) == ("a", 15)
    assert store.record.lease_transitions == 0


async def test_a_held_lease_blocks_others_until_it_expires_on_their_clock() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    await clock.advance(14.9)
    assert not await b.try_acquire_or_renew(), "15 s have not passed since b saw the record"
    await clock.advance(0.2)
    assert await b.try_acquire_or_renew()
    assert store.record is not None
    assert (store.record.holder_identity, store.record.lease_transitions) == ("b", 1)


async def test_a_renewal_keeps_acquire_time_and_transitions() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    a = elector(store, clock, "a")
    await a.try_acquire_or_renew()
    assert store.record is not None
    acquired = store.record.acquire_time
    await clock.advance(2)
    assert await a.try_acquire_or_renew()
    assert store.record.acquire_time == acquired
    assert store.record.renew_time == clock.now()
    assert store.record.lease_transitions == 0


async def test_a_conflicting_write_loses_the_round() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    a = elector(store, clock, "a")
    await a.try_acquire_or_renew()
    real_update = store.update

    async def racing_update(record: LeaseRecord) -> LeaseRecord:
        store.version += 1  # someone else wrote in between
        assert store.record is not None
        store.record = replace(store.record, resource_version=str(store.version))
        return await real_update(record)

    store.update = racing_update  # type: ignore[method-assign]
    assert not await a.try_acquire_or_renew()


async def test_leader_renews_every_retry_period_and_fences_writes() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    a = elector(store, clock, "a")
    task = asyncio.create_task(a.run())
    await clock.settle()
    assert a.is_leader()
    a.check()
    await clock.advance(10)
    assert len(store.updates) == 5, "a renewal every 2 s"
    assert a.is_leader()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_leader_that_cannot_renew_stops_writing_and_stops_leading() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    stopped: list[str] = []
    a = LeaderElector(
        store,
        LeaderElectionSettings(identity="a"),
        clock=clock,
        on_stopped_leading=lambda: stopped.append("a"),
    )
    task = asyncio.create_task(a.run())
    await clock.settle()
    assert a.is_leader()
    store.down = True
    await clock.advance(2 + 9.9)  # last renewal at t=0; the API server is gone since
    assert not a.is_leader(), "the fence closes at the renew deadline"
    with pytest.raises(NotLeaderError):
        a.check()
    await clock.advance(2)
    assert task.done()
    await task  # run returns once leadership is lost
    assert stopped == ["a"]
    assert not a.leading.is_set()


async def test_a_leader_whose_renewal_hangs_stops_leading_at_the_renew_deadline() -> None:
    """A renewal on a half-open connection never answers: the leader gives it up at the renew
    deadline (as client-go's renew context does) and stops leading then, not whenever the
    request's own timeout would fire."""
    store, clock = FakeLeaseStore(), FakeClock()
    stopped: list[float] = []
    a = LeaderElector(
        store,
        LeaderElectionSettings(identity="a"),
        clock=clock,
        on_stopped_leading=lambda: stopped.append(clock.monotonic()),
    )
    task = asyncio.create_task(a.run())
    await clock.settle()
    store.hung = True
    started = clock.monotonic()
    await clock.advance(2 + 10)  # the next renewal starts at 2 s; its deadline is 10 s later
    assert task.done()
    await task
    assert stopped == [started + 12]
    assert not a.leading.is_set()


async def test_a_renewal_that_hung_until_its_connection_closed_is_retried_at_once() -> None:
    """A half-open connection for 8 s, less than the renew deadline: the renewal hangs until the
    fault is removed and its connection closed. The next try follows at once (the tries start a
    retry period apart, start to start, as client-go polls), so the leader renews within the
    deadline and keeps leading; waiting one more retry period would pass the deadline."""
    store, clock = FakeLeaseStore(), FakeClock()
    a = elector(store, clock, "a")
    task = asyncio.create_task(a.run())
    await clock.settle()
    store.hung = True
    await clock.advance(2 + 8)  # the renewal at 2 s has hung for 8 s; its deadline is at 12 s
    renewals = len(store.updates)
    store.close_connections()
    await clock.settle()
    assert len(store.updates) == renewals + 1, "renewed at once"
    assert a.is_leader()
    await clock.advance(2)
    assert len(store.updates) == renewals + 2, "and every retry period after"
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_acquisition_that_hangs_is_given_up_and_retried() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    store.hung = True
    a = elector(store, clock, "a")
    task = asyncio.create_task(a.run())
    await clock.advance(10)  # the first try is abandoned at the renew deadline
    store.hung = False
    await clock.advance(2 * 2.2)  # the next jittered retry answers
    assert a.is_leader()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_release_on_cancel_hands_over_within_one_retry_period() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    task_a = asyncio.create_task(a.run())
    await clock.settle()
    task_b = asyncio.create_task(b.run())
    await clock.advance(3)
    assert a.is_leader()
    assert not b.is_leader()
    task_a.cancel()  # SIGTERM
    with pytest.raises(asyncio.CancelledError):
        await task_a
    assert store.record is not None
    assert (store.record.holder_identity, store.record.lease_duration_seconds) == ("", 1)
    assert not a.is_leader()
    await clock.advance(2 * (1 + 1.2))  # b's next jittered retry
    assert b.is_leader()
    assert store.record.holder_identity == "b"
    assert store.record.lease_transitions == 1
    task_b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task_b


def test_settings_reject_an_inconsistent_timing() -> None:
    with pytest.raises(ValueError, match="exceed"):
        LeaderElectionSettings(identity="a", lease_duration_seconds=10, renew_deadline_seconds=10)
    with pytest.raises(ValueError, match="identity"):
        LeaderElectionSettings(identity="")


async def test_the_kube_lease_store_round_trips_through_the_api(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    clock = FakeClock()
    store = KubeLeaseStore(kube, "kube-system", "hpa-controller")
    a = LeaderElector(store, LeaderElectionSettings(identity="a"), clock=clock)
    b = LeaderElector(store, LeaderElectionSettings(identity="b"), clock=clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    lease = apiserver.get_object(
        "/apis/coordination.k8s.io/v1", "leases", "kube-system", "hpa-controller"
    )
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert lease["spec"]["renewTime"].endswith("Z")
    stale = await store.get()
    assert stale is not None
    await clock.advance(2)
    assert await a.try_acquire_or_renew()
    with pytest.raises(ConflictError):
        await store.update(replace(stale, holder_identity="b"))


async def test_the_fence_closes_at_the_renew_deadline_even_if_the_loop_is_stuck() -> None:
    store, clock = FakeLeaseStore(), FakeClock()
    a = elector(store, clock, "a")
    await a.acquire()  # no renew loop runs: as if it were stuck on a hung request
    a.check()
    await clock.advance(9.9)
    assert a.is_leader()
    await clock.advance(0.2)
    assert not a.is_leader()
    with pytest.raises(NotLeaderError):
        a.check()


async def test_a_status_lease_is_created_then_renewed_and_a_conflict_is_no_error() -> None:
    store = FakeLeaseStore()
    clock = FakeClock()
    status = StatusLease(store, identity="webhook-0", interval_seconds=10.0, clock=clock)
    await status.renew()
    assert store.record is not None
    created = store.record
    assert (created.holder_identity, created.lease_duration_seconds) == ("webhook-0", 10)
    await clock.advance(10.0)
    await status.renew()
    assert store.record.renew_time is not None
    assert created.renew_time is not None
    assert store.record.renew_time - created.renew_time == timedelta(seconds=10)

    class Racing(FakeLeaseStore):
        """Another replica writes between our read and our write."""

        async def get(self) -> LeaseRecord | None:
            read = await super().get()
            assert self.record is not None
            self._store(self.record)
            return read

    racing = Racing()
    racing.record = created
    await StatusLease(racing, identity="w", interval_seconds=10.0, clock=clock).renew()
    assert status.renewals == 2
