"""Leader election on a ``coordination.k8s.io/v1`` Lease, with a fence for every writer.

Upstream counterpart: client-go ``tools/leaderelection`` (``leaderelection.go``: ``acquire``,
``renew``, ``tryAcquireOrRenew``, ``release``, ``isLeaseValid``; ``resourcelock/leaselock.go``)
with kube-controller-manager's defaults: lease 15 s, renew deadline 10 s, retry period 2 s.

Semantics kept from upstream:
- the holder renews every retry period; if it cannot renew for the renew deadline it stops
  leading. Another candidate takes the Lease only once it has seen the same record unchanged for
  ``leaseDurationSeconds`` on its own clock (``observedTime``), so clocks need not agree.
- acquisition retries every retry period stretched by jitter (``JitterFactor`` 1.2).
- on cancellation (SIGTERM) a leader releases the Lease like ``ReleaseOnCancel``: it writes an
  empty ``holderIdentity`` and ``leaseDurationSeconds: 1``, so a successor acquires at its next
  retry instead of waiting out the lease.

Each try is bounded as upstream bounds it (``renew``'s ``context.WithTimeout(ctx, RenewDeadline)``,
and kube-controller-manager's leader-election client whose ``Timeout`` is the renew deadline): a
try that has not answered by the renew deadline (a request on a half-open connection) is
abandoned and counts as failed, so a leader that cannot reach the API server stops leading at the
renew deadline instead of when the request's own timeout fires.

Deliberate deviations: ``run`` returns when leadership is lost (kube-controller-manager exits at
that point; the app decides). ``check`` (the ``Fence``) refuses writes as soon as the last
successful renewal is older than the renew deadline, even before the renew loop notices, so a
leader that lost its lease makes no further writes.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

import structlog

from hpa.api.types import format_micro_time
from hpa.kube.client import ApiError, ConflictError, KubeClient, NotFoundError, TransportError
from hpa.kube.clock import Clock, parse_time
from hpa.kube.fence import NotLeaderError

log = structlog.get_logger("hpa.kube.leader")

JITTER_FACTOR = 1.2


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """``LeaderElectionRecord`` as stored in a Lease's spec, plus its resourceVersion."""

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    lease_transitions: int
    resource_version: str = field(default="", compare=False)


class LeaseStore(Protocol):
    """``resourcelock.Interface`` for one Lease."""

    async def get(self) -> LeaseRecord | None:
        """The current record, ``None`` if the Lease does not exist."""
        ...

    async def create(self, record: LeaseRecord) -> LeaseRecord:
        """Create the Lease; raises ``ConflictError`` (``AlreadyExists``) if it exists."""
        ...

    async def update(self, record: LeaseRecord) -> LeaseRecord:
        """Replace the record if ``record.resource_version`` is current, else ``ConflictError``."""
        ...


def lease_spec(record: LeaseRecord) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "leaseTransitions": record.lease_transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = format_micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = format_micro_time(record.renew_time)
    return spec


def parse_lease(data: Mapping[str, Any]) -> LeaseRecord:
    spec = data.get("spec") or {}
    return LeaseRecord(
        holder_identity=str(spec.get("holderIdentity") or ""),
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=parse_time(spec.get("acquireTime")),
        renew_time=parse_time(spec.get("renewTime")),
        lease_transitions=int(spec.get("leaseTransitions") or 0),
        resource_version=str((data.get("metadata") or {}).get("resourceVersion", "")),
    )


class KubeLeaseStore:
    """``resourcelock.LeaseLock``: the Lease ``namespace/name`` through the API server."""

    def __init__(self, client: KubeClient, namespace: str, name: str) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    async def get(self) -> LeaseRecord | None:
        try:
            return parse_lease(await self._client.get(f"{self._collection}/{self.name}"))
        except NotFoundError:
            return None

    def _body(self, record: LeaseRecord) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if record.resource_version:
            metadata["resourceVersion"] = record.resource_version
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": lease_spec(record),
        }

    async def create(self, record: LeaseRecord) -> LeaseRecord:
        return parse_lease(await self._client.post(self._collection, self._body(record)))

    async def update(self, record: LeaseRecord) -> LeaseRecord:
        return parse_lease(
            await self._client.put(f"{self._collection}/{self.name}", self._body(record))
        )


