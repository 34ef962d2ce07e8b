"""VPA manifests against fake usage history: the recommendation the recommender would publish.

Upstream counterpart: one pass of kubernetes/autoscaler v1.8.1's recommender for one VPA
(``pkg/recommender/routines/recommender.go``'s ``processVPAUpdate`` over the cluster model of
``pkg/recommender/model``). The work is the core's: the cluster model
(:class:`hpa.core.vpa.cluster.ClusterState`) is fed the fake pods, containers, usage samples and
OOM events, then :func:`hpa.core.vpa.routines.process_vpa_update` computes the recommendation and
the conditions with upstream's default estimators
(:func:`hpa.core.vpa.recommender.create_pod_resource_recommender`). Manifests are decoded with
the ``hpa.api.vpa`` models and validated as the admission controller and the CRD schema do
(``validate_vertical_pod_autoscaler``, ``validate_vertical_pod_autoscaler_schema``), strictly (an
unknown field under ``spec`` is an error).

Deliberate deviations: the VPA's pod selector is given (default ``app=<targetRef.name>``, and
pods are labelled so) instead of being read from the target workload; there are no checkpoints
(the history is exactly the samples given).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from hpa.core.explain import Explanation
from hpa.core.selector import parse_selector
from hpa.core.vpa.amount import Resources
from hpa.core.vpa.cluster import ClusterState, ContainerId, PodId, VpaCondition, VpaId
from hpa.core.vpa.gomath import NANOSECONDS_PER_SECOND
from hpa.core.vpa.recommender import RecommendedContainerResources, create_pod_resource_recommender
from hpa.core.vpa.routines import process_vpa_update
from hpa.sim.manifest import read_manifest
from hpa.sim.vpa_manifest import VPA, parse_vpas, vpa_from_document
from hpa.testing.assertions import HPAAssertionError
from hpa.testing.manifests import ManifestError
from hpa.testing.metrics import Ago, Quantity, milli, seconds
from hpa.testing.sync import EPOCH

__all__ = [
    "VPA",
    "FakeUsage",
    "VpaResult",
    "assert_vpa_condition",
    "assert_vpa_target",
    "load_vpa",
    "load_vpas",
    "parse_vpas",
    "recommend",
]


def load_vpas(source: str | Path | Mapping[str, Any]) -> list[VPA]:
    """Every VPA of a YAML file, or the one decoded object given."""
    if isinstance(source, Mapping):
        return [vpa_from_document(dict(source), "<dict>")]
    return parse_vpas(read_manifest(source), source=str(source))


def load_vpa(source: str | Path | Mapping[str, Any]) -> VPA:
    """The one VPA of a YAML file or mapping."""
    found = load_vpas(source)
    if len(found) != 1:
        raise ManifestError(f"{source}: expected one VerticalPodAutoscaler, found {len(found)}")
    return found[0]


@dataclass(frozen=True, slots=True)
class _Series:
    pod: str | None
    container: str
    cpu_milli: int | None
    memory_bytes: int | None
    duration_seconds: float
    every_seconds: float


@dataclass(frozen=True, slots=True)
class FakeUsage:
    """Pods and their containers' usage history, built by chaining (immutable)::

        usage = (
            FakeUsage()
            .pods(2, containers={"app": {"cpu": "100m", "memory": "128Mi"}})
            .usage("app", cpu="500m", memory="256Mi", duration="2d")
        )

    ``containers`` maps a container name to its requests; ``usage`` adds a steady sample every
    ``every`` (default 1 minute) for ``duration`` before the recommendation, for every pod (or
    one ``pod``); ``oom`` records an out-of-memory kill."""

    pod_list: tuple[
        tuple[str, Mapping[str, Mapping[str, Quantity]], Mapping[str, str] | None], ...
    ] = ()
    series: tuple[_Series, ...] = ()
    ooms: tuple[tuple[str | None, str, Ago], ...] = ()
    selector_text: str | None = None

    def pod(
        self,
        name: str | None = None,
        *,
        containers: Mapping[str, Mapping[str, Quantity]],
        labels: Mapping[str, str] | None = None,
    ) -> FakeUsage:
        """One pod with containers (name -> ``{"cpu": request, "memory": request}``)."""
        pod_name = name if name is not None else f"pod-{len(self.pod_list)}"
        for container_name, requests in containers.items():
            for resource, value in requests.items():
                if resource not in ("cpu", "memory"):
                    raise ValueError(
                        f"pod {pod_name}: {container_name}: unknown resource {resource!r}"
                    )
                milli(value, what=f"pod {pod_name}: {container_name}: {resource} request")
        return replace(self, pod_list=(*self.pod_list, (pod_name, dict(containers), labels)))

    def pods(self, count: int, /, **pod: Any) -> FakeUsage:
        built = self
        for _ in range(count):
            built = built.pod(**pod)
        return built

    def usage(
        self,
        container: str,
        *,
        cpu: Quantity | None = None,
        memory: Quantity | None = None,
        duration: Ago = "1d",
        every: Ago = "1m",
        pod: str | None = None,
    ) -> FakeUsage:
        """Steady usage of ``container`` for ``duration`` up to the recommendation."""
        cpu_milli = None if cpu is None else milli(cpu, what=f"{container}: cpu usage")
        memory_bytes = (
            None if memory is None else milli(memory, what=f"{container}: memory") // 1000
        )
        series = _Series(
            pod,
            container,
            cpu_milli,
            memory_bytes,
            seconds(duration, what="duration"),
            seconds(every, what="every"),
        )
        if series.every_seconds <= 0 or series.duration_seconds < 0:
            raise ValueError("usage: every must be positive and duration not negative")
        return replace(self, series=(*self.series, series))

    def oom(self, container: str, *, ago: Ago, pod: str | None = None) -> FakeUsage:
        """An out-of-memory kill of ``container`` ``ago`` before the recommendation."""
        seconds(ago, what="oom ago")
        return replace(self, ooms=(*self.ooms, (pod, container, ago)))

    def selector(self, text: str) -> FakeUsage:
        """The VPA's pod selector (default ``app=<targetRef.name>``)."""
        parse_selector(text)
        return replace(self, selector_text=text)


