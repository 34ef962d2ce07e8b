"""The virtual-time engine: the real horizontal controller, reconciling simulated workloads.

Upstream counterpart: the controller's resync loop (``pkg/controller/podautoscaler``: every HPA is
reconciled once per ``--horizontal-pod-autoscaler-sync-period``), with time taken from a
:class:`~hpa.sim.ports.VirtualClock` instead of the machine.

Each HPA gets its own :class:`~hpa.sim.workload.Deployment` (same trace, same workload model, so
HPAs compare side by side) and its own :class:`~hpa.controllers.horizontal.HorizontalController`
wired to the in-memory ports of :mod:`hpa.sim.ports`. At each sync time ``t = k * period`` the
engine advances every workload to ``t`` (trace points and pods becoming Ready, in time order),
sets the clock, and awaits ``reconcile_key`` of each HPA: the controller reads ``/scale``, lists
pods, fetches metrics, decides and writes ``/scale`` and ``/status`` exactly as ``hpa
controller`` does. The ports answer without suspending, so a day of virtual time costs only the
controller's CPU; nothing sleeps.

Deliberate deviations: every HPA is reconciled exactly on the sync grid (upstream spreads
resyncs with the work queue's rate limiter); the first sync is at ``t = 0``. A recorded schedule
(:attr:`SimulationConfig.sync_times_seconds`, e.g. the syncs of ``hpa controller`` in the lab)
replaces the grid, and recorded External/Object values
(:attr:`SimulationConfig.replayed_metric_milli`) replace the workload model's offered load, for
replaying a cluster's run sync by sync (``tests/e2e/test_sim_parity.py``).
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hpa.controllers.horizontal import HorizontalController, ReconcileReport
from hpa.controllers.settings import HorizontalControllerSettings
from hpa.core.decision import MetricStatus
from hpa.core.explain import Explanation
from hpa.sim.manifest import HPAManifest, target_utilization_percent
from hpa.sim.ports import (
    RecordedEvent,
    ReplayedMetricsClient,
    SimEventRecorder,
    SimHorizontalPodAutoscalers,
    SimMetricsClient,
    SimPodLister,
    SimScaleClient,
    VirtualClock,
)
from hpa.sim.trace import LoadTrace
from hpa.sim.vertical import ResourceModel, VerticalRun
from hpa.sim.vpa_manifest import VPA
from hpa.sim.workload import Deployment, MetricPipeline, TimelineRow, WorkloadModel

__all__ = ["HPARun", "SimulationConfig", "SimulationResult", "run_simulation", "simulate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationConfig:
    """Everything but the HPAs and the trace: workload, metric pipeline, controller flags."""

    workload: WorkloadModel = field(default_factory=WorkloadModel)
    pipeline: MetricPipeline = field(default_factory=MetricPipeline)
    settings: HorizontalControllerSettings = field(default_factory=HorizontalControllerSettings)
    initial_replicas: int | None = None
    """Replicas at ``t = 0`` (Ready for an hour already); ``None``: each HPA's minReplicas (1 when
    minReplicas is 0: a target at zero the HPA did not put there is left alone upstream)."""
    sync_times_seconds: tuple[float, ...] | None = None
    """Reconcile at these virtual times (increasing, from 0, within the trace) instead of every
    sync period: a recorded schedule, such as the syncs of a controller in a cluster."""
    replayed_metric_milli: tuple[int, ...] | None = None
    """Every External and Object metric answers these values (milli-units) in order, one per
    fetch, instead of the offered load: what a cluster's metrics API served, recorded."""
    vpas: tuple[VPA, ...] = ()
    """VerticalPodAutoscalers; each one acts on the Deployment of the HPAs whose
    ``scaleTargetRef.name`` is its ``targetRef.name`` (:mod:`hpa.sim.vertical`)."""
    resources: ResourceModel = field(default_factory=ResourceModel)
    recommender: str | None = None
    """Every VPA uses this recommender model; ``None``: each VPA's ``spec.recommenders``
    (``group-aware`` when named there, else ``default``)."""
    record_decisions: bool = False
    """Keep every reconcile's explanation (:attr:`HPARun.decisions`), not only the rescales'
    rendered text: for short runs that are asserted on (``hpa.testing``)."""

    def __post_init__(self) -> None:
        times = self.sync_times_seconds
        if times is not None:
            if not times or times[0] < 0:
                raise ValueError("sync times must be a non-empty list starting at 0 or later")
            for earlier, later in itertools.pairwise(times):
                if not later > earlier:
                    raise ValueError(f"sync times must increase: {later:g} after {earlier:g}")

    def describe(self) -> list[tuple[str, str]]:
        """Every parameter of the run, for the output's header."""
        s = self.settings
        return [
            *self.workload.describe(),
            *self.pipeline.describe(),
            *(self.resources.describe() if self.vpas else []),
            (
                "sync period",
                f"{s.sync_period_seconds:g}s"
                if self.sync_times_seconds is None
                else f"{len(self.sync_times_seconds)} recorded sync times",
            ),
            ("tolerance", f"{s.tolerance:g}"),
            ("downscale stabilization", f"{s.downscale_stabilization_seconds:g}s"),
            ("cpu initialization period", f"{s.cpu_initialization_period_seconds:g}s"),
            ("initial readiness delay", f"{s.initial_readiness_delay_seconds:g}s"),
            (
                "start replicas",
                "max(minReplicas, 1)"
                if self.initial_replicas is None
                else str(self.initial_replicas),
            ),
            *(
                []
                if self.replayed_metric_milli is None
                else [
                    (
                        "external/object metrics",
                        f"{len(self.replayed_metric_milli)} recorded values, one per fetch",
                    )
                ]
            ),
        ]


