"""Batched evaluation: one query per rule per interval for every object, answers from memory.

No upstream counterpart (prometheus-adapter sends one query per request). For a batchable rule
(``adapter.rules.batching``) the first request for a (metric, resource, metric selector) sends
the rule's query once for every object it can describe, across namespaces (grouped by the
namespace and resource labels), or for the request's namespace when the answer across namespaces
exceeded ``BatchSettings.max_series``. The answer becomes an immutable ``Snapshot`` indexed by
namespace then object name; requests are answered from it while it is younger than
``max_age_seconds`` (adapter monotonic time since the query was sent).

Refresh: a request that finds the snapshot older than ``REFRESH_AHEAD`` of ``max_age_seconds``
(or, when the last evaluation took longer than an eighth of the max age, older than the max age
minus twice that duration) starts one background re-evaluation (named task, one at a time per
batch) and is answered from the current snapshot. A request that finds no snapshot, or one older
than ``max_age_seconds`` with no evaluation in flight, waits for a new evaluation
(``SingleFlight``: concurrent requests share one query). A request that finds the snapshot older
than ``max_age_seconds`` while its renewal is still in flight (the renewal is *late*) does not
wait for it (``snapshot_unless_late``): it is answered from that snapshot while it is younger
than ``LATE_LIMIT`` times the max age (counted as ``snapshot_late``), else the caller answers it
per request (``per_request_late``). A per-request query sent while Prometheus evaluates the
batch waits behind that evaluation (at 100,000 objects it took as long as the renewal), so the
snapshot is the answer that does not hold requests back. A batch that nobody asks
for is never re-evaluated: evaluation is driven by requests only, so a rule stops costing
anything one interval after its last request, and its snapshot is dropped after
``IDLE_INTERVALS`` intervals without a request (or when the metric index is relisted).

The staleness probe, when configured, is batched the same way and sent as a second query at the
same evaluation time, concurrently with the value query (``run_with_probe``), not merged with it
as per request: at 100,000 objects the ``label_replace(...) or label_replace(...)`` of the
merged form cost Prometheus (2.42) about 0.85 CPU-seconds more than the two queries alone; see
docs/adapter-values.md, "Batched evaluation". A probe answer that proved every value of its
evaluation fresh is kept and reused by the batch's renewals within ``probe_reuse_seconds`` of
sending it (``--staleness-probe-reuse``, as per request): those send the value query alone, and
when the kept probe cannot vouch for a value, the probe at the same evaluation time, whose
answer then decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import structlog
from prometheus_client import Counter

from adapter.prometheus.results import InstantResult, Sample
from adapter.prometheus.singleflight import SingleFlight
from adapter.prometheus.slicing import SLICE_SAMPLES, between_slices, collector_paused
from adapter.providers.errors import MetricFetchError
from adapter.providers.evaluation import (
    PART_LABEL,
    PROBE_PART,
    VALUE_PART,
    Aged,
    Point,
    age_of,
    part_samples,
    run_instant,
    run_with_probe,
    vector_samples,
)
from adapter.providers.ports import Clock, PrometheusQuerier
from adapter.providers.telemetry import ProviderMetrics

log = structlog.get_logger(__name__)

DEFAULT_BATCH_MAX_AGE_SECONDS = 7.5
"""Half the HPA controller's default 15 s sync period."""
REFRESH_AHEAD = 0.75
"""A snapshot older than this fraction of the max age is re-evaluated in the background."""
IDLE_INTERVALS = 4
"""A batch without requests for this many max-age intervals is forgotten."""
DURATION_DECAY = 0.8
"""The evaluation duration the renewal lead is based on: the last one, or this fraction of the
one it was based on before when that is longer (a slow evaluation counts for a few renewals)."""
LATE_LIMIT = 2.0
"""While a renewal is late, its snapshot is still served until it is this many max ages old."""


