"""The VPA recommender's main loop: one pass (``RunOnce``) every ``--recommender-interval``.

Upstream counterparts: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/recommender/routines/recommender.go`` (``RunOnce``: LoadVPAs, LoadPods, LoadMetrics,
DeleteRemovedPods, UpdateVPAs, MaintainCheckpoints bounded by ``--checkpoints-timeout`` with
checkpoint garbage collection every ``--checkpoints-gc-interval``, the rate-limited garbage
collection of aggregates), ``pkg/recommender/checkpoint/checkpoint_writer.go``
(``StoreCheckpoints``: the least recently written VPAs first, until the deadline),
``pkg/utils/vpa/api.go`` (``UpdateVpaStatusIfNeeded``: the status is written only when it
differs from the observed one), ``pkg/recommender/main.go`` (checkpoints loaded before the first
pass, the history provider's ``InitFromHistoryProvider``) and
``pkg/utils/metrics/recommender/recommender.go`` (the ``vpa_recommender_*`` metrics).

Deliberate deviations:

* the history provider runs in a background task: live passes go on meanwhile, each VPA carries
  ``FetchingHistory`` while it runs, and its result is applied at the start of the next pass
  (upstream reads the history before the first pass and blocks until it is done); a failing
  provider is logged once and the condition removed;
* the HPAs of each VPA's namespace that scale its target are found from the HPA informer and
  passed to the model (:mod:`hpa.core.vpa.awareness`), which sets
  ``HorizontalScalingConflictAvoided``; ``LowConfidence`` is set as :mod:`hpa.core.vpa.routines`
  documents;
* ``--min-checkpoints`` (deprecated and without effect upstream) is the number of VPAs whose
  checkpoints are written in a pass even past ``--checkpoints-timeout``;
* one VPA's failure (a status write refused, an unexpected error) is logged with the VPA's name
  and the pass goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from prometheus_client import CollectorRegistry, Gauge, Histogram

from hpa.api.vpa import status_from_core
from hpa.controllers.vertical.feeder import (
    CONFIG_UNSUPPORTED,
    MODEL_CRANE,
    ClusterFeeder,
    ObservedVpa,
)
from hpa.controllers.vertical.group_aware import MODEL_GROUP_AWARE
from hpa.controllers.vertical.ports import HistoryError, HistoryProvider, PodHistory
from hpa.core.spec import CrossVersionObjectReference
from hpa.core.vpa.aggregation import CheckpointStatus
from hpa.core.vpa.amount import Resources, cpu_amount_from_cores, memory_amount_from_bytes
from hpa.core.vpa.awareness import (
    HorizontalConflict,
    HorizontalScaler,
    HpaAwareness,
    horizontal_conflicts,
)
from hpa.core.vpa.checkpoints import (
    checkpoint_name,
    checkpoint_states,
    orphaned_checkpoints,
    vpas_to_checkpoint,
)
from hpa.core.vpa.cluster import PodId, VpaCondition, VpaId, VpaState
from hpa.core.vpa.crane import CraneConfig
from hpa.core.vpa.recommender import (
    PodResourceRecommender,
    RecommendationFormat,
    integer_cpu_containers,
)
from hpa.core.vpa.routines import process_crane_vpa_update, process_vpa_update
from hpa.kube.client import ApiError, TransportError
from hpa.kube.clock import Clock
from hpa.kube.vpa_client import CheckpointObject, parse_checkpoint
from hpa.kube.vpa_records import VpaRecord

__all__ = [
    "Recommender",
    "RecommenderApi",
    "RecommenderMetrics",
    "RecommenderSettings",
    "status_body",
    "status_changed",
]

log = structlog.get_logger("hpa.controllers.vertical.recommender")

NANOSECONDS_PER_SECOND = 1_000_000_000
UPDATE_MODES = ("Off", "Initial", "Recreate", "Auto", "InPlaceOrRecreate", "InPlace")
API_VERSIONS = ("v1beta1", "v1beta2", "v1")


class RecommenderApi(Protocol):
    """The recommender's writes (:class:`hpa.kube.vpa_client.VpaClient`)."""

    async def patch_vpa_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None: ...

    async def list_checkpoints(self) -> list[Mapping[str, Any]]: ...

    async def save_checkpoint(
        self,
        namespace: str,
        name: str,
        *,
        vpa_name: str,
        container_name: str,
        status: CheckpointStatus,
    ) -> None: ...

    async def delete_checkpoint(self, namespace: str, name: str) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RecommenderSettings:
    """The loop's settings (flags in :mod:`hpa.app.recommender`)."""

    interval_seconds: float = 60.0
    """``--recommender-interval`` (1m)."""
    checkpoints_timeout_seconds: float = 60.0
    """``--checkpoints-timeout`` (1m): checkpoint writes of one pass stop after this long."""
    checkpoints_gc_interval_seconds: float = 600.0
    """``--checkpoints-gc-interval`` (10m)."""
    min_checkpoints: int = 10
    """``--min-checkpoints`` (10)."""
    hpa_awareness: HpaAwareness = HpaAwareness.EXCLUDE
    """``--hpa-awareness``."""
    recommendation_format: RecommendationFormat = field(default_factory=RecommendationFormat)
    crane: CraneConfig = field(default_factory=CraneConfig)
    safety_margin_fraction: float = 0.15
    """``--recommendation-margin-fraction``: what the ``group-aware`` model adds to its estimate."""


