"""The vertical autoscaler in the simulator: per-pod memory and cpu, the VPA recommender, updater
and admission over a simulated Deployment, in virtual time, with the HPA scaling it.

Upstream counterpart: the VPA's three components (kubernetes/autoscaler v1.8.x) run against the
simulated pods with the project's code: the recommender's cluster model
(:class:`hpa.core.vpa.cluster.ClusterState`, fed one usage sample per Ready pod and interval, and
the OOM kills) and pass (:func:`hpa.core.vpa.routines.process_vpa_update`), the ``group-aware``
model through the recommender's own :class:`~hpa.controllers.vertical.group_aware.GroupSizeHistory`
(each sample's per-pod load is the per-pod value of the HPA's metric in the status the simulated
controller last wrote, its target load the metric's target, as in the recommender),
the updater's rules (:mod:`hpa.core.vpa.update`: ``GetUpdatePriority``, the update queue's
admission and the VPA's ``evictionRequirements``, the eviction restriction) and the admission
controller's requests and proportional limits
(:func:`hpa.core.vpa.admission.containers_resources_for_pod`).

The resource model (:class:`ResourceModel`, every parameter printed with the run): a Ready pod
serving per-pod load ``l`` (requests per second) uses

    cpu    = idle_cpu_milli + cpu_per_request_milli * l      (the workload model's cpu)
    memory = memory_base_bytes + memory_per_request_bytes * l

A pod starts with the template's requests (``memory_request_bytes``, ``memory_limit_bytes``), or
the VPA's recommendation once it has one (admission). Every ``interval_seconds`` the vertical
step, in order: kills every Ready pod whose memory use exceeds its memory limit (OOM: the
container restarts in place, Running after ``oom_restart_seconds`` and Ready a readiness delay
later; the recommender records the OOM as upstream does, bumping memory), feeds the samples, runs
the recommender, and runs the updater: with ``updateMode`` ``Recreate`` or ``Auto`` an admitted
pod is evicted (a new pod with the new requests replaces it, starting from Pending); with
``InPlaceOrRecreate`` its requests change in place (no restart, the resize always fits); with
``Initial`` or ``Off`` running pods are left alone.

Deliberate deviations: OOM kills are checked at the step's times only (memory use is piecewise
constant between trace points); one container per pod; no checkpoints (the history starts at
``t = 0``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from hpa.controllers.ports import HorizontalPodAutoscalerObject
from hpa.controllers.vertical.group_aware import GroupSizeHistory
from hpa.core.explain import TraceEntry
from hpa.core.selector import parse_selector
from hpa.core.vpa.admission import AdmissionContainer, containers_resources_for_pod
from hpa.core.vpa.aggregation import OomSampleDiscardedError
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.awareness import HorizontalScaler
from hpa.core.vpa.cluster import ClusterState, ContainerId, PodId, VpaId
from hpa.core.vpa.crane import CRANE_RECOMMENDER_NAME, CraneConfig, CraneContainerState
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.group_aware import GROUP_AWARE_RECOMMENDER_NAME
from hpa.core.vpa.matching import ControllerKey
from hpa.core.vpa.pod_plan import milli_units
from hpa.core.vpa.recommender import create_pod_resource_recommender
from hpa.core.vpa.routines import process_crane_vpa_update, process_vpa_update
from hpa.core.vpa.update import (
    ContainerRecommendation,
    ContainerStatus,
    ReplicaGroup,
    UpdateConfig,
    UpdatePod,
    admit_by_eviction_requirements,
    admit_for_update,
    eviction_restriction,
    get_update_priority,
    quick_oom,
    sorted_for_update,
)
from hpa.kube.targets import ControllerRecord
from hpa.sim.summary import Summary
from hpa.sim.vpa_manifest import VPA
from hpa.sim.workload import Deployment, SimPod, moment

__all__ = [
    "RECOMMENDERS",
    "ResourceModel",
    "VerticalRun",
    "VerticalSummary",
    "comparison_lines",
    "summary_lines",
]

MI = 2**20
RECOMMENDERS = ("default", CRANE_RECOMMENDER_NAME, GROUP_AWARE_RECOMMENDER_NAME)
"""The recommender models a simulated VPA can use (``spec.recommenders[].name``)."""
_EVICTION_TOLERANCE = 0.5  # the updater's --eviction-tolerance default
_MIN_REPLICAS = 2  # the updater's --min-replicas default
_CRANE = CraneConfig()
_POD_MINIMUM = Resources(cpu=25, memory=250 * MI)  # the recommender's pod minimum


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceModel:
    """Per-pod memory as a function of per-pod load, the template's memory request and limit."""

    memory_base_bytes: int = 200 * MI
    memory_per_request_bytes: float = 4 * MI
    """Memory per request per second served by the pod (e.g. per-connection buffers)."""
    memory_request_bytes: int = 512 * MI
    memory_limit_bytes: int | None = 512 * MI
    """``None``: no memory limit (no OOM kills)."""
    oom_restart_seconds: float = 10.0
    interval_seconds: float = 60.0
    """The recommender's and the updater's loop (upstream: one minute each)."""

    def __post_init__(self) -> None:
        if self.memory_request_bytes <= 0 or self.memory_base_bytes < 0:
            raise ValueError("memory request must be positive and base memory not negative")
        if not math.isfinite(self.memory_per_request_bytes) or self.memory_per_request_bytes < 0:
            raise ValueError("memory per request must be a finite number >= 0")
        limit = self.memory_limit_bytes
        if limit is not None and limit < self.memory_request_bytes:
            raise ValueError("memory limit must be at least the memory request")
        if not self.interval_seconds > 0 or self.oom_restart_seconds < 0:
            raise ValueError("interval must be positive and OOM restart time not negative")

    def memory_bytes(self, per_pod_load: float) -> float:
        return self.memory_base_bytes + self.memory_per_request_bytes * per_pod_load

    def describe(self) -> list[tuple[str, str]]:
        limit = self.memory_limit_bytes
        return [
            ("memory per pod", f"{self.memory_base_bytes / MI:g}Mi"),
            ("memory per request/s", f"{self.memory_per_request_bytes / MI:g}Mi"),
            ("memory request (template)", f"{self.memory_request_bytes / MI:g}Mi"),
            ("memory limit (template)", "none" if limit is None else f"{limit / MI:g}Mi"),
            ("vpa loop interval", f"{self.interval_seconds:g}s"),
        ]