@dataclass(frozen=True)
class BatchSettings:
    """max_age_seconds: ``--batch-max-age``; a snapshot older than this is not served (0 turns
        batching off: every request sends its own query, as upstream).
    max_series: ``--max-series``; an answer across namespaces with more samples than this
        makes later evaluations of that batch per namespace (None: no limit).
    """

    max_age_seconds: float = DEFAULT_BATCH_MAX_AGE_SECONDS
    max_series: int | None = None

    def __post_init__(self) -> None:
        if self.max_age_seconds < 0:
            raise ValueError("max_age_seconds must not be negative")
        if self.max_series is not None and self.max_series <= 0:
            raise ValueError("max_series must be positive")

    @property
    def enabled(self) -> bool:
        return self.max_age_seconds > 0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One batched answer, never changed after it is built.

    sent_monotonic: adapter monotonic time taken before sending (ages are never understated).
    evaluated_seconds: the evaluation time sent to Prometheus (Unix seconds).
    values: the value samples (``Point``) by namespace ("" when the answer has none) then object
        name.
    freshness: the probe's answer (``Aged``) the same way, or None without a staleness probe.
    series: samples in the value answer.
    groups: for a ``BatchPlan`` with ``grouped`` (several samples per object: the resource
        rules' containers), every sample by namespace then object name; ``values`` is empty.
    """

    sent_monotonic: float
    evaluated_seconds: float
    values: Mapping[str, Mapping[str, Point]]
    freshness: Mapping[str, Mapping[str, Aged]] | None
    series: int
    groups: Mapping[str, Mapping[str, tuple[Sample, ...]]] | None = None

    def values_in(self, namespace: str | None) -> Mapping[str, Point]:
        return self.values.get(namespace or "", _EMPTY)

    def groups_in(self, namespace: str | None) -> Mapping[str, tuple[Sample, ...]]:
        if self.groups is None:
            return _EMPTY_GROUPS
        return self.groups.get(namespace or "", _EMPTY_GROUPS)

    def freshness_in(self, namespace: str | None) -> Mapping[str, Aged] | None:
        if self.freshness is None:
            return None
        return self.freshness.get(namespace or "", _EMPTY_FRESHNESS)


_EMPTY: Mapping[str, Point] = {}
_EMPTY_FRESHNESS: Mapping[str, Aged] = {}
_EMPTY_GROUPS: Mapping[str, tuple[Sample, ...]] = {}


@dataclass(frozen=True)
class BatchPlan:
    """What to send for one batch: the PromQL, and the labels that name each answer's object.

    probed: ``query`` is a ``merged_query`` (value and probe in one answer, each sample tagged
        with its part): the per-request path's answers, indexed by ``index_answer``.
    namespace: the namespace the query covers, or None across namespaces (or cluster-scoped);
        answers without a namespace label are filed under it.
    grouped: keep every sample of an object (``Snapshot.groups``), not the last one.
    probe: the batched staleness probe, sent as a query of its own at the same evaluation time
        (a batched evaluation's ``query`` is then the value query alone, ``probed`` False).
    """

    query: str
    probed: bool
    resource_label: str
    namespace_label: str | None
    namespace: str | None
    grouped: bool = False
    probe: str | None = None


def _namespace_reader(plan: BatchPlan) -> Callable[[Mapping[str, str]], str]:
    """Where an answer's sample is filed: its namespace label, or the plan's namespace."""
    label = plan.namespace_label
    if label is None:
        fixed = plan.namespace or ""
        return lambda labels: fixed
    return lambda labels: labels.get(label, "")


def group_answer(
    plan: BatchPlan, samples: Sequence[Sample]
) -> dict[str, dict[str, tuple[Sample, ...]]]:
    """Every sample of one answer by namespace then object name (a ``grouped`` plan)."""
    lists: dict[str, dict[str, list[Sample]]] = {}
    group_into(plan, samples, lists)
    return _frozen_groups(lists)


def group_into(
    plan: BatchPlan, samples: Sequence[Sample], lists: dict[str, dict[str, list[Sample]]]
) -> None:
    namespace_of = _namespace_reader(plan)
    for sample in samples:
        labels = sample.labels
        by_name = lists.setdefault(namespace_of(labels), {})
        by_name.setdefault(labels.get(plan.resource_label, ""), []).append(sample)


def freshness_into(
    plan: BatchPlan, samples: Sequence[Sample], freshness: dict[str, dict[str, Aged]]
) -> None:
    """The samples of a probe's answer (``BatchPlan.probe``) by namespace then object name."""
    resource_label = plan.resource_label
    namespace_of = _namespace_reader(plan)
    for sample in samples:
        aged = age_of(sample)
        if aged is not None:
            labels = sample.labels
            freshness.setdefault(namespace_of(labels), {})[labels.get(resource_label, "")] = aged


def _frozen_groups(
    lists: dict[str, dict[str, list[Sample]]],
) -> dict[str, dict[str, tuple[Sample, ...]]]:
    return {
        namespace: {name: tuple(found) for name, found in by_name.items()}
        for namespace, by_name in lists.items()
    }


def index_answer(
    plan: BatchPlan, samples: Sequence[Sample]
) -> tuple[dict[str, dict[str, Point]], dict[str, dict[str, Aged]] | None]:
    """The samples of one answer by namespace then object name (probe samples apart), the one
    shaping of answers by object: the batched snapshots' and each per-request answer's."""
    values: dict[str, dict[str, Point]] = {}
    freshness: dict[str, dict[str, Aged]] | None = {} if plan.probed else None
    index_into(plan, samples, values, freshness)
    return values, freshness


def index_into(
    plan: BatchPlan,
    samples: Sequence[Sample],
    values: dict[str, dict[str, Point]],
    freshness: dict[str, dict[str, Aged]] | None,
) -> None:
    """``index_answer`` adding to ``values`` and ``freshness`` (a part of an answer)."""
    resource_label = plan.resource_label
    namespace_of = _namespace_reader(plan)
    for sample in samples:
        labels, timestamp, text = sample
        namespace = namespace_of(labels)
        name = labels.get(resource_label, "")
        if freshness is None:
            values.setdefault(namespace, {})[name] = (timestamp, text)
            continue
        part = labels.get(PART_LABEL)
        if part == VALUE_PART:
            values.setdefault(namespace, {})[name] = (timestamp, text)
        elif part == PROBE_PART:
            aged = age_of(sample)
            if aged is not None:
                freshness.setdefault(namespace, {})[name] = aged
        else:
            raise MetricFetchError(
                detail=f"a sample without the {PART_LABEL} label: {dict(labels)!r}"
            )


@dataclass
class _Batch:
    plan: BatchPlan
    snapshot: Snapshot | None = None
    last_request: float = 0.0
    evaluating: bool = False
    started: float = 0.0
    """When the evaluation in flight (or the last one) was sent (adapter monotonic time)."""
    kept_probe: tuple[float, Mapping[str, Mapping[str, Aged]]] | None = None
    """The newest probe answer that proved every value of its evaluation fresh, with when it
    was sent (adapter monotonic time): reused within ``probe_reuse_seconds``."""
    last_duration: float = 0.0
    """Seconds the renewal lead is based on: the last successful evaluation's duration, or
    ``DURATION_DECAY`` of the figure before when that is longer."""


class Batcher:
    """Snapshots by batch key (any hashable the provider chooses), evaluated on demand.

    ``api`` labels the metrics (``custom`` or ``resource``)."""

    def __init__(
        self,
        querier: PrometheusQuerier,
        *,
        settings: BatchSettings,
        clock: Clock,
        api: str,
        metrics: ProviderMetrics | None = None,
        max_sample_age_seconds: float | None = None,
        probe_reuse_seconds: float = 0.0,
    ) -> None:
        """max_sample_age_seconds, probe_reuse_seconds: the staleness bound a kept probe must
        prove every value within, and how long it is reused (``ValueSettings``; 0: a probe with
        every evaluation that has one)."""
        self._querier = querier
        self._max_sample_age = max_sample_age_seconds
        self._probe_reuse = probe_reuse_seconds
        self.settings = settings
        self._clock = clock
        self._api = api
        self._metrics = metrics
        self._answers: dict[str, Counter] = {}
        """``batch_requests``' child for each answer path (a handful), looked up once per
        request, not built."""
        self._batches: dict[Hashable, _Batch] = {}
        self._flight: SingleFlight[Hashable, Snapshot] = SingleFlight()
        self._refreshes: set[asyncio.Task[None]] = set()
        self.too_large: set[Hashable] = set()
        """Batch families whose answer across namespaces exceeded ``max_series``."""

    def batch_count(self) -> int:
        return len(self._batches)

    def reset(self) -> None:
        """Forget every snapshot (the metric index changed)."""
        self._batches = {}
        self.too_large = set()

    async def wait_for_refreshes(self) -> None:
        """Until the background re-evaluations in flight have finished."""
        while self._refreshes:
            await asyncio.wait(set(self._refreshes))

    async def snapshot(
        self,
        key: Hashable,
        plan: Callable[[], BatchPlan],
        *,
        family: Hashable,
        timeout_seconds: float | None,
    ) -> Snapshot:
        """A snapshot of ``key`` younger than the max age: the current one, or a new one.

        ``plan`` renders the batch the first time ``key`` is asked for (it may raise the rule's
        errors, which the caller turns into provider errors). ``family`` names the batches of one
        (metric, resource, selector) for ``max_series``. A late renewal is waited for."""
        found = await self._snapshot(
            key, plan, family=family, timeout_seconds=timeout_seconds, wait_when_late=True
        )
        assert found is not None
        return found

    async def snapshot_unless_late(
        self,
        key: Hashable,
        plan: Callable[[], BatchPlan],
        *,
        family: Hashable,
        timeout_seconds: float | None,
    ) -> Snapshot | None:
        """``snapshot``, except while the current snapshot's renewal is late (the snapshot is
        older than the max age, its renewal in flight): that snapshot while it is younger than
        ``LATE_LIMIT`` max ages, else None (the caller answers per request). Counts the answers
        it gives (``snapshot``, ``snapshot_late``)."""
        return await self._snapshot(
            key, plan, family=family, timeout_seconds=timeout_seconds, wait_when_late=False
        )

    async def _snapshot(
        self,
        key: Hashable,
        plan: Callable[[], BatchPlan],
        *,
        family: Hashable,
        timeout_seconds: float | None,
        wait_when_late: bool,
    ) -> Snapshot | None:
        now = self._clock.monotonic()
        batch = self._batches.get(key)
        if batch is None:
            self._forget_idle(now)
            batch = self._batches[key] = _Batch(plan())
        batch.last_request = now
        max_age = self.settings.max_age_seconds
        current = batch.snapshot
        if current is not None:
            age = now - current.sent_monotonic
            if age <= max_age:
                # renew ahead: a quarter of the max age, or twice the last evaluation's
                # duration when that is longer, so a slow query still lands in time
                lead = max((1 - REFRESH_AHEAD) * max_age, 2 * batch.last_duration)
                if age > max_age - lead:
                    self._refresh_in_background(key, batch, family, timeout_seconds)
                if not wait_when_late:
                    self.count_answer("snapshot")
                return current
            # a renewal sent while the snapshot was still young is late: not waited for; an
            # evaluation sent after it expired (the batch was idle) is
            if (
                not wait_when_late
                and batch.evaluating
                and batch.started <= current.sent_monotonic + max_age
            ):
                if age <= LATE_LIMIT * max_age:
                    self.count_answer("snapshot_late")
                    return current
                return None
        snapshot, _ = await self._flight.do(
            key,
            lambda: self._evaluate(key, batch, family, timeout_seconds),
            name=f"batched evaluation ({self._api})",
        )
        if not wait_when_late:
            self.count_answer("snapshot")
        return snapshot

    # ------------------------------------------------------------------ internals

    def _forget_idle(self, now: float) -> None:
        horizon = IDLE_INTERVALS * self.settings.max_age_seconds
        idle = [key for key, batch in self._batches.items() if now - batch.last_request > horizon]
        for key in idle:
            del self._batches[key]

    def _refresh_in_background(
        self, key: Hashable, batch: _Batch, family: Hashable, timeout_seconds: float | None
    ) -> None:
        if batch.evaluating:
            return

        async def refresh() -> None:
            await self._flight.do(
                key,
                lambda: self._evaluate(key, batch, family, timeout_seconds),
                name=f"batched evaluation ({self._api})",
            )

        task = asyncio.create_task(refresh(), name=f"batched refresh ({self._api})")
        self._refreshes.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._refreshes.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                log.warning(
                    "batched_refresh_failed", api=self._api, error=str(finished.exception())
                )

        task.add_done_callback(done)

    async def _evaluate(
        self, key: Hashable, batch: _Batch, family: Hashable, timeout_seconds: float | None
    ) -> Snapshot:
        plan = batch.plan
        sent = self._clock.monotonic()
        evaluated = self._clock.now().timestamp()
        batch.evaluating = True
        batch.started = sent
        try:
            values, freshness, groups, count = await self._indexed(
                plan, evaluated, timeout_seconds, batch=batch, sent=sent
            )
        except MetricFetchError:
            self._count_evaluation("error")
            raise
        finally:
            batch.evaluating = False
        self._count_evaluation("success")
        # the slowest of the recent evaluations: with a kept probe most renewals send the value
        # query alone, and the lead must also cover the next one that probes again
        batch.last_duration = max(
            self._clock.monotonic() - sent, DURATION_DECAY * batch.last_duration
        )
        snapshot = Snapshot(sent, evaluated, values, freshness, count, groups)
        latest = batch.snapshot
        if latest is None or latest.sent_monotonic <= sent:
            batch.snapshot = snapshot
        limit = self.settings.max_series
        if limit is not None and plan.namespace_label is not None and count > limit:
            log.info("batch_per_namespace", api=self._api, series=count, max_series=limit)
            self.too_large.add(family)
        return snapshot

    async def _indexed(
        self,
        plan: BatchPlan,
        evaluated: float,
        timeout_seconds: float | None,
        *,
        batch: _Batch,
        sent: float,
    ) -> tuple[
        dict[str, dict[str, Point]],
        Mapping[str, Mapping[str, Aged]] | None,
        dict[str, dict[str, tuple[Sample, ...]]] | None,
        int,
    ]:
        """The plan's answer at ``evaluated``: its values, freshness and groups by namespace
        then object name, and its number of value samples. With a probe, the value query and the
        probe go as two concurrent queries at the same evaluation time, or the value query alone
        when the batch's kept probe (``_Batch.kept_probe``) is young enough, followed by the
        probe at the same evaluation time when the kept one cannot vouch for every value."""
        probe = plan.probe if not plan.grouped else None
        kept = batch.kept_probe
        reused: Mapping[str, Mapping[str, Aged]] | None = None
        if probe is not None and kept is not None and sent - kept[0] <= self._probe_reuse:
            reused = kept[1]
        if reused is None:
            result, probed = await run_with_probe(
                self._querier,
                plan.query,
                probe=probe,
                time_seconds=evaluated,
                timeout_seconds=timeout_seconds,
                in_parts=True,
            )
        else:
            result = await run_instant(
                self._querier,
                plan.query,
                time_seconds=evaluated,
                timeout_seconds=timeout_seconds,
                in_parts=True,
            )
            probed = None
        values: dict[str, dict[str, Point]] = {}
        freshness: dict[str, dict[str, Aged]] | None = None
        if plan.probed and not plan.grouped:
            freshness = {}
        lists: dict[str, dict[str, list[Sample]]] = {}

        def add(samples: Sequence[Sample]) -> None:
            if plan.grouped:
                group_into(plan, samples, lists)
            else:
                index_into(plan, samples, values, freshness)

        count = await _sliced(result, add)
        if reused is not None and probe is not None:
            if await self._proves(values, reused):
                return values, reused, None, count
            # a value the kept probe cannot vouch for: the probe decides, as without reuse
            probed = await run_instant(
                self._querier,
                probe,
                time_seconds=evaluated,
                timeout_seconds=timeout_seconds,
                in_parts=True,
            )
        if probed is not None and probe is not None:
            fresh: dict[str, dict[str, Aged]] = {}
            await _sliced(probed, lambda samples: freshness_into(plan, samples, fresh))
            if batch.kept_probe is None or batch.kept_probe[0] <= sent:
                proved = await self._proves(values, fresh)
                batch.kept_probe = (sent, fresh) if proved else None
            return values, fresh, None, count
        groups = _frozen_groups(lists) if plan.grouped else None
        return values, freshness, groups, count

    async def _proves(
        self, values: Mapping[str, Mapping[str, Point]], freshness: Mapping[str, Mapping[str, Aged]]
    ) -> bool:
        """Whether ``freshness`` shows every value's newest raw sample within the staleness
        bound at the value's evaluation time (the newest sample can only be newer). Checked
        ``SLICE_SAMPLES`` values at a time, the loop serving requests in between (at 100,000
        objects the whole check held it for tens of milliseconds)."""
        bound = self._max_sample_age
        if bound is None:
            return False
        budget = SLICE_SAMPLES
        for namespace, points in values.items():
            known = freshness.get(namespace, _EMPTY_FRESHNESS)
            for name, (timestamp_seconds, _) in points.items():
                fresh = known.get(name)
                if fresh is None or timestamp_seconds - fresh[0] > bound:
                    return False
                budget -= 1
                if not budget:
                    await between_slices()
                    budget = SLICE_SAMPLES
        return True

    def _count_evaluation(self, result: str) -> None:
        if self._metrics is not None:
            self._metrics.batch_evaluations.labels(self._api, result).inc()

    def count_answer(self, path: str) -> None:
        """One request answered by ``path``: ``snapshot``, or ``per_request_rule`` /
        ``per_request_selector`` when it fell back (the rule or the selector cannot batch)."""
        if self._metrics is None:
            return
        counter = self._answers.get(path)
        if counter is None:
            counter = self._answers[path] = self._metrics.batch_requests.labels(self._api, path)
        counter.inc()


async def _sliced(result: InstantResult, add: Callable[[Sequence[Sample]], None]) -> int:
    """Feed ``add`` the samples of ``result`` a slice at a time, each part decoded when it is
    indexed (so the samples of one part only ever live at once): a large answer must not stall
    the requests served meanwhile. Returns the number of samples."""
    tail = vector_samples(result)
    count = 0
    for part in result.parts:
        with collector_paused():
            samples = part_samples(part)
            count += len(samples)
            add(samples)
            del samples
        await between_slices()
    for start in range(0, len(tail), SLICE_SAMPLES):
        if start:
            await between_slices()
        with collector_paused():
            add(tail[start : start + SLICE_SAMPLES])
    return count + len(tail)