@dataclass(frozen=True, slots=True)
class VpaResult:
    """The recommendation and the conditions the recommender would write."""

    vpa: VPA
    recommendations: tuple[RecommendedContainerResources, ...]
    conditions: tuple[VpaCondition, ...]
    explanation: Explanation

    def container(self, name: str) -> RecommendedContainerResources | None:
        return next((r for r in self.recommendations if r.container_name == name), None)

    def condition(self, condition_type: str) -> VpaCondition | None:
        return next((c for c in self.conditions if c.type == condition_type), None)

    def explain(self) -> str:
        return self.explanation.render()


def _ns(moment: datetime) -> int:
    return round(moment.timestamp()) * NANOSECONDS_PER_SECOND


def recommend(vpa: VPA, usage: FakeUsage, *, now: datetime = EPOCH) -> VpaResult:
    """The recommender's pass for ``vpa`` over ``usage``, at ``now``."""
    now_ns = _ns(now)
    selector_text = usage.selector_text or f"app={vpa.target_name}"
    default_labels = {"app": vpa.target_name}
    earliest = max([s.duration_seconds for s in usage.series] or [0.0])
    start_ns = now_ns - int(earliest * NANOSECONDS_PER_SECOND)
    cluster = ClusterState(gc_interval_ns=3600 * NANOSECONDS_PER_SECOND)
    state = cluster.add_or_update_vpa(
        VpaId(vpa.namespace, vpa.name),
        selector=parse_selector(selector_text),
        created_ns=start_ns,
        annotations=vpa.annotations,
        target_ref=(vpa.target_kind, vpa.target_name, ""),
        update_mode=vpa.update_mode,
        resource_policy=vpa.resource_policy,
    )
    requests: dict[tuple[str, str], Resources] = {}
    for name, containers, labels in usage.pod_list:
        pod_id = PodId(vpa.namespace, name)
        cluster.add_or_update_pod(pod_id, labels or default_labels, "Running", now_ns=start_ns)
        for container_name, given in containers.items():
            request = Resources(
                cpu=milli(given["cpu"], what="cpu") if "cpu" in given else None,
                memory=milli(given["memory"], what="memory") // 1000 if "memory" in given else None,
            )
            requests[(name, container_name)] = request
            cluster.add_or_update_container(
                ContainerId(pod_id, container_name), request, now_ns=start_ns
            )
    samples: list[tuple[int, int, str, str, str, int]] = []  # (t, order, pod, container, kind, v)
    for order, series in enumerate(usage.series):
        for name, containers, _ in usage.pod_list:
            if series.container not in containers or series.pod not in (None, name):
                continue
            step_ns = int(series.every_seconds * NANOSECONDS_PER_SECOND)
            first_ns = now_ns - int(series.duration_seconds * NANOSECONDS_PER_SECOND)
            for at in range(first_ns, now_ns, step_ns):
                if series.cpu_milli is not None:
                    samples.append((at, order, name, series.container, "cpu", series.cpu_milli))
                if series.memory_bytes is not None:
                    samples.append(
                        (at, order, name, series.container, "memory", series.memory_bytes)
                    )
    for pod_filter, container_name, ago in usage.ooms:
        at = now_ns - int(seconds(ago, what="oom ago") * NANOSECONDS_PER_SECOND)
        for name, containers, _ in usage.pod_list:
            if container_name in containers and pod_filter in (None, name):
                samples.append((at, -1, name, container_name, "oom", 0))
    for at, _, name, container_name, kind, value in sorted(samples):
        container_id = ContainerId(PodId(vpa.namespace, name), container_name)
        if kind == "cpu":
            cluster.add_cpu_sample(container_id, at, value, now_ns=at)
        elif kind == "memory":
            cluster.add_memory_sample(container_id, at, value, now_ns=at)
        else:
            memory_request = requests[(name, container_name)].memory or 0
            cluster.record_oom(container_id, at, memory_request, now_ns=at)
    update = process_vpa_update(
        cluster, state, recommender=create_pod_resource_recommender(), now_ns=now_ns
    )
    return VpaResult(
        vpa=vpa,
        recommendations=tuple(state.recommendation or ()),
        conditions=tuple(state.conditions_list()),
        explanation=update.explanation,
    )


