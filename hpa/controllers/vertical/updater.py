"""The VPA updater's loop: for each VPA in an updating mode, choose its pods and apply the
recommendation by eviction or in-place resize, safely.

Upstream counterpart: kubernetes/autoscaler ``vertical-pod-autoscaler`` v1.8.1
``pkg/updater/logic/updater.go`` (``RunOnce``): the admission controller's status Lease must be
fresh (``--use-admission-controller-status``), VPAs in ``Recreate``/``Auto``/
``InPlaceOrRecreate``/``InPlace`` (or with a CPU startup boost) are processed, each live pod goes
to its controlling VPA (``GetControllingVPAForPod``), the pods are grouped by controller for the
eviction budget (``GetCreatorMaps``), ranked (``getPodsUpdateOrder``; the pods the VPA's
``evictionRequirements`` do not admit leave the queue), then resized in place
(``InPlaceOrRecreate``, ``InPlace``; ``InPlaceOrRecreate`` falls back to eviction) or evicted
(``Recreate``) through the rate limiters; ``recordInfeasibleAttempt`` and
``cleanupStaleInfeasibleAttempts``; events ``EvictedByVPA`` (pod), ``EvictedPod`` (VPA),
``InPlaceResizedByVPA`` (pod), ``InPlaceResizeSkipped`` (pod); ``processNextBoostItem``: a pod
whose CPU startup boost expired is resized back in place and its boost annotation removed.

Extensions (see ``docs/vpa.md``):
- the resources an HPA scales the workload on (:mod:`hpa.core.vpa.awareness`) and the resources
  whose per-resource mode is ``Off``/``Initial`` (:mod:`hpa.core.vpa.modes`) are taken out of the
  recommendation before ranking and patching, so they are never changed;
- before a pod's requests grow, :func:`hpa.core.vpa.capacity.capacity_verdict` must find room
  (its own node for a resize, any schedulable node for an eviction, counting lower-priority pods
  as free when the pod may preempt); when it fits nowhere the pod is left alone, with the event
  ``UpdateDoesNotFit`` on the pod and the VPA and the metric ``hpa_vpa_updater_pods_not_fitting``;
- pods of the ``system-cluster-critical``/``system-node-critical`` classes are never evicted
  unless ``allow_evicting_system_critical``.

Deliberate deviations: the boost check runs in the loop (upstream has a separate queue woken by
pod events, so it reacts sooner than ``--updater-interval``); the infeasible-attempt memory keeps
the capped recommendation the updater applied (upstream keeps ``status.recommendation``);
in-place attempt times of pods that are gone are forgotten; in ``InPlace`` mode a pod whose decision
is ``InPlaceDeferred`` (its group's budget is spent, or a resize is pending or in progress) waits
for a later loop (v1.8.1 sends it the resize anyway, so ``InPlace`` ignored the budget and re-sent
resizes already in progress).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

import structlog

from hpa.controllers.vertical.updater_metrics import LoopCounts, UpdaterMetrics, vpa_size_log2
from hpa.controllers.vertical.updater_ports import (
    AdmissionStatus,
    ClusterView,
    PodActionError,
    PodActions,
    UpdaterEvents,
)
from hpa.core.selector import Selector
from hpa.core.spec import CrossVersionObjectReference
from hpa.core.vpa.admission import ContainerResources, PatchOperation, escape_json_pointer
from hpa.core.vpa.awareness import (
    HorizontalConflict,
    HpaAwareness,
    effective_controlled_resources,
    horizontal_conflicts,
)
from hpa.core.vpa.boost import expired_boost_annotations
from hpa.core.vpa.capacity import (
    CapacityIndex,
    CapacityVerdict,
    PlacedPod,
    capacity_index,
    capacity_verdict,
    is_system_critical,
)
from hpa.core.vpa.capping import LimitRangeItem
from hpa.core.vpa.limitrange import merge_limit_range_items
from hpa.core.vpa.matching import (
    ControllerKey,
    UpdateMode,
    VpaTarget,
    get_update_mode,
    matching_vpa,
)
from hpa.core.vpa.modes import UpdatePlan, update_plan
from hpa.core.vpa.pod_plan import (
    PodPlan,
    annotation_removal_patches,
    plan_pod,
    resize_patches,
    restrict_recommendation,
)
from hpa.core.vpa.policy import (
    ContainerScalingMode,
    PodResourcePolicy,
    get_container_resource_policy,
)
from hpa.core.vpa.recommender import RecommendedContainerResources
from hpa.core.vpa.update import (
    ContainerRecommendation,
    EvictionRestriction,
    InPlaceDecision,
    UpdateConfig,
    admit_by_eviction_requirements,
    admit_for_update,
    eviction_restriction,
    get_update_priority,
    has_lower_resource_recommendation,
    quick_oom,
    sorted_for_update,
)
from hpa.kube.clock import Clock
from hpa.kube.targets import TargetError, TargetResolver
from hpa.kube.updater_records import UpdaterPodRecord
from hpa.kube.vpa_records import VpaRecord

__all__ = [
    "EVENT_DOES_NOT_FIT",
    "EVENT_EVICTED_BY_VPA",
    "EVENT_EVICTED_POD",
    "EVENT_IN_PLACE_RESIZED",
    "EVENT_IN_PLACE_SKIPPED",
    "IN_PLACE_UPDATED_ANNOTATION",
    "RateLimiter",
    "Updater",
    "UpdaterConfig",
]

log = structlog.get_logger("hpa.controllers.vertical.updater")

_IN_PLACE_MODES = frozenset({UpdateMode.IN_PLACE.value, UpdateMode.IN_PLACE_OR_RECREATE.value})

EVENT_EVICTED_BY_VPA = "EvictedByVPA"
EVENT_EVICTED_POD = "EvictedPod"
EVENT_IN_PLACE_RESIZED = "InPlaceResizedByVPA"
EVENT_IN_PLACE_SKIPPED = "InPlaceResizeSkipped"
EVENT_DOES_NOT_FIT = "UpdateDoesNotFit"
IN_PLACE_UPDATED_ANNOTATION = "vpaInPlaceUpdated"
"""``VpaInPlaceUpdatedLabel``: set to ``"true"`` on a pod after a resize was requested."""


class RateLimiter(Protocol):
    """``rate.Limiter.Wait`` (``hpa.kube.client.TokenBucket``; a rate of 0 or less: no limit)."""

    async def acquire(self) -> float: ...


@dataclass(frozen=True, kw_only=True)
class UpdaterConfig:
    """What the loop needs of the updater's flags."""

    min_replicas: int = 2
    """``--min-replicas``: fewer live pods in a group than this and none is updated."""
    eviction_tolerance: float = 0.5
    """``--eviction-tolerance``: the fraction of a group's replicas that may be down at once."""
    update: UpdateConfig = field(default_factory=UpdateConfig)
    """``--pod-update-threshold``, ``--in-recommendation-bounds-eviction-lifetime-threshold``,
    ``--evict-after-oom-threshold``."""
    use_admission_controller_status: bool = True
    """``--use-admission-controller-status``."""
    vpa_object_namespace: str = ""
    """``--vpa-object-namespace``: only VPAs of this namespace (empty: all)."""
    ignored_vpa_object_namespaces: frozenset[str] = frozenset()
    """``--ignored-vpa-object-namespaces``."""
    allow_evicting_system_critical: bool = False
    """``--allow-evicting-system-critical`` (ours)."""
    hpa_awareness: HpaAwareness = HpaAwareness.EXCLUDE
    """``--hpa-awareness`` (ours)."""
    in_place_skip_disruption_budget: bool = False
    """``--in-place-skip-disruption-budget``: for VPAs that resize in place, a resize that
    restarts no container does not wait for the group's budget, and a group below
    ``minReplicas`` is resized (never evicted)."""