@dataclass(slots=True)
class HPARun:
    """One HPA's simulated history."""

    name: str
    source: str
    manifest: HPAManifest
    target_percent: float | None
    """CPU utilization the HPA aims at (see :func:`hpa.sim.manifest.target_utilization_percent`)."""
    timeline: list[TimelineRow]
    events: list[RecordedEvent]
    start_replicas: int = 1
    """Replicas at t=0 (``--start-replicas``, else ``max(minReplicas, 1)``)."""
    reconciles: int = 0
    errors: int = 0
    first_error: str | None = None
    first_error_seconds: float | None = None
    explanations: list[tuple[float, str]] = field(default_factory=list)
    """``(t, explanation)`` of every reconcile that rescaled (the decision's trace, rendered)."""
    decisions: list[tuple[float, Explanation]] = field(default_factory=list)
    """``(t, explanation)`` of every reconcile, when :attr:`SimulationConfig.record_decisions`."""
    vertical: VerticalRun | None = None
    """The VPA acting on this run's Deployment, if any."""


@dataclass(slots=True)
class SimulationResult:
    """The runs of every HPA over one trace."""

    trace: LoadTrace
    config: SimulationConfig
    runs: list[HPARun]
    duration_seconds: float


def _observed(status: Sequence[MetricStatus] | None) -> float | None:
    """The first metric's current value as the controller wrote it (percent, or units)."""
    if not status:
        return None
    current = status[0].current
    if current.average_utilization is not None:
        return float(current.average_utilization)
    if current.average_value_milli is not None:
        return current.average_value_milli / 1000
    if current.value_milli is not None:
        return current.value_milli / 1000
    return None


@dataclass(slots=True)
class _Simulated:
    run: HPARun
    key: str
    deployment: Deployment
    controller: HorizontalController


SyncCallback = Callable[[float, Sequence[HPARun], Sequence[Deployment]], None]


def _build(
    manifest: HPAManifest,
    *,
    index: int,
    trace: LoadTrace,
    config: SimulationConfig,
    clock: VirtualClock,
) -> _Simulated:
    hpa = manifest.hpa
    spec = hpa.spec
    min_replicas = spec.min_replicas if spec.min_replicas is not None else 1
    # minReplicas 0 starts at one pod: a target at zero that the HPA did not put there is in
    # maintenance mode upstream (ScalingDisabled), which is not what a simulation is after
    default_replicas = max(min_replicas, 1)
    replicas = config.initial_replicas if config.initial_replicas is not None else default_replicas
    container = "app"
    for metric in spec.metrics:
        if metric.container_resource is not None:
            container = metric.container_resource.container
            break
    deployment = Deployment(
        f"{spec.scale_target_ref.name or 'workload'}-{index}",
        model=config.workload,
        pipeline=config.pipeline,
        trace=trace,
        replicas=replicas,
        container=container,
    )
    hpas = SimHorizontalPodAutoscalers(hpa)
    events = SimEventRecorder(clock)
    metrics = (
        SimMetricsClient(deployment, clock)
        if config.replayed_metric_milli is None
        else ReplayedMetricsClient(deployment, clock, values_milli=config.replayed_metric_milli)
    )
    controller = HorizontalController(
        config.settings,
        hpas=hpas,
        scales=SimScaleClient(deployment, clock),
        metrics=metrics,
        pods=SimPodLister(deployment, clock),
        status_writer=hpas,
        events=events,
        clock=clock,
        render_explanations=False,  # the engine renders the rescales' traces it keeps
        observe=False,  # nothing serves the controller's /metrics in a simulation
    )
    key = f"{hpa.namespace}/{hpa.name}"
    controller.track(key)
    vertical = None
    for vpa in config.vpas:
        if vpa.target_name == spec.scale_target_ref.name and vpa.namespace == hpa.namespace:
            recommender = config.recommender or (
                "group-aware" if "group-aware" in vpa.recommenders else "default"
            )
            vertical = VerticalRun(
                vpa,
                deployment,
                config.resources,
                recommender=recommender,
                hpa=lambda: hpas.hpa,
            )
            break
    workload = config.workload
    run = HPARun(
        name=manifest.name,
        source=manifest.source,
        manifest=manifest,
        target_percent=target_utilization_percent(
            hpa,
            cpu_request_milli=workload.cpu_request_milli,
            cpu_per_request_milli=workload.cpu_per_request_milli,
            idle_cpu_milli=workload.idle_cpu_milli,
        ),
        timeline=deployment.timeline,
        events=events.events,
        start_replicas=replicas,
        vertical=vertical,
    )
    return _Simulated(run=run, key=key, deployment=deployment, controller=controller)