class RecommenderMetrics:
    """Upstream's ``vpa_recommender_*`` metrics on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.execution_latency = Histogram(
            "vpa_recommender_execution_latency_seconds",
            "Time spent in various parts of VPA Recommender main loop.",
            ["step"],
            buckets=(
                0.01,
                0.02,
                0.05,
                0.1,
                0.2,
                0.5,
                1.0,
                2.0,
                5.0,
                10.0,
                20.0,
                30.0,
                40.0,
                50.0,
                60.0,
                70.0,
                80.0,
                90.0,
                100.0,
                120.0,
                150.0,
                240.0,
                300.0,
            ),
            registry=registry,
        )
        self.recommendation_latency = Histogram(
            "vpa_recommender_recommendation_latency_seconds",
            "Time elapsed from creating a valid VPA configuration to the first recommendation.",
            buckets=(
                1.0,
                2.0,
                5.0,
                7.5,
                10.0,
                20.0,
                30.0,
                40.0,
                50.0,
                60.0,
                90.0,
                120.0,
                150.0,
                180.0,
                240.0,
                300.0,
                600.0,
                900.0,
                1800.0,
            ),
            registry=registry,
        )
        self.aggregate_container_states = Gauge(
            "vpa_recommender_aggregate_container_states_count",
            "Number of aggregate container states being tracked by the recommender",
            registry=registry,
        )
        self.vpa_objects = Gauge(
            "vpa_recommender_vpa_objects_count",
            "Number of VPA objects present in the cluster.",
            ["update_mode", "has_recommendation", "api", "matches_pods", "unsupported_config"],
            registry=registry,
        )

    def observe_objects(self, vpas: Sequence[VpaState]) -> None:
        """``ObjectCounter``: every label combination is set, unseen ones to 0."""
        counts: Counter[tuple[str, str, str, str, str]] = Counter()
        for vpa in vpas:
            counts[
                (
                    vpa.update_mode or "Recreate",
                    _go_bool(vpa.has_recommendation()),
                    vpa.api_version,
                    _go_bool(vpa.has_matched_pods()),
                    _go_bool(vpa.condition_active(CONFIG_UNSUPPORTED)),
                )
            ] += 1
        for mode in UPDATE_MODES:
            for has in ("false", "true"):
                for api in API_VERSIONS:
                    for matches in ("false", "true"):
                        for unsupported in ("false", "true"):
                            key = (mode, has, api, matches, unsupported)
                            self.vpa_objects.labels(*key).set(counts.pop(key, 0))
        for key, count in counts.items():
            self.vpa_objects.labels(*key).set(count)


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


def status_body(
    recommendation: Any, conditions: Sequence[Any], *, observed_generation: int | None
) -> dict[str, Any]:
    """The ``status`` the recommender writes (``Vpa.AsStatus``), as JSON."""
    return status_from_core(
        recommendation, list(conditions), observed_generation=observed_generation
    )


def _conditions_as_written(conditions: Sequence[VpaCondition]) -> list[tuple[Any, ...]]:
    """Conditions as they read back after a write (transition times in whole seconds)."""
    return sorted(
        (c.type, c.status, c.reason, c.message, c.last_transition_time_ns // NANOSECONDS_PER_SECOND)
        for c in conditions
    )


def status_changed(vpa: VpaState, record: VpaRecord) -> bool:
    """Whether ``vpa``'s status differs from the observed one (``UpdateVpaStatusIfNeeded``'s
    comparison, in the model's shape: the record was converted once, when it arrived)."""
    return (
        record.observed_generation != vpa.generation
        or record.recommendation != vpa.recommendation
        or _conditions_as_written(record.conditions)
        != _conditions_as_written(vpa.conditions_list())
    )