@dataclass(slots=True)
class _Vpa:
    record: VpaRecord
    plan: UpdatePlan
    target: VpaTarget


@dataclass(slots=True)
class _Context:
    """One VPA's loop: its pods, budget, rules and the loop's capacity view."""

    vpa: _Vpa
    pods: list[UpdaterPodRecord]
    restriction: EvictionRestriction
    recommendation: tuple[RecommendedContainerResources, ...] | None
    policy: PodResourcePolicy | None
    container_limit_range: LimitRangeItem | None
    pod_limit_range: LimitRangeItem | None
    capacity: CapacityIndex
    now: datetime
    counts: LoopCounts
    plans: dict[str, PodPlan] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.pods)

    @property
    def log2(self) -> str:
        return str(vpa_size_log2(self.size))

    @property
    def mode(self) -> str:
        """How this loop applies the recommendation (the VPA's mode combined with its
        per-resource modes)."""
        return self.vpa.plan.mode or ""

    @property
    def mode_label(self) -> str:
        """The VPA's own mode, as upstream labels its metrics."""
        return get_update_mode(self.vpa.record.update_mode)

    @property
    def name(self) -> str:
        return self.vpa.record.name

    @property
    def namespace(self) -> str:
        return self.vpa.record.namespace


class Updater:
    """``updater``: ``run_once`` is ``RunOnce``. ``infeasible_attempts`` and
    ``last_in_place_attempt`` outlive a loop."""

    def __init__(
        self,
        *,
        view: ClusterView,
        resolver: TargetResolver,
        actions: PodActions,
        events: UpdaterEvents,
        status: AdmissionStatus,
        eviction_limiter: RateLimiter,
        in_place_limiter: RateLimiter,
        metrics: UpdaterMetrics,
        clock: Clock,
        config: UpdaterConfig,
    ) -> None:
        self._view = view
        self._resolver = resolver
        self._actions = actions
        self._events = events
        self._status = status
        self._eviction_limiter = eviction_limiter
        self._in_place_limiter = in_place_limiter
        self._metrics = metrics
        self._clock = clock
        self.config = config
        self.infeasible_attempts: dict[str, tuple[ContainerRecommendation, ...]] = {}
        self.last_in_place_attempt: dict[str, datetime] = {}

    # ------------------------------------------------------------------ the loop

    async def run_once(self) -> None:
        started = self._clock.monotonic()
        try:
            await self._run_once()
        finally:
            self._metrics.execution_latency.labels("total").observe(
                self._clock.monotonic() - started
            )

    async def _admission_alive(self) -> bool:
        if not self.config.use_admission_controller_status:
            return True
        try:
            valid = await self._status.is_valid()
        except PodActionError as error:
            log.error("admission_status_unreadable", error=str(error))
            self._metrics.admission_controller_status_invalid.labels("error").inc()
            return False
        if not valid:
            log.info("admission_status_invalid")
            self._metrics.admission_controller_status_invalid.labels("invalid").inc()
        return valid

    async def _vpas(self) -> list[_Vpa]:
        out = []
        for record in self._view.vpas():
            where = f"{record.namespace}/{record.name}"
            if self.config.vpa_object_namespace and (
                record.namespace != self.config.vpa_object_namespace
            ):
                continue
            if record.namespace in self.config.ignored_vpa_object_namespaces:
                continue
            if record.update_mode == UpdateMode.AUTO.value:
                log.info("vpa_update_mode_auto_deprecated", vpa=where)
            plan = update_plan(record.update_mode, record.annotations)
            if plan.error:
                log.warning("vpa_resource_update_modes_invalid", vpa=where, error=plan.error)
            if (plan.mode is None and not record.has_startup_boost) or record.target is None:
                continue
            try:
                selector: Selector | None = await self._resolver.selector(record.target)
            except TargetError as error:
                log.info("vpa_selector_unavailable", vpa=where, error=str(error))
                continue
            target = record.matching_target(record.target, selector)
            out.append(_Vpa(record, plan, target))
        return out

    async def _parent(
        self, pod: UpdaterPodRecord, parents: dict[tuple[str, str, str], ControllerKey | None]
    ) -> ControllerKey | None:
        """The pod's top-most controller, resolved once per owner in a loop."""
        owner = next((r for r in pod.owner_references if r.get("controller") is True), None)
        if owner is None:
            return None
        key = (pod.namespace, str(owner.get("kind", "")), str(owner.get("name", "")))
        if key not in parents:
            try:
                parents[key] = await self._resolver.parent_controller_for_pod(
                    pod.namespace, list(pod.owner_references)
                )
            except TargetError as error:
                log.info("pod_controller_unavailable", pod=f"{key[0]}/{pod.name}", error=str(error))
                parents[key] = None
        return parents[key]

    async def _run_once(self) -> None:
        if not await self._admission_alive():
            return
        vpas = await self._vpas()
        if not vpas:
            log.info("no_vpa_objects_to_process")
            return
        namespaces = {vpa.record.namespace for vpa in vpas}
        by_target: dict[tuple[str, str, str], list[VpaTarget]] = {}
        for vpa in vpas:
            by_target.setdefault(vpa.target.target.index_key(), []).append(vpa.target)
        pods = [p for p in self._view.pods() if not p.deleted]
        controlled: dict[tuple[str, str], list[UpdaterPodRecord]] = {}
        parents: dict[tuple[str, str, str], ControllerKey | None] = {}
        for pod in pods:
            if pod.namespace not in namespaces:
                continue
            parent = await self._parent(pod, parents)
            if parent is None:
                continue
            candidates = by_target.get(parent.index_key(), [])
            chosen = matching_vpa(pod.namespace, pod.labels, parent, candidates, skip_off=False)
            if chosen is not None:
                controlled.setdefault((chosen.namespace, chosen.name), []).append(pod)
        live_uids = {p.uid for p in pods}
        live_ids = {f"{p.namespace}/{p.name}" for p in pods}
        for uid in [u for u in self.infeasible_attempts if u not in live_uids]:
            del self.infeasible_attempts[uid]
        for pid in [p for p in self.last_in_place_attempt if p not in live_ids]:
            del self.last_in_place_attempt[pid]
        capacity = capacity_index(
            self._view.nodes(), (p.placed for p in pods if p.placed is not None)
        )
        now = self._clock.now()
        counts = LoopCounts()
        for vpa in sorted(vpas, key=lambda v: (v.record.namespace, v.record.name)):
            members = controlled.get((vpa.record.namespace, vpa.record.name))
            if not members:
                continue
            try:
                await self._update_vpa(vpa, members, capacity, now, counts)
            except Exception as error:  # noqa: BLE001 - one VPA's failure never stops the loop
                log.error(
                    "vpa_update_failed",
                    vpa=f"{vpa.record.namespace}/{vpa.record.name}",
                    error=repr(error),
                )
        self._metrics.observe(counts)

    # ------------------------------------------------------------------ one VPA

    def _allowed(
        self, vpa: _Vpa, conflicts: Sequence[HorizontalConflict]
    ) -> Callable[[str], frozenset[str]]:
        resources = vpa.plan.resources

        def allowed(container: str) -> frozenset[str]:
            return effective_controlled_resources(
                container, resources, conflicts, awareness=self.config.hpa_awareness
            )

        return allowed

    async def _update_vpa(
        self,
        vpa: _Vpa,
        members: list[UpdaterPodRecord],
        capacity: CapacityIndex,
        now: datetime,
        counts: LoopCounts,
    ) -> None:
        record = vpa.record
        groups = {p.pod.controller for p in members if p.pod.controller is not None}
        restriction = eviction_restriction(
            [p.pod for p in members],
            {g: self._view.replicas(g) for g in groups},
            min_replicas=record.min_replicas
            if record.min_replicas is not None
            else self.config.min_replicas,
            eviction_tolerance=self.config.eviction_tolerance,
            last_in_place_attempt=self.last_in_place_attempt,
            now=now,
            in_place_skip_disruption_budget=self.config.in_place_skip_disruption_budget
            and vpa.plan.mode in _IN_PLACE_MODES,
        )
        conflicts: tuple[HorizontalConflict, ...] = ()
        if self.config.hpa_awareness is not HpaAwareness.OFF and record.target is not None:
            ref = record.target
            conflicts = horizontal_conflicts(
                record.namespace,
                CrossVersionObjectReference(
                    kind=ref.kind, name=ref.name, api_version=ref.api_version
                ),
                self._view.hpas(record.namespace),
            )
        recommendation = (
            None
            if record.recommendation is None
            else restrict_recommendation(record.recommendation, self._allowed(vpa, conflicts))
        )
        entries = [
            e
            for r in sorted(self._view.limit_ranges(record.namespace), key=lambda r: r.name)
            for e in r.entries
        ]
        ctx = _Context(
            vpa=vpa,
            pods=members,
            restriction=restriction,
            recommendation=recommendation,
            policy=record.policy,
            container_limit_range=merge_limit_range_items(entries, "Container"),
            pod_limit_range=merge_limit_range_items(entries, "Pod"),
            capacity=capacity,
            now=now,
            counts=counts,
        )
        counts.controlled[(ctx.log2, ctx.mode_label)] += ctx.size
        self._metrics.init_counters(ctx.size, ctx.name, ctx.namespace, ctx.mode_label)
        available = members
        if record.has_startup_boost:
            boosted = [p for p in members if p.pod.cpu_boost_in_progress]
            available = [p for p in members if not p.pod.cpu_boost_in_progress]
            for pod in boosted:
                await self._unboost(ctx, pod)
        mode = vpa.plan.mode
        if mode is None:
            return
        for_eviction: list[UpdaterPodRecord] = []
        in_place_updated = False
        if mode in (UpdateMode.IN_PLACE_OR_RECREATE.value, UpdateMode.IN_PLACE.value):
            for_in_place = self._ordered(ctx, [p for p in available if self._in_place_ok(ctx, p)])
            counts.in_place_updatable[ctx.log2] += len(for_in_place)
            if for_in_place:
                counts.vpas_with_in_place_updatable[ctx.log2] += 1
            for pod in for_in_place:
                outcome = await self._in_place(ctx, pod, mode)
                if outcome == "evict":
                    for_eviction.append(pod)
                in_place_updated = in_place_updated or outcome == "resized"
        else:
            evictable = [
                p for p in available if restriction.can_evict(p.pod) and not self._critical(ctx, p)
            ]
            for_eviction = self._ordered(ctx, evictable)
            counts.evictable[(ctx.log2, ctx.mode_label)] += len(for_eviction)
            if for_eviction:
                counts.vpas_with_evictable[(ctx.log2, ctx.mode_label)] += 1
        evicted = False
        for pod in for_eviction:
            evicted = await self._evict(ctx, pod) or evicted
        if in_place_updated:
            counts.vpas_with_in_place_updated[ctx.log2] += 1
        if evicted:
            counts.vpas_with_evicted[(ctx.log2, ctx.mode_label)] += 1

    # ------------------------------------------------------------------ ranking

    def _plan(self, ctx: _Context, pod: UpdaterPodRecord) -> PodPlan:
        key = f"{pod.namespace}/{pod.name}"
        plan = ctx.plans.get(key)
        if plan is None:
            plan = ctx.plans[key] = plan_pod(
                pod.containers,
                recommendation=ctx.recommendation or (),
                policy=ctx.policy,
                container_limit_range=ctx.container_limit_range,
                pod_limit_range=ctx.pod_limit_range,
            )
        return plan

    def _ordered(self, ctx: _Context, pods: Sequence[UpdaterPodRecord]) -> list[UpdaterPodRecord]:
        """``getPodsUpdateOrder``: the pods that join the update queue, in update order."""
        if ctx.recommendation is None:
            return []
        config = self.config.update
        threshold = config.evict_after_oom_threshold
        if ctx.vpa.record.evict_after_oom_seconds is not None:  # getEvictOOMThreshold
            threshold = timedelta(seconds=ctx.vpa.record.evict_after_oom_seconds)
        queued = []
        by_key = {}
        for pod in pods:
            plan = self._plan(ctx, pod)
            if ctx.mode == UpdateMode.IN_PLACE.value:
                last = self.infeasible_attempts.get(pod.uid)
                if last is not None and not has_lower_resource_recommendation(last, plan.ranked):
                    continue
            priority = get_update_priority(pod.pod, plan.ranked)
            off = frozenset(
                c.name
                for c in pod.containers
                if (policy := get_container_resource_policy(c.name, ctx.policy)) is not None
                and policy.mode is ContainerScalingMode.OFF
            )
            oomed = quick_oom(pod.pod, now=ctx.now, threshold=threshold, off_containers=off)
            if admit_for_update(pod.pod, priority, now=ctx.now, config=config, quick_oomed=oomed):
                queued.append((pod.pod, priority))
                by_key[(pod.namespace, pod.name)] = pod
        ordered = []
        for queued_pod in sorted_for_update(queued):
            record = by_key[(queued_pod.namespace, queued_pod.name)]
            if admit_by_eviction_requirements(
                queued_pod, self._plan(ctx, record).ranked, ctx.vpa.record.eviction_requirements
            ):
                ordered.append(record)
            else:
                log.debug(
                    "pod_removed_by_eviction_requirements",
                    pod=record.name,
                    namespace=record.namespace,
                    vpa=ctx.name,
                )
        return ordered

    # ------------------------------------------------------------------ in place

    def _decision(self, ctx: _Context, pod: UpdaterPodRecord) -> InPlaceDecision:
        plan = self._plan(ctx, pod) if ctx.recommendation is not None else None
        return ctx.restriction.can_in_place_update(
            pod.pod,
            update_mode=ctx.mode,
            recommendation=None if plan is None else plan.ranked,
            infeasible_attempt=self.infeasible_attempts.get(pod.uid),
        )

    def _in_place_ok(self, ctx: _Context, pod: UpdaterPodRecord) -> bool:
        """``filterNonInPlaceUpdatablePods``."""
        decision = self._decision(ctx, pod)
        in_place_only = ctx.mode == UpdateMode.IN_PLACE.value
        if decision is InPlaceDecision.APPROVED:
            return True
        if decision in (InPlaceDecision.INFEASIBLE, InPlaceDecision.DEFERRED):
            return in_place_only
        if decision is InPlaceDecision.EVICT:
            return not in_place_only
        if decision is InPlaceDecision.INFEASIBLE_CACHED:
            self._events.pod_event(
                pod,
                EVENT_IN_PLACE_SKIPPED,
                "Previously recorded in-place update was infeasible, current recommendation is "
                "not lower than previous, skipping resize",
            )
            self._metrics.in_place_infeasible_skip_pods.labels(
                ctx.log2, ctx.name, ctx.namespace
            ).inc()
        return False

    async def _in_place(self, ctx: _Context, pod: UpdaterPodRecord, mode: str) -> str:
        """One pod of the in-place list: "resized", "evict" (fall back), or "" (left)."""
        where = f"{pod.namespace}/{pod.name}"
        decision = self._decision(ctx, pod)
        in_place_only = mode == UpdateMode.IN_PLACE.value
        plan = self._plan(ctx, pod)
        if decision is InPlaceDecision.DEFERRED:
            log.info("in_place_update_deferred", pod=where)
            return ""
        if decision is InPlaceDecision.EVICT:
            return "evict"
        if decision is InPlaceDecision.INFEASIBLE_CACHED:
            return ""
        if decision is InPlaceDecision.INFEASIBLE:
            log.info("in_place_update_infeasible_retrying", pod=where)
            self.infeasible_attempts[pod.uid] = plan.ranked
        if not self._fits(ctx, pod, plan, in_place=True):
            return ""
        await self._in_place_limiter.acquire()
        try:
            await self._resize(ctx, pod, plan, expired=())
        except PodActionError as error:
            reason = "InPlaceUpdateError"
            if in_place_only:
                if error.infeasible:
                    reason = "InPlaceUpdateInfeasible"
                    self.infeasible_attempts[pod.uid] = plan.ranked
                log.info("in_place_resize_failed", pod=where, error=str(error), reason=reason)
                self._failed_in_place(ctx, reason)
                return ""
            log.info("in_place_resize_failed_falling_back", pod=where, error=str(error))
            self._failed_in_place(ctx, reason)
            return "evict"
        ctx.restriction.record_in_place_update(pod.pod)
        self._metrics.in_place_updated_pods.labels(ctx.log2, ctx.name, ctx.namespace).inc()
        return "resized"

    def _failed_in_place(self, ctx: _Context, reason: str) -> None:
        self._metrics.failed_in_place_update_attempts.labels(
            ctx.log2, reason, ctx.name, ctx.namespace
        ).inc()

    async def _resize(
        self, ctx: _Context, pod: UpdaterPodRecord, plan: PodPlan, *, expired: Sequence[str]
    ) -> None:
        """``InPlaceUpdate``: the resize, then the annotations (a failure there is only
        logged), then the event."""
        try:
            patches = resize_patches(
                pod.containers, plan.resources, annotations=pod.annotations, expired=expired
            )
        except ValueError as error:
            raise PodActionError(0, f"cannot compute the resize: {error}") from None
        if not patches:
            raise PodActionError(0, "no resource patches were calculated to apply")
        await self._actions.resize(pod.namespace, pod.name, patches)
        annotation_patches: list[PatchOperation] = []
        if not pod.annotations:
            annotation_patches.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        annotation_patches.append(
            {
                "op": "add",
                "path": f"/metadata/annotations/{escape_json_pointer(IN_PLACE_UPDATED_ANNOTATION)}",
                "value": "true",
            }
        )
        annotation_patches.extend(annotation_removal_patches(expired))
        try:
            await self._actions.patch(pod.namespace, pod.name, annotation_patches)
        except PodActionError as error:
            log.info(
                "pod_annotations_patch_failed", pod=f"{pod.namespace}/{pod.name}", error=str(error)
            )
        self._events.pod_event(
            pod, EVENT_IN_PLACE_RESIZED, "Pod was resized in place by VPA Updater."
        )

    async def _unboost(self, ctx: _Context, pod: UpdaterPodRecord) -> None:
        """``processNextBoostItem``: resize a pod whose boost expired back, then drop the
        annotation."""
        record = ctx.vpa.record
        expired = expired_boost_annotations(
            pod.annotations,
            ready_since=pod.ready_since,
            now=ctx.now,
            durations=record.startup_boost,
        )
        if not expired or pod.pod.phase == "Pending":
            return
        controller = pod.pod.controller
        stats = ctx.restriction.groups.get(controller) if controller is not None else None
        if stats is None or not stats.is_pod_disruptable():
            return
        if any(c.status == "True" for c in pod.pod.conditions):
            return
        plan = (
            self._plan(ctx, pod)
            if ctx.vpa.plan.mode is not None
            else PodPlan((), tuple(ContainerResources() for _ in pod.containers), {})
        )
        await self._in_place_limiter.acquire()
        try:
            await self._resize(ctx, pod, plan, expired=expired)
        except PodActionError as error:
            log.info("unboost_failed", pod=f"{pod.namespace}/{pod.name}", error=str(error))
            self._failed_in_place(ctx, "UnboostError")
            return
        ctx.restriction.record_in_place_update(pod.pod)
        self._metrics.in_place_updated_pods.labels(ctx.log2, ctx.name, ctx.namespace).inc()

    # ------------------------------------------------------------------ eviction

    def _critical(self, ctx: _Context, pod: UpdaterPodRecord) -> bool:
        """A system-critical pod that may not be evicted (logged and counted)."""
        if self.config.allow_evicting_system_critical or not is_system_critical(
            pod.priority_class_name
        ):
            return False
        log.info(
            "system_critical_pod_not_evicted",
            pod=f"{pod.namespace}/{pod.name}",
            priority_class=pod.priority_class_name,
        )
        self._metrics.system_critical_skipped.labels(ctx.name, ctx.namespace).inc()
        return True

    async def _evict(self, ctx: _Context, pod: UpdaterPodRecord) -> bool:
        where = f"{pod.namespace}/{pod.name}"
        if not ctx.restriction.can_evict(pod.pod):
            return False
        if self._critical(ctx, pod):
            return False
        if not self._fits(ctx, pod, self._plan(ctx, pod), in_place=False):
            return False
        await self._eviction_limiter.acquire()
        try:
            await self._actions.evict(pod.namespace, pod.name)
        except PodActionError as error:
            if error.code == 429:
                log.info("eviction_blocked_by_disruption_budget", pod=where, error=str(error))
            else:
                log.warning("eviction_failed", pod=where, error=str(error))
            self._metrics.failed_eviction_attempts.labels(
                ctx.log2, ctx.mode_label, "EvictionError", ctx.name, ctx.namespace
            ).inc()
            return False
        ctx.restriction.record_eviction(pod.pod)
        log.info("pod_evicted", pod=where, vpa=f"{ctx.namespace}/{ctx.name}")
        self._events.pod_event(
            pod,
            EVENT_EVICTED_BY_VPA,
            "Pod was evicted by VPA Updater to apply resource recommendation.",
        )
        self._events.vpa_event(
            ctx.vpa.record,
            EVENT_EVICTED_POD,
            f"VPA Updater evicted Pod {pod.name} to apply resource recommendation.",
        )
        self._metrics.evicted_pods.labels(ctx.log2, ctx.mode_label, ctx.name, ctx.namespace).inc()
        return True

    # ------------------------------------------------------------------ capacity

    def _fits(self, ctx: _Context, pod: UpdaterPodRecord, plan: PodPlan, *, in_place: bool) -> bool:
        """The capacity rule, only when some request grows."""
        current = pod.requests_milli
        if not any(amount > current.get(r, 0) for r, amount in plan.new_requests_milli.items()):
            return True
        me = pod.placed or PlacedPod(
            pod.namespace, pod.name, pod.node_name, current, pod.pod.priority
        )
        verdict = capacity_verdict(
            me,
            plan.new_requests_milli,
            index=ctx.capacity,
            can_preempt=not in_place and pod.preemption_policy != "Never",
            in_place=in_place,
        )
        if verdict is not CapacityVerdict.FITS_NOWHERE:
            return True
        action = "resize" if in_place else "evict"
        wanted = ", ".join(
            f"{r}={_amount(r, a)}" for r, a in sorted(plan.new_requests_milli.items())
        )
        if in_place:
            message = (
                f"Not resized: the new requests ({wanted}) do not fit on node {pod.node_name}."
            )
        else:
            message = f"Not evicted: the new requests ({wanted}) fit on no schedulable node."
        log.info("update_does_not_fit", pod=f"{pod.namespace}/{pod.name}", action=action)
        self._events.pod_event(pod, EVENT_DOES_NOT_FIT, message)
        self._events.vpa_event(
            ctx.vpa.record, EVENT_DOES_NOT_FIT, f"Pod {pod.name}: {message}", warning=True
        )
        self._metrics.pods_not_fitting.labels(action, ctx.name, ctx.namespace).inc()
        return False


def _amount(resource: str, milli: int) -> str:
    if resource == "cpu":
        return f"{milli}m"
    return f"{milli // 1000}"