def _failure(result: VpaResult, what: str) -> HPAAssertionError:
    conditions = ", ".join(f"{c.type}={c.status} ({c.reason})" for c in result.conditions)
    text = "\n".join(
        [f"{result.vpa.key}: {what}", f"  conditions: {conditions or '(none)'}", "  explanation:"]
        + [f"    {line}" for line in result.explain().splitlines()]
    )
    return HPAAssertionError(text)


def _show(resource: str, amount: int | None) -> str:
    if amount is None:
        return "none"
    return f"{amount}m" if resource == "cpu" else f"{amount} ({amount / 2**20:.2f}Mi)"


def assert_vpa_target(
    result: VpaResult,
    container: str,
    *,
    cpu: Quantity | None = None,
    memory: Quantity | None = None,
    bound: str = "target",
) -> None:
    """The container's ``target`` (or ``lower_bound``, ``upper_bound``, ``uncapped_target``) is
    exactly ``cpu`` and/or ``memory``."""
    found = result.container(container)
    if found is None:
        names = ", ".join(r.container_name for r in result.recommendations) or "none"
        raise _failure(result, f"container {container}: expected a recommendation, got {names}")
    amounts: Resources = getattr(found, bound)
    problems = []
    if cpu is not None:
        wanted = milli(cpu, what="cpu")
        if amounts.cpu != wanted:
            problems.append(
                f"cpu: expected {_show('cpu', wanted)}, got {_show('cpu', amounts.cpu)}"
            )
    if memory is not None:
        wanted = milli(memory, what="memory") // 1000
        if amounts.memory != wanted:
            problems.append(
                f"memory: expected {_show('memory', wanted)}, got {_show('memory', amounts.memory)}"
            )
    if problems:
        raise _failure(result, f"container {container} {bound}: " + "; ".join(problems))


def assert_vpa_condition(
    result: VpaResult,
    condition_type: str,
    *,
    status: str | bool | None = None,
    reason: str | None = None,
) -> None:
    """The VPA's status has that condition (with that status and reason, when given)."""
    found = result.condition(condition_type)
    if found is None:
        raise _failure(result, f"condition {condition_type}: expected one, got none")
    problems = []
    if status is not None and found.status != str(status):
        problems.append(f"status: expected {status}, got {found.status}")
    if reason is not None and found.reason != reason:
        problems.append(f"reason: expected {reason}, got {found.reason}")
    if problems:
        raise _failure(result, f"condition {condition_type}: " + "; ".join(problems))