@dataclass(frozen=True, slots=True)
class LeaderElectionSettings:
    """- ``identity``: this candidate's unique name (``hostname_<uuid>`` upstream).
    - ``lease_duration_seconds`` (15): how long a non-renewed lease blocks other candidates.
    - ``renew_deadline_seconds`` (10): how long the leader keeps trying to renew before it stops.
    - ``retry_period_seconds`` (2): the pause between tries (renewals and acquisitions).
    - ``release_on_cancel`` (True): give the lease up on shutdown.
    """

    identity: str
    lease_duration_seconds: int = 15
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("identity must not be empty")
        if self.lease_duration_seconds <= self.renew_deadline_seconds:
            raise ValueError("lease_duration_seconds must exceed renew_deadline_seconds")
        if self.renew_deadline_seconds <= JITTER_FACTOR * self.retry_period_seconds:
            raise ValueError("renew_deadline_seconds must exceed 1.2 * retry_period_seconds")


class LeaderElector:
    """Acquire, hold and release one Lease. Also the ``Fence`` writers consult."""

    def __init__(
        self,
        store: LeaseStore,
        settings: LeaderElectionSettings,
        *,
        clock: Clock,
        rng: random.Random | None = None,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self.settings = settings
        self._clock = clock
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None
        self.leading = asyncio.Event()
        self._log = log.bind(identity=settings.identity)

    # ------------------------------------------------------------ the fence

    def is_leader(self) -> bool:
        """Holding the Lease, renewed within the renew deadline, on this process's clock."""
        return (
            self.leading.is_set()
            and self._renewed_at is not None
            and self._clock.monotonic() - self._renewed_at < self.settings.renew_deadline_seconds
        )

    def check(self) -> None:
        if not self.is_leader():
            raise NotLeaderError(f"{self.settings.identity} does not hold the lease")

    @property
    def observed_record(self) -> LeaseRecord | None:
        return self._observed

    # ------------------------------------------------------------ the state machine

    def _set_observed(self, record: LeaseRecord) -> None:
        self._observed = record
        self._observed_at = self._clock.monotonic()

    async def try_acquire_or_renew(self) -> bool:
        """One round of ``tryAcquireOrRenew``: True if this candidate holds the Lease now."""
        identity = self.settings.identity
        now = self._clock.now()
        desired = LeaseRecord(
            holder_identity=identity,
            lease_duration_seconds=self.settings.lease_duration_seconds,
            acquire_time=now,
            renew_time=now,
            lease_transitions=0,
        )
        try:
            current = await self._store.get()
            if current is None:
                created = await self._store.create(desired)
                self._set_observed(created)
                return True
        except (ApiError, TransportError) as error:
            self._log.info("lease_get_or_create_failed", error=str(error))
            return False
        if self._observed is None or current != self._observed:
            self._set_observed(current)
        lease_valid = self._clock.monotonic() - self._observed_at < current.lease_duration_seconds
        if current.holder_identity and current.holder_identity != identity and lease_valid:
            return False
        if current.holder_identity == identity:
            desired = LeaseRecord(
                holder_identity=identity,
                lease_duration_seconds=self.settings.lease_duration_seconds,
                acquire_time=current.acquire_time,
                renew_time=now,
                lease_transitions=current.lease_transitions,
                resource_version=current.resource_version,
            )
        else:
            desired = LeaseRecord(
                holder_identity=identity,
                lease_duration_seconds=self.settings.lease_duration_seconds,
                acquire_time=now,
                renew_time=now,
                lease_transitions=current.lease_transitions + 1,
                resource_version=current.resource_version,
            )
        try:
            updated = await self._store.update(desired)
        except (ApiError, TransportError) as error:
            self._log.info("lease_update_failed", error=str(error))
            return False
        self._set_observed(updated)
        return True

    async def _try_before(self, deadline: float) -> bool:
        """``try_acquire_or_renew``, abandoned (False) if it has not answered by ``deadline``
        (monotonic, on this elector's clock)."""
        attempt = asyncio.ensure_future(self.try_acquire_or_renew())
        timer = asyncio.ensure_future(self._clock.sleep(deadline - self._clock.monotonic()))
        try:
            await asyncio.wait({attempt, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not attempt.done():
                attempt.cancel()
                self._log.info("lease_attempt_timed_out")
            await asyncio.gather(timer, return_exceptions=True)
            await asyncio.gather(attempt, return_exceptions=True)
        return not attempt.cancelled() and attempt.result()

    def _jittered_retry_seconds(self) -> float:
        return self.settings.retry_period_seconds * (1.0 + self._rng.random() * JITTER_FACTOR)

    async def acquire(self) -> None:
        """Try every retry period (with jitter) until the Lease is ours; each try is abandoned
        after the renew deadline (the timeout of upstream's leader-election client)."""
        while not await self._try_before(
            self._clock.monotonic() + self.settings.renew_deadline_seconds
        ):
            await self._clock.sleep(self._jittered_retry_seconds())
        self._renewed_at = self._clock.monotonic()
        self.leading.set()
        self._log.info("lease_acquired")
        if self._on_started_leading is not None:
            self._on_started_leading()

    async def renew(self) -> None:
        """Renew every retry period; return when a renew deadline passed without success.

        Within a renew deadline the tries start one retry period apart, start to start, as
        client-go's ``wait.PollImmediateUntil`` ticks: a try that took longer than that (a
        request that hung until its connection was closed) is followed at once, not one more
        retry period later."""
        retry = self.settings.retry_period_seconds
        while True:
            await self._clock.sleep(retry)
            deadline = self._clock.monotonic() + self.settings.renew_deadline_seconds
            while True:
                started = self._clock.monotonic()
                if await self._try_before(deadline):
                    break
                next_try = max(started + retry, self._clock.monotonic())
                if next_try >= deadline:
                    return
                await self._clock.sleep(next_try - self._clock.monotonic())
            self._renewed_at = self._clock.monotonic()

    def _stop_leading(self) -> None:
        was_leading = self.leading.is_set()
        self.leading.clear()
        self._renewed_at = None
        if was_leading:
            self._log.info("lease_lost")
            if self._on_stopped_leading is not None:
                self._on_stopped_leading()

    async def release(self) -> bool:
        """``release``: clear the holder so a successor need not wait out the lease."""
        if not self.leading.is_set() or self._observed is None:
            return True
        now = self._clock.now()
        record = LeaseRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            lease_transitions=self._observed.lease_transitions,
            resource_version=self._observed.resource_version,
        )
        self._stop_leading()
        try:
            self._set_observed(await self._store.update(record))
        except (ConflictError, ApiError, TransportError) as error:
            self._log.warning("lease_release_failed", error=str(error))
            return False
        self._log.info("lease_released")
        return True

    async def run(self) -> None:
        """Acquire, then renew until the lease is lost (then return). On cancellation, release
        the lease first (``ReleaseOnCancel``) and re-raise."""
        try:
            await self.acquire()
            await self.renew()
            self._stop_leading()
        except asyncio.CancelledError:
            if self.settings.release_on_cancel:
                try:  # bounded like upstream's release (a hung API server must not stall exit)
                    await asyncio.wait_for(self.release(), self.settings.renew_deadline_seconds)
                except TimeoutError:
                    self._log.warning("lease_release_timed_out")
            self._stop_leading()
            raise


class StatusLease:
    """A component's liveness published as a Lease that others read (not an election).

    Upstream counterpart: the VPA's ``pkg/utils/status`` (``Updater``, ``Client.UpdateStatus``):
    every ``interval_seconds`` the Lease's ``renewTime`` and ``holderIdentity`` are written (the
    Lease is created with ``leaseDurationSeconds`` equal to the interval when missing); a conflict
    or an already-existing Lease means another replica wrote it, which is no error. The VPA
    updater skips its loop while the admission controller's status Lease is older than a minute.
    """

    def __init__(
        self, store: LeaseStore, *, identity: str, interval_seconds: float, clock: Clock
    ) -> None:
        self._store = store
        self._identity = identity
        self._interval_seconds = interval_seconds
        self._clock = clock
        self.renewals = 0

    async def renew(self) -> None:
        now = self._clock.now()
        current = await self._store.get()
        try:
            if current is None:
                await self._store.create(
                    LeaseRecord(
                        holder_identity=self._identity,
                        lease_duration_seconds=int(self._interval_seconds),
                        acquire_time=None,
                        renew_time=now,
                        lease_transitions=0,
                    )
                )
            else:
                await self._store.update(
                    replace(current, holder_identity=self._identity, renew_time=now)
                )
        except ConflictError:
            return
        self.renewals += 1

    async def run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self.renew(), timeout=self._interval_seconds)
            except (ApiError, TransportError, TimeoutError) as error:
                log.warning("status_lease_renew_failed", identity=self._identity, error=str(error))
            await self._clock.sleep(self._interval_seconds)
