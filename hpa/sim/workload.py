"""The simulated workload: a Deployment's pods, the load they serve, and what the metrics see.

Upstream counterpart: none in the HPA controller. The behaviour modelled is the cluster's: the
Deployment/ReplicaSet controllers create pods when ``/scale`` goes up (Pending, then Running, then
Ready after the readiness probe passes) and delete them when it goes down (Pending first, then
not-ready, then the most recently ready, as ``ActivePodsWithRanks`` ranks them); the Service
spreads requests evenly over Ready pods; metrics-server (or Prometheus) scrapes cumulative
counters every ``scrape_interval_seconds`` and reports a rate over ``window_seconds``.

The model, every parameter stated in the output (:meth:`WorkloadModel.describe`,
:meth:`MetricPipeline.describe`):

* offered load ``L(t)`` (requests per second) comes from the trace; Ready pods share it evenly;
* a Ready pod uses ``idle_cpu_milli + cpu_per_request_milli * L(t) / ready`` milli-cores, capped at
  ``cpu_limit_milli`` when set (then it serves only what the capped CPU allows; the rest of the
  load is dropped, as are all requests while no pod is Ready);
* a pod created at ``c`` is Pending until ``c + startup_seconds`` (``startTime`` is ``c``), then
  Running and not Ready, using ``startup_cpu_milli`` (warm-up), until ``readiness_seconds``
  later, when it becomes Ready;
* at a scrape at time ``b`` a pod gets a sample only if its containers ran during the whole
  window ``[b - window, b]``; the sample is the average over that window (so a sample may mix
  warm-up CPU and served traffic, which is exactly what the controller's CPU-initialization and
  readiness rules look at); the controller sees the newest scrape at or before its sync.

Quantities the controller reads are exact integers: CPU in milli-cores (rounded up, like
``Quantity.MilliValue``), request rates in milli-requests per second.

Deliberate deviations from a real cluster: no scheduling limits, no image-pull variance, pods
deleted on scale-down stop serving at once (no termination grace), one container per pod.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hpa.core.conditions import ConditionStatus
from hpa.core.replicas import ContainerInfo, PodCondition, PodInfo, PodMetric, PodPhase
from hpa.sim.trace import LoadTrace

__all__ = [
    "SIM_EPOCH",
    "Deployment",
    "MetricPipeline",
    "SimPod",
    "TimelineRow",
    "WorkloadModel",
    "moment",
]

SIM_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Wall time of ``t = 0`` in every simulation (virtual time; nothing reads the real clock)."""

HISTORY_SECONDS = 3600.0
"""The initial pods have been Ready, serving the trace's first load, for this long at ``t = 0``."""


def moment(t_seconds: float) -> datetime:
    """The virtual wall time ``t_seconds`` after :data:`SIM_EPOCH`."""
    return SIM_EPOCH + timedelta(seconds=t_seconds)


