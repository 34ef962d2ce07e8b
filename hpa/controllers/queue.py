"""The keyed, de-duplicating, rate-limited work queue that drives every controller loop.

Upstream counterparts: client-go ``util/workqueue`` (``queue.go``: the ``dirty``/``processing``
sets that make a key re-added while it is processed run again after ``Done``;
``delaying_queue.go``: ``AddAfter``; ``rate_limiting_queue.go``: ``AddRateLimited``/``Forget``/
``NumRequeues``; ``default_rate_limiters.go``: ``ItemExponentialFailureRateLimiter`` with
client-go's controller defaults 5 ms .. 1000 s) and the HPA controller's ``processNextWorkItem``
/ ``--concurrent-horizontal-pod-autoscaler-syncs`` in ``pkg/controller/podautoscaler``.

Deliberate deviations:
- upstream's HPA queue requeues every key after a fixed ``resyncPeriod`` and relies on informer
  resyncs; here keys are ``track``ed and each gets a random phase in ``[0, period)`` once, then
  comes back every ``sync_period_seconds`` at that phase, so resyncs are spread evenly across the
  period instead of bunching at informer resync time. Failures back off per key exponentially.
- concurrency is a bound on in-flight reconciles (a semaphore), not N long-lived workers: each key
  is reconciled in its own named task ``reconcile:<key>``.
- time comes from an injected ``Clock``; tests drive it with a fake and never sleep.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from hpa.kube.clock import Clock

log = structlog.get_logger("hpa.controllers.queue")

Reconcile = Callable[[str], Awaitable[None]]


class RateLimiter(Protocol):
    """``workqueue.TypedRateLimiter``: how long a key waits before its next retry."""

    def when(self, key: str) -> float: ...

    def forget(self, key: str) -> None: ...

    def num_requeues(self, key: str) -> int: ...


class ItemExponentialFailureRateLimiter:
    """``base_delay_seconds * 2**failures`` capped at ``max_delay_seconds``, per key."""

    def __init__(
        self, base_delay_seconds: float = 0.005, max_delay_seconds: float = 1000.0
    ) -> None:
        self.base_delay_seconds = base_delay_seconds
        self.max_delay_seconds = max_delay_seconds
        self._failures: dict[str, int] = {}

    def when(self, key: str) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if failures > 64:  # the cap was reached long ago; avoid float overflow
            return self.max_delay_seconds
        return min(self.max_delay_seconds, self.base_delay_seconds * 2.0**failures)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)


class QueueShutDownError(Exception):
    """``get`` on a queue that was shut down."""


class QueueMetrics:
    """client-go's workqueue metrics (``workqueue_depth``, ``..._adds_total``, ...) by ``name``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.depth = Gauge(
            "workqueue_depth", "Keys waiting in the queue.", ["name"], registry=registry
        )
        self.adds = Counter(
            "workqueue_adds_total", "Keys added to the queue.", ["name"], registry=registry
        )
        self.retries = Counter(
            "workqueue_retries_total", "Rate-limited re-adds.", ["name"], registry=registry
        )
        self.in_flight = Gauge(
            "workqueue_in_flight", "Keys being reconciled now.", ["name"], registry=registry
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "Seconds one reconcile took.",
            ["name"],
            registry=registry,
            buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )


class _BoundQueueMetrics:
    """One queue's children of :class:`QueueMetrics`, looked up once (``labels`` is not free)."""

    __slots__ = ("adds", "depth", "in_flight", "retries", "work_duration")

    def __init__(self, metrics: QueueMetrics, name: str) -> None:
        self.depth = metrics.depth.labels(name=name)
        self.adds = metrics.adds.labels(name=name)
        self.retries = metrics.retries.labels(name=name)
        self.in_flight = metrics.in_flight.labels(name=name)
        self.work_duration = metrics.work_duration.labels(name=name)


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """Settings of one controller queue.

    - ``sync_period_seconds`` (default 15): ``--horizontal-pod-autoscaler-sync-period``; every
      tracked key is re-added once per period, at a random phase fixed per key.
    - ``max_in_flight`` (default 5): ``--concurrent-horizontal-pod-autoscaler-syncs``, the most
      reconciles running at once.
    - ``base_delay_seconds`` (default 0.005) and ``max_delay_seconds`` (default 1000): the per-key
      exponential failure backoff.
    """

    sync_period_seconds: float = 15.0
    max_in_flight: int = 5
    base_delay_seconds: float = 0.005
    max_delay_seconds: float = 1000.0