def _note(
    sim: _Simulated, report: ReconcileReport | None, *, t_seconds: float, record: bool
) -> None:
    run = sim.run
    run.reconciles += 1
    if report is None:
        return
    if record:
        run.decisions.append((t_seconds, report.explanation))
    if report.scaled:
        run.explanations.append((t_seconds, report.explanation.render()))
    if report.error is not None:
        run.errors += 1
        if run.first_error is None:
            run.first_error = report.error
            run.first_error_seconds = t_seconds
    sim.deployment.note_decision(
        t_seconds,
        desired=report.desired_replicas,
        observed=_observed(report.status.current_metrics),
    )


async def run_simulation(
    manifests: Sequence[HPAManifest],
    trace: LoadTrace,
    *,
    config: SimulationConfig | None = None,
    on_sync: SyncCallback | None = None,
) -> SimulationResult:
    """Simulate every HPA over ``trace`` in virtual time (``on_sync`` is called after each sync)."""
    config = config or SimulationConfig()
    if not manifests:
        raise ValueError("nothing to simulate: no HPA given")
    clock = VirtualClock()
    sims = [
        _build(manifest, index=index, trace=trace, config=config, clock=clock)
        for index, manifest in enumerate(manifests, start=1)
    ]
    runs = [sim.run for sim in sims]
    deployments = [sim.deployment for sim in sims]
    period = config.settings.sync_period_seconds
    duration = trace.duration_seconds
    if config.sync_times_seconds is not None:
        sync_times: Sequence[float] = config.sync_times_seconds
        if sync_times[-1] >= duration:
            raise ValueError(
                f"the last sync time {sync_times[-1]:g}s is not inside the trace ({duration:g}s)"
            )
    else:
        syncs = max(1, math.ceil(round(duration / period, 9)))
        sync_times = [step * period for step in range(syncs)]
    interval = config.resources.interval_seconds
    next_vertical = 0.0
    for t_seconds in sync_times:
        clock.set(t_seconds)
        vertical_now = t_seconds >= next_vertical
        if vertical_now:
            next_vertical = (math.floor(t_seconds / interval) + 1) * interval
        for sim in sims:
            if vertical_now and sim.run.vertical is not None:
                sim.run.vertical.step(t_seconds)
            sim.deployment.advance_to(t_seconds)
            report = await sim.controller.reconcile_key(sim.key)
            _note(sim, report, t_seconds=t_seconds, record=config.record_decisions)
        if on_sync is not None:
            on_sync(t_seconds, runs, deployments)
    for sim in sims:
        # readiness changes and trace points between the last sync and the end
        sim.deployment.advance_to(math.nextafter(duration, -math.inf))
    return SimulationResult(trace=trace, config=config, runs=runs, duration_seconds=duration)


def simulate(
    manifests: Sequence[HPAManifest],
    trace: LoadTrace,
    *,
    config: SimulationConfig | None = None,
    on_sync: SyncCallback | None = None,
) -> SimulationResult:
    """:func:`run_simulation` on a fresh event loop (for synchronous callers)."""
    results: list[SimulationResult] = []

    async def run() -> None:
        # the result leaves the task through ``results``, not as the task's result: on Python
        # 3.11, ``asyncio.run`` ends by ``signal.getsignal(SIGINT)``, which formats its handler
        # (a partial holding the task) into a discarded error message, and a done task's repr
        # includes its result's: for a simulated week, 0.4 CPU-seconds spent printing the timeline
        results.append(await run_simulation(manifests, trace, config=config, on_sync=on_sync))

    asyncio.run(run())
    return results[0]