def _milli_up(value: float) -> int:
    """``MilliValue`` of a float quantity: rounded up, after dropping float noise."""
    return math.ceil(round(value, 6))


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadModel:
    """What one pod needs and how it starts; every field has its unit in its name."""

    cpu_request_milli: int = 500
    """``resources.requests.cpu`` of the pod's one container, in milli-cores."""
    cpu_per_request_milli: float = 10.0
    """CPU per unit of load: milli-cores used per request per second served (= CPU-ms per
    request)."""
    idle_cpu_milli: float = 0.0
    """CPU a Ready pod uses with no traffic, in milli-cores."""
    cpu_limit_milli: int | None = None
    """``resources.limits.cpu`` in milli-cores: usage saturates there and the excess load is
    dropped. ``None``: no limit (usage grows with load)."""
    startup_seconds: float = 5.0
    """From pod creation to Running (scheduling, image pull, container start)."""
    readiness_seconds: float = 10.0
    """From Running to Ready (the readiness probe's first success)."""
    startup_cpu_milli: float = 0.0
    """CPU while Running but not Ready (warm-up, e.g. JIT compilation), in milli-cores."""

    def __post_init__(self) -> None:
        if self.cpu_request_milli <= 0:
            raise ValueError(f"cpu request must be positive, got {self.cpu_request_milli}m")
        for name in ("cpu_per_request_milli", "idle_cpu_milli", "startup_seconds"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        for name in ("readiness_seconds", "startup_cpu_milli"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.cpu_limit_milli is not None and self.cpu_limit_milli < self.cpu_request_milli:
            raise ValueError("cpu limit must be at least the cpu request")

    @property
    def capacity_rps_at_request(self) -> float | None:
        """Requests per second one pod serves at 100 % of its CPU request."""
        if self.cpu_per_request_milli == 0:
            return None
        return max(0.0, self.cpu_request_milli - self.idle_cpu_milli) / self.cpu_per_request_milli

    def describe(self) -> list[tuple[str, str]]:
        """Every parameter, for the output's header."""
        capacity = self.capacity_rps_at_request
        return [
            ("cpu request per pod", f"{self.cpu_request_milli}m"),
            ("cpu per request/s", f"{self.cpu_per_request_milli:g}m"),
            (
                "capacity at 100% of request",
                "unbounded" if capacity is None else f"{capacity:g} req/s per pod",
            ),
            ("idle cpu per pod", f"{self.idle_cpu_milli:g}m"),
            (
                "cpu limit",
                "none" if self.cpu_limit_milli is None else f"{self.cpu_limit_milli}m",
            ),
            ("pod start-up (created -> Running)", f"{self.startup_seconds:g}s"),
            ("readiness delay (Running -> Ready)", f"{self.readiness_seconds:g}s"),
            ("warm-up cpu while not Ready", f"{self.startup_cpu_milli:g}m"),
        ]


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricPipeline:
    """How samples reach the controller: scrape period, rate window and scrape phase."""

    scrape_interval_seconds: float = 15.0
    """metrics-server ``--metric-resolution`` / Prometheus ``scrape_interval``."""
    window_seconds: float = 15.0
    """The rate window of each sample (metrics-server: one resolution; PromQL ``rate(...[w])``)."""
    scrape_offset_seconds: float = 0.0
    """Scrapes happen at ``offset + k * interval``; a non-zero offset adds pipeline lag."""

    def __post_init__(self) -> None:
        if not self.scrape_interval_seconds > 0:
            raise ValueError("scrape interval must be positive")
        if not 0 < self.window_seconds <= HISTORY_SECONDS:
            raise ValueError(f"rate window must be in (0, {HISTORY_SECONDS:g}] seconds")
        if not 0 <= self.scrape_offset_seconds < self.scrape_interval_seconds:
            raise ValueError("scrape offset must be in [0, scrape interval)")

    def last_scrape(self, t_seconds: float) -> float:
        """The newest scrape time at or before ``t_seconds``."""
        interval = self.scrape_interval_seconds
        offset = self.scrape_offset_seconds
        return math.floor(round((t_seconds - offset) / interval, 9)) * interval + offset

    def describe(self) -> list[tuple[str, str]]:
        return [
            ("scrape interval", f"{self.scrape_interval_seconds:g}s"),
            ("rate window", f"{self.window_seconds:g}s"),
            ("scrape offset", f"{self.scrape_offset_seconds:g}s"),
        ]


class SimPod:
    """One pod of the simulated Deployment (times in seconds of virtual time)."""

    __slots__ = (
        "_infos",
        "created_at",
        "deleted",
        "last_oom_at",
        "memory_limit_bytes",
        "memory_request_bytes",
        "name",
        "ready_at",
        "running_at",
    )

    def __init__(self, name: str, *, created_at: float, running_at: float, ready_at: float) -> None:
        self.name = name
        self.created_at = created_at
        self.running_at = running_at
        self.ready_at = ready_at
        self.deleted = False
        self._infos: dict[int, PodInfo] = {}
        self.memory_request_bytes: int | None = None
        self.memory_limit_bytes: int | None = None
        self.last_oom_at: tuple[float, float] | None = None
        """``(container started, OOM-killed)`` of the last OOM kill, for the updater."""

    def forget_infos(self) -> None:
        """Drop the cached listings (the requests or the readiness changed)."""
        self._infos.clear()

    def state(self, t_seconds: float) -> int:
        """0 Pending, 1 Running and not Ready, 2 Ready."""
        if t_seconds < self.running_at:
            return 0
        if t_seconds < self.ready_at:
            return 1
        return 2

    def info(self, t_seconds: float, containers: tuple[ContainerInfo, ...]) -> PodInfo:
        """The pod as the pod lister shows it at ``t_seconds`` (cached per state)."""
        state = self.state(t_seconds)
        cached = self._infos.get(state)
        if cached is None:
            if state == 2:
                condition = PodCondition(ConditionStatus.TRUE, moment(self.ready_at))
            else:
                condition = PodCondition(ConditionStatus.FALSE, moment(self.created_at))
            cached = PodInfo(
                name=self.name,
                phase=PodPhase.PENDING if state == 0 else PodPhase.RUNNING,
                ready_condition=condition,
                start_time=moment(self.created_at),
                containers=containers,
            )
            self._infos[state] = cached
        return cached


@dataclass(slots=True)
class TimelineRow:
    """The simulated world from ``t_seconds`` until the next row (piecewise constant).

    ``utilization_percent`` is the CPU usage of a Ready pod over its request (the Ready pods'
    mean request once a VPA set them; ``None`` while no pod is Ready); ``desired_replicas`` and
    ``observed`` are the controller's last decision and the value of its first metric as written
    to ``status.currentMetrics`` (``None`` before the first sync or when the metric could not be
    computed); ``event`` is set on a rescale.
    """

    t_seconds: float
    load_rps: float
    replicas: int
    pods: int
    ready_pods: int
    utilization_percent: float | None
    served_rps: float
    desired_replicas: int | None = None
    observed: float | None = None
    event: str = ""


@dataclass(slots=True)
class _Segments:
    """Cumulative integrals, piecewise linear between breakpoints."""

    times: list[float] = field(default_factory=list)
    usage: list[float] = field(default_factory=list)  # per-Ready-pod CPU, milli-core-seconds
    served: list[float] = field(default_factory=list)  # per-Ready-pod requests
    offered: list[float] = field(default_factory=list)  # offered requests
    usage_rate: list[float] = field(default_factory=list)
    served_rate: list[float] = field(default_factory=list)
    offered_rate: list[float] = field(default_factory=list)

    def at(self, t_seconds: float) -> tuple[float, float, float]:
        index = bisect.bisect_right(self.times, t_seconds) - 1
        if index < 0:
            index = 0
        dt = t_seconds - self.times[index]
        return (
            self.usage[index] + self.usage_rate[index] * dt,
            self.served[index] + self.served_rate[index] * dt,
            self.offered[index] + self.offered_rate[index] * dt,
        )


class Deployment:
    """A scale target with pods, driven by a trace; answers the ports' reads and writes."""

    def __init__(
        self,
        name: str,
        *,
        model: WorkloadModel,
        pipeline: MetricPipeline,
        trace: LoadTrace,
        replicas: int,
        container: str = "app",
    ) -> None:
        if replicas < 0:
            raise ValueError("replicas must be >= 0")
        self.name = name
        self.model = model
        self.pipeline = pipeline
        self.trace = trace
        self.labels = {"app": name}
        self.selector = f"app={name}"
        self.container = container
        self.containers = (ContainerInfo(container, {"cpu": model.cpu_request_milli}),)
        self.pod_containers: dict[str, tuple[ContainerInfo, ...]] = {}
        """Per-pod containers whose requests differ from the template's (set by a VPA)."""
        self.admit: Callable[[SimPod], None] | None = None
        """Called for every pod created after ``t = 0`` (a VPA's admission sets its requests)."""
        self.spec_replicas = replicas
        self.pods: list[SimPod] = []
        self.version = 0
        """Incremented whenever pods are created or deleted (for the pod lister's cache)."""
        self.timeline: list[TimelineRow] = []
        self.desired_replicas: int | None = None
        self.observed: float | None = None
        self._names = itertools.count(1)
        self._ready_events: list[tuple[float, int, SimPod]] = []
        self._sequence = itertools.count()
        self._trace_index = 1  # next trace point to apply
        self._now = -HISTORY_SECONDS
        self._load = trace.loads[0]
        self._ready = 0
        self._segments = _Segments()
        self._names_cache: tuple[int, list[str]] = (-1, [])
        self._stamp: tuple[float, datetime] = (math.nan, SIM_EPOCH)
        """The newest scrape's time and its wall time (one ``moment`` per scrape)."""
        start = -HISTORY_SECONDS
        for _ in range(replicas):
            self.pods.append(self._new_pod(start, running_at=start, ready_at=start))
        self._ready = replicas
        self._settled_at = start
        """When the last of the current pods became (or becomes) Running and Ready."""
        self._begin_segment(start)

    # --------------------------------------------------------------------------- dynamics

    def _new_pod(self, created_at: float, *, running_at: float, ready_at: float) -> SimPod:
        pod = SimPod(
            f"{self.name}-{next(self._names)}",
            created_at=created_at,
            running_at=running_at,
            ready_at=ready_at,
        )
        if self.admit is not None:
            self.admit(pod)
        return pod

    def cpu_request_of(self, pod: SimPod) -> int:
        """The pod's cpu request in milli-cores (the template's unless a VPA set it)."""
        containers = self.pod_containers.get(pod.name, self.containers)
        return containers[0].requests_milli.get("cpu", self.model.cpu_request_milli)

    def set_requests(self, pod: SimPod, *, cpu_milli: int | None) -> None:
        """Set a pod's cpu request (admission or an in-place resize: no restart)."""
        if cpu_milli is not None:
            self.pod_containers[pod.name] = (ContainerInfo(self.container, {"cpu": cpu_milli}),)
        pod.forget_infos()
        self.version += 1

    def _mean_ready_cpu_request(self, t_seconds: float) -> float:
        """The Ready pods' mean cpu request (the template's while no VPA set one)."""
        if not self.pod_containers:
            return float(self.model.cpu_request_milli)
        ready = [self.cpu_request_of(pod) for pod in self.pods if pod.state(t_seconds) == 2]
        return sum(ready) / len(ready) if ready else float(self.model.cpu_request_milli)

    def per_pod_load(self) -> float:
        """Requests per second offered to each Ready pod now (0 with no Ready pod)."""
        return self._load / self._ready if self._ready else 0.0

    def per_pod_cpu_milli(self) -> float:
        """CPU a Ready pod uses now, in milli-cores."""
        return self._rates()[0]

    def evict(self, pod: SimPod, t_seconds: float) -> SimPod:
        """Evict ``pod`` at ``t_seconds``: it is deleted and its ReplicaSet creates a replacement
        at once (Pending, then starting, then Ready, as on a scale-up)."""
        self.advance_to(t_seconds)
        was_ready = pod.state(t_seconds) == 2
        pod.deleted = True
        self.pods = [p for p in self.pods if not p.deleted]
        self.pod_containers.pop(pod.name, None)
        if was_ready:
            self._ready -= 1
        model = self.model
        running_at = t_seconds + model.startup_seconds
        replacement = self._new_pod(
            t_seconds, running_at=running_at, ready_at=running_at + model.readiness_seconds
        )
        self.pods.append(replacement)
        heapq.heappush(
            self._ready_events, (replacement.ready_at, next(self._sequence), replacement)
        )
        self._after_pod_change(t_seconds)
        return replacement

    def restart(self, pod: SimPod, t_seconds: float, *, restart_seconds: float) -> None:
        """The pod's container is killed at ``t_seconds`` (OOM) and restarts in place: Running
        again after ``restart_seconds``, Ready a readiness delay later; the pod is kept."""
        self.advance_to(t_seconds)
        if pod.state(t_seconds) == 2:
            self._ready -= 1
        pod.last_oom_at = (max(pod.running_at, pod.created_at), t_seconds)
        pod.running_at = t_seconds + restart_seconds
        pod.ready_at = pod.running_at + self.model.readiness_seconds
        pod.forget_infos()
        heapq.heappush(self._ready_events, (pod.ready_at, next(self._sequence), pod))
        self._after_pod_change(t_seconds)

    def _after_pod_change(self, t_seconds: float) -> None:
        self.version += 1
        self._settled_at = max(
            (max(pod.running_at, pod.ready_at) for pod in self.pods), default=-math.inf
        )
        self._begin_segment(t_seconds)

    def _rates(self) -> tuple[float, float]:
        """Per-Ready-pod CPU (milli-cores) and served requests per second."""
        if self._ready == 0:
            return 0.0, 0.0
        model = self.model
        per_pod = self._load / self._ready
        usage = model.idle_cpu_milli + model.cpu_per_request_milli * per_pod
        limit = model.cpu_limit_milli
        if limit is not None and usage > limit:
            served = (
                max(0.0, limit - model.idle_cpu_milli) / model.cpu_per_request_milli
                if model.cpu_per_request_milli > 0
                else per_pod
            )
            return float(limit), served
        return usage, per_pod

    def _begin_segment(self, t_seconds: float) -> None:
        segments = self._segments
        if segments.times:
            usage, served, offered = segments.at(t_seconds)
        else:
            usage = served = offered = 0.0
        usage_rate, served_rate = self._rates()
        if segments.times and segments.times[-1] == t_seconds:
            for column in (
                segments.times,
                segments.usage,
                segments.served,
                segments.offered,
                segments.usage_rate,
                segments.served_rate,
                segments.offered_rate,
            ):
                column.pop()
        segments.times.append(t_seconds)
        segments.usage.append(usage)
        segments.served.append(served)
        segments.offered.append(offered)
        segments.usage_rate.append(usage_rate)
        segments.served_rate.append(served_rate)
        segments.offered_rate.append(self._load)
        if t_seconds >= 0:
            self._record(t_seconds, usage_rate=usage_rate, served_rate=served_rate)

    def _record(
        self, t_seconds: float, *, usage_rate: float, served_rate: float, event: str = ""
    ) -> None:
        row = TimelineRow(
            t_seconds=t_seconds,
            load_rps=self._load,
            replicas=self.spec_replicas,
            pods=len(self.pods),
            ready_pods=self._ready,
            utilization_percent=(
                100.0 * usage_rate / self._mean_ready_cpu_request(t_seconds)
                if self._ready
                else None
            ),
            served_rps=served_rate * self._ready,
            desired_replicas=self.desired_replicas,
            observed=self.observed,
            event=event,
        )
        timeline = self.timeline
        if timeline and timeline[-1].t_seconds == t_seconds:
            if not event:
                row.event = timeline[-1].event
            timeline[-1] = row
        else:
            timeline.append(row)

    def advance_to(self, t_seconds: float) -> None:
        """Apply every trace point and readiness change up to ``t_seconds``, in time order."""
        times = self.trace.times_seconds
        loads = self.trace.loads
        events = self._ready_events
        while True:
            next_trace = times[self._trace_index] if self._trace_index < len(times) else math.inf
            next_ready = events[0][0] if events else math.inf
            moment_next = min(next_trace, next_ready)
            if moment_next > t_seconds:
                break
            if next_trace <= next_ready:
                new_load = loads[self._trace_index]
                self._trace_index += 1
                if new_load == self._load:
                    continue
                self._load = new_load
            else:
                _, _, pod = heapq.heappop(events)
                if pod.deleted:
                    continue
                self._ready += 1
            self._begin_segment(moment_next)
        self._now = t_seconds

    def scale(self, replicas: int, t_seconds: float) -> None:
        """``/scale`` was set to ``replicas`` at ``t_seconds``: create or delete pods now."""
        self.advance_to(t_seconds)
        old = self.spec_replicas
        self.spec_replicas = replicas
        self.version += 1
        model = self.model
        if replicas > len(self.pods):
            for _ in range(replicas - len(self.pods)):
                running_at = t_seconds + model.startup_seconds
                pod = self._new_pod(
                    t_seconds,
                    running_at=running_at,
                    ready_at=running_at + model.readiness_seconds,
                )
                self.pods.append(pod)
                if pod.ready_at <= t_seconds:
                    self._ready += 1
                else:
                    heapq.heappush(self._ready_events, (pod.ready_at, next(self._sequence), pod))
        elif replicas < len(self.pods):
            # ActivePodsWithRanks: Pending before Running, not Ready before Ready, newest first
            ranked = sorted(
                self.pods,
                key=lambda p: (p.state(t_seconds), -max(p.ready_at, p.created_at)),
            )
            victims = ranked[: len(self.pods) - replicas]
            for pod in victims:
                pod.deleted = True
            self.pods = [p for p in self.pods if not p.deleted]
            self._ready -= sum(1 for p in victims if p.state(t_seconds) == 2)
        self._settled_at = max(
            (max(pod.running_at, pod.ready_at) for pod in self.pods), default=-math.inf
        )
        self._begin_segment(t_seconds)
        if t_seconds >= 0:
            usage_rate, served_rate = self._rates()
            self._record(
                t_seconds,
                usage_rate=usage_rate,
                served_rate=served_rate,
                event=f"scale {old} -> {replicas}",
            )

    def note_decision(
        self, t_seconds: float, *, desired: int | None, observed: float | None
    ) -> None:
        """Record the controller's view after a sync at ``t_seconds``."""
        self.desired_replicas = desired
        self.observed = observed
        if t_seconds >= 0:
            timeline = self.timeline
            if timeline and timeline[-1].t_seconds == t_seconds:
                # every change at t_seconds recorded its row as it happened, so the row at
                # t_seconds holds the world as it is now: only the controller's view is new
                row = timeline[-1]
                row.desired_replicas = desired
                row.observed = observed
                return
            usage_rate, served_rate = self._rates()
            self._record(t_seconds, usage_rate=usage_rate, served_rate=served_rate)

    # ---------------------------------------------------------------------------- reads

    @property
    def ready_pods(self) -> int:
        return self._ready

    @property
    def load_rps(self) -> float:
        return self._load

    def sample_window(self, t_seconds: float) -> tuple[float, float]:
        """``(start, end)`` of the window of the newest scrape at or before ``t_seconds``."""
        end = self.pipeline.last_scrape(t_seconds)
        return end - self.pipeline.window_seconds, end

    def _pod_average(self, pod: SimPod, *, start: float, end: float, cpu: bool) -> float | None:
        """A pod's average CPU (milli-cores) or served requests/s over ``[start, end]``."""
        if pod.running_at > start:
            return None  # not running for the whole window: no sample yet
        window = end - start
        index = 0 if cpu else 1
        if pod.ready_at <= start:
            return (self._segments.at(end)[index] - self._segments.at(start)[index]) / window
        total = 0.0
        ready_from = min(pod.ready_at, end)
        if cpu:
            total += self.model.startup_cpu_milli * (ready_from - start)
        if pod.ready_at < end:
            total += self._segments.at(end)[index] - self._segments.at(pod.ready_at)[index]
        return total / window

    def pod_samples(self, t_seconds: float, *, cpu: bool) -> tuple[dict[str, PodMetric], datetime]:
        """Per-pod samples of the newest scrape: CPU (milli-cores) or requests/s (milli)."""
        start, end = self.sample_window(t_seconds)
        stamp_cache = self._stamp
        if stamp_cache[0] == end:
            stamp = stamp_cache[1]  # the HPAs of one sync read the same scrape
        else:
            stamp = moment(end)
            self._stamp = (end, stamp)
        window = self.pipeline.window_seconds
        scale = 1 if cpu else 1000
        common: PodMetric | None = None
        pods = self.pods
        if self._settled_at <= start:
            # every pod Ready through the whole window: one (immutable) sample for all
            index = 0 if cpu else 1
            segments = self._segments
            average = (segments.at(end)[index] - segments.at(start)[index]) / window
            common = PodMetric(_milli_up(average * scale), stamp, window)
            return dict.fromkeys(self._pod_names(), common), stamp
        samples: dict[str, PodMetric] = {}
        for pod in pods:
            if pod.ready_at <= start and pod.running_at <= start:
                if common is None:
                    # every pod Ready through the whole window has the same (immutable) sample
                    index = 0 if cpu else 1
                    segments = self._segments
                    average = (segments.at(end)[index] - segments.at(start)[index]) / window
                    common = PodMetric(_milli_up(average * scale), stamp, window)
                samples[pod.name] = common
                continue
            average_or_none = self._pod_average(pod, start=start, end=end, cpu=cpu)
            if average_or_none is not None:
                samples[pod.name] = PodMetric(_milli_up(average_or_none * scale), stamp, window)
        return samples, stamp

    def _pod_names(self) -> list[str]:
        """The pods' names, in order (rebuilt after pods are created or deleted)."""
        cached = self._names_cache
        if cached[0] != self.version:
            cached = self._names_cache = (self.version, [pod.name for pod in self.pods])
        return cached[1]

    def offered_average_milli(self, t_seconds: float) -> tuple[int, datetime]:
        """Offered load averaged over the newest scrape's window, in milli-requests/s."""
        start, end = self.sample_window(t_seconds)
        average = (self._segments.at(end)[2] - self._segments.at(start)[2]) / (end - start)
        return _milli_up(average * 1000), moment(end)

    def pod_infos(self, t_seconds: float) -> Sequence[tuple[PodInfo, dict[str, str]]]:
        """Every pod as listed at ``t_seconds`` with its labels."""
        containers = self.pod_containers
        return [
            (pod.info(t_seconds, containers.get(pod.name, self.containers)), self.labels)
            for pod in self.pods
        ]
