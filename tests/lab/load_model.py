"""Load model of the lab's workload exporter: offered load split over the Ready pods of a workload.

Upstream counterpart: none in Kubernetes. The numbers it produces imitate what the kubelet's
cAdvisor endpoint (`/metrics/cadvisor`) reports for a container, `container_cpu_usage_seconds_total`
and `container_memory_working_set_bytes`, plus an application's `http_requests_total`, so that the
Prometheus adapter and the HPA see realistic series. docs/lab-observability.md has the formulas.

The model is pure: time comes from an injected clock (seconds, any origin, never read twice per
call), and every quantity is an exact `Fraction` until the exporter turns it into a float. For each
workload (a namespace, a name and an equality label selector):

- offered load `rps(t)` is piecewise linear: `set_load` makes a step (`ramp_seconds=0`) or a
  linear ramp from the current value to the target;
- the load is split evenly over the *serving* pods (Running, condition Ready=True, not being
  deleted); with no serving pod the load is dropped (nobody answers);
- a serving pod's `http_requests_total` grows at `rps(t) / serving_pod_count`;
- a Running pod's CPU counter grows at `(base_cpu_milli + share * cpu_per_request_milli) / 1000`
  core-seconds per second, where `share` is 0 for a pod that is not serving;
- a Running pod's working set is `base_memory_bytes + memory_per_rps_bytes * share`, floored to
  whole bytes.

Counters are integrated exactly between events (the split changes only when pods change, and the
load is linear in between), never go backwards for a pod that stays, and start again from 0 for a
pod that is deleted and created again under the same name (Prometheus treats that as a reset).

Deliberate deviations from cAdvisor: the modelled usage is all in the pod's first container; other
containers are exported at 0. There are no pod-level (`container=""`) or pause (`container="POD"`)
series, no restarts, and no `id`/`image`/`name` labels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

RpsValue = Fraction | Decimal | int | float | str

MILLI = 1000


def to_fraction(value: RpsValue) -> Fraction:
    """An exact fraction from a JSON-ish number; floats go through their shortest decimal form."""
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(value)


@dataclass(frozen=True, slots=True)
class WorkloadKey:
    """Identity of a workload in the exporter: its namespace and name (e.g. the Deployment's)."""

    namespace: str
    workload: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.workload}"