@dataclass(frozen=True, slots=True)
class VerticalSummary:
    """What the vertical autoscaler did and what it cost, over the run."""

    recommender: str
    oom_kills: int
    evictions: int
    in_place_resizes: int
    cpu_waste_milli: float
    """Requested minus used cpu of the Ready pods, summed over pods, averaged over time."""
    memory_waste_bytes: float
    cpu_under_seconds: float
    """Time with some Ready pod using more cpu than it requests."""
    memory_under_seconds: float


@dataclass(slots=True)
class VerticalRow:
    """The vertical state at one step (for plots): per-pod averages over the Ready pods."""

    t_seconds: float
    memory_request_bytes: float
    memory_used_bytes: float
    oom_kills: int


class _Replicas:
    """``ControllerLookup`` over the simulated Deployment (its ``spec.replicas``)."""

    def __init__(self, deployment: Deployment, namespace: str) -> None:
        self._deployment = deployment
        self._namespace = namespace

    def get(self, kind: str, namespace: str, name: str) -> ControllerRecord | None:
        deployment = self._deployment
        return ControllerRecord(
            kind=kind,
            namespace=namespace,
            name=name,
            resource_version=str(deployment.version),
            labels=deployment.labels,
            owner=None,
            selector=parse_selector(deployment.selector),
            replicas=deployment.spec_replicas,
        )


