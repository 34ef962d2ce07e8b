"""Shared setup of the lab tests of ``hpa vpa recommender`` (tests/e2e/test_vpa_recommender_lab.py
and bench/vpa_side_by_side.py): VPA manifests, the recommender as a lab process, its log, the
recommendations read back from the API, and ``run_side_by_side``: ours and upstream's
recommender v1.8.1 on the same pods, each on its own VPA, compared bound by bound.

Upstream counterpart: the VPA e2e suite's recommender tests (``vertical-pod-autoscaler/e2e/v1``
``recommender.go``: a VPA per workload, wait for ``status.recommendation``). Here the recommender
under test is ``python -m hpa vpa recommender`` from this checkout with the lab's admin
kubeconfig, reading ``metrics.k8s.io`` from ``hpa adapter`` (tests/e2e/controller_lab.py
``start_adapter``), which serves it from the lab's Prometheus.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hpa.core.quantity import parse_quantity
from hpa.core.vpa.aggregation import AggregateContainerState
from hpa.core.vpa.recommender import RecommendationConfig, create_pod_resource_recommender
from hpa.kube.vpa_client import CheckpointObject, parse_checkpoint
from tests.commands import command_env
from tests.e2e.controller_lab import deployment_manifest
from tests.e2e.vpa_lab import install_vpa_crds
from tests.lab import vpa_upstream
from tests.lab.controlplane import free_port
from tests.lab.lab import REPO_ROOT, Lab
from tests.lab.load_model import WorkloadProfile
from tests.lab.process import Component

VPA_API = "autoscaling.k8s.io/v1"
RESOURCES = ("cpu", "memory")
BOUNDS = ("lowerBound", "target", "upperBound")


def vpa_manifest(
    name: str, namespace: str, *, target: str, recommenders: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A VPA on the Deployment ``target`` in ``Off`` mode (recommendations only);
    ``recommenders`` fills ``spec.recommenders`` (empty: the ``default`` recommender's)."""
    spec: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "updatePolicy": {"updateMode": "Off"},
    }
    if recommenders:
        spec["recommenders"] = [{"name": name} for name in recommenders]
    return {
        "apiVersion": VPA_API,
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def start_recommender(lab: Lab, name: str, *flags: str) -> Component:
    """``python -m hpa vpa recommender`` on this checkout with the lab's admin kubeconfig, its
    operations listener on a free loopback port, and ``flags``."""
    argv = [
        sys.executable,
        "-m",
        "hpa",
        "vpa",
        "recommender",
        f"--kubeconfig={lab.kubeconfig}",
        f"--address=127.0.0.1:{free_port()}",
        *flags,
    ]
    return lab.group.start(name, argv, cwd=REPO_ROOT, env=command_env())


def log_events(component: Component, event: str, *, skip_bytes: int = 0) -> list[dict[str, Any]]:
    """The structlog JSON records named ``event`` in the component's log (after ``skip_bytes``,
    to see only a restarted process's lines)."""
    with component.log_path.open("rb") as log:
        log.seek(skip_bytes)
        lines = log.read().decode(errors="replace").splitlines()
    found = []
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == event:
            found.append(record)
    return found


def vpa(lab: Lab, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = lab.kubectl_json("get", "vpa", name, "-n", namespace)
    return found


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for found in (obj.get("status") or {}).get("conditions") or ():
        if found.get("type") == kind:
            return dict(found)
    return None


@dataclass(frozen=True, slots=True)
class Recommended:
    """One container's recommendation: ``amounts[(bound, resource)]`` in cores and bytes."""

    container: str
    amounts: dict[tuple[str, str], Decimal]

    def get(self, bound: str, resource: str) -> Decimal | None:
        return self.amounts.get((bound, resource))


def recommendations(obj: dict[str, Any]) -> dict[str, Recommended]:
    """``status.recommendation.containerRecommendations`` by container, quantities parsed."""
    out = {}
    recommendation = (obj.get("status") or {}).get("recommendation") or {}
    for item in recommendation.get("containerRecommendations") or ():
        amounts = {
            (bound, resource): parse_quantity(str(value)).amount
            for bound in BOUNDS
            for resource, value in (item.get(bound) or {}).items()
        }
        out[item["containerName"]] = Recommended(item["containerName"], amounts)
    return out


def describe(recommended: Recommended | None) -> str:
    """``cpu 123m/130m/400m memory 80Mi/...`` (lowerBound/target/upperBound)."""
    if recommended is None:
        return "(none)"
    parts = []
    for resource in RESOURCES:
        values = [recommended.get(bound, resource) for bound in BOUNDS]
        if all(v is None for v in values):
            continue
        parts.append(f"{resource} " + "/".join(_amount(resource, v) for v in values))
    return " ".join(parts)


def _amount(resource: str, value: Decimal | None) -> str:
    if value is None:
        return "-"
    if resource == "cpu":
        return f"{value * 1000:.0f}m"
    return f"{value / 2**20:.1f}Mi"


def checkpoint_names(lab: Lab, namespace: str) -> Iterator[str]:
    listed = lab.kubectl_json("get", "verticalpodautoscalercheckpoints", "-n", namespace)
    for item in listed.get("items") or ():
        yield str(item["metadata"]["name"])


def checkpoint_samples(lab: Lab, namespace: str, name: str) -> int:
    """``status.totalSamplesCount`` of a checkpoint (the cpu samples it holds)."""
    found = lab.kubectl_json("get", "verticalpodautoscalercheckpoints", name, "-n", namespace)
    return int((found.get("status") or {}).get("totalSamplesCount") or 0)


# ------------------------------------------------------------------ side by side with upstream

CPU_ROUNDING_CORES = Decimal("0.001")
"""Both write cpu in whole millicores (upstream truncates ``cores * 1000``)."""
MEMORY_ROUNDING_BYTES = Decimal(1)
BUCKET_GROWTH = Decimal("0.05")
"""Upstream's histogram buckets grow by 5 %: one bucket apart is at most this ratio."""
OURS_NAME = "hpa"
"""``--recommender-name`` of ours beside upstream's ``default``."""


def cpu_rates_steady(
    lab: Lab, namespace: str, expected: dict[str, tuple[float, int]], *, window_seconds: int
) -> bool:
    """Every pod's cpu rate over ``window_seconds`` is its workload's ``expected[workload]``
    cores (within 1 %), for the expected number of pods of each (``(cores, pods)``): a new
    series' rate() climbs for a window, and samples taken meanwhile would stay in the
    histograms."""
    query = (
        "sum(rate(container_cpu_usage_seconds_total"
        f'{{namespace="{namespace}",container="app"}}[{window_seconds}s])) by (pod)'
    )
    seen: dict[str, int] = {}
    for sample in lab.prometheus.query(query):
        workload = sample.labels["pod"].rsplit("-", 2)[0]
        cores, _ = expected[workload]
        if abs(sample.value - cores) > cores / 100:
            return False
        seen[workload] = seen.get(workload, 0) + 1
    return seen == {workload: pods for workload, (_, pods) in expected.items()}


@dataclass(frozen=True, slots=True)
class LoadStep:
    """At ``at_seconds`` from the start, offer ``rps`` (reached over ``ramp_seconds``)."""

    at_seconds: float
    rps: int
    ramp_seconds: float = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SideBySideConfig:
    namespace: str
    steps: tuple[LoadStep, ...]
    duration_seconds: float
    interval_seconds: int = 10
    pods: int = 3
    snapshot_every_seconds: float = 60.0
    cpu_per_request_milli: int = 10
    base_cpu_milli: int = 20
    memory_per_rps_bytes: int = 2 * 2**20
    pod_min_cpu_millicores: int = 10
    pod_min_memory_mb: int = 10
    window_seconds: int = 30


@dataclass(frozen=True, slots=True)
class Row:
    """One bound of one resource: ours, upstream's, whether they agree, and what our model
    gives on each recommender's checkpoint (the histograms of the samples each one took)."""

    bound: str
    resource: str
    ours: Decimal | None
    upstream: Decimal | None
    model_on_ours: Decimal | None = None
    model_on_upstream: Decimal | None = None
    timing: float = 1.0
    """ours/upstream that the two checkpoints' confidences alone give this bound (their sample
    counts and spans; 1 for a target)."""

    @property
    def allowed(self) -> Decimal:
        """One bucket (5 % of the larger) plus the rounding of the resource."""
        return _allowed(self.resource, self.ours, self.upstream)

    @property
    def agrees(self) -> bool:
        return _close(self.resource, self.ours, self.upstream)

    @property
    def explained_by_samples(self) -> bool:
        """The two differ only in the samples they took (their timing): each recommender's
        figure is what our model gives on that recommender's own checkpoint, or, where the
        checkpoint holds no memory peaks yet, upstream's figure scaled by ``timing`` is ours."""
        if self.model_on_ours is not None and self.model_on_upstream is not None:
            return _close(self.resource, self.ours, self.model_on_ours) and _close(
                self.resource, self.upstream, self.model_on_upstream
            )
        if self.ours is None or self.upstream is None:
            return False
        return _close(self.resource, self.ours, self.upstream * Decimal(repr(self.timing)))

    def describe(self) -> str:
        ratio = (
            f"{float(self.ours / self.upstream - 1) * 100:+.2f} %"
            if self.ours is not None and self.upstream
            else "-"
        )
        if self.agrees:
            verdict = "agree"
        elif self.explained_by_samples:
            verdict = f"differ by timing: confidences alone give {(self.timing - 1) * 100:+.2f} %"
            if self.model_on_ours is not None:
                verdict += ", each is our model on its own checkpoint"
        else:
            verdict = "DIFFER"
        return (
            f"{self.resource:6} {self.bound:10} ours {_amount(self.resource, self.ours):>12} "
            f"upstream {_amount(self.resource, self.upstream):>12} {ratio:>9}  our model on "
            f"ours' / upstream's checkpoint {_amount(self.resource, self.model_on_ours)} / "
            f"{_amount(self.resource, self.model_on_upstream)}  {verdict}"
        )


def _allowed(resource: str, a: Decimal | None, b: Decimal | None) -> Decimal:
    larger = max(a or Decimal(0), b or Decimal(0))
    rounding = CPU_ROUNDING_CORES if resource == "cpu" else MEMORY_ROUNDING_BYTES
    return larger * BUCKET_GROWTH + rounding


def _close(resource: str, a: Decimal | None, b: Decimal | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= _allowed(resource, a, b)


@dataclass(frozen=True, slots=True)
class CheckpointView:
    """A recommender's checkpoint: its timing (samples and their span) and what our model
    recommends from it."""

    samples: int
    first_sample_start: str
    last_sample_start: str
    model: Recommended | None

    @property
    def lifespan_seconds(self) -> float:
        if not self.first_sample_start or not self.last_sample_start:
            return 0.0
        return _timestamp(self.last_sample_start) - _timestamp(self.first_sample_start)

    @property
    def confidence(self) -> float:
        """``getConfidence`` (hpa/core/vpa/estimator.py ``get_confidence``, 24 h interval)."""
        return min(self.lifespan_seconds / 86_400, self.samples / 1_440)

    def multiplier(self, bound: str) -> float:
        """The confidence multiplier of ``bound`` (hpa/core/vpa/recommender.py): upper
        ``1 + 1/c``, lower ``(1 + 0.001/c)^-2``, target 1."""
        if bound == "target" or self.confidence <= 0:
            return 1.0
        if bound == "upperBound":
            return 1 + 1 / self.confidence
        return float((1 + 0.001 / self.confidence) ** -2)

    def describe(self) -> str:
        return (
            f"{self.samples} cpu samples, {self.first_sample_start} .. {self.last_sample_start} "
            f"({self.lifespan_seconds:.0f} s, confidence {self.confidence:.6f})"
        )


def _timestamp(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def model_on_checkpoint(
    checkpoint: CheckpointObject, *, pod_min_cpu_millicores: int, pod_min_memory_mb: int
) -> Recommended | None:
    """Our model's recommendation from a checkpoint alone (its aggregate state loaded as
    ``InitFromCheckpoints`` loads it), for a pod of one container; memory only when the
    checkpoint holds memory peaks."""
    if checkpoint.status is None:
        return None
    state = AggregateContainerState()
    state.load_from_checkpoint(checkpoint.status)
    recommender = create_pod_resource_recommender(
        RecommendationConfig(
            pod_min_cpu_millicores=pod_min_cpu_millicores, pod_min_memory_mb=pod_min_memory_mb
        )
    )
    found, _ = recommender.get_recommended_pod_resources({checkpoint.container_name: state})
    amounts: dict[tuple[str, str], Decimal] = {}
    target, lower, upper = found[checkpoint.container_name]
    # the current aggregation interval's memory peaks are left out of checkpoints (upstream's
    # buildAggregateContainerStateMap): in the first 24 h there is no memory to recommend from
    memory_checkpointed = checkpoint.status.memory_histogram.total_weight > 0
    for bound, resources in (("lowerBound", lower), ("target", target), ("upperBound", upper)):
        if resources.cpu is not None:
            amounts[bound, "cpu"] = Decimal(resources.cpu) / 1000
        if resources.memory is not None and memory_checkpointed:
            amounts[bound, "memory"] = Decimal(resources.memory)
    return Recommended(checkpoint.container_name, amounts)


@dataclass(frozen=True, slots=True)
class Comparison:
    rows: tuple[Row, ...]
    ours: CheckpointView | None
    upstream: CheckpointView | None
    timeline: tuple[str, ...]

    @property
    def agree(self) -> bool:
        return all(row.agrees for row in self.rows)

    @property
    def agree_or_timing(self) -> bool:
        """Every bound agrees, or differs only in the samples each recommender took."""
        return all(row.agrees or row.explained_by_samples for row in self.rows)

    def report(self) -> str:
        lines = [
            "timeline (seconds from the load's start: ours | upstream, lowerBound/target/"
            "upperBound):",
            *self.timeline,
            "final:",
            *(row.describe() for row in self.rows),
            f"checkpoint of ours:     {self.ours.describe() if self.ours else '(none)'}",
            f"checkpoint of upstream: {self.upstream.describe() if self.upstream else '(none)'}",
        ]
        return "\n".join(lines)


def checkpoint_view(
    lab: Lab, namespace: str, name: str, config: SideBySideConfig
) -> CheckpointView | None:
    try:
        found = lab.kubectl_json("get", "verticalpodautoscalercheckpoints", name, "-n", namespace)
    except Exception:  # noqa: BLE001 - a missing checkpoint is reported as such
        return None
    status = found.get("status") or {}
    model = model_on_checkpoint(
        parse_checkpoint(found),
        pod_min_cpu_millicores=config.pod_min_cpu_millicores,
        pod_min_memory_mb=config.pod_min_memory_mb,
    )
    return CheckpointView(
        int(status.get("totalSamplesCount") or 0),
        str(status.get("firstSampleStart") or ""),
        str(status.get("lastSampleStart") or ""),
        model,
    )


def compare(
    ours: Recommended | None,
    upstream: Recommended | None,
    *,
    ours_checkpoint: CheckpointView | None,
    upstream_checkpoint: CheckpointView | None,
) -> tuple[Row, ...]:
    def on(view: CheckpointView | None, bound: str, resource: str) -> Decimal | None:
        return view.model.get(bound, resource) if view and view.model else None

    def timing(bound: str) -> float:
        if ours_checkpoint is None or upstream_checkpoint is None:
            return 1.0
        return ours_checkpoint.multiplier(bound) / upstream_checkpoint.multiplier(bound)

    return tuple(
        Row(
            bound,
            resource,
            ours.get(bound, resource) if ours else None,
            upstream.get(bound, resource) if upstream else None,
            on(ours_checkpoint, bound, resource),
            on(upstream_checkpoint, bound, resource),
            timing(bound),
        )
        for resource in RESOURCES
        for bound in BOUNDS
    )


def run_side_by_side(
    lab: Lab, config: SideBySideConfig, *, progress: Callable[[str], None]
) -> Comparison:
    """One Deployment of ``config.pods`` pods and two VPAs on it: ``upstream`` (no
    ``spec.recommenders``: upstream's ``default`` recommender) and ``ours``
    (``spec.recommenders: [{name: hpa}]``: ``hpa vpa recommender --recommender-name=hpa``), both
    recommenders with the same interval and minimums, on the same ``metrics.k8s.io`` (the
    caller's ``hpa adapter`` with a ``config.window_seconds`` window). The load follows
    ``config.steps`` for ``config.duration_seconds``; then both recommendations are compared."""
    namespace, workload = config.namespace, "web"
    profile = WorkloadProfile(
        namespace=namespace,
        workload=workload,
        selector={"app": workload},
        cpu_per_request_milli=config.cpu_per_request_milli,
        base_cpu_milli=config.base_cpu_milli,
        memory_per_rps_bytes=config.memory_per_rps_bytes,
    )
    first = config.steps[0].rps
    install_vpa_crds(lab)
    lab.kubectl("create", "namespace", namespace)
    lab.add_workload(profile, rps=first)
    lab.apply(
        [
            deployment_manifest(workload, namespace, replicas=config.pods),
            vpa_manifest("upstream", namespace, target=workload),
            vpa_manifest("ours", namespace, target=workload, recommenders=(OURS_NAME,)),
        ]
    )
    steady_cores = (
        config.base_cpu_milli + config.cpu_per_request_milli * first / config.pods
    ) / 1000
    lab.wait_for(
        lambda: cpu_rates_steady(
            lab,
            namespace,
            {workload: (steady_cores, config.pods)},
            window_seconds=config.window_seconds,
        ),
        what=f"steady cpu rates of {config.pods} pods",
        timeout_seconds=180,
    )
    minimums = (
        f"--pod-recommendation-min-cpu-millicores={config.pod_min_cpu_millicores}",
        f"--pod-recommendation-min-memory-mb={config.pod_min_memory_mb}",
    )
    upstream_component = vpa_upstream.start_recommender(
        lab.group,
        vpa_upstream.RecommenderConfig(
            kubeconfig=lab.kubeconfig,
            address=f"127.0.0.1:{free_port()}",
            interval_seconds=config.interval_seconds,
            pod_min_cpu_millicores=config.pod_min_cpu_millicores,
            pod_min_memory_mb=config.pod_min_memory_mb,
            vpa_object_namespace=namespace,
        ),
    )
    ours_component = start_recommender(
        lab,
        f"hpa-vpa-recommender-{OURS_NAME}",
        f"--recommender-name={OURS_NAME}",
        f"--recommender-interval={config.interval_seconds}s",
        f"--vpa-object-namespace={namespace}",
        *minimums,
    )
    timeline: list[str] = []
    try:
        started = time.monotonic()
        pending = list(config.steps[1:])
        next_snapshot = config.snapshot_every_seconds
        while (elapsed := time.monotonic() - started) < config.duration_seconds:
            while pending and pending[0].at_seconds <= elapsed:
                step = pending.pop(0)
                lab.set_load(namespace, workload, step.rps, ramp_seconds=step.ramp_seconds)
                progress(f"{elapsed:6.0f} s load {step.rps} rps (ramp {step.ramp_seconds} s)")
            if elapsed >= next_snapshot:
                next_snapshot += config.snapshot_every_seconds
                line = f"{elapsed:6.0f} s " + _snapshot(lab, namespace)
                timeline.append(line)
                progress(line)
            lab.group.check_alive()
            time.sleep(1.0)
        lab.group.end(upstream_component.name)
        lab.group.end(ours_component.name)
        timeline.append(f"{time.monotonic() - started:6.0f} s " + _snapshot(lab, namespace))
        ours = recommendations(vpa(lab, namespace, "ours")).get("app")
        upstream = recommendations(vpa(lab, namespace, "upstream")).get("app")
        ours_checkpoint = checkpoint_view(lab, namespace, "ours-app", config)
        upstream_checkpoint = checkpoint_view(lab, namespace, "upstream-app", config)
        return Comparison(
            rows=compare(
                ours,
                upstream,
                ours_checkpoint=ours_checkpoint,
                upstream_checkpoint=upstream_checkpoint,
            ),
            ours=ours_checkpoint,
            upstream=upstream_checkpoint,
            timeline=tuple(timeline),
        )
    finally:
        for component in (upstream_component, ours_component):
            if component.name in lab.group.components:
                lab.group.end(component.name)


def _snapshot(lab: Lab, namespace: str) -> str:
    ours = recommendations(vpa(lab, namespace, "ours")).get("app")
    upstream = recommendations(vpa(lab, namespace, "upstream")).get("app")
    return f"{describe(ours)} | {describe(upstream)}"