@dataclass(frozen=True, slots=True)
class WorkloadProfile:
    """How one workload's pods are found and how much they consume.

    selector: equality label selector (matchLabels) of the workload's pods in `namespace`.
    cpu_per_request_milli: CPU time per request, in milli core-seconds (10 -> 10 ms per request).
    base_cpu_milli: CPU a Running pod burns without load, in millicores.
    base_memory_bytes: working set of a Running pod without load.
    memory_per_rps_bytes: extra working set per request/s of the pod's share of the load.
    cpu_gauge: also export the pods' CPU usage now (cores) as the gauge
        `lab_container_cpu_usage_cores`: a step of load is then one step of the series, where a
        rate of the counter shows a partial value for one scrape (side-by-side timelines).
    """

    namespace: str
    workload: str
    selector: Mapping[str, str] = field(hash=False)
    cpu_per_request_milli: int = 10
    base_cpu_milli: int = 10
    base_memory_bytes: int = 64 * 1024 * 1024
    memory_per_rps_bytes: int = 1024 * 1024
    cpu_gauge: bool = False

    def __post_init__(self) -> None:
        if not self.selector:
            raise ValueError("a workload needs a non-empty label selector")
        for name in (
            "cpu_per_request_milli",
            "base_cpu_milli",
            "base_memory_bytes",
            "memory_per_rps_bytes",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")

    @property
    def key(self) -> WorkloadKey:
        return WorkloadKey(self.namespace, self.workload)

    def selects(self, pod: PodState) -> bool:
        """Whether `pod` belongs to this workload (same namespace, every selector label matches)."""
        return pod.namespace == self.namespace and all(
            pod.labels.get(name) == value for name, value in self.selector.items()
        )


@dataclass(frozen=True, slots=True)
class PodState:
    """What the model needs to know about a pod (from the pod watch)."""

    namespace: str
    name: str
    labels: Mapping[str, str] = field(hash=False)
    containers: tuple[str, ...]
    phase: str = "Running"
    ready: bool = True
    deleting: bool = False
    uid: str = ""
    node: str = ""
    """`spec.nodeName`: the node the pod is bound to ("" while unscheduled)."""

    @property
    def running(self) -> bool:
        """The pod has series (cAdvisor only sees started containers)."""
        return self.phase == "Running" and bool(self.containers)

    @property
    def serving(self) -> bool:
        """The pod receives a share of the load: Running, Ready=True and not being deleted."""
        return self.running and self.ready and not self.deleting


@dataclass(frozen=True, slots=True)
class LoadRamp:
    """Offered load from `start_seconds` on: linear from `from_rps` to `to_rps`, then constant."""

    start_seconds: Fraction
    from_rps: Fraction
    to_rps: Fraction
    ramp_seconds: Fraction = Fraction(0)

    @property
    def end_seconds(self) -> Fraction:
        return self.start_seconds + self.ramp_seconds

    def rps_at(self, now_seconds: Fraction) -> Fraction:
        if now_seconds >= self.end_seconds:
            return self.to_rps
        if now_seconds <= self.start_seconds:
            return self.from_rps
        progress = (now_seconds - self.start_seconds) / self.ramp_seconds
        return self.from_rps + (self.to_rps - self.from_rps) * progress

    def requests_between(self, start_seconds: Fraction, end_seconds: Fraction) -> Fraction:
        """The integral of the offered load over [start, end] (requests), exact."""
        if end_seconds <= start_seconds:
            return Fraction(0)
        total = Fraction(0)
        ramp_end = min(end_seconds, self.end_seconds)
        if start_seconds < ramp_end:
            # The load is linear on [start, ramp_end]: the trapezoid is the exact integral.
            total += (
                (ramp_end - start_seconds)
                * (self.rps_at(start_seconds) + self.rps_at(ramp_end))
                / 2
            )
        flat_start = max(start_seconds, self.end_seconds)
        if end_seconds > flat_start:
            total += (end_seconds - flat_start) * self.to_rps
        return total


@dataclass(frozen=True, slots=True)
class PodSample:
    """The exported values of one Running pod at one instant."""

    namespace: str
    pod: str
    workload: WorkloadKey
    containers: tuple[str, ...]
    node: str
    serving: bool
    load_share_rps: Fraction
    cpu_usage_seconds: Fraction
    cpu_usage_cores: Fraction
    """The counter's derivative now: `(base_cpu_milli + share * cpu_per_request_milli) / 1000`."""
    memory_working_set_bytes: int
    http_requests: Fraction


@dataclass(slots=True)
class _PodCounters:
    state: PodState
    cpu_usage_seconds: Fraction = Fraction(0)
    http_requests: Fraction = Fraction(0)


@dataclass(slots=True)
class _WorkloadState:
    profile: WorkloadProfile
    ramp: LoadRamp
    pods: dict[str, _PodCounters] = field(default_factory=dict)

    def serving_pod_count(self) -> int:
        return sum(1 for pod in self.pods.values() if pod.state.serving)


class LoadModel:
    """Workloads, their offered load and their pods' counters, advanced by an injected clock.

    It is also the exporter's pod sink: `replace_pods`, `upsert_pod` and `delete_pod` are called
    by a pod source (a list+watch, or an in-memory fake) for each watched workload.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._workloads: dict[WorkloadKey, _WorkloadState] = {}
        self._last_seconds: Fraction | None = None

    # ------------------------------------------------------------------ time

    def _advance(self) -> Fraction:
        """Integrate every counter up to the clock's now (never backwards) and return now."""
        now_seconds = Fraction(self._clock())
        last_seconds = self._last_seconds
        if last_seconds is None:
            self._last_seconds = now_seconds
            return now_seconds
        if now_seconds <= last_seconds:
            return last_seconds
        elapsed_seconds = now_seconds - last_seconds
        for state in self._workloads.values():
            serving_pod_count = state.serving_pod_count()
            offered_requests = state.ramp.requests_between(last_seconds, now_seconds)
            profile = state.profile
            for pod in state.pods.values():
                if not pod.state.running:
                    continue
                pod.cpu_usage_seconds += profile.base_cpu_milli * elapsed_seconds / MILLI
                if pod.state.serving:
                    share_requests = offered_requests / serving_pod_count
                    pod.http_requests += share_requests
                    pod.cpu_usage_seconds += share_requests * profile.cpu_per_request_milli / MILLI
        self._last_seconds = now_seconds
        return now_seconds

    # ------------------------------------------------------------------ workloads and load

    def add_workload(self, profile: WorkloadProfile, *, rps: RpsValue = 0) -> None:
        """Register a workload (or replace its profile, keeping its pods, counters and load)."""
        now_seconds = self._advance()
        existing = self._workloads.get(profile.key)
        if existing is not None:
            existing.profile = profile
            return
        offered_rps = to_fraction(rps)
        self._check_rps(offered_rps)
        self._workloads[profile.key] = _WorkloadState(
            profile=profile, ramp=LoadRamp(now_seconds, offered_rps, offered_rps)
        )

    def remove_workload(self, namespace: str, workload: str) -> None:
        self._advance()
        self._workloads.pop(WorkloadKey(namespace, workload), None)

    def profiles(self) -> list[WorkloadProfile]:
        return [state.profile for state in self._workloads.values()]

    def profile(self, namespace: str, workload: str) -> WorkloadProfile:
        return self._state(WorkloadKey(namespace, workload)).profile

    def set_load(
        self, namespace: str, workload: str, rps: RpsValue, *, ramp_seconds: RpsValue = 0
    ) -> None:
        """Offer `rps` requests/s to the workload: at once, or by a linear ramp from the current
        load that lasts `ramp_seconds`."""
        state = self._state(WorkloadKey(namespace, workload))
        target_rps = to_fraction(rps)
        ramp = to_fraction(ramp_seconds)
        self._check_rps(target_rps)
        if ramp < 0:
            raise ValueError("ramp_seconds must not be negative")
        now_seconds = self._advance()
        state.ramp = LoadRamp(now_seconds, state.ramp.rps_at(now_seconds), target_rps, ramp)

    def load(self, namespace: str, workload: str) -> Fraction:
        """The offered load now, in requests/s."""
        state = self._state(WorkloadKey(namespace, workload))
        return state.ramp.rps_at(self._advance())

    def target_load(self, namespace: str, workload: str) -> Fraction:
        """The load at the end of the current ramp (the current load after a step)."""
        return self._state(WorkloadKey(namespace, workload)).ramp.to_rps

    # ------------------------------------------------------------------ pod sink

    def replace_pods(self, key: WorkloadKey, pods: Iterable[PodState]) -> None:
        """The complete set of the workload's pods (after a list); others are forgotten."""
        self._advance()
        state = self._workloads.get(key)
        if state is None:
            return
        fresh = {pod.name: pod for pod in pods if state.profile.selects(pod)}
        for name in list(state.pods):
            if name not in fresh:
                del state.pods[name]
        for pod in fresh.values():
            self._put(state, pod)

    def upsert_pod(self, key: WorkloadKey, pod: PodState) -> None:
        self._advance()
        state = self._workloads.get(key)
        if state is None:
            return
        if state.profile.selects(pod):
            self._put(state, pod)
        else:
            state.pods.pop(pod.name, None)

    def delete_pod(self, key: WorkloadKey, name: str) -> None:
        self._advance()
        state = self._workloads.get(key)
        if state is not None:
            state.pods.pop(name, None)

    # ------------------------------------------------------------------ reading

    def sample(self) -> list[PodSample]:
        """The values of every Running pod now, ordered by workload then pod name."""
        now_seconds = self._advance()
        samples: list[PodSample] = []
        for key, state in self._workloads.items():
            profile = state.profile
            serving_pod_count = state.serving_pod_count()
            rps = state.ramp.rps_at(now_seconds)
            for name in sorted(state.pods):
                pod = state.pods[name]
                if not pod.state.running:
                    continue
                share_rps = rps / serving_pod_count if pod.state.serving else Fraction(0)
                memory_bytes = profile.base_memory_bytes + profile.memory_per_rps_bytes * share_rps
                samples.append(
                    PodSample(
                        namespace=pod.state.namespace,
                        pod=name,
                        workload=key,
                        containers=pod.state.containers,
                        node=pod.state.node,
                        serving=pod.state.serving,
                        load_share_rps=share_rps,
                        cpu_usage_seconds=pod.cpu_usage_seconds,
                        cpu_usage_cores=(
                            profile.base_cpu_milli + share_rps * profile.cpu_per_request_milli
                        )
                        / MILLI,
                        memory_working_set_bytes=int(memory_bytes),
                        http_requests=pod.http_requests,
                    )
                )
        return samples

    # ------------------------------------------------------------------ internals

    def _state(self, key: WorkloadKey) -> _WorkloadState:
        try:
            return self._workloads[key]
        except KeyError:
            raise KeyError(f"unknown workload {key}") from None

    @staticmethod
    def _check_rps(rps: Fraction) -> None:
        if rps < 0:
            raise ValueError("rps must not be negative")

    @staticmethod
    def _put(state: _WorkloadState, pod: PodState) -> None:
        counters = state.pods.get(pod.name)
        if counters is None or counters.state.uid != pod.uid:
            # A new pod, or a pod recreated under the same name: its counters start at 0.
            state.pods[pod.name] = _PodCounters(state=pod)
        else:
            counters.state = pod