@dataclass
class VerticalRun:
    """One VPA over one simulated Deployment."""

    vpa: VPA
    deployment: Deployment
    model: ResourceModel
    recommender: str = "default"
    hpa: Callable[[], HorizontalPodAutoscalerObject | None] | None = None
    """The HPA scaling the Deployment as the controller last wrote it (spec and status)."""
    cluster: ClusterState = field(init=False)
    oom_kills: int = 0
    evictions: int = 0
    in_place_resizes: int = 0
    rows: list[VerticalRow] = field(default_factory=list)
    group_model: tuple[TraceEntry, ...] = ()
    """The ``group-aware`` model's verdicts at the last step (which model answered, the fit)."""
    _cpu_waste: float = 0.0
    _memory_waste: float = 0.0
    _cpu_under: float = 0.0
    _memory_under: float = 0.0
    _span: float = 0.0
    _last_t: float | None = None
    _pending: tuple[float, float, list[tuple[int, int]]] = (0.0, 0.0, [])
    _known: set[str] = field(default_factory=set)
    _crane: dict[str, CraneContainerState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.recommender not in RECOMMENDERS:
            raise ValueError(
                f"recommender {self.recommender!r}: expected one of {', '.join(RECOMMENDERS)}"
            )
        self.cluster = ClusterState(gc_interval_ns=3600 * NANOSECONDS_PER_SECOND)
        deployment = self.deployment
        self._vpa_id = VpaId(self.vpa.namespace, self.vpa.name)
        self._state = self.cluster.add_or_update_vpa(
            self._vpa_id,
            selector=parse_selector(deployment.selector),
            created_ns=0,
            annotations=self.vpa.annotations,
            target_ref=(self.vpa.target_kind, self.vpa.target_name, ""),
            update_mode=self.vpa.update_mode,
            resource_policy=self.vpa.resource_policy,
        )
        self._history = GroupSizeHistory(
            _Replicas(deployment, self.vpa.namespace), hpas=self._scalers
        )
        self._group_targets = (
            {self._vpa_id: ControllerKey(self.vpa.namespace, "Deployment", self.vpa.target_name)}
            if self.recommender == GROUP_AWARE_RECOMMENDER_NAME
            else {}
        )
        for pod in deployment.pods:
            pod.memory_request_bytes = self.model.memory_request_bytes
            pod.memory_limit_bytes = self.model.memory_limit_bytes
        deployment.admit = self._admit

    def _scalers(self, namespace: str) -> Sequence[HorizontalScaler]:
        hpa = None if self.hpa is None else self.hpa()
        if hpa is None or hpa.namespace != namespace:
            return ()
        # the simulated Deployment is the HPA's target whatever its name in the manifest
        target = replace(hpa.spec.scale_target_ref, kind="Deployment", name=self.vpa.target_name)
        return (
            HorizontalScaler(
                namespace, hpa.name, replace(hpa.spec, scale_target_ref=target), hpa.status
            ),
        )

    # ------------------------------------------------------------------ admission

    def _resources(self, pod: SimPod) -> tuple[Resources, Resources]:
        """The pod's requests and limits as the admission controller would set them now."""
        deployment = self.deployment
        requests = Resources(
            cpu=deployment.cpu_request_of(pod)
            if pod.name in deployment.pod_containers
            else deployment.model.cpu_request_milli,
            memory=pod.memory_request_bytes or self.model.memory_request_bytes,
        )
        limit_memory = pod.memory_limit_bytes
        limits = Resources(cpu=None, memory=limit_memory)
        recommendation = self._state.recommendation
        if not recommendation:
            return requests, limits
        container = AdmissionContainer(
            deployment.container,
            requests=requests,
            limits=limits,
            has_requests=True,
            has_limits=limit_memory is not None,
        )
        resources, _ = containers_resources_for_pod(
            [container],
            update_mode_off=False,
            recommendation=recommendation,
            policy=self.vpa.resource_policy,
        )
        new = resources[0]
        return (
            Resources(
                cpu=(new.requests.cpu if new.requests and new.requests.cpu else requests.cpu),
                memory=(
                    new.requests.memory if new.requests and new.requests.memory else requests.memory
                ),
            ),
            Resources(
                cpu=None,
                memory=new.limits.memory if new.limits and new.limits.memory else limit_memory,
            ),
        )

    def _apply(self, pod: SimPod, requests: Resources, limits: Resources) -> None:
        pod.memory_request_bytes = requests.memory
        pod.memory_limit_bytes = limits.memory
        self.deployment.set_requests(pod, cpu_milli=requests.cpu)

    def _admit(self, pod: SimPod) -> None:
        pod.memory_request_bytes = self.model.memory_request_bytes
        pod.memory_limit_bytes = self.model.memory_limit_bytes
        if self._state.recommendation and self.vpa.update_mode != "Off":
            self._apply(pod, *self._resources(pod))

    # ------------------------------------------------------------------ the loop

    def step(self, t_seconds: float) -> None:
        """One recommender and updater pass at ``t_seconds`` (the Deployment is advanced)."""
        deployment = self.deployment
        deployment.advance_to(t_seconds)
        now_ns = round(t_seconds * NANOSECONDS_PER_SECOND) + 3600 * NANOSECONDS_PER_SECOND
        cluster = self.cluster
        self._history.sync(self._group_targets)
        model = self.model
        memory = model.memory_bytes(deployment.per_pod_load())
        cpu = deployment.per_pod_cpu_milli()
        self._account(t_seconds, memory=memory, cpu=cpu)
        self._sync_pods(now_ns)
        ooms = 0
        serving = deployment.ready_pods > 0
        crane = self._crane.setdefault(deployment.container, CraneContainerState(_CRANE))
        for pod in list(deployment.pods):
            if pod.state(t_seconds) != 2:
                continue
            container = ContainerId(PodId(self.vpa.namespace, pod.name), deployment.container)
            limit = pod.memory_limit_bytes
            if limit is not None and memory > limit:
                ooms += 1
                with contextlib.suppress(OomSampleDiscardedError):
                    cluster.record_oom(
                        container, now_ns, pod.memory_request_bytes or 0, now_ns=now_ns
                    )
                crane.record_oom(now_ns, pod.memory_request_bytes or 0)
                deployment.restart(pod, t_seconds, restart_seconds=model.oom_restart_seconds)
                continue
            cluster.add_cpu_sample(container, now_ns, math.ceil(cpu), now_ns=now_ns)
            cluster.add_memory_sample(container, now_ns, math.ceil(memory), now_ns=now_ns)
            crane.add_cpu_sample(now_ns, math.ceil(cpu))
            crane.add_memory_sample(now_ns, math.ceil(memory))
            pod_state = cluster.pods.get(container.pod_id)
            if pod_state is not None:
                # cpu and memory of the same sample, as metrics.k8s.io serves them together
                usage = {deployment.container: {"cpu": math.ceil(cpu), "memory": math.ceil(memory)}}
                for resource, amount in usage[deployment.container].items():
                    self._history.record(
                        cluster, pod_state, deployment.container, resource, amount, usage=usage
                    )
        self.oom_kills += ooms
        if self.recommender == CRANE_RECOMMENDER_NAME:
            process_crane_vpa_update(
                cluster, self._state, self._crane, config=_CRANE, now_ns=now_ns
            )
        else:
            process_vpa_update(
                cluster,
                self._state,
                recommender=create_pod_resource_recommender(),
                now_ns=now_ns,
                explain=False,
            )
        if self.recommender == GROUP_AWARE_RECOMMENDER_NAME:
            self.group_model = self._history.apply(
                self._state,
                (),
                safety_margin_fraction=0.15,
                pod_minimum=_POD_MINIMUM,
                policy=self.vpa.resource_policy,
            )
        self._update(t_seconds)
        self.rows.append(self._row(t_seconds, memory=memory if serving else 0.0, ooms=ooms))

    def _sync_pods(self, now_ns: int) -> None:
        deployment = self.deployment
        cluster = self.cluster
        names = {pod.name for pod in deployment.pods}
        for name in self._known - names:
            cluster.delete_pod(PodId(self.vpa.namespace, name))
        for pod in deployment.pods:
            pod_id = PodId(self.vpa.namespace, pod.name)
            if pod.name not in self._known:
                cluster.add_or_update_pod(pod_id, deployment.labels, "Running", now_ns=now_ns)
            cluster.add_or_update_container(
                ContainerId(pod_id, deployment.container),
                Resources(cpu=deployment.cpu_request_of(pod), memory=pod.memory_request_bytes),
                now_ns=now_ns,
            )
        self._known = names

    def _recommendation(self) -> list[ContainerRecommendation]:
        out = []
        for r in self._state.recommendation or ():
            out.append(
                ContainerRecommendation(
                    r.container_name,
                    target=milli_units(r.target),
                    lower_bound=milli_units(r.lower_bound),
                    upper_bound=milli_units(r.upper_bound),
                )
            )
        return out

    def _update_pod(self, pod: SimPod, t_seconds: float) -> UpdatePod:
        deployment = self.deployment
        oom = pod.last_oom_at
        requests = {"cpu": deployment.cpu_request_of(pod)}
        if pod.memory_request_bytes is not None:
            requests["memory"] = pod.memory_request_bytes * 1000
        return UpdatePod(
            namespace=self.vpa.namespace,
            name=pod.name,
            containers=((deployment.container, requests),),
            statuses=(
                ContainerStatus(
                    deployment.container,
                    last_termination_reason="OOMKilled" if oom else "",
                    last_termination_started=moment(oom[0]) if oom else None,
                    last_termination_finished=moment(oom[1]) if oom else None,
                ),
            ),
            start_time=moment(pod.created_at),
            phase="Pending" if pod.state(t_seconds) == 0 else "Running",
            controller=ReplicaGroup(self.vpa.namespace, "ReplicaSet", deployment.name),
        )

    def _update(self, t_seconds: float) -> None:
        mode = self.vpa.update_mode or "Recreate"
        if mode in ("Off", "Initial") or not self._state.recommendation:
            return
        deployment = self.deployment
        now = moment(t_seconds)
        config = UpdateConfig()
        recommendation = self._recommendation()
        by_name = {pod.name: pod for pod in deployment.pods}
        update_pods = [self._update_pod(pod, t_seconds) for pod in deployment.pods]
        queued = []
        for update_pod in update_pods:
            priority = get_update_priority(update_pod, recommendation)
            oomed = quick_oom(update_pod, now=now, threshold=config.evict_after_oom_threshold)
            if admit_for_update(update_pod, priority, now=now, config=config, quick_oomed=oomed):
                queued.append((update_pod, priority))
        if not queued:
            return
        restriction = eviction_restriction(
            update_pods,
            {ReplicaGroup(self.vpa.namespace, "ReplicaSet", deployment.name): len(update_pods)},
            min_replicas=_MIN_REPLICAS,
            eviction_tolerance=_EVICTION_TOLERANCE,
            now=now,
        )
        for update_pod in sorted_for_update(queued):
            if not admit_by_eviction_requirements(
                update_pod, recommendation, self.vpa.eviction_requirements
            ):
                continue
            pod = by_name[update_pod.name]
            if mode == "InPlaceOrRecreate":
                self._apply(pod, *self._resources(pod))
                self.in_place_resizes += 1
                continue
            if not restriction.can_evict(update_pod):
                continue
            restriction.record_eviction(update_pod)
            deployment.evict(pod, t_seconds)
            self.evictions += 1

    # ------------------------------------------------------------------ accounting

    def _account(self, t_seconds: float, *, memory: float, cpu: float) -> None:
        """Close the interval since the last step with the state taken then, and take the
        state now (the Ready pods' requests before any OOM kill at ``t_seconds``), which holds
        until the next step."""
        if self._last_t is not None:
            self._add(t_seconds - self._last_t)
        self._last_t = t_seconds
        deployment = self.deployment
        self._pending = (
            memory,
            cpu,
            [
                (deployment.cpu_request_of(pod), pod.memory_request_bytes or 0)
                for pod in deployment.pods
                if pod.state(t_seconds) == 2
            ],
        )

    def _add(self, dt: float) -> None:
        memory, cpu, requests = self._pending
        cpu_under = memory_under = False
        for cpu_request, memory_request in requests:
            self._cpu_waste += (cpu_request - cpu) * dt
            self._memory_waste += (memory_request - memory) * dt
            cpu_under |= cpu > cpu_request
            memory_under |= memory > memory_request
        self._cpu_under += dt if cpu_under else 0.0
        self._memory_under += dt if memory_under else 0.0
        self._span += dt

    def _row(self, t_seconds: float, *, memory: float, ooms: int) -> VerticalRow:
        pods = [pod for pod in self.deployment.pods if pod.state(t_seconds) == 2]
        pods = pods or self.deployment.pods
        requested = sum(pod.memory_request_bytes or 0 for pod in pods) / len(pods) if pods else 0.0
        return VerticalRow(t_seconds, requested, memory, ooms)

    def summary(self, end_seconds: float) -> VerticalSummary:
        """The run's vertical statistics up to ``end_seconds``."""
        if self._last_t is not None and end_seconds > self._last_t:
            self._add(end_seconds - self._last_t)
            self._last_t = end_seconds
        span = self._span or 1.0
        return VerticalSummary(
            recommender=self.recommender,
            oom_kills=self.oom_kills,
            evictions=self.evictions,
            in_place_resizes=self.in_place_resizes,
            cpu_waste_milli=self._cpu_waste / span,
            memory_waste_bytes=self._memory_waste / span,
            cpu_under_seconds=self._cpu_under,
            memory_under_seconds=self._memory_under,
        )


def summary_lines(summaries: Sequence[tuple[str, VerticalSummary]]) -> list[str]:
    """A Markdown table of the vertical statistics, one row per run."""
    lines = [
        "| run | recommender | OOM kills | evictions | in-place resizes | cpu waste | "
        "memory waste | cpu under-provisioned | memory under-provisioned |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in summaries:
        lines.append(
            f"| {name} | {s.recommender} | {s.oom_kills} | {s.evictions} | {s.in_place_resizes} | "
            f"{s.cpu_waste_milli:.0f}m | {s.memory_waste_bytes / MI:.0f}Mi | "
            f"{s.cpu_under_seconds / 60:.0f} min | {s.memory_under_seconds / 60:.0f} min |"
        )
    return lines


def comparison_lines(rows: Sequence[tuple[str, Summary, VerticalSummary]]) -> list[str]:
    """A Markdown table of runs of the same scenario with different recommenders: the HPA's
    cost next to the vertical statistics."""
    lines = [
        "| run | recommender | pod-hours | mean replicas | OOM kills | evictions | "
        "in-place resizes | cpu waste | memory waste | memory under-provisioned |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, h, v in rows:
        lines.append(
            f"| {name} | {v.recommender} | {h.pod_hours:.1f} | {h.mean_replicas:.1f} | "
            f"{v.oom_kills} | {v.evictions} | {v.in_place_resizes} | {v.cpu_waste_milli:.0f}m | "
            f"{v.memory_waste_bytes / MI:.0f}Mi | {v.memory_under_seconds / 60:.0f} min |"
        )
    return lines