_TimerKind = Literal["add", "resync"]


class WorkQueue:
    """A keyed work queue: ``add``/``add_after``/``add_rate_limited``, ``get``/``done``/``forget``.

    Invariants (client-go's): a key is queued at most once; a key being processed is never handed
    to a second processor; a key added while processed is queued again by ``done``.
    """

    def __init__(
        self,
        name: str,
        *,
        clock: Clock,
        rate_limiter: RateLimiter | None = None,
        rng: random.Random | None = None,
        metrics: QueueMetrics | None = None,
        on_depth: Callable[[int], None] | None = None,
        log_key: str = "key",
    ) -> None:
        """``log_key``: the structlog context variable bound to the key inside each reconcile
        task (``"hpa"`` gives every log line of a reconcile ``hpa="ns/name"``)."""
        self.name = name
        self._log_key = log_key
        self._clock = clock
        self._rate_limiter = rate_limiter or ItemExponentialFailureRateLimiter()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._metrics = metrics
        self._bound = None if metrics is None else _BoundQueueMetrics(metrics, name)
        self._on_depth = on_depth
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        # timers: (due, sequence, key, kind, tracking generation)
        self._timers: list[tuple[float, int, str, _TimerKind, int]] = []
        self._sequence = itertools.count()
        self._timers_changed = asyncio.Event()
        self._sleeper: asyncio.Task[None] | None = None
        self._sleeping_until = 0.0
        self._tracked: dict[str, int] = {}
        self._resync_periods: dict[str, float] = {}
        self._generation = itertools.count(1)
        self._log = log.bind(queue=name)

    # ------------------------------------------------------------ the plain queue

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    def is_processing(self, key: str) -> bool:
        return key in self._processing

    def add(self, key: str) -> None:
        """Queue ``key`` unless it is queued already; if it is being processed, after ``done``."""
        if self._shutting_down or key in self._dirty:
            return
        if self._bound is not None:
            self._bound.adds.inc()
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._report_depth()
        self._wake_one()

    def _wake_one(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    async def get(self) -> str:
        """Wait for a key and mark it processing. Raises ``QueueShutDownError`` once shut down."""
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDownError(self.name)
            getter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except asyncio.CancelledError:
                getter.cancel()
                if self._queue and not getter.cancelled():
                    self._wake_one()  # pass on the wake-up this getter consumed
                raise
        if self._shutting_down:
            raise QueueShutDownError(self.name)
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        self._report_depth()
        return key

    def done(self, key: str) -> None:
        """Processing of ``key`` ended; queue it again if it was added meanwhile."""
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._report_depth()
            self._wake_one()

    def shut_down(self) -> None:
        """Stop handing out keys; ``get`` raises ``QueueShutDownError`` from now on."""
        self._shutting_down = True
        self._timers_changed.set()
        if self._sleeper is not None:
            self._sleeper.cancel()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

    def _report_depth(self) -> None:
        depth = len(self._queue)
        if self._bound is not None:
            self._bound.depth.set(depth)
        if self._on_depth is not None:
            self._on_depth(depth)

    # ------------------------------------------------------------ delays and rate limiting

    def add_after(self, key: str, delay_seconds: float) -> None:
        """``AddAfter``: queue ``key`` once ``delay_seconds`` have passed on the clock."""
        if self._shutting_down:
            return
        if delay_seconds <= 0:
            self.add(key)
            return
        due = self._clock.monotonic() + delay_seconds
        heapq.heappush(self._timers, (due, next(self._sequence), key, "add", 0))
        self._timer_added(due)

    def add_rate_limited(self, key: str) -> None:
        """``AddRateLimited``: queue ``key`` after its rate limiter's backoff."""
        if self._bound is not None:
            self._bound.retries.inc()
        self.add_after(key, self._rate_limiter.when(key))

    def forget(self, key: str) -> None:
        """``Forget``: reset ``key``'s failure backoff."""
        self._rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return self._rate_limiter.num_requeues(key)

    # ------------------------------------------------------------ periodic resync

    def track(self, key: str, *, sync_period_seconds: float) -> None:
        """Resync ``key`` every ``sync_period_seconds``, first at a random phase in the period.

        Tracking a tracked key changes nothing (its phase stays put)."""
        if key in self._tracked or self._shutting_down:
            return
        generation = next(self._generation)
        self._tracked[key] = generation
        phase_seconds = self._rng.uniform(0.0, sync_period_seconds)
        due = self._clock.monotonic() + phase_seconds
        heapq.heappush(self._timers, (due, next(self._sequence), key, "resync", generation))
        self._resync_periods[key] = sync_period_seconds
        self._timer_added(due)

    def untrack(self, key: str) -> None:
        """Stop resyncing ``key`` (its object was deleted); forget its backoff too."""
        self._tracked.pop(key, None)
        self._resync_periods.pop(key, None)
        self._rate_limiter.forget(key)

    @property
    def tracked(self) -> frozenset[str]:
        return frozenset(self._tracked)

    def _fire_due_timers(self) -> None:
        now = self._clock.monotonic()
        while self._timers and self._timers[0][0] <= now:
            due, _, key, kind, generation = heapq.heappop(self._timers)
            if kind == "add":
                self.add(key)
                continue
            if self._tracked.get(key) != generation:
                continue  # untracked (and maybe tracked again with a new phase) since
            self.add(key)
            period = self._resync_periods[key]
            next_due = due + period
            while next_due <= now:  # the loop was starved: skip missed periods, keep the phase
                next_due += period
            heapq.heappush(self._timers, (next_due, next(self._sequence), key, kind, generation))

    async def run_timers(self) -> None:
        """Fire delayed adds and resyncs as their time comes; runs until shut down.

        One sleep task per wake-up; a timer due before the current wake-up cancels that sleep
        (:meth:`_timer_added`), so most wake-ups cost one task, not a sleep and a watcher."""
        while not self._shutting_down:
            self._fire_due_timers()
            self._timers_changed.clear()
            if not self._timers:
                await self._timers_changed.wait()
                continue
            due = self._timers[0][0]
            sleeper = asyncio.create_task(
                self._clock.sleep(due - self._clock.monotonic()),
                name=f"workqueue:{self.name}:sleep",
            )
            self._sleeper, self._sleeping_until = sleeper, due
            try:
                await sleeper
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not sleeper.cancelled() or (task is not None and task.cancelling()):
                    raise  # the timer loop itself is being cancelled
                # else an earlier timer (or shutdown) woke us: look again
            finally:
                self._sleeper = None
                sleeper.cancel()

    def _timer_added(self, due: float) -> None:
        """Wake the timer loop if ``due`` comes before the time it sleeps until."""
        self._timers_changed.set()
        if self._sleeper is not None and due < self._sleeping_until:
            self._sleeper.cancel()

    # ------------------------------------------------------------ the processing loop

    async def run(self, reconcile: Reconcile, *, max_in_flight: int) -> None:
        """Reconcile keys as they come, at most ``max_in_flight`` at once, until cancelled or
        shut down. A reconcile that raises is logged and its key re-added rate-limited; one that
        returns resets the key's backoff. Cancelling ``run`` cancels the reconciles in flight."""
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        slots = asyncio.Semaphore(max_in_flight)
        running: set[asyncio.Task[None]] = set()
        timers = asyncio.create_task(self.run_timers(), name=f"workqueue:{self.name}:timers")
        timers.add_done_callback(_log_unexpected_exit)
        try:
            while True:
                await slots.acquire()
                try:
                    key = await self.get()
                except QueueShutDownError:
                    slots.release()
                    break
                task = asyncio.create_task(
                    self._process(key, reconcile, slots), name=f"reconcile:{key}"
                )
                running.add(task)
                task.add_done_callback(running.discard)
                if timers.done():
                    timers.result()  # surfaces a crashed timer loop
        finally:
            timers.cancel()
            for task in running:
                task.cancel()
            await asyncio.gather(timers, *running, return_exceptions=True)

    async def _process(self, key: str, reconcile: Reconcile, slots: asyncio.Semaphore) -> None:
        structlog.contextvars.bind_contextvars(**{self._log_key: key})  # this task's context only
        started = self._clock.monotonic()
        if self._bound is not None:
            self._bound.in_flight.inc()
        try:
            await reconcile(key)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - one object's failure never stops the loop
            requeues = self.num_requeues(key)
            self._log.warning(
                "reconcile_failed",
                key=key,
                error=str(error),
                error_type=type(error).__name__,
                requeues=requeues,
            )
            self.add_rate_limited(key)
        else:
            self.forget(key)
        finally:
            self.done(key)
            slots.release()
            if self._bound is not None:
                self._bound.in_flight.dec()
                self._bound.work_duration.observe(max(0.0, self._clock.monotonic() - started))


def _log_unexpected_exit(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("task_exited_unexpectedly", task=task.get_name(), error=repr(error))