class _StepTimer:
    """``ExecutionTimer``: each step's wall time into the histogram, and the total; each step's
    CPU time of this process in ``cpu_seconds`` (for the benchmark and the pass's log line)."""

    def __init__(self, histogram: Histogram) -> None:
        self._histogram = histogram
        self._start = self._last = time.perf_counter()
        self._last_cpu = time.process_time()
        self.cpu_seconds: dict[str, float] = {}

    def step(self, name: str) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        self._histogram.labels(name).observe(now - self._last)
        self.cpu_seconds[name] = cpu - self._last_cpu
        self._last, self._last_cpu = now, cpu

    def total(self) -> None:
        self._histogram.labels("total").observe(time.perf_counter() - self._start)


class Recommender:
    """``recommender``: the feeder, the model's recommender, the HPAs and the API writes."""

    def __init__(
        self,
        feeder: ClusterFeeder,
        *,
        pod_recommender: PodResourceRecommender,
        api: RecommenderApi,
        hpas: Callable[[str], Sequence[HorizontalScaler]],
        clock: Clock,
        registry: CollectorRegistry,
        settings: RecommenderSettings = RecommenderSettings(),
        history: HistoryProvider | None = None,
    ) -> None:
        self.feeder = feeder
        self.cluster = feeder.cluster
        self.pod_recommender = pod_recommender
        self.api = api
        self.hpas = hpas
        self.clock = clock
        self.settings = settings
        self.metrics = RecommenderMetrics(registry)
        self.history = history
        self._history_result: Mapping[PodId, PodHistory] | None = None
        self._last_checkpoint_gc: float | None = None
        self.status_writes = 0
        self.checkpoint_writes = 0
        self.checkpoint_deletes = 0
        self.passes = 0
        self.last_pass_cpu_seconds: Mapping[str, float] = {}
        """CPU seconds of each step (upstream's step names) of the last pass."""

    def now_ns(self) -> int:
        moment = self.clock.now()
        return int(moment.timestamp()) * NANOSECONDS_PER_SECOND + moment.microsecond * 1000

    # -- start-up -----------------------------------------------------------------------------

    async def _list_checkpoints(self) -> list[CheckpointObject] | None:
        try:
            items = await self.api.list_checkpoints()
        except (ApiError, TransportError) as error:
            log.error("checkpoints_list_failed", error=str(error))
            return None
        out = []
        for item in items:
            try:
                out.append(parse_checkpoint(item))
            except ValueError as error:
                meta = item.get("metadata") or {}
                log.error(
                    "checkpoint_unreadable",
                    checkpoint=f"{meta.get('namespace')}/{meta.get('name')}",
                    error=str(error).splitlines()[0],
                )
        return out

    async def init_from_checkpoints(self) -> int:
        """``InitFromCheckpoints``: load the VPAs, then every checkpoint, before the first
        pass."""
        await self.feeder.load_vpas(now_ns=self.now_ns())
        checkpoints = await self._list_checkpoints()
        loaded = self.feeder.init_from_checkpoints(checkpoints or ())
        log.info("checkpoints_loaded", checkpoints=loaded, vpas=len(self.cluster.vpas))
        return loaded

    async def fetch_history(self) -> None:
        """The history bootstrap (a background task): ``FetchingHistory`` is set on every VPA
        while it runs; the result is applied by the next pass."""
        if self.history is None:
            return
        self.feeder.fetching_history = True
        log.info("history_fetching")
        try:
            result = await self.history.get_cluster_history()
        except asyncio.CancelledError:
            raise
        except HistoryError as error:
            log.error("history_failed", error=str(error))
            self.feeder.fetching_history = False
            return
        except Exception as error:  # noqa: BLE001 - a provider's bug must not end the recommender
            log.error("history_failed", error=repr(error))
            self.feeder.fetching_history = False
            return
        self._history_result = result
        log.info("history_fetched", pods=len(result))

    def _apply_history(self) -> None:
        result, self._history_result = self._history_result, None
        if result is None:
            return
        samples = self.feeder.init_from_history(result, now_ns=self.now_ns())
        self.feeder.fetching_history = False
        log.info("history_applied", pods=len(result), samples=samples)

    # -- one pass -----------------------------------------------------------------------------

    def _conflicts(
        self,
        vpa: VpaState,
        scalers: dict[str, dict[tuple[str, str], list[HorizontalScaler]]],
    ) -> tuple[HorizontalConflict, ...]:
        """The VPA's conflicts with the HPAs of its namespace (``scalers``: the pass's HPAs by
        namespace and by the kind and name of their target, each namespace's read once per
        pass, so a VPA looks only at the HPAs that name its workload)."""
        if self.settings.hpa_awareness is HpaAwareness.OFF or vpa.target_ref is None:
            return ()
        api_version, kind, name = vpa.target_ref
        namespace = vpa.id.namespace
        by_target = scalers.get(namespace)
        if by_target is None:
            by_target = scalers[namespace] = {}
            for hpa in self.hpas(namespace):
                ref = hpa.spec.scale_target_ref
                by_target.setdefault((ref.kind, ref.name), []).append(hpa)
        candidates = by_target.get((kind, name))
        if not candidates:
            return ()
        return horizontal_conflicts(
            namespace,
            CrossVersionObjectReference(kind=kind, name=name, api_version=api_version),
            candidates,
        )

    async def update_vpas(self, *, now_ns: int) -> None:
        """``UpdateVPAs``: recommend each VPA and write its status when it changed."""
        processed: list[VpaState] = []
        scalers: dict[str, dict[tuple[str, str], list[HorizontalScaler]]] = {}
        for vpa_id, observed in list(self.feeder.observed.items()):
            vpa = self.cluster.vpas.get(vpa_id)
            if vpa is None:
                continue
            try:
                await self._update_vpa(vpa, observed, self._conflicts(vpa, scalers), now_ns=now_ns)
            except (ApiError, TransportError) as error:
                log.error("vpa_status_write_failed", vpa=_name(vpa_id), error=str(error))
            except Exception as error:  # noqa: BLE001 - one VPA never stops the pass
                log.error("vpa_update_failed", vpa=_name(vpa_id), error=repr(error))
            processed.append(vpa)
        self.metrics.observe_objects(processed)

    async def _update_vpa(
        self,
        vpa: VpaState,
        observed: ObservedVpa,
        conflicts: tuple[HorizontalConflict, ...],
        *,
        now_ns: int,
    ) -> None:
        if observed.model == MODEL_CRANE:
            crane = self.feeder.crane.get(vpa.id)
            update = process_crane_vpa_update(
                self.cluster,
                vpa,
                {} if crane is None else crane.states,
                config=self.settings.crane,
                now_ns=now_ns,
                conflicts=conflicts,
                awareness=self.settings.hpa_awareness,
            )
        else:
            update = process_vpa_update(
                self.cluster,
                vpa,
                recommender=self.pod_recommender,
                now_ns=now_ns,
                recommendation_format=self.settings.recommendation_format,
                integer_cpu=integer_cpu_containers(vpa.annotations),
                conflicts=conflicts,
                awareness=self.settings.hpa_awareness,
                explain=False,
            )
            if observed.model == MODEL_GROUP_AWARE:
                self.feeder.group_sizes.apply(
                    vpa,
                    conflicts,
                    safety_margin_fraction=self.settings.safety_margin_fraction,
                    pod_minimum=Resources(
                        cpu=cpu_amount_from_cores(self.pod_recommender.min_cpu_millicores / 1000),
                        memory=memory_amount_from_bytes(
                            self.pod_recommender.min_memory_mb * 1024 * 1024
                        ),
                    ),
                    policy=vpa.resource_policy,
                )
        if update.first_recommendation:
            self.metrics.recommendation_latency.observe(
                max(0.0, (now_ns - vpa.created_ns) / NANOSECONDS_PER_SECOND)
            )
        if update.missing is not None:
            log.info("recommendation_missing", vpa=_name(vpa.id), message=update.missing)
        record = observed.record
        if not status_changed(vpa, record):
            return
        new = status_body(
            vpa.recommendation, vpa.conditions_list(), observed_generation=vpa.generation
        )
        await self.api.patch_vpa_status(record.namespace, record.name, new)
        self.status_writes += 1

    async def maintain_checkpoints(self, *, now_ns: int) -> None:
        """``MaintainCheckpoints``: write checkpoints until the deadline (at least
        ``--min-checkpoints`` VPAs), then garbage-collect orphans when it is time."""
        deadline = self.clock.monotonic() + self.settings.checkpoints_timeout_seconds
        written = 0
        for vpa in vpas_to_checkpoint(self.cluster):
            if written >= self.settings.min_checkpoints and self.clock.monotonic() >= deadline:
                log.info(
                    "checkpoints_timeout",
                    written=written,
                    timeout_seconds=self.settings.checkpoints_timeout_seconds,
                )
                break
            try:
                for container, status in checkpoint_states(
                    self.cluster, vpa, now_ns=now_ns
                ).items():
                    await self.api.save_checkpoint(
                        vpa.id.namespace,
                        checkpoint_name(vpa.id.vpa_name, container),
                        vpa_name=vpa.id.vpa_name,
                        container_name=container,
                        status=status,
                    )
                    self.checkpoint_writes += 1
            except (ApiError, TransportError) as error:
                log.error("checkpoint_write_failed", vpa=_name(vpa.id), error=str(error))
                continue
            vpa.checkpoint_written_ns = now_ns
            written += 1
        now = self.clock.monotonic()
        due = (
            self._last_checkpoint_gc is None
            or now - self._last_checkpoint_gc > self.settings.checkpoints_gc_interval_seconds
        )
        if due:
            self._last_checkpoint_gc = now
            await self.garbage_collect_checkpoints(now_ns=now_ns)

    async def garbage_collect_checkpoints(self, *, now_ns: int) -> None:
        """``GarbageCollectCheckpoints`` (and the stale containers' checkpoints)."""
        checkpoints = await self._list_checkpoints()
        if checkpoints is None:
            return
        for ref in orphaned_checkpoints(
            self.feeder.checkpoint_refs(checkpoints),
            self.cluster,
            existing_vpas=self.feeder.existing_vpas(),
            now_ns=now_ns,
        ):
            try:
                await self.api.delete_checkpoint(ref.namespace, ref.name)
            except (ApiError, TransportError) as error:
                log.error(
                    "checkpoint_delete_failed",
                    checkpoint=f"{ref.namespace}/{ref.name}",
                    error=str(error),
                )
                continue
            self.checkpoint_deletes += 1
            log.info("checkpoint_deleted", checkpoint=f"{ref.namespace}/{ref.name}")

    async def run_once(self) -> None:
        """``RunOnce``."""
        timer = _StepTimer(self.metrics.execution_latency)
        self._apply_history()
        now_ns = self.now_ns()
        await self.feeder.load_vpas(now_ns=now_ns)
        timer.step("LoadVPAs")
        self.feeder.load_pods(now_ns=now_ns)
        timer.step("LoadPods")
        await self.feeder.load_real_time_metrics(now_ns=now_ns)
        self.metrics.aggregate_container_states.set(self.cluster.state_map_size())
        timer.step("LoadMetrics")
        self.feeder.delete_removed_pods()
        timer.step("DeleteRemovedPods")
        await self.update_vpas(now_ns=now_ns)
        timer.step("UpdateVPAs")
        await self.maintain_checkpoints(now_ns=now_ns)
        timer.step("MaintainCheckpoints")
        self.cluster.rate_limited_garbage_collect(
            now_ns, controller_exists=self.feeder.controller_exists
        )
        timer.step("GarbageCollect")
        timer.total()
        self.last_pass_cpu_seconds = timer.cpu_seconds
        self.passes += 1
        log.info(
            "recommender_pass",
            vpas=len(self.cluster.vpas),
            pods=len(self.cluster.pods),
            aggregate_container_states=self.cluster.state_map_size(),
            status_writes=self.status_writes,
        )

    async def run(self) -> None:
        """Load the checkpoints, start the history bootstrap, then a pass every interval (a
        pass that fails unexpectedly is logged, and the next one runs on time)."""
        await self.init_from_checkpoints()
        self.feeder.fetching_history = self.history is not None
        history = asyncio.create_task(self.fetch_history(), name="vpa-history")
        try:
            while True:
                started = self.clock.monotonic()
                try:
                    await self.run_once()
                except asyncio.CancelledError:
                    raise
                except Exception as error:  # noqa: BLE001 - the next pass runs on time
                    log.error("recommender_pass_failed", error=repr(error))
                elapsed = self.clock.monotonic() - started
                await self.clock.sleep(max(0.0, self.settings.interval_seconds - elapsed))
        finally:
            history.cancel()
            await asyncio.gather(history, return_exceptions=True)


def _name(vpa_id: VpaId) -> str:
    return f"{vpa_id.namespace}/{vpa_id.vpa_name}"
